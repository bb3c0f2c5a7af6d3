#!/usr/bin/env bash
# A claim much slower than the worker's usual is logged, once, naming the
# queue's select and pointing at `rowq check`.  The select here sleeps on
# demand, as a claim that lost its index would crawl.  Rows keep coming,
# so that the workers claim (an idle worker waits for the wake watcher
# instead).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 0
cd "$ROWQ_TEST_TMP"
sql "CREATE TABLE knob (slow INT NOT NULL); INSERT INTO knob VALUES (0)"
WORKERS=1 IDLE=100ms email_config rowq.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/log]"
sed -i "s/        AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())/        AND (SELECT SLEEP(slow * 0.3) FROM knob) = 0/" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
# add_rows N: N more waiting rows.
add_rows()
{
	sql "INSERT INTO email (recipient, subject, body)
	    SELECT CONCAT('u', seq, '@example.com'), 's', 'b' FROM $(seq_rows "$1")"
}
add_rows 40	# some 40 fast claims: the usual
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" = 40 ]' ||
	fail "the first rows were not done: $(cat rowq.log)"
sql "UPDATE knob SET slow = 1"
add_rows 10
wait_until 10 'grep -q "a claim took" rowq.log' || fail "slow claim not logged: $(cat rowq.log)"
sleep 2	# more slow claims: said once, not each time
assert_eq 1 "$(grep -c 'a claim took' rowq.log)" "slow claim log lines"
assert_match "email/1: rowq.yaml:[0-9]+: queues.email.select: a claim took [0-9]+ms \(usually [0-9.]+ms\): .*see .rowq check." "$(cat rowq.log)" "the log line"
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"
