#!/usr/bin/env bash
# Two daemons with the same prune: never both prune at once: the one that
# finds the queue's lock held skips the round and says so, and a trigger
# that logs each deleting session shows no two runs overlapping.  Then a
# statement that fails midway: the run stops and logs it, the workers go
# on, and the next round, once the cause is gone, finishes the job.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

old=3000
email_table 0
sql "ALTER TABLE email ADD COLUMN sent_at DATETIME NULL, ADD INDEX (sent_at)"
sql "INSERT INTO email (recipient, subject, body, status, sent_at)
    SELECT 'old@example.com', 's', '', 'sent', NOW() - INTERVAL 30 DAY
    FROM $(seq_rows "$old")"
sql "CREATE TABLE deleted_by (conn BIGINT NOT NULL, at DATETIME(6) NOT NULL)"
sql "CREATE TABLE fail_at (id BIGINT NOT NULL)"
sql <<'SQL'
DELIMITER //
CREATE TRIGGER email_deleted BEFORE DELETE ON email FOR EACH ROW BEGIN
  IF OLD.id IN (SELECT id FROM fail_at) THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'row kept by the test';
  END IF;
  INSERT INTO deleted_by VALUES (CONNECTION_ID(), NOW(6));
END//
SQL
log=$ROWQ_TEST_TMP/handled
prune=("prune:"
    "  delete: DELETE FROM email WHERE status = 'sent'"
    "          AND sent_at < NOW() - INTERVAL 7 DAY ORDER BY id"
    "  chunk: 100"
    "  pause: 100ms"
    "  every: 1s")
for n in 1 2; do
	email_config rowq$n.yaml "[$HANDLERS/fake, append, $log]" "${prune[@]}"
	sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq$n.sock\nqueues:|" rowq$n.yaml
done

rowq_start rowq1.yaml daemon1.log
pid1=$ROWQ_PID
rowq_start rowq2.yaml daemon2.log
pid2=$ROWQ_PID
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/daemon*.log'
wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM email")" = 0 ]' ||
	fail "old rows left: $(sql_value "SELECT COUNT(*) FROM email")"
assert_eq $old "$(sql_value "SELECT COUNT(*) FROM deleted_by")" "rows deleted"
# Each session's first and last delete; no two sessions' spans meet.
overlaps=$(sql_value "SELECT COUNT(*) FROM
    (SELECT conn, MIN(at) a, MAX(at) b FROM deleted_by GROUP BY conn) x JOIN
    (SELECT conn, MIN(at) a, MAX(at) b FROM deleted_by GROUP BY conn) y
    ON x.conn < y.conn AND x.a <= y.b AND y.a <= x.b")
assert_eq 0 "$overlaps" "runs that overlapped"
assert_ge "$(cat daemon1.log daemon2.log | grep -c "prune skipped: another rowq is pruning this queue")" 1 "skips logged"
kill_wait 15 "$pid2"
untrack_pid "$pid2"

# A chunk that fails: the third chunk meets the row the trigger refuses.
# In one transaction: a round between the two would prune the first 100
# rows and move the row that fails.
sql "BEGIN; INSERT INTO email (recipient, subject, body, status, sent_at)
    SELECT 'old@example.com', 's', '', 'sent', NOW() - INTERVAL 30 DAY
    FROM $(seq_rows 500);
    INSERT INTO fail_at SELECT MIN(id) + 250 FROM email; COMMIT"
wait_until 10 'grep -q "prune stopped after 200 rows in 2 chunks: chunk 3: row kept by the test.*; next round in 1s" daemon1.log' ||
	fail "no failed run in the log"
assert_match "rowq1.yaml:[0-9]*: queues.email.prune.delete: prune stopped" \
    "$(grep -m1 "prune stopped" daemon1.log)" "the failure names the key"
# The daemon and its workers go on: new rows are done meanwhile.
sql "INSERT INTO email (recipient, subject, body) SELECT 'new@example.com', 's', '' FROM $(seq_rows 20)"
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'waiting'"'")" = 0 ]' ||
	fail "the workers stopped"
# Failing again each round, once a round (a round a second): not in a
# loop.  Counted over a window measured here, whatever came before it.
t0=$(now_us)
runs0=$(grep -c "prune stopped after" daemon1.log)
sleep 4
runs=$(($(grep -c "prune stopped after" daemon1.log) - runs0))
window_s=$((($(now_us) - t0 + 999999) / 1000000))
assert_ge "$runs" 2 "failed rounds in ${window_s} s"
assert_le "$runs" $((window_s + 1)) "failed rounds in ${window_s} s"
sql "DELETE FROM fail_at"
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE recipient = '"'old@example.com'"'")" = 0 ]' ||
	fail "the next round did not finish the prune"
_lib_alive "$pid1" || fail "the daemon died"
kill_wait 15 "$pid1"
