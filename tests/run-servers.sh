#!/usr/bin/env bash
# make check-servers: the integration suite (tests/run-integration.sh)
# against each server given, one after the other, then each one's summary:
#
#   tests/run-servers.sh mariadb-11.8 mysql-9.7 [-- TEST...]
#
# A server is a ROWQ_TEST_SERVER of lib.sh; those of a chroot are built
# first if they are not yet (tests/chroot-server.sh, a minute or two each,
# once).  ROWQ is the rowq to test, as for run-integration.sh.  Fails if a
# chroot cannot be built or a test fails on any of the servers.

set -u -o pipefail

tests_dir=$(cd "$(dirname "$0")" && pwd)
servers=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	servers+=("$1")
	shift
done
[ $# -eq 0 ] || shift
[ "${#servers[@]}" -gt 0 ] ||
    { echo "usage: run-servers.sh SERVER... [-- TEST...]" >&2; exit 2; }

status=0
summaries=()
log=
trap 'rm -f "$log"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for server in "${servers[@]}"; do
	if [ "$server" != mariadb ] &&
	    ! bash "$tests_dir/chroot-server.sh" "$server" >/dev/null; then
		summaries+=("$server: no server (tests/chroot-server.sh failed)")
		status=1
		continue
	fi
	echo "==== $server"
	log=$(mktemp /tmp/rowq-servers.XXXXXX)
	ROWQ_TEST_SERVER=$server bash "$tests_dir/run-integration.sh" "$@" |
	    tee "$log"
	st=$?
	last=$(tail -n 1 "$log")
	rm -f "$log"
	[[ $last == "integration: "* ]] || last="the run ended early (exit status $st)"
	summaries+=("$server: ${last#integration: }")
	[ "$st" -eq 0 ] || status=1
done

echo "==== summary"
printf '%s\n' "${summaries[@]}"
exit "$status"
