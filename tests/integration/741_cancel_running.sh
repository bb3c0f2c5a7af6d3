#!/usr/bin/env bash
# cancel: in lease mode, a waiting or running row cancelled by key, from
# the command line and from its console page: the queue's own statement
# takes the row out of the select and its lease away, the worker's next
# renewal finds the lease gone and stops the handler, and the run log
# records the cancel once (outcome cancel, who did it), nothing for the
# stopped try.  2 daemons of 2 workers, handlers of 60 s, leases of 3 s.
#   - rowq cancel of a running row (daemon a's or b's): its handler gone
#     within a renewal (1 s) and a margin, the row cancelled, done never
#     ran, one cancel run, the worker's log says the lease was lost;
#   - rowq cancel of a waiting row: cancelled, never started;
#   - a key that matches no row: exit 1, "matched no row";
#   - the console: a running row's page has Cancel (an operator's, with
#     its CSRF token; a viewer gets 403), and the POST cancels it so;
#   - cancel: in transaction mode is refused, naming the key.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/trace
: >"$log"
sql "CREATE TABLE job (
    id BIGINT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed', 'cancelled') NOT NULL
           DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    attempts INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, id)
) ENGINE=InnoDB;
INSERT INTO job (id) SELECT seq FROM $(seq_rows 6)"
console_users "$ROWQ_TEST_TMP/console.users"
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
# config FILE [CONSOLE]: a daemon's; the console on a's only.
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $ROWQ_TEST_TMP/${1%.yaml}.sock
${2:+console: { listen: "127.0.0.1:$port", users_file: $ROWQ_TEST_TMP/console.users \}}
queues:
  job:
    workers: 2
    select: SELECT id, attempts FROM job
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    exec: [$HANDLERS/trace, $log, "60000"]
    timeout: 120s
    idle: 200ms
    runs: {}
    lease:
      duration: 3s
      claim: UPDATE job SET lease = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + 3 WHERE id = :id
      renew: UPDATE job SET leased_until = UNIX_TIMESTAMP() + 3
             WHERE id = :id AND lease = :lease
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE job SET status = 'failed'
            WHERE id = :id AND lease = :lease
    cancel: UPDATE job SET status = 'cancelled', lease = NULL
            WHERE id = :id AND status = 'waiting'
YAML
}
config a.yaml console
config b.yaml
sed -i 's/^console: { listen: "\(.*\)", users_file: \(.*\) \\}$/console: { listen: "\1", users_file: \2 }/' a.yaml
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
rowq_start a.yaml a.log
A=$ROWQ_PID
rowq_start b.yaml b.log
B=$ROWQ_PID
# 4 workers: rows 1 to 4 run, 5 and 6 wait.
wait_until 20 '[ "$(running_at "$log" "$(now_us)")" = 4 ]' || fail "4 handlers never ran"
running_ids() { awk '$1 == "start" { s[$2] = $3 } $1 == "end" { delete s[$2] } END { for (k in s) print k }' "$log" | sort -n; }
pid_of() { awk -v k="$1" '$1 == "start" && $2 == k { p = $3 } END { print p }' "$log"; }

# ---- rowq cancel, a running row ----
victim=$(running_ids | head -n 1)
hpid=$(pid_of "$victim")
kill -0 "$hpid" || fail "row $victim's handler $hpid is not running"
out=$("$ROWQ" -c a.yaml cancel job "$victim" 2>&1) || fail "cancel $victim: $out"
assert_match "job: cancelled 1 row, 0 keys matched no row" "$out" "rowq cancel: its summary"
t0=$(now_us)
wait_until 6 '! kill -0 "$hpid" 2>/dev/null' || fail "row $victim's handler still runs 6 s after the cancel"
figure "ms from the cancel to its handler's end" "$((($(now_us) - t0) / 1000))"
assert_eq cancelled "$(sql_value "SELECT status FROM job WHERE id = $victim")" "row $victim: cancelled"
wait_until 5 'grep -q "lease was lost; stopping the handler" a.log b.log' || fail "no worker said its lease was lost"

# ---- rowq cancel, a waiting row, and a key of no row ----
assert_eq waiting "$(sql_value "SELECT status FROM job WHERE id = 6")" "row 6 waits"
out=$("$ROWQ" -c b.yaml cancel job 6 2>&1) || fail "cancel 6: $out"
status=0
out=$("$ROWQ" -c b.yaml cancel job 99 2>&1) || status=$?
assert_eq 1 "$status" "cancel of a key of no row: exit status"
assert_match "0 rows, 1 key matched no row" "$out" "cancel of a key of no row"
status=0
out=$("$ROWQ" -c b.yaml cancel job --all 2>&1) || status=$?
assert_eq 2 "$status" "cancel --all: exit status"

# ---- the console ----
console_up
next=$(running_ids | grep -vx "$victim" | head -n 1)
npid=$(pid_of "$next")
console_login a.jar alice
page=$(console_curl -b a.jar "$CONSOLE/queue/job/row?key=$next")
assert_match 'value="cancel" id="cancel"' "$page" "a running row's page: Cancel"
csrf=$(console_csrf a.jar "/queue/job/row?key=$next")
console_login v.jar victor
assert_eq 403 "$(console_curl -b v.jar -o /dev/null -w '%{http_code}' \
    --data-urlencode "csrf=$(console_csrf v.jar /)" --data-urlencode action=cancel \
    --data-urlencode "key=$next" "$CONSOLE/queue/job/failed")" "a viewer's cancel"
assert_eq 403 "$(console_curl -b a.jar -o /dev/null -w '%{http_code}' \
    --data-urlencode action=cancel --data-urlencode "key=$next" \
    "$CONSOLE/queue/job/failed")" "a cancel without the CSRF token"
kill -0 "$npid" || fail "row $next's handler stopped before the console's cancel"
hex=$(printf '%s' "$next" | od -An -tx1 | tr -d ' \n')
assert_eq 303 "$(console_curl -b a.jar -o /dev/null -w '%{http_code}' \
    --data-urlencode "csrf=$csrf" --data-urlencode action=cancel \
    --data-urlencode back=row --data-urlencode "key_hex=$hex" \
    "$CONSOLE/queue/job/failed")" "the console's cancel"
wait_until 6 '! kill -0 "$npid" 2>/dev/null' || fail "row $next's handler still runs 6 s after the console's cancel"
assert_eq cancelled "$(sql_value "SELECT status FROM job WHERE id = $next")" "row $next: cancelled"
assert_match "alice \(operator, from .*\) cancelled job: 1 row" "$(cat a.log)" "the action logged"
page=$(console_curl -b a.jar "$CONSOLE/queue/job/row?key=$next")
assert_match 'id="state">cancelled<' "$page" "the row's page: cancelled"

stop_rowq "$A"
stop_rowq "$B"
# The run log: one cancel run a row cancelled, who did it; no run of the
# stopped tries; done never ran on them.
assert_eq "$victim cancel rowq cancel,6 cancel rowq cancel,$next cancel alice (console)" \
    "$(sql "SELECT CAST(row_key AS CHAR), outcome, CAST(error AS CHAR) FROM rowq_runs ORDER BY id" | tr '\t' ' ' | paste -sd,)" \
    "the run log"
assert_eq 0 "$(sql_value "SELECT SUM(done_count) FROM job WHERE status = 'cancelled'")" "done of a cancelled row"
assert_eq "" "$(awk -v a="$victim" -v b="$next" '$1 == "start" && $2 == 6' "$log")" "row 6 started"

# ---- transaction mode refuses cancel: ----
sed -e '/^    lease:/,/^             WHERE id = :id AND lease = :lease$/d' b.yaml >t.yaml
status=0
out=$("$ROWQ" -c t.yaml check 2>&1) || status=$?
assert_eq 78 "$status" "cancel: in transaction mode: exit status"
assert_match "t.yaml:[0-9]*: queues.job.cancel: cancel needs lease:" "$out" "cancel: in transaction mode"
