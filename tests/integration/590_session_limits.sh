#!/usr/bin/env bash
# Server-side idle limits: a host that freezes while its handler holds a
# row (SIGSTOP on its supervisor, worker and handler) gives the row back
# within the queue's need (timeout 1s + 2s kill grace + 5s margin), not
# the server's wait_timeout (8 h), and another daemon does it.  (MariaDB's
# idle_transaction_timeout: test 591.)
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

email_table 1
WORKERS=1 TIMEOUT=1s email_config a.yaml "[$ROWQ_TEST_TMP/handler]"
echo 30 >hold_s
rowq_start a.yaml a.rowq
a_pid=$ROWQ_PID
on_exit '[ $? -eq 0 ] || { echo "--- a.rowq"; cat "$ROWQ_TEST_TMP/a.rowq"; echo "--- b.rowq"; cat "$ROWQ_TEST_TMP/b.rowq"; cat "$log"; }'
wait_until 10 'grep -q "^1 start" "$log" 2>/dev/null' || fail "the handler never started"
a_worker=$(children_of "$a_pid")
a_handler=$(for p in $a_worker; do children_of "$p"; done)
[ -n "$a_worker" ] && [ -n "$a_handler" ] || fail "worker or handler not found"
frozen="$a_pid $a_worker $a_handler"
# shellcheck disable=SC2086
kill -STOP $frozen
# A stopped process ignores TERM: thaw them at exit, before the kill.
on_exit "kill -CONT $frozen 2>/dev/null || true"
frozen_at=$(now_us)

rowq_start a.yaml b.rowq
wait_until 14 '[ "$(sql_value "SELECT status FROM email WHERE id = 1")" = sent ]' ||
	fail "the frozen host's row was not done by the other daemon within 14 s"
took=$((($(now_us) - frozen_at) / 1000000))
assert_le "$took" 12 "seconds until the frozen host's row came back and was done"
assert_eq 1 "$(sql_value "SELECT done_count FROM email WHERE id = 1")" "done once"
assert_eq 2 "$(grep -c '^1 start' "$log")" "handler runs (the frozen one, the other daemon's)"
# shellcheck disable=SC2086
kill -CONT $frozen
kill -TERM "$ROWQ_PID" "$a_pid"
wait "$ROWQ_PID" "$a_pid" || true
untrack_pid "$ROWQ_PID" "$a_pid"
