#!/usr/bin/env bash
# limit.concurrency across daemons: 3 daemons of 3 workers each (9 could
# run at once), limit: {concurrency: 3}; counted from the handlers' own
# start and end lines, never more than 3 ran at once, and the 3 were kept
# busy while rows waited.  Every row done once.  `rowq status` shows the
# queue as limited.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=45
email_table $rows
log=$ROWQ_TEST_TMP/trace
: >"$log"
for d in a b c; do
	WORKERS=3 email_config $d.yaml "[$HANDLERS/trace, $log, \"200\"]" \
	    "limit: {concurrency: 3}"
	sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$d.sock\nqueues:|" $d.yaml
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[abc].log'
declare -A pid
for d in a b c; do
	rowq_start $d.yaml $d.log
	pid[$d]=$ROWQ_PID
done
# Status while they work: the slots in use, fleet-wide.
wait_until 20 '[ "$(grep -c "^start" "$log")" -ge 6 ]' || fail "no work started"
# Status while they work: the slots in use, fleet-wide.
wait_until 20 '[ "$(running_at "$log" "$(now_us)")" = 3 ]' || fail "never 3 at once"
"$ROWQ" -c a.yaml status >status.out 2>&1 || true
assert_match 'email limited: concurrency 3/3' "$(cat status.out)" "status"
"$ROWQ" -c b.yaml status --json >status.json 2>&1 || true
assert_match '"limit":\{"concurrency":3,"in_use":[0-3],' "$(cat status.json)" "status --json"
wait_all_final 60 || fail "rows still waiting: $(email_count "status = 'waiting'")"
for d in a b c; do
	stop_rowq "${pid[$d]}"
done
assert_exactly_once $rows
max=$(overlap_max "$log")
avg=$(overlap_avg "$log")
figure "handlers at once, most" "$max"
figure "handlers at once, on average while rows waited" "$avg"
assert_le "$max" 3 "handlers running at once across the 3 daemons"
# 200 ms rows, a few ms between them on a slot: 3 nearly all the time;
# a loaded machine loses some.
assert_ge "$avg" 2.4 "average handlers running while rows waited"
