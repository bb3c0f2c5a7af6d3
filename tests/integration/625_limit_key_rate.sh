#!/usr/bin/env bash
# limit.per_key.rate: 5/1s per customer, 4 customers of 12 fast rows
# each, 2 daemons of 3 workers.  Counted from the handlers' own lines: no
# customer starts more than 5 + burst (1) rows in any second, every
# customer gets most of its rate, and the customers go side by side (the
# whole is about as long as one customer's share, not four).
# serial: counts starts a second against the rate: the workers must be
# scheduled on time, which a test running beside it on 2 cores can prevent.
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
sql "INSERT INTO job (id, customer_id) SELECT seq, 1 + seq % 4 FROM $(seq_rows 48)"
for d in a b; do
	job_config $d.yaml 3 "[$HANDLERS/trace, $log, \"0\"]" \
	    "{per_key: {column: customer_id, rate: 5/1s}}"
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
rowq_start a.yaml a.log; A=$ROWQ_PID
rowq_start b.yaml b.log; B=$ROWQ_PID
job_wait_done 60
stop_rowq "$A"
stop_rowq "$B"
job_by_customer "$log" bykey
for c in 1 2 3 4; do
	awk -v c="$c" '$2 == c' bykey >key.$c
	most=$(starts_per_window key.$c 1000000)
	figure "customer $c's starts in its busiest second" "$most"
	assert_le "$most" 6 "customer $c's starts within one second (5/1s, burst 1)"
done
first=$(awk '$1 == "start" { print $6 }' bykey | sort -n | head -n 1)
last=$(awk '$1 == "start" { print $6 }' bykey | sort -n | tail -n 1)
took=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }')
figure "s from the first start to the last (12 rows a customer at 5/s)" "$took"
# One customer's 12 rows at 5/s take 2.2 s; four after one another 9 s.
assert_le "$took" 4.5 "s for all customers side by side"
