#!/usr/bin/env bash
# Rows a worker cannot take at the head of a queue do not stall the rows
# behind them:
#   lease_null:  a lease queue whose first row has a NULL key;
#   lease_claim: a lease queue whose lease.claim changes no row for its
#                first row;
#   null_keys:   a transaction queue (batch 1) led by more NULL-key rows
#                than batch + 16, the widest claim today.
# Each time the other rows are all done within seconds, the bad rows are
# left as they were, and each bad row is logged a bounded number of times.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE q (
    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    jkey VARCHAR(20) NULL,
    blocked INT NOT NULL DEFAULT 0,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    token CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, id)
) ENGINE=InnoDB"

# config FILE KEY [lease]: a queue over q keyed by KEY, in lease mode or not.
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
queues:
  q:
    workers: 1
    key: $2
    select: SELECT id, jkey FROM q WHERE status = 'waiting'
            AND leased_until < UNIX_TIMESTAMP() ORDER BY id
    exec: [$HANDLERS/fake, append, $ROWQ_TEST_TMP/handled]
    timeout: 10s
    idle: 200ms
YAML
	if [ "${3:-}" = lease ]; then
		cat >>"$1" <<YAML
    lease:
      duration: 30s
      claim: UPDATE q SET token = :lease,
             leased_until = UNIX_TIMESTAMP() + 30
             WHERE $2 = :$2 AND blocked = 0
    done: UPDATE q SET status = 'done', done_count = done_count + 1
          WHERE $2 = :$2 AND token = :lease
    failed: UPDATE q SET status = 'failed' WHERE $2 = :$2 AND token = :lease
YAML
	else
		cat >>"$1" <<YAML
    done: UPDATE q SET status = 'done', done_count = done_count + 1
          WHERE $2 = :$2
    failed: UPDATE q SET status = 'failed' WHERE $2 = :$2
YAML
	fi
}

# phase NAME CONFIG BAD GOOD: BAD rows lead, GOOD rows (keys k1...)
# follow; the good ones must all be done once, the bad ones untouched.
phase()
{
	local name=$1 cfg=$2 bad=$3 good=$4
	sql "DELETE FROM q"
	: >"$ROWQ_TEST_TMP/handled"
	rowq_start "$cfg" "$name.log"
	on_exit '[ $? -eq 0 ] || { echo "--- '"$name"'.log"; cat "$ROWQ_TEST_TMP/'"$name"'.log"; }'
	wait_until 10 '[ "$(workers_of "$ROWQ_PID" | wc -l)" = 1 ]' || fail "$name: no worker"
	sql "$bad"
	sql "INSERT INTO q (jkey) SELECT CONCAT('k', seq) FROM $(seq_rows "$good")"
	wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM q WHERE status = '"'done'"'")" = '"$good"' ]' ||
		fail "$name: good rows stalled behind the bad ones: $(sql_value "SELECT COUNT(*) FROM q WHERE status = 'done'") of $good done"
	assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM q WHERE jkey LIKE 'k%' AND done_count <> 1")" \
	    "$name: good rows whose done ran other than once"
	assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM q WHERE (jkey IS NULL OR blocked = 1) AND status <> 'waiting'")" \
	    "$name: bad rows that were finished"
	# Skipped and said once each, not again and again.
	sleep 2
	stop_rowq "$ROWQ_PID"
	assert_eq 0 "$(grep -cvE '^k[0-9]+ ' "$ROWQ_TEST_TMP/handled" || true)" \
	    "$name: handler runs for bad rows"
}

config lease_null.yaml jkey lease
phase lease_null lease_null.yaml "INSERT INTO q (jkey) VALUES (NULL)" 5
assert_le "$(lines lease_null.log 'NULL')" 2 "lease_null: lines about the NULL key"

config lease_claim.yaml jkey lease
phase lease_claim lease_claim.yaml "INSERT INTO q (jkey, blocked) VALUES ('blocked', 1)" 5
assert_match "blocked" "$(cat lease_claim.log)" "lease_claim: the row lease.claim did not lease, named in the log"
assert_le "$(lines lease_claim.log 'blocked')" 2 "lease_claim: lines about it"

config null_keys.yaml jkey
phase null_keys null_keys.yaml "INSERT INTO q (jkey) SELECT NULL FROM $(seq_rows 20)" 5
assert_le "$(wc -l <null_keys.log)" 30 "null_keys: log lines"
