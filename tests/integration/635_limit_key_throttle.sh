#!/usr/bin/env bash
# A handler throttles its row's key (limit.per_key): exit 75 with the
# last stderr line "throttle-in 2 ...".  The row goes back without a try;
# for 2 s no daemon starts a row of that customer, while the other
# customers' rows go on; then the customer's rows run again by
# themselves.  `rowq status` counts the keys throttled meanwhile.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/trace
: >"$log"
job_table
sql "INSERT INTO job (id, customer_id) SELECT seq, 1 + seq % 4 FROM $(seq_rows 120)"
cat >handler <<SH
#!/bin/sh
echo "start \$1 \$\$ 0 \$ROWQ_KEY \$(date +%s%6N)" >>$log
if [ "\$1" = 3 ] && mkdir $ROWQ_TEST_TMP/asked 2>/dev/null; then
	date +%s%6N >$ROWQ_TEST_TMP/asked/at
	echo "throttle-in 2 customer 3 is over its quota" >&2
	exit 75
fi
sleep 0.05
echo "end \$1 \$\$ 0 \$ROWQ_KEY \$(date +%s%6N)" >>$log
SH
chmod +x handler
for d in a b; do
	job_config $d.yaml 2 "[$ROWQ_TEST_TMP/handler, \"{customer_id}\"]" \
	    "{per_key: {column: customer_id}}"
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
rowq_start a.yaml a.log; A=$ROWQ_PID
rowq_start b.yaml b.log; B=$ROWQ_PID
wait_until 20 '[ -f asked/at ]' || fail "customer 3 never asked"
at=$(cat asked/at)
"$ROWQ" -c a.yaml status >status.out 2>&1 || true
assert_match 'job limited: per customer_id, 1 key throttled' "$(cat status.out)" "status"
job_wait_done 60
stop_rowq "$A"
stop_rowq "$B"
assert_eq 120 "$(sql_value "SELECT SUM(attempts) FROM job")" "tries (the throttle is none)"
# Customer 3: nothing from 0.3 s after the throttle to its end; then again.
during=$(awk -v a=$((at + 300000)) -v b=$((at + 1900000)) \
    '$1 == "start" && $2 == 3 && $6 > a && $6 < b' "$log" | wc -l)
assert_eq 0 "$during" "customer 3's rows started while it was throttled"
after=$(awk -v b=$((at + 1900000)) '$1 == "start" && $2 == 3 && $6 >= b' "$log" | wc -l)
assert_ge "$after" 1 "customer 3's rows started after its throttle"
others=$(awk -v a=$((at + 300000)) -v b=$((at + 1900000)) \
    '$1 == "start" && $2 != 3 && $6 > a && $6 < b' "$log" | wc -l)
figure "the other customers' rows started while customer 3 was throttled" "$others"
assert_ge "$others" 5 "the other customers' rows went on"
assert_match "the handler asks to throttle the row's key for 2s \\(customer 3 is over its quota\\)" \
    "$(cat a.log b.log)" "the log"
