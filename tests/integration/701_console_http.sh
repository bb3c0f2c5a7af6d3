#!/usr/bin/env bash
# The web console over HTTP, with curl: no page without a login (the
# browser is sent to the form, /api/ answers 401); a wrong password is
# refused and slows the client's next try; a session cookie is HttpOnly
# and SameSite=Strict; HTTP Basic reads /api/ but changes nothing; a
# viewer's POST is 403, so is one without the session's CSRF token or
# with a wrong one; requeue and discard change exactly the rows asked,
# and the journal says who did it; a bulk action asks first; an unknown
# queue is 404; oversized and malformed requests are answered 4xx and
# the console serves on; a row's <script> is shown as text; every answer
# has the security headers, and no password reaches the log.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "INSERT INTO email (id, recipient, subject, body, status, attempts, last_error) VALUES
    (1, 'a@x', 's', '', 'failed', 3, 'smtp down'),
    (2, 'b@x', 's', '', 'failed', 3, 'smtp down'),
    (3, 'c@x', 's', '', 'failed', 3, '<script>alert(1)</script>'),
    (4, 'd@x', 's', '', 'failed', 3, 'no such address')"
# rowq console-user: a crypt(3) line, or a refusal.
line=$(printf 'a-long-password\n' | "$ROWQ" console-user ops.team@x --role operator) ||
    fail "console-user"
assert_match '^ops\.team@x:\$(y|6)\$[./0-9A-Za-z$]+:operator$' "$line" "the users file's line"
assert_match ':viewer$' "$(printf 'a-long-password\n' | "$ROWQ" console-user v)" "viewer by default"
status=0; printf 'short\n' | "$ROWQ" console-user v >/dev/null 2>&1 || status=$?
assert_eq 1 "$status" "a password under 8 bytes"
status=0; printf 'a-long-password\n' | "$ROWQ" console-user v --role admin >/dev/null 2>&1 || status=$?
assert_eq 2 "$status" "an unknown role"
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
console_config rowq.yaml "$port"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
wait_until 15 '[ "$(console_curl -o /dev/null -w "%{http_code}" "$CONSOLE/login")" = 200 ]' ||
    fail "no console at $CONSOLE"
code() { console_curl -o /dev/null -w '%{http_code}' "$@"; }
# 10 clients that connect and say nothing, 10 that stall in their request
# line: held from our side for 14 s, cut by the console within its 10 s.
python3 - "$port" >idle.out <<'PY' &
import socket, sys, time
socks = []
for i in range(20):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    if i % 2:
        s.sendall(b"GET /log")
    socks.append(s)
time.sleep(14)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        closed += s.recv(1) == b""
    except BlockingIOError:
        pass
    except ConnectionError:
        closed += 1
print(closed)
PY
idle=$!
track_pid "$idle"
failed_ids() { sql "SELECT GROUP_CONCAT(id ORDER BY id) FROM email WHERE status = 'failed'"; }

# ---- no page without a login; the headers ----
assert_eq 303 "$(code "$CONSOLE/")" "the queues page without a login"
assert_match '[Ll]ocation: /login' "$(console_curl -D - -o /dev/null "$CONSOLE/queue/email")" "sent to the form"
assert_eq 401 "$(code "$CONSOLE/api/status")" "/api/ without a login"
assert_eq 401 "$(code -X POST -d x=1 "$CONSOLE/queue/email/wake")" "a POST without a login"
headers=$(console_curl -D - -o /dev/null "$CONSOLE/login")
assert_match "Content-Security-Policy: default-src 'none'" "$headers" "CSP"
assert_match "X-Frame-Options: DENY" "$headers" "no framing"
assert_match "X-Content-Type-Options: nosniff" "$headers" "no sniffing"

# ---- a wrong password, and the wait it costs ----
assert_eq 403 "$(code --data 'user=alice&password=wrong-password' "$CONSOLE/login")" "a wrong password"
assert_eq 429 "$(code --data 'user=alice&password=alice-password' "$CONSOLE/login")" "the next try at once is refused"
assert_eq 429 "$(code -u alice:alice-password "$CONSOLE/api/status")" "Basic from that client too"
sleep 2.2
wait_until 10 '[ "$(code --data "user=alice&password=alice-password" "$CONSOLE/login")" = 303 ]' ||
    fail "the right password after the wait"
cookie=$(console_curl -D - -o /dev/null --data 'user=alice&password=alice-password' "$CONSOLE/login" | grep -i '^set-cookie:')
assert_match 'rowq_session=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict' "$cookie" "the session cookie"
[[ $cookie != *Secure* ]] || fail "Secure without TLS: $cookie"

# ---- HTTP Basic reads /api/ ----
console_curl -u alice:alice-password "$CONSOLE/api/status" >status.json
python3 - status.json <<'PY' || fail "/api/status: $(cat status.json)"
import json, sys
d = json.load(open(sys.argv[1]))
q = d["queues"][0]
assert q["name"] == "email" and q["failed_rows"] == 4 and q["paused"] is None, q
assert "pid" in d["daemon"], d
PY
assert_eq 200 "$(code -u alice:alice-password "$CONSOLE/api/queue/email/failed")" "/api/queue/email/failed"
console_curl -u victor:victor-password "$CONSOLE/api/queue/email/failed?error=smtp" >failed.json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["total"] == 2 and [r["id"] for r in d["rows"]] == [2, 1], d' failed.json ||
    fail "/api/queue/email/failed?error=smtp: $(cat failed.json)"
assert_eq 403 "$(code -u alice:alice-password --data 'action=requeue&key=1' "$CONSOLE/queue/email/failed")" "Basic changes nothing"

# ---- a viewer cannot act; CSRF ----
console_login v.jar victor
vcsrf=$(console_csrf v.jar /queue/email/failed)
[ -n "$vcsrf" ] || fail "no CSRF token on the viewer's page"
assert_eq 403 "$(code -b v.jar --data "csrf=$vcsrf&action=requeue&key=1" "$CONSOLE/queue/email/failed")" "a viewer's requeue"
assert_eq 403 "$(code -b v.jar --data "csrf=$vcsrf&reason=x" "$CONSOLE/queue/email/pause")" "a viewer's pause"
console_login a.jar alice
csrf=$(console_csrf a.jar /queue/email/failed)
assert_eq 64 "${#csrf}" "the CSRF token"
assert_eq 403 "$(code -b a.jar --data 'action=requeue&key=1' "$CONSOLE/queue/email/failed")" "no CSRF token"
assert_eq 403 "$(code -b a.jar --data "csrf=$vcsrf&action=requeue&key=1" "$CONSOLE/queue/email/failed")" "another session's CSRF token"
wrong=${csrf%?}$([ "${csrf: -1}" = 0 ] && echo 1 || echo 0)
assert_eq 403 "$(code -b a.jar --data "csrf=$wrong&action=requeue&key=1" "$CONSOLE/queue/email/failed")" "a wrong CSRF token"
assert_eq "1,2,3,4" "$(failed_ids)" "nothing changed by the refused requests"

# ---- requeue and discard, exactly the rows asked, logged with the user ----
assert_eq 303 "$(code -b a.jar --data "csrf=$csrf&action=requeue&key=1" "$CONSOLE/queue/email/failed")" "requeue row 1"
assert_eq "2,3,4" "$(failed_ids)" "row 1 requeued, the others not"
assert_match "waiting|sent" "$(sql_value "SELECT status FROM email WHERE id = 1")" "row 1 waits again (or is done)"
wait_until 5 'grep -q "console: alice (operator, from 127.0.0.1) requeued email: 1 row; key 1" rowq.log' ||
    fail "the journal has no line for the requeue: $(grep console: rowq.log)"
assert_eq 303 "$(code -b a.jar --data "csrf=$csrf&action=discard&key=2" "$CONSOLE/queue/email/failed")" "discard row 2"
assert_eq "3,4" "$(failed_ids)" "row 2 discarded"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM email WHERE id = 2")" "row 2 deleted by discard:"
wait_until 5 'grep -q "console: alice (operator, from 127.0.0.1) discarded email: 1 row; key 2" rowq.log' ||
    fail "the journal has no line for the discard"
# A bulk action asks first, and changes nothing until confirmed.
page=$(console_curl -b a.jar --data "csrf=$csrf&action=requeue&all=1&error=no+such" "$CONSOLE/queue/email/failed")
assert_match 'id="confirm"' "$page" "a confirmation for all rows"
assert_eq "3,4" "$(failed_ids)" "nothing before the confirmation"
assert_eq 303 "$(code -b a.jar --data "csrf=$csrf&action=requeue&all=1&error=no+such&confirm=1" "$CONSOLE/queue/email/failed")" "requeue all confirmed"
assert_eq "3" "$(failed_ids)" "only the row whose error matched"
assert_eq 303 "$(code -b a.jar --data "csrf=$csrf&reason=maintenance" "$CONSOLE/queue/email/pause")" "pause"
assert_eq 1 "$(sql_value "SELECT COUNT(*) FROM rowq_pause WHERE queue = 'email' AND reason = 'maintenance'")" "paused, with the reason"
assert_eq 303 "$(code -b a.jar --data "csrf=$csrf" "$CONSOLE/queue/email/resume")" "resume"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM rowq_pause")" "resumed"
assert_match "alice.*paused email.*maintenance" "$(cat rowq.log)" "the pause is logged"

# ---- a row's value is shown as text ----
page=$(console_curl -b a.jar "$CONSOLE/queue/email/failed")
assert_match '&lt;script&gt;alert\(1\)&lt;/script&gt;' "$page" "the error escaped"
[[ $page != *"<script>alert(1)"* ]] || fail "the error's <script> is in the page as HTML"
page=$(console_curl -b a.jar "$CONSOLE/queue/email")
[[ $page != *"<script>alert(1)"* ]] || fail "the queue page has the <script>"
assert_match '<svg' "$page" "a chart"

# ---- unknown queue, oversized and malformed requests ----
assert_eq 404 "$(code -b a.jar "$CONSOLE/queue/nosuch")" "an unknown queue"
assert_eq 404 "$(code -b a.jar "$CONSOLE/queue/nosuch/failed")" "an unknown queue's failed rows"
assert_eq 404 "$(code -u alice:alice-password "$CONSOLE/api/queue/nosuch")" "an unknown queue in /api/"
assert_eq 404 "$(code -b a.jar --data "csrf=$csrf" "$CONSOLE/queue/nosuch/pause")" "a POST to an unknown queue"
long=$(head -c 5000 /dev/zero | tr '\0' a)
c=$(code -b a.jar "$CONSOLE/queue/$long"); assert_match '^4[0-9][0-9]$' "$c" "a 5000-byte URL"
c=$(code -b a.jar -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' a)" "$CONSOLE/"); assert_match '^4[0-9][0-9]$' "$c" "40 KB of headers"
head -c 300000 /dev/zero | tr '\0' a >big.body
c=$(code -b a.jar --data-binary @big.body "$CONSOLE/queue/email/wake"); assert_eq 413 "$c" "a 300 KB body"
args=$(for i in $(seq 1 40); do printf 'a%d=1&' "$i"; done)
assert_eq 400 "$(code -b a.jar "$CONSOLE/queue/email/failed?$args")" "40 query arguments"
assert_eq 400 "$(code -b a.jar --data "csrf=$csrf&action=requeue&key=%zz" "$CONSOLE/queue/email/failed")" "a bad %-escape"
assert_eq 405 "$(code -b a.jar -X DELETE "$CONSOLE/queue/email")" "DELETE"
# Each answered 4xx, or closed unanswered (what is not HTTP at all).
python3 - "$port" <<'PY' || fail "malformed requests"
import socket, sys
port = int(sys.argv[1])
for raw, closed_ok in ((b"GARBAGE\r\n\r\n", True),
                       (b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", False),
                       (b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", False),
                       (b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", False)):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(raw)
    line = s.recv(100).split(b"\r\n")[0].decode(errors="replace")
    s.close()
    ok = line.startswith(("HTTP/1.1 4", "HTTP/1.0 4")) or (closed_ok and line == "")
    if not ok:
        sys.exit("%r answered %r" % (raw, line))
PY
assert_eq 200 "$(code -b a.jar "$CONSOLE/")" "the console serves on"
page=$(console_curl -b a.jar "$CONSOLE/")
assert_match '<a href="/queue/email">email</a>' "$page" "the queues page"

wait "$idle"
untrack_pid "$idle"
assert_eq 20 "$(cat idle.out)" "idle and stalled clients cut by the console"

# ---- logout; no password in the log ----
assert_eq 401 "$(code -u alice:wrong-password "$CONSOLE/api/status")" "Basic with a wrong password"
assert_eq 303 "$(code -b a.jar --data "csrf=$csrf" "$CONSOLE/logout")" "logout"
assert_eq 303 "$(code -b a.jar "$CONSOLE/")" "the session is gone"
if grep -q -e alice-password -e victor-password -e wrong-password rowq.log; then
	fail "a password is in the log"
fi
