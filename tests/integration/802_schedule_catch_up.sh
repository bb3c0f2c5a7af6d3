#!/usr/bin/env bash
# catch_up: with every daemon stopped for 10 s, the one started again
# inserts each missed slot once, in order.  Slots older than catch_up
# (and the minute a slot is on time) are skipped and logged as such,
# once each; those within it are inserted late, oldest first.  A
# schedule seen for the first time inserts nothing from before.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/schedule.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE tick (
    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    schedule VARCHAR(64) NOT NULL,
    slot_unix BIGINT NOT NULL
) ENGINE=InnoDB"
schedule_table

cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
schedules:
  tick:
    every: 1s
    catch_up: 1m
    insert: INSERT INTO tick (schedule, slot_unix) VALUES (:schedule, :slot_unix)
  old:
    every: 10s
    catch_up: 1m
    insert: INSERT INTO tick (schedule, slot_unix) VALUES (:schedule, :slot_unix)
  big:
    every: 10s
    catch_up: 10m
    insert: INSERT INTO tick (schedule, slot_unix) VALUES (:schedule, :slot_unix)
YAML

# in_order NAME: NAME's slots once each, consecutive, in the order of
# their rows: prints how many.
in_order()
{
	sql "SELECT slot_unix FROM tick WHERE schedule = '$1' ORDER BY id" |
	    awk -v step="$2" 'NR > 1 && $1 != prev + step {
		print "slot " $1 " after " prev; bad = 1 }
	    { prev = $1; n++ } END { if (bad) exit 1; print n }'
}

# ---- all daemons stopped for 10 s ----
started=$(date +%s)
"$ROWQ" -c rowq.yaml run >a.log 2>&1 & A=$!
track_pid $A
on_exit "[ \$? = 0 ] && [ -z \"${ROWQ_TEST_SHOW:-}\" ] || tail -n 40 a.log b.log"
ticks() { sql_value "SELECT COUNT(*) FROM tick WHERE schedule = 'tick'"; }
wait_until 10 '[ "$(ticks)" -ge 3 ]' || fail "no slot inserted"
assert_ge "$(sql_value "SELECT MIN(slot_unix) FROM tick")" "$started" \
    "the first slot of a schedule seen for the first time"
kill -TERM $A
wait $A || fail "the daemon exited with $?"
untrack_pid $A
stopped=$(sql_value "SELECT MAX(slot_unix) FROM tick WHERE schedule = 'tick'")
sleep 10

# Two schedules 5 minutes behind: one skips what is older than a
# minute, the other has 10 minutes to catch up.
# The first daemon may have inserted a slot of theirs, if its 3 s
# crossed a multiple of 10 s: gone with the clock set back.
behind=$(( ($(date +%s) - 300) / 10 * 10 ))
sql "UPDATE rowq_schedule SET last_slot = $behind WHERE name IN ('old', 'big')"
sql "DELETE FROM tick WHERE schedule IN ('old', 'big')"
"$ROWQ" -c rowq.yaml run >b.log 2>&1 & B=$!
track_pid $B
restarted=$(date +%s)
wait_until 10 '[ "$(sql_value "SELECT MAX(slot_unix) FROM tick WHERE schedule = '"'tick'"'")" -ge $((restarted + 1)) ]' ||
    fail "no slot after the restart"
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM tick WHERE schedule = '"'big'"'")" -ge 30 ]' ||
    fail "big did not catch up"
kill -TERM $B
wait $B || fail "the daemon exited with $?"
untrack_pid $B

# tick: each missed slot once, in order, none missing.
n=$(in_order tick 1) || fail "tick's slots: $n"
missed=$(sql_value "SELECT COUNT(*) FROM tick WHERE schedule = 'tick'
    AND slot_unix > $stopped AND slot_unix <= $restarted")
echo "figure: slots missed while no daemon ran, inserted after: $missed of $n"
assert_ge "$missed" 10 "slots of the 10 s without a daemon"

# old: 5 minutes behind, catch_up 1m: the older slots skipped and logged.
n=$(in_order old 10) || fail "old's slots: $n"
read -r first skipped < <(sql "SELECT MIN(slot_unix),
    (SELECT skipped FROM rowq_schedule WHERE name = 'old') FROM tick
    WHERE schedule = 'old'")
assert_ge "$first" "$((restarted - 61))" "old: the first slot inserted"
assert_eq "$(( (first - behind) / 10 - 1 ))" "$skipped" \
    "old: slots skipped, as the schedule table counts them"
assert_ge "$skipped" 20 "old: slots skipped"
# A lateness of whole minutes is written "4m", others "3m50s".
logged=$(grep -c "old: slot .* UTC skipped: [0-9hms]* late, catch_up 1m" b.log || true)
assert_eq 10 "$logged" "old: skipped slots logged one by one"
assert_match "old: $((skipped - 10)) more slots skipped, the last [-0-9: ]+ UTC, catch_up 1m" \
    "$(cat b.log)" "old: the rest of the skipped slots"
first_skip=$(date -u -d @$((behind + 10)) '+%Y-%m-%d %H:%M:%S')
assert_match "old: slot $first_skip UTC skipped: [45]m[0-9]*s? late, catch_up 1m" \
    "$(cat b.log)" "the first skipped slot's line"

# big: 5 minutes behind, catch_up 10m: every slot inserted, in order.
n=$(in_order big 10) || fail "big's slots: $n"
assert_eq "$((behind + 10))" "$(sql_value "SELECT MIN(slot_unix) FROM tick WHERE schedule = 'big'")" \
    "big: the first slot"
assert_eq 0 "$(sql_value "SELECT skipped FROM rowq_schedule WHERE name = 'big'")" \
    "big: slots skipped"
assert_match "big: slot [-0-9: ]+ UTC inserted [45]m[0-9]*s? late, within catch_up 10m" \
    "$(cat b.log)" "big: a late slot's line"
