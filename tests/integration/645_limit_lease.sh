#!/usr/bin/env bash
# limit.concurrency in lease mode, where no transaction is open while a
# handler runs: a slot is a row of the limit table with a lease of its
# own, renewed with the row's.  2 daemons of 3 workers, concurrency 2,
# leases of 3 s, rows of 1.5 s (renewed on the way): never more than 2
# at once, counted from the handlers' own lines; kill -9 of a daemon
# holding the slots gives them back when their leases run out, and the
# other daemon then runs 2 at once.  Every row done once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/trace
: >"$log"
rows=16
video_table "$rows"
for d in a b; do
	video_config $d.yaml "$log" 1500 3 "{concurrency: 2}"
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
rowq_start a.yaml a.log
A=$ROWQ_PID
wait_until 20 '[ "$(running_at "$log" "$(now_us)")" = 2 ]' ||
	fail "daemon a never ran 2 handlers"
rowq_start b.yaml b.log
B=$ROWQ_PID
sleep 2
"$ROWQ" -c a.yaml status >status.out 2>&1 || true
assert_match 'render limited: concurrency 2/2' "$(cat status.out)" "status"
# a holds both slots still (a worker that finishes takes its slot's
# lease anew in the next claim): kill it, handlers and all.
a_workers=$(children_of "$A" | tr '\n' ' ')
a_all="$A $a_workers"
for w in $a_workers; do
	a_all="$a_all $(children_of "$w" | tr '\n' ' ')"
done
kill -KILL $a_all 2>/dev/null || true
killed_at=$(now_us)
untrack_pid "$A"
sleep 0.2
close_starts "$log" "$killed_at" $a_workers
first_full()
{
	awk '$1 == "start" { print $6, 1 } $1 == "end" { print $6, -1 }' "$log" |
	    sort -n -k1,1 -k2,2n | awk -v t="$1" '{ n += $2 }
		$1 > t && n >= 2 { print $1; exit }'
}
wait_until 15 '[ -n "$(first_full "$killed_at")" ]' ||
	fail "b never ran 2 at once after the kill"
back=$(first_full "$killed_at")
figure "s from the kill -9 until 2 ran at once again (leases of 3 s)" \
    "$(((back - killed_at) / 1000000))"
assert_le "$(((back - killed_at) / 1000000))" 6 "s until the cap was reached again"
wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM video WHERE status = '"'waiting'"'")" = 0 ]' ||
	fail "rows still waiting"
stop_rowq "$B"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM video WHERE done_count <> 1")" "rows done other than once"
max=$(overlap_max "$log")
figure "handlers at once, most" "$max"
assert_le "$max" 2 "handlers at once across the 2 daemons"
