#!/usr/bin/env bash
# limit.concurrency across a server restart: 2 daemons of 3 workers,
# concurrency 3, rows of 0.4 s.  The server is killed (-9) while 3
# handlers run, and started again 2 s later.  A named lock dies with the
# server, so the slots are free the moment it is back: each worker must
# have seen its connection closed (its link watch) and stopped its
# handler before then, or the fleet would run more than 3.  Counted from
# the handlers' own lines: never more than 3 at once; 3 at once again
# after the restart; every row done once in the database.
#
# Runs its own server: killing the shared one would take the other tests
# down with it.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
. "$TESTS_DIR/torture/dbctl.sh"
unset ROWQ_TEST_SOCKET
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=60
email_table $rows
log=$ROWQ_TEST_TMP/trace
: >"$log"
for d in a b; do
	WORKERS=3 TIMEOUT=5s email_config $d.yaml "[$HANDLERS/trace, $log, \"400\"]" \
	    "limit: {concurrency: 3}"
	sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$d.sock\nqueues:|" $d.yaml
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
declare -A pid
for d in a b; do
	rowq_start $d.yaml $d.log
	pid[$d]=$ROWQ_PID
done
wait_until 20 '[ "$(running_at "$log" "$(now_us)")" = 3 ]' ||
	fail "the daemons never ran 3 handlers"

# ---- the server killed, and back 2 s later ----
dbctl_kill9
killed_at=$(now_us)
# Every handler stopped by its worker before the server is back.
wait_until 2 '[ -z "$(handlers_of "${pid[a]}")$(handlers_of "${pid[b]}")" ]' ||
	fail "handlers still ran 2 s after the server died: $(handlers_of "${pid[a]}") $(handlers_of "${pid[b]}")"
stopped_at=$(now_us)
figure "ms from the server's death until no handler ran" \
    "$(((stopped_at - killed_at) / 1000))"
# The handlers killed have a start and no end: they ended by then.
close_starts "$log" "$stopped_at"
sleep 2
dbctl_start
back_at=$(now_us)

wait_until 30 '[ "$(running_at "$log" "$(now_us)")" = 3 ]' ||
	fail "never 3 at once again after the restart"
figure "ms from the server back until 3 ran at once again" \
    "$((($(now_us) - back_at) / 1000))"
wait_all_final 90 || fail "rows still waiting: $(email_count "status = 'waiting'")"
for d in a b; do
	kill -0 "${pid[$d]}" || fail "daemon $d died"
	stop_rowq "${pid[$d]}"
done

assert_le "$(overlap_max "$log")" 3 "handlers at once, over the run"
assert_exactly_once $rows
runs=$(grep -c '^start' "$log")
figure "handler runs for $rows rows (rows run again after the restart)" "$runs"
