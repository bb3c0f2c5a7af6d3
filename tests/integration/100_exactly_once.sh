#!/usr/bin/env bash
# 10,000 rows, 4 workers: every row is done exactly once.  The handler's
# side-effect log must hold each key once, and the done statement's own
# counter must sum to the row count, so a double claim shows either way.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create

rows=10000
email_table $rows
log=$ROWQ_TEST_TMP/handled
email_config "$ROWQ_TEST_TMP/rowq.yaml" "[$HANDLERS/fake, append, $log]"

"$ROWQ" -c "$ROWQ_TEST_TMP/rowq.yaml" drain email -w 4 >"$ROWQ_TEST_TMP/out" 2>"$ROWQ_TEST_TMP/err" ||
	fail "drain failed: $(cat "$ROWQ_TEST_TMP/err")"
cat "$ROWQ_TEST_TMP/out"

assert_eq $rows "$(wc -l <"$log")" "handler runs"
assert_eq $rows "$(cut -d' ' -f1 "$log" | sort -u | wc -l)" "distinct keys handled"
assert_eq "" "$(cut -d' ' -f1 "$log" | sort | uniq -d | head -5)" "keys handled twice"
assert_eq $rows "$(sql_value "SELECT SUM(done_count) FROM email")" "sum of done_count"
assert_eq $rows "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'sent' AND attempts = 1")" "rows sent on the first try"
assert_match "^email: $rows done, 0 retried, 0 failed" "$(cat "$ROWQ_TEST_TMP/out")" "drain summary"
