#!/usr/bin/env bash
# The console's group view (group_by:), in a real browser as 702: a queue
# whose two workers hang on their rows, 23 groups (one of them named
# with a <script>), failed rows in two.  A viewer sees the table on the
# queue's page with the exact counts (the running groups first, the most
# rows next, 20 of 23, and the 3 left out said), the script as text;
# /api/queue/email/groups says the same to an operator and a viewer.
# A screenshot: console-groups.png.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] &&
    /usr/bin/python3 -c 'import selenium' 2>/dev/null ||
    { echo "no chromium, chromium-driver or python3-selenium"; exit 77; }
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "ALTER TABLE email ADD COLUMN campaign VARCHAR(100) NULL"
script='<script>alert(1)</script>'
sql "INSERT INTO email (id, recipient, subject, body, status, campaign) VALUES
    (1, 'a@x', 's', '', 'waiting', 'c1'), (2, 'a@x', 's', '', 'waiting', 'c2'),
    (3, 'a@x', 's', '', 'waiting', 'c1'), (4, 'a@x', 's', '', 'waiting', 'c1'),
    (5, 'a@x', 's', '', 'waiting', '$script'), (6, 'a@x', 's', '', 'waiting', 'c2'),
    (7, 'a@x', 's', '', 'failed', 'c1'), (8, 'a@x', 's', '', 'failed', '$script')"
sql "INSERT INTO email (id, recipient, subject, body, campaign)
    SELECT 100 + seq, 'a@x', 's', '', CONCAT('g', LPAD(seq, 2, '0')) FROM $(seq_rows 20)"
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
TIMEOUT=5m CONSOLE_EXEC="[$HANDLERS/fake, sleep, 120000, $ROWQ_TEST_TMP/handled]" \
    console_config rowq.yaml "$port" "group_by: campaign"
sed -i 's/SELECT id, recipient, subject, attempts FROM email/SELECT id, recipient, subject, attempts, campaign FROM email/;
    s/failed_select: SELECT id, recipient, attempts, last_error FROM email/failed_select: SELECT id, recipient, attempts, last_error, campaign FROM email/' rowq.yaml
"$ROWQ" -c rowq.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || { cat "$ROWQ_TEST_TMP/rowq.log"; cat "$ROWQ_TEST_TMP/browser.out" "$ROWQ_TEST_TMP/chromedriver.log" 2>/dev/null | tail -40; }'
console_up
wait_until 20 '[ "$(cat handled 2>/dev/null | wc -l)" -ge 2 ]' || fail "the workers did not start their rows"
wait_until 10 '"$ROWQ" -c rowq.yaml status --json 2>/dev/null | grep -q "\"in_progress\":2"' ||
	fail "the two workers are not busy"

# The console reads the daemon's figures again every few seconds.
console_login jar.alice alice
wait_until 15 'console_curl -b jar.alice "$CONSOLE/api/queue/email/groups" | grep -q "\"group\":\"c2\",\"wait\":1,\"run\":1"' ||
	fail "the console never showed the running rows: $(console_curl -b jar.alice "$CONSOLE/api/queue/email/groups")"
for who in alice victor; do
	console_login jar.$who $who
	console_curl -b jar.$who "$CONSOLE/api/queue/email/groups" >api.$who.json
	python3 - api.$who.json "$script" <<'PY' || fail "$who: /api/queue/email/groups: $(cat api.$who.json)"
import json, sys
v = json.load(open(sys.argv[1]))
script = sys.argv[2]
assert v["queue"] == "email" and v["group_by"] == "campaign", v
assert v["limit"] == 20 and v["groups_total"] == 23 and v["groups_left_out"] == 3, v
got = [(g["group"], g["wait"], g["run"], g["failed"]) for g in v["groups"][:3]]
assert got == [("c1", 2, 1, 1), ("c2", 1, 1, 0), (script, 1, 0, 1)], got
assert all((g["wait"], g["run"], g["failed"]) == (1, 0, 0) for g in v["groups"][3:]), v
# The console's own daemon, whose row is in the daemons table: once.
assert v["run_daemon_answered"] is True, v
assert v["run_other_daemons"]["counted"] == 0, v
PY
done

setsid /usr/bin/python3 "$TESTS_DIR/console_groups.py" "$CONSOLE" victor email "$ROWQ_TEST_TMP" >browser.out 2>&1 &
browser=$!
track_pid "$browser"
status=0
wait "$browser" || status=$?
untrack_pid "$browser"
cat browser.out
[ "$status" -eq 0 ] || fail "the browser's steps failed"
assert_eq ok "$(tail -n 1 browser.out)" "the browser's steps"
python3 - "$(sed -n 1p browser.out)" "$script" <<'PY' || fail "the group table in the browser: $(cat browser.out)"
import json, sys
rows = json.loads(sys.argv[1])
script = sys.argv[2]
assert len(rows) == 20, rows
assert [r[:4] for r in rows[:3]] == [["c1", "2", "1", "1"], ["c2", "1", "1", "0"],
                                      [script, "1", "0", "1"]], rows[:3]
assert all(r[1:4] == ["1", "0", "0"] for r in rows[3:]), rows
PY
assert_match "^3 groups left out" "$(sed -n 2p browser.out)" "the note of the groups left out"
[ -s screenshots/console-groups.png ] || fail "no screenshot console-groups.png"
