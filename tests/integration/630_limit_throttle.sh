#!/usr/bin/env bash
# A handler says "slow down": an exec handler's exit 75 with the last
# stderr line "throttle-in N message", a pipe handler's answer "throttle
# N message".  The row goes back without counting as a try, no daemon
# starts a handler for N seconds (counted from the handlers' own lines),
# the work resumes by itself, and `rowq status` says why meanwhile.  A
# throttle over limit.max_throttle is capped.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/trace
port=$(free_port)
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'

# handler: the trace's lines; row 5 asks, once, to throttle for 2 s.
cat >handler <<SH
#!/bin/sh
echo "start \$ROWQ_KEY \$\$ 0 \$ROWQ_ATTEMPT \$(date +%s%6N)" >>$log
if [ "\$ROWQ_KEY" = 5 ] && mkdir $ROWQ_TEST_TMP/asked 2>/dev/null; then
	date +%s%6N >$ROWQ_TEST_TMP/asked/at
	echo "429 from the partner" >&2
	echo "throttle-in 2 partner says slow down" >&2
	exit 75
fi
sleep 0.05
echo "end \$ROWQ_KEY \$\$ 0 \$ROWQ_ATTEMPT \$(date +%s%6N)" >>$log
SH
chmod +x handler

# run_two MODE EXEC: two daemons of two workers each over 30 rows, until
# every row is done; then the checks common to both kinds of handler.
run_two()
{
	local d
	sql "DROP TABLE IF EXISTS email; DROP TABLE IF EXISTS rowq_limit"
	email_table 30
	rm -rf asked
	: >"$log"
	for d in a b; do
		email_config $d.yaml "$2" "limit: {max_throttle: 1h}"
		[ "$1" = exec ] || sed -i 's/^    exec: /    pipe: /' $d.yaml
		sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$d.sock\nqueues:|" $d.yaml
	done
	sed -i "s|^queues:|metrics: 127.0.0.1:$port\nqueues:|" a.yaml
	rowq_start a.yaml a.log; A=$ROWQ_PID
	rowq_start b.yaml b.log; B=$ROWQ_PID
	wait_until 20 '[ -f asked/at ]' || fail "$1: row 5 never asked"
	at=$(cat asked/at)
	"$ROWQ" -c a.yaml status >status.out 2>&1 || true
	assert_match "email limited: throttled until [0-9:]{8} \\(partner says slow down\\)" \
	    "$(cat status.out)" "$1: status"
	# Each daemon's workers see it within 250 ms (their next look).
	wait_until 2 'curl -s "http://127.0.0.1:$port/metrics" >metrics.out;
	    grep -q "^rowq_throttled{queue=\"email\"} 1" metrics.out' ||
		fail "$1: rowq_throttled: $(grep throttled metrics.out)"
	wait_all_final 30 || fail "$1: rows still waiting: $(email_count "status = 'waiting'")"
	curl -s "http://127.0.0.1:$port/metrics" >metrics.out || true
	assert_match 'rowq_limit_waits_total\{queue="email",reason="throttle"\} [1-9]' \
	    "$(cat metrics.out)" "$1: rowq_limit_waits_total"
	assert_match 'rowq_limit_in_use\{queue="email"\} 0' "$(cat metrics.out)" "$1: rowq_limit_in_use"
	stop_rowq "$A"
	stop_rowq "$B"
	assert_exactly_once 30
	assert_eq 1 "$(sql_value "SELECT attempts FROM email WHERE id = 5")" \
	    "$1: row 5's tries (the throttle is none)"
	# Started after the throttle was written (the handlers that had
	# got their row already may start up to a moment later) and before
	# it ended: none, on either daemon.
	local during
	during=$(awk -v a=$((at + 300000)) -v b=$((at + 1900000)) \
	    '$1 == "start" && $6 > a && $6 < b' "$log" | wc -l)
	assert_eq 0 "$during" "$1: handlers started while throttled"
	local after
	after=$(awk -v b=$((at + 1900000)) '$1 == "start" && $6 >= b' "$log" | wc -l)
	assert_ge "$after" 1 "$1: handlers started after the throttle"
	assert_match "the handler asks to throttle the queue for 2s \\(partner says slow down\\); the row goes back, no try counted" \
	    "$(cat a.log b.log)" "$1: the log"
}

run_two exec "[$ROWQ_TEST_TMP/handler]"

# The same from a pipe handler: "throttle 2 message" as its answer.
cat >pipe <<SH
#!/bin/bash
while read -r row; do
	key=\${row#*\"id\":}; key=\${key%%,*}
	echo "start \$key \$\$ 0 0 \$(date +%s%6N)" >>$log
	if [ "\$key" = 5 ] && mkdir $ROWQ_TEST_TMP/asked 2>/dev/null; then
		date +%s%6N >$ROWQ_TEST_TMP/asked/at
		echo "throttle 2 partner says slow down"
		continue
	fi
	sleep 0.05
	echo "end \$key \$\$ 0 0 \$(date +%s%6N)" >>$log
	echo ok
done
SH
chmod +x pipe
run_two pipe "[$ROWQ_TEST_TMP/pipe]"
