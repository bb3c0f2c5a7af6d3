#!/usr/bin/env bash
# A `SELECT *` queue whose table gains columns while the wake watcher
# holds its probe prepared: the server sends the probe's rows with more
# columns than were bound (2057); the watcher prepares its probes again
# on a new connection, instead of going on with a connection out of
# sync (2014 on every statement after), and goes on waking workers.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
: >log
IDLE=300ms email_config rowq.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/log]"
sed -i 's/SELECT id, recipient, subject, attempts FROM email/SELECT * FROM email/' rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
wait_until 10 'grep -q "wake watch: connected" rowq.log' || fail "no watcher"
sleep 1
for i in 1 2 3; do
	sql "ALTER TABLE email ADD COLUMN c$i INT NULL"
	sleep 1
done
sql "INSERT INTO email (recipient, subject, body) VALUES ('a', 'b', 'c')"
wait_until 10 '[ -s log ]' || fail "the row was not picked up"
sleep 1
! grep -a -q 'out of sync' rowq.log ||
    fail "a statement ran on a connection out of sync: $(grep -a 'out of sync' rowq.log | head -3)"
! grep -a -qE 'AddressSanitizer|runtime error' rowq.log || fail "a sanitizer report"
assert_match 'wake watch: .*columns changed.* preparing' "$(cat rowq.log)" "the watcher says why it prepares again"
