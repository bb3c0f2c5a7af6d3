#!/usr/bin/env bash
# A schedule's slots with their runs (queue:): three daemons run a
# schedule, every: 1s, that feeds a queue with a run log, and work its
# rows; one daemon is killed with kill -9, another frozen (SIGSTOP) for
# 4 s and thawed, each perhaps inside a slot's transaction, and the
# server is killed (-9) and started again.  Every slot's row has exactly
# one "inserted" run, written in the slot's own transaction, under the
# row's key, at the slot's time and with the schedule's name; a slot
# rolled back left neither, and no slot is missing or twice.  `rowq
# schedule runs` then tells, for each slot, the row it inserted and what
# became of it: done, or failed for good (keys that are multiples of 4),
# after one try; the rows of a paused queue's slots are waiting; a slot
# inserted by hand says so.  The same runs are in the row's story (rowq
# show), with the slot's first, and the console's Schedules page shows
# the slots with links to their rows' pages; a schedule without queue:,
# or an unknown one, is a usage error.
# Runs its own server, which it kills.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
. "$TESTS_DIR/torture/dbctl.sh"
unset ROWQ_TEST_SOCKET
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE report (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    slot_unix BIGINT NOT NULL,
    status VARCHAR(8) NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0,
    KEY (status, id)
) ENGINE=InnoDB"
sql "CREATE TABLE other (slot_unix BIGINT NOT NULL) ENGINE=InnoDB"

# config NAME: daemon NAME's configuration.
config()
{
	cat >"$1.yaml" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: $ROWQ_TEST_TMP/$1.sock
schedules:
  tick:
    every: 1s
    queue: report
    insert: INSERT INTO report (slot_unix) VALUES (:slot_unix)
  plain:
    every: 1d
    insert: INSERT INTO other (slot_unix) VALUES (:slot_unix)
queues:
  report:
    workers: 2
    select: SELECT id, slot_unix FROM report WHERE status = 'waiting'
            ORDER BY id
    exec: [$HANDLERS/fake, fail-every, 4]
    done: UPDATE report SET status = 'done', attempts = attempts + 1
          WHERE id = :id
    failed: UPDATE report SET status = 'failed', attempts = attempts + 1
            WHERE id = :id
    runs: { keep: 1h }
    idle: 100ms
YAML
}

console_users "$ROWQ_TEST_TMP/console.users"
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
declare -A pid=()
for d in a b c; do
	config $d
	# The console on b's only.
	[ $d = a ] || sed -i "s|^queues:|console: { listen: \"127.0.0.1:$port\", users_file: $ROWQ_TEST_TMP/console.users }\nqueues:|" $d.yaml
	setsid "$ROWQ" -c $d.yaml run >$d.log 2>&1 &
	pid[$d]=$!
	track_pid "${pid[$d]}"
done
on_exit "[ \$? = 0 ] && [ -z \"${ROWQ_TEST_SHOW:-}\" ] || tail -n 20 a.log b.log c.log"
# A thawed daemon at the end, whatever happened.
on_exit 'kill -CONT -- -${pid[c]} 2>/dev/null'

count() { sql_value "SELECT COUNT(*) FROM report"; }
wait_until 15 '[ "$(count)" -ge 3 ]' || fail "no slot inserted"
sleep 3
kill -KILL -- "-${pid[a]}"
wait "${pid[a]}" 2>/dev/null || true
untrack_pid "${pid[a]}"
sleep 2
kill -STOP -- "-${pid[c]}"
sleep 4
kill -CONT -- "-${pid[c]}"
sleep 1
dbctl_kill9
sleep 1
dbctl_start
sleep 3
# The slots of the outage are inserted late, within the minute a slot
# is on time; then the rows are worked.
wait_until 20 '[ "$(sql_value "SELECT MAX(slot_unix) FROM report")" -ge "$(date +%s)" ]' ||
    fail "no slot inserted after the server's restart"
wait_until 15 '[ "$(sql_value "SELECT COUNT(*) FROM report
    WHERE status = '"'waiting'"'")" = 0 ]' || fail "rows left waiting"

# The console's Schedules page: tick's latest slots, each row a link to
# its page with its state; plain follows no row.
console_up
console_login v.jar victor
page=$(console_curl -b v.jar "$CONSOLE/schedules")
assert_match 'href="/schedules"' "$page" "the menu's Schedules"
assert_match '<h2 id="schedule-tick">tick</h2>' "$page" "the page: tick"
assert_match 'it names no queue' "$page" "the page: plain follows no row"
# The newest slot's row: a link to its page, by its key in hex.
link=$(grep -o 'href="/queue/report/row?key_hex=[0-9a-f]*">[0-9]*</a>' <<<"$page" | head -n 1)
key=${link##*\">}
key=${key%</a>}
hex=$(printf '%s' "$key" | od -An -tx1 | tr -d ' \n')
assert_eq "href=\"/queue/report/row?key_hex=$hex\">$key</a>" "$link" \
    "the page: the newest slot's row, linked"
assert_ge "$key" "$(($(sql_value "SELECT MAX(id) FROM report") - 3))" \
    "the page: the newest slot's row is among the last inserted"
# Of its 10 slots, the newest may still be waiting or running.
assert_ge "$(grep -o '<span class="tag live">done</span>\|<span class="tag gone">failed</span>' <<<"$page" | wc -l)" 9 \
    "the page: slots done or failed"
for d in b c; do
	kill -TERM "${pid[$d]}"
	wait "${pid[$d]}" || fail "daemon $d exited with $?"
	untrack_pid "${pid[$d]}"
done
n=$(count)
figure() { echo "figure: $1: $2"; }
figure "slots inserted" "$n"
assert_ge "$n" 14 "slots inserted"
first=$(sql_value "SELECT MIN(slot_unix) FROM report")
last=$(sql_value "SELECT MAX(slot_unix) FROM report")
assert_eq "$((last - first + 1))" "$n" "slots from the first to the last"

# One inserted run per slot's row, under its key, at its slot, and none
# without a row (a slot rolled back by the kill left neither).
assert_eq "$n" "$(sql_value "SELECT COUNT(*) FROM rowq_runs
    WHERE outcome = 'inserted'")" "inserted runs against the slots' rows"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM report r WHERE (SELECT COUNT(*)
    FROM rowq_runs u WHERE u.queue = 'report' AND u.outcome = 'inserted'
      AND u.row_key = CAST(r.id AS CHAR) AND u.attempt = 0
      AND u.reason = 'schedule' AND u.error = 'tick'
      AND TIMESTAMPDIFF(SECOND, '1970-01-01', u.started) = r.slot_unix) <> 1")" \
    "rows without exactly one inserted run of their slot"
assert_eq "$n" "$(sql_value "SELECT COUNT(DISTINCT slot_unix) FROM report")" \
    "slots inserted twice"
# Each row's tries: its attempts, one run each.
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM report r WHERE r.attempts <> (
    SELECT COUNT(*) FROM rowq_runs u WHERE u.queue = 'report'
      AND u.row_key = CAST(r.id AS CHAR) AND u.attempt > 0)")" \
    "rows whose tries are not their runs"

"$ROWQ" -c b.yaml schedule runs tick --limit 1000 --json >runs.json 2>runs.err ||
	fail "schedule runs --json: $(cat runs.err)"
sql "SELECT id, slot_unix, status FROM report ORDER BY id" >rows.tsv
python3 - runs.json rows.tsv "$n" <<'PY' || fail "schedule runs --json: $(head -c 2000 runs.json)"
import json, sys
doc = json.load(open(sys.argv[1]))
rows = {}
for line in open(sys.argv[2]):
    k, slot, status = line.split()
    rows[k] = (int(slot), status)
assert doc["schedule"] == "tick" and doc["queue"] == "report", doc
slots = doc["slots"]
assert len(slots) == int(sys.argv[3]), (len(slots), sys.argv[3])
# Newest first, one slot a second.
unix = [s["slot_unix"] for s in slots]
assert unix == sorted(unix, reverse=True), unix
for s in slots:
    slot, status = rows[s["key"]]
    assert s["slot_unix"] == slot, s
    assert s["late_ms"] >= 0, s
    want = "failed" if int(s["key"]) % 4 == 0 else "done"
    assert status == want, (s, status)
    assert s["state"] == want and s["outcome"] == want, s
    assert s["tries"] == 1 and s["first_try"].endswith("Z"), s
    assert [r["outcome"] for r in s["runs"]] == ["inserted", want], s
    assert s["slot_utc"] and s["inserted"].endswith("Z"), s
PY

# rowq schedules: the last slot's row and its state, beside the slots.
"$ROWQ" -c b.yaml schedules --json >schedules.json || fail "schedules --json"
read -r last_id last_status < <(sql "SELECT id, status FROM report ORDER BY id DESC LIMIT 1")
python3 - schedules.json "$last_id" "$last_status" <<'PY' || fail "schedules --json: $(cat schedules.json)"
import json, sys
s = {x["name"]: x for x in json.load(open(sys.argv[1]))["schedules"]}
assert s["tick"]["last_row"] == {"key": sys.argv[2], "state": sys.argv[3], "tries": 1}, s["tick"]
assert s["plain"]["last_row"] is None, s["plain"]
PY
"$ROWQ" -c b.yaml schedules >schedules.txt || fail "schedules"
assert_match "SKIPPED  LAST_ROW" "$(head -n 1 schedules.txt)" "schedules: the header"
assert_match "^tick .* $last_id $last_status\$" "$(grep '^tick ' schedules.txt)" "schedules: tick's last row"
assert_match "^plain .* -\$" "$(grep '^plain ' schedules.txt)" "schedules: plain's last row"

# The table: a row a slot, and what became of it.
"$ROWQ" -c b.yaml schedule runs tick >runs.txt || fail "schedule runs failed"
head -n 1 runs.txt | grep -q "^SLOT  *LATE  *KEY  *STATE  *TRIES  *FIRST_TRY  *OUTCOME  *DURATION" ||
	fail "schedule runs: header: $(head -n 1 runs.txt)"
assert_eq 11 "$(wc -l <runs.txt)" "schedule runs: lines (the header and 10 slots)"
grep -Eq " (done|failed) +1 " runs.txt || fail "schedule runs: $(cat runs.txt)"

# The row's story has the slot's run first, and counts no try lost.
key=$(sql_value "SELECT MAX(id) FROM report WHERE status = 'done'")
"$ROWQ" -c b.yaml show report "$key" --json >show.json ||
	fail "rowq show $key failed"
python3 - show.json <<'PY' || fail "rowq show: $(cat show.json)"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["state"] == "done", s
assert [r["outcome"] for r in s["runs"]] == ["inserted", "done"], s
assert s.get("tries_without_run", 0) == 0, s
PY
"$ROWQ" -c b.yaml runs report --outcome inserted --json |
    python3 -c 'import json,sys; r = json.load(sys.stdin); assert len(r) == int(sys.argv[1]), len(r)' "$n" ||
	fail "runs --outcome inserted"

# The queue paused, a daemon again: its slots' rows wait, and say so.
"$ROWQ" -c b.yaml pause report >/dev/null || fail "pause failed"
# shellcheck disable=SC2034 # read by wait_until's eval
before=$(count)
rowq_start b.yaml b2.log
pid[b]=$ROWQ_PID
wait_until 15 '[ "$(count)" -ge $((before + 2)) ]' || fail "no slot while paused"
"$ROWQ" -c b.yaml schedule runs tick --limit 2 --json >paused.json ||
	fail "schedule runs while paused"
kill -TERM "${pid[b]}"
wait "${pid[b]}" || fail "daemon b exited with $?"
untrack_pid "${pid[b]}"
python3 - paused.json <<'PY' || fail "paused: $(cat paused.json)"
import json, sys
s = json.load(open(sys.argv[1]))["slots"]
assert len(s) == 2, s
for x in s:
    assert x["state"] == "waiting" and x["tries"] == 0, x
    assert x["outcome"] is None and x["first_try"] is None, x
    assert [r["outcome"] for r in x["runs"]] == ["inserted"], x
PY

# A slot by hand, with no run log yet: the log is made, the slot's run
# says by_hand, and the row's story has it.
sql "DROP TABLE rowq_runs"
"$ROWQ" -c b.yaml schedule run tick 2>hand.err || fail "schedule run: $(cat hand.err)"
hand=$(sql_value "SELECT MAX(id) FROM report")
assert_match "manual slot .* inserted \(rowq schedule run\); the last slot stays .*, row $hand of queue report" \
    "$(cat hand.err)" "schedule run: its log line"
"$ROWQ" -c b.yaml show report "$hand" --json >hand.json || fail "rowq show $hand"
python3 - hand.json <<'PY' || fail "by hand: $(cat hand.json)"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["state"] == "waiting", s
r = s["runs"]
assert len(r) == 1 and r[0]["outcome"] == "inserted" and r[0]["reason"] == "by_hand", r
PY

expect_exit 2 "schedules.plain has no queue: key" -c b.yaml schedule runs plain
expect_exit 2 "no schedule named nosuch" -c b.yaml schedule runs nosuch
expect_exit 2 "takes a number from 1 to 1000" -c b.yaml schedule runs tick --limit 0
