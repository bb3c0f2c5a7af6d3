#!/usr/bin/env bash
# `rowq check` EXPLAINs every claim and warns, naming the queue's select,
# when the plan reads rows it will not return, with the index that would
# serve: the design article's INDEX (status, retry_at) is warned about and
# (status, id) suggested; (status, id) itself is clean; a table with no
# usable index is warned about; an index that serves but that the optimizer
# does not use gets FORCE INDEX.  Warnings do not fail check: exit 0.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

# The article's table, 4,000 rows of which the first half are sent, so
# that the optimizer sees a realistic queue, not a toy table it would scan
# whatever the indexes.
email_table 0 "status, retry_at"
sql "INSERT INTO email (recipient, subject, body, status)
    SELECT CONCAT('user', seq, '@example.com'), CONCAT('hello ', seq), 'body',
    IF(seq <= 2000, 'sent', 'waiting') FROM $(seq_rows 4000);
    ANALYZE TABLE email" >/dev/null

email_config q.yaml "[/bin/true]"
line=$(grep -n '^    select:' q.yaml | cut -d: -f1)
where="q.yaml:$line: queues.email.select:"

# check_ok NAME: run check, which must exit 0; its output in $out.
check_ok()
{
	local status=0
	out=$("$ROWQ" -c q.yaml check 2>&1) || status=$?
	assert_eq 0 "$status" "$1: exit status of check ($out)"
	assert_match "q.yaml: ok, 1 queue" "$out" "$1: check output"
}

# ---- the article's index: warned, (status, id) suggested ----
check_ok article
assert_match "$where the claim reads rows it will not return" "$out" "article: the plan"
assert_match "$where no index of email serves both the WHERE and the ORDER BY \(status \(status, retry_at\) has the WHERE's columns" "$out" "article: the index"
assert_match "ALTER TABLE email ADD INDEX status_id \(status, id\)" "$out" "article: suggestion"
assert_match "FORCE INDEX \(status_id\)" "$out" "article: when to force"

# ---- the fixed index: clean ----
sql "ALTER TABLE email DROP INDEX status, ADD INDEX status_id (status, id);
    ANALYZE TABLE email" >/dev/null
check_ok fixed
# A range on MariaDB, a ref on MySQL: the same rows read either way.
assert_match "^$where claim plan: (range|ref) on index status_id, reads only the rows it returns
q.yaml: ok, 1 queue\$" "$(sed 's/^rowq: //' <<<"$out")" "fixed: the plan, and ok"

# ...also when batch asks for many rows at once.
email_config q.yaml "[/bin/true]" "batch: 100"
check_ok "fixed, batch 100"
assert_eq "" "$(grep -v 'claim plan: .* reads only the rows it returns$' <<<"$out" | grep -v 'ok, 1 queue$' || true)" "fixed, batch 100: no warning"

# ---- an index that serves, but that the optimizer is kept from ----
email_config q.yaml "[/bin/true]"
sed -i 's/FROM email$/FROM email IGNORE INDEX (status_id)/' q.yaml
check_ok ignored
assert_match "$where the claim reads rows it will not return: it scans index PRIMARY" "$out" "ignored: the plan"
assert_match "$where index status_id serves the WHERE and the ORDER BY but the optimizer does not use it.*FORCE INDEX \(status_id\)" "$out" "ignored: FORCE INDEX"

# ---- no usable index at all ----
email_config q.yaml "[/bin/true]"
sql "ALTER TABLE email DROP INDEX status_id; ANALYZE TABLE email" >/dev/null
check_ok "no index"
assert_match "$where the claim reads rows it will not return" "$out" "no index: the plan"
assert_match "$where no index of email serves both the WHERE and the ORDER BY: ALTER TABLE email ADD INDEX status_id \(status, id\)" "$out" "no index: suggestion"

# ---- a sort: ORDER BY a column no index holds after status ----
sql "ALTER TABLE email ADD INDEX status_id (status, id); ANALYZE TABLE email" >/dev/null
email_config q.yaml "[/bin/true]"
sed -i 's/^      ORDER BY id$/      ORDER BY subject/' q.yaml
check_ok sort
# Such a claim would lock every waiting row: it locks by key instead, and
# the sort left in the list of keys is the warning.
assert_match "$where claims lock by key: the select's own claim would lock more than it claims \(it sorts email" "$out" "sort: claimed by key"
assert_match "$where the claim by key locks only the rows it claims, but its list of keys sorts every row the select matches" "$out" "sort: the plan"
assert_match "ADD INDEX status_subject \(status, subject\)" "$out" "sort: suggestion"

# A warning is not an error: run starts as usual and drains the queue.
email_config q.yaml "[/bin/true]"
"$ROWQ" -c q.yaml drain email -w 2 >drain.out 2>drain.err || fail "drain: $(cat drain.err)"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'waiting'")" "rows left"
assert_eq 2000 "$(sql_value "SELECT SUM(done_count) FROM email")" "rows done once"
