#!/usr/bin/env bash
# The PATTERNS of rowq.yaml(5) that need lease mode, on two daemons:
# - cancelling a whole workflow: its waiting jobs never start, its
#   running ones are stopped at their next renewal and record nothing,
#   its count is left as it was, and another workflow's jobs go on; a
#   daemon killed with SIGKILL just before changes none of it;
# - unique rows, with a unique index the server enforces on a column
#   generated from the row's state: a second insert of the same work
#   while one waits or runs is refused (1062), or merged into it; a merge
#   into a running row makes it run again, so that no request is lost;
#   no two rows of one account ever run at once, with a worker killed
#   with SIGKILL in the middle.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

# work LOG WHAT WAIT: logs "start KEY WHAT TIME" and "end KEY WHAT TIME",
# waits WAIT seconds in between.
cat >work <<'SH'
#!/bin/bash
echo "start $ROWQ_KEY ${2#*=} $EPOCHREALTIME" >>"$1"
sleep "${3#*=}"
echo "end $ROWQ_KEY ${2#*=} $EPOCHREALTIME" >>"$1"
SH
chmod +x work
WORK=$ROWQ_TEST_TMP/work

header()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: ${1%.yaml}.sock
stop_timeout: 5s
queues:
YAML
}

# ---- cancelling a whole workflow ----
sql "CREATE TABLE flow (
    id      BIGINT NOT NULL PRIMARY KEY,
    status  ENUM('running', 'done', 'cancelled') NOT NULL DEFAULT 'running',
    pending INT NOT NULL
) ENGINE=InnoDB;
CREATE TABLE job (
    id           BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    flow_id      BIGINT NOT NULL,
    seconds      INT NOT NULL,
    status       ENUM('waiting', 'done', 'failed', 'cancelled') NOT NULL
                 DEFAULT 'waiting',
    lease        CHAR(32) NULL,
    leased_until DATETIME NULL,
    done_count   INT NOT NULL DEFAULT 0,
    INDEX (status, id),
    INDEX (flow_id, status)
) ENGINE=InnoDB;
INSERT INTO flow VALUES (1, 'running', 6), (2, 'running', 4);
INSERT INTO job (flow_id, seconds) SELECT 1, 30 FROM $(seq_rows 6);
INSERT INTO job (flow_id, seconds) SELECT 2, 0 FROM $(seq_rows 4)"
for f in a b; do
	header $f.yaml
	cat >>$f.yaml <<YAML
  job:
    workers: 2
    select: |
      SELECT id, flow_id, seconds FROM job
      WHERE status = 'waiting'
        AND (leased_until IS NULL OR leased_until < NOW())
      ORDER BY id
    exec: [$WORK, $ROWQ_TEST_TMP/job.log, "flow={flow_id}", "s={seconds}"]
    timeout: 60s
    lease:
      duration: 3s
      claim: UPDATE job SET lease = :lease,
             leased_until = NOW() + INTERVAL 3 SECOND WHERE id = :id
      renew: UPDATE job SET leased_until = NOW() + INTERVAL 3 SECOND
             WHERE id = :id AND lease = :lease
    done:
      - UPDATE job SET status = 'done', lease = NULL, leased_until = NULL,
               done_count = done_count + 1
        WHERE id = :id AND lease = :lease
      - UPDATE flow SET status = IF(pending = 1, 'done', status),
               pending = pending - 1
        WHERE id = :flow_id
    failed:
      - UPDATE job SET status = 'failed', lease = NULL, leased_until = NULL
        WHERE id = :id AND lease = :lease
      - UPDATE flow SET status = IF(pending = 1, 'done', status),
               pending = pending - 1
        WHERE id = :flow_id
    idle: 100ms
YAML
done
out=$("$ROWQ" -c a.yaml check 2>&1) || fail "check: $out"
assert_eq "" "$(grep -E 'and then reads it|does not: if' <<<"$out" || true)" "check: the cancel pattern's statements"

started() { awk '$1 == "start" { print $2 }' job.log 2>/dev/null | sort -u | wc -l; }
"$ROWQ" -c a.yaml run >a.log 2>&1 & A=$!; track_pid $A
"$ROWQ" -c b.yaml run >b.log 2>&1 & B=$!; track_pid $B
on_exit '[ $? -eq 0 ] || { tail -n 30 a.log b.log*; cat job.log; }'
# Jobs 1-4 run (two daemons of two workers), 5 and 6 wait.
wait_until 30 '[ "$(started)" -ge 4 ]' || fail "four jobs never ran: $(cat job.log)"
kill -KILL "$B"
wait "$B" 2>/dev/null || true
untrack_pid "$B"
"$ROWQ" -c b.yaml run >b.log.2 2>&1 & B=$!; track_pid $B
# The cancel: the workflow, and its jobs that wait or run, in one go.
t0=$(now_us)
sql "BEGIN;
UPDATE flow SET status = 'cancelled' WHERE id = 1 AND status = 'running';
UPDATE job SET status = 'cancelled', lease = NULL, leased_until = NULL
WHERE flow_id = 1 AND status = 'waiting';
COMMIT"
assert_le $(( ($(now_us) - t0) / 1000 )) 2000 "ms the cancel took"
assert_eq 6 "$(sql_value "SELECT COUNT(*) FROM job WHERE flow_id = 1 AND status = 'cancelled'")" "flow 1's jobs cancelled at once"
# Flow 2's jobs run, and flow 2 completes; nothing of flow 1 runs on.
wait_until 30 '[ "$(sql_value "SELECT status FROM flow WHERE id = 2")" = done ]' ||
	fail "flow 2 did not complete: $(sql "SELECT * FROM job; SELECT * FROM flow")"
running_of_flow_1() { pgrep -f "$WORK $ROWQ_TEST_TMP/job.log flow=1" | wc -l; }
wait_until 10 '[ "$(running_of_flow_1)" = 0 ]' || fail "flow 1's handlers still run after the cancel"
kill -TERM "$A" "$B"
wait "$A" || fail "daemon a exited with $?"
wait "$B" || fail "daemon b exited with $?"
untrack_pid "$A" "$B"
assert_eq "" "$(awk '$1 == "start" && $2 >= 5 && $2 <= 6' job.log)" "jobs 5 and 6 of flow 1 started"
assert_eq "" "$(awk '$1 == "end" && $3 == 1' job.log)" "a handler of flow 1 ran to its end"
assert_eq "cancelled 6 0" "$(sql_value "SELECT CONCAT_WS(' ', f.status, f.pending, SUM(j.done_count)) FROM flow f JOIN job j ON j.flow_id = f.id WHERE f.id = 1 GROUP BY f.id")" "flow 1: cancelled, its count untouched, nothing done"
assert_eq "done 0 4" "$(sql_value "SELECT CONCAT_WS(' ', f.status, f.pending, SUM(j.done_count)) FROM flow f JOIN job j ON j.flow_id = f.id WHERE f.id = 2 GROUP BY f.id")" "flow 2: done once each"
assert_match "changed no row .*the lease was lost|changed no row on renewal: the lease was lost" "$(cat a.log b.log*)" "the lost leases said"

# ---- unique rows ----
sql "CREATE TABLE sync (
    id             BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    account_id     INT NOT NULL,
    status         ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    requests       INT NOT NULL DEFAULT 1,
    seconds        DECIMAL(4,2) NOT NULL DEFAULT 0.3,
    lease          CHAR(32) NULL,
    leased_until   DATETIME NULL,
    done_count     INT NOT NULL DEFAULT 0,
    active_account INT AS (IF(status = 'waiting', account_id, NULL)) STORED,
    UNIQUE (active_account),
    INDEX (status, id)
) ENGINE=InnoDB"
for f in ua ub; do
	header $f.yaml
	cat >>$f.yaml <<YAML
  sync:
    workers: 2
    select: |
      SELECT id, account_id, requests, seconds FROM sync
      WHERE status = 'waiting'
        AND (leased_until IS NULL OR leased_until < NOW())
      ORDER BY id
    exec: [$WORK, $ROWQ_TEST_TMP/sync.log, "account={account_id}", "s={seconds}"]
    lease:
      duration: 3s
      claim: UPDATE sync SET lease = :lease,
             leased_until = NOW() + INTERVAL 3 SECOND WHERE id = :id
      renew: UPDATE sync SET leased_until = NOW() + INTERVAL 3 SECOND
             WHERE id = :id AND lease = :lease
    done: UPDATE sync SET status = IF(requests = :requests, 'done', 'waiting'),
                 lease = NULL, leased_until = NULL,
                 done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE sync SET status = 'failed', lease = NULL,
                   leased_until = NULL
            WHERE id = :id AND lease = :lease
    idle: 100ms
YAML
done
# Refused while it waits; merged while it waits.  Account 9's row runs
# for 3 s, long enough to be seen running.
sql "INSERT INTO sync (account_id, seconds) VALUES (9, 3)"
err=$(sql "INSERT INTO sync (account_id) VALUES (9)" 2>&1) && fail "a second insert while one waits was accepted"
assert_match "ERROR 1062" "$err" "a second insert while one waits"
assert_eq 2 "$(sql_value "INSERT INTO sync (account_id) VALUES (9)
    ON DUPLICATE KEY UPDATE requests = requests + 1; SELECT requests FROM sync WHERE account_id = 9")" "merged while it waits"

"$ROWQ" -c ua.yaml run >ua.log 2>&1 & A=$!; track_pid $A
"$ROWQ" -c ub.yaml run >ub.log 2>&1 & B=$!; track_pid $B
on_exit '[ $? -eq 0 ] || { tail -n 30 ua.log ub.log; cat sync.log; }'
# Refused while it runs.
wait_until 20 'grep -q "^start 1 " sync.log 2>/dev/null' || fail "row 1 never ran"
err=$(sql "INSERT INTO sync (account_id) VALUES (9)" 2>&1) && fail "a second insert while one runs was accepted"
assert_match "ERROR 1062" "$err" "a second insert while one runs"
# Requests for accounts 1-5 for 4 s, each merged when one waits or runs;
# a worker of a killed in the middle.
declare -A asked
end=$(( $(now_us) + 4000000 ))
killed=0
while [ "$(now_us)" -lt "$end" ]; do
	acct=$((RANDOM % 5 + 1))
	sql "INSERT INTO sync (account_id) VALUES ($acct)
	    ON DUPLICATE KEY UPDATE requests = requests + 1"
	asked[$acct]=$(( ${asked[$acct]:-0} + 1 ))
	if [ $killed = 0 ] && [ "$(now_us)" -gt $((end - 2000000)) ]; then
		for w in $(children_of "$A"); do
			h=$(children_of "$w" | head -1)
			[ -n "$h" ] || continue
			killed_key=$(tr '\0' '\n' <"/proc/$h/environ" 2>/dev/null | sed -n 's/^ROWQ_KEY=//p' || true)
			[ -n "$killed_key" ] || continue
			kill -KILL "$w"
			killed=1
			break
		done
	fi
	sleep 0.05
done
assert_eq 1 "$killed" "a worker with a handler running was killed"
wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM sync WHERE status = '"'waiting'"'")" = 0 ]' ||
	fail "rows still wait: $(sql "SELECT * FROM sync WHERE status = 'waiting'")"
kill -TERM "$A" "$B"
wait "$A" || fail "daemon ua exited with $?"
wait "$B" || fail "daemon ub exited with $?"
untrack_pid "$A" "$B"
for acct in 1 2 3 4 5; do
	assert_eq "${asked[$acct]:-0}" "$(sql_value "SELECT COALESCE(SUM(requests), 0) FROM sync WHERE account_id = $acct")" "account $acct: requests asked, and served"
done
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM sync WHERE status <> 'done'")" "rows not done"
# No two rows of an account ever ran at once (the killed handler's row
# has a start without an end, and runs again).
awk -v killed="$killed_key" '$1 == "start" { if (cur[$3] != "" && cur[$3] != killed) print "row " $2 " of account " $3 " started while row " cur[$3] " ran"; cur[$3] = $2 }
    $1 == "end" { cur[$3] = "" }' <(sort -k4 -n sync.log) >sync.check
assert_eq "" "$(cat sync.check)" "one row per account at a time"
