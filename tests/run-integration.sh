#!/usr/bin/env bash
# Run the integration tests against one MariaDB server started for the run.
#
#   tests/run-integration.sh              every tests/integration/*.sh, sorted
#   tests/run-integration.sh NAME...      only these (NAME, NAME.sh or a path)
#
# Each test gets a fresh database (t_NAME), its own ROWQ_TEST_TMP as its
# working directory, and ROWQ_TEST_TIMEOUT seconds (default 300).  Its
# output is shown only when it fails.  Exit status 77 means skipped.
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

passed=0 failed=0 skipped=0
for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	dir=$ROWQ_TEST_TMP/t/$name
	mkdir -p "$dir"
	db_create "t_${name//[^A-Za-z0-9_]/_}"
	start=$SECONDS

	# timeout leads its own process group, so killing that group ends
	# the test and everything it started without setsid.  It runs in
	# the background so that a signal to us is handled at once.
	(cd "$dir" && ROWQ_TEST_TMP=$dir ROWQ_TEST_NAME=$name \
	    exec timeout --kill-after=5 "$timeout_s" bash "$t") \
	    >"$dir.log" 2>&1 </dev/null &
	pid=$!
	track_pid "$pid"
	status=0
	wait "$pid" || status=$?
	untrack_pid "$pid"
	took="($((SECONDS - start)) s)"

	case $status in
	0)
		echo "ok   $name $took"
		passed=$((passed + 1))
		;;
	77)
		echo "skip $name $took: $(tail -n 1 "$dir.log")"
		skipped=$((skipped + 1))
		;;
	*)
		[ "$status" -ne 124 ] && [ "$status" -ne 137 ] ||
		    echo "(timed out after $timeout_s s)" >>"$dir.log"
		echo "FAIL $name $took"
		sed 's/^/    /' "$dir.log"
		failed=$((failed + 1))
		;;
	esac
	rm -rf "$dir" "$dir.log"
	sql "DROP DATABASE \`$ROWQ_TEST_DB\`" || true
done

summary="integration: $passed passed, $failed failed"
[ "$skipped" -eq 0 ] || summary="$summary, $skipped skipped"
echo "$summary"
[ "$failed" -eq 0 ]
