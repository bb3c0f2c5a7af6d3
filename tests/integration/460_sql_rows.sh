#!/usr/bin/env bash
# SQL that goes wrong row by row, with the select and statements accepted
# by `rowq check`.  What an operator expects: the rows that can be done
# are done, the bad rows are named (queue and key) in a bounded number of
# log lines, no row is done twice, no hot loop.
#   1. The key column is NULL in some rows (key: names a nullable column),
#      one of them at the head of the queue, batch 1.
#   2. The select returns the same key twice (a join), batch 5.
#   3. The done statement fails for one row only (Data too long, 1406),
#      at the head of the queue, one worker.
#   4. BIT values wider than a byte reach the handler as numbers (JSON),
#      the value the column holds.
#
# Each of these was a bug once (see tests/TORTURE.md); should one come
# back, the test fails naming it, after checking everything else.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

bugs=()

# rowq_run CONFIG LOG SECONDS: `rowq run` for SECONDS, then stop it.
rowq_for()
{
	rowq_start "$1" "$2"
	sleep "$3"
	kill -0 "$ROWQ_PID" || fail "$1: rowq died: $(tail -5 "$2")"
	stop_rowq "$ROWQ_PID"
}

# ---- 1. NULL keys ----
sql "CREATE TABLE jobs (id INT PRIMARY KEY, k VARCHAR(20) NULL,
    status VARCHAR(10) NOT NULL DEFAULT 'waiting', n INT NOT NULL DEFAULT 0,
    INDEX (status, id));
    INSERT INTO jobs (id, k) VALUES (1, NULL), (2, 'b'), (3, NULL), (4, 'd'), (5, 'e')"
cat >null.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  jobs:
    workers: 1
    key: k
    select: SELECT id, k FROM jobs WHERE status = 'waiting' ORDER BY id
    exec: [$HANDLERS/fake, append, $ROWQ_TEST_TMP/null.handled]
    done: UPDATE jobs SET status = 'done', n = n + 1 WHERE k = :k
    failed: UPDATE jobs SET status = 'failed' WHERE k = :k
    idle: 200ms
YAML
out=$("$ROWQ" -c null.yaml check 2>&1) || fail "check of a nullable key: $out"
assert_match "null.yaml:[0-9]+: queues.jobs.key: the key column k may be NULL" "$out" "check warns of a nullable key"
rowq_for null.yaml null.log 5
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM jobs WHERE n > 1")" "NULL keys: rows done twice"
assert_eq 2 "$(sql_value "SELECT COUNT(*) FROM jobs WHERE k IS NULL AND status = 'waiting'")" "NULL keys: NULL-key rows left alone"
nulllines=$(lines null.log 'key column is NULL')
figure "NULL key: lines about it in 5 s" "$nulllines"
done_rows=$(sql_value "SELECT COUNT(*) FROM jobs WHERE status = 'done'")
figure "NULL key: rows with a key done (of 3)" "$done_rows"
if [ "$done_rows" != 3 ] || [ "$nulllines" -gt 3 ]; then
	bugs+=("worker.c: a NULL-key row at the head blocks the queue ($done_rows of 3 keyed rows done in 5 s) and is logged every second ($nulllines lines in 5 s), without growing delays")
fi

# ---- 2. the same key twice in one claim ----
email_table 6
sql "CREATE TABLE tags (email_id BIGINT, tag VARCHAR(10), PRIMARY KEY (email_id, tag));
    INSERT INTO tags VALUES (1,'a'), (2,'a'), (2,'b'), (3,'a'), (4,'a'), (5,'a'), (6,'a')"
WORKERS=1 email_config dup.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/dup.handled]" "batch: 5"
python3 - <<'PY'
s = open('dup.yaml').read()
s = s.replace("SELECT id, recipient, subject, attempts FROM email\n      WHERE status",
    "SELECT e.id, t.tag, e.attempts FROM email e JOIN tags t ON t.email_id = e.id\n      WHERE e.status")
s = s.replace("ORDER BY id", "ORDER BY e.id, t.tag")
open('dup.yaml', 'w').write(s)
PY
"$ROWQ" -c dup.yaml check >/dev/null 2>&1 || fail "check of the join: $("$ROWQ" -c dup.yaml check 2>&1)"
rowq_for dup.yaml dup.log 3
assert_eq 6 "$(email_count "status = 'sent'")" "duplicate key: rows sent"
twice=$(email_count "done_count > 1")
runs=$(grep -c '^2 ' dup.handled || true)
figure "duplicate key: rows done twice" "$twice"
figure "duplicate key: handler runs of the twice-returned row" "$runs"
if [ "$twice" != 0 ] || [ "$runs" != 1 ]; then
	bugs+=("worker.c: a key the select returns twice in one claim is handled and done twice (row 2: done_count $(sql_value "SELECT done_count FROM email WHERE id = 2"), $runs handler runs) with no error logged")
elif ! grep -qE 'email/1: row 2: .*(twice|duplicate)' dup.log; then
	fail "duplicate key: handled once but not logged: $(cat dup.log)"
fi
sql "DROP TABLE email"

# ---- 3. done fails for one row ----
# With batch 1 the row's own done fails.  With batch 5 the ok rows' done
# runs for the whole batch in one execute, which stops at row 3 with rows
# 1 and 2 already changed: they must be done once, not twice.  (MySQL has
# no bulk execute: there the done of a batch runs row by row from the
# start, and no line speaks of one.)
bulk=1
[ "$(server_family)" = mariadb ] || bulk=0
for batch in 1 5; do
	f=fatal$batch
	email_table 8
	WORKERS=1 email_config $f.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/$f.handled]" "batch: $batch"
	sed -i "s|          done_count = done_count + 1 WHERE id = :id|          done_count = done_count + 1, subject = IF(id = 3, REPEAT('x', 300), subject) WHERE id = :id|" $f.yaml
	grep -q "REPEAT('x', 300)" $f.yaml || fail "$f.yaml: edit did not apply"
	rowq_for $f.yaml $f.log 5
	assert_eq 0 "$(email_count "done_count > 1")" "failing done, batch $batch: rows done twice"
	assert_match "queues.email.done for key 3: Data too long" "$(cat $f.log)" "failing done, batch $batch: error names statement and key"
	others=$(email_count "id <> 3 AND status = 'sent'")
	tries=$(grep -c '^3 ' $f.handled || true)
	figure "failing done, batch $batch: other rows done in 5 s (of 7)" "$others"
	figure "failing done, batch $batch: handler runs of the bad row in 5 s" "$tries"
	if [ "$others" != 7 ]; then
		bugs+=("worker.c: a done statement that fails for one row (1406, batch $batch) rolls the row back and claims it again and again with 1-60 s pauses; the rows behind it wait ($others of 7 done in 5 s; the bad row's handler ran $tries times); run failed (or retry) for it in the same transaction instead")
	else
		assert_match "failed|retry" "$(sql_value "SELECT status FROM email WHERE id = 3")" "failing done, batch $batch: the bad row's state"
		assert_eq 1 "$tries" "failing done, batch $batch: handler runs of the bad row"
	fi
	if [ "$batch" != 1 ] && [ "$bulk" = 1 ]; then
		assert_match "done for 5 rows at once: .*Data too long.*one by one" \
		    "$(cat $f.log)" "failing done, batch $batch: the bulk done's failure"
	elif [ "$batch" != 1 ]; then
		assert_eq 0 "$(lines $f.log 'at once')" \
		    "failing done, batch $batch: lines about a bulk done, on MySQL"
		assert_match "done for key 3: Data too long.*marking the row failed instead" \
		    "$(cat $f.log)" "failing done, batch $batch: the done's failure"
	fi
	sql "DROP TABLE email"
done

# ---- 3b. the bulk done fails in a batch that also retried a row ----
# Row 6's done fails (1406), row 7's handler fails its first try (storm:
# key % 7), rows 6-8 are one batch of 5.  Going back to run done row by
# row must not undo row 7's retry: it is tried twice, not three times.
email_table 8
WORKERS=1 DELAY=0s email_config mixed.yaml "[$HANDLERS/storm, exec, $ROWQ_TEST_TMP/mixed.handled, \"0\"]" "batch: 5"
sed -i "s|          done_count = done_count + 1 WHERE id = :id|          done_count = done_count + 1, subject = IF(id = 6, REPEAT('x', 300), subject) WHERE id = :id|" mixed.yaml
grep -q "REPEAT('x', 300)" mixed.yaml || fail "mixed.yaml: edit did not apply"
rowq_for mixed.yaml mixed.log 4
assert_eq "7 1
7 2" "$(grep '^7 ' mixed.handled | cut -d' ' -f1,2)" "bulk done and a retry in one batch: tries of row 7"
assert_eq "sent 2" "$(sql_value "SELECT CONCAT(status, ' ', attempts) FROM email WHERE id = 7")" "bulk done and a retry in one batch: row 7"
assert_eq "failed" "$(sql_value "SELECT status FROM email WHERE id = 6")" "bulk done and a retry in one batch: row 6"
assert_eq 0 "$(email_count "done_count > 1")" "bulk done and a retry in one batch: rows done twice"
assert_eq 7 "$(email_count "status = 'sent'")" "bulk done and a retry in one batch: rows sent"
sql "DROP TABLE email"

# ---- 3c. a done the server cannot run in bulk ----
# CALL is not for array binding (1295): the batch runs row by row, and
# the next batches too, with one line about it (none on MySQL, where
# every batch runs row by row).
email_table 12
sql "CREATE PROCEDURE fin(p BIGINT) UPDATE email SET status = 'sent', attempts = attempts + 1, done_count = done_count + 1 WHERE id = p"
WORKERS=1 email_config call.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/call.handled]" "batch: 5"
python3 - <<'PY'
import re
s = open('call.yaml').read()
s, n = re.subn(r"    done: UPDATE email SET status = 'sent'[^\n]*\n(          [^\n]*\n)*", "    done: CALL fin(:id)\n", s)
assert n == 1, n
open('call.yaml', 'w').write(s)
PY
grep -q "done: CALL fin(:id)" call.yaml || fail "call.yaml: edit did not apply"
rowq_for call.yaml call.log 3
assert_eq 12 "$(email_count "status = 'sent' AND done_count = 1")" "CALL as done: rows done once"
assert_eq "$bulk" "$(lines call.log 'at once: .*one by one')" "CALL as done: lines about the bulk execute"
sql "DROP TABLE email; DROP PROCEDURE fin"

# ---- 3d. the table changes under a running worker ----
# SELECT * and two ALTER TABLEs, one that adds a column and one that
# renames one: the worker notices, prepares and checks again, and goes on.
email_table 10
WORKERS=1 IDLE=200ms email_config alter.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/alter.handled]"
sed -i "s|SELECT id, recipient, subject, attempts FROM email|SELECT * FROM email|" alter.yaml
grep -q "SELECT \* FROM email" alter.yaml || fail "alter.yaml: edit did not apply"
rowq_start alter.yaml alter.log
wait_until 20 '[ "$(email_count "status = '"'sent'"'")" = 10 ]' || fail "alter: first rows not done: $(cat alter.log)"
sql "ALTER TABLE email ADD COLUMN extra INT NOT NULL DEFAULT 7"
sql "INSERT INTO email (recipient, subject, body) SELECT CONCAT('a', seq), 's', 'b' FROM $(seq_rows 5)"
wait_until 20 '[ "$(email_count "status = '"'sent'"'")" = 15 ]' || fail "alter: rows after ADD COLUMN not done: $(cat alter.log)"
sql "ALTER TABLE email RENAME COLUMN body TO content"
sql "INSERT INTO email (recipient, subject, content) SELECT CONCAT('r', seq), 's', 'b' FROM $(seq_rows 5)"
wait_until 20 '[ "$(email_count "status = '"'sent'"'")" = 20 ]' || fail "alter: rows after RENAME COLUMN not done: $(cat alter.log)"
kill -0 "$ROWQ_PID" || fail "alter: rowq died: $(tail -5 alter.log)"
stop_rowq "$ROWQ_PID"
assert_eq 0 "$(email_count "done_count <> 1")" "alter: rows not done exactly once"
assert_eq 2 "$(lines alter.log "columns changed since it was prepared")" "alter: lines about the changed columns"
sql "DROP TABLE email"

# ---- 4. BIT ----
sql "CREATE TABLE bits (id INT PRIMARY KEY, status VARCHAR(10) NOT NULL DEFAULT 'waiting',
    b1 BIT(1), b12 BIT(12), b64 BIT(64), INDEX (status, id));
    INSERT INTO bits VALUES (1, 'waiting', b'1', b'101010101010', b'1000000000000000000000000000000000000000000000000000000000000001')"
cat >bits.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  bits:
    select: SELECT id, b1, b12, b64 FROM bits WHERE status = 'waiting' ORDER BY id
    exec: [$HANDLERS/fake, stdin, $ROWQ_TEST_TMP/bits.json]
    done: UPDATE bits SET status = 'done' WHERE id = :id
    failed: UPDATE bits SET status = 'failed' WHERE id = :id
YAML
"$ROWQ" -c bits.yaml drain bits >/dev/null 2>bits.err || fail "drain bits: $(cat bits.err)"
got=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["b1"], r["b12"], r["b64"])' bits.json)
figure "BIT(1), BIT(12), BIT(64) as the handler got them" "$got"
if [ "$got" != "1 2730 9223372036854775809" ]; then
	bugs+=("db.c: BIT values wider than a byte reach the handler byte-swapped: BIT(1) b'1', BIT(12) b'101010101010' and BIT(64) 0x8000000000000001 arrive as $got, not 1 2730 9223372036854775809")
fi

if [ "${#bugs[@]}" -gt 0 ]; then
	printf '%s\n' "${bugs[@]}"
	fail "${#bugs[@]} bug(s) back: ${bugs[*]}"
fi
