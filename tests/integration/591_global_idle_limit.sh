#!/usr/bin/env bash
# A server whose global idle_transaction_timeout (MariaDB's; on MySQL,
# which has none, wait_timeout, which ends an idle transaction there) is
# shorter than a handler does not kill the worker's transaction
# mid-handler (a second worker would run the row at the same time), and
# `rowq check` warns about that global, naming it, its value and the
# queue.
# serial: sets server-wide idle limits (SET GLOBAL) that would cut other tests' sessions.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/handled

# The first run of a row sleeps (the seconds in hold_s), the next ones are
# quick.  (A file, not the environment: handlers get only what env: names.)
cat >handler <<SH
#!/bin/sh
echo "\$ROWQ_KEY start \$\$" >>"$log"
if mkdir "$ROWQ_TEST_TMP/first-\$ROWQ_KEY" 2>/dev/null; then
	sleep \$(cat "$ROWQ_TEST_TMP/hold_s")
fi
echo "\$ROWQ_KEY end \$\$" >>"$log"
SH
chmod +x handler

email_table 0
case $(server_family) in
mariadb) globals="idle_transaction_timeout idle_write_transaction_timeout idle_readonly_transaction_timeout" ;;
mysql) globals="wait_timeout" ;;
esac
for g in $globals; do
	v=$(sql_value "SELECT @@GLOBAL.$g")
	# The server is shared with the other tests: put it back whatever happens.
	on_exit "sql 'SET GLOBAL $g = $v'"
	sql "SET GLOBAL $g = 1"
done
first=${globals%% *}
sql "INSERT INTO email (id, recipient, subject, body)
    VALUES (1, 'a@example.com', 's', '')"
WORKERS=2 TIMEOUT=10s email_config b.yaml "[$ROWQ_TEST_TMP/handler]"
"$ROWQ" -c b.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
assert_match "queues.email: the server's global $first is 1s, below the 17s this queue needs" \
    "$(cat check.out)" "check warns about the global"
echo 3 >hold_s
rowq_start b.yaml b2.rowq
wait_until 15 '[ "$(sql_value "SELECT status FROM email WHERE id = 1")" = sent ]' ||
	fail "row 1 not done: $(cat b2.rowq)"
# A second run would have started by now, had the first one's lock gone.
sleep 1
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"
assert_eq 1 "$(grep -c '^1 start' "$log")" "handler runs of row 1 ($(cat b2.rowq))"
assert_eq "sent 1" "$(sql_value "SELECT CONCAT(status, ' ', done_count) FROM email WHERE id = 1")" "row 1"
