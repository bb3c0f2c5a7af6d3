#!/usr/bin/env bash
# SIGTERM under load: rowq exits within stop_timeout, and every row is
# either done (exactly once) or still waiting: nothing half-finished.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
rows=2000
email_table $rows
cfg=$ROWQ_TEST_TMP/rowq.yaml
log=$ROWQ_TEST_TMP/handled
WORKERS=4 STOP_TIMEOUT=3s email_config "$cfg" "[$HANDLERS/fake, sleep, \"50\", $log]" "batch: 5"
rowq_start "$cfg" "$ROWQ_TEST_TMP/rowq.log"
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'

wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" -ge 100 ]' ||
	fail "rows are not being done"
workers=$(children_of "$ROWQ_PID")
assert_eq 4 "$(echo "$workers" | wc -l)" "workers running"
start=$(now_us)
kill -TERM "$ROWQ_PID"
status=0
wait "$ROWQ_PID" || status=$?
untrack_pid "$ROWQ_PID"
took=$(( ($(now_us) - start) / 1000 ))
assert_eq 0 "$status" "exit status after SIGTERM"
assert_le "$took" 3000 "ms to stop (stop_timeout 3s)"
for w in $workers; do
	! kill -0 "$w" 2>/dev/null || fail "worker $w outlived rowq"
done

sent=$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'sent'")
assert_eq "$rows" "$(sql_value "SELECT COUNT(*) FROM email WHERE status IN ('sent', 'waiting')")" "rows sent or waiting"
assert_eq "$sent" "$(sql_value "SELECT COALESCE(SUM(done_count), 0) FROM email")" "done statements for $sent sent rows"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'waiting' AND (attempts > 0 OR done_count > 0)")" "waiting rows that were touched"
# Rows handled but rolled back at the stop may be handled again later
# (at least once), but every sent row was handled.
for id in $(sql "SELECT id FROM email WHERE status = 'sent' ORDER BY RAND() LIMIT 20"); do
	grep -q "^$id " "$log" || fail "row $id sent without its handler running"
done
