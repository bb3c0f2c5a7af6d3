#!/usr/bin/env bash
# `rowq check` warns of two mistakes in a workflow's statements that every
# count in the database hides (rowq.yaml(5), PATTERNS):
# - a SET list that reads a column it assigned earlier: the server assigns
#   left to right, so SET pending = pending - 1, status = IF(pending = 1,
#   ...) marks the batch ready one child early (shown on the server
#   itself); not with the assignments the other way round, nor, on
#   MariaDB, with sql_mode SIMULTANEOUS_ASSIGNMENT;
# - a counter in another table that done counts down and failed (or
#   discard) does not, or that failed and discard both count; not a
#   statement of done's that only sets another table's columns to values
#   that do not read them (a job's finished_at, as Solid Queue's done
#   sets it while its failed inserts a row instead): that counts nothing.
# serial: sets the server's global sql_mode, which every new session reads.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE batch (
    id      BIGINT NOT NULL PRIMARY KEY,
    pending INT NOT NULL,
    status  VARCHAR(10) NOT NULL DEFAULT 'running'
) ENGINE=InnoDB;
CREATE TABLE item (
    id       BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    batch_id BIGINT NOT NULL,
    status   VARCHAR(10) NOT NULL DEFAULT 'waiting',
    INDEX (status, id)
) ENGINE=InnoDB"

# queue KEY: VALUE...: a queue of items, its finishing lists as given.
queue()
{
	cat >q.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  item:
    select: SELECT id, batch_id FROM item WHERE status = 'waiting' ORDER BY id
    exec: [/bin/true]
    idle: 100ms
YAML
	printf '    %s\n' "$@" >>q.yaml
}

check()
{
	status=0
	out=$("$ROWQ" -c q.yaml check "$@" 2>&1) || status=$?
}

TRAP="UPDATE batch SET pending = pending - 1, status = IF(pending = 1, 'ready', status) WHERE id = :batch_id"
FIXED="UPDATE batch SET status = IF(pending = 1, 'ready', status), pending = pending - 1 WHERE id = :batch_id"
DONE="UPDATE item SET status = 'done' WHERE id = :id"
FAILED="UPDATE item SET status = 'failed' WHERE id = :id"
COUNT="UPDATE batch SET pending = pending - 1 WHERE id = :batch_id"

# ---- the SET list that rereads ----
# On the server: the batch of two, after its first child, looks ready.
assert_eq "1 ready" "$(sql "INSERT INTO batch VALUES (1, 2, 'running');
    ${TRAP/:batch_id/1}; SELECT CONCAT(pending, ' ', status) FROM batch WHERE id = 1")" "the trap, on the server"
assert_eq "1 running" "$(sql "UPDATE batch SET pending = 2, status = 'running';
    ${FIXED/:batch_id/1}; SELECT CONCAT(pending, ' ', status) FROM batch WHERE id = 1")" "the fixed order, on the server"

queue "done: [\"$DONE\", \"$TRAP\"]" "failed: [\"$FAILED\", \"$COUNT\"]"
line=$(grep -n '^    done:' q.yaml | cut -d: -f1)
check --strict
assert_eq 1 "$status" "check --strict of the trap ($out)"
assert_match "q.yaml:$line: queues.item.done\[1\]: the SET list assigns pending and then reads it in \`status = IF\(pending = 1, 'ready', status\)\`: (MariaDB|MySQL) assigns a SET list left to right" "$out" "the trap"
queue "done: [\"$DONE\", \"$FIXED\"]" "failed: [\"$FAILED\", \"$COUNT\"]"
check --strict
assert_eq 0 "$status" "check --strict of the fixed order ($out)"

# MariaDB with SIMULTANEOUS_ASSIGNMENT reads the row's values throughout.
if [ "$(server_family)" = mariadb ]; then
	mode=$(sql_value "SELECT @@GLOBAL.sql_mode")
	on_exit "sql \"SET GLOBAL sql_mode = '$mode'\""
	sql "SET GLOBAL sql_mode = CONCAT(@@GLOBAL.sql_mode, ',SIMULTANEOUS_ASSIGNMENT')"
	queue "done: [\"$DONE\", \"$TRAP\"]" "failed: [\"$FAILED\", \"$COUNT\"]"
	check --strict
	assert_eq 0 "$status" "check --strict of the trap under SIMULTANEOUS_ASSIGNMENT ($out)"
	assert_eq "1 running" "$(sql "UPDATE batch SET pending = 2, status = 'running';
	    ${TRAP/:batch_id/1}; SELECT CONCAT(pending, ' ', status) FROM batch WHERE id = 1")" "the trap under SIMULTANEOUS_ASSIGNMENT, on the server"
	sql "SET GLOBAL sql_mode = '$mode'"
fi

# ---- a counter that a finishing list forgets ----
queue "done: [\"$DONE\", \"$COUNT\"]" "failed: \"$FAILED\""
check --strict
assert_eq 1 "$status" "check --strict of a counter in done alone ($out)"
assert_match "queues.item.done\[1\]: done updates batch, and failed does not: if batch counts the queue's rows down \(a batch's pending children\), a row that ends through failed leaves it open for ever" "$out" "failed forgets the counter"

queue "done: \"$DONE\"" "failed: [\"$FAILED\", \"$COUNT\"]"
check
assert_match "queues.item.failed\[1\]: failed updates batch, and done does not" "$out" "done forgets the counter"

# Another table's columns set, not counted: no counter to forget.
queue "done: [\"$DONE\", \"UPDATE batch SET status = 'finished', pending = 0 WHERE id = :batch_id\"]" "failed: \"$FAILED\""
check --strict
assert_eq 0 "$status" "check --strict of done setting another table's columns ($out)"
# Counted by done, and set by failed: failed updates it too, as test 230's
# jobs table (done_count counted by done, finished_at set by both).
queue "done: [\"$DONE\", \"$COUNT\"]" "failed: [\"$FAILED\", \"UPDATE batch SET status = 'failed' WHERE id = :batch_id\"]"
check --strict
assert_eq 0 "$status" "check --strict of a counter in done that failed updates without counting ($out)"

# Counted by done and failed; or by done and discard (a failed row's
# batch stays open until it is requeued and done, or discarded).
queue "done: [\"$DONE\", \"$COUNT\"]" "failed: [\"$FAILED\", \"$COUNT\"]" \
    "discard: \"UPDATE item SET status = 'discarded' WHERE id = :id AND status = 'failed'\"" \
    "failed_select: SELECT id FROM item WHERE status = 'failed' ORDER BY id"
check --strict
assert_eq 0 "$status" "check --strict of a counter in done and failed ($out)"
queue "done: [\"$DONE\", \"$COUNT\"]" "failed: \"$FAILED\"" \
    "discard: [\"UPDATE item SET status = 'discarded' WHERE id = :id AND status = 'failed'\", \"UPDATE batch JOIN item ON item.batch_id = batch.id SET batch.pending = batch.pending - 1 WHERE item.id = :id\"]" \
    "failed_select: SELECT id FROM item WHERE status = 'failed' ORDER BY id"
check --strict
assert_eq 0 "$status" "check --strict of a counter in done and discard ($out)"

# In failed and in discard: a failed row that is discarded counts twice.
queue "done: [\"$DONE\", \"$COUNT\"]" "failed: [\"$FAILED\", \"$COUNT\"]" \
    "discard: [\"UPDATE item SET status = 'discarded' WHERE id = :id AND status = 'failed'\", \"UPDATE batch JOIN item ON item.batch_id = batch.id SET batch.pending = batch.pending - 1 WHERE item.id = :id\"]" \
    "failed_select: SELECT id FROM item WHERE status = 'failed' ORDER BY id"
check --strict
assert_eq 1 "$status" "check --strict of a counter in failed and discard ($out)"
assert_match "failed and discard both update batch: if it counts the queue's rows down, a row that failed is counted once by failed and again when it is discarded" "$out" "counted twice"
