#!/usr/bin/env bash
# limit.concurrency is shared by daemons that all have work in lease mode
# too, where a slot is a row of the limit table with a lease of its own:
# 2 daemons of 4 workers each, limit: {concurrency: 3}, leases of 3 s,
# 90 rows of 100 ms, daemon a first (its workers hold the 3 slots when b
# starts).  Counted from each daemon's handlers' own lines: each daemon
# ran at least a fifth of the rows; never more than 3 at once across
# both; and the cap used while rows waited.  Every row done once.
# serial: measures how many handlers run at once over the run, which a
# test running beside it on 2 cores can starve.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=90
sql "CREATE TABLE video (
    id BIGINT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    attempts INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, id)
) ENGINE=InnoDB;
INSERT INTO video (id) SELECT seq FROM $(seq_rows "$rows")"
for d in a b; do
	: >"$ROWQ_TEST_TMP/trace.$d"
	cat >$d.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $ROWQ_TEST_TMP/$d.sock
queues:
  render:
    workers: 4
    select: SELECT id, attempts FROM video
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    exec: [$HANDLERS/trace, $ROWQ_TEST_TMP/trace.$d, "100"]
    timeout: 60s
    idle: 200ms
    limit: {concurrency: 3}
    lease:
      duration: 3s
      claim: UPDATE video SET lease = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + 3 WHERE id = :id
      renew: UPDATE video SET leased_until = UNIX_TIMESTAMP() + 3
             WHERE id = :id AND lease = :lease
    done: UPDATE video SET status = 'done', done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE video SET status = 'failed'
            WHERE id = :id AND lease = :lease
YAML
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
declare -A pid
rowq_start a.yaml a.log
pid[a]=$ROWQ_PID
wait_until 20 '[ "$(running_at "$ROWQ_TEST_TMP/trace.a" "$(now_us)")" = 3 ]' ||
	fail "a never ran 3 at once"
rowq_start b.yaml b.log
pid[b]=$ROWQ_PID
wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM video WHERE status = '"'waiting'"'")" = 0 ]' ||
	fail "rows still waiting"
for d in a b; do
	stop_rowq "${pid[$d]}"
done
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM video WHERE done_count <> 1")" "rows done other than once"
cat trace.a trace.b >trace
ran_a=$(grep -c '^end' trace.a || true)
ran_b=$(grep -c '^end' trace.b || true)
max=$(overlap_max trace)
avg=$(overlap_avg trace)
figure "rows daemon a ran" "$ran_a"
figure "rows daemon b ran" "$ran_b"
figure "handlers at once, most" "$max"
figure "handlers at once, on average while rows waited" "$avg"
assert_ge "$ran_a" $((rows / 5)) "rows daemon a ran"
assert_ge "$ran_b" $((rows / 5)) "rows daemon b ran"
assert_le "$max" 3 "handlers running at once across the 2 daemons"
assert_ge "$avg" 2.1 "average handlers running while rows waited"
