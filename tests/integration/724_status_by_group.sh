#!/usr/bin/env bash
# `rowq status QUEUE --by`: a queue's rows per group_by: value, on two
# daemons of two workers each, both writing their row in the daemons
# table (daemons_table:), which was made before its running column: the
# first daemon to miss the column adds it.  Five rows fail for good (exit
# 65), the next four hang in their handler (one per worker), the rest wait
# behind them; 25 more groups of one row each make more groups than the
# limit.  Asserted exactly, from both daemons' status sockets: WAIT (less
# the rows either daemon runs), RUN (the workers of the daemon that
# answers, and the other daemon's, as of its last heartbeat), FAILED
# (failed_select) and the oldest age, in the table and in --json; the
# default limit of 20 and --limit 3, with the groups left out said; and
# that the read takes no row lock: a FOR UPDATE NOWAIT on a waiting row
# succeeds while a slow `status --by` runs, and its session holds no row;
# that one finds no daemon on its socket and counts both daemons' rows
# from the daemons table.  A daemon that stops writes a last row that says
# nothing runs there, and the other's RUN leaves its rows out at once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
sql "CREATE TABLE item (
    id INT NOT NULL PRIMARY KEY,
    batch VARCHAR(40) NULL,
    mode VARCHAR(10) NOT NULL,
    arg VARCHAR(10) NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    created DATETIME NOT NULL,
    last_error TEXT NULL,
    INDEX (status, id)
) ENGINE=InnoDB"
# id batch mode: 1-5 fail, 6-9 hang (one per worker), the rest wait.
rows="1 b1 exit
2 b1 exit
3 b2 exit
4 b3 exit
5 b3 exit
6 b1 sleep
7 b2 sleep
8 b2 sleep
9 b4 sleep
10 b1 sleep
11 b3 sleep
12 b1 sleep
13 b2 sleep
14 b3 sleep
15 b5 sleep
16 NULL sleep
17 b3 sleep
18 b5 sleep
19 b1 sleep
20 b3 sleep"
while read -r id batch mode; do
	[ "$batch" = NULL ] && b=NULL || b="'$batch'"
	[ "$mode" = exit ] && arg=65 || arg=120000
	# Row N came 1000 - N minutes ago: the lowest id of a group is its oldest.
	sql "INSERT INTO item (id, batch, mode, arg, created) VALUES ($id, $b,
	    '$mode', '$arg', NOW() - INTERVAL (1000 - $id) MINUTE)"
done <<<"$rows"
sql "INSERT INTO item (id, batch, mode, arg, created)
    SELECT 20 + seq, CONCAT('x', LPAD(seq, 2, '0')), 'sleep', '120000',
    NOW() - INTERVAL (1000 - 20 - seq) MINUTE FROM $(seq_rows 25)"

config()
{
	cat >"$1" <<YAML
database:
  socket: $ROWQ_TEST_SOCKET
  user: root
  name: $ROWQ_TEST_DB
stop_timeout: 2s
status_socket: $ROWQ_TEST_TMP/$2.sock
daemons_table: rowq_daemons
queues:
  item:
    workers: 2
    select: |
      SELECT id, batch, mode, arg, created FROM item
      WHERE status = 'waiting'${3:-}
      ORDER BY id
    group_by: batch
    age: created
    exec: [$HANDLERS/fake, "{mode}", "{arg}", $ROWQ_TEST_TMP/handled]
    timeout: 5m
    done: UPDATE item SET status = 'done' WHERE id = :id
    failed: UPDATE item SET status = 'failed', last_error = :error WHERE id = :id
    failed_select: SELECT id, batch, last_error FROM item
      WHERE status = 'failed' ORDER BY id DESC
    idle: 200ms
YAML
}
config a.yaml a
config b.yaml b
"$ROWQ" -c a.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"

# group_by: naming no column of the select: check says where.
config bad.yaml bad
sed -i 's/^    group_by: batch$/    group_by: bach/' bad.yaml
expect_exit 78 "bad.yaml:[0-9]+: queues.item.group_by: bach is not a column of the select" \
    -c bad.yaml check
# A column of the select that failed_select lacks: check says so too.
config bad2.yaml bad2
sed -i 's/SELECT id, batch, last_error FROM item/SELECT id, last_error FROM item/' bad2.yaml
expect_exit 78 "bad2.yaml:[0-9]+: queues.item.group_by: batch cannot group the select and failed_select by it" \
    -c bad2.yaml check

# The daemons table as rowq made it before the running column.
sql "CREATE TABLE rowq_daemons (
  host VARCHAR(255) NOT NULL,
  pid INT UNSIGNED NOT NULL,
  version VARCHAR(32) NOT NULL,
  started DATETIME NOT NULL,
  busy INT UNSIGNED NOT NULL,
  workers INT UNSIGNED NOT NULL,
  console VARCHAR(255) NOT NULL DEFAULT '',
  seen DATETIME NOT NULL,
  PRIMARY KEY (host, pid)
) ENGINE=InnoDB"

declare -A pid
for d in a b; do
	rowq_start $d.yaml $d.log
	pid[$d]=$ROWQ_PID
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM item WHERE status = '"'failed'"'")" = 5 ] &&
    [ "$(grep -c " 1$" handled 2>/dev/null)" -ge 9 ]' ||
	fail "the rows did not fail and start: $(sql_value "SELECT GROUP_CONCAT(id, status) FROM item WHERE id < 21")"
wait_until 10 '[ "$("$ROWQ" -c a.yaml status --json item | grep -o "\"busy\":[0-9]*" | head -1)" = "\"busy\":2" ] &&
    [ "$("$ROWQ" -c b.yaml status --json item | grep -o "\"busy\":[0-9]*" | head -1)" = "\"busy\":2" ]' ||
	fail "the four workers are not busy"
assert_eq "6 7 8 9" "$(sed 's/ .*//' handled | sort -n | sed -n '6,9p' | xargs)" "the rows the handlers hang on"
assert_eq 1 "$(sql_value "SELECT COUNT(*) FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'rowq_daemons'
    AND COLUMN_NAME = 'running'")" "the running column, added"
grep -q "daemons table rowq_daemons: added the column running" a.log b.log ||
	fail "no daemon said it added the column running"
# Each daemon's next heartbeat names its two busy workers' groups.
wait_until 25 '[ "$(sql_value "SELECT COUNT(*) FROM rowq_daemons
    WHERE busy = 2 AND running LIKE '"'%cut%'"'")" = 2 ]' ||
	fail "the daemons' rows never named their running groups: $(sql "SELECT pid, busy, running FROM rowq_daemons")"
sql "SELECT running FROM rowq_daemons" >running.out
python3 - running.out <<'PY' || fail "the running column: $(cat running.out)"
import json, sys
seen = {}
for line in open(sys.argv[1]):
    for e in json.loads(line):
        assert sorted(e) == ["cut", "g", "n", "q"] and e["q"] == "item", e
        assert e["cut"] == 0 and e["n"] > 0, e
        seen[e["g"]] = seen.get(e["g"], 0) + e["n"]
assert seen == {"b1": 1, "b2": 2, "b4": 1}, seen
PY

for d in a b; do
	"$ROWQ" -c $d.yaml status item --by --limit 1000 --json >$d.json 2>$d.err ||
		fail "status --by --json ($d): $(cat $d.err)"
done
python3 - a.json b.json <<'PY' || fail "status --by --json: $(cat a.json b.json)"
import json, sys
wait = {"b1": 3, "b2": 1, "b3": 4, "b4": 0, "b5": 2, None: 1}
wait.update({"x%02d" % i: 1 for i in range(1, 26)})
run = {"b1": 1, "b2": 2, "b4": 1}
failed = {"b1": 2, "b2": 1, "b3": 2}
first = {"b1": 6, "b2": 7, "b3": 11, "b4": 9, "b5": 15, None: 16}
first.update({"x%02d" % i: 20 + i for i in range(1, 26)})
views = [json.load(open(f)) for f in sys.argv[1:]]
for v in views:
    assert v["queue"] == "item" and v["group_by"] == "batch", v
    assert v["groups_total"] == 31 and v["groups_left_out"] == 0, v
    assert len(v["groups"]) == 31, v
    assert not v["waiting_capped"] and not v["failed_capped"], v
for v in views:
    assert v["run_daemon_answered"] is True, v
    o = v["run_other_daemons"]
    assert o["counted"] == 1 and o["without_groups"] == 0, o
    assert 0 <= o["oldest_heartbeat_seconds"] <= 30, o
    # RUN: both daemons' running rows; WAIT: the rest of the select's.
    for g in v["groups"]:
        n = g["group"]
        assert g["run"] == run.get(n, 0), (g, v)
        assert g["wait"] == wait[n], (g, v)
        assert g["failed"] == failed.get(n, 0), g
        age = (1000 - first[n]) * 60
        assert age - 5 <= g["oldest_age_seconds"] <= age + 120, (g, age)
    # Running groups first, then the most rows.
    names = [g["group"] for g in v["groups"]]
    assert names[:3] == ["b1", "b2", "b4"], names
    totals = [g["wait"] + g["run"] + g["failed"] for g in v["groups"][3:]]
    assert totals == sorted(totals, reverse=True), totals
print("ok")
PY

# The table: the default limit, 20 of 31 groups, and the note.
"$ROWQ" -c a.yaml status item --by >table.out 2>&1 || fail "status --by: $(cat table.out)"
assert_match "item grouped by batch: 20 of 31 groups" "$(cat table.out)" "the table's heading"
assert_eq 20 "$(sed -n '3,22p' table.out | grep -c .)" "rows of the table"
assert_match "\(11 groups left out: --limit N shows more\)" "$(cat table.out)" "the note of groups left out"
b3=$(grep '^b3 ' table.out) || fail "no b3 in: $(cat table.out)"
assert_match "^b3 +4 +0 +2 +16h" "$b3" "b3's line"
assert_match "^b2 +1 +2 +1 +16h" "$(grep '^b2 ' table.out)" "b2's line: a row running at each daemon"
assert_match "\(RUN: this daemon's and 1 other daemon's workers, as of its last heartbeat, [0-9]+s ago at most\)" \
    "$(cat table.out)" "the note of the other daemon's figures"
grep -q '^NULL ' table.out || fail "no NULL group in: $(cat table.out)"

# --limit 3: three groups, the running ones of both daemons first.
"$ROWQ" -c b.yaml status item --by --limit 3 --json >lim.json 2>&1 || fail "status --limit 3: $(cat lim.json)"
python3 - lim.json <<'PY' || fail "status --by --limit 3: $(cat lim.json)"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["limit"] == 3 and len(v["groups"]) == 3, v
assert v["groups_total"] == 31 and v["groups_left_out"] == 28, v
got = [(g["group"], g["wait"], g["run"], g["failed"]) for g in v["groups"]]
assert got == [("b1", 3, 1, 2), ("b2", 1, 2, 1), ("b4", 0, 1, 0)], got
PY
expect_exit 2 "--limit: not a number from 1 to 1000: 0" -c a.yaml status item --by --limit 0
expect_exit 2 "--by takes one queue" -c a.yaml status --by
expect_exit 2 "--limit goes with --by" -c a.yaml status item --limit 3

# No row lock: a select that sleeps a quarter of a second per row.
config slow.yaml slow "
        AND SLEEP(0.25) = 0"
"$ROWQ" -c slow.yaml status item --by --json >slow.out 2>slow.err &
st=$!
track_pid "$st"
running='[ "$(sql_value "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '"'%SLEEP(0.25)%'"' AND INFO NOT LIKE '"'%PROCESSLIST%'"'")" -ge 1 ]'
wait_until 10 "$running" || fail "status --by never ran its select"
sleep 1
eval "$running" || fail "status --by's select ended too soon for the test"
sql "SELECT id FROM item FORCE INDEX (PRIMARY) WHERE id = 10 FOR UPDATE NOWAIT" >nowait.out 2>&1 ||
	fail "a waiting row is locked while status --by runs: $(cat nowait.out)"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM information_schema.INNODB_TRX t
    JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
    WHERE t.trx_rows_locked > 0 AND p.INFO LIKE '%SLEEP(0.25)%'
    AND p.INFO NOT LIKE '%PROCESSLIST%'")" "status --by's session holding rows"
wait_until 30 '! kill -0 "$st" 2>/dev/null' || fail "status --by did not end"
wait "$st" || fail "status --by (slow): $(cat slow.err)"
untrack_pid "$st"
python3 - slow.out <<'PY' || fail "status --by (slow): $(cat slow.out)"
import json, sys
v = json.load(open(sys.argv[1]))
# No daemon on this socket: both daemons' rows, from the daemons table.
assert v["groups_total"] == 31, v
assert v["run_daemon_answered"] is False, v
assert v["run_other_daemons"]["counted"] == 2, v
g = {x["group"]: x for x in v["groups"]}
assert g["b2"]["wait"] == 1 and g["b2"]["run"] == 2 and g["b2"]["failed"] == 1, g["b2"]
PY
# A daemon that stops says so in its row, as its console's last act: the
# other's RUN leaves its rows out at once, not once its row is 30 s old.
kill_wait 10 "${pid[b]}"
untrack_pid "${pid[b]}"
assert_eq "0 []" "$(sql_value "SELECT CONCAT_WS(' ', busy, running) FROM rowq_daemons
    WHERE pid = ${pid[b]}")" "b's last row: nothing runs there"
"$ROWQ" -c a.yaml status item --by --limit 1000 --json >after.json 2>&1 ||
	fail "status --by after b stopped: $(cat after.json)"
python3 - after.json <<'PY' || fail "status --by after b stopped: $(cat after.json)"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["run_other_daemons"]["counted"] == 1, v
assert sum(g["run"] for g in v["groups"]) == 2, v   # a's two workers
PY
kill_wait 10 "${pid[a]}"
untrack_pid "${pid[a]}"
