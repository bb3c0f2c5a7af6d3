#!/usr/bin/env bash
# rowq status on a queue with a known mix (ready rows, rows locked by a
# test transaction, which status cannot see as such without taking locks
# itself, failed rows, an old row) prints exactly those numbers
# in both formats; alert_age makes it exit 1; the running daemon's
# counters match the rows it was made to process; the metrics endpoint
# serves valid Prometheus text whose counters move.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "ALTER TABLE email ADD COLUMN created_at DATETIME NOT NULL DEFAULT NOW()"
# 10 waiting rows, the oldest queued 2 hours ago; 3 failed.
sql "INSERT INTO email (id, recipient, subject, body, created_at)
    SELECT seq, CONCAT('u', seq, '@example.com'), 's', '',
    NOW() - INTERVAL (11 - seq) * 12 MINUTE FROM $(seq_rows 10)"
sql "INSERT INTO email (id, recipient, subject, body, status)
    SELECT 100 + seq, 'x@example.com', 's', '', 'failed' FROM $(seq_rows 3)"
port=$(free_port)
log=$ROWQ_TEST_TMP/handled
email_config rowq.yaml "[$HANDLERS/fake, append, $log]" \
    "age: created_at" \
    "failed_count: SELECT COUNT(*) FROM email WHERE status = 'failed'" \
    "alert_age: 1h"
sed -i "s/SELECT id, recipient, subject, attempts FROM email/SELECT id, recipient, subject, attempts, created_at FROM email/" rowq.yaml
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics: 127.0.0.1:$port\nqueues:|" rowq.yaml

# Rows 1 and 2 held by another transaction, as a worker would hold them.
fifo=$ROWQ_TEST_TMP/hold
mkfifo "$fifo"
mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot "$ROWQ_TEST_DB" <"$fifo" >/dev/null &
holder=$!
track_pid "$holder"
exec 7>"$fifo"
echo "BEGIN; SELECT id FROM email WHERE id IN (1, 2) FOR UPDATE;" >&7
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_rows_locked > 0")" -ge 1 ]' ||
	fail "the test transaction holds no lock"

status=0
out=$("$ROWQ" -c rowq.yaml status 2>&1) || status=$?
echo "$out"
assert_eq 1 "$status" "exit status with the oldest row past alert_age"
line=$(grep '^email ' <<<"$out")
# Held rows still count as ready: status reads without locking, and only
# a daemon's workers say what is in progress (none answers yet: "-").
assert_match "^email +10 +- +2h! +3 " "$line" "the email line: ready, in progress, oldest, failed rows"
assert_match "daemon: not answering" "$out" "no daemon yet"

json=$("$ROWQ" -c rowq.yaml status --json 2>/dev/null || true)
python3 - "$json" <<'PY' || fail "status --json: $json"
import json, sys
d = json.loads(sys.argv[1])
q = d["queues"][0]
assert q["name"] == "email", q
assert (q["ready"], q["in_progress"], q["failed_rows"]) == (10, None, 3), q
assert 7140 <= q["oldest_age_seconds"] <= 7260, q
assert q["alert"] is True and q["ready_capped"] is False, q
assert q["daemon"] is None and "error" in d["daemon"], d
PY

# Below the alert age: exit 0.
sed -i 's/alert_age: 1h/alert_age: 3h/' rowq.yaml
"$ROWQ" -c rowq.yaml status >/dev/null 2>&1 || fail "status exits $? below alert_age"
echo "COMMIT;" >&7
exec 7>&-
wait "$holder" || true
untrack_pid "$holder"

# The daemon: 10 rows to do, then its counters and the metrics.
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" = 10 ]' ||
	fail "rows not done: $(cat rowq.log)"
wait_until 10 '"$ROWQ" -c rowq.yaml status --json 2>/dev/null | grep -q "\"done\":10"' ||
	fail "daemon counters: $("$ROWQ" -c rowq.yaml status --json 2>&1)"
json=$("$ROWQ" -c rowq.yaml status --json 2>/dev/null)
python3 - "$json" <<'PY' || fail "status --json with the daemon: $json"
import json, sys
d = json.loads(sys.argv[1])
q = d["queues"][0]
assert (q["ready"], q["in_progress"], q["failed_rows"]) == (0, 0, 3), q
assert q["oldest_age_seconds"] is None, q
live = q["daemon"]
assert (live["done"], live["retried"], live["failed"]) == (10, 0, 0), live
assert live["workers"] == 2 and live["rate"] == 10, live
assert len(q["workers"]) == 2, q
assert all(w["state"] == "idle" and w["pid"] > 0 for w in q["workers"]), q
assert d["daemon"]["pid"] > 0, d
PY
table=$("$ROWQ" -c rowq.yaml status 2>&1)
assert_match "email/1 pid [0-9]+: idle" "$table" "worker lines"
[ "$(stat -c %a "$ROWQ_TEST_TMP/rowq.sock")" = 660 ] || fail "status socket mode $(stat -c %a "$ROWQ_TEST_TMP/rowq.sock")"

# Metrics: valid exposition, counters that moved, the probe's gauges.
scrape()
{
	/usr/bin/python3 - "$port" <<'PY'
import sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode()
values = {}
for fam in text_string_to_metric_families(body):
    for s in fam.samples:
        # The handler's durations by outcome: the done rows'.
        if s.labels.get("queue") == "email" and "le" not in s.labels and \
                s.labels.get("outcome", "done") == "done":
            values[s.name] = s.value
for k in sorted(values):
    print(k, int(values[k]) if values[k] == int(values[k]) else values[k])
PY
}
metrics=$(scrape) || fail "metrics do not parse"
echo "$metrics"
assert_match "rowq_rows_done_total 10" "$(grep '^rowq_rows_done_total ' <<<"$metrics")" "done counter"
assert_match "rowq_handler_duration_seconds_count 10" "$(grep '^rowq_handler_duration_seconds_count ' <<<"$metrics")" "handler histogram count"
assert_match "rowq_workers 2" "$(grep '^rowq_workers ' <<<"$metrics")" "workers gauge"
# The probe asks the database every 15 s: the gauges follow.
wait_until 25 'scrape | grep -q "^rowq_ready_rows 0$"' || fail "the probe's gauges never caught up: $(scrape)"
assert_match "rowq_failed_rows 3" "$(scrape | grep '^rowq_failed_rows ')" "failed rows gauge"
assert_eq "" "$(scrape | grep '^rowq_oldest_age_seconds ' || true)" "no oldest age with no row waiting"

# More rows: the counter moves.
sql "UPDATE email SET status = 'waiting' WHERE id <= 5"
wait_until 30 'scrape | grep -q "^rowq_rows_done_total 15$"' || fail "done counter did not move: $(scrape)"

kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"
[ ! -e "$ROWQ_TEST_TMP/rowq.sock" ] || fail "status socket left behind"
