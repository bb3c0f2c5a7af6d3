#!/usr/bin/env bash
# Lease mode at batch 1 and batch 10, two daemons of three workers each,
# workers killed with kill -9 while rows go through (a row's `done` may
# wait for the next claim at batch 1, or for the batch's end at batch
# 10): every row is done exactly once, the rows of a killed worker come
# back when their leases run out, and no row is tried more often than
# the kills can explain.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/lease.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=300
kills=4

sql "$(lease_job_table)"

# config FILE BATCH LOG
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $1.sock
queues:
  job:
    workers: 3
    batch: $2
    select: SELECT id, attempts FROM job
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    pipe: [$HANDLERS/pipefake, sleep, "20", $3]
    timeout: 10s
    idle: 200ms
    lease:
      duration: 3s
      claim: UPDATE job SET lease = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + 3 WHERE id = :id
      renew: UPDATE job SET leased_until = UNIX_TIMESTAMP() + 3
             WHERE id = :id AND lease = :lease
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE job SET status = 'failed', last_error = :error
            WHERE id = :id AND lease = :lease
YAML
}

done_rows() { sql_value "SELECT COUNT(*) FROM job WHERE status = 'done'"; }

for batch in 1 10; do
	log=$ROWQ_TEST_TMP/handled.$batch
	: >"$log"
	sql "DELETE FROM job; INSERT INTO job (id) SELECT seq FROM $(seq_rows $rows)"
	pids=()
	for d in a b; do
		config "$d$batch.yaml" "$batch" "$log"
		"$ROWQ" -c "$d$batch.yaml" run >"$d$batch.log" 2>&1 &
		pids+=($!)
		track_pid $!
	done
	on_exit '[ $? -eq 0 ] || tail -n 30 "$ROWQ_TEST_TMP"/[ab]*.log'
	# Kill a worker of each daemon in turn while rows are being worked.
	for ((k = 0; k < kills; k++)); do
		pid=${pids[k % 2]}
		wait_until 20 '[ "$(wc -l <"$log")" -ge $(((k + 1) * rows / (kills + 2))) ]' ||
			fail "batch $batch: rows stopped going through: $(wc -l <"$log") handled"
		w=$(a_worker "$pid") || fail "batch $batch: no worker of $pid to kill"
		kill -KILL "$w"
	done
	wait_until 90 '[ "$(done_rows)" = $rows ]' ||
		fail "batch $batch: only $(done_rows) of $rows rows done: $(sql "SELECT id, status, attempts FROM job WHERE status <> 'done' LIMIT 10")"
	for p in "${pids[@]}"; do
		kill -TERM "$p"
		wait "$p" || fail "batch $batch: rowq exited with $?"
		untrack_pid "$p"
	done
	assert_eq "$rows 1 1" "$(sql_value "SELECT CONCAT_WS(' ', SUM(done_count), MIN(done_count), MAX(done_count)) FROM job")" \
	    "batch $batch: done statements that changed a row (sum, min, max)"
	assert_eq $rows "$(cut -d' ' -f1 "$log" | sort -u | wc -l)" "batch $batch: distinct rows handled"
	# A kill leaves at most a batch of leased rows, and at batch 1 the
	# row whose done waited for the next claim: only those come back.
	again=$(sql_value "SELECT SUM(attempts) - COUNT(*) FROM job")
	echo "batch $batch: $again tries beyond the first, $(($(wc -l <"$log") - rows)) handler runs beyond one a row, after $kills kills"
	assert_le "$again" $((kills * (batch + 1))) "batch $batch: tries beyond the first"
	assert_le "$(($(wc -l <"$log") - rows))" $((kills * (batch + 1))) "batch $batch: handler runs beyond one a row"
	assert_le "$(sql_value "SELECT MAX(attempts) FROM job")" $((kills + 1)) "batch $batch: most tries of a row"
	assert_eq $kills "$(cat a$batch.log b$batch.log | grep -c 'died (killed by signal 9')" "batch $batch: deaths logged"
	assert_eq 0 "$(cat a$batch.log b$batch.log | grep -c 'ERROR\|AddressSanitizer\|runtime error' || true)" "batch $batch: errors in the logs"
done
