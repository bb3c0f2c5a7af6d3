#!/usr/bin/env bash
# A link lost in the middle of a batch whose ok rows are finished in bulk
# at the end of the turn (batch 5, a done without :output or :error, so
# nothing is sent between handlers).  The server kills one worker's
# connection during the first handler of its batch: the locks on the whole
# batch are gone, and another worker claims those rows at once.  The
# worker that lost its link must start no handler for another row of that
# turn, and the result of the one in flight cannot be recorded: at most
# that one row runs twice, every row is done once.
#
# Two daemons of one worker each, connecting as two users, stand for two
# workers (on two hosts): the one to cut off is the one whose user holds
# the batch.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
trace=$ROWQ_TEST_TMP/trace
ua=rowq80a ub=rowq80b
: >"$trace"

sql "CREATE TABLE job (
    id INT NOT NULL PRIMARY KEY,
    sleep_ms INT NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, id)
) ENGINE=InnoDB"
for u in $ua $ub; do
	sql "DROP USER IF EXISTS $u@localhost; CREATE USER $u@localhost;
	    GRANT ALL ON \`$ROWQ_TEST_DB\`.* TO $u@localhost"
done
on_exit 'sql "DROP USER IF EXISTS '$ua'@localhost, '$ub'@localhost" || true'

# config FILE USER
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: $2, name: $ROWQ_TEST_DB }
stop_timeout: 5s
queues:
  job:
    workers: 1
    batch: 5
    select: SELECT id, sleep_ms FROM job WHERE status = 'waiting' ORDER BY id
    exec: [$HANDLERS/trace, $trace, "{sleep_ms}"]
    timeout: 30s
    idle: 200ms
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :id
    failed: UPDATE job SET status = 'failed' WHERE id = :id
YAML
}
config a.yaml $ua
config b.yaml $ub

# connection_of USER: the one session of USER, or nothing.
connection_of()
{
	sql "SELECT ID FROM information_schema.PROCESSLIST
	    WHERE USER = '$1' AND DB = '$ROWQ_TEST_DB'"
}

rowq_start a.yaml a.log
pid_a=$ROWQ_PID
on_exit '[ $? -eq 0 ] || { echo "--- a.log"; cat "$ROWQ_TEST_TMP/a.log"; echo "--- b.log"; cat "$ROWQ_TEST_TMP/b.log"; echo "--- trace"; cat "$ROWQ_TEST_TMP/trace"; }'
: >b.log
wait_until 10 '[ -n "$(connection_of $ua)" ]' || fail "worker a never connected"

# Daemon a alone claims the whole batch; its first row takes 3 s.
sql "INSERT INTO job (id, sleep_ms) VALUES (1, 3000), (2, 300), (3, 300),
    (4, 300), (5, 300)"
wait_until 5 'grep -q "^start 1 " "$trace"' || fail "row 1 never started"
# Daemon a's own transaction: the server is shared with other tests.
# trx_rows_locked is approximate (InnoDB says so: it may count a record
# the scan read past).
locked=$(sql_value "SELECT trx_rows_locked FROM information_schema.INNODB_TRX
    WHERE trx_mysql_thread_id = $(connection_of $ua)")
assert_ge "$locked" 5 "rows locked by daemon a's turn"
assert_le "$locked" 6 "rows locked by daemon a's turn"

# Daemon b, ready to claim whatever a's locks no longer cover.
rowq_start b.yaml b.log
pid_b=$ROWQ_PID
wait_until 5 '[ -n "$(connection_of $ub)" ]' || fail "worker b never connected"
! grep -q '^end 1 ' "$trace" || fail "row 1 ended before the kill: too slow a start"
sql "KILL CONNECTION $(connection_of $ua)"

wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM job WHERE status = '"'done'"'")" = 5 ]' ||
	fail "rows not all done: $(sql "SELECT id, status FROM job")"
# Time for a worker that goes on with a dead turn to start its next rows.
sleep 1.5

for id in 2 3 4 5; do
	assert_eq 1 "$(grep -c "^start $id " "$trace" || true)" \
	    "handler runs of row $id, which was not in flight when the link was lost"
done
assert_le "$(grep -c '^start 1 ' "$trace" || true)" 2 "handler runs of row 1, in flight when the link was lost"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM job WHERE done_count <> 1")" "rows whose done ran other than once"
# (A handler daemon a started for its lost turn after the kill would be
# a second run above: b claims every row whose lock a lost.  A new turn
# of a's after its reconnect may run rows, once.)
kill -0 "$pid_a" || fail "daemon a died"
kill -0 "$pid_b" || fail "daemon b died"
stop_rowq "$pid_a"
stop_rowq "$pid_b"
