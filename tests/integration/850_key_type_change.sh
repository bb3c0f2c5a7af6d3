#!/usr/bin/env bash
# A running queue's integer key becomes text (ALTER TABLE ... MODIFY id
# VARCHAR): the worker must notice the changed type, not only changed
# names, and bind the key as text from then on.  With rows '007' and '7',
# a stale integer binding makes `WHERE id = :id` for one of them
# `WHERE id = 7`, which matches both: one row finished by another's done,
# and its handler never run.  Each row must be handled and finished on
# its own (done records the key it was run for).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/handled
: >"$log"

sql "CREATE TABLE t (
    id INT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    done_count INT NOT NULL DEFAULT 0,
    done_for VARCHAR(20) NULL,
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO t (id) VALUES (1)"
cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
queues:
  t:
    workers: 1
    select: SELECT id FROM t WHERE status = 'waiting' ORDER BY id
    exec: [$HANDLERS/fake, append, $log]
    timeout: 10s
    idle: 200ms
    done: UPDATE t SET status = 'done', done_count = done_count + 1,
          done_for = :id WHERE id = :id
    failed: UPDATE t SET status = 'failed' WHERE id = :id
YAML
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || { echo "--- rowq.log"; cat "$ROWQ_TEST_TMP/rowq.log"; echo "--- handled"; cat "$ROWQ_TEST_TMP/handled"; }'
# The worker has prepared its statements for an integer key.
wait_until 10 '[ "$(sql_value "SELECT status FROM t WHERE id = 1")" = done ]' ||
	fail "row 1 not done"

sql "ALTER TABLE t MODIFY id VARCHAR(20) NOT NULL"
sql "INSERT INTO t (id) VALUES ('007'), ('7')"
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM t WHERE status = '"'done'"'")" = 3 ]' ||
	fail "rows not all done: $(sql "SELECT id, status FROM t")"
# Time for a row finished by another's done to be handled after all.
sleep 1
stop_rowq "$ROWQ_PID"

assert_eq "007 1|1 1|7 1" "$(cut -d' ' -f1 "$log" | sort | uniq -c | awk '{ print $2, $1 }' | paste -sd '|')" \
    "handler runs per key"
assert_eq "007 done 1 007|1 done 1 1|7 done 1 7" \
    "$(sql "SELECT CONCAT_WS(' ', id, status, done_count, done_for) FROM t ORDER BY id" | paste -sd '|')" \
    "rows (id status done_count done_for)"
