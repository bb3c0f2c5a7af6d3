#!/usr/bin/env bash
# `rowq status QUEUE --by` in lease mode: a leased row leaves the select,
# so the rows the three workers hang on are counted in RUN only, never in
# WAIT as well; a running row whose group is NULL is its own group, shown
# though no waiting row has it; without failed_select, FAILED is unknown.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
sql "CREATE TABLE job (
    id INT NOT NULL PRIMARY KEY,
    batch VARCHAR(40) NULL,
    status ENUM('waiting', 'done') NOT NULL DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until DATETIME(6) NULL,
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO job (id, batch) VALUES (1, 'b1'), (2, NULL), (3, 'b2'),
    (4, 'b1'), (5, 'b2'), (6, 'b3')"
cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 2s
status_socket: $ROWQ_TEST_TMP/rowq.sock
queues:
  job:
    workers: 3
    select: SELECT id, batch FROM job
            WHERE status = 'waiting'
              AND (leased_until IS NULL OR leased_until < UTC_TIMESTAMP(6))
            ORDER BY id
    group_by: batch
    exec: [$HANDLERS/fake, sleep, "120000", $ROWQ_TEST_TMP/handled]
    timeout: 5m
    idle: 200ms
    lease:
      duration: 1m
      claim: UPDATE job SET lease = :lease,
             leased_until = UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE WHERE id = :id
      renew: UPDATE job SET leased_until = UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE
             WHERE id = :id AND lease = :lease
    done: UPDATE job SET status = 'done', lease = NULL, leased_until = NULL
          WHERE id = :id AND lease = :lease
    failed: UPDATE job SET lease = NULL, leased_until = NULL
            WHERE id = :id AND lease = :lease
YAML
"$ROWQ" -c rowq.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP/rowq.log"'
wait_until 20 '[ "$(cat handled 2>/dev/null | wc -l)" -ge 3 ]' || fail "the workers did not start their rows"
assert_eq "1 2 3" "$(sed 's/ .*//' handled | sort -n | xargs)" "the rows the handlers hang on"
wait_until 10 '"$ROWQ" -c rowq.yaml status --json 2>/dev/null | grep -q "\"busy\":3"' ||
	fail "the three workers are not busy"
"$ROWQ" -c rowq.yaml status job --by --json >by.json 2>&1 || fail "status --by: $(cat by.json)"
python3 - by.json <<'PY' || fail "status --by in lease mode: $(cat by.json)"
import json, sys
v = json.load(open(sys.argv[1]))
got = [(g["group"], g["wait"], g["run"], g["failed"]) for g in v["groups"]]
assert got == [("b1", 1, 1, None), ("b2", 1, 1, None), (None, 0, 1, None),
               ("b3", 1, 0, None)], got
assert v["groups_total"] == 4 and v["groups_left_out"] == 0, v
PY
"$ROWQ" -c rowq.yaml status job --by >by.out 2>&1 || fail "status --by: $(cat by.out)"
assert_match $'\nNULL +0 +1 +- +-\n' "$(cat by.out)" "the NULL group's line"
