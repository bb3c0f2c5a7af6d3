#!/usr/bin/env bash
# Graceful stop.  SIGTERM while a row's handler runs (2 s, within the
# 10 s stop_timeout): rowq waits for it, the row is done once, exit 0.
# SIGTERM while a handler runs past stop_timeout (1 s): the worker kills
# the handler's whole process group (its grandchild too), the transaction
# rolls back, rowq exits 0 soon after the deadline, and the next start does
# the row.  The same for a reload: the old worker rolls back at its
# deadline and the new generation does the row.  A worker stuck in a
# statement is killed 3 s after that, and the server rolls back.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 0
cd "$ROWQ_TEST_TMP"
cfg=$ROWQ_TEST_TMP/rowq.yaml
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP"/*.log'

# Appends its key, starts a grandchild in its process group, sleeps $1.
cat >handler <<SH
#!/bin/sh
echo "\$ROWQ_KEY \$\$" >>"$ROWQ_TEST_TMP/handled"
sleep 600 &
echo \$! >>"$ROWQ_TEST_TMP/grandchildren"
sleep "\$1"
kill \$!
SH
chmod +x handler

stop_rowq()
{
	local start status=0
	start=$(now_us)
	kill -TERM "$ROWQ_PID"
	wait "$ROWQ_PID" || status=$?
	untrack_pid "$ROWQ_PID"
	assert_eq 0 "$status" "exit status after SIGTERM"
	took_ms=$(( ($(now_us) - start) / 1000 ))
}

# ---- the row finishes within stop_timeout ----
WORKERS=1 STOP_TIMEOUT=10s email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"2\"]"
sql "INSERT INTO email (id, recipient, subject, body) VALUES (1, 'a@example.com', 's', '')"
rowq_start "$cfg" finish.log
wait_until 10 '[ -s handled ]' || fail "row 1 not started"
stop_rowq
assert_le "$took_ms" 4000 "ms to stop with a 2 s row left"
assert_ge "$took_ms" 1000 "ms to stop with a 2 s row left"
assert_eq "sent 1 1" "$(sql_value "SELECT CONCAT(status, ' ', done_count, ' ', attempts) FROM email WHERE id = 1")" "row 1 after the stop"
assert_match "finished its rows and exited" "$(cat finish.log)" "worker exit logged"

# ---- the row outlives stop_timeout: rolled back, done after a restart ----
: >handled
: >grandchildren
WORKERS=1 STOP_TIMEOUT=1s TIMEOUT=60s email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"30\"]"
sql "INSERT INTO email (id, recipient, subject, body) VALUES (2, 'b@example.com', 's', '')"
rowq_start "$cfg" abort.log
wait_until 10 '[ -s grandchildren ]' || fail "row 2 not started"
read -r _ handler_pid <handled
grandchild=$(cat grandchildren)
stop_rowq
assert_le "$took_ms" 3500 "ms to stop with a 30 s row and stop_timeout 1s"
assert_ge "$took_ms" 900 "ms to stop with a 30 s row and stop_timeout 1s"
wait_until 2 '! _lib_alive "$handler_pid" && ! _lib_alive "$grandchild"' ||
	fail "handler $handler_pid or its grandchild $grandchild outlived the stop"
assert_eq "waiting 0 0" "$(sql_value "SELECT CONCAT(status, ' ', done_count, ' ', attempts) FROM email WHERE id = 2")" "row 2 after the stop"
assert_match "handler stopped" "$(cat abort.log)" "the aborted row is logged"

WORKERS=1 email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"0\"]"
rowq_start "$cfg" restart.log
wait_until 10 '[ "$(sql_value "SELECT status FROM email WHERE id = 2")" = sent ]' ||
	fail "row 2 not done after the restart"
stop_rowq
assert_eq "sent 1 1" "$(sql_value "SELECT CONCAT(status, ' ', done_count, ' ', attempts) FROM email WHERE id = 2")" "row 2 after the restart"
assert_eq 2 "$(grep -c '^2 ' handled)" "runs of row 2's handler"

# ---- a reload while a row outlives stop_timeout: the old worker rolls it
# back at its deadline, the new generation does it ----
: >handled
: >grandchildren
sql "INSERT INTO email (id, recipient, subject, body) VALUES (3, 'c@example.com', 's', '')"
WORKERS=1 STOP_TIMEOUT=1s TIMEOUT=60s email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"30\"]"
rowq_start "$cfg" reload.log
wait_until 10 '[ -s grandchildren ]' || fail "row 3 not started"
read -r _ handler_pid <handled
grandchild=$(cat grandchildren)
WORKERS=1 STOP_TIMEOUT=1s email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"0\"]"
kill -HUP "$ROWQ_PID"
wait_until 8 '[ "$(sql_value "SELECT status FROM email WHERE id = 3")" = sent ]' ||
	fail "row 3 not done by the new generation"
wait_until 2 '! _lib_alive "$handler_pid" && ! _lib_alive "$grandchild"' ||
	fail "the old generation's handler $handler_pid or grandchild $grandchild is still alive"
assert_eq "sent 1 1" "$(sql_value "SELECT CONCAT(status, ' ', done_count, ' ', attempts) FROM email WHERE id = 3")" "row 3 after the reload"
assert_match "email worker 1 still busy after stop_timeout \(1s\): telling it to roll back" "$(cat reload.log)" "the old worker's deadline"
stop_rowq

# ---- a worker that cannot even roll back (stuck in a statement waiting
# for a lock): SIGQUIT at stop_timeout, SIGKILL 3 s later; the server
# rolls its transaction back ----
sql "CREATE TABLE lockme (k INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB; INSERT INTO lockme VALUES (1, 0)"
mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B -e \
	"BEGIN; SELECT * FROM lockme WHERE k = 1 FOR UPDATE; SELECT SLEEP(60)" "$ROWQ_TEST_DB" >/dev/null 2>&1 &
locker=$!
track_pid "$locker"
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM information_schema.processlist WHERE info = '"'SELECT SLEEP(60)'"'")" = 1 ]' ||
	fail "the locking session did not start"
WORKERS=1 STOP_TIMEOUT=1s email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"0\"]"
sed -i 's/^    done: UPDATE email SET /    done: UPDATE email JOIN lockme ON lockme.k = 1 SET lockme.n = lockme.n + 1, /' "$cfg"
sql "INSERT INTO email (id, recipient, subject, body) VALUES (4, 'd@example.com', 's', '')"
rowq_start "$cfg" stuck.log
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE '"'UPDATE email JOIN lockme%'"'")" = 1 ]' ||
	fail "the worker is not waiting for the lock"
stop_rowq
assert_ge "$took_ms" 3500 "ms to stop a stuck worker (1 s + 3 s)"
assert_le "$took_ms" 6000 "ms to stop a stuck worker (1 s + 3 s)"
assert_match "did not exit 3s after SIGQUIT: killing it" "$(cat stuck.log)" "the SIGKILL"
assert_match "exited while stopping \(killed by signal 9" "$(cat stuck.log)" "the worker's death"
kill_wait 3 "$locker"
untrack_pid "$locker"
assert_eq "waiting 0" "$(sql_value "SELECT CONCAT(status, ' ', done_count) FROM email WHERE id = 4")" "row 4, rolled back"
assert_eq 0 "$(sql_value "SELECT n FROM lockme")" "the stuck statement's other row"
