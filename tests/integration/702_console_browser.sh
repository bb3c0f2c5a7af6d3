#!/usr/bin/env bash
# The console in a real browser: Debian's chromium, headless, driven by
# chromium-driver (python3-selenium) logs in, opens the Queues page and
# the email queue's page (screenshots of both, which make check keeps in
# build/screenshots/), opens the failed rows, selects one, requeues it by
# clicking, and sees it gone from the list, and on the Actions page; the
# Daemons page lists the daemon (a screenshot); the database says that row,
# and only it, was requeued.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] &&
    /usr/bin/python3 -c 'import selenium' 2>/dev/null ||
    { echo "no chromium, chromium-driver or python3-selenium"; exit 77; }
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 300
sql "INSERT INTO email (id, recipient, subject, body, status, attempts, last_error) VALUES
    (1001, 'a@x', 's', '', 'failed', 3, 'exit status 75: smtp down'),
    (1002, 'b@x', 's', '', 'failed', 3, 'exit status 75: smtp down'),
    (1003, 'c@x', 's', '', 'failed', 3, '<script>alert(1)</script>')"
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
# Some rows done, some failed, so that the charts have something to show.
CONSOLE_EXEC="[$HANDLERS/fake, fail-every, 7]" console_config rowq.yaml "$port"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || { cat "$ROWQ_TEST_TMP/rowq.log"; cat "$ROWQ_TEST_TMP/browser.out" "$ROWQ_TEST_TMP/chromedriver.log" 2>/dev/null | tail -40; }'
wait_until 15 '[ "$(console_curl -o /dev/null -w "%{http_code}" "$CONSOLE/login")" = 200 ]' ||
    fail "no console at $CONSOLE"
wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'waiting'"'")" = 0 ]' ||
    fail "the rows were not worked"
sleep 6	# a history tick (5 s), for the charts

# In a process group of its own: chromium and its driver die with it.
setsid /usr/bin/python3 "$TESTS_DIR/console_browser.py" "$CONSOLE" 1002 "$ROWQ_TEST_TMP" >browser.out 2>&1 &
browser=$!
track_pid "$browser"
status=0
wait "$browser" || status=$?
untrack_pid "$browser"
cat browser.out
[ "$status" -eq 0 ] || fail "the browser's steps failed"
assert_eq ok "$(tail -n 1 browser.out)" "the browser's steps"
assert_match "waiting|sent" "$(sql_value "SELECT status FROM email WHERE id = 1002")" "row 1002 requeued"
assert_eq "failed failed" "$(sql "SELECT status FROM email WHERE id IN (1001, 1003) ORDER BY id" | tr '\n' ' ' | sed 's/ $//')" "the other failed rows stay"
grep -q "alice (operator, from 127.0.0.1) requeued email: 1 row; key 1002" rowq.log ||
    fail "the requeue is not in the log"
for f in console-queues console-queue; do
	[ -s "screenshots/$f.png" ] || fail "no screenshot $f.png"
done
