#!/usr/bin/env bash
# Retry and failure policy: a handler that fails twice then succeeds ends
# done after 3 tries with retry_at set in between; one that always fails
# ends failed after max_attempts with its :error stored; exit 65 fails at
# once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 0
cfg=$ROWQ_TEST_TMP/rowq.yaml
log=$ROWQ_TEST_TMP/handled

# Row 1 succeeds on try 3, row 2 always fails, row 3 fails permanently.
sql "INSERT INTO email (id, recipient, subject, body) VALUES
    (1, 'a@example.com', 'flaky', ''), (2, 'b@example.com', 'broken', ''),
    (3, 'c@example.com', 'bad data', '')"
cat >"$ROWQ_TEST_TMP/handler" <<SH
#!/bin/sh
echo "\$ROWQ_KEY \$ROWQ_ATTEMPT \$(date +%s.%N)" >>"$log"
case "\$ROWQ_KEY" in
1) [ "\$ROWQ_ATTEMPT" -ge 3 ] && exit 0; echo "flaky try \$ROWQ_ATTEMPT" >&2; exit 1 ;;
2) echo "smtp said no" >&2; exit 75 ;;
3) echo "no such recipient" >&2; exit 65 ;;
esac
SH
chmod +x "$ROWQ_TEST_TMP/handler"
DELAY=1s MAX_ATTEMPTS=3 email_config "$cfg" "[$ROWQ_TEST_TMP/handler]"

rowq_start "$cfg" "$ROWQ_TEST_TMP/rowq.log"
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'

# Between tries the row carries its retry time.
# (retry_at counts whole seconds: the next try may come within
# milliseconds, when a second boundary passes, so look for >= 1.)
wait_until 20 '[ "$(sql_value "SELECT attempts FROM email WHERE id = 1")" -ge 1 ]' ||
	fail "row 1 was never retried"
assert_eq 1 "$(sql_value "SELECT retry_at IS NOT NULL FROM email WHERE id = 1")" "retry_at set after the first failure"

wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status <> '"'waiting'"'")" = 3 ]' ||
	fail "rows did not reach their final state: $(sql "SELECT id, status, attempts FROM email")"

assert_eq "sent 3" "$(sql_value "SELECT CONCAT(status, ' ', attempts) FROM email WHERE id = 1")" "flaky row"
assert_eq "failed 3" "$(sql_value "SELECT CONCAT(status, ' ', attempts) FROM email WHERE id = 2")" "broken row"
assert_match "exit status 75: smtp said no" "$(sql_value "SELECT last_error FROM email WHERE id = 2")" ":error of the broken row"
assert_eq "failed 1" "$(sql_value "SELECT CONCAT(status, ' ', attempts) FROM email WHERE id = 3")" "exit 65 row"
assert_match "exit status 65: no such recipient" "$(sql_value "SELECT last_error FROM email WHERE id = 3")" ":error of the exit-65 row"
assert_eq 3 "$(grep -c '^1 ' "$log")" "tries of the flaky row"
assert_eq 1 "$(grep -c '^3 ' "$log")" "tries of the exit-65 row"

# The tries of row 1 were spaced by the 1 s delay (retry_at counts whole
# seconds, so the next try comes in a later second), not back to back.
first=$(grep '^1 1 ' "$log" | cut -d' ' -f3 | cut -d. -f1)
second=$(grep '^1 2 ' "$log" | cut -d' ' -f3 | cut -d. -f1)
assert_ge "$second" $((first + 1)) "second of try 2 after try 1 in second $first"

kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq run exited with $?"
untrack_pid "$ROWQ_PID"
assert_match "try 1 failed: exit status 1: flaky try 1; next try in 1s" "$(cat "$ROWQ_TEST_TMP/rowq.log")" "log of a failed try"
assert_match "failed after 3 tries: exit status 75: smtp said no" "$(cat "$ROWQ_TEST_TMP/rowq.log")" "log of the last try"
