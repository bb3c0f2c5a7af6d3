#!/usr/bin/env bash
# limit.concurrency is shared by daemons that all have work in lease mode
# too, where a slot is a row of the limit table with a lease of its own:
# 2 daemons of 4 workers each, limit: {concurrency: 3}, leases of 3 s,
# 90 rows of 100 ms, daemon a first (its workers hold the 3 slots when b
# starts).  Counted from each daemon's handlers' own lines: each daemon
# ran at least a fifth of the rows; never more than 3 at once across
# both; and the cap used while rows waited.  Every row done once.
# serial: measures how many handlers run at once over the run, which a
# test running beside it on 2 cores can starve.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=90
video_table "$rows"
for d in a b; do
	: >"$ROWQ_TEST_TMP/trace.$d"
	video_config $d.yaml "$ROWQ_TEST_TMP/trace.$d" 100 4 "{concurrency: 3}"
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
declare -A pid
rowq_start a.yaml a.log
pid[a]=$ROWQ_PID
wait_until 20 '[ "$(running_at "$ROWQ_TEST_TMP/trace.a" "$(now_us)")" = 3 ]' ||
	fail "a never ran 3 at once"
rowq_start b.yaml b.log
pid[b]=$ROWQ_PID
wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM video WHERE status = '"'waiting'"'")" = 0 ]' ||
	fail "rows still waiting"
for d in a b; do
	stop_rowq "${pid[$d]}"
done
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM video WHERE done_count <> 1")" "rows done other than once"
assert_shared "lease mode, concurrency: 3" "$rows" 3
