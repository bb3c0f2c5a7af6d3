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
video_table 6
console_users "$ROWQ_TEST_TMP/console.users"
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
for d in a b; do
	video_config $d.yaml "$log" 60000 2 "" "runs: {}" \
	    "cancel: UPDATE video SET status = 'cancelled', lease = NULL WHERE id = :id AND status = 'waiting'"
done
# The console on a's only.
sed -i "s|^queues:|console: { listen: \"127.0.0.1:$port\", users_file: $ROWQ_TEST_TMP/console.users }\nqueues:|" a.yaml
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
out=$("$ROWQ" -c a.yaml cancel render "$victim" 2>&1) || fail "cancel $victim: $out"
assert_match "render: cancelled 1 row, 0 keys matched no row" "$out" "rowq cancel: its summary"
t0=$(now_us)
wait_until 6 '! kill -0 "$hpid" 2>/dev/null' || fail "row $victim's handler still runs 6 s after the cancel"
figure "ms from the cancel to its handler's end" "$((($(now_us) - t0) / 1000))"
assert_eq cancelled "$(sql_value "SELECT status FROM video WHERE id = $victim")" "row $victim: cancelled"
wait_until 5 'grep -q "lease was lost; stopping the handler" a.log b.log' || fail "no worker said its lease was lost"

# ---- rowq cancel, a waiting row, and a key of no row ----
assert_eq waiting "$(sql_value "SELECT status FROM video WHERE id = 6")" "row 6 waits"
out=$("$ROWQ" -c b.yaml cancel render 6 2>&1) || fail "cancel 6: $out"
status=0
out=$("$ROWQ" -c b.yaml cancel render 99 2>&1) || status=$?
assert_eq 1 "$status" "cancel of a key of no row: exit status"
assert_match "0 rows, 1 key matched no row" "$out" "cancel of a key of no row"
status=0
out=$("$ROWQ" -c b.yaml cancel render --all 2>&1) || status=$?
assert_eq 2 "$status" "cancel --all: exit status"

# ---- the console ----
console_up
next=$(running_ids | grep -vx "$victim" | head -n 1)
npid=$(pid_of "$next")
console_login a.jar alice
page=$(console_curl -b a.jar "$CONSOLE/queue/render/row?key=$next")
assert_match 'value="cancel" id="cancel"' "$page" "a running row's page: Cancel"
csrf=$(console_csrf a.jar "/queue/render/row?key=$next")
console_login v.jar victor
assert_eq 403 "$(console_curl -b v.jar -o /dev/null -w '%{http_code}' \
    --data-urlencode "csrf=$(console_csrf v.jar /)" --data-urlencode action=cancel \
    --data-urlencode "key=$next" "$CONSOLE/queue/render/failed")" "a viewer's cancel"
assert_eq 403 "$(console_curl -b a.jar -o /dev/null -w '%{http_code}' \
    --data-urlencode action=cancel --data-urlencode "key=$next" \
    "$CONSOLE/queue/render/failed")" "a cancel without the CSRF token"
kill -0 "$npid" || fail "row $next's handler stopped before the console's cancel"
hex=$(printf '%s' "$next" | od -An -tx1 | tr -d ' \n')
assert_eq 303 "$(console_curl -b a.jar -o /dev/null -w '%{http_code}' \
    --data-urlencode "csrf=$csrf" --data-urlencode action=cancel \
    --data-urlencode back=row --data-urlencode "key_hex=$hex" \
    "$CONSOLE/queue/render/failed")" "the console's cancel"
wait_until 6 '! kill -0 "$npid" 2>/dev/null' || fail "row $next's handler still runs 6 s after the console's cancel"
assert_eq cancelled "$(sql_value "SELECT status FROM video WHERE id = $next")" "row $next: cancelled"
assert_match "alice \(operator, from .*\) cancelled render: 1 row" "$(cat a.log)" "the action logged"
page=$(console_curl -b a.jar "$CONSOLE/queue/render/row?key=$next")
assert_match 'id="state">cancelled<' "$page" "the row's page: cancelled"

stop_rowq "$A"
stop_rowq "$B"
# The run log: one cancel run a row cancelled, who did it; no run of the
# stopped tries; done never ran on them.
assert_eq "$victim cancel rowq cancel,6 cancel rowq cancel,$next cancel alice (console)" \
    "$(sql "SELECT CAST(row_key AS CHAR), outcome, CAST(error AS CHAR) FROM rowq_runs ORDER BY id" | tr '\t' ' ' | paste -sd,)" \
    "the run log"
assert_eq 0 "$(sql_value "SELECT SUM(done_count) FROM video WHERE status = 'cancelled'")" "done of a cancelled row"
assert_eq "" "$(awk -v a="$victim" -v b="$next" '$1 == "start" && $2 == 6' "$log")" "row 6 started"

# ---- transaction mode refuses cancel: ----
sed -e '/^    lease:/,/^             WHERE id = :id AND lease = :lease$/d' b.yaml >t.yaml
status=0
out=$("$ROWQ" -c t.yaml check 2>&1) || status=$?
assert_eq 78 "$status" "cancel: in transaction mode: exit status"
assert_match "t.yaml:[0-9]*: queues.render.cancel: cancel needs lease:" "$out" "cancel: in transaction mode"
