#!/usr/bin/env bash
# The one rule, enforced: a done statement that does not take the row out
# of the select (it updates the wrong column) is noticed within a bounded
# number of claims, logged with queue, key and statement, and claiming is
# paused instead of running the handler again and again; the queue's
# other rows are not lost.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 5
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/handled
WORKERS=2 email_config bad.yaml "[$HANDLERS/fake, append, $log]"
# done sets a column the select does not test: row 1 never leaves.
sed -i "s/SET status = 'sent', attempts = attempts + 1,/SET body = 'sent',/" bad.yaml
rowq_start bad.yaml bad.log
wait_until 15 'grep -q "claimed again, unchanged" bad.log' ||
	fail "hot loop not noticed: $(cat bad.log)"
sleep 7
kill -0 "$ROWQ_PID" || fail "rowq died"
# Without the guard row 1 would run hundreds of times a second.  With it,
# each worker runs it once, notices, and then once after each pause of
# 1, 2, 4 s...: at most 4 runs per worker in these 7 s.
runs=$(grep -c '^1 ' "$log")
assert_le "$runs" 8 "handler runs of row 1 in 7 s"
assert_match "claims paused for 2s" "$(cat bad.log)" "growing pauses"
assert_match "email/[12]: row 1: claimed again, unchanged, right after bad.yaml:[0-9]+: queues.email.done finished it" "$(cat bad.log)" "log names queue, worker, key and statement"
# Nothing was lost: every row is still there and waiting.
assert_eq 5 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'waiting'")" "rows waiting"
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"

# A retry with no delay changes the row (attempts): not a hot loop.
sql "UPDATE email SET attempts = 0, body = 'body'"
: >"$log"
WORKERS=1 MAX_ATTEMPTS=3 email_config retry.yaml "[$HANDLERS/fake, exit, \"1\", $log]"
"$ROWQ" -c retry.yaml drain email >/dev/null 2>retry.log || true
assert_eq 0 "$(grep -c 'claimed again, unchanged' retry.log || true)" "false alarms on retries"
assert_eq 5 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'failed' AND attempts = 3")" "rows failed after 3 tries"
