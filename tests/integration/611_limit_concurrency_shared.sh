#!/usr/bin/env bash
# limit.concurrency is shared by daemons that all have work: 2 daemons of
# 4 workers each, limit: {concurrency: 3}, 150 rows of 100 ms.  A worker
# keeps its slot from claim to claim, so the daemon that took the 3 slots
# first kept them for the whole queue and the other ran none of its rows;
# now a worker gives its slot up after its turn (1 s), at a claim it
# makes anyway, and a worker that waits for that slot's lock in the
# server gets it.  Counted from each daemon's handlers' own lines: each
# daemon ran at least a fifth of the rows; never more than 3 at once
# across both, and 3 most of the time.  Every row done once.  The same
# with a rate beside the concurrency, whose waiting worker waits for a
# slot alone before its take locks the bucket's row.
# serial: measures how many handlers run at once over the run, which a
# test running beside it on 2 cores can starve.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=150
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'

# shared LIMIT: the two daemons over $rows new rows, a first.
shared()
{
	local d
	sql "DROP TABLE IF EXISTS email"
	email_table $rows
	for d in a b; do
		: >"$ROWQ_TEST_TMP/trace.$d"
		WORKERS=4 email_config $d.yaml "[$HANDLERS/trace, $ROWQ_TEST_TMP/trace.$d, \"100\"]" \
		    "limit: {$1}"
		sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$d.sock\nqueues:|" $d.yaml
	done
	declare -A pid
	# a first, with its slots taken, as a daemon that was there before b.
	rowq_start a.yaml a.log
	pid[a]=$ROWQ_PID
	wait_until 20 '[ "$(running_at "$ROWQ_TEST_TMP/trace.a" "$(now_us)")" = 3 ]' ||
		fail "$1: a never ran 3 at once"
	rowq_start b.yaml b.log
	pid[b]=$ROWQ_PID
	wait_all_final 60 || fail "$1: rows still waiting: $(email_count "status = 'waiting'")"
	for d in a b; do
		stop_rowq "${pid[$d]}"
	done
	assert_exactly_once $rows
	assert_shared "$1" "$rows" 3
}
shared "concurrency: 3"
# With a rate far above the load too: a waiting worker waits for a slot
# alone first, then takes its token (before, b ran 0 of 150).
shared "concurrency: 3, rate: 1000/1s"
