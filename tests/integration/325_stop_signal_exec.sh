#!/usr/bin/env bash
# stop_signal: with exec handlers.  A stop (SIGTERM) while three rows'
# handlers run: each gets the queue's stop_signal at once; the one that
# traps it and exits 0 has its row done and committed; the one that dies
# of it gives its row back at once, and the one that ignores it is killed
# at stop_timeout, its row back too, both with no try spent (attempts 0).  stop_grace: the signal comes that long before the
# deadline, not at the stop's start.  A reload (SIGHUP): the retiring
# worker's handler gets the signal, finishes, and its row is done once.
# Without stop_signal: no signal (the handler runs to its end).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 0
cd "$ROWQ_TEST_TMP"
cfg=$ROWQ_TEST_TMP/rowq.yaml
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP"/*.log'

# By its key modulo 3: 1 traps USR2 and exits 0 after noting it; 2
# ignores it (as does its sleep: an ignored signal stays ignored across
# exec); 0 leaves it at its default, and dies of it.  Each notes its start.
cat >handler <<SH
#!/bin/sh
case \$((ROWQ_KEY % 3)) in
1) trap 'echo "\$ROWQ_KEY \${EPOCHREALTIME:-\$(date +%s.%N)}" >>"$ROWQ_TEST_TMP/trapped"; exit 0' USR2 ;;
2) trap '' USR2 ;;
esac
echo "\$ROWQ_KEY" >>"$ROWQ_TEST_TMP/started"
sleep "\$1" &
wait \$!
echo "\$ROWQ_KEY" >>"$ROWQ_TEST_TMP/ended"
SH
chmod +x handler

row_state()
{
	sql_value "SELECT CONCAT(status, ' ', done_count, ' ', attempts) FROM email WHERE id = $1"
}

stop_rowq()
{
	local status=0
	stop_start=$(now_us)
	kill -TERM "$ROWQ_PID"
	wait "$ROWQ_PID" || status=$?
	untrack_pid "$ROWQ_PID"
	assert_eq 0 "$status" "exit status after SIGTERM"
	took_ms=$(( ($(now_us) - stop_start) / 1000 ))
}

# ---- a stop: the trapping handler finishes, the others give their row back ----
sql "INSERT INTO email (id, recipient, subject, body) VALUES (1, 'a@example.com', 's', ''), (2, 'b@example.com', 's', ''), (3, 'c@example.com', 's', '')"
WORKERS=3 STOP_TIMEOUT=3s TIMEOUT=60s email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"60\"]" "stop_signal: USR2"
rowq_start "$cfg" stop.log
wait_until 10 '[ "$(wc -l 2>/dev/null <started)" = 3 ]' || fail "the three rows did not start"
stop_rowq
assert_eq "1" "$(cut -d' ' -f1 trapped)" "the handlers that trapped the signal"
assert_eq "sent 1 1" "$(row_state 1)" "row 1, whose handler trapped the signal and exited 0"
assert_eq "waiting 0 0" "$(row_state 2)" "row 2, whose handler ignored the signal (back, no try spent)"
assert_eq "waiting 0 0" "$(row_state 3)" "row 3, whose handler died of the signal (back, no try spent)"
assert_match "email worker [0-9] \(generation 1\) finished its rows and exited" "$(cat stop.log)" "the workers of rows 1 and 3"
assert_ge "$took_ms" 2700 "ms to stop: the ignoring handler held it to stop_timeout (3s)"
assert_le "$took_ms" 6000 "ms to stop: the ignoring handler killed at stop_timeout (3s)"
[ ! -s ended ] || fail "a handler ran to its end: $(cat ended)"
assert_match "stopping: sent SIGUSR2 to the handler" "$(cat stop.log)" "the signal is logged"
assert_match "still busy after stop_timeout \(3s\)" "$(cat stop.log)" "the deadline"
assert_match "handler stopped \(stopped: rowq is shutting down\)" "$(cat stop.log)" "row 2 given up"
sql "DELETE FROM email WHERE id IN (2, 3)"

# ---- stop_grace: the signal comes stop_grace before the deadline ----
: >started
: >trapped
sql "INSERT INTO email (id, recipient, subject, body) VALUES (4, 'd@example.com', 's', '')"
WORKERS=1 STOP_TIMEOUT=4s TIMEOUT=60s email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"60\"]" "stop_signal: USR2" "stop_grace: 1500ms"
rowq_start "$cfg" grace.log
wait_until 10 '[ -s started ]' || fail "row 4 did not start"
stop_rowq
assert_eq "4" "$(cut -d' ' -f1 trapped)" "the handler that trapped the signal"
signal_ms=$(awk -v s="$stop_start" '{ printf "%d", ($2 * 1000000 - s) / 1000 }' trapped)
assert_ge "$signal_ms" 2200 "ms from the stop to the signal (deadline 4s - grace 1.5s)"
assert_le "$signal_ms" 3600 "ms from the stop to the signal (deadline 4s - grace 1.5s)"
assert_le "$took_ms" 3900 "ms to stop: the row finished before the deadline"
assert_eq "sent 1 1" "$(row_state 4)" "row 4, finished after the signal"

# ---- a reload: the retiring workers' handlers are told; the row of the
# one that finishes is done once, that of the one that ignores it comes
# back at the deadline and is done once by the new generation, its killed
# try not counted ----
: >started
: >trapped
sql "INSERT INTO email (id, recipient, subject, body) VALUES (7, 'g@example.com', 's', ''), (8, 'h@example.com', 's', '')"
WORKERS=2 STOP_TIMEOUT=2s TIMEOUT=60s email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"60\"]" "stop_signal: USR2"
rowq_start "$cfg" reload.log
wait_until 10 '[ "$(wc -l 2>/dev/null <started)" = 2 ]' || fail "rows 7 and 8 did not start"
WORKERS=2 STOP_TIMEOUT=2s TIMEOUT=60s email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"0\"]" "stop_signal: USR2"
kill -HUP "$ROWQ_PID"
wait_until 15 '[ "$(row_state 7)" = "sent 1 1" ] && [ "$(row_state 8)" = "sent 1 1" ]' ||
	fail "rows 7 and 8 not done once after the reload: $(row_state 7), $(row_state 8)"
assert_eq "7" "$(cut -d' ' -f1 trapped)" "the retiring worker's handler trapped the signal"
assert_match "email worker [12] \(generation 1\) finished its rows and exited" "$(cat reload.log)" "the retiring worker of row 7"
assert_match "email worker [12] still busy after stop_timeout \(2s\)" "$(cat reload.log)" "the retiring worker of row 8, at its deadline"
assert_eq 3 "$(wc -l <started)" "handler runs: 7 and 8 in generation 1, 8 again in generation 2"
stop_rowq
assert_le "$took_ms" 3000 "ms to stop an idle rowq"

# ---- without stop_signal: the handler is not signalled, it runs to its end ----
: >started
: >trapped
: >ended
sql "INSERT INTO email (id, recipient, subject, body) VALUES (13, 'm@example.com', 's', '')"
WORKERS=1 STOP_TIMEOUT=10s TIMEOUT=60s email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"2\"]"
rowq_start "$cfg" none.log
wait_until 10 '[ -s started ]' || fail "row 13 did not start"
stop_rowq
[ ! -s trapped ] || fail "a handler was signalled without stop_signal"
assert_eq "13" "$(cat ended)" "the handler ran to its end"
assert_eq "sent 1 1" "$(row_state 13)" "row 13"
