#!/usr/bin/env bash
# WordPress's Action Scheduler, its tables as shipped and its own claim
# (config/examples/action_scheduler.yaml): every due pending action runs
# once, and is recorded as Action Scheduler records it (complete or
# failed, attempts and last attempt, a log row each); actions not due,
# canceled or claimed by Action Scheduler's own runner are left alone.
# Its ORDER BY is served by no index: the claim locks by key, so that the
# application's UPDATE of another pending action completes while a
# handler runs; `rowq check` passes, and --strict fails on the sort left
# in the list, naming the order an index serves.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/apps/lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

app_schema action_scheduler
sql <<SQL
SET SESSION sql_mode = '';
INSERT INTO wp_actionscheduler_groups (slug) VALUES ('woocommerce-db-updates'), ('wc-admin-data');
-- 30 due pending actions, a few more urgent (priority 5), some tried before.
INSERT INTO wp_actionscheduler_actions (hook, status, scheduled_date_gmt,
    scheduled_date_local, priority, args, schedule, group_id, attempts)
SELECT IF(seq % 3, 'woocommerce_run_product_attribute_lookup_update',
    'wc-admin_import_orders'), 'pending',
    UTC_TIMESTAMP() - INTERVAL (100 - seq) MINUTE, NOW() - INTERVAL (100 - seq) MINUTE,
    IF(seq % 7 = 0, 5, 10),
    CASE seq WHEN 4 THEN '{"note":"hold"}' WHEN 11 THEN '{"note":"fail"}'
        ELSE CONCAT('{"product_id":', seq, '}') END,
    'O:30:"ActionScheduler_SimpleSchedule":2:{s:22:"\0*\0scheduled_timestamp";i:1700000000;s:41:"\0ActionScheduler_SimpleSchedule\0timestamp";i:1700000000;}',
    1 + seq % 2, seq % 2
FROM $(seq_rows 30);
-- Not for rowq: due later, canceled, complete, claimed by another runner.
INSERT INTO wp_actionscheduler_actions (hook, status, scheduled_date_gmt, args, claim_id) VALUES
    ('woocommerce_cleanup_draft_orders', 'pending', UTC_TIMESTAMP() + INTERVAL 1 DAY, '[]', 0),
    ('woocommerce_cleanup_draft_orders', 'canceled', UTC_TIMESTAMP() - INTERVAL 1 DAY, '[]', 0),
    ('action_scheduler/migration_hook', 'complete', UTC_TIMESTAMP() - INTERVAL 2 DAY, '[]', 0),
    ('woocommerce_scheduled_sales', 'pending', UTC_TIMESTAMP() - INTERVAL 1 HOUR, '[]', 7);
INSERT INTO wp_actionscheduler_claims (date_created_gmt) VALUES (UTC_TIMESTAMP());
SQL
app_config action_scheduler q.yaml
out=$("$ROWQ" -c q.yaml check 2>&1) || fail "check: $out"
assert_match "queues.actions.select: claims lock by key" "$out" "check: by key"
status=0
out=$("$ROWQ" -c q.yaml check --strict 2>&1) || status=$?
assert_eq 1 "$status" "check --strict ($out)"
assert_match "its list of keys sorts every row the select matches .*write ORDER BY action_id, which rowq claims from a cursor.*; or ORDER BY scheduled_date_gmt, action_id, which index claim_id_status_scheduled_date_gmt \(claim_id, status, scheduled_date_gmt\) serves" "$out" "check --strict: the cause and the rewrites"

app_drain q.yaml drain actions "another pending action" \
    "UPDATE wp_actionscheduler_actions SET last_attempt_gmt = last_attempt_gmt WHERE action_id = 30"
assert_eq "complete 29, failed 1" "$(sql_value "SELECT GROUP_CONCAT(CONCAT(status, ' ', n) ORDER BY status SEPARATOR ', ') FROM (SELECT status, COUNT(*) n FROM wp_actionscheduler_actions WHERE action_id <= 30 GROUP BY status) s")" "the due actions"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM wp_actionscheduler_actions WHERE action_id <= 30 AND (attempts <> 1 + action_id % 2 OR last_attempt_gmt < UTC_TIMESTAMP() - INTERVAL 1 MINUTE)")" "attempts and last attempt recorded"
assert_eq "pending canceled complete pending" "$(sql "SELECT status FROM wp_actionscheduler_actions WHERE action_id > 30 ORDER BY action_id" | xargs)" "the others"
assert_eq "29 1" "$(sql_value "SELECT CONCAT(SUM(message = 'action complete via rowq'), ' ', SUM(message LIKE 'action failed via rowq: this cannot work%')) FROM wp_actionscheduler_logs")" "the log"
assert_eq 30 "$(sql_value "SELECT COUNT(DISTINCT action_id) FROM wp_actionscheduler_logs")" "one log row an action"
assert_eq "30 30" "$(awk -F'"action_id":' '{ split($2, a, ","); n[a[1]]++; t++ } END { print length(n), t }' handled)" "actions run once"
