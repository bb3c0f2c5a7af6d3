#!/usr/bin/env bash
# The commands of schedules: `rowq schedules [--json]` before and while a
# daemon runs; `rowq schedule run NAME` inserts one slot now, logged as
# manual, and leaves the last slot; `rowq pause --schedule NAME` stops
# every daemon's inserts of it within a slot, the slots meanwhile
# skipped and counted, and `rowq resume --schedule` starts them again
# with no burst; `rowq status` and the metrics show the last slot and the
# skipped ones; a reload hands the schedules to the new generation, no
# slot twice.  Bad input: an unknown schedule, a missing name, a stray
# argument.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/wake.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE job (
    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    kind VARCHAR(64) NOT NULL,
    slot DATETIME NOT NULL,
    slot_local DATETIME NOT NULL
) ENGINE=InnoDB"
port=$(free_port)
cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: $ROWQ_TEST_TMP/rowq.sock
metrics: 127.0.0.1:$port
schedules:
  nightly-report:
    cron: "0 3 * * *"
    timezone: Europe/Paris
    catch_up: 6h
    insert: INSERT INTO job (kind, slot, slot_local)
            VALUES (:schedule, :slot, :slot_local)
  tick:
    every: 1s
    insert: INSERT INTO job (kind, slot, slot_local)
            VALUES (:schedule, :slot, :slot_local)
YAML

# ---- before any daemon: no schedule table yet ----
"$ROWQ" -c rowq.yaml schedules >out 2>&1 || fail "schedules: $(cat out)"
assert_match 'SCHEDULE +EXPRESSION +TIMEZONE +LAST_SLOT +NEXT_SLOT +CATCH_UP +SKIPPED' "$(cat out)"
assert_match 'nightly-report +cron 0 3 \* \* \* +Europe/Paris +- +[0-9]{4}-[0-9]{2}-[0-9]{2} 03:00 +6h +0' "$(cat out)"
assert_match 'tick +every 1s +UTC +- ' "$(cat out)"
"$ROWQ" -c rowq.yaml schedules --json >out 2>&1 || fail "schedules --json: $(cat out)"
python3 - out <<'PY' || fail "schedules --json: $(cat out)"
import json, sys
d = {s["name"]: s for s in json.load(open(sys.argv[1]))["schedules"]}
n = d["nightly-report"]
assert n["cron"] == "0 3 * * *" and n["timezone"] == "Europe/Paris", n
assert n["catch_up_seconds"] == 21600 and n["last_slot"] is None, n
assert n["next_slot"].endswith(" 03:00:00") and n["next_slot_unix"] > 0, n
assert n["paused"] is None and n["skipped"] == 0, n
assert d["tick"]["every"] == "1s", d["tick"]
PY

# ---- bad input ----
expect() # STATUS PATTERN ARGS...
{
	local want=$1 pattern=$2 rc=0
	shift 2
	"$ROWQ" -c rowq.yaml "$@" >out 2>&1 || rc=$?
	assert_eq "$want" "$rc" "exit status of rowq $*"
	assert_match "$pattern" "$(cat out)" "rowq $*"
}
expect 2 'no schedule named nosuch' schedule run nosuch
expect 2 'schedule: run NAME' schedule
expect 2 'schedule: run NAME' schedule go tick
expect 2 'unexpected argument --bogus' schedules --bogus
expect 2 'no schedule named nosuch' pause --schedule nosuch
expect 2 'no schedule named nosuch' resume --schedule nosuch
expect 2 'unexpected argument extra' pause --schedule tick extra
expect 0 'schedule tick: not paused' resume --schedule tick

# ---- a daemon runs them ----
"$ROWQ" -c rowq.yaml run >run.log 2>&1 & P=$!
track_pid $P
on_exit '[ $? = 0 ] || tail -n 30 run.log'
ticks() { sql_value "SELECT COUNT(*) FROM job WHERE kind = 'tick'"; }
wait_until 10 '[ "$(ticks)" -ge 3 ]' || fail "no tick inserted"

# schedule run: one row now, logged as manual; the last slot stays.
before=$(date -u +%s)
expect 0 'nightly-report: manual slot [-0-9]+ [0-9:]+ Europe/Paris inserted \(rowq schedule run\); the last slot stays none yet' \
    schedule run nightly-report
read -r slot local < <(sql "SELECT UNIX_TIMESTAMP(CONVERT_TZ(slot, '+00:00', @@session.time_zone)),
    TIMESTAMPDIFF(SECOND, slot, slot_local) FROM job WHERE kind = 'nightly-report'")
assert_ge "$slot" "$before" "the manual slot's :slot"
assert_le "$slot" "$((before + 2))" "the manual slot's :slot"
assert_match '^(3600|7200)$' "$local" "the manual slot's :slot_local, in Paris"
assert_eq "NULL" "$(sql_value "SELECT COALESCE(last_inserted, 'NULL') FROM rowq_schedule WHERE name = 'nightly-report'")" \
    "nightly-report's last slot after a manual run"

# pause --schedule: no tick inserted a slot later; the slots counted.
expect 0 'schedule tick: paused; no daemon inserts its slots' \
    pause --schedule tick --reason "deploy 7"
paused_at=$(date +%s)
expect 0 'schedule tick: already paused' pause --schedule tick
sleep 2
n=$(ticks)
wait_until 5 '[ "$(sql_value "SELECT skipped FROM rowq_schedule WHERE name = '"'tick'"'")" -ge 3 ]' ||
    fail "no slot skipped while paused"
assert_eq "$n" "$(ticks)" "ticks inserted while paused"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM job WHERE kind = 'tick'
    AND slot > FROM_UNIXTIME($paused_at + 1)")" "ticks after the pause"
assert_match 'tick: slot [-0-9 :]+ UTC skipped: the schedule is paused' "$(cat run.log)"
"$ROWQ" -c rowq.yaml schedules >out 2>&1 || fail "schedules: $(cat out)"
assert_match 'tick +every 1s +UTC +[-0-9]+ [0-9:]+ +PAUSED' "$(cat out)"
assert_match 'schedule tick PAUSED since .*: deploy 7' "$(cat out)"
"$ROWQ" -c rowq.yaml status >out 2>&1 || fail "status: $(cat out)"
[ -z "${ROWQ_TEST_SHOW:-}" ] || cat out
assert_match 'tick +every 1s +UTC .* PAUSED' "$(cat out)"
assert_match 'nightly-report +cron 0 3 \* \* \* +Europe/Paris' "$(cat out)"
"$ROWQ" -c rowq.yaml status --json >out 2>&1 || fail "status --json: $(cat out)"
python3 - out <<'PY' || fail "status --json: $(cat out)"
import json, sys
d = {s["name"]: s for s in json.load(open(sys.argv[1]))["schedules"]}
assert d["tick"]["paused"]["reason"] == "deploy 7", d["tick"]
assert d["tick"]["skipped"] >= 3 and d["tick"]["last_slot_unix"] > 0, d
PY
metrics=$(python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode())' "$port")
assert_match 'rowq_schedule_last_slot_timestamp\{schedule="tick"\} [0-9]{10}' "$metrics"
assert_match 'rowq_schedule_skipped_total\{schedule="tick"\} [1-9]' "$metrics"
assert_match 'rowq_schedule_skipped_total\{schedule="nightly-report"\} 0' "$metrics"
assert_match 'rowq_schedule_paused\{schedule="tick"\} 1' "$metrics"
assert_match 'rowq_schedule_inserted_total\{schedule="tick"\} [1-9]' "$metrics"

# resume: the next slots come, and not the ones skipped.
resumed_at=$(date +%s)
expect 0 'schedule tick: resumed' resume --schedule tick
wait_until 5 '[ "$(ticks)" -gt "$n" ]' || fail "no tick after resume"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM job WHERE kind = 'tick'
    AND slot > FROM_UNIXTIME($paused_at + 1) AND slot < FROM_UNIXTIME($resumed_at - 1)")" \
    "ticks of the paused time inserted after resume"

# A reload: the new generation's scheduler takes over, no slot twice.
sed -i 's/VALUES (:schedule, :slot, :slot_local)$/VALUES (CONCAT(:schedule, "-2"), :slot, :slot_local)/' rowq.yaml
kill -HUP $P
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM job WHERE kind = '"'tick-2'"'")" -ge 2 ]' ||
    fail "no slot inserted by the reloaded schedule"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM (SELECT slot FROM job
    WHERE kind IN ('tick', 'tick-2') GROUP BY slot HAVING COUNT(*) > 1) AS t")" \
    "slots inserted twice across the reload"
kill -TERM $P
wait $P || fail "the daemon exited with $?"
untrack_pid $P
