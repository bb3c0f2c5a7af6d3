#!/usr/bin/env bash
# Schedules across a fleet: three daemons run one schedule, every: 1s,
# into a table with no unique key, for 12 s; one is killed with kill -9
# midway and another frozen with SIGSTOP (its scheduler perhaps inside
# its transaction, holding the schedule's row).  Every slot of the run is
# inserted exactly once, none is missing, and more than one daemon
# inserted.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE tick (
    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    slot DATETIME NOT NULL,
    slot_unix BIGINT NOT NULL,
    host CHAR(1) NOT NULL,
    schedule VARCHAR(64) NOT NULL
) ENGINE=InnoDB"

# config NAME: daemon NAME's configuration: schedules only, no queue.
config()
{
	cat >"$1.yaml" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: $ROWQ_TEST_TMP/$1.sock
schedules:
  tick:
    every: 1s
    insert: INSERT INTO tick (slot, slot_unix, host, schedule)
            VALUES (:slot, :slot_unix, '$1', :schedule)
YAML
}

declare -A pid=()
for d in a b c; do
	config $d
	setsid "$ROWQ" -c $d.yaml run >$d.log 2>&1 &
	pid[$d]=$!
	track_pid "${pid[$d]}"
done
on_exit "[ \$? = 0 ] && [ -z \"${ROWQ_TEST_SHOW:-}\" ] || tail -n 20 a.log b.log c.log"
# A thawed daemon at the end, whatever happened.
on_exit 'kill -CONT -- -${pid[b]} 2>/dev/null'

count() { sql_value "SELECT COUNT(*) FROM tick"; }
wait_until 10 '[ "$(count)" -ge 2 ]' || fail "no slot inserted"
start=$(sql_value "SELECT MIN(slot_unix) FROM tick")

sleep 3
kill -KILL -- "-${pid[a]}"
wait "${pid[a]}" 2>/dev/null || true
untrack_pid "${pid[a]}"
sleep 2
kill -STOP -- "-${pid[b]}"
sleep 7
# shellcheck disable=SC2034 # read by wait_until's eval
end=$(date +%s)
wait_until 10 '[ "$(sql_value "SELECT MAX(slot_unix) FROM tick")" -ge "$end" ]' ||
    fail "daemon c did not insert the slot of the end of the run"
kill -TERM "${pid[c]}"
wait "${pid[c]}" || fail "daemon c exited with $?"
untrack_pid "${pid[c]}"
kill -CONT -- "-${pid[b]}"
kill -TERM "${pid[b]}"
wait "${pid[b]}" || fail "daemon b exited with $?"
untrack_pid "${pid[b]}"

read -r first last n distinct twice < <(sql "SELECT MIN(slot_unix),
    MAX(slot_unix), COUNT(*), COUNT(DISTINCT slot_unix),
    (SELECT COUNT(*) FROM (SELECT slot_unix FROM tick GROUP BY slot_unix
        HAVING COUNT(*) > 1) AS t) FROM tick")
by_host=$(sql "SELECT host, COUNT(*) FROM tick GROUP BY host" | tr '\t\n' '= ')
figure() { echo "figure: $1: $2"; }
figure "slots in the run" "$n ($first..$last, by daemon: $by_host)"
assert_eq "$first" "$start" "the first slot"
assert_eq 0 "$twice" "slots inserted more than once"
assert_eq "$((last - first + 1))" "$distinct" "slots missing between the first and the last"
assert_eq "$n" "$distinct" "rows per slot"
assert_ge "$n" 12 "slots in the run"
assert_ge "$(sql_value "SELECT COUNT(DISTINCT host) FROM tick")" 2 \
    "daemons that inserted"
# :slot is the slot's time in UTC, as a DATETIME.
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM tick
    WHERE slot <> CONVERT_TZ(FROM_UNIXTIME(slot_unix), @@session.time_zone, '+00:00')
       OR schedule <> 'tick'")" "rows whose :slot or :schedule is wrong"
