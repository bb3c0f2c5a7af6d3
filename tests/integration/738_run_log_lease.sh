#!/usr/bin/env bash
# runs: in lease mode.  The claim commits (counting the try) before the
# handler runs, and each row's outcome is a short transaction of its own
# with its run.  Row 1's first try hangs until its worker is killed (-9):
# its lease runs out, the next try finishes it.  Row 1 then has one run,
# of its last try, and `rowq show` counts the others as tries without a
# run; every other row has one run, of try 1, and none without.
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
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO v (id) SELECT seq FROM $(seq_rows 20)"
cat >handler <<SH
#!/bin/sh
echo "\$ROWQ_KEY \$ROWQ_ATTEMPT" >>"$log"
[ "\$ROWQ_KEY" = 1 ] && [ "\$ROWQ_ATTEMPT" = 1 ] && exec sleep 600
exit 0
SH
chmod +x handler
cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: $ROWQ_TEST_TMP/rowq.sock
stop_timeout: 5s
queues:
  v:
    workers: 2
    select: SELECT id, attempts FROM v WHERE status = 'waiting'
            AND leased_until < UNIX_TIMESTAMP() ORDER BY id
    exec: [$ROWQ_TEST_TMP/handler]
    timeout: 15m
    idle: 200ms
    lease:
      duration: 3s
      claim: UPDATE v SET token = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + 3 WHERE id = :id
      renew: UPDATE v SET leased_until = UNIX_TIMESTAMP() + 3
             WHERE id = :id AND token = :lease
    done: UPDATE v SET status = 'done' WHERE id = :id AND token = :lease
    retry:
      max_attempts: 5
      attempts_column: attempts
      update: UPDATE v SET leased_until = 0 WHERE id = :id AND token = :lease
    failed: UPDATE v SET status = 'failed' WHERE id = :id AND token = :lease
    runs: {}
YAML
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || { echo "--- rowq.log"; cat "$ROWQ_TEST_TMP/rowq.log"; }'
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM v WHERE status = '"'done'"'")" = 19 ]' ||
	fail "rows not done: $(sql "SELECT * FROM v")"
hung=""
for w in $(workers_of "$ROWQ_PID"); do
	for h in $(children_of "$w"); do
		[[ "$(tr '\0' ' ' 2>/dev/null <"/proc/$h/cmdline")" == "sleep 600"* ]] && hung=$w
	done
done
[ -n "$hung" ] || fail "row 1's handler is not hanging"
kill -KILL "$hung"
wait_until 20 '[ "$(sql_value "SELECT status FROM v WHERE id = 1")" = done ]' ||
	fail "row 1 not done after its lease ran out"
stop_rowq "$ROWQ_PID"

# The claim counts each try; the killed one (and any other claim whose
# outcome never committed) has no run.
tries=$(sql_value "SELECT attempts FROM v WHERE id = 1")
assert_ge "$tries" 2 "row 1's tries"
assert_eq "1 1" "$(grep '^1 ' "$log" | head -1)" "row 1's first try started"
assert_eq "1 $tries" "$(grep '^1 ' "$log" | tail -1)" "row 1's last try started"
assert_eq "$tries done" "$(sql_value "SELECT GROUP_CONCAT(CONCAT(attempt, ' ', outcome))
    FROM rowq_runs WHERE row_key = '1'")" "row 1's runs"
assert_eq 19 "$(sql_value "SELECT COUNT(*) FROM rowq_runs WHERE row_key <> '1'
    AND attempt = 1 AND outcome = 'done'")" "the other rows' runs"
assert_eq 20 "$(sql_value "SELECT COUNT(*) FROM rowq_runs")" "runs"
assert_eq "done $((tries - 1)) 1" "$("$ROWQ" -c rowq.yaml show v 1 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["state"], d["tries_without_run"], len(d["runs"]))')" "row 1's story"
assert_match "tries without a run: $((tries - 1))" "$("$ROWQ" -c rowq.yaml show v 1)" "row 1 in words"
assert_eq 0 "$("$ROWQ" -c rowq.yaml show v 2 --json | python3 -c '
import json, sys; print(json.load(sys.stdin)["tries_without_run"])')" "row 2's story"

# Rows the select does not return, with runs but no final one: row 30's
# last try asked for another, not due yet (retrying); row 31 was inserted
# by a schedule and is leased, by a worker of another daemon or one that
# died (claimed); row 33's try after its retry was a done that changed no
# row, and row 34 has only such a try (gone, both); a key with no run is
# gone.
sql "INSERT INTO v (id, leased_until, attempts) VALUES
    (30, UNIX_TIMESTAMP() + 3600, 1), (31, UNIX_TIMESTAMP() + 3600, 1);
INSERT INTO rowq_runs (queue, row_key, attempt, outcome, reason, started,
    finished, duration_ms, host, worker, pid, error) VALUES
    ('v', '30', 1, 'retry', 'exit', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), 5, 'h', 1, 1, ''),
    ('v', '31', 0, 'inserted', 'schedule', UTC_TIMESTAMP(), UTC_TIMESTAMP(), 2, 'h', 0, 1, 'tick'),
    ('v', '33', 1, 'retry', 'exit', UTC_TIMESTAMP(6) - INTERVAL 1 SECOND, UTC_TIMESTAMP(6) - INTERVAL 1 SECOND, 5, 'h', 1, 1, ''),
    ('v', '33', 2, 'none', 'no_row', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), 5, 'h', 1, 1, ''),
    ('v', '34', 1, 'none', 'no_row', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), 5, 'h', 1, 1, '')"
for k in 30:retrying 31:claimed 32:gone 33:gone 34:gone; do
	assert_eq "${k#*:}" "$("$ROWQ" -c rowq.yaml show v "${k%%:*}" --json |
	    python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')" \
	    "row ${k%%:*}'s state"
done
