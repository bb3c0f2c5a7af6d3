#!/usr/bin/env bash
# A finishing statement that changes no row (the lease was taken while
# the handler ran) recorded nothing: the daemon's counters must not call
# it done.  Row 1's lease is stolen mid-handler, row 2 is done normally:
# `rowq status --json` says 1 done.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
trace=$ROWQ_TEST_TMP/trace
: >"$trace"

sql "CREATE TABLE v (
    id INT NOT NULL PRIMARY KEY,
    sleep_ms INT NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    token CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO v (id, sleep_ms) VALUES (1, 1500), (2, 50)"
cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $ROWQ_TEST_TMP/rowq.sock
queues:
  v:
    workers: 1
    select: SELECT id, sleep_ms FROM v WHERE status = 'waiting'
            AND leased_until < UNIX_TIMESTAMP() ORDER BY id
    exec: [$HANDLERS/trace, $trace, "{sleep_ms}"]
    timeout: 10s
    idle: 200ms
    lease:
      duration: 30s
      claim: UPDATE v SET token = :lease,
             leased_until = UNIX_TIMESTAMP() + 30 WHERE id = :id
    done: UPDATE v SET status = 'done' WHERE id = :id AND token = :lease
    failed: UPDATE v SET status = 'failed' WHERE id = :id AND token = :lease
YAML
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || { echo "--- rowq.log"; cat "$ROWQ_TEST_TMP/rowq.log"; }'
wait_until 10 'grep -q "^start 1 " "$trace"' || fail "row 1 never started"
sql "UPDATE v SET token = 'thief', leased_until = UNIX_TIMESTAMP() + 600 WHERE id = 1"
wait_until 10 '[ "$(sql_value "SELECT status FROM v WHERE id = 2")" = done ]' ||
	fail "row 2 not done: $(sql "SELECT * FROM v")"
assert_eq "waiting thief" "$(sql_value "SELECT CONCAT_WS(' ', status, token) FROM v WHERE id = 1")" "row 1 after the steal"
# counters JSON: the queue's live counters, as "done retried failed".
counters()
{
	python3 -c 'import json, sys
live = json.load(sys.stdin)["queues"][0]["daemon"]
print(live["done"], live["retried"], live["failed"])'
}
wait_until 5 '[ "$("$ROWQ" -c rowq.yaml status --json 2>/dev/null | counters 2>/dev/null | cut -d" " -f1)" -ge 1 ] 2>/dev/null' ||
	fail "no counters from the daemon: $("$ROWQ" -c rowq.yaml status --json 2>&1)"
sleep 0.3
json=$("$ROWQ" -c rowq.yaml status --json 2>/dev/null)
assert_eq "1 0 0" "$(counters <<<"$json")" "the daemon's done, retried and failed: $json"
stop_rowq "$ROWQ_PID"
