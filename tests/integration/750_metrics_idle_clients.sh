#!/usr/bin/env bash
# The metrics listener cannot be shut off by clients that connect and
# send nothing, or send half a request and stall: 20 of each, more than
# the listener serves at once, are cut within its connection timeout (5
# s), and /metrics and POST /wake/QUEUE answer while they are still held
# open from the client's side.  A status socket client that never reads
# is cut too, and `rowq status` answers meanwhile.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
port=$(free_port)
email_config rowq.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/log]"
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics: 127.0.0.1:$port\nqueues:|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
wait_until 10 'curl -fs -o /dev/null "http://127.0.0.1:$port/metrics"' ||
    fail "no metrics at 127.0.0.1:$port"

# hold KIND N SECONDS: N connections that say nothing (idle) or half a
# request line (slow), kept open from our side for SECONDS; prints how
# many the server had closed by then.
hold()
{
	python3 - "$port" "$@" <<'PY'
import socket, sys, time
port, kind, n, secs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    if kind == "slow":
        s.sendall(b"GET /metr")
    socks.append(s)
time.sleep(secs)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        if s.recv(1) == b"":
            closed += 1
    except BlockingIOError:
        pass
    except ConnectionError:
        closed += 1
print(closed)
PY
}

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }

for kind in idle slow; do
	hold "$kind" 20 12 >"$kind.closed" &
	holder=$!
	track_pid "$holder"
	sleep 1
	# The listener's slots are full now; within the timeout they free.
	t0=$(now_us)
	assert_eq 200 "$(code "http://127.0.0.1:$port/metrics")" "$kind: GET /metrics with 20 $kind clients held"
	took=$((($(now_us) - t0) / 1000))
	echo "$kind: /metrics answered in $took ms with 20 $kind clients held"
	assert_le "$took" 7000 "$kind: ms to an answer with the slots full"
	assert_eq 202 "$(code -X POST "http://127.0.0.1:$port/wake/email")" "$kind: POST /wake/email"
	wait "$holder"
	untrack_pid "$holder"
	echo "$kind: $(cat "$kind.closed") of 20 cut by the server within 12 s"
	assert_eq 20 "$(cat "$kind.closed")" "$kind clients cut by the server"
done

# A status client that connects and never reads: cut, and the others
# are answered meanwhile.
python3 - "$ROWQ_TEST_TMP/rowq.sock" >never.out <<'PY' &
import socket, sys, time
socks = []
for _ in range(20):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    socks.append(s)
time.sleep(4)
print("held")
PY
never=$!
track_pid "$never"
sleep 1
"$ROWQ" -c rowq.yaml status >status.out 2>&1 || true
assert_match 'email' "$(cat status.out)" "rowq status with 20 silent status clients"
wait "$never"
untrack_pid "$never"
