#!/usr/bin/env bash
# kill -9 storms.  Random SIGKILLs of workers, of handlers and of the
# supervisor (started again when it is the one killed) while rows are
# handled with a retry policy of 4 tries.  Afterwards: no row lost, none
# left claimed or half-finished, no done twice, and attempts never beyond
# the policy.
#
# How a killed try counts, in transaction mode:
#   - a killed WORKER (or supervisor, whose workers then stop at once) dies
#     before its commit: the transaction rolls back, so the try leaves no
#     trace in the row and does NOT count: the next try has the same
#     number ($ROWQ_ATTEMPT repeats in the handler's log);
#   - a killed HANDLER is a failed try like any other signal death (the
#     contract): the worker runs retry, so it counts, and the next try has
#     the next number.
# Both are checked: for every row, the attempts column equals the number
# of distinct try numbers in the handler's log, those are 1..attempts, and
# every "killed by signal 9" the log reports for a handler is followed by
# the next try.
#
# Knobs: ROWQ_STORM_ROWS (100), ROWQ_STORM_KILLS (12), ROWQ_STORM_MS
# (handler milliseconds, 300), ROWQ_STORM_INTERVAL (seconds between kills,
# 0.4), ROWQ_STORM_MODES ("exec"; torture adds pipe).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

rows=${ROWQ_STORM_ROWS:-100}
kills=${ROWQ_STORM_KILLS:-12}
ms=${ROWQ_STORM_MS:-300}
interval=${ROWQ_STORM_INTERVAL:-0.4}
modes=${ROWQ_STORM_MODES:-exec}
max=4

# ---- one row, one killed worker: the try does not count ----
email_table 1
log=$ROWQ_TEST_TMP/one.handled
WORKERS=1 email_config one.yaml "[$HANDLERS/fake, sleep, \"3000\", $log]"
rowq_start one.yaml one.log
wait_until 10 '[ -s "$log" ]' || fail "row 1 never started"
worker=$(workers_of "$ROWQ_PID")
kill -KILL "$worker"
wait_until 20 '[ "$(email_count "status = '"'sent'"'")" = 1 ]' ||
	fail "row 1 not done after its worker was killed: $(cat one.log)"
stop_rowq "$ROWQ_PID"
assert_eq "1 1" "$(cut -d' ' -f1,2 "$log" | sort -u | tr '\n' ' ' | sed 's/ $//')" "tries of row 1 (key and ROWQ_ATTEMPT)"
assert_eq 2 "$(wc -l <"$log")" "handler runs of row 1"
assert_eq "1 1" "$(sql_value "SELECT CONCAT(attempts, ' ', done_count) FROM email")" "attempts and done_count"
sql "DROP TABLE email"

# ---- the storm ----

# A random line of the input, or nothing.
pick()
{
	local a
	mapfile -t a
	[ ${#a[@]} -gt 0 ] || return 0
	echo "${a[RANDOM % ${#a[@]}]}"
}

storm()
{
	local mode=$1 log=$ROWQ_TEST_TMP/$1.handled sup victim kind
	local kw=0 kh=0 ks=0 i started=0 old_workers pid

	sql "DROP TABLE IF EXISTS email"
	email_table "$rows"
	WORKERS=4 MAX_ATTEMPTS=$max DELAY=0s email_config "$mode.yaml" "[x]"
	sed -i "s|^    exec: .*|    $mode: [$HANDLERS/storm, $mode, $log, \"$ms\"]|" "$mode.yaml"
	rowq_start "$mode.yaml" "$mode.rowq.1"
	sup=$ROWQ_PID
	started=1
	on_exit "[ \$? -eq 0 ] || tail -n 30 $ROWQ_TEST_TMP/$mode.rowq.*"
	wait_until 10 '[ -s "$log" ]' || fail "$mode: nothing handled"

	for i in $(seq 1 "$kills"); do
		sleep "$interval"
		case $((RANDOM % 5)) in
		0|1) kind=worker; victim=$(workers_of "$sup" | pick) ;;
		2|3)
			# Its handler now, not a list that is stale by the kill.
			kind=handler
			victim=$(workers_of "$sup" | pick)
			[ -z "$victim" ] || victim=$(children_of "$victim" | head -1)
			;;
		*) kind=supervisor; victim=$sup ;;
		esac
		[ -n "$victim" ] || { kind=supervisor; victim=$sup; }
		case $kind in
		handler)
			kill -KILL "$victim" 2>/dev/null && kh=$((kh + 1))
			;;
		worker)
			kill -KILL "$victim" 2>/dev/null && kw=$((kw + 1))
			;;
		supervisor)
			old_workers=$(workers_of "$sup")
			kill -KILL "$sup"
			wait "$sup" 2>/dev/null || true
			untrack_pid "$sup"
			ks=$((ks + 1))
			# Its workers and their handlers die with it.
			for pid in $old_workers; do
				wait_until 10 "! _lib_alive $pid" ||
				    fail "$mode: worker $pid outlived its supervisor"
			done
			started=$((started + 1))
			rowq_start "$mode.yaml" "$mode.rowq.$started"
			sup=$ROWQ_PID
			# Signals are rowq's to handle once its workers run.
			wait_until 20 '[ -n "$(workers_of "$sup")" ]' ||
			    fail "$mode: restarted supervisor started no worker"
			;;
		esac
	done

	wait_all_final $((120 + rows / 10)) ||
		fail "$mode: rows still waiting: $(sql "SELECT id, attempts FROM email WHERE status = 'waiting' LIMIT 10")"
	stop_rowq "$sup"
	cat "$mode".rowq.* >"$mode.rowq"

	# Nothing lost, nothing done twice, nothing half-finished.
	assert_eq "$rows" "$(email_count "status IN ('sent', 'failed')")" "$mode: rows final"
	assert_eq 0 "$(email_count "status = 'sent' AND done_count <> 1")" "$mode: sent rows whose done ran other than once"
	assert_eq 0 "$(email_count "status = 'failed' AND done_count <> 0")" "$mode: failed rows that were done"
	assert_eq 0 "$(email_count "attempts > $max OR attempts < 1")" "$mode: rows with attempts outside 1..$max"
	assert_eq 0 "$(email_count "status = 'failed' AND attempts <> $max")" "$mode: failed rows short of $max tries"
	assert_eq 0 "$(email_count "id % 13 = 0 AND status <> 'failed'")" "$mode: rows that always fail, not failed"
	assert_eq 0 "$(rowq_transactions)" "$mode: transactions left open"
	# The pattern comes from a file, or grep would find itself.
	echo "$log" >"$mode.pattern"
	assert_eq "" "$(grep -lFf "$mode.pattern" /proc/[0-9]*/cmdline 2>/dev/null | head -3)" "$mode: handler processes left running"

	# Counted tries: attempts = distinct try numbers, 1..attempts.  A try
	# is in the handler's log, or -- when its handler was killed before it
	# could write that line -- in rowq's "try N failed: killed by signal 9".
	sql "SELECT id, attempts FROM email" | sort -k1,1 >"$mode.attempts"
	sed -nE 's/.*row ([0-9]+): try ([0-9]+) failed: .*killed by signal 9.*/\1 \2/p' "$mode.rowq" >"$mode.killed"
	cut -d' ' -f1,2 "$log" | cat - "$mode.killed" | sort -u >"$mode.tryset"
	awk '{ n[$1]++; if ($2 > mx[$1]) mx[$1] = $2 }
	    END { for (id in n) print id, n[id], mx[id] }' "$mode.tryset" | sort -k1,1 >"$mode.tries"
	local bad
	bad=$(join "$mode.attempts" "$mode.tries" | awk '$2 != $3 || $2 != $4' | head -5)
	assert_eq "" "$bad" "$mode: rows whose attempts differ from their distinct tries (id attempts distinct highest)"
	assert_eq "$rows" "$(wc -l <"$mode.tries")" "$mode: rows tried"

	# Tries that did not count: run again under the same number.
	local repeats
	repeats=$(( $(wc -l <"$log") - $(cut -d' ' -f1,2 "$log" | sort -u | wc -l) ))
	assert_le "$repeats" $((kw + 4 * ks)) "$mode: tries run twice under one number (<= worker kills + 4 x supervisor kills)"

	# Killed handlers counted as failed tries, and the next try followed.
	local counted
	counted=$(lines "$mode.rowq" 'try [0-9]+ failed: .*killed by signal 9')
	assert_le "$counted" "$kh" "$mode: handler deaths logged (<= handler kills)"
	while read -r key try; do
		grep -qx "$key $((try + 1))" "$mode.tryset" ||
		    [ "$(sql_value "SELECT status FROM email WHERE id = $key")" = failed ] ||
		    fail "$mode: row $key: try $try was killed but no try $((try + 1)) followed"
	done <"$mode.killed"
	# Every killed worker is logged once, as a death -- unless its
	# supervisor was killed before it could reap it.
	local deaths
	deaths=$(lines "$mode.rowq" 'worker [0-9]+ died \(killed by signal 9')
	assert_le "$deaths" "$kw" "$mode: worker deaths logged (<= worker kills)"
	assert_ge "$deaths" $((kw - ks)) "$mode: worker deaths logged (>= worker kills - supervisor kills)"

	figure "$mode rows" "$rows"
	figure "$mode kills (worker/handler/supervisor)" "$((kw + kh + ks)) ($kw/$kh/$ks)"
	figure "$mode supervisor restarts" "$ks"
	figure "$mode tries rolled back (did not count)" "$repeats"
	figure "$mode handler kills counted as tries" "$counted"
	figure "$mode lost" 0
	figure "$mode done twice" 0
	figure "$mode rows over max_attempts" 0
}

for m in $modes; do
	storm "$m"
done
