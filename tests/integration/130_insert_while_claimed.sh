#!/usr/bin/env bash
# An application INSERT into the queue table completes while a worker holds
# a claimed row: READ COMMITTED takes no gap locks.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 3
cfg=$ROWQ_TEST_TMP/rowq.yaml
WORKERS=1 email_config "$cfg" "[$HANDLERS/fake, sleep, \"4000\", $ROWQ_TEST_TMP/handled]"
rowq_start "$cfg" "$ROWQ_TEST_TMP/rowq.log"
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'

wait_until 10 '[ -s "$ROWQ_TEST_TMP/handled" ]' || fail "no row was claimed"
# The worker holds row 1 now.  An INSERT that had to wait for its lock
# would fail after 1 s instead of hanging.
start=$(now_us)
sql "SET SESSION innodb_lock_wait_timeout = 1;
    INSERT INTO email (recipient, subject, body) VALUES ('new@example.com', 'new', '');
    INSERT INTO email (recipient, subject, body) VALUES ('new2@example.com', 'new', '')" ||
	fail "INSERT failed while a row was claimed"
took=$(( ($(now_us) - start) / 1000 ))
# A lock wait fails after 1 s (above); the bound leaves a loaded machine
# room for two client starts.
assert_le "$took" 2500 "ms the INSERTs took"
assert_eq "1 1" "$(wc -l <"$ROWQ_TEST_TMP/handled") $(sql_value "SELECT COUNT(*) FROM email WHERE status = 'waiting' AND id = 1")" "row 1 still claimed, uncommitted"
# An UPDATE of another waiting row does not wait either.
sql "SET SESSION innodb_lock_wait_timeout = 1; UPDATE email SET subject = 'changed' WHERE id = 3" ||
	fail "UPDATE of an unclaimed row waited for a lock"
