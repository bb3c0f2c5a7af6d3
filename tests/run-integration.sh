#!/usr/bin/env bash
# Run the integration tests against one database server started for the
# run, of ROWQ_TEST_SERVER's kind (lib.sh: mariadb, the default,
# mariadb-11.8 or mysql-9.7).
#
#   tests/run-integration.sh              every tests/integration/*.sh, sorted
#   tests/run-integration.sh NAME...      only these (NAME, NAME.sh or a path)
#
# Each test gets a fresh database (t_NAME), its own ROWQ_TEST_TMP as its
# working directory, and ROWQ_TEST_TIMEOUT seconds (default 300); they run
# ROWQ_TEST_JOBS at a time (default 3, see below), in the order of their
# names, and each is reported when it ends.  Its
# output is shown only when it fails.  Exit status 77 means skipped.
# With ROWQ_SCREENSHOTS set, the PNG files a test leaves in its
# screenshots/ directory are copied there (make check: build/screenshots).
# The server and every temporary directory go away however the run ends.

# The Makefile runs us with sh; the rest of this file needs bash.
if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"
fi

# A temp dir or database inherited from a test would be removed under it.
unset ROWQ_TEST_TMP ROWQ_TEST_DB ROWQ_TEST_NAME
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
trap - ERR			# failures here are counted, not fatal
# A test stopped by a signal needs its own 3 s to stop what it started.
_lib_kill_wait=10
trap 'echo "integration: interrupted" >&2; exit 130' INT
trap 'echo "integration: interrupted" >&2; exit 143' TERM

timeout_s=${ROWQ_TEST_TIMEOUT:-300}

tests=()
if [ $# -eq 0 ]; then
	tests=("$TESTS_DIR"/integration/*.sh)
	[ -e "${tests[0]}" ] || tests=()
else
	for t in "$@"; do
		for f in "$t" "$TESTS_DIR/integration/$t" \
		    "$TESTS_DIR/integration/$t.sh"; do
			[ -f "$f" ] && break
		done
		[ -f "$f" ] || { echo "no such test: $t" >&2; exit 2; }
		tests+=("$f")
	done
fi

db_start
echo "integration: $ROWQ_TEST_SERVER server, $(server_family) $(server_version)"

# Tests run ROWQ_TEST_JOBS at a time (default 3): most of their time is
# spent waiting for a timeout or a poll (on 2 CPUs, the sum of the
# tests' times grew by 4 % from 2 at a time to 3, and the run took 28 %
# less).  Each runs in a mount namespace of its own with a private
# /run/rowq, so that daemons of the same config name do not meet at one
# default status socket.  A test that says "# serial:"
# in its header (it sets server globals, or counts the whole server's
# statements) runs alone.  Without the rights to unshare: one at a time.
jobs=${ROWQ_TEST_JOBS:-3}
private_run=()
if [ "$jobs" -gt 1 ]; then
	if unshare --mount --propagation private true 2>/dev/null; then
		mkdir -p /run/rowq
		private_run=(unshare --mount --propagation private --
		    sh -c 'mount -t tmpfs -o mode=0755 rowq-test /run/rowq &&
			exec "$@"' sh)
	else
		echo "integration: cannot unshare a mount namespace: one test at a time" >&2
		jobs=1
	fi
fi

passed=0 failed=0 skipped=0
declare -A running_name=() running_start=()

# launch TEST: create its database and start it in the background.
launch()
{
	local t=$1 name db dir
	name=$(basename "$t" .sh)
	dir=$ROWQ_TEST_TMP/t/$name
	db=t_${name//[^A-Za-z0-9_]/_}
	mkdir -p "$dir"
	db_create "$db"

	# timeout leads its own process group, so killing that group ends
	# the test and everything it started without setsid.  It runs in
	# the background so that a signal to us is handled at once.
	(cd "$dir" && ROWQ_TEST_TMP=$dir ROWQ_TEST_NAME=$name \
	    ROWQ_TEST_DB=$db exec "${private_run[@]}" \
	    timeout --kill-after=5 "$timeout_s" bash "$t") \
	    >"$dir.log" 2>&1 </dev/null &
	track_pid $!
	running_name[$!]=$name
	running_start[$!]=$SECONDS
}

# reap: wait for one running test to end, report it and clean up after it.
reap()
{
	local pid status=0 name dir took
	wait -n -p pid "${!running_name[@]}" || status=$?
	untrack_pid "$pid"
	name=${running_name[$pid]}
	dir=$ROWQ_TEST_TMP/t/$name
	took="($((SECONDS - running_start[$pid])) s)"
	unset "running_name[$pid]" "running_start[$pid]"

	report_test "$name" "$status" "$took" "$dir.log"
	# A test's screenshots outlive it, where make check asks.
	if [ -n "${ROWQ_SCREENSHOTS:-}" ] && [ -d "$dir/screenshots" ]; then
		mkdir -p "$ROWQ_SCREENSHOTS"
		cp "$dir"/screenshots/*.png "$ROWQ_SCREENSHOTS"/ 2>/dev/null || true
	fi
	rm -rf "$dir" "$dir.log"
	mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot \
	    -e "DROP DATABASE \`t_${name//[^A-Za-z0-9_]/_}\`" || true
}

for t in "${tests[@]}"; do
	if grep -q '^# serial:' "$t"; then
		while [ "${#running_name[@]}" -gt 0 ]; do reap; done
		launch "$t"
		reap
		continue
	fi
	while [ "${#running_name[@]}" -ge "$jobs" ]; do reap; done
	launch "$t"
done
while [ "${#running_name[@]}" -gt 0 ]; do reap; done

summary="integration: $passed passed, $failed failed"
[ "$skipped" -eq 0 ] || summary="$summary, $skipped skipped"
echo "$summary"
[ "$failed" -eq 0 ]
