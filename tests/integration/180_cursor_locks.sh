#!/usr/bin/env bash
# With the README's select, a worker that holds a claimed row while its
# handler runs keeps no other row locked: an application UPDATE of a row
# waiting for its retry (not due) that lies before the claimed one
# completes within 1 s, and so does an INSERT.  A claim through the
# (status, id) index at READ COMMITTED keeps such a rejected row locked
# until the commit; the claim that scans the primary key from a cursor
# (cursor.c) releases it.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 3
# Row 1 waits for a retry an hour away; rows 2 and 3 are due.
sql "UPDATE email SET attempts = 1, retry_at = UNIX_TIMESTAMP() + 3600 WHERE id = 1"
cfg=$ROWQ_TEST_TMP/rowq.yaml
WORKERS=1 email_config "$cfg" "[$HANDLERS/fake, sleep, \"6000\", $ROWQ_TEST_TMP/handled]"
rowq_start "$cfg" "$ROWQ_TEST_TMP/rowq.log"
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'

wait_until 10 '[ -s "$ROWQ_TEST_TMP/handled" ]' || fail "no row was claimed"
assert_eq "2 1" "$(cat "$ROWQ_TEST_TMP/handled")" "the claimed row"

# The application reschedules row 1 while row 2's handler runs.  A lock
# wait ends with error 1205 after 2 s instead of hanging the test.
start=$(now_us)
out=$(sql "SET SESSION innodb_lock_wait_timeout = 2;
    UPDATE email SET retry_at = retry_at + 60 WHERE id = 1" 2>&1) ||
	fail "the UPDATE of row 1, not due, waited for the worker's lock: $out"
took=$(( ($(now_us) - start) / 1000 ))
assert_le "$took" 1900 "ms the UPDATE of row 1 took"

start=$(now_us)
sql "SET SESSION innodb_lock_wait_timeout = 2;
    INSERT INTO email (recipient, subject, body) VALUES ('new@example.com', 'new', '')" ||
	fail "INSERT failed while a row was claimed"
took=$(( ($(now_us) - start) / 1000 ))
assert_le "$took" 1900 "ms the INSERT took"

# Row 2 was still claimed all along: the handler has not finished it.
assert_eq "1 waiting" "$(wc -l <"$ROWQ_TEST_TMP/handled") $(sql_value "SELECT status FROM email WHERE id = 2")" "row 2 still claimed"
