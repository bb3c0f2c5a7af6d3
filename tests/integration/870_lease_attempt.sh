#!/usr/bin/env bash
# :attempt is the number of the try in every statement, lease.claim and
# lease.renew included (it was 0 there): retry.attempts_column as
# claimed, plus 1.  Each statement stores the :attempt it was given.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/handled
: >"$log"

sql "CREATE TABLE v (
    id INT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    token CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    attempts INT NOT NULL DEFAULT 0,
    claim_attempt INT NULL,
    renew_attempt INT NULL,
    done_attempt INT NULL,
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO v (id, attempts) VALUES (1, 0), (2, 2)"
cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
queues:
  v:
    workers: 1
    select: SELECT id, attempts FROM v WHERE status = 'waiting'
            AND leased_until < UNIX_TIMESTAMP() ORDER BY id
    # Longer than a third of the lease: renewed at least once.
    exec: [$HANDLERS/fake, sleep, "1500", $log]
    timeout: 10s
    idle: 200ms
    lease:
      duration: 3s
      claim: UPDATE v SET token = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + 3, claim_attempt = :attempt
             WHERE id = :id
      renew: UPDATE v SET leased_until = UNIX_TIMESTAMP() + 3,
             renew_attempt = :attempt WHERE id = :id AND token = :lease
    done: UPDATE v SET status = 'done', done_attempt = :attempt
          WHERE id = :id AND token = :lease
    retry:
      max_attempts: 5
      attempts_column: attempts
      update: UPDATE v SET leased_until = UNIX_TIMESTAMP() + :delay
              WHERE id = :id AND token = :lease
    failed: UPDATE v SET status = 'failed' WHERE id = :id AND token = :lease
YAML
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || { echo "--- rowq.log"; cat "$ROWQ_TEST_TMP/rowq.log"; }'
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM v WHERE status = '"'done'"'")" = 2 ]' ||
	fail "rows not done: $(sql "SELECT * FROM v")"
stop_rowq "$ROWQ_PID"
assert_eq "1 1|2 3" "$(paste -sd '|' "$log")" "ROWQ_ATTEMPT of each row"
assert_eq "1 1 1 1 1|2 3 3 3 3" \
    "$(sql "SELECT CONCAT_WS(' ', id, attempts, claim_attempt, renew_attempt, done_attempt) FROM v ORDER BY id" | paste -sd '|')" \
    "rows (id attempts :attempt in lease.claim, lease.renew and done)"
