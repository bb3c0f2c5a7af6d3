#!/usr/bin/env bash
# Lease mode at batch 10: the batch's ok rows are finished together at its
# end, each by its own lease.  A lease stolen from one row of the batch
# while the batch is being handled leaves that row alone unrecorded (and
# said, by its key); the batch's other rows are done, once each, and the
# daemon counts 9 done.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/handled
: >"$log"

sql "CREATE TABLE job (
    id BIGINT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO job (id) SELECT seq FROM $(seq_rows 10)"
cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $ROWQ_TEST_TMP/rowq.sock
queues:
  job:
    workers: 1
    batch: 10
    select: SELECT id FROM job
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    pipe: [$HANDLERS/pipefake, sleep, "300", $log]
    timeout: 10s
    idle: 200ms
    lease:
      duration: 60s
      claim: UPDATE job SET lease = :lease,
             leased_until = UNIX_TIMESTAMP() + 60 WHERE id = :id
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE job SET status = 'failed'
            WHERE id = :id AND lease = :lease
YAML
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || { echo "--- rowq.log"; cat "$ROWQ_TEST_TMP/rowq.log"; }'
# One claim leased all ten; row 1 is handled: take row 8's lease.
wait_until 10 '[ -s "$log" ]' || fail "no row handled"
assert_eq 10 "$(sql_value "SELECT COUNT(*) FROM job WHERE lease IS NOT NULL")" "rows leased by the first claim"
sql "UPDATE job SET lease = 'thief' WHERE id = 8"
wait_until 20 'grep -q "lease was lost" rowq.log' || fail "the lost lease was not said"
wait_until 5 '[ "$(sql_value "SELECT COUNT(*) FROM job WHERE status = '"'done'"'")" = 9 ]' ||
	fail "the batch's other rows not done: $(sql "SELECT id, status, lease FROM job")"
assert_eq "waiting thief 0" "$(sql_value "SELECT CONCAT_WS(' ', status, lease, done_count) FROM job WHERE id = 8")" "the stolen row"
assert_eq "9 1" "$(sql_value "SELECT CONCAT_WS(' ', COUNT(*), MAX(done_count)) FROM job WHERE id <> 8 AND status = 'done' AND done_count = 1")" "the batch's other rows, done once"
assert_eq 10 "$(wc -l <"$log")" "handler runs"
assert_match "job/1: row 8: .*queues.job.done changed no row for key 8: the lease was lost" "$(cat rowq.log)" "the lost row named"
assert_eq 1 "$(grep -c 'changed no row' rowq.log)" "rows said lost"
# The daemon counts what was recorded: 9 done.
counters()
{
	python3 -c 'import json, sys
live = json.load(sys.stdin)["queues"][0]["daemon"]
print(live["done"], live["retried"], live["failed"])'
}
wait_until 5 '[ "$("$ROWQ" -c rowq.yaml status --json 2>/dev/null | counters 2>/dev/null)" = "9 0 0" ]' ||
	fail "counters: $("$ROWQ" -c rowq.yaml status --json 2>&1 | counters 2>&1)"
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"
