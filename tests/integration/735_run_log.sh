#!/usr/bin/env bash
# runs: the run log.  Every finished try of every row is one run, written
# in the transaction of its done, retry or failed: at batch 1 (the `done`
# in front of the next claim) and at batch 10 (one INSERT for a batch),
# the runs of each row are exactly its attempts, with the right outcomes;
# `rowq runs --json` lists them, oldest first, and python3 reads it; a
# run older than keep: goes at the next prune; a row that retry.gave_up
# says retry.update gave up has a failed run for its last try, not a
# retry.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create

rows=300
for batch in 1 10; do
	sql "DROP TABLE IF EXISTS email"
	sql "DROP TABLE IF EXISTS rowq_runs"
	email_table $rows
	log=$ROWQ_TEST_TMP/handled.$batch
	: >"$log"
	# Rows whose id ends in 7 fail twice, then are done; the others are
	# on their third try, and done at once.
	MAX_ATTEMPTS=3 email_config "$ROWQ_TEST_TMP/rowq.yaml" \
	    "[$HANDLERS/fake, fail-until, 3, $log]" "batch: $batch" \
	    "runs: {keep: 1h}"
	sql "UPDATE email SET attempts = 2 WHERE id % 10 <> 7"
	"$ROWQ" -c "$ROWQ_TEST_TMP/rowq.yaml" drain email -w 2 \
	    >"$ROWQ_TEST_TMP/out" 2>"$ROWQ_TEST_TMP/err" ||
		fail "batch $batch: drain failed: $(cat "$ROWQ_TEST_TMP/err")"
	# Each row's tries: its attempts, less the 2 set before the drain.
	tries=$(sql_value "SELECT SUM(attempts) - 2 * SUM(id % 10 <> 7) FROM email")
	assert_eq "$tries" "$(sql_value "SELECT COUNT(*) FROM rowq_runs")" \
	    "batch $batch: runs against the attempts column"
	assert_eq "$(wc -l <"$log")" "$(sql_value "SELECT COUNT(*) FROM rowq_runs")" \
	    "batch $batch: runs against the handler's runs"
	assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM email e WHERE
	    (SELECT COUNT(*) FROM rowq_runs r WHERE r.queue = 'email' AND
	     r.row_key = CAST(e.id AS CHAR)) <> e.attempts - IF(e.id % 10 <> 7, 2, 0)")" \
	    "batch $batch: rows whose runs are not their tries"
	assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM (SELECT row_key, attempt,
	    COUNT(*) n FROM rowq_runs GROUP BY row_key, attempt HAVING n > 1) d")" \
	    "batch $batch: a try written twice"
	assert_eq $((rows / 10 * 2)) "$(sql_value "SELECT COUNT(*) FROM rowq_runs
	    WHERE outcome = 'retry' AND reason = 'exit' AND exit_status = 3")" \
	    "batch $batch: retries"
	assert_eq $rows "$(sql_value "SELECT COUNT(*) FROM rowq_runs
	    WHERE outcome = 'done' AND reason = '' AND exit_status = 0 AND error = ''")" \
	    "batch $batch: done"
	"$ROWQ" -c "$ROWQ_TEST_TMP/rowq.yaml" runs email 17 --json \
	    >"$ROWQ_TEST_TMP/runs.json" || fail "rowq runs --json failed"
	python3 - "$ROWQ_TEST_TMP/runs.json" <<'PY' || fail "batch $batch: rowq runs --json: $(cat "$ROWQ_TEST_TMP/runs.json")"
import json, sys
runs = json.load(open(sys.argv[1]))
assert isinstance(runs, list) and len(runs) == 3, runs
assert [r["try"] for r in runs] == [1, 2, 3], runs
assert [r["outcome"] for r in runs] == ["retry", "retry", "done"], runs
for r in runs:
    assert r["key"] == "17" and r["host"] and r["duration_ms"] >= 0, r
    assert r["started"].endswith("Z"), r
assert runs[0]["started"] <= runs[1]["started"] <= runs[2]["started"], runs
assert runs[0]["exit_status"] == 3 and "exit" in runs[0]["reason"], runs
PY
done

# --outcome and --since filter; a bad outcome is a usage error.
n=$("$ROWQ" -c "$ROWQ_TEST_TMP/rowq.yaml" runs email --outcome retry --json |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
assert_eq $((rows / 10 * 2)) "$n" "runs --outcome retry"
expect_exit 2 "takes done, retry, failed, cancel or inserted" -c "$ROWQ_TEST_TMP/rowq.yaml" \
    runs email --outcome maybe

# Retention: runs older than keep: go at the next prune, the others stay.
before=$(sql_value "SELECT COUNT(*) FROM rowq_runs")
sql "UPDATE rowq_runs SET finished = UTC_TIMESTAMP() - INTERVAL 2 HOUR
    WHERE attempt = 1"
old=$(sql_value "SELECT COUNT(*) FROM rowq_runs WHERE attempt = 1")
"$ROWQ" -c "$ROWQ_TEST_TMP/rowq.yaml" prune email >"$ROWQ_TEST_TMP/prune" 2>&1 ||
	fail "rowq prune: $(cat "$ROWQ_TEST_TMP/prune")"
assert_eq $((before - old)) "$(sql_value "SELECT COUNT(*) FROM rowq_runs")" \
    "runs left after the prune"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM rowq_runs WHERE attempt = 1")" \
    "old runs left"

# Batch 1: a done that changes no row (its WHERE misses row 5) leaves a
# run of outcome none, reason no_row, written behind that done; the
# other rows' runs are done.  The row comes straight back, and the drain
# ends unsuccessful.
sql "DROP TABLE email"
sql "TRUNCATE rowq_runs"
email_table 10
email_config "$ROWQ_TEST_TMP/miss.yaml" "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/miss.log]" \
    "runs: {}"
sed -i 's|done_count = done_count + 1 WHERE id = :id|done_count = done_count + 1 WHERE id = :id AND id <> 5|' \
    "$ROWQ_TEST_TMP/miss.yaml"
"$ROWQ" -c "$ROWQ_TEST_TMP/miss.yaml" drain email >/dev/null 2>"$ROWQ_TEST_TMP/miss.err" &&
	fail "the drain succeeded with a row that never leaves"
assert_eq 9 "$(sql_value "SELECT COUNT(*) FROM rowq_runs WHERE outcome = 'done'
    AND row_key <> '5'")" "done runs of the other rows"
assert_eq "none no_row" "$(sql_value "SELECT DISTINCT CONCAT(outcome, ' ', reason)
    FROM rowq_runs WHERE row_key = '5'")" "row 5's runs"

# retry.gave_up: a retry.update that fails the row itself (a framework's
# IF(attempts >= 3, 'failed', ...)).  The given-up row's last try is a
# failed run, reason max_attempts, not a retry; at batch 3, two workers.
sql "CREATE TABLE legacy (
    id INT NOT NULL PRIMARY KEY,
    state VARCHAR(10) NOT NULL DEFAULT 'ready',
    attempts INT NOT NULL DEFAULT 0,
    INDEX (state, id)
) ENGINE=InnoDB"
sql "INSERT INTO legacy (id) SELECT seq FROM $(seq_rows 20)"
sql "TRUNCATE rowq_runs"
cat >"$ROWQ_TEST_TMP/legacy" <<'SH'
#!/bin/bash
cat >/dev/null
[ $((ROWQ_KEY % 4)) != 0 ] || { echo "broken" >&2; exit 3; }
exit 0
SH
chmod +x "$ROWQ_TEST_TMP/legacy"
cat >"$ROWQ_TEST_TMP/legacy.yaml" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  email:
    workers: 2
    batch: 3
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
    runs: {}
YAML
timeout 60 "$ROWQ" -c "$ROWQ_TEST_TMP/legacy.yaml" drain email \
    >"$ROWQ_TEST_TMP/legacy.out" 2>"$ROWQ_TEST_TMP/legacy.err" ||
	fail "legacy drain: $(cat "$ROWQ_TEST_TMP/legacy.err")"
assert_match "^email: 15 done, 10 retried, 5 failed" "$(cat "$ROWQ_TEST_TMP/legacy.out")" \
    "the legacy drain's report"
# Rows 4, 8, ..., 20: tries 1 and 2 retried, try 3 given up.
assert_eq "4 8 12 16 20" "$(sql_value "SELECT GROUP_CONCAT(CAST(row_key AS CHAR)
    ORDER BY CAST(row_key AS UNSIGNED) SEPARATOR ' ') FROM rowq_runs
    WHERE outcome = 'failed' AND attempt = 3 AND reason = 'max_attempts'
    AND exit_status = 3 AND error LIKE '%broken%'")" "given-up rows' failed runs"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM rowq_runs WHERE outcome = 'retry'
    AND attempt = 3")" "a given-up try logged as a retry"
assert_eq 10 "$(sql_value "SELECT COUNT(*) FROM rowq_runs WHERE outcome = 'retry'
    AND attempt < 3 AND reason = 'exit'")" "retried tries"
assert_eq 15 "$(sql_value "SELECT COUNT(*) FROM rowq_runs WHERE outcome = 'done'")" \
    "done runs"
assert_eq 30 "$(sql_value "SELECT COUNT(*) FROM rowq_runs")" "runs in all"
