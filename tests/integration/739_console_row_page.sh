#!/usr/bin/env bash
# A row's page in the console, in a real browser as 725: one worker of
# queue jobs (a text key, runs: {}) does row done-row, fails 'victim' and
# 'victim' CHAR(1) in two tries each, then hangs on row slow, so that
# row later waits; queue bk (a binary key) fails X'00ff0a41', does
# X'00ff0a' and hangs on X'ff01'.  The browser reaches each row's page
# by the console's own links (next rows, workers, failed rows) or its
# find box; each says what `rowq show --json` says (state, select,
# failed set, runs); the planted key's page is its own row's and not
# 'victim''s; X'ff01''s is reached from the workers' table, which shows
# a binary key in hex; a requeue from
# the planted row's page changes that row alone, a discard from the
# binary row's page removes it alone (SQL before and after).  A viewer
# sees no buttons and is refused, as is a post without the CSRF token.
# /api/queue/NAME/row says what rowq show --json says.
# The search page finds rows of the select by a column's value, saying
# how: by the key, by an index (n), or by a bounded scan (attempts).
# Screenshots: console-row-failed.png, console-row-requeued.png,
# console-row-search.png.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
. "$TESTS_DIR/torture/common.sh"
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] &&
    /usr/bin/python3 -c 'import selenium' 2>/dev/null ||
    { echo "no chromium, chromium-driver or python3-selenium"; exit 77; }
db_start
db_create
cd "$ROWQ_TEST_TMP"
# As 707: a collation that sees CHAR(1) and pads with spaces.
sql "CREATE TABLE jobs (k VARCHAR(64) CHARACTER SET utf8mb4
    COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, n INT NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0, last_error TEXT NULL,
    INDEX (status, n), INDEX (n)) ENGINE=InnoDB"
sql "INSERT INTO jobs (k, n) VALUES ('done-row', 10), ('victim', 20),
    (CONCAT('victim', CHAR(1)), 30), ('slow', 40)"
sql "CREATE TABLE bk (id VARBINARY(16) NOT NULL PRIMARY KEY, n INT NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0, last_error TEXT NULL,
    INDEX (status, n)) ENGINE=InnoDB"
sql "INSERT INTO bk (id, n) VALUES (UNHEX('00ff0a41'), 70), (UNHEX('00ff0a'), 80),
    (UNHEX('ff01'), 90)"
cat >handler <<'SH'
#!/bin/sh
case $ROWQ_KEY in
done-row|00ff0a) exit 0 ;;
slow|ff01) exec sleep 600 ;;
esac
echo "no such mailbox" >&2
exit 1
SH
chmod +x handler
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
console_users console.users
queue()
{
	cat <<YAML
  $1:
    workers: 1
    select: SELECT $2, n, attempts FROM $1 WHERE status = 'waiting' ORDER BY n
    exec: [$ROWQ_TEST_TMP/handler]
    timeout: 15m
    idle: 200ms
    done: UPDATE $1 SET status = 'done', attempts = attempts + 1 WHERE $2 = :$2
    retry:
      max_attempts: 2
      attempts_column: attempts
      delay: 0s
      update: UPDATE $1 SET attempts = attempts + 1, last_error = :error WHERE $2 = :$2
    failed: UPDATE $1 SET status = 'failed', attempts = attempts + 1, last_error = :error WHERE $2 = :$2
    failed_select: SELECT $2, n, attempts, last_error FROM $1 WHERE status = 'failed' ORDER BY n
    requeue: UPDATE $1 SET status = 'waiting', attempts = 0 WHERE $2 = :$2 AND status = 'failed'
    discard: DELETE FROM $1 WHERE $2 = :$2 AND status = 'failed'
    runs: {}
YAML
}
{
	cat <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: $ROWQ_TEST_TMP/rowq.sock
console:
  listen: 127.0.0.1:$port
  users_file: $ROWQ_TEST_TMP/console.users
queues:
YAML
	queue jobs k
	queue bk id
} >rowq.yaml
"$ROWQ" -c rowq.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || { cat "$ROWQ_TEST_TMP/rowq.log"; cat "$ROWQ_TEST_TMP/browser.out" "$ROWQ_TEST_TMP/chromedriver.log" 2>/dev/null | tail -40; }'
console_up
# 1 + 2 + 2 runs of jobs, 2 + 1 of bk, and the workers on rows slow
# and X'ff01'.
wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM rowq_runs" 2>/dev/null)" = 8 ] &&
    [ "$(handlers_of "$ROWQ_PID" | wc -l)" = 2 ]' ||
	fail "the rows did not end as planned: $(sql "SELECT queue, HEX(row_key), attempt, outcome FROM rowq_runs")"
sql "INSERT INTO jobs (k, n) VALUES ('later', 50)"
wait_until 10 '"$ROWQ" -c rowq.yaml show jobs slow --json | grep -q "\"state\":\"running\""' ||
	fail "row slow is not running: $("$ROWQ" -c rowq.yaml show jobs slow)"
sleep 1	# the console reads the daemon's status every second

rows() { sql "SELECT GROUP_CONCAT(CONCAT(n, ':', HEX($2), ':', status, ':', attempts) ORDER BY n) FROM $1"; }
jobs_before=$(rows jobs k)
bk_before=$(rows bk id)
echo "figure: jobs before: $jobs_before; bk before: $bk_before"

# ---- refused: a viewer, and an operator's post without its token ----
console_login a.jar alice
console_login v.jar victor
planted_url="$CONSOLE/queue/jobs/row?key_hex=76696374696d01"
page=$(console_curl -b v.jar "$planted_url")
assert_match 'id="state">failed<' "$page" "the viewer sees the planted row failed"
if printf '%s' "$page" | grep -q 'id="requeue"\|id="discard"'; then
	fail "a viewer is given the requeue or discard button"
fi
code() { console_curl -o /dev/null -w '%{http_code}' "$@"; }
vcsrf=$(console_csrf v.jar /queue/jobs)
assert_eq 403 "$(code -b v.jar --data "csrf=$vcsrf&action=requeue&back=row&key_hex=76696374696d01" \
    "$CONSOLE/queue/jobs/failed")" "a viewer's requeue"
assert_eq 403 "$(code -b a.jar --data "action=requeue&back=row&key_hex=76696374696d01" \
    "$CONSOLE/queue/jobs/failed")" "an operator's requeue without the CSRF token"
assert_eq "$jobs_before" "$(rows jobs k)" "jobs after the refused posts"
# A key the page cannot decode is refused, not looked up as another.
assert_eq 400 "$(code -b a.jar "$CONSOLE/queue/jobs/row?key_hex=7g")" "a key_hex that is not hex"
# The page's JSON is rowq show --json's, but for the daemon's status
# error, read at another time.
"$ROWQ" -c rowq.yaml show jobs --hex 76696374696d01 --json >show.planted
console_curl -b v.jar "$CONSOLE/api/queue/jobs/row?key_hex=76696374696d01" >api.planted
python3 - show.planted api.planted <<'PY' || fail "/api/queue/jobs/row: $(cat api.planted)"
import json, sys
s, a = (json.load(open(f)) for f in sys.argv[1:3])
assert a["state"] == "failed" and a["key"] is None and a["key_hex"] == "76696374696d01", a
assert [(r["try"], r["outcome"]) for r in a["runs"]] == [(1, "retry"), (2, "failed")], a
s.pop("status_error", None); a.pop("status_error", None)
assert s == a, (s, a)
PY
# A search names a column of the select's, nothing else.
assert_eq 400 "$(code -b v.jar "$CONSOLE/queue/jobs/search?column=last_error&value=x")" \
    "a search by a column the select does not return"

# ---- the browser ----
setsid /usr/bin/python3 "$TESTS_DIR/console_row.py" "$CONSOLE" "$ROWQ_TEST_TMP" >browser.out 2>&1 &
browser=$!
track_pid "$browser"
status=0
wait "$browser" || status=$?
untrack_pid "$browser"
cat browser.out
[ "$status" -eq 0 ] || fail "the browser's steps failed"
assert_eq ok "$(tail -n 1 browser.out)" "the browser's steps"

# Each page against rowq show --json of the same key, read now (the
# planted and binary rows' pages before their action, from the log).
show() { "$ROWQ" -c rowq.yaml show "$@" --json; }
show jobs later >show.waiting
show jobs slow >show.running
show jobs done-row >show.done
show jobs victim >show.victim
show bk --hex 00ff0a >show.binary-done
show bk --hex ff01 >show.binary-running
python3 - browser.out <<'PY' || fail "the row pages: $(cat browser.out)"
import json, sys
pages = {}
for line in open(sys.argv[1]):
    if line.startswith("{"):
        p = json.loads(line)
        pages[p["page"]] = p
def show(name):
    return json.load(open("show." + name))
def runs(p):
    return [(r[0], r[1]) for r in p["runs"]]
def show_runs(s):
    return [(str(r["try"]), r["outcome"]) for r in s["runs"]]
for name in ("waiting", "running", "done", "victim", "binary-done",
             "binary-running"):
    p, s = pages[name], show(name)
    assert p["state"] == s["state"], (name, p["state"], s["state"])
    assert (p["select"] is not None) == s["in_select"], (name, p, s)
    assert runs(p) == show_runs(s), (name, runs(p), show_runs(s))
w = pages["waiting"]
assert w["state"] == "waiting" and w["key"] == "later" and w["key_hex"] is None, w
assert ["n", "50"] in w["select"], w["select"]
assert w["runs"] == [] and "not on this daemon" in w["running"], w
r = pages["running"]
assert r["state"] == "running" and r["key"] == "slow", r
# The worker's claim holds row slow locked: read without a lock, the
# select still shows it (a locking read would wait, SKIP LOCKED miss it).
assert ["n", "40"] in r["select"], r["select"]
pid = show("running")["running"]["pid"]
assert "worker jobs/1, pid %d, try 1, since " % pid in r["running"], (r["running"], pid)
d = pages["done"]
assert d["state"] == "done" and runs(d) == [("1", "done")] and d["select"] is None, d
assert d["url"] == "/queue/jobs/row?key=done-row", d["url"]
v = pages["victim"]
assert v["key"] == "victim" and v["key_hex"] is None, v
assert ["n", "20"] in v["failed"] and v["requeue"] and v["discard"], v
# The planted key: its own row (n 30), never 'victim''s (n 20).
p = pages["planted"]
assert p["state"] == "failed" and p["key"] == "victim\u2401", p["key"]
assert p["key_hex"] == "x'76696374696d01'", p["key_hex"]
assert ["n", "30"] in p["failed"] and ["attempts", "2"] in p["failed"], p["failed"]
assert runs(p) == [("1", "retry"), ("2", "failed")], p["runs"]
assert all("no such mailbox" in r[8] for r in p["runs"]), p["runs"]
assert p["requeue"] and p["discard"], p
q = pages["planted-requeued"]
assert q["did"] == "requeued 1 row." and q["state"] == "waiting", q
assert q["url"].startswith("/queue/jobs/row?key_hex=76696374696d01&did=requeued"), q["url"]
assert ["n", "30"] in q["select"] and ["attempts", "0"] in q["select"], q["select"]
assert not q["requeue"] and q["failed"] is None, q
b = pages["binary"]
assert b["state"] == "failed" and b["key_hex"] == "x'00ff0a41'", b
assert runs(b) == [("1", "retry"), ("2", "failed")] and ["n", "70"] in b["failed"], b
assert ["id", "x'00ff0a41'"] in b["failed"], b["failed"]
g = pages["binary-discarded"]
assert g["did"] == "discarded 1 row." and g["failed"] is None and g["select"] is None, g
assert g["state"] == "failed" and runs(g) == runs(b), g   # its runs say how it ended
# The search: n by its index, k as the key, attempts by a bounded scan.
s = pages["search n"]
assert s["n"] == ["50"] and "n leads an index of the select's table" in s["how"], s
assert "column=n&value=50" in s["url"], s["url"]
s = pages["search k"]
assert s["n"] == ["40"] and "k is the key" in s["how"], s
s = pages["search attempts"]
assert s["n"] == ["30", "40", "50"] and "compared in the first 10000 rows" in s["how"], s
assert s["how"].startswith("3 rows;"), s["how"]
f = pages["from-search"]
assert f["state"] == "waiting" and f["key"] == "later", f
br = pages["binary-running"]
assert br["state"] == "running" and br["key_hex"] == "x'ff01'", br
assert "worker bk/1, pid %d, try 1" % show("binary-running")["running"]["pid"] in br["running"], br
bd = pages["binary-done"]
assert bd["state"] == "done" and bd["key_hex"] == "x'00ff0a'" and runs(bd) == [("1", "done")], bd
assert bd["url"] == "/queue/bk/row?key=00ff0a&hex=1", bd["url"]   # typed in hex
PY

# ---- exactly the rows acted on changed ----
jobs_after=$(rows jobs k)
bk_after=$(rows bk id)
echo "figure: jobs after: $jobs_after; bk after: $bk_after"
assert_eq "${jobs_before/30:76696374696D01:failed:2/30:76696374696D01:waiting:0}" \
    "$jobs_after" "jobs: the planted row requeued, and no other row changed"
assert_eq "80:00FF0A:done:1,90:FF01:waiting:0" "$bk_after" "bk: X'00ff0a41' discarded, the others kept"
assert_eq 50:later:waiting "$(sql_value "SELECT CONCAT(n, ':', k, ':', status) FROM jobs WHERE n = 50")" "row later still waits"
wait_until 5 'grep -q "alice (operator, from 127.0.0.1) requeued jobs: 1 row; key victim" rowq.log' ||
    fail "the requeue is not logged"
wait_until 5 'grep -q "alice (operator, from 127.0.0.1) discarded bk: 1 row; key 00ff0a41" rowq.log' ||
    fail "the discard is not logged"
for f in console-row-failed.png console-row-requeued.png console-row-search.png; do
	[ -s "screenshots/$f" ] || fail "no screenshot $f"
done
