#!/usr/bin/env bash
# max_attempts above a million (the attempt number was capped there): a
# row whose try reaches max_attempts, or is past it already, fails; it is
# never retried for ever.
#   row 1: 1,999,999 tries so far, max_attempts 2,000,000: this try is the
#          last one (ROWQ_ATTEMPT 2000000), then failed.
#   row 2: 5,000,000 tries so far: past max_attempts, failed after this try.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/handled
: >"$log"
email_table 2
sql "UPDATE email SET attempts = 1999999 WHERE id = 1;
    UPDATE email SET attempts = 5000000 WHERE id = 2"
WORKERS=1 MAX_ATTEMPTS=2000000 email_config rowq.yaml "[$HANDLERS/fake, exit, \"3\", $log]"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || { echo "--- rowq.log"; tail -n 20 "$ROWQ_TEST_TMP/rowq.log"; echo "--- handled"; tail -n 5 "$ROWQ_TEST_TMP/handled"; }'
wait_until 8 '[ "$(email_count "status = '"'failed'"'")" = 2 ]' ||
	fail "rows not failed: $(sql "SELECT id, status, attempts FROM email"); handler runs: $(wc -l <"$log")"
sleep 0.5
stop_rowq "$ROWQ_PID"
assert_eq "1 failed 2000000|2 failed 5000001" \
    "$(sql "SELECT CONCAT_WS(' ', id, status, attempts) FROM email ORDER BY id" | paste -sd '|')" \
    "rows (id status attempts)"
assert_eq "1 2000000" "$(grep '^1 ' "$log")" "row 1's one run and its ROWQ_ATTEMPT"
assert_eq 1 "$(grep -c '^2 ' "$log")" "runs of row 2"
