#!/usr/bin/env bash
# Run the cluster tests (tests/cluster/*.sh, or the NAMEs given): tests
# that start servers of their own (tests/servers.sh), a Galera cluster
# say, too heavy for `make check`.  Each gets its own ROWQ_TEST_TMP as
# its working directory and ROWQ_TEST_TIMEOUT seconds (default 300); what
# it measured (its `figure:` lines) is shown, all its output when it
# fails.  Exit status 77 means skipped.

if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"
fi

unset ROWQ_TEST_TMP ROWQ_TEST_DB ROWQ_TEST_NAME ROWQ_TEST_SOCKET
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
trap - ERR			# failures here are counted, not fatal
_lib_kill_wait=10
trap 'echo "cluster: interrupted" >&2; exit 130' INT
trap 'echo "cluster: interrupted" >&2; exit 143' TERM

timeout_s=${ROWQ_TEST_TIMEOUT:-300}
tests=()
if [ $# -eq 0 ]; then
	tests=("$TESTS_DIR"/cluster/*.sh)
	[ -e "${tests[0]}" ] || tests=()
else
	for t in "$@"; do
		for f in "$t" "$TESTS_DIR/cluster/$t" "$TESTS_DIR/cluster/$t.sh"; do
			[ -f "$f" ] && break
		done
		[ -f "$f" ] || { echo "no such test: $t" >&2; exit 2; }
		tests+=("$f")
	done
fi

passed=0 failed=0 skipped=0
for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	dir=$ROWQ_TEST_TMP/t/$name
	mkdir -p "$dir"
	start=$SECONDS
	# timeout leads its own process group: killing it ends the test and
	# everything it started without setsid.
	(cd "$dir" && ROWQ_TEST_TMP=$dir ROWQ_TEST_NAME=$name \
	    exec timeout --kill-after=5 "$timeout_s" bash "$t") \
	    >"$dir.log" 2>&1 </dev/null &
	pid=$!
	track_pid "$pid"
	status=0
	wait "$pid" || status=$?
	untrack_pid "$pid"
	took="($((SECONDS - start)) s)"
	report_test "$name" "$status" "$took" "$dir.log" figures
	rm -rf "$dir" "$dir.log"
done

summary="cluster: $passed passed, $failed failed"
[ "$skipped" -eq 0 ] || summary="$summary, $skipped skipped"
echo "$summary"
[ "$failed" -eq 0 ]
