#!/usr/bin/env bash
# Magento 2's MySQL message queue, its tables as shipped and its own
# select (config/examples/magento.yaml): every message of its queue is
# handled once, complete (4), retried as Magento retries (status 5,
# number_of_trials counted) and then error (6), or error at once; the
# messages of another queue are left alone.  The claim locks only the
# queue_message_status row it claims: while a handler runs, the
# application's UPDATE of the queue row that every claim joins, and of
# another waiting message, completes; `rowq check` passes, and -d shows
# the claim by key.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/apps/lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

app_schema magento
sql "INSERT INTO queue (name) VALUES ('async.operations.all'),
    ('product_action_attribute.update'), ('export');
INSERT INTO queue_message (topic_name, body)
    SELECT 'product_action_attribute.update', CONCAT('{\"product_ids\":[', seq,
    '],\"note\":\"', CASE seq WHEN 1 THEN 'hold' WHEN 7 THEN 'retry'
    WHEN 9 THEN 'fail' ELSE 'ok' END, '\"}') FROM $(seq_rows 40);
INSERT INTO queue_message_status (queue_id, message_id, status)
    SELECT 2, id, 2 FROM queue_message;
INSERT INTO queue_message (topic_name, body) VALUES ('export', '{\"file\":1}');
INSERT INTO queue_message_status (queue_id, message_id, status)
    SELECT 3, MAX(id), 2 FROM queue_message"
app_config magento q.yaml
out=$("$ROWQ" -c q.yaml check 2>&1) || fail "check: $out"
out=$("$ROWQ" -d -c q.yaml check 2>&1) || fail "check -d: $out"
assert_match "queues.product_action_attribute_update.select: claims lock by key" "$out" "-d check: the claim by key"
assert_match "queues.product_action_attribute_update.select: lock: SELECT .* JOIN \(SELECT \* FROM queue_message_status AS .queue_message_status. FORCE INDEX \(PRIMARY\) WHERE" "$out" "-d check: its lock"

app_drain q.yaml drain product_action_attribute_update \
    "the queue row every claim joins" \
    "UPDATE queue SET name = name WHERE id = 2" \
    "another waiting message" \
    "UPDATE queue_message_status SET number_of_trials = number_of_trials WHERE message_id = 40"
assert_eq "4 38 0, 6 2 4" "$(sql_value "SELECT GROUP_CONCAT(CONCAT(status, ' ', n, ' ', t) ORDER BY status SEPARATOR ', ') FROM (SELECT status, COUNT(*) n, SUM(number_of_trials) t FROM queue_message_status WHERE queue_id = 2 GROUP BY status) s")" "statuses and trials"
assert_eq 2 "$(sql_value "SELECT status FROM queue_message_status WHERE queue_id = 3")" "another queue's message"
# Every message once, the retried one three times.
assert_eq "40 42" "$(awk -F'"id":' '{ split($2, a, ","); n[a[1]]++; t++ } END { print length(n), t }' handled)" "messages handled, handler runs"
