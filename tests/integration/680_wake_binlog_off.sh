#!/usr/bin/env bash
# wake: binlog on a server without a binary log (the run's shared one):
# check says so, warns and passes; the daemon logs the fallback once,
# status and metrics say binlog-fallback, and the queue works by polling
# (idle: 1s).  POST /wake/QUEUE on the metrics listener wakes a queue
# that polls every 30 s at once (202), 404 for an unknown queue, 405 for
# another method.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/wake.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "CREATE TABLE later LIKE email"
log=$ROWQ_TEST_TMP/trace
: >"$log"
port=$(free_port)
WORKERS=2 IDLE=1s email_config off.yaml "[$HANDLERS/trace, $log, \"0\"]" "wake: binlog"
sed -i "s|^stop_timeout:|status_socket: $ROWQ_TEST_TMP/off.sock\nmetrics: 127.0.0.1:$port\n&|" off.yaml
# A second queue, on its own table, that only a wake brings in time.
sed -n '/^  email:/,$p' off.yaml | sed -e 's/^  email:/  later:/' \
    -e 's/FROM email/FROM later/; s/UPDATE email/UPDATE later/' \
    -e 's/idle: 1s/idle: 30s/' -e '/wake: binlog/d' \
    -e "s|$log|$log.later|" >>off.yaml
: >"$log.later"

out=$("$ROWQ" -c off.yaml check 2>&1) || fail "check refused: $out"
assert_match "queues.email.wake: binlog: cannot follow the binary log: the binary log is off \(log_bin\).*falls back to polling" "$out"

rowq_start off.yaml off.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/off.log"'
wait_until 10 '[ "$(metric "$port" rowq_workers email)" = 2 ]' || fail "no metrics"
sleep 1.5
sql "INSERT INTO email (recipient, subject, body) VALUES ('a@x', 's', '')"
wait_until 4 'grep -q "^start" "$log"' || fail "the row was not picked up by polling"
assert_eq 1 "$(grep -c "binlog queues are polled" off.log)" "fallback lines logged"
"$ROWQ" -c off.yaml status >status.out || fail "status: $(cat status.out)"
assert_match "email wake: binlog-fallback \(polled until" "$(cat status.out)"
python3 - "$port" <<'PY' || fail "rowq_wake_mode"
import sys, urllib.request
b = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1]).read().decode()
want = {'rowq_wake_mode{queue="email",mode="binlog-fallback"} 1',
        'rowq_wake_mode{queue="later",mode="poll"} 1'}
missing = want - set(b.splitlines())
assert not missing, missing
PY

assert_eq 404 "$(http POST "http://127.0.0.1:$port/wake/nosuch")" "POST /wake/nosuch"
assert_eq 405 "$(http GET "http://127.0.0.1:$port/wake/later")" "GET /wake/later"
sql "INSERT INTO later (recipient, subject, body) VALUES ('a@x', 's', '')"
t0=$(now_us)
assert_eq 202 "$(http POST "http://127.0.0.1:$port/wake/later")" "POST /wake/later"
wait_until 6 'grep -q "^start" "$log.later"' || fail "POST /wake/later did not wake the queue"
took=$(( ($(awk '$1 == "start" { print $6; exit }' "$log.later") - t0) / 1000 ))
echo "picked up in ${took} ms after POST /wake/later"
assert_le "$took" 5000 "ms from POST /wake/later to the handler"
