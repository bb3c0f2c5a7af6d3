#!/usr/bin/env bash
# Batch 1: a row's `done` rides in front of the COMMIT and the next claim,
# as an EXECUTE of it prepared by SQL (src/worker_finish_text.c).
#   1. An integer key: the drain's `done`s are not prepared executes (they
#      went with the claims), and every row is done once.
#   2. Binary keys whose bytes are SQL's own (a quote, a backslash, ';',
#      zero bytes, "'; DROP"), a negative value in `n - :delta`, and a
#      `-- comment` ending the `done`: given as X'hex' and digits, each
#      row done once with the right value, nothing else touched.
#   3. A text key (VARCHAR): its `done` stays a prepared execute per row.
#   5. A `done` of two statements (a fan-in's counter): each goes as text
#      the same way, behind a SAVEPOINT and the check that the first
#      changed a row; no prepared executes, every row once, the counter
#      counted down once a row.
#   6. Lease mode, batch 1: each row's lease goes with its COMMIT in one
#      round trip (EXECUTE rowq_lease, finish_text_lease), its `done` with
#      the next claim: no prepared execute per row; every row leased and
#      done once, with its own token, by two workers.
#   4. A stop while the last row's handler runs, which then succeeds: its
#      `done`, held for a claim that never comes, runs before the COMMIT;
#      the rows behind it are left waiting, and a drain does them once.
# A `done` that fails inside the multi-statement (the row marked failed
# instead, the COMMIT only after it) is 460_sql_rows, batch 1.
# serial: counts the whole server's prepared executes (Com_stmt_execute).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

# Prepared executes in a round trip of their own: Com_stmt_execute counts
# an EXECUTE inside a multi-statement too, and Com_execute_sql only those.
executes()
{
	sql "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_stmt_execute',
	    'Com_execute_sql')" | awk '{ v[$1] = $2 }
	    END { print v["Com_stmt_execute"] - v["Com_execute_sql"] }'
}
email_count() { sql_value "SELECT COUNT(*) FROM email WHERE $1"; }

# ---- 1. an integer key ----
email_table 40
WORKERS=1 email_config int.yaml "[x]" "batch: 1"
sed -i "s|^    exec: .*|    pipe: [$HANDLERS/pipefake, ok, $ROWQ_TEST_TMP/int.handled]|" int.yaml
e0=$(executes)
timeout 30 "$ROWQ" -c int.yaml drain email >int.log 2>&1 || fail "int drain: $(cat int.log)"
e1=$(executes)
assert_eq "40 40 1 1" "$(sql_value "SELECT CONCAT_WS(' ', COUNT(*), SUM(done_count),
    MIN(done_count), MAX(done_count)) FROM email WHERE status = 'sent'")" "int: every row sent once"
# The claim's first-key read runs prepared about once a second; 40 done
# executes would be one per row.
assert_le $((e1 - e0)) 10 "int: prepared executes during a 40-row drain"
sql "DROP TABLE email"

# ---- 2. binary keys with SQL's own bytes ----
sql "CREATE TABLE bin (
    k VARBINARY(16) NOT NULL PRIMARY KEY,
    delta INT NOT NULL,
    n INT NOT NULL DEFAULT 0,
    status ENUM('waiting', 'done') NOT NULL DEFAULT 'waiting',
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, k)
) ENGINE=InnoDB"
# ' \ ; NUL, two NULs, '; DROP, 0xff, 'a', 'A'
keys="27 5c 3b 00 0000 273b2044524f50 ff 61 41"
for k in $keys; do
	sql "INSERT INTO bin (k, delta) VALUES (UNHEX('$k'), -3)"
done
# And 20 plain ones, for the count of executes.
sql "INSERT INTO bin (k, delta) SELECT UNHEX(HEX(seq + 1000)), -3 FROM $(seq_rows 20)"
# Bystanders a wrong literal could hit: a prefix of '; DROP, and 'b'.
sql "INSERT INTO bin (k, delta, status) VALUES (UNHEX('273b'), -3, 'done'),
    (UNHEX('62'), -3, 'done')"
cat >bin.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  bin:
    workers: 1
    batch: 1
    select: SELECT k, delta FROM bin WHERE status = 'waiting' ORDER BY k
    exec: [$HANDLERS/fake, append, $ROWQ_TEST_TMP/bin.handled]
    timeout: 10s
    idle: 200ms
    done: UPDATE bin SET n = n - :delta, status = 'done',
          done_count = done_count + 1 WHERE k = :k -- a comment; with a ';'
    failed: UPDATE bin SET status = 'done' WHERE k = :k
YAML
e0=$(executes)
timeout 30 "$ROWQ" -c bin.yaml drain bin >bin.log 2>&1 || fail "bin drain: $(cat bin.log)"
e1=$(executes)
for k in $keys; do
	assert_eq "done 1 3" "$(sql_value "SELECT CONCAT_WS(' ', status, done_count, n)
	    FROM bin WHERE k = UNHEX('$k')")" "bin: key $k"
done
assert_eq "0 0" "$(sql_value "SELECT CONCAT_WS(' ', SUM(done_count), SUM(n))
    FROM bin WHERE k IN (UNHEX('273b'), UNHEX('62'))")" "bin: bystanders untouched"
assert_eq "29 1 1 3 3" "$(sql_value "SELECT CONCAT_WS(' ', COUNT(*), MIN(done_count),
    MAX(done_count), MIN(n), MAX(n)) FROM bin WHERE status = 'done' AND n > 0")" "bin: every row"
assert_eq 29 "$(wc -l <bin.handled)" "bin: handler runs"
# A done per row would be 29 more than the check's few.
assert_le $((e1 - e0)) 10 "bin: prepared executes during a 29-row drain"

# ---- 3. a text key: prepared, as before ----
sql "CREATE TABLE txt (
    k VARCHAR(32) NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done') NOT NULL DEFAULT 'waiting',
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, k)
) ENGINE=InnoDB"
sql "INSERT INTO txt (k) VALUES ('x1'), ('it''s'), ('back\\\\slash'), ('x2')"
sed -e 's/\bbin\b/txt/g' -e 's/SELECT k, delta FROM/SELECT k FROM/' \
    -e 's/n = n - :delta, //' bin.yaml >txt.yaml
e0=$(executes)
timeout 30 "$ROWQ" -c txt.yaml drain txt >txt.log 2>&1 || fail "txt drain: $(cat txt.log)"
e1=$(executes)
assert_eq "4 4 1" "$(sql_value "SELECT CONCAT_WS(' ', COUNT(*), SUM(done_count),
    MAX(done_count)) FROM txt WHERE status = 'done'")" "txt: every row done once"
assert_ge $((e1 - e0)) 4 "txt: prepared executes (one done per row)"

# ---- 4. a stop while the last row's handler runs, and succeeds ----
email_table 3
STOP_TIMEOUT=10s WORKERS=1 email_config stop.yaml \
    "[$HANDLERS/fake, sleep, 1500, $ROWQ_TEST_TMP/stop.handled]" "batch: 1"
: >stop.handled
rowq_start stop.yaml stop.log
wait_until 10 '[ -s stop.handled ]' || fail "stop: no handler started: $(cat stop.log)"
kill -TERM "$ROWQ_PID"
wait_until 15 '! kill -0 "$ROWQ_PID" 2>/dev/null' || fail "stop: rowq did not stop"
untrack_pid "$ROWQ_PID"
assert_eq "1 1" "$(sql_value "SELECT CONCAT_WS(' ', COUNT(*), SUM(done_count))
    FROM email WHERE status = 'sent'")" "stop: the row whose handler ran is done"
assert_eq 2 "$(email_count "status = 'waiting' AND done_count = 0")" "stop: the rows behind it wait"
timeout 30 "$ROWQ" -c stop.yaml drain email >drain.log 2>&1 || fail "stop: drain: $(cat drain.log)"
assert_eq "3 3 1" "$(sql_value "SELECT CONCAT_WS(' ', COUNT(*), SUM(done_count),
    MAX(done_count)) FROM email WHERE status = 'sent'")" "stop: then every row done once"

# ---- 5. a list: a fan-in's counter in each row's done ----
sql "DROP TABLE email"
email_table 40
sql "CREATE TABLE batch (id INT PRIMARY KEY, pending INT NOT NULL);
    INSERT INTO batch VALUES (1, 40)"
WORKERS=2 email_config list.yaml "[x]" "batch: 1"
sed -i -e "s|^    exec: .*|    pipe: [$HANDLERS/pipefake, ok, $ROWQ_TEST_TMP/list.handled]|" \
    -e "/^    done: /,/^    [a-z_]*:/{/^    done: /d;/^          /d}" list.yaml
cat >>list.yaml <<'YAML'
    done:
      - UPDATE email SET status = 'sent', done_count = done_count + 1
        WHERE id = :id
      - UPDATE batch SET pending = pending - 1 WHERE id = 1
YAML
"$ROWQ" -c list.yaml check >list.check 2>&1 || fail "list: check: $(cat list.check)"
e0=$(executes)
timeout 30 "$ROWQ" -c list.yaml drain email >list.log 2>&1 || fail "list drain: $(cat list.log)"
e1=$(executes)
assert_eq "40 40 1 1" "$(sql_value "SELECT CONCAT_WS(' ', COUNT(*), SUM(done_count),
    MIN(done_count), MAX(done_count)) FROM email WHERE status = 'sent'")" "list: every row sent once"
assert_eq 0 "$(sql_value "SELECT pending FROM batch WHERE id = 1")" "list: counted down once a row"
# Prepared, the lists would be 80 executes; two workers' first-key reads
# and the check's are a few each.
assert_le $((e1 - e0)) 20 "list: prepared executes during a 40-row drain"

# ---- 6. lease mode: the lease and its COMMIT in one round trip ----
sql "CREATE TABLE job (
    id INT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done') NOT NULL DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    leases INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    done_lease CHAR(32) NULL,
    INDEX (status, leased_until, id)
) ENGINE=InnoDB"
sql "INSERT INTO job (id) SELECT seq FROM $(seq_rows 40)"
cat >lease.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  job:
    workers: 2
    batch: 1
    select: SELECT id FROM job
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    pipe: [$HANDLERS/pipefake, ok, $ROWQ_TEST_TMP/lease.handled]
    timeout: 10s
    idle: 200ms
    lease:
      duration: 30s
      claim: UPDATE job SET lease = :lease, leases = leases + 1,
             leased_until = UNIX_TIMESTAMP() + 30 WHERE id = :id
    done: UPDATE job SET status = 'done', done_count = done_count + 1,
          done_lease = :lease WHERE id = :id AND lease = :lease
    failed: UPDATE job SET status = 'done' WHERE id = :id AND lease = :lease
YAML
"$ROWQ" -c lease.yaml check >lease.check 2>&1 || fail "lease: check: $(cat lease.check)"
e0=$(executes)
timeout 30 "$ROWQ" -c lease.yaml drain job >lease.log 2>&1 || fail "lease drain: $(cat lease.log)"
e1=$(executes)
assert_eq "40 40 1 1 40" "$(sql_value "SELECT CONCAT_WS(' ', COUNT(*), SUM(done_count),
    MIN(leases), MAX(leases), COUNT(DISTINCT lease)) FROM job
    WHERE status = 'done' AND done_lease = lease")" "lease: every row leased and done once, by its own token"
# Prepared, the leases alone would be 40 executes.
assert_le $((e1 - e0)) 20 "lease: prepared executes during a 40-row drain"
