#!/usr/bin/env bash
# Idle cost: with idle: 2s and 8 idle workers, the daemon's one wake
# watcher reads the queue every 2 s and the workers wait to be woken, so
# the queue costs at most 1/idle statements a second (the server's
# Questions, less our own and the pause watcher's read + ROLLBACK a
# second), not one claim + COMMIT per worker per idle.  A row inserted is
# still picked up within about idle.
# serial: counts the whole server's statements (Questions, the general log).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
log=$ROWQ_TEST_TMP/trace
: >"$log"
WORKERS=8 IDLE=2s email_config idle.yaml "[$HANDLERS/trace, $log, \"0\"]"
rowq_start idle.yaml idle.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/idle.log"'
sleep 3

# The pause watcher's statements are the daemon's, not the queue's: the
# general log (a table) tells them by their session, the one that reads
# rowq_pause.
questions() { sql "SHOW GLOBAL STATUS LIKE 'Questions'" | awk '{ print $2 }'; }
sql "SET GLOBAL log_output = 'TABLE'; TRUNCATE mysql.general_log; SET GLOBAL general_log = 1"
on_exit 'sql "SET GLOBAL general_log = 0" || true'
window=6
q0=$(questions)
sleep $window
q1=$(questions)
sql "SET GLOBAL general_log = 0"
pause=$(sql_value "SELECT COUNT(*) FROM mysql.general_log WHERE command_type IN ('Query', 'Execute')
    AND thread_id IN (SELECT thread_id FROM mysql.general_log WHERE argument LIKE '%rowq_pause%')")
# Ours: the second SHOW.
queue=$((q1 - q0 - 1 - pause))
echo "statements in ${window}s: all $((q1 - q0)), the pause watcher's $pause, the queue's $queue"
assert_le "$queue" $((window / 2 + 1)) "the queue's statements in ${window}s with 8 idle workers"
watchers=0
for p in $(cat /proc/"$ROWQ_PID"/task/*/children); do
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" = "wake watch" ] && watchers=$((watchers + 1))
done
assert_eq 1 "$watchers" "wake watchers of the daemon"

# A row still comes within about idle.
t0=$(now_us)
sql "INSERT INTO email (recipient, subject, body) VALUES ('a@x', 's', '')"
wait_until 5 'grep -q "^start" "$log"' || fail "the row was not picked up"
took=$(( ($(awk '$1 == "start" { print $6; exit }' "$log") - t0) / 1000 ))
echo "picked up in ${took} ms"
assert_le "$took" 2600 "ms from the insert to the handler"
