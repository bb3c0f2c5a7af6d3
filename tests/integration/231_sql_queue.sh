#!/usr/bin/env bash
# handler: none, queues whose work is their done: list, with no process
# started: rows claimed and finished in one transaction per batch.
# 1. Delayed rows moved back to ready as they come due (20,000 rows,
#    ROWS; batch 100), by 2 daemons of 2 workers, one of them killed -9
#    (supervisor and workers) in the middle: every due row moved exactly
#    once (one ready row, one log row), the rows not due left alone, and
#    no worker ever had a child process.
# 2. The same as a drain: its summary counts the rows done; a row whose
#    done the server refuses is marked by failed:, its batch going on;
#    a rate limit holds it back; batch 1 against 100; a done of one
#    statement, in one execute for a batch; a daemon's metrics count the rows; a pause
#    stops the moves, a resume starts them.
# 3. A dead worker's claims recovered: a lease queue whose claim moves a
#    job from ready to claimed, its daemon killed -9 while its handlers
#    run; a queue with handler: none moves the expired claims back to
#    ready, and the other daemon finishes every job, each finished once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=${ROWS:-20000}
log=$ROWQ_TEST_TMP/handled
: >"$log"

sql "CREATE TABLE delayed_jobs (
    id BIGINT NOT NULL PRIMARY KEY,
    run_at BIGINT NOT NULL,
    INDEX (run_at, id)
) ENGINE=InnoDB;
CREATE TABLE ready_jobs (
    id BIGINT NOT NULL PRIMARY KEY
) ENGINE=InnoDB;
CREATE TABLE moves (
    n BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    id BIGINT NOT NULL
) ENGINE=InnoDB;
CREATE TABLE jobs (
    id BIGINT NOT NULL PRIMARY KEY,
    claims INT NOT NULL DEFAULT 0,
    recovered INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    finished_at DATETIME NULL
) ENGINE=InnoDB;
CREATE TABLE ready_executions (
    job_id BIGINT NOT NULL PRIMARY KEY
) ENGINE=InnoDB;
CREATE TABLE claimed_executions (
    job_id BIGINT NOT NULL PRIMARY KEY,
    lease CHAR(32) NOT NULL,
    expires_at BIGINT NOT NULL,
    INDEX (expires_at, job_id)
) ENGINE=InnoDB"

# due_config FILE [EXTRA...]: a daemon with the due queue.
due_config()
{
	local file=$1 d
	d=$(basename "$file" .yaml)
	shift
	cat >"$file" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $ROWQ_TEST_TMP/$d.sock
queues:
  due:
    handler: none
    workers: 2
    batch: 100
    select: SELECT id FROM delayed_jobs WHERE run_at <= UNIX_TIMESTAMP()
            ORDER BY run_at, id
    done:
      - INSERT INTO ready_jobs (id) SELECT id FROM delayed_jobs WHERE id = :id
      - INSERT INTO moves (id) VALUES (:id)
      - DELETE FROM delayed_jobs WHERE id = :id
    idle: 100ms
YAML
	printf '%s\n' "$@" >>"$file"
}

# children: the processes under each daemon's workers, whatever they are.
children()
{
	local p
	for p in "$@"; do
		handlers_of "$p"
	done
}

on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/*.log'
due_config a.yaml
due_config b.yaml
"$ROWQ" -c a.yaml check --strict >check.out 2>&1 || fail "check: $(cat check.out)"

# ---- 1. delayed rows come due, two daemons, a kill -9 ----
# Half due now, the rest over the next 4 s, and 100 far in the future.
sql "INSERT INTO delayed_jobs (id, run_at)
    SELECT seq, UNIX_TIMESTAMP() + IF(seq % 2 = 0, -10, seq % 5)
    FROM $(seq_rows "$rows");
    INSERT INTO delayed_jobs (id, run_at)
    SELECT $rows + seq, UNIX_TIMESTAMP() + 86400 FROM $(seq_rows 100)"
rowq_start a.yaml a.log; A=$ROWQ_PID
rowq_start b.yaml b.log; B=$ROWQ_PID
wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM moves")" -ge $((rows / 10)) ]' ||
	fail "no rows moved: $(tail a.log b.log)"
a_workers=$(workers_of "$A" | tr '\n' ' ')
# shellcheck disable=SC2086 # a list of pids
kill -KILL "$A" $a_workers
untrack_pid "$A"
wait "$A" 2>/dev/null || true
moved_at_kill=$(sql_value "SELECT COUNT(*) FROM moves")
echo "$moved_at_kill rows moved at the kill -9"
looks=0
start=$(now_us)
while [ "$(sql_value "SELECT COUNT(*) FROM ready_jobs")" != "$rows" ]; do
	[ -z "$(children "$B")" ] || fail "a worker started a process: $(children "$B")"
	looks=$((looks + 1))
	[ $(( ($(now_us) - start) / 1000000 )) -lt 120 ] ||
		fail "not every due row moved in 120 s: $(sql_value "SELECT COUNT(*) FROM ready_jobs")"
	sleep 0.2
done
assert_ge "$looks" 1 "looks for processes while rows moved"
assert_le "$moved_at_kill" $((rows - 1)) "rows moved at the kill (some left for after)"
assert_eq "$rows $rows $rows" "$(sql_value "SELECT CONCAT((SELECT COUNT(*) FROM ready_jobs), ' ', (SELECT COUNT(*) FROM moves), ' ', (SELECT COUNT(DISTINCT id) FROM moves))")" "ready rows, moves, rows moved"
assert_eq "100 0" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(id <= $rows)) FROM delayed_jobs")" "rows not due, left"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM ready_jobs r JOIN delayed_jobs d USING (id)")" "rows both delayed and ready"
stop_rowq "$B"

# ---- 2. a drain counts them; a daemon's metrics; pause and resume ----
sql "DELETE FROM delayed_jobs; DELETE FROM ready_jobs; DELETE FROM moves;
    INSERT INTO delayed_jobs (id, run_at)
    SELECT seq, UNIX_TIMESTAMP() - 1 FROM $(seq_rows 1000)"
timeout 60 "$ROWQ" -c a.yaml drain due >drain.out 2>drain.err ||
	fail "drain: $(cat drain.err)"
assert_match "^due: 1000 done, 0 retried, 0 failed, 0 errors" "$(cat drain.out)" "the drain's summary"
assert_eq "1000 1000" "$(sql_value "SELECT CONCAT((SELECT COUNT(*) FROM ready_jobs), ' ', (SELECT COUNT(*) FROM moves))")" "drain: ready rows, moves"

# A row whose done the server refuses (its id already ready: a duplicate
# key) is marked by failed:, and the rest of its batch goes on.
sql "DELETE FROM delayed_jobs; DELETE FROM ready_jobs; DELETE FROM moves;
    INSERT INTO delayed_jobs (id, run_at)
    SELECT seq, UNIX_TIMESTAMP() - 1 FROM $(seq_rows 100);
    INSERT INTO ready_jobs (id) VALUES (7)"
due_config f.yaml "    failed: UPDATE delayed_jobs SET run_at = 4000000000 WHERE id = :id"
status=0
timeout 60 "$ROWQ" -c f.yaml drain due >drain.out 2>drain.err || status=$?
assert_match "^due: 99 done, 0 retried, 1 failed" "$(cat drain.out)" "the drain's summary with a refused row"
assert_match "f.yaml:[0-9]+: queues.due.done\\[0\\] for key 7: Duplicate entry '7'" "$(cat drain.err)" "the refused statement"
assert_eq "4000000000 100 99" "$(sql_value "SELECT CONCAT((SELECT run_at FROM delayed_jobs WHERE id = 7), ' ', (SELECT COUNT(*) FROM ready_jobs), ' ', (SELECT COUNT(*) FROM moves))")" "row 7 failed, the others moved"

# limit: a rate bounds the rows moved as it bounds a handler's starts:
# 300 rows at 100/1s, burst 10, take 2.9 s at least.
sql "DELETE FROM delayed_jobs; DELETE FROM ready_jobs; DELETE FROM moves;
    INSERT INTO delayed_jobs (id, run_at)
    SELECT seq, UNIX_TIMESTAMP() - 1 FROM $(seq_rows 300)"
due_config l.yaml "    limit: {rate: 100/1s, burst: 10}"
t0=$(now_us)
timeout 60 "$ROWQ" -c l.yaml drain due >drain.out 2>drain.err ||
	fail "drain with a rate: $(cat drain.err)"
took=$(( ($(now_us) - t0) / 1000 ))
assert_match "^due: 300 done" "$(cat drain.out)" "the drain's summary with a rate"
assert_ge "$took" 2900 "ms to move 300 rows at 100/1s, burst 10"
figure "handler none, 300 rows at limit.rate 100/1s: ms" "$took"

# What a batch saves: the same 2,000 rows drained at batch 1 and 100, one
# worker, in one run (a loaded machine: compared with each other only).
for b in 1 100; do
	sql "DELETE FROM delayed_jobs; DELETE FROM ready_jobs; DELETE FROM moves;
	    INSERT INTO delayed_jobs (id, run_at)
	    SELECT seq, UNIX_TIMESTAMP() - 1 FROM $(seq_rows 2000)"
	due_config r$b.yaml
	sed -i "s/^    workers: 2$/    workers: 1/; s/^    batch: 100$/    batch: $b/" r$b.yaml
	t0=$(now_us)
	timeout 120 "$ROWQ" -c r$b.yaml drain due >drain.out 2>drain.err ||
		fail "drain at batch $b: $(cat drain.err)"
	took=$(( $(now_us) - t0 ))
	assert_eq "2000 2000" "$(sql_value "SELECT CONCAT((SELECT COUNT(*) FROM ready_jobs), ' ', (SELECT COUNT(*) FROM moves))")" "batch $b: ready rows, moves"
	figure "handler none, batch $b: rows a second, 1 worker" \
	    "$(awk -v t="$took" 'BEGIN { printf "%.0f\n", 2000 / (t / 1e6) }')"
done

# A done of one statement runs for a batch's rows in one execute where the
# server can (MariaDB's bulk): 5,000 rows of one table made ready, each
# once, by 2 workers at batch 100.
sql "CREATE TABLE one_table (
    id BIGINT NOT NULL PRIMARY KEY,
    state ENUM('scheduled', 'ready') NOT NULL DEFAULT 'scheduled',
    run_at BIGINT NOT NULL,
    moved INT NOT NULL DEFAULT 0,
    INDEX (state, run_at, id)
) ENGINE=InnoDB;
INSERT INTO one_table (id, run_at)
SELECT seq, UNIX_TIMESTAMP() - 1 FROM $(seq_rows 5000)"
due_config o.yaml
sed -i "/^    select:/,\$d" o.yaml
cat >>o.yaml <<'YAML'
    select: SELECT id FROM one_table
            WHERE state = 'scheduled' AND run_at <= UNIX_TIMESTAMP()
            ORDER BY run_at, id
    done: UPDATE one_table SET state = 'ready', moved = moved + 1
          WHERE id = :id AND state = 'scheduled'
YAML
t0=$(now_us)
timeout 120 "$ROWQ" -c o.yaml drain due >drain.out 2>drain.err ||
	fail "drain of one table: $(cat drain.err)"
took=$(( $(now_us) - t0 ))
assert_match "^due: 5000 done, 0 retried, 0 failed, 0 errors" "$(cat drain.out)" "one table: the drain's summary"
assert_eq "5000 5000 0" "$(sql_value "SELECT CONCAT(SUM(state = 'ready'), ' ', SUM(moved), ' ', SUM(moved <> 1)) FROM one_table")" "one table: rows ready, moves, rows moved other than once"
figure "handler none, one statement, batch 100: rows a second, 2 workers" \
    "$(awk -v t="$took" 'BEGIN { printf "%.0f\n", 5000 / (t / 1e6) }')"

port=$(free_port)
due_config m.yaml "metrics: 127.0.0.1:$port"
sed -i "s/^    workers: 2$/    workers: 1/" m.yaml
sql "DELETE FROM delayed_jobs; DELETE FROM ready_jobs; DELETE FROM moves;
    INSERT INTO delayed_jobs (id, run_at)
    SELECT seq, UNIX_TIMESTAMP() - 1 FROM $(seq_rows 500)"
rowq_start m.yaml m.log; M=$ROWQ_PID
wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM ready_jobs")" = 500 ]' ||
	fail "the daemon did not move 500 rows"
scrape() { curl -s "http://127.0.0.1:$port/metrics"; }
wait_until 10 'scrape | grep -qx "rowq_rows_done_total{queue=\"due\"} 500"' ||
	fail "done counter: $(scrape | grep rows_done)"
assert_eq "" "$(scrape | grep '^rowq_handler_duration_seconds_count' | grep -v ' 0$' || true)" "handler durations counted"
"$ROWQ" -c m.yaml status >status.out 2>&1 || true
assert_match "due" "$(cat status.out)" "status names the queue"
"$ROWQ" -c m.yaml pause due >out 2>&1 || fail "pause: $(cat out)"
sleep 2.5
sql "INSERT INTO delayed_jobs (id, run_at)
    SELECT 1000 + seq, UNIX_TIMESTAMP() - 1 FROM $(seq_rows 50)"
sleep 2
assert_eq 500 "$(sql_value "SELECT COUNT(*) FROM ready_jobs")" "rows moved while paused"
"$ROWQ" -c m.yaml resume due >out 2>&1 || fail "resume: $(cat out)"
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM ready_jobs")" = 550 ]' ||
	fail "the rows did not move after the resume"
stop_rowq "$M"

# ---- 3. a dead worker's claims recovered ----
# lease_config FILE: the jobs queue (lease, a claim that moves the job to
# claimed_executions) and the recover queue (handler: none).
lease_config()
{
	local d
	d=$(basename "$1" .yaml)
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $ROWQ_TEST_TMP/$d.sock
queues:
  jobs:
    workers: 3
    select: SELECT job_id AS id FROM ready_executions ORDER BY job_id
    pipe: [$HANDLERS/pipefake, sleep, "300", $log]
    idle: 100ms
    lease:
      duration: 3s
      claim:
        - INSERT INTO claimed_executions (job_id, lease, expires_at)
          SELECT job_id, :lease, UNIX_TIMESTAMP() + :duration
          FROM ready_executions WHERE job_id = :id
        - DELETE FROM ready_executions WHERE job_id = :id
        - UPDATE jobs SET claims = claims + 1 WHERE id = :id
      renew: UPDATE claimed_executions SET expires_at = UNIX_TIMESTAMP() + :duration
             WHERE job_id = :id AND lease = :lease
    done:
      - DELETE FROM claimed_executions WHERE job_id = :id AND lease = :lease
      - UPDATE jobs SET done_count = done_count + 1, finished_at = NOW()
        WHERE id = :id
    failed:
      - DELETE FROM claimed_executions WHERE job_id = :id AND lease = :lease
      - UPDATE jobs SET finished_at = NOW() WHERE id = :id
  recover:
    handler: none
    batch: 10
    select: SELECT job_id FROM claimed_executions
            WHERE expires_at < UNIX_TIMESTAMP() ORDER BY expires_at, job_id
    done:
      - INSERT INTO ready_executions (job_id) SELECT job_id
        FROM claimed_executions WHERE job_id = :job_id
        AND expires_at < UNIX_TIMESTAMP()
      - DELETE FROM claimed_executions WHERE job_id = :job_id
      - UPDATE jobs SET recovered = recovered + 1 WHERE id = :job_id
    idle: 200ms
YAML
}
lease_config c.yaml
lease_config d.yaml
"$ROWQ" -c c.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
: >"$log"
sql "INSERT INTO jobs (id) SELECT seq FROM $(seq_rows 60);
    INSERT INTO ready_executions (job_id) SELECT id FROM jobs"
rowq_start c.yaml c.log; C=$ROWQ_PID
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM claimed_executions")" -ge 3 ]' ||
	fail "daemon c claimed nothing"
c_workers=$(workers_of "$C" | tr '\n' ' ')
# shellcheck disable=SC2086 # a list of pids
kill -KILL "$C" $c_workers
untrack_pid "$C"
wait "$C" 2>/dev/null || true
orphans=$(sql_value "SELECT COUNT(*) FROM claimed_executions")
echo "$orphans claims left by the killed daemon"
assert_ge "$orphans" 1 "claims the killed daemon held"
rowq_start d.yaml d.log; D=$ROWQ_PID
wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM jobs WHERE finished_at IS NOT NULL")" = 60 ]' ||
	fail "not every job finished: $(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(finished_at IS NULL)) FROM jobs")"
stop_rowq "$D"
assert_eq "60 0" "$(sql_value "SELECT CONCAT(SUM(done_count), ' ', SUM(done_count <> 1)) FROM jobs")" "done statements, jobs finished other than once"
assert_eq "$orphans" "$(sql_value "SELECT SUM(recovered) FROM jobs")" "claims recovered"
assert_eq "$orphans" "$(sql_value "SELECT COUNT(*) FROM jobs WHERE claims = 2 AND recovered = 1")" "jobs claimed twice, recovered once"
assert_eq "0 0" "$(sql_value "SELECT CONCAT((SELECT COUNT(*) FROM ready_executions), ' ', (SELECT COUNT(*) FROM claimed_executions))")" "ready and claimed rows left"
