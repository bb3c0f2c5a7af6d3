#!/usr/bin/env bash
# Rails' Solid Queue on MySQL as its installer's schema ships
# (tests/apps/solid_queue.sql), with its example
# (config/examples/solid_queue.yaml): `rowq check --strict` passes; 3,000
# Active Job jobs (ROWS) worked by 2 daemons of 2 workers, in lease mode,
# the worker that runs one job (hold) killed -9 in the middle; every job
# ends as Solid Queue (and Active Job's retry_on) records it:
# - a job that works: finished once, no execution row left;
# - a flaky one (fails while its executions are 0): finished, and enqueued
#   again as a new job of the same active_job_id, executions 1 and
#   provider_job_id the first, scheduled, dispatched, then finished;
# - one that always fails: 5 jobs of its active_job_id (retry_on's
#   attempts), 4 finished, the last with one failed execution, reason
#   exhausted;
# - one whose handler says never: one failed execution, reason permanent;
# - the killed worker's job: while it runs, claimed by a registered
#   process that Mission Control would show; after the kill, its process's
#   heartbeat stops and the prune queue fails it with
#   ProcessPrunedError, as Solid Queue's supervisor does;
# - jobs scheduled 2 s on are dispatched and finished; one of another
#   queue and one scheduled tomorrow stay as they were;
# - a job of a queue paused as Mission Control pauses it waits until the
#   queue is resumed;
# no claimed execution or process is left, no job is run twice, the
# handler runs are counted, and every job row has exactly one state.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/apps/lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=${ROWS:-3000}
hold=$((rows / 2 + 1))

app_schema solid_queue

# The handler: each row's line to handled; it answers by the tag of the
# job's argument ("nN:TAG") and the try's executions.  hold writes its
# worker's pid and waits for release, or for that worker to die.
cat >handler <<SH
#!/bin/bash
d=$ROWQ_TEST_TMP
SH
cat >>handler <<'SH'
while IFS= read -r row; do
	printf '%s\n' "$row" >>"$d/handled"
	[[ $row =~ n[0-9]+:([a-z]+) ]] && tag=${BASH_REMATCH[1]} || tag=none
	[[ $row =~ \"executions\":\ ?([0-9]+) ]] && ex=${BASH_REMATCH[1]} || ex=x
	case $tag in
	hold)
		echo "$PPID" >"$d/holding.tmp" && mv "$d/holding.tmp" "$d/holding"
		while [ ! -e "$d/release" ] && kill -0 "$PPID" 2>/dev/null; do
			sleep 0.05
		done
		echo ok ;;
	flaky)
		if [ "$ex" = 0 ]; then echo "retry not yet"; else echo ok; fi ;;
	retry) echo "retry the service is away" ;;
	fail) echo "fail this cannot work" ;;
	*) echo ok ;;
	esac
done
SH
chmod +x handler

# config FILE: the example on this server, with this handler, a 3 s lease
# (and the prune queue's threshold with it), a retry 1 s on.
config()
{
	local d
	d=$(basename "$1" .yaml)
	app_config solid_queue "$1"
	sed -i -e "s|^    pipe: .*|    pipe: [$ROWQ_TEST_TMP/handler]|" \
	    -e 's/^      duration: 5m$/      duration: 3s/' \
	    -e 's/INTERVAL 5 MINUTE$/INTERVAL 3 SECOND/' \
	    -e 's/^      delay: 3s$/      delay: 1s/' "$1"
	sed -i "/^queues:/i stop_timeout: 5s\\nstatus_socket: $ROWQ_TEST_TMP/$d.sock" "$1"
	if ! grep -q 'duration: 3s' "$1" || ! grep -q 'INTERVAL 3 SECOND' "$1" ||
	    ! grep -q 'delay: 1s' "$1"; then
		fail "$1: the example's lease, prune or delay changed"
	fi
}
config a.yaml
config b.yaml
out=$("$ROWQ" -c a.yaml check --strict 2>&1) || fail "check --strict: $out"

# The jobs as Active Job enqueues them through Solid Queue: the job row,
# its arguments the serialized job, and a ready execution when due (a
# scheduled one when not).  seq = rows + 1 is another queue's, rows + 2 is
# scheduled tomorrow, rows + 3 .. rows + 12 in 2 s.
total=$((rows + 12))
sql "INSERT INTO solid_queue_jobs (queue_name, class_name, arguments,
    priority, active_job_id, scheduled_at, created_at, updated_at)
    SELECT IF(seq = $rows + 1, 'mailers', 'default'), 'ReportJob',
    JSON_OBJECT('job_class', 'ReportJob', 'job_id', aid,
        'provider_job_id', NULL, 'queue_name', 'default', 'priority', NULL,
        'arguments', JSON_ARRAY(CONCAT('n', seq, ':', CASE
            WHEN seq = $hold THEN 'hold' WHEN seq > $rows THEN 'work'
            WHEN seq % 101 = 0 THEN 'fail' WHEN seq % 97 = 0 THEN 'retry'
            WHEN seq % 50 = 0 THEN 'flaky' ELSE 'work' END)),
        'executions', 0, 'exception_executions', JSON_OBJECT(),
        'locale', 'en', 'timezone', 'UTC'),
    0, aid, CASE WHEN seq = $rows + 2 THEN UTC_TIMESTAMP(6) + INTERVAL 1 DAY
        WHEN seq > $rows + 2 THEN UTC_TIMESTAMP(6) + INTERVAL 2 SECOND
        ELSE UTC_TIMESTAMP(6) END,
    UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)
    FROM (SELECT seq, CONCAT('00000000-0000-4000-8000-', LPAD(seq, 12, '0'))
        AS aid FROM $(seq_rows $total)) s;
    INSERT INTO solid_queue_ready_executions (job_id, queue_name, priority,
        created_at)
    SELECT id, queue_name, priority, created_at FROM solid_queue_jobs
    WHERE scheduled_at <= UTC_TIMESTAMP(6);
    INSERT INTO solid_queue_scheduled_executions (job_id, queue_name,
        priority, scheduled_at, created_at)
    SELECT id, queue_name, priority, scheduled_at, created_at
    FROM solid_queue_jobs WHERE scheduled_at > UTC_TIMESTAMP(6)"
tag_of() { echo "JSON_UNQUOTE(JSON_EXTRACT($1, '\$.arguments[0]'))"; }
flaky=$(sql_value "SELECT COUNT(*) FROM solid_queue_jobs WHERE $(tag_of arguments) LIKE '%:flaky'")
retry=$(sql_value "SELECT COUNT(*) FROM solid_queue_jobs WHERE $(tag_of arguments) LIKE '%:retry'")
never=$(sql_value "SELECT COUNT(*) FROM solid_queue_jobs WHERE $(tag_of arguments) LIKE '%:fail'")
echo "$flaky flaky, $retry always failing, $never failing for good"

on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
rowq_start a.yaml a.log; A=$ROWQ_PID
rowq_start b.yaml b.log; B=$ROWQ_PID
wait_until 60 '[ -e "$ROWQ_TEST_TMP/holding" ]' || fail "the held job's handler did not start"
worker=$(cat holding)
held=$(sql_value "SELECT id FROM solid_queue_jobs WHERE $(tag_of arguments) = 'n$hold:hold'")
# In progress as Mission Control reads it: a claimed execution whose
# process is a registered Worker with a heartbeat.
assert_eq "Worker 1" "$(sql_value "SELECT CONCAT(p.kind, ' ', p.name LIKE 'rowq-%') FROM solid_queue_claimed_executions c JOIN solid_queue_processes p ON p.id = c.process_id WHERE c.job_id = $held")" "the held job's claim and its process"
# Another waiting job's row is not locked by the claim.
other=$(sql_value "SELECT MAX(job_id) FROM solid_queue_ready_executions WHERE queue_name = 'default'")
_app_not_locked "another ready job" "UPDATE solid_queue_jobs SET updated_at = updated_at WHERE id = $other"
done_at_kill=$(sql_value "SELECT COUNT(*) FROM solid_queue_jobs WHERE finished_at IS NOT NULL")
echo "killing worker $worker (held job $held) at $done_at_kill jobs finished"
parent=$(ps -o ppid= -p "$worker" | tr -d ' ')
[ "$parent" = "$A" ] || [ "$parent" = "$B" ] ||
	fail "the held job's handler's parent $worker is no daemon's worker"
kill -KILL "$worker"

# Until every job has a state to end in: finished, or failed.
open_jobs()
{
	sql_value "SELECT COUNT(*) FROM solid_queue_jobs j WHERE finished_at IS NULL
	    AND NOT EXISTS (SELECT 1 FROM solid_queue_failed_executions f
	    WHERE f.job_id = j.id)"
}
start=$(now_us)
while [ "$(open_jobs)" != 2 ]; do
	[ $(( ($(now_us) - start) / 1000000 )) -lt 300 ] ||
		fail "jobs still open after 300 s: $(open_jobs)"
	sleep 0.3
done
: >release
took_us=$(( $(now_us) - start ))
figure "Solid Queue: s after the kill until every job ended, 2 daemons" \
    "$(awk -v t="$took_us" 'BEGIN { printf "%.1f\n", t / 1e6 }')"

# A queue paused as Mission Control pauses it is not claimed; resumed, it is.
sql "INSERT INTO solid_queue_pauses (queue_name, created_at)
    VALUES ('default', UTC_TIMESTAMP(6));
    INSERT INTO solid_queue_jobs (queue_name, class_name, arguments,
        active_job_id, scheduled_at, created_at, updated_at)
    VALUES ('default', 'ReportJob', '{\"arguments\": [\"n0:paused\"], \"executions\": 0}',
        'paused', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6));
    INSERT INTO solid_queue_ready_executions (job_id, queue_name, priority,
        created_at)
    SELECT id, queue_name, priority, created_at FROM solid_queue_jobs
    WHERE active_job_id = 'paused'"
sleep 2
assert_eq "1 NULL" "$(sql_value "SELECT CONCAT((SELECT COUNT(*) FROM solid_queue_ready_executions r JOIN solid_queue_jobs j ON j.id = r.job_id WHERE j.active_job_id = 'paused'), ' ', COALESCE((SELECT finished_at FROM solid_queue_jobs WHERE active_job_id = 'paused'), 'NULL'))")" "a paused queue's job: ready, not finished"
sql "DELETE FROM solid_queue_pauses WHERE queue_name = 'default'"
wait_until 20 '[ "$(sql_value "SELECT finished_at IS NOT NULL FROM solid_queue_jobs WHERE active_job_id = '"'paused'"'")" = 1 ]' ||
	fail "the job of the resumed queue did not finish"
stop_rowq "$A"
stop_rowq "$B"
sql "DELETE FROM solid_queue_jobs WHERE active_job_id = 'paused'"
sed -i '/n0:paused/d' handled

# The jobs of one active_job_id, by tag: "rows finished failed".
by_tag()
{
	sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(finished_at IS NOT NULL), ' ',
	    SUM(f.id IS NOT NULL)) FROM solid_queue_jobs j
	    LEFT JOIN solid_queue_failed_executions f ON f.job_id = j.id
	    WHERE $(tag_of j.arguments) LIKE '%:$1'"
}
# Those of another queue and of tomorrow are jobs that work, left open.
work=$((rows + 12 - 1 - flaky - retry - never))
assert_eq "$work $((work - 2)) 0" "$(by_tag work)" "jobs that work: rows, finished, failed"
assert_eq "$((2 * flaky)) $((2 * flaky)) 0" "$(by_tag flaky)" "flaky jobs: rows, finished, failed"
assert_eq "$((5 * retry)) $((4 * retry)) $retry" "$(by_tag retry)" "always failing jobs: rows, finished, failed"
assert_eq "$never 0 $never" "$(by_tag fail)" "jobs failing for good: rows, finished, failed"
assert_eq "1 0 1" "$(by_tag hold)" "the killed worker's job: rows, finished, failed"
# Retried as retry_on retries: the same active_job_id, executions counting
# the tries, provider_job_id the job before.
assert_eq "$retry" "$(sql_value "SELECT COUNT(DISTINCT active_job_id) FROM solid_queue_jobs WHERE $(tag_of arguments) LIKE '%:retry'")" "active jobs that always failed"
assert_eq "0 1 2 3 4" "$(sql_value "SELECT GROUP_CONCAT(JSON_EXTRACT(arguments, '\$.executions') ORDER BY id SEPARATOR ' ') FROM solid_queue_jobs WHERE active_job_id = (SELECT MIN(active_job_id) FROM solid_queue_jobs WHERE $(tag_of arguments) LIKE '%:retry')")" "an always failing job's executions, one job row each"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM solid_queue_jobs n JOIN solid_queue_jobs o ON o.active_job_id = n.active_job_id AND o.id < n.id WHERE JSON_EXTRACT(n.arguments, '\$.provider_job_id') <> o.id AND NOT EXISTS (SELECT 1 FROM solid_queue_jobs m WHERE m.active_job_id = n.active_job_id AND m.id > o.id AND m.id < n.id)")" "retried jobs whose provider_job_id is not the job before"
assert_eq "$flaky" "$(sql_value "SELECT COUNT(*) FROM solid_queue_jobs WHERE $(tag_of arguments) LIKE '%:flaky' AND JSON_EXTRACT(arguments, '\$.executions') = 1 AND finished_at IS NOT NULL")" "flaky jobs finished on their second execution"
# Failed executions as Solid Queue writes them (Mission Control reads
# exception_class, message and backtrace).
failed_as()
{
	sql_value "SELECT CONCAT(COUNT(*), ' ', COALESCE(MIN(JSON_VALID(f.error)), 0))
	    FROM solid_queue_failed_executions f JOIN solid_queue_jobs j ON j.id = f.job_id
	    WHERE $(tag_of j.arguments) LIKE '%:$1'
	    AND JSON_UNQUOTE(JSON_EXTRACT(f.error, '\$.exception_class')) = '$2'
	    AND JSON_UNQUOTE(JSON_EXTRACT(f.error, '\$.message')) LIKE '$3'
	    AND CAST(JSON_TYPE(JSON_EXTRACT(f.error, '\$.backtrace')) AS BINARY)
	        IN ('ARRAY', 'NULL')
	    $4"
}
assert_eq "$retry 1" "$(failed_as retry RuntimeError '%the service is away%' "AND JSON_UNQUOTE(JSON_EXTRACT(f.error, '\$.reason')) = 'exhausted' AND JSON_EXTRACT(j.arguments, '\$.executions') = 4")" "always failing jobs' failed executions"
assert_eq "$never 1" "$(failed_as fail RuntimeError '%this cannot work%' "AND JSON_UNQUOTE(JSON_EXTRACT(f.error, '\$.reason')) = 'permanent'")" "failing jobs' failed executions"
assert_eq "1 1" "$(failed_as hold SolidQueue::Processes::ProcessPrunedError 'Process was found dead and pruned (last heartbeat at: ____-__-__ __:__:__ UTC)' "")" "the killed worker's job, failed as pruned"
# What is left: one job of another queue ready, one scheduled tomorrow.
assert_eq "1 1 0 0" "$(sql_value "SELECT CONCAT((SELECT COUNT(*) FROM solid_queue_ready_executions r JOIN solid_queue_jobs j ON j.id = r.job_id AND j.queue_name = 'mailers'), ' ', (SELECT COUNT(*) FROM solid_queue_scheduled_executions WHERE scheduled_at > UTC_TIMESTAMP(6) + INTERVAL 1 HOUR), ' ', (SELECT COUNT(*) FROM solid_queue_claimed_executions), ' ', (SELECT COUNT(*) FROM solid_queue_processes))")" "ready (mailers), scheduled (tomorrow), claimed, processes"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM solid_queue_jobs j WHERE (finished_at IS NOT NULL)
    + EXISTS (SELECT 1 FROM solid_queue_failed_executions x WHERE x.job_id = j.id)
    + EXISTS (SELECT 1 FROM solid_queue_ready_executions x WHERE x.job_id = j.id)
    + EXISTS (SELECT 1 FROM solid_queue_scheduled_executions x WHERE x.job_id = j.id) <> 1")" "job rows not in exactly one state"
# Handler runs: one per job row that ran, none twice.
assert_eq "$((work - 2 + 2 * flaky + 5 * retry + never + 1))" "$(wc -l <handled)" "handler runs"
assert_eq "" "$(sed 's/^{"job_id":\([0-9]*\),.*/\1/' handled | sort | uniq -d)" "jobs run twice"
assert_ge "$done_at_kill" 1 "jobs finished before the kill"
assert_le "$done_at_kill" $((rows - 100)) "jobs finished before the kill (the rest after)"
