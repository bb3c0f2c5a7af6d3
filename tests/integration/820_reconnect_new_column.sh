#!/usr/bin/env bash
# A `SELECT *` queue whose table gains a column while the worker is cut
# off: rows read before the outage keep the layout they were read with.
#   transaction: the connection is killed while a handler runs and the
#     table gains a column at its end; the row's done fails, the worker
#     reconnects (the select now has one column more) and claims again,
#     clearing the old rows.
#   lease: the connection is killed while a handler runs and the table
#     gains a column in front; a lease renewal reconnects and renews the
#     row it holds, read with the old layout.
# Each time nothing may read or free past a row's values (the run is
# under ASan in `make check`: any report fails), the worker lives on, and
# every row is done once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
trace=$ROWQ_TEST_TMP/trace
dbuser=rowq82
: >"$trace"

sql "DROP USER IF EXISTS $dbuser@localhost; CREATE USER $dbuser@localhost;
    GRANT ALL ON \`$ROWQ_TEST_DB\`.* TO $dbuser@localhost"
on_exit 'sql "DROP USER IF EXISTS '$dbuser'@localhost" || true'

kill_worker_connection()
{
	local id
	id=$(sql "SELECT ID FROM information_schema.PROCESSLIST
	    WHERE USER = '$dbuser' AND DB = '$ROWQ_TEST_DB'")
	[ -n "$id" ] || fail "no connection of the worker to kill"
	sql "KILL CONNECTION $id"
}

# sanitizer_clean LOG: no report from ASan or UBSan.
sanitizer_clean()
{
	! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$1" ||
	    fail "sanitizer report in $1: $(grep -m1 -A12 -E 'AddressSanitizer|runtime error' "$1")"
}

# ---- transaction mode: the old rows freed after the reconnect ----
sql "CREATE TABLE job (
    id INT NOT NULL PRIMARY KEY,
    sleep_ms INT NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO job (id, sleep_ms) VALUES (1, 1500), (2, 50), (3, 50)"
cat >job.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: $dbuser, name: $ROWQ_TEST_DB }
stop_timeout: 5s
queues:
  job:
    workers: 1
    select: SELECT * FROM job WHERE status = 'waiting' ORDER BY id
    exec: [$HANDLERS/trace, $trace, "{sleep_ms}"]
    timeout: 30s
    idle: 200ms
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :id
    failed: UPDATE job SET status = 'failed' WHERE id = :id
YAML
rowq_start job.yaml job.log
on_exit '[ $? -eq 0 ] || { echo "--- job.log"; cat "$ROWQ_TEST_TMP/job.log"; echo "--- trace"; cat "$ROWQ_TEST_TMP/trace"; }'
wait_until 10 'grep -q "^start 1 " "$trace"' || fail "transaction: row 1 never started"
worker=$(children_of "$ROWQ_PID")
kill_worker_connection
sql "ALTER TABLE job ADD COLUMN note VARCHAR(20) NULL"
wait_until 15 '[ "$(sql_value "SELECT COUNT(*) FROM job WHERE status = '"'done'"'")" = 3 ]' ||
	fail "transaction: rows not all done: $(sql "SELECT id, status FROM job")"
sleep 0.5
sanitizer_clean job.log
assert_eq "$worker" "$(children_of "$ROWQ_PID")" "transaction: the worker's pid (it must not die)"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM job WHERE done_count <> 1")" "transaction: rows whose done ran other than once"
stop_rowq "$ROWQ_PID"
sanitizer_clean job.log

# ---- lease mode: the held row renewed after the reconnect ----
: >"$trace"
# The key comes last, so that a column added in front moves it past the
# end of a row read before.
sql "CREATE TABLE lj (
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    token CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    sleep_ms INT NOT NULL,
    done_count INT NOT NULL DEFAULT 0,
    id INT NOT NULL PRIMARY KEY,
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO lj (id, sleep_ms) VALUES (1, 3500), (2, 50), (3, 50)"
cat >lease.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: $dbuser, name: $ROWQ_TEST_DB }
stop_timeout: 5s
queues:
  lj:
    workers: 1
    key: id
    select: SELECT * FROM lj WHERE status = 'waiting'
            AND leased_until < UNIX_TIMESTAMP() ORDER BY id
    exec: [$HANDLERS/trace, $trace, "{sleep_ms}"]
    timeout: 30s
    idle: 200ms
    lease:
      duration: 3s
      claim: UPDATE lj SET token = :lease,
             leased_until = UNIX_TIMESTAMP() + 3 WHERE id = :id
      renew: UPDATE lj SET leased_until = UNIX_TIMESTAMP() + 3
             WHERE id = :id AND token = :lease
    done: UPDATE lj SET status = 'done', done_count = done_count + 1
          WHERE id = :id AND token = :lease
    failed: UPDATE lj SET status = 'failed' WHERE id = :id AND token = :lease
YAML
rowq_start lease.yaml lease.log
on_exit '[ $? -eq 0 ] || { echo "--- lease.log"; cat "$ROWQ_TEST_TMP/lease.log"; echo "--- trace"; cat "$ROWQ_TEST_TMP/trace"; }'
wait_until 10 'grep -q "^start 1 " "$trace"' || fail "lease: row 1 never started"
worker=$(children_of "$ROWQ_PID")
# Before the first renewal (a third of the lease in).
kill_worker_connection
sql "ALTER TABLE lj ADD COLUMN note VARCHAR(20) NULL FIRST"
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM lj WHERE status = '"'done'"'")" = 3 ]' ||
	fail "lease: rows not all done: $(sql "SELECT id, status FROM lj")"
sleep 0.5
sanitizer_clean lease.log
assert_eq "$worker" "$(children_of "$ROWQ_PID")" "lease: the worker's pid (it must not die)"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM lj WHERE done_count <> 1")" "lease: rows whose done ran other than once"
stop_rowq "$ROWQ_PID"
sanitizer_clean lease.log
