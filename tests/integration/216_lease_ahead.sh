#!/usr/bin/env bash
# lease.ahead: at batch 1, a claim leases several rows in one transaction,
# and the worker hands them to the handler one at a time, each finished
# in a transaction of its own.  On every server:
#   1. what it costs: in the server's general log, a claim for every five
#      rows, not one a row; every row handled and done once, its run
#      written once (runs: {}, in the row's own transaction);
#   2. each row committed as soon as its handler ends: while the handler
#      hangs on row 3, rows 1 and 2 are done for any other connection,
#      rows 3 to 5 leased and waiting; after kill -9 of that worker, a
#      new daemon does rows 3 to 5 once their leases run out, and never
#      rows 1 and 2 again;
#   3. a row whose `done` fails on its data (row 3): marked failed
#      instead, once, the rows of its claim before and after it done;
#      a row whose lease another took while it waited its turn (row 2):
#      its `done` changes nothing and is said, the others done; a row
#      whose `done` waits for a lock until the lock wait times out (row
#      2, leases of 30 s): rolled back, and the rest of the claim goes on
#      at once, not when its leases run out;
#   4. two daemons of two workers, a worker killed with kill -9 and the
#      server restarted while rows go through: every row done exactly
#      once, its run written once, no row tried more often than the
#      faults explain.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/lease.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/torture/common.sh"
lease_server ahead
family=$(server_family)

q "$(lease_job_table)"

# config FILE WORKERS LOG: the queue, pipefake's mode HANDLER (ok), more
# of done's SET in DONE_SETS, leases of LEASE_S seconds (3).
config()
{
	cat >"$1" <<YAML
database: { socket: $SOCK, user: root, name: ahead }
stop_timeout: 5s
queues:
  job:
    workers: $2
    select: SELECT id, attempts FROM job
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    pipe: [$HANDLERS/pipefake, ${HANDLER:-ok}, $3]
    timeout: 30s
    idle: 100ms
    runs: {}
    lease:
      duration: ${LEASE_S:-3}s
      ahead: 5
      claim: UPDATE job SET lease = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + ${LEASE_S:-3} WHERE id = :id
      renew: UPDATE job SET leased_until = UNIX_TIMESTAMP() + ${LEASE_S:-3}
             WHERE id = :id AND lease = :lease
    done: UPDATE job SET status = 'done', done_count = done_count + 1${DONE_SETS:-}
          WHERE id = :id AND lease = :lease
    failed: UPDATE job SET status = 'failed', last_error = :error
            WHERE id = :id AND lease = :lease
YAML
}

fill() { : >"$2"; q "DELETE FROM job; INSERT INTO job (id) SELECT seq FROM $(seq_rows "$1")"; q "DELETE FROM rowq_runs" 2>/dev/null || true; }
done_runs() { q1 "SELECT CONCAT_WS(' ', COUNT(*), COUNT(DISTINCT row_key)) FROM rowq_runs WHERE outcome = 'done'"; }
done_once() { q1 "SELECT CONCAT_WS(' ', COUNT(*), SUM(done_count), MIN(done_count), MAX(done_count)) FROM job WHERE status = 'done'"; }
ndone() { q1 "SELECT COUNT(*) FROM job WHERE status = 'done'"; }
runs_of() { grep -c "^$1 " handled || true; }
# rows_of COLUMN: "id:status:COLUMN" of each row, on one line.
rows_of() { q "SELECT CONCAT_WS(':', id, status, $1) FROM job ORDER BY id" | paste -sd' ' -; }

# ---- 1. what it costs ----
rows=200
fill $rows handled
config cost.yaml 1 handled
q "SET GLOBAL general_log_file = '$ROWQ_TEST_TMP/general.log'; SET GLOBAL general_log = 1"
"$ROWQ" -c cost.yaml drain job >cost.log 2>&1 || fail "drain: $(tail -n 5 cost.log)"
q "SET GLOBAL general_log = 0"
claims=$(grep -c "FOR UPDATE SKIP LOCKED" general.log || true)
echo "$family: $claims claims for $rows rows"
assert_eq "$rows $rows 1 1" "$(done_once)" "rows done, once each"
assert_eq "$rows 1" "$(q1 "SELECT CONCAT_WS(' ', SUM(attempts), MAX(attempts)) FROM job")" "tries"
assert_eq $rows "$(cut -d' ' -f1 handled | sort -u | wc -l)" "rows handled"
assert_eq $rows "$(wc -l <handled)" "handler runs"
assert_eq "$rows $rows" "$(done_runs)" "runs written"
# 40 claims of five rows; the prepared claim and the cursor's fallback
# add a few.
assert_le "$claims" $((rows / 5 + 10)) "claims"

# ---- 2. each row committed as soon as its handler ends ----
fill 5 handled
HANDLER="hang-on, 3" config hang.yaml 1 handled
rowq_start hang.yaml hang.log
pid=$ROWQ_PID
wait_until 20 '[ "$(runs_of 3)" = 1 ]' || fail "row 3 not handled: $(tail -n 20 hang.log)"
assert_eq "1:done:1 2:done:1 3:waiting:1 4:waiting:1 5:waiting:1" \
    "$(rows_of attempts)" \
    "while row 3 runs"
assert_eq 3 "$(q1 "SELECT COUNT(*) FROM job WHERE lease IS NOT NULL AND status = 'waiting' AND leased_until >= UNIX_TIMESTAMP()")" "rows 3 to 5: leased"
assert_eq "0 0" "$(runs_of 4) $(runs_of 5)" "rows 4 and 5: not handled yet"
w=$(a_worker $pid) || fail "no worker to kill"
kill -KILL "$w"
stop_rowq $pid
config rest.yaml 1 handled
rowq_start rest.yaml rest.log
pid=$ROWQ_PID
wait_until 20 '[ "$(ndone)" = 5 ]' || fail "rows 3 to 5 not done: $(tail -n 20 rest.log)"
stop_rowq $pid
assert_eq "5 5 1 1" "$(done_once)" "after the kill: done once each"
assert_eq "1 1 2 1 1" "$(for k in 1 2 3 4 5; do runs_of $k; done | paste -sd' ' -)" "handler runs, rows 1 to 5"
assert_eq "1 1 2 2 2" "$(q "SELECT attempts FROM job ORDER BY id" | paste -sd' ' -)" "tries, rows 1 to 5"

# ---- 3. a done that fails on a row's data; a lease lost while waiting ----
fill 5 handled
DONE_SETS=",
          last_error = IF(id = 3, REPEAT('x', 70000), NULL)" config data.yaml 1 handled
rowq_start data.yaml data.log
pid=$ROWQ_PID
wait_until 20 '[ "$(q1 "SELECT COUNT(*) FROM job WHERE status <> '"'waiting'"'")" = 5 ]' ||
	fail "rows not finished: $(tail -n 20 data.log)"
stop_rowq $pid
assert_eq "1:done:1 2:done:1 3:failed:0 4:done:1 5:done:1" \
    "$(rows_of done_count)" \
    "a done that fails on row 3's data"
assert_match "row 3: .*too long" "$(cat data.log)" "row 3: why, said"
assert_eq 5 "$(wc -l <handled)" "handler runs"

fill 5 handled
# Rows of 1.5 s: the lease is taken while row 2 waits, on a loaded
# machine too; leases of 30 s, renewed after 10, so that its done, not a
# renewal, finds it taken.
HANDLER="sleep, \"1500\"" LEASE_S=30 config stolen.yaml 1 handled
rowq_start stolen.yaml stolen.log
pid=$ROWQ_PID
wait_until 20 '[ "$(q1 "SELECT COUNT(*) FROM job WHERE lease IS NOT NULL")" = 5 ]' ||
	fail "rows not leased: $(tail -n 20 stolen.log)"
q "UPDATE job SET lease = 'taken by another' WHERE id = 2"
wait_until 20 '[ "$(ndone)" = 4 ] && [ "$(runs_of 2)" = 1 ]' ||
	fail "rows not done: $(tail -n 20 stolen.log)"
sleep 0.5
stop_rowq $pid
assert_eq "1:done:1 2:waiting:0 3:done:1 4:done:1 5:done:1" \
    "$(rows_of done_count)" \
    "a lease taken while the row waited its turn"
assert_match "row 2: .*changed no row for key 2: the lease was lost" "$(cat stolen.log)" "row 2: said"

fill 5 handled
HANDLER="sleep, \"1000\"" LEASE_S=30 config locked.yaml 1 handled
rowq_start locked.yaml locked.log
pid=$ROWQ_PID
wait_until 20 '[ "$(q1 "SELECT COUNT(*) FROM job WHERE lease IS NOT NULL")" = 5 ]' ||
	fail "rows not leased: $(tail -n 20 locked.log)"
# Row 2 locked by another session for longer than rowq's lock wait (10 s).
q "BEGIN; SELECT id FROM job WHERE id = 2 FOR UPDATE; DO SLEEP(13); COMMIT" >/dev/null &
holder=$!
wait_until 25 '[ "$(ndone)" = 4 ]' ||
	fail "the claim's rows after row 2 not done: $(tail -n 20 locked.log)"
wait $holder || fail "the lock's session failed"
stop_rowq $pid
assert_eq "1:done:1 2:waiting:0 3:done:1 4:done:1 5:done:1" \
    "$(rows_of done_count)" "a done that waited for a lock, rolled back"
assert_match "done for key 2: Lock wait timeout.*rolled back, will retry" "$(cat locked.log)" "row 2: said"
assert_eq "1 1 1 1 1" "$(for k in 1 2 3 4 5; do runs_of $k; done | paste -sd' ' -)" "handler runs, rows 1 to 5"

# ---- 4. kill -9 and a server restart, two daemons ----
rows=400
fill $rows handled
pids=()
for d in a b; do
	HANDLER="sleep, \"20\"" config "$d.yaml" 2 handled
	rowq_start "$d.yaml" "$d.log"
	pids+=("$ROWQ_PID")
done
on_exit '[ $? -eq 0 ] || tail -n 30 "$ROWQ_TEST_TMP"/[ab].log'
handled() { wc -l <handled; }
wait_until 30 '[ "$(handled)" -ge $((rows / 4)) ]' || fail "rows stopped going through: $(handled) handled"
w=$(a_worker "${pids[0]}") || fail "no worker of daemon a to kill"
kill -KILL "$w"
wait_until 30 '[ "$(handled)" -ge $((rows / 2)) ]' || fail "rows stopped going through after the kill: $(handled) handled"
server_restart r
wait_until 90 '[ "$(ndone)" = $rows ]' ||
	fail "not every row done: $(q "SELECT id, status, attempts FROM job WHERE status <> 'done' LIMIT 10")"
for p in "${pids[@]}"; do
	stop_rowq "$p"
done
assert_eq "$rows $rows 1 1" "$(done_once)" "faults: rows done, once each"
assert_eq $rows "$(cut -d' ' -f1 handled | sort -u | wc -l)" "faults: rows handled"
assert_eq "$rows $rows" "$(done_runs)" "faults: runs written"
# A kill leaves its running row, and the row whose done waited for the
# next claim, to run again; the rows it leased ahead wait out their
# lease and run once.  A restart rolls back each worker's open claim
# and its held done.
again=$(($(handled) - rows))
echo "faults: $(q1 "SELECT SUM(attempts) - COUNT(*) FROM job") leases and $again handler runs beyond one a row"
assert_le "$again" 10 "faults: handler runs beyond one a row"
assert_eq 1 "$(cat a.log b.log | grep -c 'died (killed by signal 9')" "faults: the death logged"
assert_eq 0 "$(cat a.log b.log | grep -c 'AddressSanitizer\|runtime error' || true)" "faults: sanitizers"
