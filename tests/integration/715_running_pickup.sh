#!/usr/bin/env bash
# What an on-call engineer asks, answered from outside:
# - /metrics passes `promtool check metrics`, with the handler histogram
#   by outcome (done, retry, failed, timeout) and buckets up to hours;
# - ready_at: created_at gives rowq_pickup_delay_seconds: rows queued 30 s
#   before the daemon started show 30 s or a little more, by the server's
#   clock;
# - a handler hung on a row shows in rowq_in_progress_oldest_seconds, and
#   with alert_running: 2s `rowq status` exits 1 naming the row and the
#   worker, long before the row's timeout.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "ALTER TABLE email ADD COLUMN created_at DATETIME NOT NULL DEFAULT NOW()"
sql "INSERT INTO email (id, recipient, subject, body, created_at)
    SELECT seq, 'r', 's', '', NOW() - INTERVAL 30 SECOND FROM $(seq_rows 6)"
port=$(free_port)
cat >handle <<'SH'
#!/bin/bash
cat >/dev/null
case $ROWQ_KEY in
1) exit 65 ;;
2) [ "$ROWQ_ATTEMPT" -ge 2 ] || exit 3 ;;
6) exec sleep 60 ;;
esac
exit 0
SH
chmod +x handle
# Row 6 hangs: alert_running (2 s) sees it before its timeout (5 s).
STOP_TIMEOUT=2s TIMEOUT=5s email_config rowq.yaml "[$ROWQ_TEST_TMP/handle]" \
    "ready_at: created_at" "alert_running: 2s"
sed -i "s/SELECT id, recipient, subject, attempts FROM email/SELECT id, recipient, subject, attempts, created_at FROM email/" rowq.yaml
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics: 127.0.0.1:$port\nqueues:|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'

# Row 6 hangs: within 3 s, status says so, naming the row and the worker.
wait_until 15 '! "$ROWQ" -c rowq.yaml status >status.out 2>&1' ||
    fail "status did not alert on the hung handler: $(cat status.out)"
assert_match 'ALERT email: worker [0-9]+ \(pid [0-9]+\) has run row 6 for [0-9]+s, more than alert_running 2s' \
    "$(cat status.out)" "the alert names the row and the worker"
"$ROWQ" -c rowq.yaml status --json >status.json 2>&1 || true
python3 -c 'import json; q = json.load(open("status.json"))["queues"][0]; assert q["alert_running"] is True and q["alert"] is True, q' ||
    fail "status --json: $(cat status.json)"
metrics() { curl -fs "http://127.0.0.1:$port/metrics"; }
metric() { metrics | awk -v m="$1" '$1 == m { print $2 }'; }
assert_ge "$(metric 'rowq_in_progress_oldest_seconds{queue="email"}')" 2 "rowq_in_progress_oldest_seconds"

# Rows 1 to 5 are final, and row 6's first try timed out.
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE id <= 5 AND status <> '"'waiting'"'")" = 5 ]' ||
    fail "rows 1 to 5 not final"
wait_until 10 '[ "$(metric '"'rowq_handler_duration_seconds_count{queue=\"email\",outcome=\"timeout\"}'"')" -ge 1 ]' ||
    fail "no timeout counted"
metrics >metrics.txt
promtool check metrics <metrics.txt >promtool.out 2>&1 || fail "promtool check metrics: $(cat promtool.out)"
val() { awk -v m="$1" '$1 == m { print $2 }' metrics.txt; }
assert_eq 1 "$(val 'rowq_handler_duration_seconds_count{queue="email",outcome="failed"}')" "handler: failed"
assert_eq 1 "$(val 'rowq_handler_duration_seconds_count{queue="email",outcome="retry"}')" "handler: retry"
assert_eq 4 "$(val 'rowq_handler_duration_seconds_count{queue="email",outcome="done"}')" "handler: done (rows 2 to 5)"
assert_ge "$(val 'rowq_handler_duration_seconds_bucket{queue="email",outcome="timeout",le="10"}')" 1 "handler: timeout, 5 s"
grep -q 'rowq_handler_duration_seconds_bucket{queue="email",outcome="done",le="14400"}' metrics.txt ||
    fail "no bucket of 4 hours: $(grep handler_duration metrics.txt | head -3)"
# Every row was claimed 30 s (and a little) after it was queued.
first=$(val 'rowq_pickup_delay_seconds_count{queue="email"}')
assert_ge "$first" 6 "rows with a pickup delay"
assert_eq 0 "$(val 'rowq_pickup_delay_seconds_bucket{queue="email",le="10"}')" "pickup under 10 s"
assert_ge "$(val 'rowq_pickup_delay_seconds_bucket{queue="email",le="60"}')" 6 "pickup under a minute"
