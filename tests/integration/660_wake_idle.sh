#!/usr/bin/env bash
# Idle cost: with idle: 2s and 8 idle workers, the daemon's one wake
# watcher reads the queue every 2 s and the workers wait to be woken; the
# watcher also reads the pause table, inside the queue's read where it
# can and by itself at most once a second.  Counted from the server's
# Questions over 10 s, all of the daemon's statements:
# - no pause table: at most 1 per idle (the table is looked for by a
#   prepare, which runs nothing);
# - a pause table, nothing paused: at most 2 per idle;
# and a pause made then still stops the workers within 2 s.  A row
# inserted is still picked up within about idle.
# serial: counts the whole server's statements (Questions).
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

questions() { sql "SHOW GLOBAL STATUS LIKE 'Questions'" | awk '{ print $2 }'; }
window=10
# idle_cost LIMIT WHAT: the daemon's statements in the window, at most LIMIT.
idle_cost()
{
	local q0 q1 n
	q0=$(questions)
	sleep $window
	q1=$(questions)
	# Ours: the second SHOW.
	n=$((q1 - q0 - 1))
	echo "$2: $n statements in ${window}s with 8 idle workers at idle 2s"
	assert_le "$n" "$1" "$2: statements in ${window}s"
}
# The window holds 5 reads of each kind, or 6 when it starts just
# before one: one more is allowed for that.
idle_cost $((window / 2 + 1)) "no pause table"
watchers=0
for p in $(cat /proc/"$ROWQ_PID"/task/*/children); do
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" = "wake watch" ] && watchers=$((watchers + 1))
done
assert_eq 1 "$watchers" "wake watchers of the daemon (no pause watcher of its own)"

sql "CREATE TABLE rowq_pause (queue VARCHAR(191) NOT NULL PRIMARY KEY,
    since TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    reason VARCHAR(1000) NOT NULL DEFAULT '')"
wait_until 5 'grep -q "found the pause table" idle.log' ||
    fail "the watcher did not find the pause table"
idle_cost $((2 * (window / 2 + 1))) "a pause table, nothing paused"

# A pause still takes effect within 2 s: the eight workers exit.
"$ROWQ" -c idle.yaml pause email >out 2>&1 || fail "pause: $(cat out)"
t0=$(now_us)
wait_until 5 '[ -z "$(children_of "$ROWQ_PID")" ]' ||
    fail "workers still running 5 s after the pause"
took=$((($(now_us) - t0) / 1000))
echo "the pause stopped the workers in ${took} ms"
assert_le "$took" 2000 "ms from the pause to no worker"
"$ROWQ" -c idle.yaml resume email >out 2>&1 || fail "resume: $(cat out)"
wait_until 5 '[ "$(children_of "$ROWQ_PID" | wc -l)" -eq 8 ]' ||
    fail "the workers did not start again after resume"

# A row still comes within about idle.
sleep 1
t0=$(now_us)
sql "INSERT INTO email (recipient, subject, body) VALUES ('a@x', 's', '')"
wait_until 5 'grep -q "^start" "$log"' || fail "the row was not picked up"
took=$(( ($(awk '$1 == "start" { print $6; exit }' "$log") - t0) / 1000 ))
echo "picked up in ${took} ms"
assert_le "$took" 2600 "ms from the insert to the handler"
