#!/usr/bin/env bash
# Clients of the status socket that connect, send a request and never
# read, more of them than the daemon serves at once, cost the supervisor
# no time: meanwhile `rowq status` is answered within a second each time,
# a reload is done, and the rows go on being worked.  Held connections
# are cut after a few seconds.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
log=$ROWQ_TEST_TMP/handled
email_config rowq.yaml "[$HANDLERS/fake, append, $log]"
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nqueues:|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || tail -n 40 "$ROWQ_TEST_TMP/rowq.log"'
wait_until 10 '[ -S rowq.sock ]' || fail "no status socket"

# 40 clients that never read, held open for 8 s; each reports whether
# the daemon cut it off (end of file or a reset) before that.
python3 - "$ROWQ_TEST_TMP/rowq.sock" >clients.out 2>&1 <<'PY' &
import socket, sys, time
held = []
for _ in range(40):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    c.connect(sys.argv[1])
    try:
        c.send(b"status\n")
    except (BrokenPipeError, ConnectionResetError):
        pass    # already cut off, to make room for a newer client
    held.append(c)
print("connected", len(held), flush=True)
time.sleep(8)
PY
clients=$!
track_pid "$clients"
wait_until 10 'grep -q connected clients.out' || fail "clients: $(cat clients.out)"

for i in 1 2 3; do
	start=$(now_us)
	"$ROWQ" -c rowq.yaml status --json >status.out 2>&1 || fail "status $i: $(cat status.out)"
	took=$(( ($(now_us) - start) / 1000 ))
	grep -q '"pid":' status.out || fail "status $i: no daemon answer: $(cat status.out)"
	assert_le "$took" 1000 "ms status $i took"
	sql "INSERT INTO email (recipient, subject, body) VALUES ('x', 's$i', '')"
done
kill -HUP "$ROWQ_PID"
wait_until 5 'grep -q "reload: generation 2 started" rowq.log' || fail "no reload while clients hang"
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" = 3 ]' ||
	fail "rows not worked while clients hang"
kill "$clients" 2>/dev/null || true
wait "$clients" 2>/dev/null || true
untrack_pid "$clients"
