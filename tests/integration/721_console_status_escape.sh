#!/usr/bin/env bash
# What the console reads from the status socket is shown escaped, the
# Queues page's busy and running workers too: whoever answers at the
# socket's path (here a stand-in, put where the daemon's socket was)
# cannot write HTML into the page.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
console_config rowq.yaml "$port"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
console_up
console_login a.jar alice
# The workers start once the pause table is read: wait for both.
wait_until 20 'console_curl -b a.jar "$CONSOLE/" | grep -qF "<td class=\"n\">0/2</td>"' || true
assert_match '<td class="n">0/2</td>' "$(console_curl -b a.jar "$CONSOLE/")" "the daemon's own figures"

# The stand-in: every connection gets a daemon's and a queue's line, its
# figures HTML.
mv rowq.sock rowq.sock.daemon
python3 - "$ROWQ_TEST_TMP/rowq.sock" >standin.out 2>&1 <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(8)
print("listening", flush=True)
answer = ("daemon\tpid=1\tgeneration=1\n"
          "queue\tqueue=email\tbusy=<b id=\"busy\">9</b>\t"
          "workers=<script>alert(1)</script>\n").encode()
while True:
    c, _ = s.accept()
    c.sendall(answer)
    c.close()
PY
standin=$!
track_pid "$standin"
wait_until 5 'grep -q listening standin.out' || fail "the stand-in: $(cat standin.out)"
sleep 1.2	# the console reads the socket at most once a second
page=$(console_curl -b a.jar "$CONSOLE/")
cell=$(printf '%s\n' "$page" | grep -o '<td class="n">[^/]\{0,40\}busy.\{0,80\}alert(1).\{0,20\}' | head -n 1)
echo "figure: the workers cell from the stand-in: $cell"
[[ $page != *'<script>alert(1)</script>'* ]] || fail "the stand-in's <script> is in the page as HTML"
[[ $page != *'<b id="busy">'* ]] || fail "the stand-in's <b> is in the page as HTML"
assert_match '&lt;b id=&quot;busy&quot;&gt;9&lt;/b&gt;/&lt;script&gt;alert\(1\)&lt;/script&gt;' "$page" \
    "busy and workers shown as text"
