#!/usr/bin/env bash
# Lease mode: a job three times longer than its lease is not taken by a
# second worker (renewals work); a worker killed mid-job gives its row
# back when the lease runs out, and the row is then done once; a stolen
# lease is detected, at renewal or at the finishing statement, and the
# stale worker records nothing.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/lease.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/handled

sql "$(lease_job_table video)"

# lease_config FILE SECONDS SLEEP_MS: leases of SECONDS, a handler of SLEEP_MS.
lease_config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
queues:
  render:
    workers: 2
    select: SELECT id, attempts FROM video
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    exec: [$HANDLERS/fake, sleep, "$3", $log]
    timeout: 60s
    idle: 200ms
    lease:
      duration: $2s
      claim: UPDATE video SET lease = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + $2 WHERE id = :id
      renew: UPDATE video SET leased_until = UNIX_TIMESTAMP() + $2
             WHERE id = :id AND lease = :lease
    done: UPDATE video SET status = 'done', done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE video SET status = 'failed', last_error = :error
            WHERE id = :id AND lease = :lease
YAML
}

reset_rows()
{
	: >"$log"
	sql "DELETE FROM video; INSERT INTO video (id) VALUES $1"
}

stop_rowq()
{
	kill -TERM "$ROWQ_PID"
	wait "$ROWQ_PID" || fail "rowq exited with $?"
	untrack_pid "$ROWQ_PID"
}

start_rowq()
{
	"$ROWQ" -c "$1" run >"$2" 2>&1 &
	ROWQ_PID=$!
	track_pid "$ROWQ_PID"
}

# ---- a 9 s job on a 3 s lease, two workers: done once ----
reset_rows "(1)"
lease_config long.yaml 3 9000
start_rowq long.yaml long.log
wait_until 30 '[ "$(sql_value "SELECT status FROM video WHERE id = 1")" = done ]' ||
	fail "long job not done: $(cat long.log)"
stop_rowq
assert_eq 1 "$(wc -l <"$log")" "handler runs of the long job"
assert_eq "1 1" "$(sql_value "SELECT CONCAT(attempts, ' ', done_count) FROM video WHERE id = 1")" "attempts and done_count"
assert_eq 0 "$(grep -c 'lease' long.log || true)" "lease complaints in the log"

# ---- kill -9 of the worker mid-job: the row comes back after the lease ----
reset_rows "(1)"
lease_config kill.yaml 3 2500
start_rowq kill.yaml kill.log
wait_until 10 '[ -s "$log" ]' || fail "row 1 never started"
worker=
for w in $(cat /proc/"$ROWQ_PID"/task/*/children); do
	[ -n "$(cat /proc/"$w"/task/*/children 2>/dev/null)" ] && worker=$w
done
[ -n "$worker" ] || fail "no worker with a running handler"
kill -KILL "$worker"
# Nothing takes the row while its lease is live.
sleep 1
assert_eq 1 "$(wc -l <"$log")" "tries while the lease was live"
wait_until 20 '[ "$(sql_value "SELECT status FROM video WHERE id = 1")" = done ]' ||
	fail "killed row not done: $(cat kill.log)"
stop_rowq
assert_eq 2 "$(wc -l <"$log")" "handler runs after the kill"
assert_eq "2 1" "$(sql_value "SELECT CONCAT(attempts, ' ', done_count) FROM video WHERE id = 1")" "attempts and done_count after the kill"

# ---- stolen at renewal: the handler is stopped, nothing recorded ----
reset_rows "(1)"
lease_config steal.yaml 3 6000
start_rowq steal.yaml steal.log
wait_until 10 '[ -s "$log" ]' || fail "row 1 never started"
sql "UPDATE video SET lease = 'thief', leased_until = UNIX_TIMESTAMP() + 600 WHERE id = 1"
wait_until 5 'grep -q "lease was lost" steal.log' || fail "stolen lease not noticed: $(cat steal.log)"
stop_rowq
assert_match "render/[12]: row 1: .*queues.render.lease.renew changed no row on renewal: the lease was lost" "$(cat steal.log)" "log names queue, worker and key"
assert_eq "waiting thief 0" "$(sql_value "SELECT CONCAT(status, ' ', lease, ' ', done_count) FROM video WHERE id = 1")" "row after the steal"

# ---- stolen between renewals: done changes nothing, and says so ----
reset_rows "(1)"
lease_config late.yaml 30 2000
start_rowq late.yaml late.log
wait_until 10 '[ -s "$log" ]' || fail "row 1 never started"
sql "UPDATE video SET lease = 'thief' WHERE id = 1"
wait_until 10 'grep -q "lease was lost" late.log' || fail "lost lease not logged: $(cat late.log)"
stop_rowq
assert_match "render/[12]: row 1: .*queues.render.done changed no row for key 1: the lease was lost" "$(cat late.log)" "finishing with a lost lease"
assert_eq "waiting 0" "$(sql_value "SELECT CONCAT(status, ' ', done_count) FROM video WHERE id = 1")" "row after the late steal"
