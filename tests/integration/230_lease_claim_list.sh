#!/usr/bin/env bash
# lease.claim and lease.renew as lists of statements, the shape of a job
# table whose claim moves a row between tables: the claim inserts a
# claimed-execution row, deletes the ready one and counts the claim, in
# the claim's transaction, the first statement's changed rows saying
# whether the row was taken; renew is a list too.  3,000 rows (ROWS),
# 2 daemons of 2 workers: read while they run, no job is ever both ready
# and claimed, nor missing from all three of ready, claimed and finished;
# afterwards every job was claimed once, handled once and finished once;
# a claim whose last statement failed (a deadlock) was rolled back whole
# and tried again.
# Then rows slower than a third of the lease: each renewal runs the whole
# renew list.  check prepares each statement of the lists.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=${ROWS:-3000}
log=$ROWQ_TEST_TMP/handled

sql "CREATE TABLE jobs (
    id BIGINT NOT NULL PRIMARY KEY,
    claims INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    finished_at DATETIME NULL
) ENGINE=InnoDB;
CREATE TABLE ready_executions (
    job_id BIGINT NOT NULL PRIMARY KEY,
    priority INT NOT NULL DEFAULT 0,
    INDEX (priority, job_id)
) ENGINE=InnoDB;
CREATE TABLE claimed_executions (
    job_id BIGINT NOT NULL PRIMARY KEY,
    lease CHAR(32) NOT NULL,
    expires_at BIGINT NOT NULL
) ENGINE=InnoDB;
CREATE TABLE renewals (
    n BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_id BIGINT NOT NULL
) ENGINE=InnoDB"

# config FILE HANDLER...: a daemon's configuration.
config()
{
	local file=$1 d
	shift
	d=$(basename "$file" .yaml)
	cat >"$file" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $ROWQ_TEST_TMP/$d.sock
queues:
  jobs:
    workers: 2
    select: SELECT job_id AS id FROM ready_executions ORDER BY priority, job_id
    pipe: [$*]
    idle: 100ms
    lease:
      duration: 3s
      claim:
        - INSERT INTO claimed_executions (job_id, lease, expires_at)
          SELECT job_id, :lease, UNIX_TIMESTAMP() + :duration
          FROM ready_executions WHERE job_id = :id
        - DELETE FROM ready_executions WHERE job_id = :id
        - UPDATE jobs SET claims = claims + 1 WHERE id = :id
      renew:
        - UPDATE claimed_executions SET expires_at = UNIX_TIMESTAMP() + :duration
          WHERE job_id = :id AND lease = :lease
        - INSERT INTO renewals (job_id) VALUES (:id)
    done:
      - DELETE FROM claimed_executions WHERE job_id = :id AND lease = :lease
      - UPDATE jobs SET done_count = done_count + 1, finished_at = NOW()
        WHERE id = :id
    failed:
      - DELETE FROM claimed_executions WHERE job_id = :id AND lease = :lease
      - UPDATE jobs SET finished_at = NOW() WHERE id = :id
YAML
}

# fill N: N jobs, each ready.
fill()
{
	: >"$log"
	sql "DELETE FROM jobs; DELETE FROM ready_executions;
	    DELETE FROM claimed_executions; DELETE FROM renewals;
	    INSERT INTO jobs (id) SELECT seq FROM $(seq_rows "$1");
	    INSERT INTO ready_executions (job_id, priority)
	    SELECT id, id % 3 FROM jobs"
}

# The jobs in each place, read in one statement: "ready claimed finished
# both", both being the jobs ready and claimed at once.
places()
{
	sql_value "SELECT CONCAT((SELECT COUNT(*) FROM ready_executions), ' ',
	    (SELECT COUNT(*) FROM claimed_executions), ' ',
	    (SELECT COUNT(*) FROM jobs WHERE finished_at IS NOT NULL), ' ',
	    (SELECT COUNT(*) FROM ready_executions r
	     JOIN claimed_executions c USING (job_id)))"
}

on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
# check prepares every statement of each list, and names the one the
# server refuses by its place.
config c.yaml "$HANDLERS/pipefake, ok, $log"
sed -i 's/INSERT INTO renewals (job_id)/INSERT INTO renewals (no_such_column)/' c.yaml
status=0
"$ROWQ" -c c.yaml check >check.out 2>&1 || status=$?
assert_eq 78 "$status" "check's exit status with a bad lease.renew[1]"
assert_match "c.yaml:[0-9]+: queues.jobs.lease.renew\[1\]: Unknown column 'no_such_column'" "$(cat check.out)" "check names the statement"

config a.yaml "$HANDLERS/pipefake, ok, $log"
config b.yaml "$HANDLERS/pipefake, ok, $log"
"$ROWQ" -c a.yaml check --strict >check.out 2>&1 || fail "check: $(cat check.out)"

# ---- 1. a few thousand rows, two daemons ----
fill "$rows"
# The claim list's last statement fails once, for job 13, as InnoDB fails
# a deadlock's victim: the claim is rolled back, its INSERT and DELETE
# with it, and tried again.  Were they kept, job 13 would be claimed and
# never ready again: never handled, never finished.  The marker table is
# not transactional, so that the failure happens once.
sql <<'SQL'
CREATE TABLE victim (id BIGINT PRIMARY KEY) ENGINE=MyISAM;
DELIMITER //
CREATE TRIGGER jobs_claim_fails BEFORE UPDATE ON jobs FOR EACH ROW
BEGIN
    IF NEW.id = 13 AND NEW.claims > OLD.claims AND NOT EXISTS (SELECT 1 FROM victim) THEN
        INSERT INTO victim VALUES (NEW.id);
        SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213,
            MESSAGE_TEXT = 'Deadlock found when trying to get lock; try restarting transaction';
    END IF;
END//
DELIMITER ;
SQL
start=$(now_us)
rowq_start a.yaml a.log; A=$ROWQ_PID
rowq_start b.yaml b.log; B=$ROWQ_PID
looks=0
while :; do
	read -r ready claimed finished both <<<"$(places)"
	assert_eq 0 "$both" "jobs both ready and claimed (look $looks)"
	assert_eq "$rows" "$((ready + claimed + finished))" "jobs ready, claimed or finished (look $looks: $ready $claimed $finished)"
	looks=$((looks + 1))
	[ "$finished" = "$rows" ] && break
	[ $(( ($(now_us) - start) / 1000000 )) -lt 300 ] || fail "not every job finished in 300 s: $ready $claimed $finished"
	sleep 0.2
done
took_us=$(( $(now_us) - start ))
figure "lease claim list: rows a second, 2 daemons of 2 workers" \
    "$(awk -v n="$rows" -v t="$took_us" 'BEGIN { printf "%.0f\n", n / (t / 1e6) }')"
echo "$looks looks at the tables while they ran"
assert_ge "$looks" 2 "looks while the daemons ran"
assert_eq "$rows $rows $rows" "$(sql_value "SELECT CONCAT(SUM(claims), ' ', SUM(done_count), ' ', COUNT(*)) FROM jobs")" "claims, done statements, jobs"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM jobs WHERE claims <> 1 OR done_count <> 1")" "jobs claimed or finished other than once"
assert_eq "0 0" "$(sql_value "SELECT CONCAT((SELECT COUNT(*) FROM ready_executions), ' ', (SELECT COUNT(*) FROM claimed_executions))")" "ready and claimed rows left"
assert_eq "$rows" "$(awk '{ print $1 }' "$log" | sort -u | wc -l)" "jobs handled"
assert_eq "$rows" "$(wc -l <"$log")" "handler runs"
assert_eq 13 "$(sql_value "SELECT id FROM victim")" "the claim that failed"
assert_match "Deadlock found" "$(cat a.log b.log)" "the failed claim, logged"
assert_eq "1 1" "$(sql_value "SELECT CONCAT(claims, ' ', done_count) FROM jobs WHERE id = 13")" "job 13: claims, done statements"
sql "DROP TRIGGER jobs_claim_fails"
# Both daemons worked.
assert_ge "$(awk '{ print $2 }' "$log" | sort -u | wc -l)" 4 "pipe handlers that worked rows"

# ---- 2. renewals run the renew list ----
stop_rowq "$A"
stop_rowq "$B"
config a.yaml "$HANDLERS/pipefake, sleep, \"2200\", $log"
fill 4
rowq_start a.yaml a.log; A=$ROWQ_PID
wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM jobs WHERE finished_at IS NOT NULL")" = 4 ]' ||
	fail "the slow jobs did not finish: $(places)"
stop_rowq "$A"
assert_eq "4 4" "$(sql_value "SELECT CONCAT(SUM(claims), ' ', SUM(done_count)) FROM jobs")" "slow jobs: claims, done statements"
# A 2.2 s row under a 3 s lease renewed every second: 2 renewals each.
assert_ge "$(sql_value "SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM renewals GROUP BY job_id) r")" 1 "renewals of each slow job, by the list's second statement"
assert_eq 4 "$(sql_value "SELECT COUNT(DISTINCT job_id) FROM renewals")" "slow jobs renewed"
