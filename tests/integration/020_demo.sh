#!/usr/bin/env bash
# The README's first command: tests/demo.sh (`make demo`) end to end, as a
# newcomer runs it, with its own server and its own temporary directory,
# in a mount namespace where /var, /etc, /usr, /srv, /home, /root and /run
# are read-only, so that a write outside its directory fails the demo
# instead of landing on the machine.  Run twice: the second run finds
# nothing left by the first.  The temporary directory is gone after each.
. "$(dirname "$0")/../lib.sh"
cd "$ROWQ_TEST_TMP"
unshare --mount --propagation private true 2>/dev/null ||
    { echo "cannot unshare a mount namespace: skipped"; exit 77; }

# demo_readonly LOG: the demo with everything but /tmp read-only.
demo_readonly()
{
	# The demo's own server, not the suite's, and a directory of its own.
	env -u ROWQ_TEST_SOCKET -u ROWQ_TEST_TMP -u ROWQ_TEST_DB \
	    -u ROWQ_TEST_NAME \
	    unshare --mount --propagation private -- sh -c '
		for d in /var /etc /usr /srv /home /root /run; do
			[ -d "$d" ] || continue
			mount --bind "$d" "$d" &&
			    mount -o remount,bind,ro "$d" || exit 1
		done
		exec bash "$1"' sh "$TESTS_DIR/demo.sh" >"$1" 2>&1
}

for run in 1 2; do
	status=0
	demo_readonly "demo$run.log" || status=$?
	if [ "$status" -ne 0 ]; then
		cat "demo$run.log"
		fail "make demo's script, run $run, exited $status"
	fi
	grep -q '^27 emails in the outbox, 0 of them more than once; 27 rows sent and 3 failed' \
	    "demo$run.log" || { cat "demo$run.log"; fail "run $run: the demo's summary"; }
	dir=$(sed -n 's/^== The pretend outbox (\(.*\)\/outbox)$/\1/p' "demo$run.log")
	assert_match '^/tmp/rowq-test\.' "$dir" "run $run: the demo's directory"
	[ ! -e "$dir" ] || fail "run $run: the demo left $dir behind"
done
echo "two runs of the demo passed, each in a directory of its own, gone after"
