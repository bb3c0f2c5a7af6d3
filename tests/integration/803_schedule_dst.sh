#!/usr/bin/env bash
# DST in Europe/Paris and America/New_York, through the daemon: each
# zone's last spring-forward and fall-back before now, reached by
# catch_up from a last slot set the day before.  A local time that does
# not exist runs at the end of the gap (02:30 runs at 03:00), once; one
# that happens twice runs once, in its first pass; an hourly schedule has
# 23 slots on the short day and 24 on the long one, none in the repeated
# hour's second pass.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/schedule.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

# last_change ZONE KIND: "T DAY MONTH" of the zone's last spring-forward
# (KIND spring) or fall-back (fall) before now, T in seconds since 1970.
last_change()
{
	python3 - "$1" "$2" <<'PY'
import sys, time
from datetime import datetime, timezone
from zoneinfo import ZoneInfo
z, kind = ZoneInfo(sys.argv[1]), sys.argv[2]
off = lambda t: datetime.fromtimestamp(t, z).utcoffset()
t = int(time.time()) // 3600 * 3600
while t > time.time() - 400 * 86400:
    if off(t - 3600) != off(t) and (off(t) > off(t - 3600)) == (kind == "spring"):
        lo, hi = t - 3600, t
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if off(mid) == off(t) else (mid, hi)
        d = datetime.fromtimestamp(hi, z)
        print(hi, d.day, d.month)
        break
    t -= 3600
PY
}

sql "CREATE TABLE slot (
    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    schedule VARCHAR(64) NOT NULL,
    slot DATETIME NOT NULL,
    slot_unix BIGINT NOT NULL,
    slot_local DATETIME NOT NULL
) ENGINE=InnoDB"
schedule_table

insert="INSERT INTO slot (schedule, slot, slot_unix, slot_local) VALUES (:schedule, :slot, :slot_unix, :slot_local)"
{
	echo "database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }"
	echo "schedules:"
} >rowq.yaml
declare -A T=() DAY=()
# schedule NAME ZONE KIND CRON: CRON (%D %M: the day of the change, its
# month) in ZONE, its last slot the day before the change.
schedule()
{
	local name=$1 zone=$2 kind=$3 cron=$4 t d m
	read -r t d m < <(last_change "$zone" "$kind")
	[ -n "$t" ] || fail "no $kind change of $zone in the last 400 days"
	T[$name]=$t
	DAY[$name]=$(TZ=$zone date -d "@$t" +%F)
	cron=${cron//%D/$d}
	cron=${cron//%M/$m}
	cat >>rowq.yaml <<YAML
  $name:
    cron: "$cron"
    timezone: $zone
    catch_up: 400d
    insert: $insert
YAML
	sql "INSERT INTO rowq_schedule (name, last_slot) VALUES ('$name', $((t - 86400)))"
}
schedule paris-spring Europe/Paris spring "30 2 %D %M *"
schedule paris-fall Europe/Paris fall "30 2 %D %M *"
schedule paris-hourly Europe/Paris spring "0 * %D %M *"
schedule ny-spring America/New_York spring "30 2 %D %M *"
schedule ny-fall America/New_York fall "30 1 %D %M *"
schedule ny-hourly America/New_York fall "0 * %D %M *"

"$ROWQ" -c rowq.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
"$ROWQ" -c rowq.yaml run >run.log 2>&1 & P=$!
track_pid $P
on_exit '[ $? = 0 ] || tail -n 30 run.log'
rows() { sql_value "SELECT COUNT(*) FROM slot"; }
# All of them, and no more coming.
wait_until 20 'n=$(rows); sleep 0.5; [ "$n" -ge 51 ] && [ "$(rows)" = "$n" ]' ||
    fail "the slots were not inserted: $(rows) rows"
sleep 1
kill -TERM $P
wait $P || fail "the daemon exited with $?"
untrack_pid $P

# slots NAME: slot_unix and slot_local of NAME's rows of the day of its
# change (not those of the same date a year on), in order.
slots()
{
	sql "SELECT slot_unix, slot_local FROM slot WHERE schedule = '$1'
	    AND DATE(slot_local) = '${DAY[$1]}' ORDER BY id"
}

# Spring: 02:30 does not exist; it runs at the end of the gap, 03:00.
for z in paris ny; do
	t=${T[$z-spring]}
	read -r unix local < <(slots $z-spring | head -n 1)
	assert_eq "$t" "$unix" "$z-spring: the slot of 02:30 on ${DAY[$z-spring]}"
	assert_eq "${DAY[$z-spring]} 03:00:00" "$local" "$z-spring: its :slot_local"
done
for z in paris ny; do
	assert_eq 1 "$(slots $z-spring | wc -l)" "$z-spring: slots"
done
# Fall: 02:30 (Paris), 01:30 (New York) happen twice; each runs once,
# in the first pass, half an hour before the change.
for z in paris ny; do
	t=${T[$z-fall]}
	assert_eq 1 "$(slots $z-fall | wc -l)" "$z-fall: slots"
	assert_eq "$((t - 1800))" "$(slots $z-fall | cut -f1)" "$z-fall: the slot"
done
assert_eq "${DAY[paris-fall]} 02:30:00" "$(slots paris-fall | cut -f2)" "paris-fall: :slot_local"
assert_eq "${DAY[ny-fall]} 01:30:00" "$(slots ny-fall | cut -f2)" "ny-fall: :slot_local"
# Hourly: 23 slots on the short day, one at the change; 24 on the long
# day, none in the second pass of the repeated hour.
t=${T[paris-hourly]}
assert_eq 23 "$(slots paris-hourly | wc -l)" "paris-hourly: slots on ${DAY[paris-hourly]}"
assert_eq 1 "$(slots paris-hourly | awk -v t="$t" '$1 == t' | wc -l)" \
    "paris-hourly: slots at the change"
t=${T[ny-hourly]}
assert_eq 24 "$(slots ny-hourly | wc -l)" "ny-hourly: slots on ${DAY[ny-hourly]}"
assert_eq "$((t - 3600)) $((t + 3600))" \
    "$(slots ny-hourly | awk -v t="$t" '$1 >= t - 3600 && $1 <= t + 3600 { printf "%s%s", s, $1; s = " " }')" \
    "ny-hourly: the slots around the change (none at 01:00 EST)"
# :slot is the slot in UTC.
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM slot WHERE slot <> CONVERT_TZ(FROM_UNIXTIME(slot_unix), @@session.time_zone, '+00:00')")" \
    "rows whose :slot is not UTC"
assert_eq 0 "$(sql_value "SELECT SUM(skipped) FROM rowq_schedule")" "slots skipped"
