#!/usr/bin/env bash
# `rowq drain A B` ends only when none of the named queues' selects finds
# a row and none of their workers holds one: here every row of `stage`
# moves into the select of `ship` as it is done, after `ship`'s select
# was found empty at the start, and every row is shipped all the same.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE parcel (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    state ENUM('staged', 'ready', 'shipped') NOT NULL DEFAULT 'staged',
    shipped_count INT NOT NULL DEFAULT 0,
    INDEX (state, id)
) ENGINE=InnoDB;
INSERT INTO parcel (state) SELECT 'staged' FROM $(seq_rows 40)"
cat >q.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  stage:
    select: SELECT id FROM parcel WHERE state = 'staged' ORDER BY id
    exec: [/bin/sleep, "0.02"]
    done: UPDATE parcel SET state = 'ready' WHERE id = :id
    failed: UPDATE parcel SET state = 'shipped' WHERE id = :id
    idle: 100ms
  ship:
    select: SELECT id FROM parcel WHERE state = 'ready' ORDER BY id
    exec: [/bin/true]
    done: UPDATE parcel SET state = 'shipped', shipped_count = shipped_count + 1
          WHERE id = :id
    failed: UPDATE parcel SET state = 'shipped' WHERE id = :id
    idle: 100ms
YAML
status=0
timeout 60 "$ROWQ" -c q.yaml drain stage ship >drain.out 2>drain.err || status=$?
assert_eq 0 "$status" "exit status ($(cat drain.err))"
assert_eq "40 40" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(shipped_count)) FROM parcel WHERE state = 'shipped'")" "rows shipped once"
assert_match "stage: 40 done" "$(cat drain.out)" "stage's summary"
assert_match "ship: 40 done" "$(cat drain.out)" "ship's summary"

# The end is not late: an idle worker whose last look began before
# another worker's last rows were done is woken to look again, rather than
# sleep its idle (here 20 s) first.  Before, about one drain in two
# ended an idle late.
sql "CREATE TABLE quick (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    status ENUM('waiting', 'done') NOT NULL DEFAULT 'waiting',
    INDEX (status, id)
) ENGINE=InnoDB"
cat >quick.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  quick:
    workers: 4
    select: SELECT id FROM quick WHERE status = 'waiting' ORDER BY id
    pipe: [$HANDLERS/pipefake, ok, $ROWQ_TEST_TMP/quick.log]
    done: UPDATE quick SET status = 'done' WHERE id = :id
    failed: UPDATE quick SET status = 'done' WHERE id = :id
    idle: 20s
YAML
slowest=0
for round in 1 2 3 4 5 6; do
	sql "INSERT INTO quick (status) SELECT 'waiting' FROM $(seq_rows 500)"
	t0=$(now_us)
	timeout 60 "$ROWQ" -c quick.yaml drain quick >drain.out 2>drain.err ||
	    fail "drain $round: exit status $? ($(cat drain.err))"
	took=$((($(now_us) - t0) / 1000))
	[ "$took" -le "$slowest" ] || slowest=$took
	assert_le "$took" 10000 "drain $round (ms): under half the idle"
	assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM quick WHERE status = 'waiting'")" \
	    "drain $round: rows left"
done
echo "figure: the slowest of 6 drains of 500 rows at 4 workers, idle 20s: $slowest ms"
