#!/usr/bin/env bash
# rowq wake: with idle: 30s, a row inserted and then `rowq wake` is
# picked up well within the idle (5 s at most); `rowq wake` exits 0 with
# no daemon running, and 2 for a queue the configuration does not name.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
log=$ROWQ_TEST_TMP/trace
: >"$log"
WORKERS=4 IDLE=30s email_config wake.yaml "[$HANDLERS/trace, $log, \"0\"]"
sed -i "s|^stop_timeout:|status_socket: $ROWQ_TEST_TMP/wake.sock\\n&|" wake.yaml

rc=0; "$ROWQ" -c wake.yaml wake email >out 2>&1 || rc=$?
assert_eq 0 "$rc" "rowq wake with no daemon: $(cat out)"
rc=0; "$ROWQ" -c wake.yaml wake nosuch >out 2>&1 || rc=$?
assert_eq 2 "$rc" "rowq wake of an unknown queue"
assert_match 'no queue named nosuch' "$(cat out)"

rowq_start wake.yaml wake.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/wake.log"'
wait_until 10 '[ -S "$ROWQ_TEST_TMP/wake.wake" ]' || fail "no wake socket"
# Past the workers' first claims and the watcher's first reading.
sleep 2
for n in 1 2; do
	sql "INSERT INTO email (recipient, subject, body) VALUES ('a@x', 's', '')"
	t0=$(now_us)
	"$ROWQ" -c wake.yaml wake email || fail "rowq wake"
	wait_until 6 '[ "$(grep -c "^start" "$log")" -ge $n ]' ||
		fail "row $n was not picked up after rowq wake"
	took=$(( ($(awk '$1 == "start" { t = $6 } END { print t }' "$log") - t0) / 1000 ))
	echo "row $n picked up in ${took} ms"
	# Far under the idle of 30 s: the wake, not a poll, found it (the
	# bound leaves room for a loaded machine's process starts).
	assert_le "$took" 5000 "ms from rowq wake to the handler"
done
