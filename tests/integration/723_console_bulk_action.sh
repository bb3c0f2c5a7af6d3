#!/usr/bin/env bash
# A requeue or discard of every failed row runs beside the console, not in
# its thread: while 20,000 rows are discarded (chunks of 1000, a pause
# between), other clients' pages answer at once (never waiting for it);
# the operator's POST answers once the rows are gone, with their count,
# as before; a second bulk action on the queue meanwhile is refused (409),
# and the action is logged once, with its rows.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "INSERT INTO email (recipient, subject, body, status, attempts, last_error)
    SELECT CONCAT('user', seq, '@x'), 's', '', 'failed', 3, 'smtp down' FROM $(seq_rows 20000)"
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
console_config rowq.yaml "$port"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || tail -n 40 "$ROWQ_TEST_TMP/rowq.log"'
console_up
console_login a.jar alice
console_login v.jar victor
csrf=$(console_csrf a.jar /queue/email/failed)

# Another user's pages, every 0.1 s until stop appears: the longest wait
# for an answer, in ms, and how many there were.
python3 - "$CONSOLE/" "$ROWQ_TEST_TMP/v.jar" >pages.out 2>&1 <<'PY' &
import http.cookiejar, os, sys, time, urllib.request
jar = http.cookiejar.MozillaCookieJar(sys.argv[2])
jar.load()
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
worst, n = 0.0, 0
while not os.path.exists("stop"):
    t = time.monotonic()
    try:
        opener.open(sys.argv[1], timeout=30).read()
    except Exception as e:
        print("error", e, flush=True)
    worst = max(worst, time.monotonic() - t)
    n += 1
    time.sleep(0.1)
print("%d %d" % (worst * 1000, n), flush=True)
PY
pages=$!
track_pid "$pages"
sleep 0.5

start=$(now_us)
console_curl --max-time 120 -b a.jar -o /dev/null -w '%{http_code} %{redirect_url}' \
    --data "csrf=$csrf&action=discard&all=1&confirm=1" "$CONSOLE/queue/email/failed" >post.out &
post=$!
track_pid "$post"
sleep 1
second=$(console_curl -b a.jar -o /dev/null -w '%{http_code}' \
    --data "csrf=$csrf&action=requeue&all=1&confirm=1" "$CONSOLE/queue/email/failed")
wait "$post"
untrack_pid "$post"
took=$((($(now_us) - start) / 1000))
touch stop
wait "$pages"
untrack_pid "$pages"
read -r worst n <<<"$(tail -n 1 pages.out)"
echo "figure: the discard of 20000 rows took $took ms; meanwhile $n pages, the slowest $worst ms; a second bulk action: $second"
assert_match '^303 .*did=discarded&n=20000$' "$(cat post.out)" "the operator's POST, once done"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM email")" "rows left"
# A page that waited for the discard would wait most of it (over 4 s):
# half of it is the bound, whatever the machine's load.
assert_le "$worst" $((took / 2)) "ms the slowest page took meanwhile"
assert_eq 409 "$second" "a second bulk action meanwhile"
assert_eq 1 "$(grep -c 'alice (operator, from 127.0.0.1) discarded email: 20000 rows; all' rowq.log)" \
    "the action's line in the log"
! grep -q 'error' pages.out || fail "pages: $(cat pages.out)"
