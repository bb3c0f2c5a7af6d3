#!/usr/bin/env bash
# A handler that finished before its deadline is done, even when the
# worker only looks after the deadline: its exit (exec) or its answer
# (pipe) wins over the timeout.  The worker is kept from looking by a
# lease renewal that takes 2 s (SLEEP in lease.renew): the handler
# finishes at 1.2 s, the renewal returns at 3 s, past the 1.5 s timeout.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/handled

sql "CREATE TABLE video (
    id BIGINT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    last_error TEXT NULL,
    INDEX (status, id)
) ENGINE=InnoDB"

# deadline_config FILE HANDLER-KEY HANDLER-ARGV
deadline_config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
queues:
  render:
    workers: 1
    select: SELECT id FROM video
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    $2: $3
    timeout: 1500ms
    idle: 200ms
    lease:
      duration: 3s
      claim: UPDATE video SET lease = :lease,
             leased_until = UNIX_TIMESTAMP() + 30 WHERE id = :id
      renew: UPDATE video SET leased_until = UNIX_TIMESTAMP() + 30
             WHERE id = :id AND lease = :lease AND SLEEP(2) = 0
    done: UPDATE video SET status = 'done', done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE video SET status = 'failed', last_error = :error
            WHERE id = :id AND lease = :lease
YAML
}

# run_one NAME KEY ARGV: one row through the queue; it must end done.
run_one()
{
	: >"$log"
	sql "DELETE FROM video; INSERT INTO video (id) VALUES (1)"
	deadline_config "$1.yaml" "$2" "$3"
	"$ROWQ" -c "$1.yaml" drain render >"$1.out" 2>"$1.err" ||
	    fail "$1: drain: $(cat "$1.err")"
	assert_eq 1 "$(wc -l <"$log")" "$1: handler runs"
	assert_eq "done 1" "$(sql_value "SELECT CONCAT(status, ' ', done_count) FROM video WHERE id = 1")" \
	    "$1: a handler that finished before its deadline (error: $(sql_value "SELECT IFNULL(last_error, '-') FROM video"))"
}

run_one exec exec "[$HANDLERS/fake, sleep, \"1200\", $log]"
run_one pipe pipe "[$HANDLERS/pipefake, sleep, \"1200\", $log]"
