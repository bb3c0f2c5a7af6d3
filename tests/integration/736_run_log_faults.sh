#!/usr/bin/env bash
# runs: under faults, a run is written exactly once for each finished try,
# and never for a try whose transaction rolled back.  Two daemons (batch 1
# and batch 5, 2 workers each) work rows of 50 ms, a third of which fail
# their first try; their workers are killed (-9) three times, the server
# is killed (-9) and started again, and row 1's first try hangs until its
# worker is killed.  Afterwards each row's runs are its attempts column
# (its finishing statements count the tries that committed), no try has
# two runs, the handlers ran more tries than there are runs (the killed
# ones left none), and row 1 has one run, of try 1, though its handler
# started twice or more.
#
# Runs its own server: killing the shared one would take the other tests
# down with it.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
. "$TESTS_DIR/torture/dbctl.sh"
unset ROWQ_TEST_SOCKET
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=400
email_table $rows
log=$ROWQ_TEST_TMP/handled
: >"$log"

# Says each try; row 1's first try hangs; keys divisible by 3 fail once.
cat >handler <<SH
#!/bin/sh
echo "\$ROWQ_KEY \$ROWQ_ATTEMPT" >>"$log"
if [ "\$ROWQ_KEY" = 1 ] && [ ! -e "$ROWQ_TEST_TMP/hung" ]; then
	: >"$ROWQ_TEST_TMP/hung"
	exec sleep 600
fi
sleep 0.05
[ "\$ROWQ_ATTEMPT" -ge 2 ] || [ \$((ROWQ_KEY % 3)) -ne 0 ] || exit 3
exit 0
SH
chmod +x handler
b=1
for d in a b; do
	WORKERS=2 TIMEOUT=15m MAX_ATTEMPTS=5 email_config $d.yaml \
	    "[$ROWQ_TEST_TMP/handler]" "batch: $b" "runs: {}"
	sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$d.sock\nqueues:|" $d.yaml
	b=5
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
declare -A pid
for d in a b; do
	rowq_start $d.yaml $d.log
	pid[$d]=$ROWQ_PID
done
wait_until 20 '[ -e hung ] && [ "$(wc -l <"$log")" -ge 40 ]' ||
	fail "the daemons did not start working"

# Whether process $1 is row 1's hanging handler.
hangs() { [[ "$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline")" == "sleep 600"* ]]; }
# A worker of daemon $1 with a handler running, and not row 1's.
busy_worker()
{
	local w h
	for w in $(workers_of "$1"); do
		for h in $(children_of "$w"); do
			hangs "$h" || { echo "$w"; return 0; }
		done
	done
	return 0
}
# The worker whose handler hangs on row 1.
hung_worker()
{
	local d w h
	for d in a b; do
		for w in $(workers_of "${pid[$d]}"); do
			for h in $(children_of "$w"); do
				! hangs "$h" || echo "$w"
			done
		done
	done
}

# ---- workers killed in the middle of their handlers ----
killed=0
for i in 1 2 3; do
	d=$([ $((i % 2)) = 1 ] && echo a || echo b)
	wait_until 5 '[ -n "$(busy_worker "${pid[$d]}")" ]' || continue
	kill -KILL "$(busy_worker "${pid[$d]}" | head -1)" && killed=$((killed + 1))
	sleep 0.5
done
assert_ge "$killed" 2 "workers killed in their handlers"
w=$(hung_worker | head -1)
[ -n "$w" ] || fail "row 1's handler is not hanging"
kill -KILL "$w"

# ---- the server killed, and back 1 s later ----
sleep 0.5
dbctl_kill9
sleep 1
dbctl_start

wait_all_final 120 || fail "rows still waiting: $(email_count "status = 'waiting'")"
for d in a b; do
	kill -0 "${pid[$d]}" || fail "daemon $d died"
	stop_rowq "${pid[$d]}"
done

assert_exactly_once_tries()
{
	assert_eq "$rows" "$(email_count "status = 'sent'")" "rows sent"
	assert_eq "$rows" "$(sql_value "SELECT SUM(done_count) FROM email")" "sum of done_count"
}
assert_exactly_once_tries
runs=$(sql_value "SELECT COUNT(*) FROM rowq_runs")
assert_eq "$(sql_value "SELECT SUM(attempts) FROM email")" "$runs" \
    "runs against the attempts column"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM email e WHERE attempts <>
    (SELECT COUNT(*) FROM rowq_runs r WHERE r.queue = 'email' AND
     r.row_key = CAST(e.id AS CHAR))")" "rows whose runs are not their attempts"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM (SELECT row_key, attempt,
    COUNT(*) n FROM rowq_runs GROUP BY row_key, attempt HAVING n > 1) d")" \
    "tries with two runs"
assert_eq $((rows / 3)) "$(sql_value "SELECT COUNT(*) FROM rowq_runs
    WHERE outcome = 'retry'")" "retried tries"
tries=$(wc -l <"$log")
figure "tries started" "$tries"
figure "runs written" "$runs"
assert_ge "$tries" $((runs + 1)) "tries started against runs (the killed ones)"
# Twice at least: its try after the kill may meet the server's too.
assert_ge "$(grep -c '^1 ' "$log")" 2 "row 1's tries started"
assert_eq "1 done" "$(sql_value "SELECT CONCAT(attempt, ' ', outcome)
    FROM rowq_runs WHERE row_key = '1'")" "row 1's runs"
