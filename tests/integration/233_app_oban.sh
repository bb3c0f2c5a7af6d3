#!/usr/bin/env bash
# Oban's jobs on MySQL as its MyXQL migration ships the table
# (tests/apps/oban.sql), with its example (config/examples/oban.yaml):
# `rowq check --strict` passes; each job ends as Oban records it, with
# its own max_attempts (retry.max_attempts: column max_attempts) and its
# CHECK (attempt between 0 and max_attempts) never broken:
# - a job that works: completed, attempt 1;
# - a flaky one: retryable once (its error kept in errors), then completed;
# - one that always fails: discarded after exactly its own max_attempts
#   (1, 2 or 4), with as many errors and handler runs, :reason exhausted;
# - one whose handler says never ("fail"): cancelled on its first try,
#   :reason permanent;
# - another queue's jobs and a job scheduled later stay as they were;
# and the claim locks only the job it claims.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/apps/lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

app_schema oban
# 1-24: default queue; 3 holds, 6 is flaky, 9/12/15 always fail with
# max_attempts 1, 2 and 4, 18 cannot work; 25 is another queue's; 26 is
# scheduled for tomorrow.
sql "INSERT INTO oban_jobs (queue, worker, args, max_attempts, scheduled_at)
    SELECT IF(seq = 25, 'mailers', 'default'), 'MyApp.Workers.Business',
    JSON_OBJECT('note', CASE seq WHEN 3 THEN 'hold' WHEN 6 THEN 'flaky'
        WHEN 9 THEN 'retry' WHEN 12 THEN 'retry' WHEN 15 THEN 'retry'
        WHEN 18 THEN 'fail' ELSE 'work' END, 'n', seq),
    CASE seq WHEN 9 THEN 1 WHEN 12 THEN 2 WHEN 15 THEN 4 ELSE 20 END,
    IF(seq = 26, UTC_TIMESTAMP(6) + INTERVAL 1 DAY, UTC_TIMESTAMP(6))
    FROM $(seq_rows 26)"
app_config oban oban.yaml
# The next try within the drain.
sed -i -e 's/^      delay: 15s$/      delay: 0s/' oban.yaml
out=$("$ROWQ" -c oban.yaml check --strict 2>&1) || fail "check --strict: $out"
app_drain oban.yaml oban default "oban: another waiting job" \
    "UPDATE oban_jobs SET meta = meta WHERE id = 24"

state() { sql_value "SELECT CONCAT_WS(' ', state, attempt, JSON_LENGTH(errors)) FROM oban_jobs WHERE id = $1"; }
runs() { grep -c "^{\"id\":$1," handled || true; }
assert_eq "completed 1 0" "$(state 1)" "a job that works"
assert_eq 19 "$(sql_value "SELECT COUNT(*) FROM oban_jobs WHERE state = 'completed' AND attempt = 1 AND completed_at IS NOT NULL AND JSON_LENGTH(errors) = 0")" "jobs done on their first try"
assert_eq "completed 2 1" "$(state 6)" "the flaky job"
assert_match '"attempt": ?1' "$(sql_value "SELECT errors FROM oban_jobs WHERE id = 6")" "the flaky job's error, by attempt"
assert_eq "discarded 1 1" "$(state 9)" "a job of 1 try"
assert_eq "discarded 2 2" "$(state 12)" "a job of 2 tries"
assert_eq "discarded 4 4" "$(state 15)" "a job of 4 tries"
assert_eq "1 2 4" "$(runs 9) $(runs 12) $(runs 15)" "handler runs of the jobs of 1, 2 and 4 tries"
assert_eq 3 "$(sql_value "SELECT COUNT(*) FROM oban_jobs WHERE state = 'discarded' AND discarded_at IS NOT NULL AND cancelled_at IS NULL")" "discarded_at set"
assert_eq "cancelled 1 1" "$(state 18)" "a job that cannot work"
assert_eq 1 "$(sql_value "SELECT cancelled_at IS NOT NULL AND discarded_at IS NULL FROM oban_jobs WHERE id = 18")" "cancelled_at set"
assert_match "this cannot work" "$(sql_value "SELECT errors FROM oban_jobs WHERE id = 18")" "its error"
assert_eq "available 0 0" "$(state 25)" "another queue's job"
assert_eq "available 0 0" "$(state 26)" "a job scheduled for tomorrow"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM oban_jobs WHERE attempt > max_attempts")" "attempt within max_attempts"
assert_match "default: 20 done, 5 retried, 4 failed, 0 errors" "$(cat oban.out)" "the summary"
