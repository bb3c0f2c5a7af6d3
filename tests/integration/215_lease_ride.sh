#!/usr/bin/env bash
# Lease mode at batch 1 on MariaDB: the row's lease rides in its claim's
# round trip (src/worker_lease_ride.c); on MySQL it keeps its round trip.
# On every server:
#   1. what a row costs: in the server's general log, where each round
#      trip's text is one entry, no lease in an entry of its own on
#      MariaDB (each rides behind a claim), one a row on MySQL; every
#      row handled and done once; the claim of the cursor's shape and an
#      aliased key (a select over the claim) both;
#   2. two daemons of two workers, a worker killed with kill -9 and the
#      server restarted while rows go through: every row done exactly
#      once, no row tried more often than the faults explain;
#   3. a lease.claim that changes no row for some rows: those are said,
#      left waiting and never handled, the others go through;
#   4. a lease.claim the server refuses for one row: the row before it,
#      whose `done` went in front of that claim, is done once; the
#      refused row is not handled, and the log names the statement and
#      the row.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/lease.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/torture/common.sh"
lease_server ride
family=$(server_family)

q "$(lease_job_table)"

# config FILE WORKERS LOG [KEY [CLAIM]]: the queue, its key's name KEY
# (id; another is an alias of id), CLAIM lease.claim's text.
config()
{
	local key=${4:-id} col=id
	[ "$key" = id ] || col="id AS $key"
	local claim=${5:-"UPDATE job SET lease = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + 3 WHERE id = :$key"}
	cat >"$1" <<YAML
database: { socket: $SOCK, user: root, name: ride }
stop_timeout: 5s
queues:
  job:
    workers: $2
    select: SELECT $col, attempts FROM job
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    pipe: [$HANDLERS/pipefake, ${HANDLER:-ok}, $3]
    timeout: 10s
    idle: 100ms
    lease:
      duration: 3s
      claim: $claim
      renew: UPDATE job SET leased_until = UNIX_TIMESTAMP() + 3
             WHERE id = :$key AND lease = :lease
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :$key AND lease = :lease
    failed: UPDATE job SET status = 'failed', last_error = :error
            WHERE id = :$key AND lease = :lease
YAML
}

fill() { : >"$2"; q "DELETE FROM job; INSERT INTO job (id) SELECT seq FROM $(seq_rows "$1")"; }
done_once() { q1 "SELECT CONCAT_WS(' ', COUNT(*), SUM(done_count), MIN(done_count), MAX(done_count)) FROM job WHERE status = 'done'"; }

# ---- 1. what a row costs ----
rows=300
for key in id jid; do
	fill $rows handled
	config cost.yaml 1 handled "$key"
	q "SET GLOBAL general_log_file = '$ROWQ_TEST_TMP/general.$key.log'; SET GLOBAL general_log = 1"
	"$ROWQ" -c cost.yaml -d drain job >cost.log 2>&1 || fail "drain ($key): $(tail -n 5 cost.log)"
	q "SET GLOBAL general_log = 0"
	# An entry's first line: "<time> <thread> Query <text>".
	alone=$(grep -Ec "Query	(EXECUTE rowq_lease|UPDATE job SET lease)" "general.$key.log" || true)
	riding=$(grep -c "@rowq_claim := " "general.$key.log" || true)
	echo "$family, key $key: $alone leases in a round trip of their own, $riding claims with the lease behind them, for $rows rows"
	assert_eq "$rows $rows 1 1" "$(done_once)" "$key: rows done, once each"
	assert_eq "$rows 1" "$(q1 "SELECT CONCAT_WS(' ', SUM(attempts), MAX(attempts)) FROM job")" "$key: tries"
	# pipefake reads the key after "id": only.
	[ "$key" != id ] ||
	    assert_eq $rows "$(cut -d' ' -f1 handled | sort -u | wc -l)" "$key: rows handled"
	assert_eq $rows "$(wc -l <handled)" "$key: handler runs"
	if [ "$family" = mariadb ]; then
		how="in its own list"
		[ "$key" = id ] || how="in a select over it"
		assert_match "the lease rides on the claim, $how" "$(cat cost.log)" "$key: how the lease rides"
		assert_eq 0 "$alone" "$key: leases in a round trip of their own"
		assert_ge "$riding" $rows "$key: claims with the lease behind them"
	else
		assert_eq 0 "$(grep -c 'the lease rides' cost.log || true)" "$key: no ride on $family"
		assert_eq 0 "$riding" "$key: claims with the lease behind them, on $family"
		assert_eq $rows "$alone" "$key: leases in a round trip of their own, on $family"
	fi
done

# ---- 2. kill -9 and a server restart, two daemons ----
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
wait_until 90 '[ "$(q1 "SELECT COUNT(*) FROM job WHERE status = '"'done'"'")" = $rows ]' ||
	fail "not every row done: $(q "SELECT id, status, attempts FROM job WHERE status <> 'done' LIMIT 10")"
for p in "${pids[@]}"; do
	stop_rowq "$p"
done
assert_eq "$rows $rows 1 1" "$(done_once)" "faults: rows done, once each"
assert_eq $rows "$(cut -d' ' -f1 handled | sort -u | wc -l)" "faults: rows handled"
# A kill leaves its row leased, and the row whose done waited for the
# next claim; a restart rolls back each worker's open claim and done.
again=$(q1 "SELECT SUM(attempts) - COUNT(*) FROM job")
echo "faults: $again tries and $(($(handled) - rows)) handler runs beyond one a row"
assert_le "$again" 10 "faults: tries beyond the first"
assert_le "$(($(handled) - rows))" 10 "faults: handler runs beyond one a row"
assert_eq 1 "$(cat a.log b.log | grep -c 'died (killed by signal 9')" "faults: the death logged"
assert_eq 0 "$(cat a.log b.log | grep -c 'AddressSanitizer\|runtime error' || true)" "faults: sanitizers"

# ---- 3. a lease.claim that changes no row for some rows ----
fill 50 handled
config none.yaml 1 handled id "UPDATE job SET lease = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + 3 WHERE id = :id AND id % 10 <> 0"
rowq_start none.yaml none.log
pid=$ROWQ_PID
wait_until 20 '[ "$(q1 "SELECT COUNT(*) FROM job WHERE status = '"'done'"'")" = 45 ]' ||
	fail "rows leased not done: $(tail -n 30 none.log; q "SELECT id, status, attempts FROM job WHERE status <> 'done'")"
sleep 0.5
stop_rowq $pid
assert_eq "45 45 1 1" "$(done_once)" "rows leased: done once"
assert_eq "5 0" "$(q1 "SELECT CONCAT_WS(' ', COUNT(*), SUM(attempts)) FROM job WHERE status = 'waiting'")" "rows not leased: waiting, untried"
assert_eq 0 "$(grep -c '^[0-9]*0 ' handled || true)" "rows not leased: handled"
for k in 10 20 30 40 50; do
	assert_match "row $k: .*lease.claim changed no row, so it was not leased" "$(cat none.log)" "row $k: said"
done

# ---- 4. a lease.claim the server refuses for row 7 ----
fill 20 handled
config refused.yaml 1 handled id "UPDATE job SET lease = IF(id = 7, REPEAT('x', 40), :lease),
             attempts = attempts + 1, leased_until = UNIX_TIMESTAMP() + 3 WHERE id = :id"
rowq_start refused.yaml refused.log
pid=$ROWQ_PID
wait_until 20 'grep -q "row 7: .*lease.claim.*too long" refused.log' ||
	fail "the refused lease not said: $(cat refused.log)"
wait_until 10 '[ "$(q1 "SELECT status FROM job WHERE id = 6")" = done ]' ||
	fail "row 6 not done: $(tail -n 5 refused.log)"
stop_rowq $pid
assert_eq "6 6 1 1" "$(done_once)" "rows 1 to 6: done once"
assert_eq "waiting 0" "$(q1 "SELECT CONCAT_WS(' ', status, attempts) FROM job WHERE id = 7")" "row 7: not leased"
assert_eq 0 "$(grep -c '^7 ' handled || true)" "row 7: not handled"
assert_match "row 7: .*lease.claim" "$(cat refused.log)" "row 7: the statement named"
