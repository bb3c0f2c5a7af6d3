#!/usr/bin/env bash
# status --by's DONE, from the run log: two daemons of two workers each,
# one at batch 1 (the held `done`'s run, EXECUTE rowq_run on MariaDB) and
# one at batch 5 (a batch's runs in one INSERT), on rows of six groups:
# a NULL one, one of 300 bytes (kept and compared by its first 255: its
# failed row shows it whole, with the DONE of its runs), one
# with a quote and a backslash, one in UTF-8; some done, some failed at
# once, some failed after a retry.  The run log is first made with its
# old DDL, without grp: the first worker adds the column.  Asserted
# exactly per group, in the table and in --json: DONE (retries and
# failures not counted, another queue's runs not counted, an old run
# without a group counted as the NULL group's), the groups with only
# done runs shown after the others, and none when --limit leaves no
# room; the console's group view and its API; a user without ALTER is
# told the table and the statement to run; the ALTER waits a few seconds
# only for a transaction left open on the table, and adds the column once
# it has ended.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
sql "CREATE TABLE item (
    id INT NOT NULL PRIMARY KEY,
    batch VARCHAR(400) NULL,
    mode VARCHAR(10) NOT NULL,
    arg VARCHAR(10) NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0,
    created DATETIME NOT NULL DEFAULT NOW(),
    last_error TEXT NULL,
    INDEX (status, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
# The run log as rowq made it before grp, with two runs from then.
old_ddl="(
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  queue VARCHAR(64) CHARACTER SET ascii NOT NULL,
  row_key VARBINARY(1024) NOT NULL,
  attempt INT NOT NULL,
  outcome VARCHAR(8) CHARACTER SET ascii NOT NULL,
  reason VARCHAR(32) CHARACTER SET ascii NOT NULL DEFAULT '',
  exit_status INT NULL,
  started DATETIME(6) NOT NULL,
  finished DATETIME(6) NOT NULL,
  duration_ms BIGINT NOT NULL,
  host VARBINARY(255) NOT NULL,
  worker INT NOT NULL,
  pid INT NOT NULL,
  error VARBINARY(512) NOT NULL,
  trace_id CHAR(32) CHARACTER SET ascii NULL,
  KEY by_key (queue, row_key(255), id),
  KEY by_time (queue, finished)
) ENGINE=InnoDB"
sql "CREATE TABLE rowq_runs $old_ddl"
for q in item other; do
	sql "INSERT INTO rowq_runs (queue, row_key, attempt, outcome, started,
	    finished, duration_ms, host, worker, pid, error) VALUES ('$q',
	    '999', 1, 'done', UTC_TIMESTAMP(6) - INTERVAL 1 HOUR,
	    UTC_TIMESTAMP(6) - INTERVAL 1 HOUR, 1, 'old', 1, 1, '')"
done

long=$(printf 'L%.0s' $(seq 300))
# Each group: its value as SQL, rows done (sleep 100ms), failed at once
# (exit 65), failed after a retry (exit 3, max_attempts 2).
groups="'g1'|30|0|0
'g2'|20|3|0
'g3'|0|0|4
NULL|10|0|0
'$long'|6|1|0
CONCAT('o', CHAR(39), 'k', CHAR(92))|5|1|0
_utf8mb4 X'636166C3A9'|4|0|1"
id=0
while IFS="|" read -r value ndone failed retried; do
	for mode in "sleep 100 $ndone" "exit 65 $failed" "exit 3 $retried"; do
		set -- $mode
		[ "$3" -gt 0 ] || continue
		sql "INSERT INTO item (id, batch, mode, arg)
		    SELECT $id + seq, $value, '$1', '$2' FROM $(seq_rows "$3")"
		id=$((id + $3))
	done
done <<<"$groups"

config()
{
	cat >"$1" <<YAML
database:
  socket: $ROWQ_TEST_SOCKET
  user: ${4:-root}
  name: $ROWQ_TEST_DB
stop_timeout: 2s
status_socket: $ROWQ_TEST_TMP/$2.sock
queues:
  item:
    workers: 2
    batch: $3
    select: |
      SELECT id, batch, mode, arg, attempts, created FROM item
      WHERE status = 'waiting'
      ORDER BY id
    group_by: batch
    age: created
    exec: [$HANDLERS/fake, "{mode}", "{arg}", $ROWQ_TEST_TMP/handled]
    timeout: 1m
    done: UPDATE item SET status = 'done', attempts = attempts + 1 WHERE id = :id
    retry:
      max_attempts: 2
      attempts_column: attempts
      backoff: fixed
      delay: 0s
      jitter: false
      update: UPDATE item SET attempts = attempts + 1 WHERE id = :id
    failed: UPDATE item SET status = 'failed', attempts = attempts + 1,
      last_error = :error WHERE id = :id
    failed_select: SELECT id, batch, last_error FROM item
      WHERE status = 'failed' ORDER BY id DESC
    runs: {${5:-}}
    idle: 200ms
YAML
}
config a.yaml a 1
config b.yaml b 5
"$ROWQ" -c a.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"

declare -A pid
for d in a b; do
	rowq_start $d.yaml $d.log
	pid[$d]=$ROWQ_PID
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
wait_until 10 '[ "$(children_of "${pid[a]}" | wc -l)" -ge 2 ] &&
    [ "$(children_of "${pid[b]}" | wc -l)" -ge 2 ]' || fail "the workers did not start"
for d in a b; do
	children_of "${pid[$d]}" >workers.$d
done
wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM item WHERE status = '"'waiting'"'")" = 0 ]' ||
	fail "the rows were not all handled: $(sql_value "SELECT GROUP_CONCAT(id, status) FROM item WHERE status = 'waiting'")"
sleep 0.5
assert_eq 1 "$(sql_value "SELECT COUNT(*) FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'rowq_runs' AND COLUMN_NAME = 'grp'")" \
    "the column grp added to the old run log"
grep -q "added the column grp to the run log rowq_runs" a.log b.log ||
	fail "no daemon said it added grp: $(cat a.log b.log)"
# Both daemons wrote runs: the batch-1 and the batch-5 paths.
for d in a b; do
	n=$(sql_value "SELECT COUNT(*) FROM rowq_runs WHERE outcome = 'done'
	    AND pid IN ($(paste -sd, workers.$d))")
	[ "$n" -gt 0 ] || fail "daemon $d wrote no done run: $(cat workers.$d)"
done
# Each run's group is the row's, exactly (its first 255 bytes).
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM rowq_runs r JOIN item i
    ON r.queue = 'item' AND r.row_key = CAST(i.id AS CHAR)
    WHERE NOT (r.grp <=> LEFT(CAST(i.batch AS BINARY), 255))")" "runs whose grp is not the row's"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM rowq_runs WHERE queue = 'item'
    AND row_key <> '999' AND outcome NOT IN ('done', 'retry', 'failed')")" "runs of no outcome"

for d in a b; do
	"$ROWQ" -c $d.yaml status item --by --json >$d.json 2>$d.err ||
		fail "status --by --json ($d): $(cat $d.err)"
done
python3 - "$long" a.json b.json <<'PY' || fail "status --by --json: $(cat a.json)"
import json, sys
long = sys.argv[1]
done = {"g1": 30, "g2": 20, "g3": 0, None: 11, long: 6, "o'k\\": 5, "caf\u00e9": 4}
failed = {"g2": 3, "g3": 4, long: 1, "o'k\\": 1, "caf\u00e9": 1}
# 75 done, 5 failed at once, 5 retried then failed, the old run.
runs = 75 + 5 + 2 * 5 + 1
for f in sys.argv[2:]:
    v = json.load(open(f))
    assert v["done_window"] == 100000, v
    assert v["done_runs"] == runs, (v["done_runs"], runs)
    assert 3500 <= v["done_oldest_seconds"] <= 3700, v
    got = {g["group"]: g for g in v["groups"]}
    assert set(got) == set(done), sorted(map(str, got))
    for name, g in got.items():
        assert g["done"] == done[name], (name, g)
        assert g["failed"] == failed.get(name, 0), (name, g)
        assert g["wait"] == 0 and g["run"] == 0, (name, g)
    # The groups with failed rows first, then those with only done runs,
    # the most done first.
    names = [g["group"] for g in v["groups"]]
    with_rows = [n for n in names if failed.get(n, 0) > 0]
    assert names[:len(with_rows)] == with_rows, names
    rest = [got[n]["done"] for n in names[len(with_rows):]]
    assert rest == sorted(rest, reverse=True), names
    assert v["groups_total"] == len(done), v
print("ok")
PY

# The table: DONE last, and the note of the window.
"$ROWQ" -c a.yaml status item --by >table.out 2>&1 || fail "status --by: $(cat table.out)"
assert_match "GROUP +WAIT +RUN +FAILED +OLDEST +DONE" "$(cat table.out)" "the table's heading"
assert_match "^g2 +0 +0 +3 +- +20$" "$(grep '^g2 ' table.out)" "g2's line"
assert_match "^g3 +0 +0 +4 +- +0$" "$(grep '^g3 ' table.out)" "g3's line"
assert_match "^g1 +0 +0 +0 +- +30$" "$(grep '^g1 ' table.out)" "g1's line"
assert_match "^NULL +0 +0 +0 +- +11$" "$(grep '^NULL ' table.out)" "the NULL group's line"
assert_match "^caf.+ +0 +0 +1 +- +4$" "$(grep '^caf' table.out)" "the UTF-8 group's line"
assert_match "\(DONE: done runs among all [0-9]+ runs of the queue in the run log rowq_runs, the oldest 1h" \
    "$(cat table.out)" "the note of DONE's window"

# --limit 2: the two groups with the most failed rows, no room for more.
"$ROWQ" -c b.yaml status item --by --limit 2 --json >lim.json 2>&1 || fail "--limit 2: $(cat lim.json)"
python3 - lim.json <<'PY' || fail "status --by --limit 2: $(cat lim.json)"
import json, sys
v = json.load(open(sys.argv[1]))
got = [(g["group"], g["failed"], g["done"]) for g in v["groups"]]
assert got == [("g3", 4, 0), ("g2", 3, 20)], got
assert v["groups_total"] == 5 and v["groups_left_out"] == 3, v
PY
for d in a b; do
	kill_wait 10 "${pid[$d]}"
	untrack_pid "${pid[$d]}"
done

# A waiting row, then running: its group keeps its DONE; the console
# shows the same.
sql "INSERT INTO item (id, batch, mode, arg) VALUES (1000, 'g1', 'sleep', '120000')"
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
console_users console.users
config c.yaml c 1
sed -i "s|^queues:|console:\n  listen: 127.0.0.1:$port\n  users_file: $ROWQ_TEST_TMP/console.users\nqueues:|;
    s|^    workers: 2|    workers: 1|" c.yaml
"$ROWQ" -c c.yaml status item --by >c.out 2>&1 || fail "status --by: $(cat c.out)"
assert_match "^g1 +1 +- +0 +[0-9]+s +30$" "$(grep '^g1 ' c.out)" "g1 waiting"
rowq_start c.yaml c.log
console_up
wait_until 10 'grep -q "^1000 " handled' || fail "row 1000 did not start"
console_login jar.victor victor
wait_until 15 'console_curl -b jar.victor "$CONSOLE/api/queue/item/groups" | grep -q "\"group\":\"g1\",\"wait\":0,\"run\":1"' ||
	fail "the console never showed g1 running: $(console_curl -b jar.victor "$CONSOLE/api/queue/item/groups")"
console_curl -b jar.victor "$CONSOLE/api/queue/item/groups" >api.json
python3 - api.json <<'PY' || fail "/api/queue/item/groups: $(cat api.json)"
import json, sys
v = json.load(open(sys.argv[1]))
got = {g["group"]: (g["wait"], g["run"], g["failed"], g["done"]) for g in v["groups"]}
assert got["g1"] == (0, 1, 0, 30), got
assert got["g2"] == (0, 0, 3, 20) and got[None] == (0, 0, 0, 11), got
assert v["groups"][0]["group"] == "g1", v
PY
console_curl -b jar.victor "$CONSOLE/queue/item" >page.html
assert_match "<th class=\"n\">Done</th>" "$(cat page.html)" "the Done column"
assert_match "<td class=\"v\">g2</td><td class=\"n\">0</td><td class=\"n\">0</td><td class=\"n\">3</td><td class=\"n\">-</td><td class=\"n\">20</td>" \
    "$(cat page.html)" "g2's row on the page"
assert_match "id=\"groups-done\">Done: done runs among all" "$(cat page.html)" "the note of Done"
kill_wait 10 "$ROWQ_PID"
untrack_pid "$ROWQ_PID"

# A user without ALTER, on another old run log: told what to run.
sql "CREATE TABLE old_runs $old_ddl"
sql "CREATE USER rowqna@localhost;
    GRANT SELECT, INSERT, UPDATE, CREATE ON \`$ROWQ_TEST_DB\`.* TO rowqna@localhost"
config na.yaml na 1 rowqna "table: old_runs"
rowq_start na.yaml na.log
wait_until 15 'grep -q "the run log old_runs has no column grp" na.log' ||
	fail "no word of the missing column: $(cat na.log)"
assert_match "grant ALTER on it, or run: ALTER TABLE old_runs ADD COLUMN grp VARBINARY\(255\) NULL\)" \
    "$(cat na.log)" "the statement to run"
kill_wait 10 "$ROWQ_PID"
untrack_pid "$ROWQ_PID"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'old_runs' AND COLUMN_NAME = 'grp'")" \
    "grp added without ALTER"

# A transaction left open on an old run log: the ALTER waits for it a few
# seconds only (the run log's INSERTs queue behind a waiting ALTER), and
# the worker adds the column once it has ended.
sql "CREATE TABLE held_runs $old_ddl"
sql "DELETE FROM item WHERE id = 1000"
sql "INSERT INTO item (id, batch, mode, arg) VALUES (1001, 'g9', 'sleep', '10')"
sql "BEGIN; SELECT COUNT(*) FROM held_runs; SELECT SLEEP(9); COMMIT" >held.out 2>&1 &
held=$!
track_pid "$held"
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM information_schema.PROCESSLIST
    WHERE INFO LIKE '"'SELECT SLEEP(9)%'"'")" = 1 ]' || fail "the open transaction did not start"
config held.yaml held 1 root "table: held_runs"
sed -i 's|^    workers: 2|    workers: 1|' held.yaml
rowq_start held.yaml held.log
wait_until 15 'grep -q "the run log held_runs has no column grp.*[Ll]ock wait timeout" held.log' ||
	fail "the ALTER did not give up waiting: $(cat held.log)"
wait "$held" || fail "the open transaction: $(cat held.out)"
untrack_pid "$held"
wait_until 30 'grep -q "added the column grp to the run log held_runs" held.log' ||
	fail "the column was not added once the transaction ended: $(cat held.log)"
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM held_runs WHERE grp = '"'g9'"'")" = 1 ]' ||
	fail "no run of g9 in held_runs"
kill_wait 10 "$ROWQ_PID"
untrack_pid "$ROWQ_PID"
