#!/usr/bin/env bash
# prune.delete as a list: a job's log rows, then the job, which a foreign
# key keeps from going first.  Each statement bounded by LIMIT chunk, run
# in order in each chunk's transaction; the run goes on while one of them
# removes a whole chunk.  --dry-run counts what each DELETE would remove,
# together; rowq check prepares each; 2 daemons prune every second (one
# at a time, by the prune lock) while their workers finish new jobs:
# every old job and its log rows go, the recent ones and every waiting
# job stay.  A list in the wrong order fails its first chunk, names the
# statement, and removes nothing.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
old=3000 recent=200 waiting=300

sql "CREATE TABLE job (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    status ENUM('waiting', 'done') NOT NULL DEFAULT 'waiting',
    done_count INT NOT NULL DEFAULT 0,
    finished_at DATETIME NULL,
    INDEX (status, id),
    INDEX (finished_at)
) ENGINE=InnoDB;
CREATE TABLE job_log (
    n BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_id BIGINT NOT NULL,
    FOREIGN KEY (job_id) REFERENCES job (id)
) ENGINE=InnoDB;
INSERT INTO job (status, done_count, finished_at)
SELECT 'done', 1, NOW() - INTERVAL 30 DAY FROM $(seq_rows $old);
INSERT INTO job (status, done_count, finished_at)
SELECT 'done', 1, NOW() FROM $(seq_rows $recent);
INSERT INTO job (status) SELECT 'waiting' FROM $(seq_rows $waiting);
INSERT INTO job_log (job_id) SELECT id FROM job;
INSERT INTO job_log (job_id) SELECT id FROM job;
INSERT INTO job_log (job_id) SELECT id FROM job"

# config FILE FIRST SECOND: a daemon whose prune deletes FIRST then SECOND.
config()
{
	local d
	d=$(basename "$1" .yaml)
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $ROWQ_TEST_TMP/$d.sock
queues:
  job:
    workers: 2
    select: SELECT id FROM job WHERE status = 'waiting' ORDER BY id
    exec: [/bin/true]
    done:
      - UPDATE job SET status = 'done', done_count = done_count + 1,
        finished_at = NOW() WHERE id = :id
      - INSERT INTO job_log (job_id) VALUES (:id)
    failed: UPDATE job SET status = 'done' WHERE id = :id
    idle: 200ms
    prune:
      delete:
        - $2
        - $3
      chunk: 500
      pause: 10ms
      every: 1s
YAML
}
logs="DELETE FROM job_log WHERE job_id IN (SELECT id FROM job WHERE status = 'done' AND finished_at < NOW() - INTERVAL 7 DAY)"
jobs="DELETE FROM job WHERE status = 'done' AND finished_at < NOW() - INTERVAL 7 DAY AND NOT EXISTS (SELECT 1 FROM job_log WHERE job_log.job_id = job.id)"

on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/*.log'
# ---- the wrong order: the job first, which its log rows keep ----
config a.yaml "DELETE FROM job WHERE status = 'done' AND finished_at < NOW() - INTERVAL 7 DAY" "$logs"
"$ROWQ" -c a.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
status=0
"$ROWQ" -c a.yaml prune job >prune.out 2>prune.err || status=$?
assert_eq 1 "$status" "exit status of a prune whose first statement fails"
assert_match "a.yaml:[0-9]+: queues.job.prune.delete\[0\]: .*foreign key constraint fails" "$(cat prune.err)" "the statement named"
assert_eq $(((old + recent + waiting) * 4)) "$(sql_value "SELECT (SELECT COUNT(*) FROM job) + (SELECT COUNT(*) FROM job_log)")" "rows after the failed prune"

# ---- --dry-run, check ----
config a.yaml "$logs" "$jobs"
config b.yaml "$logs" "$jobs"
"$ROWQ" -c a.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
out=$("$ROWQ" -c a.yaml prune job --dry-run) || fail "dry run: $out"
# Each DELETE counted as it would run now: the old jobs still have their
# log rows, so the second counts none of them yet.
assert_eq "job: would remove $((old * 3)) rows in $((old * 3 / 500 + 1)) chunks of 500" "$out" "dry run"
# A statement the server refuses is found by check, named by its place.
config c.yaml "$logs" "DELETE FROM job WHERE no_such_column = 1"
status=0
"$ROWQ" -c c.yaml check >check.out 2>&1 || status=$?
assert_eq 78 "$status" "check's exit status with a bad second statement"
assert_match "c.yaml:[0-9]+: queues.job.prune.delete\[1\]: Unknown column 'no_such_column'" "$(cat check.out)" "check names the statement"

# ---- two daemons prune while their workers work ----
rowq_start a.yaml a.log; A=$ROWQ_PID
rowq_start b.yaml b.log; B=$ROWQ_PID
wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM job WHERE finished_at < NOW() - INTERVAL 7 DAY")" = 0 ] &&
    [ "$(sql_value "SELECT COUNT(*) FROM job WHERE status = '"'waiting'"'")" = 0 ]' ||
	fail "old jobs left: $(sql_value "SELECT COUNT(*) FROM job WHERE finished_at < NOW() - INTERVAL 7 DAY")"
stop_rowq "$A"
stop_rowq "$B"
assert_eq "$((recent + waiting)) $(((recent + waiting) * 3 + waiting))" "$(sql_value "SELECT CONCAT((SELECT COUNT(*) FROM job), ' ', (SELECT COUNT(*) FROM job_log))")" "jobs and log rows left"
assert_eq "$waiting" "$(sql_value "SELECT COUNT(*) FROM job j WHERE (SELECT COUNT(*) FROM job_log l WHERE l.job_id = j.id) = 4")" "jobs worked now, with their new log row"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM job WHERE done_count <> 1")" "jobs done other than once"
pruned=$(cat a.log b.log | sed -n 's/.*pruned \([0-9]*\) rows in.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
assert_eq $((old * 4)) "$pruned" "rows the daemons' prune runs removed"
