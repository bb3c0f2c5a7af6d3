#!/usr/bin/env bash
# What `rowq check` says of a claim, in SQL that can be pasted: the FORCE
# INDEX it suggests names the table, not the select's alias (`FROM email
# AS e FORCE INDEX (...)`, not `FROM e FORCE INDEX`).  The claim by key's
# warnings are in 26_app_magento and 28_app_action_scheduler, with the
# applications' own selects.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

email_table 0 "status, id"
sql "INSERT INTO email (recipient, subject, body, status)
    SELECT CONCAT('user', seq, '@example.com'), CONCAT('hello ', seq), 'body',
    IF(seq <= 2000, 'sent', 'waiting') FROM $(seq_rows 4000);
    ANALYZE TABLE email" >/dev/null
email_config q.yaml "[/bin/true]"
sed -i 's/FROM email$/FROM email AS e IGNORE INDEX (status)/' q.yaml
out=$("$ROWQ" -c q.yaml check 2>&1) || fail "check: $out"
assert_match "index status serves the WHERE and the ORDER BY but the optimizer does not use it .*: write FROM email AS e FORCE INDEX \(status\) in the select" "$out" "FORCE INDEX with the table's name"
