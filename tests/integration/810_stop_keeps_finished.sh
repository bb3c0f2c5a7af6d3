#!/usr/bin/env bash
# A stop or a reload while the last row of a batch outlives stop_timeout:
# that row's handler is given up on and the row goes back unchanged, but
# the rows of the same batch whose handlers had already succeeded are
# finished and committed, and never run again.
#   stop:   SIGTERM, batch 3, done without :output (ok rows finished in
#           bulk at the end of the turn); then a drain finds only the
#           aborted row.
#   reload: SIGHUP, batch 3, done with :output (each ok row finished on
#           its own); the new generation's worker finds only the aborted
#           row.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
trace=$ROWQ_TEST_TMP/trace
: >"$trace"

sql "CREATE TABLE job (
    id INT NOT NULL PRIMARY KEY,
    sleep_ms INT NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    output TEXT NULL,
    INDEX (status, id)
) ENGINE=InnoDB"

# config FILE DONE_EXTRA: DONE_EXTRA goes into done's SET.
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 1s
queues:
  job:
    workers: 1
    batch: 3
    select: SELECT id, sleep_ms, attempts FROM job WHERE status = 'waiting'
            ORDER BY id
    exec: [$HANDLERS/trace, $trace, "{sleep_ms}"]
    timeout: 60s
    idle: 200ms
    done: UPDATE job SET status = 'done', attempts = attempts + 1,
          done_count = done_count + 1$2 WHERE id = :id
    retry:
      max_attempts: 3
      attempts_column: attempts
      update: UPDATE job SET attempts = attempts + 1 WHERE id = :id
    failed: UPDATE job SET status = 'failed', attempts = attempts + 1
            WHERE id = :id
YAML
}

starts()
{
	grep -c "^start $1 " "$trace" || true
}

# Rows 1 and 2 succeed at once; row 3 takes 30 s.
rows()
{
	: >"$trace"
	sql "DELETE FROM job; INSERT INTO job (id, sleep_ms) VALUES
	    (1, 50), (2, 50), (3, 30000)"
}

# after_abort PHASE: rows 1 and 2 done once, row 3 as it was.
after_abort()
{
	assert_eq "1 done 1 1|2 done 1 1|3 waiting 0 0" \
	    "$(sql "SELECT CONCAT_WS(' ', id, status, attempts, done_count) FROM job ORDER BY id" | paste -sd '|')" \
	    "$1: rows after row 3 was given up on (id status attempts done_count)"
}

# ---- stop ----
config bulk.yaml ""
rows
rowq_start bulk.yaml stop.log
on_exit '[ $? -eq 0 ] || { echo "--- stop.log"; cat "$ROWQ_TEST_TMP/stop.log"; echo "--- trace"; cat "$ROWQ_TEST_TMP/trace"; }'
wait_until 10 'grep -q "^start 3 " "$trace"' || fail "stop: row 3 never started"
assert_eq "1 1" "$(starts 1) $(starts 2)" "stop: runs of rows 1 and 2 before the stop"
start=$(now_us)
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || true
untrack_pid "$ROWQ_PID"
# stop_timeout 1s, then SIGQUIT and its grace.
assert_le $(( ($(now_us) - start) / 1000 )) 4500 "stop: ms to stop"
after_abort stop
# The next start finds only row 3 (quick now).
sql "UPDATE job SET sleep_ms = 50 WHERE id = 3"
timeout 20 "$ROWQ" -c bulk.yaml drain job >drain.log 2>&1 ||
	fail "stop: drain exited $?: $(cat drain.log)"
assert_eq "1 1 2" "$(starts 1) $(starts 2) $(starts 3)" "stop: runs of rows 1, 2 and 3 after a second start"

# ---- reload ----
config output.yaml ", output = :output"
rows
rowq_start output.yaml reload.log
on_exit '[ $? -eq 0 ] || { echo "--- reload.log"; cat "$ROWQ_TEST_TMP/reload.log"; }'
wait_until 10 'grep -q "^start 3 " "$trace"' || fail "reload: row 3 never started"
old=$(children_of "$ROWQ_PID")
kill -HUP "$ROWQ_PID"
wait_until 8 '! kill -0 $old 2>/dev/null' || fail "reload: the old worker $old did not exit"
# The new generation's worker claims what the old one gave back.
wait_until 5 '[ "$(grep -c "^start 3 " "$trace")" = 2 ]' ||
	fail "reload: row 3 not claimed again by the new worker"
sleep 0.5
assert_eq "1 1" "$(starts 1) $(starts 2)" "reload: runs of rows 1 and 2"
assert_eq "1 done 1 1|2 done 1 1" \
    "$(sql "SELECT CONCAT_WS(' ', id, status, attempts, done_count) FROM job WHERE id < 3 ORDER BY id" | paste -sd '|')" \
    "reload: rows 1 and 2 (id status attempts done_count)"
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || true
untrack_pid "$ROWQ_PID"
after_abort reload
