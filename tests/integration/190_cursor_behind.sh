#!/usr/bin/env bash
# Rows that become claimable behind the workers' cursors are picked up
# within the fallback bound (a claim that starts again at the first
# waiting row at least once a second, cursor.c), while the workers stay
# busy with the rows ahead: a row whose retry falls due, a row with a
# lower id whose INSERT commits late, and the row of a worker killed in
# the middle of it.  Every row is still done exactly once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 0
# Rows 1..80 but 31, which an application's transaction inserts and
# commits late.  Row 5 waits for a retry due 1 s after the start.
sql "INSERT INTO email (id, recipient, subject, body)
    SELECT seq, CONCAT('user', seq, '@example.com'), 's', 'b'
    FROM $(seq_rows 80) WHERE seq <> 31"
log=$ROWQ_TEST_TMP/handled
cfg=$ROWQ_TEST_TMP/rowq.yaml
# 2 workers, 150 ms a row: about 13 rows a second, 6 s for the queue.
WORKERS=2 email_config "$cfg" "[$HANDLERS/fake, sleep, \"150\", $log]"
: >"$log"

# The late INSERT: row 31, held uncommitted until the cursors are past it.
fifo=$ROWQ_TEST_TMP/late
mkfifo "$fifo"
mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot "$ROWQ_TEST_DB" <"$fifo" &
late_pid=$!
track_pid "$late_pid"
exec 3>"$fifo"
echo "BEGIN; INSERT INTO email (id, recipient, subject, body)
    VALUES (31, 'late@example.com', 'late', 'b');" >&3

sql "UPDATE email SET attempts = 1, retry_at = UNIX_TIMESTAMP() + 1 WHERE id = 5"
due5=$(( $(now_us) + 1000000 ))
# Not with the fifo open: rowq would keep the late client from its EOF.
rowq_start "$cfg" "$ROWQ_TEST_TMP/rowq.log" 3>&-
on_exit '[ $? -eq 0 ] || { cat "$ROWQ_TEST_TMP/rowq.log"; sort -n "'"$log"'" | tr "\n" " "; }'

handled() { [ "$(wc -l <"$log")" -ge "$1" ]; }
sent() { [ "$(sql_value "SELECT status FROM email WHERE id = $1")" = sent ]; }

# Row 5: due 1 s after the start, done within the bound after that (its
# handler's 150 ms and a second of slack for a loaded machine included).
wait_until 10 'sent 5' || fail "row 5 was never done"
took=$(( ($(now_us) - due5) / 1000 ))
assert_le "$took" 2500 "ms from row 5 falling due to its being done"
handled 70 && fail "the queue was nearly drained before row 5 was done: the test proves nothing"

# Row 31: committed once the workers are past it.
wait_until 10 'handled 35' || fail "the workers did not get past row 31"
echo "COMMIT;" >&3
exec 3>&-
wait_until 5 '! _lib_alive "$late_pid"' || fail "the late INSERT's client did not end"
wait "$late_pid" || fail "the late INSERT failed"
untrack_pid "$late_pid"
committed=$(now_us)
wait_until 10 'sent 31' || fail "row 31 was never done"
took=$(( ($(now_us) - committed) / 1000 ))
assert_le "$took" 2500 "ms from row 31's commit to its being done"

# A worker killed in the middle of a row: its claim is rolled back, and
# the row is done by a worker whose cursor is past it, or its successor.
wait_until 10 'handled 50' || fail "the workers stopped"
victim=$(children_of "$ROWQ_PID" | head -n 1)
[ -n "$victim" ] || fail "no worker to kill"
kill -KILL "$victim"
killed=$(now_us)
wait_until 15 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'"'sent'"'"'")" = 80 ]' ||
	fail "not every row was done: $(sql "SELECT id FROM email WHERE status <> 'sent'" | tr '\n' ' ')"
assert_eq "80 1 1" "$(sql_value "SELECT CONCAT_WS(' ', SUM(done_count), MIN(done_count), MAX(done_count)) FROM email")" "rows, each done once"
took=$(( ($(now_us) - killed) / 1000 ))
assert_le "$took" 10000 "ms from the kill to the last row done"
