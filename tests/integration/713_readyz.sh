#!/usr/bin/env bash
# Health endpoints on the metrics listener: GET /healthz answers 200 while
# the supervisor's loop turns; GET /readyz answers 200 while the database
# answers and every queue that is not paused has all its workers, and
# 503 with the reason in the body otherwise: the server stopped (then
# back), a worker missing, a paused queue not counted against it.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/servers.sh"
server_start h
ROWQ_TEST_SOCKET=$(server_sock h)
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
port=$(free_port)
email_config rowq.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/log]"
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics: 127.0.0.1:$port\nqueues:|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
code() { curl -s -o body -w '%{http_code}' --max-time 5 "http://127.0.0.1:$port$1"; }
wait_until 10 '[ "$(code /readyz)" = 200 ]' || fail "/readyz: $(cat body)"
assert_eq "ready" "$(cat body)" "/readyz body"
assert_eq 200 "$(code /healthz)" "/healthz"
assert_eq 405 "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/readyz")" "POST /readyz"

# The server goes: not ready within 10 s and a little, alive all along.
t0=$(now_us)
server_stop h
wait_until 20 '[ "$(code /readyz)" = 503 ]' || fail "/readyz with the server stopped: $(cat body)"
took=$((($(now_us) - t0) / 1000))
echo "503 after ${took} ms without a server: $(cat body)"
assert_match '^database: no answer for [0-9]+s' "$(cat body)" "/readyz: the reason"
assert_le "$took" 14000 "ms from the server's stop to 503"
assert_eq 200 "$(code /healthz)" "/healthz with the server stopped"
# Back: ready again.
server_restart h
wait_until 30 '[ "$(code /readyz)" = 200 ]' || fail "/readyz with the server back: $(cat body)"

# A worker killed: 503 naming the queue until it is back.
w=$(children_of "$ROWQ_PID" | head -n 1)
[ -n "$w" ] || fail "no worker"
kill -KILL "$w"
wait_until 5 '[ "$(code /readyz)" = 503 ]' || fail "/readyz with a worker dead"
assert_match 'email: 1 of 2 workers running' "$(cat body)" "/readyz: the queue short of a worker"
wait_until 20 '[ "$(code /readyz)" = 200 ]' || fail "/readyz after the restart: $(cat body)"
# Paused: its workers are not missing.
"$ROWQ" -c rowq.yaml pause email >out 2>&1 || fail "pause: $(cat out)"
wait_until 10 '[ -z "$(children_of "$ROWQ_PID")" ]' || fail "workers still running when paused"
assert_eq 200 "$(code /readyz)" "/readyz with the queue paused: $(cat body)"
