#!/usr/bin/env bash
# A reload while none of the current generation's workers runs (each
# waits to restart after a death) frees that generation once the new one
# has started: the old workers are not needed, and nothing else would ever
# free it (after 64 such reloads every reload used to be refused).  The
# handler kills its worker, so that each generation's worker is dead, and
# waiting to restart, when the next SIGHUP comes.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 3
WORKERS=1 email_config rowq.yaml "[$HANDLERS/fake, kill-worker]"
# There before the daemon opens it: counted from at once (a log not yet
# opened read as no number, which ended the first wait at once, and the
# SIGHUP then came before the daemon could take it).
: >rowq.log
"$ROWQ" -c rowq.yaml -d run >>rowq.log 2>&1 &
ROWQ_PID=$!
track_pid "$ROWQ_PID"
on_exit '[ $? -eq 0 ] || tail -n 60 "$ROWQ_TEST_TMP/rowq.log"'

deaths() { grep -c 'email worker 1 died' rowq.log || true; }
outcomes() { grep -cE 'reload: generation [0-9]+ started|reload failed' rowq.log || true; }
# wait_for_count FUNCTION N: poll faster than wait_until, as a reload
# takes about a tenth of a second and there are many.
wait_for_count()
{
	local end=$((SECONDS + 10))
	local n
	while n=$($1); [ "${n:-0}" -lt "$2" ]; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.02
	done
}
# More than the 64 generations the supervisor keeps at most.
reloads=66
for i in $(seq 1 $reloads); do
	# The current generation's worker is dead and waits to restart.
	wait_for_count deaths "$i" || fail "reload $i: the worker did not die"
	kill -HUP "$ROWQ_PID"
	wait_for_count outcomes "$i" || fail "reload $i: no outcome logged"
done
! grep 'reload failed' rowq.log || fail "a reload was refused"
assert_eq $reloads "$(grep -c 'reload: generation [0-9]* started' rowq.log)" "reloads accepted"
for g in $(seq 1 $reloads); do
	wait_until 5 'grep -q "generation $g has no worker left" rowq.log' ||
		fail "generation $g was never freed"
done
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"
