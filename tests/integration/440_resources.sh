#!/usr/bin/env bash
# Resources stay flat.  One `rowq run` worker works through many rows; its
# resident memory and its open descriptors are measured after a tenth of
# them and again at the end: neither may grow (pipe handler, then exec).
# Then valgrind follows `rowq drain` and its forked worker through a few
# hundred rows each way, to the worker's normal exit: no leak (definitely
# or indirectly lost), no memory error, in supervisor or worker.
#
# The plain build is measured: ASan's shadow memory and quarantine make a
# sanitized process's RSS mean little, and valgrind cannot run it.
#
# Knobs: ROWQ_RES_ROWS (pipe rows, 5000; torture 100000),
# ROWQ_RES_EXEC_ROWS (500), ROWQ_RES_VALGRIND_ROWS (100 pipe, a quarter of it exec).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

rows=${ROWQ_RES_ROWS:-5000}
exec_rows=${ROWQ_RES_EXEC_ROWS:-500}
vg_rows=${ROWQ_RES_VALGRIND_ROWS:-100}
[ -x "$ROWQ_PLAIN" ] || skip "no plain build at $ROWQ_PLAIN (make rowq)"

# flat MODE ROWS HANDLER: RSS and descriptors of the one worker at ROWS/10
# and at ROWS.
flat()
{
	local mode=$1 n=$2 handler=$3 w first rss1 fd1 rss2 fd2 hwm
	sql "DROP TABLE IF EXISTS email"
	email_table "$n"
	WORKERS=1 IDLE=100ms email_config "$mode.yaml" "[x]"
	sed -i "s|^    exec: .*|    $mode: $handler|" "$mode.yaml"
	"$ROWQ_PLAIN" -c "$mode.yaml" run >"$mode.log" 2>&1 &
	ROWQ_PID=$!
	track_pid "$ROWQ_PID"
	first=$((n / 10))
	wait_until 120 '[ "$(email_count "status = '"'sent'"'")" -ge '$first' ]' ||
		fail "$mode: $first rows not done"
	w=$(workers_of "$ROWQ_PID")
	rss1=$(proc_kb "$w" VmRSS)
	fd1=$(fd_min "$w")
	wait_all_final $((60 + n / 100)) || fail "$mode: rows still waiting"
	sleep 0.3	# idle now: between rows, as at the first sample
	assert_eq "$w" "$(workers_of "$ROWQ_PID")" "$mode: the same worker throughout"
	rss2=$(proc_kb "$w" VmRSS)
	fd2=$(fd_min "$w")
	hwm=$(proc_kb "$w" VmHWM)
	stop_rowq "$ROWQ_PID"
	assert_exactly_once "$n"
	figure "$mode: worker RSS kB at $first / $n rows" "$rss1 / $rss2"
	figure "$mode: worker peak RSS kB" "$hwm"
	figure "$mode: worker open fds at $first / $n rows" "$fd1 / $fd2"
	assert_eq "$fd1" "$fd2" "$mode: worker descriptors at $first and $n rows"
	# Allocator noise is a few pages; a leak of even 100 bytes a row is not.
	assert_le $((rss2 - rss1)) 512 "$mode: worker RSS growth in kB from $first to $n rows"
}

flat pipe "$rows" "[$HANDLERS/pipefake, ok, $ROWQ_TEST_TMP/pipe.handled]"
flat exec "$exec_rows" "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/exec.handled]"

# ---- valgrind: supervisor and worker, to a normal exit ----
command -v valgrind >/dev/null || skip "valgrind is not installed"
vg()
{
	local mode=$1 handler=$2 f
	local n=$vg_rows
	# A handler process forked under valgrind is slow to start.
	[ "$mode" = pipe ] || n=$((vg_rows / 4))
	sql "DROP TABLE IF EXISTS email"
	email_table "$n"
	email_config "vg-$mode.yaml" "[x]"
	sed -i "s|^    exec: .*|    $mode: $handler|" "vg-$mode.yaml"
	mkdir -p "vg-$mode"
	# Handlers are not ours to check: do not follow exec.
	valgrind --leak-check=full --show-leak-kinds=definite,indirect \
	    --errors-for-leak-kinds=definite,indirect --track-fds=no \
	    --trace-children=no --child-silent-after-fork=no \
	    --log-file="vg-$mode/%p" \
	    "$ROWQ_PLAIN" -c "vg-$mode.yaml" drain email -w 2 >"vg-$mode.out" 2>"vg-$mode.err" ||
		fail "$mode under valgrind: $(cat "vg-$mode.err")"
	assert_exactly_once "$n"
	# One file per process: the supervisor, the start-up check, two
	# workers, and handlers forked under valgrind that left it at their
	# exec.
	local checked=0
	for f in "vg-$mode"/*; do
		grep -q 'ERROR SUMMARY:' "$f" || continue
		checked=$((checked + 1))
		if ! grep -q 'ERROR SUMMARY: 0 errors' "$f"; then
			cat "$f"
			fail "$mode: valgrind found a leak or an error in process ${f##*/}"
		fi
	done
	assert_eq 4 "$checked" "$mode: rowq processes valgrind followed to their exit"
	figure "valgrind $mode: processes checked, rows" "$checked, $n"
	figure "valgrind $mode: leaks and errors" 0
}
vg pipe "[$HANDLERS/pipefake, ok, $ROWQ_TEST_TMP/vg.handled]"
vg exec "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/vg.handled]"
