#!/usr/bin/env bash
# Three more job tables as their applications ship them, each with its
# example (config/examples/): every job once, retries and failures
# recorded as the application records them, and the claim locking only
# the job it claims (the application's UPDATE of another waiting job
# completes while a handler runs); `rowq check` passes on each, and
# --strict on Laravel's; it names the cause on the others: Drupal's ORDER
# BY created, item_id, which keeps the claim from a cursor, and Symfony
# 5's table, whose three one-column indexes serve no claim of one queue
# by available_at (Symfony 6 added the one that does).
# - Drupal's queue: done deletes the item; a failed try delays it
#   (retry: without attempts_column, for ever), another queue's items
#   stay;
# - Laravel's jobs: done deletes the job; a failed one goes to
#   failed_jobs with the payload's uuid, in the transaction that deletes
#   it (failed: a list), after its tries (attempts, max 3);
# - Symfony Messenger's messenger_messages: done deletes the message; a
#   failed try makes it available again later, a message that cannot
#   work moves to the failure transport's queue.
# serial: times an application's UPDATE of another waiting job against
# the server's lock wait while a handler runs.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/apps/lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

# run APP QUEUE PROBE [lax]: with APP.yaml (app_config), check --strict
# (lax: check), then a drain during which PROBE (an UPDATE of another
# waiting job) runs while the held job's handler waits.
run()
{
	local out strict=(--strict)
	[ "${4:-}" != lax ] || strict=()
	rm -f handled flaky.*
	out=$("$ROWQ" -c "$1.yaml" check "${strict[@]}" 2>&1) ||
	    fail "$1: check ${strict[*]}: $out"
	app_drain "$1.yaml" "$1" "$2" "$1: another waiting job" "$3"
}

# ---- Drupal ----
app_schema drupal
sql "INSERT INTO queue (name, data, created)
    SELECT 'aggregator_feeds', CONCAT('a:2:{s:3:\"fid\";i:', seq, ';s:4:\"note\";s:5:\"',
    CASE seq WHEN 2 THEN 'hold' WHEN 5 THEN 'flaky' ELSE 'fetch' END, '\";}'),
    UNIX_TIMESTAMP() - 100 + seq FROM $(seq_rows 20);
    INSERT INTO queue (name, data, created) VALUES ('locale_translation', 'a:0:{}', 1);
    ANALYZE TABLE queue" >/dev/null
app_config drupal drupal.yaml
# The flaky item's next try within the drain.
sed -i 's/^      delay: 30s$/      delay: 0s/' drupal.yaml
status=0
out=$("$ROWQ" -c drupal.yaml check --strict 2>&1) || status=$?
assert_eq 1 "$status" "drupal: check --strict ($out)"
assert_match "queues.aggregator_feeds.select: the claim cannot scan the primary key from a cursor: the select orders by more than one column" "$out" "drupal: --strict names the cause"
run drupal aggregator_feeds "UPDATE queue SET data = data WHERE item_id = 20" lax
assert_eq "locale_translation" "$(sql_value "SELECT GROUP_CONCAT(name) FROM queue")" "drupal: the items left"
assert_eq "20 21" "$(awk -F'"item_id":' '{ split($2, a, ","); n[a[1]]++; t++ } END { print length(n), t }' handled)" "drupal: items handled, handler runs"
assert_match "aggregator_feeds: 20 done, 1 retried, 0 failed, 0 errors" "$(cat drupal.out)" "drupal: the summary"

# ---- Laravel ----
app_schema laravel
sql "INSERT INTO jobs (queue, payload, attempts, available_at, created_at)
    SELECT IF(seq = 25, 'emails', 'default'), JSON_OBJECT('uuid', UUID(),
    'displayName', 'App\\\\Jobs\\\\ProcessPodcast', 'job',
    'Illuminate\\\\Queue\\\\CallQueuedHandler@call', 'maxTries', 3,
    'data', JSON_OBJECT('note', CASE seq WHEN 3 THEN 'hold' WHEN 6 THEN 'flaky'
    WHEN 9 THEN 'retry' WHEN 12 THEN 'fail' ELSE 'podcast' END)),
    0, UNIX_TIMESTAMP() - 10, UNIX_TIMESTAMP() - 10 FROM $(seq_rows 25)"
uuid9=$(sql_value "SELECT JSON_VALUE(payload, '$.uuid') FROM jobs WHERE id = 9")
app_config laravel laravel.yaml
run laravel default "UPDATE jobs SET payload = payload WHERE id = 24"
assert_eq "25 emails" "$(sql_value "SELECT CONCAT(id, ' ', queue) FROM jobs")" "laravel: the jobs left"
assert_eq "2 $uuid9" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', MIN(uuid)) FROM failed_jobs WHERE queue = 'default' AND (uuid = '$uuid9' OR exception LIKE '%this cannot work%')")" "laravel: failed_jobs, by the payload's uuid"
assert_eq "24 27" "$(awk -F'"id":' '{ split($2, a, ","); n[a[1]]++; t++ } END { print length(n), t }' handled)" "laravel: jobs handled, handler runs"

# ---- Symfony Messenger ----
app_schema symfony
sql "INSERT INTO messenger_messages (body, headers, queue_name, created_at, available_at)
    SELECT CONCAT('O:36:\"Symfony\\\\Component\\\\Messenger\\\\Envelope\":2:{s:4:\"note\";s:4:\"',
    CASE seq WHEN 2 THEN 'hold' WHEN 4 THEN 'flaky' WHEN 6 THEN 'fail' ELSE 'mail' END, '\";}'),
    '{\"type\":\"App\\\\\\\\Message\\\\\\\\SendNewsletter\"}', IF(seq = 20, 'async_priority_low', 'default'),
    NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL (60 - seq) SECOND FROM $(seq_rows 20)"
app_config symfony symfony.yaml
status=0
out=$("$ROWQ" -c symfony.yaml check --strict 2>&1) || status=$?
assert_eq 1 "$status" "symfony: check --strict ($out)"
assert_match "no index of messenger_messages serves both the WHERE and the ORDER BY .*ALTER TABLE messenger_messages ADD INDEX queue_name_available_at \(queue_name, available_at\)" "$out" "symfony: --strict names the index"
run symfony default "UPDATE messenger_messages SET headers = headers WHERE id = 19" lax
assert_eq "4 default, 6 failed, 20 async_priority_low" "$(sql_value "SELECT GROUP_CONCAT(CONCAT(id, ' ', queue_name) ORDER BY id SEPARATOR ', ') FROM messenger_messages")" "symfony: the messages left"
assert_eq 1 "$(sql_value "SELECT available_at > NOW() FROM messenger_messages WHERE id = 4")" "symfony: the retried message waits"
