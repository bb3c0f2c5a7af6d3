#!/usr/bin/env bash
# `rowq status QUEUE --by`: a queue's rows per group_by: value, on two
# daemons of two workers each.  Five rows fail for good (exit 65), the
# next four hang in their handler (one per worker), the rest wait behind
# them; 25 more groups of one row each make more groups than the limit.
# Asserted exactly, from both daemons' status sockets: WAIT, RUN (the
# workers of the daemon that answers; the other daemon's rows still match
# the select, so they count as waiting there), FAILED (failed_select) and
# the oldest age, in the table and in --json; the default limit of 20 and
# --limit 3, with the groups left out said; and that the read takes no
# row lock: a FOR UPDATE NOWAIT on a waiting row succeeds while a slow
# `status --by` runs, and its session holds no row.
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
ran = [{g["group"]: g["run"] for g in v["groups"]} for v in views]
for g in wait:
    # Each running row is one daemon's: RUN there, WAIT at the other.
    assert ran[0][g] + ran[1][g] == run.get(g, 0), (g, ran)
for k, v in enumerate(views):
    other = ran[1 - k]
    for g in v["groups"]:
        n = g["group"]
        assert g["wait"] == wait[n] + other[n], (k, g)
        assert g["failed"] == failed.get(n, 0), (k, g)
        age = (1000 - first[n]) * 60
        assert age - 5 <= g["oldest_age_seconds"] <= age + 120, (k, g, age)
    # Running groups first, then the most rows.
    names = [g["group"] for g in v["groups"]]
    running = [n for n in names if ran[k][n] > 0]
    assert names[:len(running)] == running, names
    totals = [g["wait"] + g["run"] + g["failed"] for g in v["groups"][len(running):]]
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
grep -q '^NULL ' table.out || fail "no NULL group in: $(cat table.out)"

# --limit 3: three groups, the running ones of that daemon first.
"$ROWQ" -c b.yaml status item --by --limit 3 --json >lim.json 2>&1 || fail "status --limit 3: $(cat lim.json)"
python3 - lim.json <<'PY' || fail "status --by --limit 3: $(cat lim.json)"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["limit"] == 3 and len(v["groups"]) == 3, v
assert v["groups_total"] == 31 and v["groups_left_out"] == 28, v
assert all(g["run"] > 0 for g in v["groups"][:2]) or sum(g["run"] for g in v["groups"]) == 2, v
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
# No daemon on this socket: RUN unknown, every hung row waits.
assert v["groups_total"] == 31, v
g = {x["group"]: x for x in v["groups"]}
assert g["b2"]["wait"] == 3 and g["b2"]["run"] is None and g["b2"]["failed"] == 1, g["b2"]
PY
for d in a b; do
	kill_wait 10 "${pid[$d]}"
	untrack_pid "${pid[$d]}"
done
