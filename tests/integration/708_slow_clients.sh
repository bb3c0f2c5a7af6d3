#!/usr/bin/env bash
# Clients that trickle their request, one header line every 2 s, shut off
# neither listener: with 16 of them at the metrics listener (as many as
# it serves at once) /healthz answers, and with 128 at the console
# /login does; from one address, which keeps a share of the slots only,
# or from as many addresses as there are slots.  Each trickle is cut
# once its request has taken longer than the listener allows to arrive
# (metrics 5 s, console 10 s), however steadily it trickles.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
port=$(free_port)
mport=$(free_port)
CONSOLE=http://127.0.0.1:$port
console_config rowq.yaml "$port"
sed -i "s|^queues:|metrics: 127.0.0.1:$mport\nqueues:|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
console_up
wait_until 10 '[ "$(console_curl -o /dev/null -w "%{http_code}" "http://127.0.0.1:$mport/healthz")" = 200 ]' ||
    fail "no metrics listener at 127.0.0.1:$mport"

# trickle NAME PORT N FROM PATH SECONDS: N connections, from address FROM
# (or, FROM being "spread", each from an address of its own, 127.0.1.1
# and on), each sending a request's first lines and then one header line
# every 2 s, for SECONDS; NAME.out says "connected N" once they are,
# then how many the server cut and the latest it did, "16 5.4".
trickle()
{
	python3 - "$@" >"$1.out" 2>&1 <<'PY' &
import select, socket, sys, time
name, port, n, frm, path, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], float(sys.argv[6])
def source(i):
    return "127.0.%d.%d" % (1 + i // 250, 1 + i % 250) if frm == "spread" else frm
start = time.monotonic()
socks, cut = [], []
for i in range(n):
    s = socket.socket()
    s.bind((source(i), 0))
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n")
        s.setblocking(False)
        socks.append(s)
    except OSError:
        s.close()
        cut.append(time.monotonic() - start)
print("connected", n, flush=True)
line_at = start + 2
while time.monotonic() - start < secs:
    ready, _, _ = select.select(socks, [], [], 0.1) if socks else ([], [], time.sleep(0.1))
    for s in ready:
        try:
            data = s.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            socks.remove(s)
            s.close()
            cut.append(time.monotonic() - start)
    if time.monotonic() >= line_at:
        line_at += 2
        for s in list(socks):
            try:
                s.send(b"X-Trickle: 1\r\n")
            except OSError:
                socks.remove(s)
                s.close()
                cut.append(time.monotonic() - start)
print(len(cut), "%.1f" % max(cut) if cut else "-", flush=True)
PY
	track_pid $!
	trickler[$1]=$!
}
declare -A trickler=()

# probe NAME URL: one GET within 5 s while NAME trickles; its status and
# time, "200 0.004".
probe()
{
	local name=$1
	wait_until 10 'grep -q connected "$name.out"' || fail "$1: $(cat "$1.out")"
	sleep 1.5
	console_curl --max-time 5 -o /dev/null -w '%{http_code} %{time_total}' "$2" || true
}

# ends NAME CUT LATEST: NAME's trickles ended; CUT of them were cut by
# the server, the last within LATEST s.
ends()
{
	local result
	wait "${trickler[$1]}" || true
	untrack_pid "${trickler[$1]}"
	result=$(tail -n 1 "$1.out")
	echo "figure: $1: $result (cut, and the last of them at s)"
	assert_eq "$2" "${result%% *}" "$1: trickling clients cut by the server"
	assert_le "${result#* }" "$3" "$1: s until the last was cut"
}

for from in 127.0.0.2 spread; do
	trickle "metrics-$from" "$mport" 16 "$from" /healthz 14
	trickle "console-$from" "$port" 128 "$from" /login 18
	answer=$(probe "metrics-$from" "http://127.0.0.1:$mport/healthz")
	echo "figure: /healthz with 16 trickling clients ($from): $answer"
	assert_eq 200 "${answer%% *}" "/healthz with 16 trickling clients ($from)"
	answer=$(probe "console-$from" "$CONSOLE/login")
	echo "figure: /login with 128 trickling clients ($from): $answer"
	assert_eq 200 "${answer%% *}" "/login with 128 trickling clients ($from)"
	ends "metrics-$from" 16 8
	ends "console-$from" 128 13
done
grep -q 'metrics: cut [0-9]* clients whose request took longer than 5s' rowq.log ||
    fail "the metrics listener's cuts are not logged"
grep -q 'console: cut [0-9]* clients whose request took longer than 10s' rowq.log ||
    fail "the console's cuts are not logged"
