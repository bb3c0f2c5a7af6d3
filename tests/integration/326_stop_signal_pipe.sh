#!/usr/bin/env bash
# stop_signal: with pipe handlers, and in a drain.  A stop (SIGTERM) while
# two rows run: the handler that traps the signal answers ok, its row is
# done and committed; the one that ignores it is killed at stop_timeout
# and its row goes back with no try spent.  A pipe handler between rows is
# not signalled: it ends at its EOF.  A reload (SIGHUP): the retiring
# worker's handler is told, answers, its row is done once.  A drain
# stopped by SIGTERM: its handler is told and finishes its row.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 0
cd "$ROWQ_TEST_TMP"
cfg=$ROWQ_TEST_TMP/rowq.yaml
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP"/*.log'

# A pipe handler: for each row, an odd id traps TERM (notes it, then
# answers ok), an even id ignores it; each row sleeps $1 seconds first.
# Its start is noted, and its EOF, with whether it was ever signalled.
cat >handler <<SH
#!/bin/sh
echo up >>"$ROWQ_TEST_TMP/up"
signalled=no
while IFS= read -r line; do
	id=\$(printf '%s\n' "\$line" | sed 's/.*"id": *"\{0,1\}\([0-9]*\).*/\1/')
	if [ \$((id % 2)) -eq 1 ]; then
		trap 'signalled=yes; echo "\$id" >>"$ROWQ_TEST_TMP/trapped"' TERM
	else
		trap '' TERM
	fi
	echo "\$id" >>"$ROWQ_TEST_TMP/started"
	sleep "\$1" &
	wait \$!
	echo ok
done
trap 'signalled=yes' TERM
echo "eof \$signalled" >>"$ROWQ_TEST_TMP/eof"
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

pipe_config()
{
	WORKERS=$1 STOP_TIMEOUT=$2 TIMEOUT=60s email_config "$cfg" "[]" "stop_signal: TERM"
	sed -i "s|^    exec: \[\]$|    pipe: [$ROWQ_TEST_TMP/handler, \"$3\"]|" "$cfg"
	grep -q "^    pipe: " "$cfg" || fail "no pipe: in $cfg"
}

# ---- a stop: the trapping handler answers, the ignoring one is killed ----
sql "INSERT INTO email (id, recipient, subject, body) VALUES (1, 'a@example.com', 's', ''), (2, 'b@example.com', 's', '')"
pipe_config 2 3s 60
rowq_start "$cfg" stop.log
wait_until 10 '[ "$(wc -l 2>/dev/null <started)" = 2 ]' || fail "the two rows did not start"
stop_rowq
assert_eq "1" "$(cat trapped)" "the handlers that trapped the signal"
assert_eq "sent 1 1" "$(row_state 1)" "row 1, whose handler trapped the signal and answered ok"
assert_eq "waiting 0 0" "$(row_state 2)" "row 2, whose handler ignored the signal (back, no try spent)"
assert_ge "$took_ms" 2700 "ms to stop: the ignoring handler held it to stop_timeout (3s)"
assert_le "$took_ms" 6000 "ms to stop: the ignoring handler killed at stop_timeout (3s)"
assert_eq "eof yes" "$(cat eof)" "the trapping handler's EOF after its row"
assert_match "stopping: sent SIGTERM to the handler" "$(cat stop.log)" "the signal is logged"
assert_match "handler stopped \(stopped: rowq is shutting down\)" "$(cat stop.log)" "row 2 given up"

sql "DELETE FROM email WHERE id = 2"

# ---- between rows: not signalled, the handler ends at its EOF ----
: >trapped
: >eof
pipe_config 2 5s 60
: >up
rowq_start "$cfg" idle.log
wait_until 10 '[ "$(wc -l 2>/dev/null <up)" = 2 ]' || fail "the two pipe handlers did not start"
sleep 0.5
: >started
stop_rowq
[ ! -s started ] || fail "a row started: $(cat started)"
assert_eq "eof no
eof no" "$(cat eof)" "the idle pipe handlers ended at their EOF, unsignalled"
[ ! -s trapped ] || fail "an idle handler was signalled"
assert_le "$took_ms" 3000 "ms to stop idle pipe handlers"

# ---- a reload: the retiring worker's handler that traps the signal
# answers, its row done once; the row of the one that ignores it comes
# back at the deadline, its killed try not counted, and the new
# generation does it ----
: >started
: >eof
sql "INSERT INTO email (id, recipient, subject, body) VALUES (3, 'c@example.com', 's', ''), (4, 'd@example.com', 's', '')"
pipe_config 2 2s 60
rowq_start "$cfg" reload.log
wait_until 10 '[ "$(wc -l 2>/dev/null <started)" = 2 ]' || fail "rows 3 and 4 did not start"
pipe_config 2 2s 0
kill -HUP "$ROWQ_PID"
wait_until 15 '[ "$(row_state 3)" = "sent 1 1" ] && [ "$(row_state 4)" = "sent 1 1" ]' ||
	fail "rows 3 and 4 not done once after the reload: $(row_state 3), $(row_state 4)"
assert_eq "3" "$(cat trapped)" "the retiring worker's handler trapped the signal"
assert_match "email worker [12] \(generation 1\) finished its rows and exited" "$(cat reload.log)" "the retiring worker of row 3"
assert_match "email worker [12] still busy after stop_timeout \(2s\)" "$(cat reload.log)" "the retiring worker of row 4, at its deadline"
assert_eq 3 "$(wc -l <started)" "rows handled: 3 and 4 in generation 1, 4 again in generation 2"
stop_rowq

# ---- a drain stopped by SIGTERM: the handler is told, its row done ----
: >started
: >trapped
sql "INSERT INTO email (id, recipient, subject, body) VALUES (5, 'e@example.com', 's', '')"
pipe_config 1 20s 60
"$ROWQ" -c "$cfg" drain email >drain.out 2>drain.log &
drain_pid=$!
track_pid "$drain_pid"
wait_until 10 '[ -s started ]' || fail "row 5 did not start in the drain"
start=$(now_us)
kill -TERM "$drain_pid"
status=0
wait "$drain_pid" || status=$?
untrack_pid "$drain_pid"
took_ms=$(( ($(now_us) - start) / 1000 ))
assert_eq 0 "$status" "the drain's exit status after SIGTERM ($(cat drain.log))"
assert_le "$took_ms" 3000 "ms to stop the drain"
assert_eq "5" "$(cat trapped)" "the drain's handler trapped the signal"
assert_eq "sent 1 1" "$(row_state 5)" "row 5, finished in the drain"
