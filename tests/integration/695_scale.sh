#!/usr/bin/env bash
# workers: {min: 1, max: 4}: a daemon runs 1 worker while the queue is
# empty; a burst of rows takes it to 4, each change logged with its
# reason (rows waiting, every worker busy), and `rowq status` shows the
# count; once the rows are done, the idle workers retire one by one
# after scale_cooldown, back to 1, each logged.  Every row done once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
log=$ROWQ_TEST_TMP/trace
email_config rowq.yaml "[$HANDLERS/trace, $log, \"150\"]" "scale_cooldown: 1s"
sed -i 's/^    workers: .*/    workers: {min: 1, max: 4}/' rowq.yaml
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nqueues:|" rowq.yaml
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
rowq_start rowq.yaml rowq.log
workers() { children_of "$ROWQ_PID" | wc -l; }
wait_until 10 '[ "$(workers)" = 1 ]' || fail "not 1 worker at the start: $(workers)"
sleep 1
assert_eq 1 "$(workers)" "workers with nothing to do"
sql "INSERT INTO email (recipient, subject, body)
    SELECT CONCAT('u', seq, '@example.com'), 's', '' FROM $(seq_rows 80)"
wait_until 10 '[ "$(workers)" = 4 ]' || fail "never 4 workers: $(workers)"
"$ROWQ" -c rowq.yaml status >status.out 2>&1 || true
assert_match 'email workers: 4 \(from 1 to 4\), last [0-9] -> 4: [0-9]+\+? rows wait and the [0-9] workers? (is|are) busy, [0-9]+(ms|s) ago' \
    "$(cat status.out)" "status"
wait_all_final 60 || fail "rows still waiting"
wait_until 15 '[ "$(workers)" = 1 ]' || fail "not back to 1 worker: $(workers)"
assert_exactly_once 80
up=$(grep -cE 'email: workers [0-9] -> [0-9]: [0-9]+\+? rows wait and the [0-9] workers? (is|are) busy' rowq.log || true)
down=$(grep -cE 'email: workers [0-9] -> [0-9]: worker [0-9] idle for [0-9]+s \(cooldown\)' rowq.log || true)
figure "changes up, each logged" "$up"
figure "changes down, each logged" "$down"
assert_ge "$up" 2 "changes up (1 -> 2 -> 4)"
assert_eq 3 "$down" "changes down (4 -> 3 -> 2 -> 1)"
stop_rowq "$ROWQ_PID"
