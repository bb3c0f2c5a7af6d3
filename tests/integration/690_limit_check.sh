#!/usr/bin/env bash
# rowq check and limit: what only the database can say.  A per_key.column
# that is not a column of the select, one that the select has but its
# table has not (an alias) and per_key with a select rowq cannot claim
# from a cursor are refused with the file, line and key; per_key in lease
# mode is accepted; a good limit gets a note of what it costs a claim, and the
# limit table is made by the first worker.  (What loading alone refuses
# is in tests/config/limit.yaml.)
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 4
sql "ALTER TABLE email ADD COLUMN customer_id INT NOT NULL DEFAULT 1"

check()
{
	rc=0
	"$ROWQ" -c "$1" check >check.out 2>&1 || rc=$?
}

email_config good.yaml "[/bin/true]" "limit: {concurrency: 4, rate: 10/1s}"
check good.yaml
assert_eq 0 "$rc" "a good limit: $(cat check.out)"
assert_match "good.yaml:[0-9]+: queues.email.limit: the limit table rowq_limit is not there yet" "$(cat check.out)"
"$ROWQ" -c good.yaml drain email >drain.out 2>&1 || fail "drain: $(cat drain.out)"
assert_match "created the limit table rowq_limit" "$(cat drain.out)"
check good.yaml
assert_match "good.yaml:[0-9]+: queues.email.limit: what a claim takes, (as EXECUTEs of statements prepared once per connection|as statements sent with it), in its round trip: the rate's token .*; a concurrency slot \\(a SELECT of GET_LOCK\\)" \
    "$(cat check.out)"

email_config nocol.yaml "[/bin/true]" "limit: {per_key: {column: customer}}"
check nocol.yaml
assert_eq 78 "$rc" "per_key.column not in the select"
assert_match "nocol.yaml:[0-9]+: queues.email.limit.per_key.column: customer is not a column of the select \\(columns: id, recipient, subject, attempts\\)" \
    "$(cat check.out)"

email_config alias.yaml "[/bin/true]" "limit: {per_key: {column: cust}}"
sed -i 's/SELECT id, recipient, subject, attempts FROM email/SELECT id, recipient, subject, attempts, customer_id AS cust FROM email/' alias.yaml
"$ROWQ" -c alias.yaml run >alias.log 2>&1 & p=$!
track_pid $p
wait_until 10 'grep -q "is not a column of the select.s table" alias.log' ||
	fail "an alias for per_key.column: $(cat alias.log)"
assert_match "alias.yaml:[0-9]+: queues.email.limit.per_key.column: cust is not a column of the select's table email: Unknown column 'cust'" \
    "$(cat alias.log)"
kill -TERM $p; wait $p || true; untrack_pid $p

email_config join.yaml "[/bin/true]" "limit: {per_key: {column: customer_id}}"
sed -i 's/SELECT id, recipient, subject, attempts FROM email/SELECT id, recipient, subject, attempts, customer_id FROM email/; s/      ORDER BY id/      ORDER BY id, recipient/' join.yaml
check join.yaml
assert_eq 78 "$rc" "per_key with a select not claimed from a cursor"
assert_match "join.yaml:[0-9]+: queues.email.limit.per_key.column: per_key needs a select that rowq claims from a cursor, of one table ordered by its integer primary key, so that the rows of a key at its limit are read past, never locked: the select orders by more than one column" \
    "$(cat check.out)"

email_config lease.yaml "[/bin/true]" "limit: {per_key: {column: customer_id}}" \
    "lease: {duration: 1m, claim: UPDATE email SET retry_at = 1 WHERE id = :id}"
sed -i 's/SELECT id, recipient, subject, attempts FROM email/SELECT id, recipient, subject, attempts, customer_id FROM email/' lease.yaml
check lease.yaml
assert_eq 0 "$rc" "per_key in lease mode ($(cat check.out))"
! grep -q "per_key" check.out || fail "check on per_key in lease mode: $(cat check.out)"

