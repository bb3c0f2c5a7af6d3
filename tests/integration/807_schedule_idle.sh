#!/usr/bin/env bash
# Idle cost of schedules: a daemon with 50 schedules, none due for hours
# (cron in several zones, every: 1d), pays no statement for them: its
# scheduler computes each next slot itself and sleeps until the first.
# Counted from the server's Questions over 8 s, after the start (one
# transaction per schedule, which reads or creates its row).
# serial: counts the whole server's statements (Questions).
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE job (id INT AUTO_INCREMENT PRIMARY KEY, slot DATETIME)"
hour=$(( (10#$(date -u +%H) + 12) % 24 ))
{
	echo "database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }"
	echo "schedules:"
	zones=(UTC Europe/Paris America/New_York Asia/Tokyo Australia/Sydney)
	for i in $(seq 1 50); do
		echo "  s$i:"
		if [ $((i % 10)) -eq 0 ]; then
			echo "    every: 1d"
		else
			echo "    cron: \"$i $hour * * *\""
			echo "    timezone: ${zones[i % 5]}"
		fi
		echo "    insert: INSERT INTO job (slot) VALUES (:slot)"
	done
} >rowq.yaml
"$ROWQ" -c rowq.yaml run >run.log 2>&1 & P=$!
track_pid $P
on_exit '[ $? = 0 ] || tail -n 20 run.log'
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM rowq_schedule" 2>/dev/null)" = 50 ]' ||
    fail "the scheduler did not read its 50 schedules"
sleep 1

questions() { sql "SHOW GLOBAL STATUS LIKE 'Questions'" | awk '{ print $2 }'; }
window=8
q0=$(questions)
sleep $window
q1=$(questions)
# Ours: the two SHOWs (a statement counts once it has run).
n=$((q1 - q0 - 2))
echo "figure: statements in ${window}s with 50 schedules idle: $n"
assert_le "$n" 0 "statements in ${window}s"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM job")" "slots inserted"
kill -TERM $P
wait $P || fail "the daemon exited with $?"
untrack_pid $P
