#!/usr/bin/env bash
# Server-side idle limits.  (a) A host that freezes while its handler
# holds a row (SIGSTOP on its supervisor, worker and handler) gives the
# row back within the queue's need (timeout 1s + 2s kill grace + 5s
# margin), not the server's wait_timeout (8 h), and another daemon does
# it.  (b) A server whose global idle_transaction_timeout (MySQL:
# wait_timeout) is shorter than a handler does not kill the worker's
# transaction mid-handler (a second worker would run the row at the same
# time), and `rowq check` warns about that global, naming it, its value
# and the queue.
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

# ---- (a) a frozen host's row comes back within the queue's need ----
email_table 1
WORKERS=1 TIMEOUT=1s email_config a.yaml "[$ROWQ_TEST_TMP/handler]"
echo 30 >hold_s
rowq_start a.yaml a.rowq
a_pid=$ROWQ_PID
on_exit '[ $? -eq 0 ] || { echo "--- a.rowq"; cat "$ROWQ_TEST_TMP/a.rowq"; echo "--- b.rowq"; cat "$ROWQ_TEST_TMP/b.rowq"; cat "$log"; }'
wait_until 10 'grep -q "^1 start" "$log" 2>/dev/null' || fail "(a): the handler never started"
a_worker=$(children_of "$a_pid")
a_handler=$(for p in $a_worker; do children_of "$p"; done)
[ -n "$a_worker" ] && [ -n "$a_handler" ] || fail "(a): worker or handler not found"
frozen="$a_pid $a_worker $a_handler"
# shellcheck disable=SC2086
kill -STOP $frozen
# A stopped process ignores TERM: thaw them at exit, before the kill.
on_exit "kill -CONT $frozen 2>/dev/null || true"
frozen_at=$(now_us)

rowq_start a.yaml b.rowq
wait_until 14 '[ "$(sql_value "SELECT status FROM email WHERE id = 1")" = sent ]' ||
	fail "(a): the frozen host's row was not done by the other daemon within 14 s"
took=$((($(now_us) - frozen_at) / 1000000))
assert_le "$took" 12 "(a): seconds until the frozen host's row came back and was done"
assert_eq 1 "$(sql_value "SELECT done_count FROM email WHERE id = 1")" "(a): done once"
assert_eq 2 "$(grep -c '^1 start' "$log")" "(a): handler runs (the frozen one, the other daemon's)"
# shellcheck disable=SC2086
kill -CONT $frozen
kill -TERM "$ROWQ_PID" "$a_pid"
wait "$ROWQ_PID" "$a_pid" || true
untrack_pid "$ROWQ_PID" "$a_pid"

# ---- (b) a global idle limit shorter than a handler ----
# MariaDB's idle transaction limits; on MySQL, which has none,
# wait_timeout, the one that ends an idle transaction there.
rm -rf first-* && : >"$log"
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
sql "DELETE FROM email; INSERT INTO email (id, recipient, subject, body)
    VALUES (1, 'a@example.com', 's', '')"
WORKERS=2 TIMEOUT=10s email_config b.yaml "[$ROWQ_TEST_TMP/handler]"
"$ROWQ" -c b.yaml check >check.out 2>&1 || fail "(b): check: $(cat check.out)"
assert_match "queues.email: the server's global $first is 1s, below the 17s this queue needs" \
    "$(cat check.out)" "(b): check warns about the global"
echo 3 >hold_s
rowq_start b.yaml b2.rowq
wait_until 15 '[ "$(sql_value "SELECT status FROM email WHERE id = 1")" = sent ]' ||
	fail "(b): row 1 not done: $(cat b2.rowq)"
# A second run would have started by now, had the first one's lock gone.
sleep 1
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "(b): rowq exited with $?"
untrack_pid "$ROWQ_PID"
assert_eq 1 "$(grep -c '^1 start' "$log")" "(b): handler runs of row 1 ($(cat b2.rowq))"
assert_eq "sent 1" "$(sql_value "SELECT CONCAT(status, ' ', done_count) FROM email WHERE id = 1")" "(b): row 1"
