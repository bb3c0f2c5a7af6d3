#!/usr/bin/env bash
# Per-row limits and reasons, with two daemons of two workers each:
# - retry.max_attempts: column max_tries: rows of 1, 2 and 5 tries are
#   each tried exactly that many times (the attempts column and the
#   handler's own lines agree); a row asking for 1000 gets
#   max_attempts_ceiling (6); a NULL gets 1.
# - :reason, stored by retry.update and failed: "exhausted" for the last
#   failed try, "permanent" for exit 65, a handler's own name
#   ("reason=card_declined" as its last stderr line), "timeout" for a try
#   that ran past timeout (retried, then done), "error" for a retried
#   failure.
# - lease mode: a row whose last try's worker was killed (kill -9) comes
#   back when its lease runs out with no try left: failed at once,
#   :reason lease_lost, its handler not run again.
# - retry.gave_up: a framework's retry.update that fails the row itself
#   (IF(attempts >= 3, 'failed', ...)); `rowq drain` reports those rows
#   as failed, not retried, and on_failed runs for each of them.
# - a pipe handler's "fail reason=NAME" and "retry reason=NAME"; a name of
#   rowq's own is not taken; `rowq check` refuses a max_attempts column
#   that is text, or not in the select.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
: >handled

sql "CREATE TABLE job (
    id INT NOT NULL PRIMARY KEY,
    max_tries INT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    retry_at BIGINT NULL,
    why VARCHAR(40) NULL,
    reasons VARCHAR(400) NOT NULL DEFAULT '',
    INDEX (status, id)
) ENGINE=InnoDB"
# 1-10 fail with 1 try, 11-20 with 2, 21-30 with 5; 31-35 exit 65;
# 36-40 exit 65 naming their reason; 41-45 time out once, then work;
# 46 asks for 1000 tries; 47 says NULL; 48-100 work at once.
sql "INSERT INTO job (id, max_tries)
    SELECT seq, CASE WHEN seq <= 10 THEN 1 WHEN seq <= 20 THEN 2
        WHEN seq = 46 THEN 1000 WHEN seq = 47 THEN NULL ELSE 5 END
    FROM $(seq_rows 100)"
cat >handle <<SH
#!/bin/bash
cat >/dev/null
echo "\$ROWQ_KEY \$ROWQ_ATTEMPT" >>$ROWQ_TEST_TMP/handled
k=\$ROWQ_KEY
if [ "\$k" -le 30 ] || [ "\$k" = 46 ] || [ "\$k" = 47 ]; then
	echo "smtp down" >&2; exit 3
elif [ "\$k" -le 35 ]; then
	echo "no such mailbox" >&2; exit 65
elif [ "\$k" -le 40 ]; then
	echo "reason=card_declined the card was declined" >&2; exit 65
elif [ "\$k" -le 45 ] && [ "\$ROWQ_ATTEMPT" = 1 ]; then
	exec sleep 30
fi
exit 0
SH
chmod +x handle
cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
queues:
  job:
    workers: 2
    select: |
      SELECT id, attempts, max_tries FROM job
      WHERE status = 'waiting'
        AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())
      ORDER BY id
    exec: [$ROWQ_TEST_TMP/handle]
    timeout: 1s
    idle: 200ms
    done: UPDATE job SET status = 'done', attempts = attempts + 1,
          done_count = done_count + 1 WHERE id = :id
    retry:
      max_attempts: column max_tries
      max_attempts_ceiling: 6
      attempts_column: attempts
      backoff: fixed
      delay: 0s
      jitter: false
      update: UPDATE job SET attempts = attempts + 1, why = :reason,
              reasons = CONCAT(reasons, :reason, ','),
              retry_at = UNIX_TIMESTAMP() + :delay WHERE id = :id
    failed: UPDATE job SET status = 'failed', attempts = attempts + 1,
            why = :reason, reasons = CONCAT(reasons, :reason, ',')
            WHERE id = :id
YAML
"$ROWQ" -c rowq.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
rowq_start rowq.yaml rowq1.log
pid1=$ROWQ_PID
rowq_start rowq.yaml rowq2.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq1.log" "$ROWQ_TEST_TMP/rowq2.log"'
wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM job WHERE status = '"'waiting'"'")" = 0 ]' ||
	fail "rows still waiting: $(sql "SELECT id, attempts, reasons FROM job WHERE status = 'waiting'")"
kill_wait 10 "$pid1" "$ROWQ_PID"

# Each failing row tried exactly its own number of times, by the table
# and by the handler.
tries() { grep -c "^$1 " handled; }
for id in $(seq 1 30) 46 47; do
	want=$(sql_value "SELECT LEAST(COALESCE(max_tries, 1), 6) FROM job WHERE id = $id")
	assert_eq "failed $want" "$(sql_value "SELECT CONCAT(status, ' ', attempts) FROM job WHERE id = $id")" "row $id"
	assert_eq "$want" "$(tries "$id")" "handler runs of row $id"
	# Its tries' numbers, 1 to want, each once.
	assert_eq "$(seq -s ' ' 1 "$want")" "$(grep "^$id " handled | cut -d' ' -f2 | sort -n | tr '\n' ' ' | sed 's/ $//')" "tries of row $id"
done
assert_eq "1 2 5 6 1" "$(for id in 1 11 21 46 47; do tries $id; done | tr '\n' ' ' | sed 's/ $//')" "tries of rows of 1, 2, 5, 1000 and NULL"
# :reason: the retried tries say error, the last exhausted.
assert_eq "exhausted," "$(sql_value "SELECT reasons FROM job WHERE id = 1")" "reasons of a 1-try row"
assert_eq "error,exhausted," "$(sql_value "SELECT reasons FROM job WHERE id = 11")" "reasons of a 2-try row"
assert_eq "error,error,error,error,exhausted," "$(sql_value "SELECT reasons FROM job WHERE id = 21")" "reasons of a 5-try row"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM job WHERE id <= 30 AND why <> 'exhausted'")" "rows 1-30 end exhausted"
assert_eq "failed 1 permanent," "$(sql_value "SELECT CONCAT(status, ' ', attempts, ' ', reasons) FROM job WHERE id = 31")" "an exit 65 row"
assert_eq 5 "$(sql_value "SELECT COUNT(*) FROM job WHERE id BETWEEN 31 AND 35 AND status = 'failed' AND reasons = 'permanent,'")" "exit 65 rows"
assert_eq 5 "$(sql_value "SELECT COUNT(*) FROM job WHERE id BETWEEN 36 AND 40 AND status = 'failed' AND attempts = 1 AND reasons = 'card_declined,'")" "rows whose handler named its reason"
assert_eq "done 2 timeout," "$(sql_value "SELECT CONCAT(status, ' ', attempts, ' ', reasons) FROM job WHERE id = 41")" "a row that timed out once"
assert_eq 5 "$(sql_value "SELECT COUNT(*) FROM job WHERE id BETWEEN 41 AND 45 AND status = 'done' AND done_count = 1 AND reasons = 'timeout,'")" "rows that timed out once"
assert_eq 53 "$(sql_value "SELECT COUNT(*) FROM job WHERE id > 47 AND status = 'done' AND done_count = 1 AND attempts = 1 AND reasons = ''")" "rows done at once"
assert_eq 100 "$(sql_value "SELECT COUNT(*) FROM job WHERE status <> 'waiting'")" "every row final"
assert_match "queues.job.retry.max_attempts: max_tries is 1000, above max_attempts_ceiling: 6 tries" "$(cat rowq1.log rowq2.log)" "the ceiling said"

# ---- retry.gave_up: the framework's own give-up, counted as failed ----
sql "CREATE TABLE legacy (
    id INT NOT NULL PRIMARY KEY,
    state VARCHAR(10) NOT NULL DEFAULT 'ready',
    attempts INT NOT NULL DEFAULT 0,
    INDEX (state, id)
) ENGINE=InnoDB"
sql "INSERT INTO legacy (id) SELECT seq FROM $(seq_rows 20)"
cat >legacy <<'SH'
#!/bin/bash
cat >/dev/null
[ $((ROWQ_KEY % 4)) != 0 ] || { echo "broken" >&2; exit 3; }
exit 0
SH
cat >hook <<SH
#!/bin/bash
cat >/dev/null
echo "\$ROWQ_KEY \$ROWQ_ATTEMPT" >>$ROWQ_TEST_TMP/hooks
SH
chmod +x legacy hook
: >hooks
cat >legacy.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  legacy:
    workers: 2
    select: SELECT id, attempts FROM legacy WHERE state = 'ready' ORDER BY id
    exec: [$ROWQ_TEST_TMP/legacy]
    idle: 200ms
    done: UPDATE legacy SET state = 'done' WHERE id = :id
    retry:
      attempts_column: attempts
      delay: 0s
      jitter: false
      update: UPDATE legacy SET attempts = attempts + 1,
              state = IF(attempts >= 3, 'failed', 'ready') WHERE id = :id
      gave_up: SELECT state = 'failed' FROM legacy WHERE id = :id
    on_failed: [$ROWQ_TEST_TMP/hook]
YAML
"$ROWQ" -c legacy.yaml check >check2.out 2>&1 || fail "check: $(cat check2.out)"
status=0
timeout 60 "$ROWQ" -c legacy.yaml drain legacy >drain.out 2>drain.err || status=$?
assert_eq 0 "$status" "drain's exit status ($(cat drain.err))"
# 5 rows (4, 8, ..., 20) fail 3 times: 10 retries, 5 given up.
assert_match "^legacy: 15 done, 10 retried, 5 failed, 0 errors" "$(cat drain.out)" "the drain's report"
assert_eq 5 "$(sql_value "SELECT COUNT(*) FROM legacy WHERE state = 'failed' AND attempts = 3")" "rows given up"
assert_eq 5 "$(grep -c "queues.legacy.retry.gave_up: retry.update gave the row up: counted as failed" drain.err)" "given up rows in the log"

# The same rows under `rowq run`: on_failed: runs for each given-up row,
# and status and the metrics count them failed.
sql "UPDATE legacy SET state = 'ready', attempts = 0"
port=$(free_port)
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics: 127.0.0.1:$port\nqueues:|" legacy.yaml
rowq_start legacy.yaml legacy.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/legacy.log"'
wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM legacy WHERE state = '"'ready'"'")" = 0 ]' ||
	fail "legacy rows still ready: $(sql "SELECT * FROM legacy WHERE state = 'ready'")"
wait_until 10 '[ "$(wc -l <hooks)" -ge 5 ]' || fail "on_failed ran for: $(cat hooks)"
sleep 1
assert_eq "4 3,8 3,12 3,16 3,20 3" "$(sort -n hooks | tr '\n' ',' | sed 's/,$//')" "on_failed: each row given up, once, on its third try"
counters()
{
	python3 -c 'import json, sys
live = json.load(sys.stdin)["queues"][0]["daemon"]
print(live["done"], live["retried"], live["failed"])'
}
json=$("$ROWQ" -c legacy.yaml status --json 2>/dev/null)
assert_eq "15 10 5" "$(counters <<<"$json")" "status: done, retried, failed: $json"
metric() { curl -fs "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
assert_eq 5 "$(metric 'rowq_rows_failed_total{queue="legacy"}')" "failed rows in the metrics"
assert_eq 10 "$(metric 'rowq_rows_retried_total{queue="legacy"}')" "retried rows in the metrics"
assert_eq 5 "$(metric 'rowq_handler_duration_seconds_count{queue="legacy",outcome="failed"}')" "handler durations of the given-up rows, as failed"
assert_eq 10 "$(metric 'rowq_handler_duration_seconds_count{queue="legacy",outcome="retry"}')" "handler durations of the retried tries"
kill_wait 10 "$ROWQ_PID"

# ---- lease mode: the last try's lease ran out (kill -9) ----
sql "CREATE TABLE render (
    id INT NOT NULL PRIMARY KEY,
    max_tries INT NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    token CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    attempts INT NOT NULL DEFAULT 0,
    why VARCHAR(40) NULL,
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO render (id, max_tries) VALUES (1, 1), (2, 2), (3, 1)"
: >rendered
cat >render <<SH
#!/bin/bash
cat >/dev/null
echo "\$ROWQ_KEY \$ROWQ_ATTEMPT" >>$ROWQ_TEST_TMP/rendered
[ "\$ROWQ_KEY" = 3 ] || exec sleep 60
SH
chmod +x render
cat >render.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 1s
queues:
  render:
    workers: 3
    select: SELECT id, attempts, max_tries FROM render WHERE status = 'waiting'
            AND leased_until < UNIX_TIMESTAMP() ORDER BY id
    exec: [$ROWQ_TEST_TMP/render]
    timeout: 2m
    idle: 200ms
    lease:
      duration: 3s
      claim: UPDATE render SET token = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + 3 WHERE id = :id
      renew: UPDATE render SET leased_until = UNIX_TIMESTAMP() + 3
             WHERE id = :id AND token = :lease
    done: UPDATE render SET status = 'done', token = NULL
          WHERE id = :id AND token = :lease
    retry:
      max_attempts: column max_tries
      attempts_column: attempts
      delay: 0s
      update: UPDATE render SET token = NULL, why = :reason, leased_until = 0
              WHERE id = :id AND token = :lease
    failed: UPDATE render SET status = 'failed', token = NULL, why = :reason
            WHERE id = :id AND token = :lease
YAML
rowq_start render.yaml render1.log
wait_until 20 '[ "$(grep -c "^[12] " rendered)" = 2 ] && [ "$(sql_value "SELECT status FROM render WHERE id = 3")" = done ]' ||
	fail "rows 1 and 2 not started, or row 3 not done: $(cat rendered)"
kill -KILL "$ROWQ_PID"
wait "$ROWQ_PID" 2>/dev/null || true
untrack_pid "$ROWQ_PID"
rowq_start render.yaml render2.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/render1.log" "$ROWQ_TEST_TMP/render2.log"'
# Row 1 (1 try) fails once its lease runs out; row 2 (2 tries) runs its
# second try.
wait_until 20 '[ "$(sql_value "SELECT status FROM render WHERE id = 1")" = failed ]' ||
	fail "row 1: $(sql "SELECT * FROM render")"
wait_until 10 'grep -q "^2 2$" rendered' || fail "row 2's second try did not start: $(cat rendered)"
assert_eq "failed 2 lease_lost" "$(sql_value "SELECT CONCAT_WS(' ', status, attempts, why) FROM render WHERE id = 1")" "row 1 after its lease ran out"
assert_eq 1 "$(grep -c "^1 " rendered)" "row 1's handler runs"
assert_eq "waiting 2" "$(sql_value "SELECT CONCAT_WS(' ', status, attempts) FROM render WHERE id = 2")" "row 2, on its second try"
assert_match "row 1: failed, with no try left: try 1 of 1 did not finish: its lease ran out" "$(cat render2.log)" "the log"
kill_wait 10 "$ROWQ_PID"

# ---- a pipe handler names its reasons; check refuses a text column ----
sql "CREATE TABLE p (
    id INT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0,
    tries VARCHAR(10) NOT NULL DEFAULT '3',
    reasons VARCHAR(400) NOT NULL DEFAULT '',
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO p (id) VALUES (1), (2), (3)"
cat >pipe <<'SH'
#!/bin/bash
n=0
while IFS= read -r row; do
	n=$((n + 1))
	case $row in
	'{"id":1,'*) echo "fail reason=no_such_user mailbox gone" ;;
	'{"id":2,'*) if [ -e "$1/once" ]; then echo ok; else : >"$1/once"; echo "retry reason=rate_limited slow down"; fi ;;
	*) echo "fail reason=exhausted not the handler's word" ;;
	esac
done
SH
chmod +x pipe
cat >p.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  p:
    select: SELECT id, attempts, CAST(tries AS SIGNED) AS tries FROM p WHERE status = 'waiting' ORDER BY id
    pipe: [$ROWQ_TEST_TMP/pipe, $ROWQ_TEST_TMP]
    idle: 200ms
    done: UPDATE p SET status = 'done', reasons = CONCAT(reasons, 'done:', :reason, ',') WHERE id = :id
    retry:
      max_attempts: column tries
      attempts_column: attempts
      delay: 0s
      update: UPDATE p SET attempts = attempts + 1, reasons = CONCAT(reasons, :reason, ',') WHERE id = :id
    failed: UPDATE p SET status = 'failed', reasons = CONCAT(reasons, :reason, ',') WHERE id = :id
YAML
"$ROWQ" -c p.yaml check >check3.out 2>&1 || fail "check: $(cat check3.out)"
timeout 60 "$ROWQ" -c p.yaml drain p >p.out 2>p.err || fail "drain p: $(cat p.err)"
assert_eq "failed no_such_user," "$(sql_value "SELECT CONCAT(status, ' ', reasons) FROM p WHERE id = 1")" "a pipe handler's fail, named"
assert_eq "done rate_limited,done:," "$(sql_value "SELECT CONCAT(status, ' ', reasons) FROM p WHERE id = 2")" "a pipe handler's retry, named; done's reason is empty"
assert_eq "failed permanent," "$(sql_value "SELECT CONCAT(status, ' ', reasons) FROM p WHERE id = 3")" "a name of rowq's own is not the handler's"
# The row's count of tries must be a whole number: the text column is refused.
sed -i 's/CAST(tries AS SIGNED) AS tries/tries/' p.yaml
expect_exit 78 "p.yaml:[0-9]+: queues.p.retry.max_attempts: column tries: the server describes it as text, not as an integer" -c p.yaml check
sed -i 's/max_attempts: column tries/max_attempts: column tries_left/' p.yaml
expect_exit 78 "p.yaml:[0-9]+: queues.p.retry.max_attempts: tries_left is not a column of the select \(columns: id, attempts, tries\)" -c p.yaml check
