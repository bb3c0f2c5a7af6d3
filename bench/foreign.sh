#!/usr/bin/env bash
# The job tables that applications ship, worked at their indexes' speed:
# `bash bench/foreign.sh` (BENCH_ROWS, BENCH_RUNS to change the size).
#
# For each application of tests/apps/ (its DDL as shipped) and its example
# in config/examples/: ROWS waiting jobs, `rowq drain` with 2 workers and
# the pipe handler bench/okpipe.c, with the application's select as the
# example writes it, and with the best one-table rewrite of the same queue
# (the select that an index, or rowq's claim from a cursor, serves best),
# alternately in the same run, RUNS times each.  The medians, and the
# first as a share of the second, go to the section "Foreign tables" of
# bench/README.md, between its markers; the target is 0.7 or better, or
# `rowq check --strict` failing on the application's select and naming
# the cause, which the table shows too.

. "$(dirname "$0")/../tests/lib.sh"
. "$(dirname "$0")/lib.sh"

ROWS=${BENCH_ROWS:-20000}
RUNS=${BENCH_RUNS:-3}
APPS=${BENCH_APPS:-"magento action_scheduler drupal laravel symfony oban solid_queue"}
WORKERS=2

mkdir -p "$BIN"
cc -O2 -g -Wall -Wextra -o "$BIN/okpipe" "$BENCH_DIR/okpipe.c"
[ -x "$ROWQ" ] || fail "no $ROWQ: run make first"
db_start
cd "$ROWQ_TEST_TMP"

say() { printf '%s\n' "$*" >&2; }

# ---- each application: its rows, and its rewrite ----

fill_magento()
{
	sql "SET FOREIGN_KEY_CHECKS = 0; TRUNCATE queue_message_status;
	    TRUNCATE queue_message; TRUNCATE queue; SET FOREIGN_KEY_CHECKS = 1;
	    INSERT INTO queue (name) VALUES ('async.operations.all'),
	    ('product_action_attribute.update'), ('export');
	    INSERT INTO queue_message (topic_name, body)
	    SELECT 'product_action_attribute.update',
	    CONCAT('{\"product_ids\":[', seq, ']}') FROM $(seq_rows "$ROWS");
	    INSERT INTO queue_message_status (queue_id, message_id, status)
	    SELECT 2, id, 2 FROM queue_message"
}
rewrite_magento()
{
	echo "SELECT id, message_id, number_of_trials FROM queue_message_status
	    WHERE queue_id = 2 AND status IN (2, 5) ORDER BY id"
}

fill_action_scheduler()
{
	sql "TRUNCATE wp_actionscheduler_actions; TRUNCATE wp_actionscheduler_logs;
	    INSERT INTO wp_actionscheduler_actions (hook, status,
	    scheduled_date_gmt, scheduled_date_local, priority, args, group_id)
	    SELECT 'woocommerce_run_product_attribute_lookup_update', 'pending',
	    UTC_TIMESTAMP() - INTERVAL seq SECOND, NOW() - INTERVAL seq SECOND,
	    IF(seq % 10 = 0, 5, 10), CONCAT('{\"product_id\":', seq, '}'), 1
	    FROM $(seq_rows "$ROWS")"
}
rewrite_action_scheduler()
{
	echo "SELECT action_id, hook, args, extended_args, priority, attempts
	    FROM wp_actionscheduler_actions
	    WHERE claim_id = 0 AND scheduled_date_gmt <= UTC_TIMESTAMP()
	    AND status = 'pending' ORDER BY action_id"
}

fill_drupal()
{
	sql "TRUNCATE queue; INSERT INTO queue (name, data, created)
	    SELECT 'aggregator_feeds', CONCAT('a:1:{s:3:\"fid\";i:', seq, ';}'),
	    UNIX_TIMESTAMP() - $ROWS + seq FROM $(seq_rows "$ROWS")"
}
rewrite_drupal()
{
	echo "SELECT item_id, data, created, expire FROM queue
	    WHERE name = 'aggregator_feeds' AND expire <= UNIX_TIMESTAMP()
	    ORDER BY item_id"
}

fill_laravel()
{
	sql "TRUNCATE jobs; TRUNCATE failed_jobs;
	    INSERT INTO jobs (queue, payload, attempts, available_at, created_at)
	    SELECT 'default', JSON_OBJECT('uuid', UUID(), 'displayName',
	    'App\\\\Jobs\\\\ProcessPodcast', 'maxTries', 3), 0,
	    UNIX_TIMESTAMP() - 10, UNIX_TIMESTAMP() - 10 FROM $(seq_rows "$ROWS")"
}
# Laravel's own select is one table by its primary key: the best there is.
rewrite_laravel() { echo ""; }

fill_symfony()
{
	sql "TRUNCATE messenger_messages;
	    INSERT INTO messenger_messages (body, headers, queue_name,
	    created_at, available_at)
	    SELECT CONCAT('O:36:\"Symfony\\\\Component\\\\Messenger\\\\Envelope\":', seq),
	    '[]', 'default', NOW() - INTERVAL 1 HOUR,
	    NOW() - INTERVAL $ROWS SECOND + INTERVAL seq SECOND FROM $(seq_rows "$ROWS")"
}
rewrite_symfony()
{
	echo "SELECT m.id, m.body, m.headers, m.available_at
	    FROM messenger_messages m WHERE m.delivered_at IS NULL
	    AND m.available_at <= NOW() AND m.queue_name = 'default' ORDER BY m.id"
}

fill_oban()
{
	sql "TRUNCATE oban_jobs;
	    INSERT INTO oban_jobs (worker, args, max_attempts)
	    SELECT 'MyApp.Workers.Business', JSON_OBJECT('n', seq), 20
	    FROM $(seq_rows "$ROWS")"
}
# Oban's example is one table by its primary key already.
rewrite_oban() { echo ""; }

fill_solid_queue()
{
	sql "SET FOREIGN_KEY_CHECKS = 0; TRUNCATE solid_queue_ready_executions;
	    TRUNCATE solid_queue_claimed_executions;
	    TRUNCATE solid_queue_failed_executions;
	    TRUNCATE solid_queue_scheduled_executions;
	    TRUNCATE solid_queue_processes; TRUNCATE solid_queue_jobs;
	    SET FOREIGN_KEY_CHECKS = 1;
	    INSERT INTO solid_queue_jobs (queue_name, class_name, arguments,
	    active_job_id, scheduled_at, created_at, updated_at)
	    SELECT 'default', 'ReportJob', JSON_OBJECT('job_class', 'ReportJob',
	    'arguments', JSON_ARRAY(seq), 'executions', 0), UUID(),
	    UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)
	    FROM $(seq_rows "$ROWS");
	    INSERT INTO solid_queue_ready_executions (job_id, queue_name,
	    priority, created_at)
	    SELECT id, queue_name, priority, created_at FROM solid_queue_jobs"
}
# The ready executions alone, by their primary key (claimed from a
# cursor), with the same lease and statements; the job's class and
# arguments, which the handler needs, are not read.
rewrite_solid_queue()
{
	echo "SELECT job_id, 0 AS executions FROM solid_queue_ready_executions
	    WHERE queue_name = 'default' ORDER BY id"
}

# config APP FILE [SELECT]: the example, on this server, with okpipe, and
# with SELECT in place of its first queue's (the one drained) when one is
# given.
config()
{
	local app=$1 file=$2 select=${3:-}
	{
		printf 'database:\n  socket: %s\n  user: root\n  name: %s\n' \
		    "$ROWQ_TEST_SOCKET" "$ROWQ_TEST_DB"
		awk -v sel="$select" -v pipe="    pipe: [$BIN/okpipe]" '
			/^database:/ { skip = 1; next }
			skip && /^queues:/ { skip = 0 }
			skip { next }
			sel != "" && !replaced && /^    select: \|/ {
				print "    select: |"; replaced = 1
				n = split(sel, l, "\n")
				for (i = 1; i <= n; i++) print "      " l[i]
				insel = 1; next }
			insel && /^      / { next }
			{ insel = 0 }
			/^    (pipe|exec): / { print pipe; next }
			/^    workers: / { print "    workers: '"$WORKERS"'"; next }
			{ print }' "$REPO_ROOT/config/examples/$app.yaml"
	} >"$file"
}

# rate APP FILE: fill, then drain; prints rows/s from the summary.
rate()
{
	local queue
	"fill_$1"
	settle
	queue=$(awk '/^queues:/ { q = 1; next } q && /^  [a-z]/ { sub(":.*", ""); sub("^  ", ""); print; exit }' "$2")
	"$ROWQ" -c "$2" drain "$queue" -w "$WORKERS" >drain.out 2>drain.err ||
	    fail "$1: drain: $(tail -n 5 drain.err)"
	sed -n 's/.*(\([0-9]*\) rows\/s)$/\1/p' drain.out
}

median()
{
	sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# strict APP FILE: what check --strict says of the application's select.
strict()
{
	if "$ROWQ" -c "$2" check --strict >strict.out 2>&1; then
		echo "passes"
	else
		echo "fails: $(grep -o 'its list of keys sorts[^(]*\|no index of [a-z_]* serves both the WHERE and the ORDER BY\|the claim cannot scan the primary key from a cursor: the select [^.]*' strict.out | head -n 1)"
	fi
}

table=$ROWQ_TEST_TMP/table
printf '| application | its select (rows/s) | best one-table rewrite (rows/s) | ratio | check --strict on its select |\n|---|---:|---:|---:|---|\n' >"$table"
for app in $APPS; do
	db_create "bench_$app"
	sql <"$TESTS_DIR/apps/$app.sql"
	config "$app" app.yaml
	rw=$("rewrite_$app")
	config "$app" rewrite.yaml "$rw"
	"fill_$app"
	check=$(strict "$app" app.yaml)
	: >app.rates
	: >rewrite.rates
	for ((run = 1; run <= RUNS; run++)); do
		r=$(rate "$app" app.yaml)
		echo "$r" >>app.rates
		if [ -n "$rw" ]; then
			w=$(rate "$app" rewrite.yaml)
		else
			w=$r
		fi
		echo "$w" >>rewrite.rates
		say "$app run $run: its select $r rows/s, rewrite $w rows/s"
	done
	a=$(median <app.rates)
	b=$(median <rewrite.rates)
	ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
	printf '| %s | %s | %s | %s | %s |\n' "$app" "$a" "$b" "$ratio" "$check" >>"$table"
done
cat "$table"

# Into bench/README.md, between the markers (after the rest, with its
# heading, the first time).
begin='<!-- foreign.sh: begin -->'
end='<!-- foreign.sh: end -->'
{
	grep -qxF "$begin" "$BENCH_DIR/README.md" || printf '## Foreign tables\n\n'
	echo "$begin"
	echo "Measured by bench/foreign.sh on $(date -u +%Y-%m-%d): $ROWS jobs, $WORKERS workers, pipe handler, medians of $RUNS drains each, the two selects alternately in the same run."
	echo
	cat "$table"
	echo "$end"
} >section
readme_section "$begin" "$end" section
