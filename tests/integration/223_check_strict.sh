#!/usr/bin/env bash
# `rowq check --strict` exits 1 on any warning (without --strict, 0), and
# the warnings about a queue's semantics:
# - a select without ORDER BY claims rows in no defined order;
# - a lease queue whose renewal and finishing statements never use
#   :lease (or :lease_int) fences nothing: a worker whose lease ran out
#   still records its outcome; a lease.release that does not test it
#   gives back another worker's lease at a stop; one that binds a try's
#   outcome (:error), which no released row has, is refused;
# - retry: without attempts_column retries without a limit (a note, not
#   a warning): a row whose handler fails 7 times is tried an 8th time;
# - :lease_int, the lease token as a positive BIGINT, fits an integer
#   claim column: each claim's is new, and the finishing statement that
#   tests it records the outcome.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE job (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    state VARCHAR(10) NOT NULL DEFAULT 'waiting',
    retry_at BIGINT NOT NULL DEFAULT 0,
    claim_id BIGINT UNSIGNED NOT NULL DEFAULT 0,
    claimed_until BIGINT NOT NULL DEFAULT 0,
    tries INT NOT NULL DEFAULT 0,
    INDEX (state, id)
) ENGINE=InnoDB;
CREATE TABLE token (job_id BIGINT NOT NULL, claim_id BIGINT UNSIGNED NOT NULL)"

# queue NAME SELECT [KEY: VALUE...]: a configuration of one queue.
queue()
{
	cat >q.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  job:
    select: $1
    exec: [/bin/true]
    done: UPDATE job SET state = 'done' WHERE id = :id
    failed: UPDATE job SET state = 'failed' WHERE id = :id
    idle: 100ms
YAML
	shift
	printf '    %s\n' "$@" >>q.yaml
}

# check [--strict]: rowq check's output in $out, its exit status in $status.
check()
{
	status=0
	out=$("$ROWQ" -c q.yaml check "$@" 2>&1) || status=$?
}

# ---- a select without ORDER BY ----
queue "SELECT id FROM job WHERE state = 'waiting'"
line=$(grep -n '^    select:' q.yaml | cut -d: -f1)
check
assert_eq 0 "$status" "check: exit status ($out)"
assert_match "q.yaml:$line: queues.job.select: the select has no ORDER BY: rows are claimed in no defined order" "$out" "no ORDER BY"
check --strict
assert_eq 1 "$status" "check --strict: exit status ($out)"
assert_match "q.yaml: [0-9]+ warnings?, and --strict: not ok" "$out" "check --strict: the verdict"
# ...and a clean queue passes --strict.
queue "SELECT id FROM job WHERE state = 'waiting' ORDER BY id"
check --strict
assert_eq 0 "$status" "check --strict of a clean queue ($out)"
assert_match "q.yaml: ok, 1 queue" "$out" "check --strict: ok"

# ---- a lease that nothing fences ----
queue "SELECT id FROM job WHERE state = 'waiting' AND claimed_until < UNIX_TIMESTAMP() ORDER BY id" \
    "lease:" \
    "  claim: UPDATE job SET claimed_until = UNIX_TIMESTAMP() + :duration WHERE id = :id" \
    "  duration: 30s"
check
assert_eq 0 "$status" "lease check: exit status ($out)"
assert_match "queues.job.lease: neither lease.renew nor done, failed or retry.update uses :lease or :lease_int: nothing tells this claim from a later one" "$out" "lease without a token"
check --strict
assert_eq 1 "$status" "lease check --strict: exit status ($out)"

# ---- :lease_int ----
queue "SELECT id FROM job WHERE state = 'waiting' AND claimed_until < UNIX_TIMESTAMP() ORDER BY id" \
    "lease:" \
    "  claim: UPDATE job SET claim_id = :lease_int, claimed_until = UNIX_TIMESTAMP() + :duration WHERE id = :id" \
    "  duration: 30s"
sed -i "s/^    done: .*/    done: UPDATE job SET state = 'done' WHERE id = :id AND claim_id = :lease_int/" q.yaml
sql "INSERT INTO job (state) SELECT 'waiting' FROM $(seq_rows 30);
    CREATE TRIGGER job_token AFTER UPDATE ON job FOR EACH ROW
        INSERT INTO token VALUES (NEW.id, NEW.claim_id)"
check --strict
assert_eq 0 "$status" "check --strict with :lease_int ($out)"
"$ROWQ" -c q.yaml drain job -w 2 >drain.out 2>drain.err || fail "drain: $(cat drain.err)"
assert_eq 30 "$(sql_value "SELECT COUNT(*) FROM job WHERE state = 'done'")" "rows done, each by its own token"
assert_eq "30 30 0" "$(sql_value "SELECT CONCAT(COUNT(DISTINCT claim_id), ' ', COUNT(DISTINCT job_id), ' ', SUM(claim_id = 0 OR claim_id > 9223372036854775807)) FROM token")" "tokens: one per claim, positive BIGINTs"

# ---- lease.release without the token ----
queue "SELECT id FROM job WHERE state = 'waiting' AND claimed_until < UNIX_TIMESTAMP() ORDER BY id" \
    "lease:" \
    "  claim: UPDATE job SET claim_id = :lease_int, claimed_until = UNIX_TIMESTAMP() + :duration WHERE id = :id" \
    "  duration: 30s" \
    "  ahead: 5" \
    "  release: UPDATE job SET claimed_until = 0 WHERE id = :id"
sed -i "s/^    done: .*/    done: UPDATE job SET state = 'done' WHERE id = :id AND claim_id = :lease_int/" q.yaml
line=$(grep -n '^      release:' q.yaml | cut -d: -f1)
check
assert_match "q.yaml:$line: queues.job.lease.release: uses neither :lease nor :lease_int: at a stop it gives a row back whoever holds it" \
    "$out" "lease.release without a token"
sed -i "s/^      release: .*/      release: UPDATE job SET claimed_until = 0 WHERE id = :id AND claim_id = :lease_int/" q.yaml
check --strict
assert_eq 0 "$status" "check --strict with lease.release testing the token ($out)"

# ---- a try's outcome in a lease statement ----
# lease.release runs for rows never handled, claim and renew before the
# answer: :error there would bind nothing, or the last handled row's.
sed -i "s/^      release: .*/      release: UPDATE job SET claimed_until = 0, state = :error WHERE id = :id AND claim_id = :lease_int/" q.yaml
line=$(grep -n '^      release:' q.yaml | cut -d: -f1)
check
assert_eq 78 "$status" "check with :error in lease.release ($out)"
assert_match "q.yaml:$line: queues.job.lease.release: :error is part of a try's outcome, and this statement runs when no row has one" \
    "$out" ":error in lease.release"

# ---- retry: without attempts_column ----
sql "DROP TRIGGER job_token; TRUNCATE job; INSERT INTO job (state) VALUES ('waiting'), ('waiting')"
cat >fails7 <<'SH'
#!/bin/sh
# Fails the first 7 tries of each row, then succeeds.
n=$(cat "tries.$ROWQ_KEY" 2>/dev/null || echo 0)
echo $((n + 1)) >"tries.$ROWQ_KEY"
[ "$n" -ge 7 ]
SH
chmod +x fails7
queue "SELECT id, retry_at FROM job WHERE state = 'waiting' AND retry_at <= UNIX_TIMESTAMP() ORDER BY id"
sed -i "s|^    exec: .*|    exec: [$ROWQ_TEST_TMP/fails7]|" q.yaml
cat >>q.yaml <<'YAML'
    retry:
      delay: 0s
      jitter: false
      update: UPDATE job SET tries = tries + 1, retry_at = retry_at + 1 WHERE id = :id
YAML
line=$(grep -n '^    retry:' q.yaml | cut -d: -f1)
check --strict
assert_eq 0 "$status" "retry without attempts_column: check --strict ($out)"
assert_match "q.yaml:$line: queues.job.retry: without attempts_column every try is try 1: a failing row is retried without a limit, each time after 0s" "$out" "the note"
"$ROWQ" -c q.yaml drain job >drain.out 2>drain.err || fail "drain: $(cat drain.err)"
assert_eq "done 7" "$(sql_value "SELECT CONCAT(MIN(state), ' ', MIN(tries)) FROM job")" "rows done after 7 retries"
assert_match "job: 2 done, 14 retried, 0 failed, 0 errors" "$(cat drain.out)" "the summary"
# max_attempts counts tries in attempts_column: without one, refused.
sed -i 's/^      delay: 0s$/      delay: 0s\n      max_attempts: 3/' q.yaml
check
assert_eq 78 "$status" "max_attempts without attempts_column ($out)"
assert_match "queues.job.retry.max_attempts: max_attempts counts tries in retry.attempts_column: name one, or leave max_attempts out to retry without a limit" "$out" "the refusal"
