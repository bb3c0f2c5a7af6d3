#!/usr/bin/env bash
# A stop during a reload gives each retiring worker its own generation's
# stop_timeout, not the new one's: a worker of a generation with 20 s,
# busy with a 3 s row, finishes and commits that row although the new
# configuration says 1 s.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 1
log=$ROWQ_TEST_TMP/handled
WORKERS=1 STOP_TIMEOUT=20s email_config rowq.yaml "[$HANDLERS/fake, sleep, 3000, $log]"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
wait_until 10 '[ -s "$log" ]' || fail "the row was not started"

sed -i 's/^stop_timeout: 20s$/stop_timeout: 1s/' rowq.yaml
grep -q '^stop_timeout: 1s$' rowq.yaml || fail "stop_timeout not changed"
kill -HUP "$ROWQ_PID"
wait_until 10 'grep -q "reload: generation 2 started" rowq.log' || fail "reload not done"
kill -TERM "$ROWQ_PID"
wait_until 15 '! kill -0 "$ROWQ_PID" 2>/dev/null' || fail "rowq did not stop"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"

! grep -q "still busy after stop_timeout" rowq.log || fail "the generation 1 worker was cut short by the new stop_timeout"
assert_eq sent "$(sql_value "SELECT status FROM email WHERE id = 1")" "the row's status"
assert_eq 1 "$(wc -l <"$log")" "handler runs"
assert_match "email worker 1 \(generation 1\) finished its rows and exited" "$(cat rowq.log)" "the retiring worker's exit"
