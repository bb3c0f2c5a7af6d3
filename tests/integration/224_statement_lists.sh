#!/usr/bin/env bash
# Finishing statements that do more than one thing:
# - CALL in done, failed and retry.update: a procedure that updates the
#   row and inserts a log row, also one that returns a result set;
# - a list of statements, run in order in the row's transaction, each
#   prepared once with the same parameters: every row's log rows are
#   there, in order; when one statement fails for a row, the row's
#   outcome fails as a whole (the first statement's change is undone
#   too), and failed runs instead;
# - at batch 1 and at batch 10, in transaction and in lease mode.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql <<'SQL'
CREATE TABLE job (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    state VARCHAR(10) NOT NULL DEFAULT 'waiting',
    tries INT NOT NULL DEFAULT 0,
    lease CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    INDEX (state, id)
) ENGINE=InnoDB;
CREATE TABLE job_log (
    log_id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_id BIGINT NOT NULL,
    message VARCHAR(200) NOT NULL,
    UNIQUE KEY (job_id, message)
) ENGINE=InnoDB;
DELIMITER //
CREATE PROCEDURE job_finish(IN job BIGINT, IN outcome VARCHAR(10), IN why TEXT)
BEGIN
    UPDATE job SET state = outcome, tries = tries + 1 WHERE id = job;
    INSERT INTO job_log (job_id, message) VALUES (job, CONCAT(outcome, ': ', why));
END//
CREATE PROCEDURE job_finish_loud(IN job BIGINT)
BEGIN
    UPDATE job SET state = 'done', tries = tries + 1 WHERE id = job;
    INSERT INTO job_log (job_id, message) VALUES (job, 'done: ');
    SELECT 'logged' AS what, job;
END//
CREATE PROCEDURE job_retry(IN job BIGINT)
BEGIN
    UPDATE job SET tries = tries + 1 WHERE id = job;
    INSERT INTO job_log (job_id, message) VALUES (job, CONCAT('retry ', (SELECT tries FROM job WHERE id = job)));
END//
DELIMITER ;
SQL

# A handler that fails the first try of the rows whose key ends in 3.
cat >h <<'SH'
#!/bin/sh
case $ROWQ_KEY in
*3) [ -e "tried.$ROWQ_KEY" ] && exit 0; : >"tried.$ROWQ_KEY"; exit 1 ;;
esac
exit 0
SH
chmod +x h

# config BATCH DONE FAILED RETRY [EXTRA...]: one queue over job.
config()
{
	cat >q.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  job:
    workers: 2
    batch: $1
    select: SELECT id, tries FROM job WHERE state = 'waiting' ORDER BY id
    exec: [$ROWQ_TEST_TMP/h]
    done: $2
    failed: $3
    retry:
      delay: 0s
      jitter: false
      update: $4
    idle: 100ms
YAML
	shift 4
	printf '    %s\n' "$@" >>q.yaml
}

# run ROWS: that many waiting rows, no log, then a drain that must pass.
run()
{
	rm -f tried.*
	sql "TRUNCATE job; TRUNCATE job_log;
	    INSERT INTO job (state) SELECT 'waiting' FROM $(seq_rows "$1")"
	"$ROWQ" -c q.yaml check --strict >check.out 2>&1 ||
	    fail "check: $(cat check.out)"
	timeout 60 "$ROWQ" -c q.yaml drain job >drain.out 2>drain.err ||
	    fail "drain: $(cat drain.err)"
}

# ---- CALL in every finishing statement ----
for batch in 1 10; do
	config "$batch" "CALL job_finish(:id, 'done', '')" \
	    "CALL job_finish(:id, 'failed', :error)" "CALL job_retry(:id)"
	run 30
	assert_eq "30 33" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(tries)) FROM job WHERE state = 'done'")" "CALL, batch $batch: rows done, tries"
	assert_eq 33 "$(sql_value "SELECT COUNT(*) FROM job_log")" "CALL, batch $batch: log rows"
	assert_eq 3 "$(sql_value "SELECT COUNT(*) FROM job_log WHERE message = 'retry 1'")" "CALL, batch $batch: retries logged"
done
# A procedure that returns a result set.
config 1 "CALL job_finish_loud(:id)" "CALL job_finish(:id, 'failed', :error)" \
    "CALL job_retry(:id)"
run 10
assert_eq 10 "$(sql_value "SELECT COUNT(*) FROM job WHERE state = 'done'")" "CALL with a result set: rows done"

# ---- lists ----
done_list="[\"UPDATE job SET state = 'done', tries = tries + 1 WHERE id = :id\", \"INSERT INTO job_log (job_id, message) VALUES (:id, CONCAT('done after ', :attempt))\", \"INSERT INTO job_log (job_id, message) VALUES (:id, 'second')\"]"
failed_list="[\"UPDATE job SET state = 'failed' WHERE id = :id\", \"INSERT INTO job_log (job_id, message) VALUES (:id, CONCAT('failed: ', LEFT(:error, 100)))\"]"
retry_list="[\"UPDATE job SET tries = tries + 1 WHERE id = :id\", \"INSERT INTO job_log (job_id, message) VALUES (:id, 'retry')\"]"
for batch in 1 10; do
	config "$batch" "$done_list" "$failed_list" "$retry_list"
	run 30
	# Row 7's second log row is there before its done: the list fails.
	assert_eq "30 33" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(tries)) FROM job WHERE state = 'done'")" "list, batch $batch: rows done, tries"
	assert_eq "30 30 3" "$(sql_value "SELECT CONCAT(SUM(message = 'second'), ' ', SUM(message LIKE 'done after %'), ' ', SUM(message = 'retry')) FROM job_log")" "list, batch $batch: log rows"
	assert_eq "done after 1,second" "$(sql_value "SELECT GROUP_CONCAT(message ORDER BY log_id) FROM job_log WHERE job_id = 1")" "list, batch $batch: in order"
done
# One statement of the list fails for one row: the whole outcome fails.
config 1 "$done_list" "$failed_list" "$retry_list"
rm -f tried.*
sql "TRUNCATE job; TRUNCATE job_log;
    INSERT INTO job (state) SELECT 'waiting' FROM $(seq_rows 10);
    INSERT INTO job_log (job_id, message) VALUES (7, 'second')"
"$ROWQ" -c q.yaml drain job >drain.out 2>drain.err || true
assert_eq "failed 0" "$(sql_value "SELECT CONCAT(state, ' ', tries) FROM job WHERE id = 7")" "row 7: failed, its done undone"
assert_eq "0 1" "$(sql_value "SELECT CONCAT(SUM(message LIKE 'done after %'), ' ', SUM(message LIKE 'failed: %Duplicate entry%')) FROM job_log WHERE job_id = 7")" "row 7's log"
assert_match "q.yaml:[0-9]+: queues.job.done\[2\] for key 7: Duplicate entry '7-second'" "$(cat drain.err)" "the statement that failed"

# ---- lists in lease mode ----
config 1 "[\"UPDATE job SET state = 'done', lease = NULL WHERE id = :id AND lease = :lease\", \"INSERT INTO job_log (job_id, message) VALUES (:id, 'done')\"]" \
    "$failed_list" "[\"UPDATE job SET tries = tries + 1, lease = NULL, leased_until = 0 WHERE id = :id AND lease = :lease\", \"INSERT INTO job_log (job_id, message) VALUES (:id, CONCAT('retry ', :attempt))\"]" \
    "lease:" "  claim: UPDATE job SET lease = :lease, leased_until = UNIX_TIMESTAMP() + :duration WHERE id = :id" \
    "  duration: 30s"
sed -i "s/ORDER BY id$/AND leased_until < UNIX_TIMESTAMP() ORDER BY id/; s/^    batch: 1$//" q.yaml
run 20
assert_eq 20 "$(sql_value "SELECT COUNT(*) FROM job WHERE state = 'done' AND lease IS NULL")" "lease list: rows done"
assert_eq "20 2" "$(sql_value "SELECT CONCAT(SUM(message = 'done'), ' ', SUM(message LIKE 'retry %')) FROM job_log")" "lease list: log rows"

# ---- a list whose first statement changes no row: the others do not run ----
# Row 7's lease is taken from it while its handler runs (the handler
# clears it, once), so its done list's first statement changes nothing:
# its log row must not be written then (at batch 1 the list rides in
# front of the next claim, src/worker_finish_text.c), and the row is
# worked again when the lease would have run out, then logged once.
cat >steal <<SH
#!/bin/sh
if [ "\$ROWQ_KEY" = 7 ] && [ ! -e stolen ]; then
	: >stolen
	mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot "$ROWQ_TEST_DB" \
	    -e "UPDATE job SET lease = 'stolen' WHERE id = 7" || exit 3
fi
exit 0
SH
chmod +x steal
config 1 "[\"UPDATE job SET state = 'done', tries = tries + 1, lease = NULL WHERE id = :id AND lease = :lease\", \"INSERT INTO job_log (job_id, message) VALUES (:id, CONCAT('done after ', :attempt))\"]" \
    "$failed_list" "$retry_list" \
    "lease:" "  claim: UPDATE job SET lease = :lease, leased_until = UNIX_TIMESTAMP() + :duration WHERE id = :id" \
    "  duration: 3s"
sed -i -e "s/ORDER BY id$/AND leased_until < UNIX_TIMESTAMP() ORDER BY id/" \
    -e "s|^    exec: .*|    exec: [$ROWQ_TEST_TMP/steal]|" q.yaml
rm -f stolen
sql "TRUNCATE job; TRUNCATE job_log;
    INSERT INTO job (state) SELECT 'waiting' FROM $(seq_rows 20)"
"$ROWQ" -c q.yaml check --strict >check.out 2>&1 || fail "check: $(cat check.out)"
# The drain that loses the lease says so and exits 1; row 7 waits for
# its lease to run out, and the next drain does it.
timeout 60 "$ROWQ" -c q.yaml drain job >drain.out 2>drain.err &&
    fail "lease lost: the first drain passed: $(cat drain.err)"
[ -e stolen ] || fail "lease lost: the handler never took row 7's lease"
assert_match "done\\[0\\] changed no row for key 7: the lease was lost" "$(cat drain.err)" "lease lost: said"
sleep 5
timeout 60 "$ROWQ" -c q.yaml drain job >drain.out 2>drain2.err ||
    fail "lease lost: second drain: $(cat drain2.err)"
assert_eq "20 20" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(tries)) FROM job WHERE state = 'done' AND lease IS NULL")" "lease lost: rows done once each"
assert_eq "20 1" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(job_id = 7)) FROM job_log")" "lease lost: one log row a row, row 7's once"

# ---- a list whose second statement fails whatever the row, at batch 1 ----
# (a JSON path without its '$.'): no row is marked, the first statement's
# change is undone with the turn, the drain ends unsuccessful and names
# the statement (done[1]).
sql "ALTER TABLE job ADD meta JSON NULL"
config 1 "[\"UPDATE job SET state = 'done', tries = tries + 1 WHERE id = :id\", \"UPDATE job SET meta = JSON_SET(COALESCE(meta, '{}'), '\$finished', 1) WHERE id = :id\"]" \
    "$failed_list" "$retry_list"
sed -i "s|^    exec: .*|    exec: [/bin/true]|" q.yaml
sql "TRUNCATE job; TRUNCATE job_log;
    INSERT INTO job (state) SELECT 'waiting' FROM $(seq_rows 10)"
timeout 60 "$ROWQ" -c q.yaml drain job >drain.out 2>drain.err &&
    fail "failing list: the drain passed: $(cat drain.err)"
assert_match "queues\.job\.done\[1\] for key [0-9]+: .*: the statement fails whatever the row" "$(cat drain.err)" "failing list: the statement named"
assert_eq "10 0 0" "$(sql_value "SELECT CONCAT_WS(' ', SUM(state = 'waiting'), SUM(tries), COUNT(meta)) FROM job")" "failing list: rows as they were"
