#!/usr/bin/env bash
# `rowq status` takes no row lock: while it reads a queue (made slow by a
# select that sleeps a quarter of a second per row), another session can
# lock a ready row with NOWAIT, and InnoDB lists no transaction holding
# rows.  A worker or a drain claiming at that moment would find the row.
# The count it then prints is every row the select finds.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 8
email_config rowq.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/handled]"
# A socket of its own: no other daemon's numbers in the first half.
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nqueues:|" rowq.yaml
sed -i 's/^      ORDER BY id$/        AND SLEEP(0.25) = 0\n      ORDER BY id/' rowq.yaml
grep -q 'SLEEP(0.25)' rowq.yaml || fail "the slow select is not in the configuration"

"$ROWQ" -c rowq.yaml status --json >status.out 2>status.err &
st=$!
track_pid "$st"
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/status.out" "$ROWQ_TEST_TMP/status.err"'
running='[ "$(sql_value "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '"'%SLEEP(0.25)%'"' AND INFO NOT LIKE '"'%PROCESSLIST%'"'")" -ge 1 ]'
wait_until 10 "$running" || fail "status never ran its select"
# The select has read the first rows by now.
sleep 0.6
eval "$running" || fail "status's select ended too soon for the test"
sql "SELECT id FROM email FORCE INDEX (PRIMARY) WHERE id = 1 FOR UPDATE NOWAIT" >nowait.out 2>&1 ||
	fail "a ready row is locked while status runs: $(cat nowait.out)"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM information_schema.INNODB_TRX t
    JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
    WHERE t.trx_rows_locked > 0 AND p.DB = '$ROWQ_TEST_DB'")" \
	"transactions holding rows while status runs"

wait_until 20 '! kill -0 "$st" 2>/dev/null' || fail "status did not end"
wait "$st" || true
untrack_pid "$st"
python3 - "$(cat status.out)" <<'PY' || fail "status --json: $(cat status.out)"
import json, sys
q = json.loads(sys.argv[1])["queues"][0]
assert q["ready"] == 8, q
PY

# With a daemon: IN_PROGRESS is its workers busy with a row (2, each on
# a long row), READY the rest of what the select finds (8 - 2).
sed -i '/SLEEP(0.25)/d' rowq.yaml
sed -i "s|^    exec: .*|    exec: [$HANDLERS/fake, sleep, 20000, $ROWQ_TEST_TMP/handled]|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
wait_until 10 '[ "$(wc -l <handled 2>/dev/null || echo 0)" -ge 2 ]' || fail "the workers did not start their rows"
wait_until 5 '"$ROWQ" -c rowq.yaml status --json 2>/dev/null | grep -q "\"in_progress\":2"' ||
	fail "status with busy workers: $("$ROWQ" -c rowq.yaml status --json 2>&1)"
python3 - "$("$ROWQ" -c rowq.yaml status --json 2>/dev/null)" <<'PY' || fail "status --json with the daemon"
import json, sys
q = json.loads(sys.argv[1])["queues"][0]
assert (q["ready"], q["in_progress"], q["daemon"]["busy"]) == (6, 2, 2), q
PY
