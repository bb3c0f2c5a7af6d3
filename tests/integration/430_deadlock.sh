#!/usr/bin/env bash
# Deadlocks and lock waits provoked by an application transaction that
# takes the same locks as the workers in the other order.
#
# A trigger makes each done statement also count the row in a `tally`
# table (bucket id % 4), so a worker holds its claimed email row and then
# wants a tally row.  The application locks the tally rows first and then
# asks for waiting email rows with a plain FOR UPDATE (no SKIP LOCKED):
#   - deadlocks: InnoDB breaks the cycle by rolling one side back; when it
#     is a worker (error 1213) it rolls back and claims again;
#   - lock waits: the application holds the tally rows for longer than
#     rowq's innodb_lock_wait_timeout (10 s): the done statements time out
#     (error 1205), roll back and are retried once the lock is gone.
# Nothing is lost, no row is done twice (done_count, and the tally that
# the trigger keeps, both equal the row count), and every extra handler
# run is one that a logged rollback explains.
#
# Knobs: ROWQ_DEADLOCK_ROWS (400), ROWQ_DEADLOCK_SECONDS (app loop, 5).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

rows=${ROWQ_DEADLOCK_ROWS:-400}
seconds=${ROWQ_DEADLOCK_SECONDS:-5}
log=$ROWQ_TEST_TMP/handled

email_table 0
sql "CREATE TABLE tally (bucket INT PRIMARY KEY, n INT NOT NULL DEFAULT 0);
    INSERT INTO tally (bucket) VALUES (0), (1), (2), (3);
    CREATE TABLE ballast (id INT PRIMARY KEY, v INT NOT NULL DEFAULT 0);
    INSERT INTO ballast (id) SELECT seq FROM $(seq_rows 200);
    CREATE TRIGGER email_tally AFTER UPDATE ON email FOR EACH ROW
        UPDATE tally SET n = n + (NEW.done_count - OLD.done_count)
        WHERE bucket = NEW.id % 4"
WORKERS=4 email_config rowq.yaml "[x]"
sed -i "s|^    exec: .*|    pipe: [$HANDLERS/pipefake, sleep, \"20\", $log]|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || tail -n 40 "$ROWQ_TEST_TMP/rowq.log"'

add_rows()
{
	sql "INSERT INTO email (recipient, subject, body)
	    SELECT CONCAT('u', seq, '@example.com'), 's', 'b' FROM $(seq_rows "$1")"
}

# ---- deadlocks ----
# The application's transaction is made heavier than a worker's (200
# ballast rows changed), so that InnoDB picks the worker as the victim.
app=$ROWQ_TEST_TMP/app.sql
for _ in $(seq 1 $((seconds * 10))); do
	echo "START TRANSACTION;
UPDATE ballast SET v = v + 1;
SELECT COUNT(*) FROM tally FOR UPDATE;
DO SLEEP(0.05);
SELECT COUNT(*) FROM (SELECT id FROM email WHERE status = 'waiting' ORDER BY id LIMIT 8 FOR UPDATE) AS x;
COMMIT;"
done >"$app"
# The application runs first, the rows come while it does.
{ echo "SET SESSION innodb_lock_wait_timeout = 2;"; cat "$app"; } |
    mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B --force \
    "$ROWQ_TEST_DB" >app.out 2>app.err &
appid=$!
track_pid "$appid"
add_rows "$rows"
wait "$appid" || true
untrack_pid "$appid"
wait_all_final 120 || fail "rows still waiting after the deadlocks"
deadlocks=$(lines rowq.log 'Deadlock found.*\(1213\); rolled back, will retry')
app_deadlocks=$(grep -c 1213 app.err || true)
assert_ge "$deadlocks" 1 "deadlocks rowq rolled back (the application lost $app_deadlocks)"

# ---- lock waits ----
# The application holds every tally row for 20 s, taken before the rows
# come: each done statement waits the 10 s of rowq's lock wait timeout
# (the first must start within 10 s of the lock, on a loaded machine too).
mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B "$ROWQ_TEST_DB" \
    -e "START TRANSACTION; SELECT COUNT(*) FROM tally FOR UPDATE; DO SLEEP(20); COMMIT" \
    >/dev/null 2>lock.err &
locker=$!
track_pid "$locker"
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '"'DO SLEEP(20)%'"'")" = 1 ]' ||
	fail "the application's lock was not taken"
add_rows 200
wait "$locker" || fail "the application's locking session: $(cat lock.err)"
untrack_pid "$locker"
wait_all_final 60 || fail "rows still waiting after the lock wait"
lockwaits=$(lines rowq.log 'Lock wait timeout exceeded.*\(1205\); rolled back, will retry')
assert_ge "$lockwaits" 1 "lock wait timeouts rowq rolled back"

stop_rowq "$ROWQ_PID"
total=$((rows + 200))
assert_exactly_once "$total"
assert_eq "$total" "$(sql_value "SELECT SUM(n) FROM tally")" "rows the trigger counted"
assert_eq "$total" "$(cut -d' ' -f1 "$log" | sort -u | wc -l)" "distinct rows the handler saw"
# Each rollback of a finishing statement gives back the one row it held
# (batch 1), to be handled again: the extra handler runs are exactly those.
rollbacks=$(lines rowq.log '(finishing a row|for key [^:]+): .*rolled back, will retry')
assert_eq "$rollbacks" $(( $(wc -l <"$log") - total )) "extra handler runs = rolled-back finishing statements"
assert_eq 0 "$(lines rowq.log 'died|changed no row')" "worker deaths or lost rows"
figure "rows" "$total"
figure "deadlocks (1213) rolled back and retried by rowq" "$deadlocks"
figure "deadlocks lost by the application" "$app_deadlocks"
figure "lock wait timeouts (1205) rolled back and retried" "$lockwaits"
figure "done twice" 0
figure "lost" 0
