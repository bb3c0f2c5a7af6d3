#!/usr/bin/env bash
# Concurrency at scale: three `rowq run` daemons of four workers each on
# one table, as three hosts would run them.  Every row is done exactly
# once: the handler's side-effect log holds each key once, done_count is 1
# on every row, and SUM(attempts) equals the row count (the seed article's
# check, which a double claim fails even when its side effects look
# right).  First with a pipe handler (many rows), then with exec.
#
# Knobs (make torture sets them): ROWQ_SCALE_ROWS (pipe rows, 4000),
# ROWQ_SCALE_EXEC_ROWS (exec rows, 600), ROWQ_SCALE_DAEMONS (3),
# ROWQ_SCALE_WORKERS (4 per daemon).
# serial: counts each of 3 daemons' rows; beside another test on 2 cores
# one daemon can come up after the others have drained the queue.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

rows=${ROWQ_SCALE_ROWS:-4000}
exec_rows=${ROWQ_SCALE_EXEC_ROWS:-600}
daemons=${ROWQ_SCALE_DAEMONS:-3}
workers=${ROWQ_SCALE_WORKERS:-4}

# scale MODE ROWS HANDLER: run the daemons until every row is final, and
# check every row was done exactly once.
scale()
{
	local mode=$1 n=$2 handler=$3 log=$ROWQ_TEST_TMP/$1.handled
	local pids=() d start took map=$ROWQ_TEST_TMP/$1.pids

	sql "DROP TABLE IF EXISTS email"
	email_table "$n"
	WORKERS=$workers email_config "$mode.yaml" "[x]"
	sed -i "s|^    exec: .*|    $mode: $handler|" "$mode.yaml"
	sed -i "s|LOG|$log|" "$mode.yaml"
	: >"$map"
	start=$(now_us)
	for d in $(seq 1 "$daemons"); do
		rowq_start "$mode.yaml" "$mode.$d.log"
		pids+=("$ROWQ_PID")
	done
	on_exit "[ \$? -eq 0 ] || tail -n 20 $ROWQ_TEST_TMP/$mode.*.log"
	# Pipe handlers live as long as their worker: note whose they are,
	# while the rows are worked and once more after (a daemon that came
	# up late may have started its handlers and done its share between
	# two looks: 1,140 rows so on MySQL under load).
	note_handlers()
	{
		for d in "${!pids[@]}"; do
			kill -0 "${pids[d]}" || fail "$mode: daemon $((d + 1)) died"
			for h in $(handlers_of "${pids[d]}"); do
				echo "$h $((d + 1))"
			done
		done >>"$map"
	}
	while [ "$(email_count "status = 'waiting'")" != 0 ]; do
		[ $(( ($(now_us) - start) / 1000000 )) -lt $((60 + n / 100)) ] ||
			fail "$mode: rows still waiting: $(email_count "status = 'waiting'")"
		note_handlers
		sleep 0.5
	done
	took=$(( ($(now_us) - start) / 1000 ))
	note_handlers
	for d in "${!pids[@]}"; do
		assert_eq "$workers" "$(workers_of "${pids[d]}" | wc -l)" "$mode: workers of daemon $((d + 1))"
	done
	for d in "${!pids[@]}"; do
		stop_rowq "${pids[d]}"
	done

	assert_exactly_once "$n"
	assert_eq "$n" "$(wc -l <"$log")" "$mode: handler runs"
	assert_eq "" "$(cut -d' ' -f1 "$log" | sort | uniq -d | head -5)" "$mode: keys handled twice"
	assert_eq 0 "$(cat "$mode".*.log | lines /dev/stdin 'died|changed no row|rolled back')" "$mode: deaths, lost rows or rollbacks logged"
	assert_eq 0 "$(rowq_transactions)" "$mode: transactions left open"
	figure "$mode rows" "$n"
	figure "$mode daemons x workers" "$daemons x $workers"
	figure "$mode seconds" "$(awk -v t="$took" 'BEGIN { printf "%.1f", t / 1000 }')"
	figure "$mode rows/s" "$(awk -v n="$n" -v t="$took" 'BEGIN { printf "%.0f", n * 1000 / t }')"
	figure "$mode duplicates" 0
	figure "$mode lost" 0
	if [ "$mode" = pipe ]; then
		# Which daemon's handler did each row: all of them worked.
		local per
		per=$(awk 'NR == FNR { d[$1] = $2; next }
		    { n[d[$2] ? d[$2] : "?"]++ }
		    END { for (k in n) printf "%s:%d ", k, n[k] }' \
		    <(sort -u "$map") "$log")
		figure "pipe rows per daemon" "$per"
		for d in $(seq 1 "$daemons"); do
			[[ $per == *"$d:"* ]] || fail "daemon $d did no row: $per"
		done
	fi
}

scale pipe "$rows" "[$HANDLERS/pipefake, ok, LOG]"
scale exec "$exec_rows" "[$HANDLERS/fake, append, LOG]"
