#!/usr/bin/env bash
# lease.release: the rows a claim leased and no handler has started when
# a stop or a reload comes (lease.ahead's, a batch's) are given back at
# once, not when their leases run out.  Leases of 60 s here, so that a
# row that waited for its lease would fail the time limits.  On every
# server:
#   1. a stop (SIGTERM) while row 1 of five runs, lease.ahead 5: row 1
#      finishes, rows 2 to 5 are given back (the release also takes back
#      the claim's try), said in the log; a new daemon does them at once;
#   2. the same at batch 10 without lease.ahead: rows 2 to 10 given back;
#      and a release that fails (its list's second statement, on row 5):
#      row 1 stays done, the release is rolled back whole and said, and
#      rows 2 to 10 come back when their leases (4 s) run out;
#   3. two daemons of two workers, one reloaded (SIGHUP) twice while rows
#      go through: every row done once, with one try, well within the
#      leases;
#   4. the server shut down while row 1 runs, then the daemon stopped,
#      leases of 4 s: row 1's `done` fails first, so the turn ends there
#      and nothing is given back; the rows come back when their leases
#      run out and are done once, by a new daemon after a restart.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/lease.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/torture/common.sh"
lease_server given

q "$(lease_job_table)"
q "CREATE TABLE given_back (id BIGINT NOT NULL PRIMARY KEY)"

# config FILE WORKERS LOG: the queue, pipefake sleeping SLEEP_MS (3000)
# a row, lease.ahead AHEAD or batch BATCH, leases of LEASE_S (60), and
# RELEASE_MORE, a statement after the release's own.
config()
{
	local lease=${LEASE_S:-60}
	cat >"$1" <<YAML
database: { socket: $SOCK, user: root, name: given }
stop_timeout: 10s
queues:
  job:
    workers: $2
    batch: ${BATCH:-1}
    select: SELECT id, attempts FROM job
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    pipe: [$HANDLERS/pipefake, sleep, "${SLEEP_MS:-3000}", $3]
    timeout: 30s
    idle: 100ms
    lease:
      duration: ${lease}s${AHEAD:+
      ahead: $AHEAD}
      claim: UPDATE job SET lease = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + $lease WHERE id = :id
      renew: UPDATE job SET leased_until = UNIX_TIMESTAMP() + $lease
             WHERE id = :id AND lease = :lease
      release:
        - UPDATE job SET lease = NULL, leased_until = 0,
          attempts = attempts - 1 WHERE id = :id AND lease = :lease${RELEASE_MORE:+
        - $RELEASE_MORE}
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE job SET status = 'failed', last_error = :error
            WHERE id = :id AND lease = :lease
YAML
}

fill() { : >"$2"; q "DELETE FROM job; INSERT INTO job (id) SELECT seq FROM $(seq_rows "$1")"; }
done_once() { q1 "SELECT CONCAT_WS(' ', COUNT(*), SUM(done_count), MIN(done_count), MAX(done_count)) FROM job WHERE status = 'done'"; }
ndone() { q1 "SELECT COUNT(*) FROM job WHERE status = 'done'"; }
nleased() { q1 "SELECT COUNT(*) FROM job WHERE lease IS NOT NULL AND status = 'waiting'"; }
runs_of() { grep -c "^$1 " "$2" || true; }
# rows_of: "id:status:attempts:leased" of each row, on one line.
rows_of() { q "SELECT CONCAT_WS(':', id, status, attempts, lease IS NOT NULL) FROM job ORDER BY id" | paste -sd' ' -; }

# on_row PID KEY: whether a worker of daemon PID says it handles KEY.
on_row()
{
	local w
	for w in $(children_of "$1"); do
		tr '\0' ' ' <"/proc/$w/cmdline" 2>/dev/null |
		    grep -q "(row $2)" && return 0
	done
	return 1
}

# stop_while_first_runs N LOG CONFIG: N rows, one worker; a stop while
# the claim's first row runs (its handler sleeps 3 s).
stop_while_first_runs()
{
	local want=$1
	fill "$1" handled
	config "$3" 1 handled
	rowq_start "$3" "$2"
	wait_until 20 '[ "$(nleased)" = "$want" ] && on_row "$ROWQ_PID" 1' ||
	    fail "rows not leased: $(tail -n 20 "$2")"
	stop_rowq "$ROWQ_PID"
}

# ---- 1. a stop, lease.ahead 5 ----
AHEAD=5 stop_while_first_runs 5 stop.log stop.yaml
assert_eq "1:done:1:1 2:waiting:0:0 3:waiting:0:0 4:waiting:0:0 5:waiting:0:0" \
    "$(rows_of)" "after the stop: row 1 done, rows 2 to 5 given back"
assert_match "gave back 4 of the 4 rows leased and not handled" \
    "$(cat stop.log)" "the release, said"
assert_eq "1 0 0 0 0" "$(for k in 1 2 3 4 5; do runs_of $k handled; done | paste -sd' ' -)" \
    "handler runs before the stop"
t0=$(now_us)
SLEEP_MS=10 AHEAD=5 config rest.yaml 1 handled
rowq_start rest.yaml rest.log
wait_until 20 '[ "$(ndone)" = 5 ]' || fail "rows 2 to 5 not done: $(tail -n 20 rest.log)"
stop_rowq "$ROWQ_PID"
took_s=$((($(now_us) - t0) / 1000000))
assert_le "$took_s" 20 "s until rows 2 to 5 were done (their leases: 60 s)"
assert_eq "5 5 1 1" "$(done_once)" "done once each"
assert_eq "1 1 1 1 1" "$(q "SELECT attempts FROM job ORDER BY id" | paste -sd' ' -)" "tries"

# ---- 2. a stop at batch 10 ----
BATCH=10 stop_while_first_runs 10 batch.log batch.yaml
assert_eq 1 "$(ndone)" "batch 10: the running row done"
assert_eq "0 0" "$(nleased) $(q1 "SELECT SUM(attempts) FROM job WHERE status = 'waiting'")" \
    "batch 10: rows 2 to 10 given back, their tries with them"
assert_match "gave back 9 of the 9 rows leased and not handled" \
    "$(cat batch.log)" "batch 10: the release, said"
SLEEP_MS=10 BATCH=10 config rest10.yaml 1 handled
rowq_start rest10.yaml rest10.log
wait_until 20 '[ "$(ndone)" = 10 ]' || fail "batch 10: rows not done: $(tail -n 20 rest10.log)"
stop_rowq "$ROWQ_PID"
assert_eq "10 10 1 1" "$(done_once)" "batch 10: done once each"

q "DELETE FROM given_back; INSERT INTO given_back VALUES (5)"
LEASE_S=4 RELEASE_MORE="INSERT INTO given_back VALUES (:id)" BATCH=10 \
    stop_while_first_runs 10 failing.log failing.yaml
assert_eq "1 9" "$(ndone) $(nleased)" \
    "a release that fails: row 1 done, rows 2 to 10 still leased"
assert_eq 1 "$(q1 "SELECT COUNT(*) FROM given_back")" "the release, rolled back whole"
assert_match "queues.job.lease.release\[1\]: Duplicate entry.*the 9 rows leased and not handled come back when their leases run out" \
    "$(cat failing.log)" "a release that fails: said"
SLEEP_MS=10 BATCH=10 LEASE_S=4 config after.yaml 1 handled
rowq_start after.yaml after.log
wait_until 30 '[ "$(ndone)" = 10 ]' || fail "rows not done after their leases: $(tail -n 20 after.log)"
stop_rowq "$ROWQ_PID"
assert_eq "10 10 1 1" "$(done_once)" "a release that fails: done once each"
assert_eq "1 1 1 1 1 1 1 1 1 1" "$(for k in $(seq 10); do runs_of "$k" handled; done | paste -sd' ' -)" \
    "a release that fails: handler runs"

# ---- 3. two daemons, one reloaded twice ----
rows=80
fill $rows handled
SLEEP_MS=100 AHEAD=5 config a.yaml 2 handled
SLEEP_MS=100 AHEAD=5 config b.yaml 2 handled
t0=$(now_us)
rowq_start a.yaml a.log
a=$ROWQ_PID
rowq_start b.yaml b.log
b=$ROWQ_PID
wait_until 20 '[ "$(ndone)" -ge 10 ]' || fail "rows not going through: $(tail -n 20 a.log)"
kill -HUP "$a"
wait_until 20 '[ "$(ndone)" -ge 40 ]' || fail "rows not going through after a reload: $(tail -n 20 a.log)"
kill -HUP "$a"
wait_until 40 '[ "$(ndone)" = '$rows' ]' ||
	fail "rows not done after the reloads: $(ndone) of $rows; $(tail -n 20 a.log)"
took_s=$((($(now_us) - t0) / 1000000))
stop_rowq "$a"
stop_rowq "$b"
assert_le "$took_s" 40 "s for $rows rows through two reloads (leases: 60 s)"
assert_eq "$rows $rows 1 1" "$(done_once)" "two daemons, reloads: done once each"
assert_eq "$rows 1" "$(q1 "SELECT CONCAT_WS(' ', SUM(attempts), MAX(attempts)) FROM job")" \
    "two daemons, reloads: one try a row"
assert_eq $rows "$(wc -l <handled)" "two daemons, reloads: handler runs"
given=$(grep -c "gave back" a.log || true)
echo "reloads: $given releases in daemon a's log"
assert_le 1 "$given" "a reload gave rows back"

# ---- 4. the server shut down as the daemon stops ----
fill 5 handled
LEASE_S=4 AHEAD=5 config down.yaml 1 handled
rowq_start down.yaml down.log
wait_until 20 '[ "$(nleased)" = 5 ] && on_row "$ROWQ_PID" 1' ||
	fail "rows not leased: $(tail -n 20 down.log)"
server_stop r
stop_rowq "$ROWQ_PID"
server_restart r
SLEEP_MS=10 LEASE_S=4 AHEAD=5 config back.yaml 1 handled
rowq_start back.yaml back.log
wait_until 30 '[ "$(ndone)" = 5 ]' || fail "rows not done after the restart: $(tail -n 20 back.log)"
stop_rowq "$ROWQ_PID"
assert_eq "5 5 1 1" "$(done_once)" "server down at the stop: done once each"
assert_le "$(runs_of 1 handled)" 2 "server down at the stop: row 1's handler runs"
assert_eq "1 1 1 1" "$(for k in 2 3 4 5; do runs_of $k handled; done | paste -sd' ' -)" \
    "server down at the stop: rows 2 to 5 handled once"
