#!/usr/bin/env bash
# limit.per_key: concurrency 1 per customer, 20 customers, one of them
# hot (40 rows at the head of the queue), the others 3 rows each behind
# them; 2 daemons of 3 workers, rows of 0.2 s.  Counted from the
# handlers' own lines: no customer ever ran two rows at once; the hot
# one ran one after another with no gap to speak of; the other
# customers' rows were not held up behind the hot ones (all started
# before the hot customer was half done); and its waiting rows were not
# kept locked by the workers that passed them over.  Every row done once.
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
sql "INSERT INTO job (id, customer_id) SELECT seq, 1 FROM $(seq_rows 40);
INSERT INTO job (id, customer_id) SELECT 40 + seq, 2 + (seq - 1) % 19 FROM $(seq_rows 57)"
for d in a b; do
	job_config $d.yaml 3 "[$HANDLERS/trace, $log, \"200\"]" \
	    "{per_key: {column: customer_id, concurrency: 1}}"
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
"$ROWQ" -c a.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
rowq_start a.yaml a.log; A=$ROWQ_PID
rowq_start b.yaml b.log; B=$ROWQ_PID
# The hot customer's waiting rows are passed over, not held: another
# session locks each of them at once but the one whose handler runs
# (and, for a moment, those that workers have just claimed and are about
# to pass over: when a hot row ends, every idle worker may claim the
# next ones at the same instant, so a single look can find up to one a
# worker).  Held while other rows' handlers run, they would be locked
# in most looks: the typical look, the median of 11, is what is bounded.
samples=()
for _ in 1 2 3 4 5 6 7 8 9 10 11; do
	locked=0
	for id in $(sql_value "SELECT GROUP_CONCAT(id SEPARATOR ' ') FROM job
	    WHERE customer_id = 1 AND status = 'waiting'"); do
		sql "SELECT id FROM job WHERE id = $id FOR UPDATE NOWAIT" \
		    >/dev/null 2>&1 || locked=$((locked + 1))
	done
	samples+=("$locked")
	sleep 0.2
done
sorted=$(printf '%s\n' "${samples[@]}" | sort -n)
median_locked=$(sed -n 6p <<<"$sorted")
most_locked=$(tail -n 1 <<<"$sorted")
job_wait_done 60
stop_rowq "$A"
stop_rowq "$B"
figure "the hot customer's waiting rows locked at once, in each look" "${samples[*]}"
assert_le "$median_locked" 2 "the hot customer's rows locked by workers, the median look"
assert_le "$most_locked" 6 "the hot customer's rows locked by workers, at most one a worker"
job_by_customer "$log" bykey
for c in $(seq 1 20); do
	awk -v c="$c" '$2 == c' bykey >key.$c
	[ "$(overlap_max key.$c)" -le 1 ] || fail "customer $c ran $(overlap_max key.$c) rows at once"
done
hot_first=$(awk '$1 == "start" { print $6; exit }' key.1)
hot_last=$(awk '$1 == "end" { t = $6 } END { print t }' key.1)
hot_half=$(awk '$1 == "start" { print $6 }' key.1 | sort -n | sed -n 20p)
others_last=$(awk '$1 == "start" && $2 != 1 { print $6 }' bykey | sort -n | tail -n 1)
hot_s=$(awk -v a="$hot_first" -v b="$hot_last" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }')
figure "s the hot customer's 40 rows of 0.2 s took" "$hot_s"
figure "s after the hot customer's first row the others' last started" \
    "$(awk -v a="$hot_first" -v b="$others_last" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }')"
assert_le "$others_last" "$hot_half" "the others' last start, against the hot customer's 20th"
assert_le "$hot_s" 14 "s for the hot customer's rows, one at a time (8 s of work)"
