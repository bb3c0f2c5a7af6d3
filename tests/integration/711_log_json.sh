#!/usr/bin/env bash
# log_format: json: each line of `rowq run` is one JSON object with the
# fields the journal gets (MESSAGE, PRIORITY, QUEUE, WORKER, ROW_KEY,
# ATTEMPT, OUTCOME, DURATION_USEC, GENERATION, HOST, TRACE_ID), so that
# what `journalctl -u rowq QUEUE=email OUTCOME=failed` finds under systemd
# a JSON filter finds here; the journal's own field list is unit-tested
# (tests/unit/check_log.c).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "ALTER TABLE email ADD COLUMN trace VARCHAR(64) NULL"
sql "INSERT INTO email (id, recipient, subject, body, trace)
    SELECT seq, 'r', 's', '', IF(seq = 3,
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', NULL)
    FROM $(seq_rows 6)"
cat >handle <<'SH'
#!/bin/bash
cat >/dev/null
case $ROWQ_KEY in
1) exit 65 ;;
3) [ "$ROWQ_ATTEMPT" -ge 2 ] || { echo "try again" >&2; exit 3; } ;;
esac
exit 0
SH
chmod +x handle
email_config rowq.yaml "[$ROWQ_TEST_TMP/handle]" "traceparent_column: trace"
sed -i "s/SELECT id, recipient, subject, attempts FROM email/SELECT id, recipient, subject, attempts, trace FROM email/" rowq.yaml
sed -i "s|^queues:|log_format: json\nqueues:|" rowq.yaml
"$ROWQ" -c rowq.yaml run >out.log 2>err.log &
ROWQ_PID=$!
track_pid "$ROWQ_PID"
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/err.log"'
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'waiting'"'")" = 0 ]' ||
    fail "rows still waiting"
kill -TERM "$ROWQ_PID"; wait "$ROWQ_PID" || fail "rowq exited with $?"; untrack_pid "$ROWQ_PID"

python3 - err.log "$ROWQ_TEST_SOCKET" <<'PY' || fail "the JSON log: $(cat err.log)"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
assert lines, "no lines"
recs = [json.loads(l) for l in lines]          # every line is one object
for r in recs:
    assert set(r) >= {"TIMESTAMP", "PRIORITY", "MESSAGE", "SYSLOG_IDENTIFIER"}, r
    assert r["TIMESTAMP"].endswith("Z") and isinstance(r["PRIORITY"], int), r
    assert set(r) <= {"TIMESTAMP", "PRIORITY", "MESSAGE", "SYSLOG_IDENTIFIER",
        "QUEUE", "WORKER", "ROW_KEY", "KEY", "ATTEMPT", "OUTCOME",
        "DURATION_USEC", "GENERATION", "HOST", "TRACE_ID"}, r
def find(**want):
    return [r for r in recs if all(r.get(k) == v for k, v in want.items())]
# What journalctl QUEUE=email OUTCOME=failed would find: row 1, once.
failed = find(QUEUE="email", OUTCOME="failed")
assert [r["ROW_KEY"] for r in failed] == ["1"], failed
f = failed[0]
assert f["ATTEMPT"] == 1 and f["PRIORITY"] == 3 and f["GENERATION"] == 1, f
assert isinstance(f["WORKER"], int) and f["DURATION_USEC"] >= 0, f
assert f["HOST"] == sys.argv[2], f
assert "failed permanently on try 1" in f["MESSAGE"], f
# Row 3's retry carries its trace id; row 1's line has none.
retry = find(ROW_KEY="3", OUTCOME="retry")
assert len(retry) == 1 and retry[0]["TRACE_ID"] == "4bf92f3577b34da6a3ce929d0e0e4736", retry
assert "TRACE_ID" not in f, f
# Lines not about a row carry no row fields.
started = [r for r in recs if "started" in r["MESSAGE"] and "worker(s)" in r["MESSAGE"]]
assert started and "ROW_KEY" not in started[0] and "OUTCOME" not in started[0], started
# The outcome is one line's: the lines after the failure do not carry it.
outcomes = [r for r in recs if "OUTCOME" in r]
assert len(outcomes) == 2, outcomes
print("%d JSON lines; failed: %s; retry: %s" % (len(recs), f["MESSAGE"], retry[0]["MESSAGE"]))
PY
