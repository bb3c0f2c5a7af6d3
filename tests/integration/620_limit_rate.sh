#!/usr/bin/env bash
# limit.rate across daemons: 2 daemons of 3 workers each, rate: 10/1s,
# burst: 2, fast handlers and a deep queue.  Counted from the handlers'
# own start lines: no window of 1 s holds more than 10 + burst starts
# (and one late line),
# and the run as a whole gets most of the rate (the limit does not
# waste what it allows).  Every row done once.
# serial: counts starts a second against the rate: the workers must be
# scheduled on time, which a test running beside it on 2 cores can prevent.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=50
email_table $rows
log=$ROWQ_TEST_TMP/trace
: >"$log"
for d in a b; do
	WORKERS=3 email_config $d.yaml "[$HANDLERS/trace, $log, \"0\"]" \
	    "limit: {rate: 10/1s, burst: 2}"
	sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$d.sock\nqueues:|" $d.yaml
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
declare -A pid
for d in a b; do
	rowq_start $d.yaml $d.log
	pid[$d]=$ROWQ_PID
done
wait_all_final 60 || fail "rows still waiting: $(email_count "status = 'waiting'")"
for d in a b; do
	stop_rowq "${pid[$d]}"
done
assert_exactly_once $rows
most=$(starts_per_window "$log" 1000000)
first=$(awk '$1 == "start" { print $6; exit }' "$log")
last=$(awk '$1 == "start" { t = $6 } END { print t }' "$log")
per_s=$(awk -v n="$(grep -c '^start' "$log")" -v a="$first" -v b="$last" \
    'BEGIN { printf "%.2f\n", (n - 2) / ((b - a) / 1e6) }')
figure "starts in the busiest second" "$most"
figure "starts per second over the run (burst left out)" "$per_s"
# One more for a handler's line that came late: it is written after the
# fork and exec, and a worker that waits for the rate starts its handler
# when its token is due (limit.c, LIMIT_AHEAD_MS), so a late line and the
# next one, on time, can fall into one window.
assert_le "$most" 13 "starts within one second, 10/1s with burst 2 (+ 1 late line)"
assert_ge "$per_s" 8 "starts per second over the run"
assert_le "$per_s" 10.5 "starts per second over the run"
