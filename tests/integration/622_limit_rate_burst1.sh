#!/usr/bin/env bash
# limit.rate at burst 1 gives its rate: 2 daemons of 4 workers each,
# rate: 20/1s, burst: 1, exec handlers that take no time, a queue deeper
# than the run.  A take reserves the next token when none is there (it is
# due within limit.c's LIMIT_AHEAD_MS) and its worker sleeps until it is
# due, so that no token falls due with nobody to take it: with burst 1 a
# bucket keeps none for a worker that comes late, and polling workers
# lost a fifth of the rate (16 a second).  Counted from the handlers' own
# start lines, over 10 s that begin 1 s after the first start:
#   - at least 0.95 of the rate (190 starts);
#   - never more than burst + t x rate: no window of 1 s holds more than
#     21 starts, the 10 s no more than 201; one more allowed each, for
#     a handler's line that came late (it is written after the fork and
#     exec, tens of ms on a loaded machine, and a token is 50 ms here: a
#     late line and an early one then fall into one window).
# Every row done once.
# serial: counts starts a second against the rate: 8 workers must be
# scheduled on time, which a test running beside it on 2 cores can prevent.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rate=20
# 13 s of the rate: the queue stays deep through the 11 s counted.
rows=$((rate * 13))
email_table $rows
log=$ROWQ_TEST_TMP/trace
: >"$log"
for d in a b; do
	WORKERS=4 email_config $d.yaml "[$HANDLERS/trace, $log, \"0\"]" \
	    "limit: {rate: $rate/1s, burst: 1}"
	sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$d.sock\nqueues:|" $d.yaml
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
declare -A pid
for d in a b; do
	rowq_start $d.yaml $d.log
	pid[$d]=$ROWQ_PID
done
wait_all_final 90 || fail "rows still waiting: $(email_count "status = 'waiting'")"
for d in a b; do
	stop_rowq "${pid[$d]}"
done
assert_exactly_once $rows
grep '^start' "$log" >starts
first=$(awk 'NR == 1 || $6 < m { m = $6 } END { print m }' starts)
from=$((first + 1000000))
to=$((from + 10000000))
n=$(awk -v a=$from -v b=$to '$6 >= a && $6 < b' starts | wc -l)
most=$(starts_per_window starts 1000000)
figure "starts in the 10 s counted, rate $rate/1s, burst 1" "$n"
figure "starts per second" "$(awk -v n="$n" 'BEGIN { printf "%.1f", n / 10 }')"
figure "the most starts in any 1 s window" "$most"
assert_ge "$n" $((rate * 10 * 95 / 100)) "starts in 10 s (0.95 of the rate)"
assert_le "$n" $((1 + rate * 10 + 1)) "starts in 10 s (burst + 10 s x rate, + 1 late line)"
assert_le "$most" $((1 + rate + 1)) "starts within one second (burst + rate, + 1 late line)"
