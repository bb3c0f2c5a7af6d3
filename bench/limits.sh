#!/usr/bin/env bash
# bench/limits.sh: what limit: (rowq.8, FLOW CONTROL) costs a queue, and
# how exactly it holds across daemons: issue 25's targets, measured in
# one run against a baseline of the same run.  `bash bench/limits.sh`
# (BENCH_QUICK=1: fewer rows, one run, 15 s of accuracy); kept out of
# make check.
#
# Starts its own throwaway MariaDB (tests/lib.sh), as bench/bench.sh does,
# and measures:
#
#   overhead   rows/s of `rowq drain`, pipe handler bench/okpipe.c, batch 1,
#              2 workers, medians of RUNS runs, contenders in turn in each
#              round: without limit:; with limits far above the load
#              (concurrency 64, rate 1000000/1s, each alone and both);
#              with per_key over 1,000 keys (concurrency 1 each); and a
#              queue that runs 40 at once anyway (40 workers, rows of 20
#              ms) without and with concurrency: 40.  The ratios are the
#              median of each round's (a busy machine moves whole rounds).
#              Every run checked: every row done once.
#   accuracy   3 daemons of 4 workers on a deep queue, the handlers' own
#              start and end lines (tests/handlers/trace.c): rate: 50/1s,
#              burst 5, for ACC_S seconds (the most starts in any second,
#              and starts per second); concurrency: 3 for ACC_S / 2 (the
#              most at once, and the average).  Then 2 daemons of 4
#              workers, burst 1, for ACC_S / 2 each: rate: 20/1s with the
#              trace handler (exec), and rate: 2000/1s with the pipe
#              handler tests/handlers/pipefake (its "timed" lines), beside
#              the same fleet without limit: in the same round (what the
#              machine does at all).
#
# Prints a table, and writes its section of bench/README.md (between its
# markers, which bench/bench.sh keeps).

. "$(dirname "$0")/../tests/lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$(dirname "$0")/lib.sh"

QUICK=${BENCH_QUICK:-0}
RUNS=${BENCH_RUNS:-$([ "$QUICK" = 1 ] && echo 1 || echo 3)}
ROWS=${BENCH_ROWS:-$([ "$QUICK" = 1 ] && echo 5000 || echo 20000)}
ACC_S=${BENCH_ACCURACY_S:-$([ "$QUICK" = 1 ] && echo 15 || echo 60)}
# 40 workers on rows of 20 ms: 2,000 rows/s at most.
C40_ROWS=$((ROWS / 2))
KEYS=1000
MARK_BEGIN='<!-- bench/limits.sh: begin -->'
MARK_END='<!-- bench/limits.sh: end -->'
START_S=$(date +%s)

say() { printf '%s\n' "$*" >&2; }

mkdir -p "$BIN"
cc -O2 -g -Wall -Wextra -o "$BIN/okpipe" "$BENCH_DIR/okpipe.c"
[ -x "$ROWQ" ] || fail "no $ROWQ: run make first"
[ -x "$HANDLERS/trace" ] || fail "no $HANDLERS/trace: run make check's handlers (make build/handlers/trace)"

DB_SERVER_OPTS+=(--innodb-buffer-pool-size=512M --max-connections=500)
unset ROWQ_TEST_SOCKET
db_start
db_create rowq_bench
W=$ROWQ_TEST_TMP
cd "$W"

# ---- the table and the configurations ----------------------------------

# fill N: the email table with N waiting rows, each of a customer among
# KEYS.
fill()
{
	sql "DROP TABLE IF EXISTS email; DROP TABLE IF EXISTS rowq_limit"
	email_table "$1"
	sql "ALTER TABLE email ADD COLUMN customer_id INT NOT NULL DEFAULT 0;
	    UPDATE email SET customer_id = id % $KEYS"
}

# config FILE HANDLER [KEY: VALUE...]: email_config's queue with the
# customer among its columns, a pipe HANDLER.
config()
{
	local file=$1 handler=$2
	shift 2
	email_config "$file" "[x]" "$@"
	sed -i "s|^    exec: .*|    pipe: $handler|" "$file"
	sed -i 's/SELECT id, recipient, subject, attempts FROM email/SELECT id, recipient, subject, attempts, customer_id FROM email/' "$file"
}

config plain.yaml "[$BIN/okpipe]"
config conc.yaml "[$BIN/okpipe]" "limit: {concurrency: 64}"
config rate.yaml "[$BIN/okpipe]" "limit: {rate: 1000000/1s, burst: 1000000}"
config far.yaml "[$BIN/okpipe]" \
    "limit: {concurrency: 64, rate: 1000000/1s, burst: 1000000}"
config keys.yaml "[$BIN/okpipe]" \
    "limit: {per_key: {column: customer_id, concurrency: 1}}"
config plain40.yaml "[$BIN/okpipe, -s, \"20\"]"
config conc40.yaml "[$BIN/okpipe, -s, \"20\"]" "limit: {concurrency: 40}"

# ---- overhead ------------------------------------------------------------

declare -A RESULT LAST RATIO
# run NAME CONFIG WORKERS ROWS [BASE]: one drain, its rows/s into RESULT,
# and its ratio to BASE's of the same round into RATIO.
run()
{
	local name=$1 cfg=$2 n=$3 rows=$4 t0 t1 got
	fill "$rows"
	t0=$(now_us)
	"$ROWQ" -c "$cfg" drain email -w "$n" >drain.out 2>&1 ||
	    fail "$name: drain: $(tail -n 5 drain.out)"
	t1=$(now_us)
	got=$(sql_value "SELECT CONCAT_WS(' ', SUM(status = 'sent'),
	    MAX(done_count), MIN(done_count)) FROM email")
	[ "$got" = "$rows 1 1" ] || fail "$name: not every row done once: $got"
	LAST[$name]=$((rows * 1000000 / (t1 - t0)))
	RESULT[$name]="${RESULT[$name]:-} ${LAST[$name]}"
	[ -z "${5:-}" ] ||
	    RATIO[$name]="${RATIO[$name]:-} $(ratio "${LAST[$name]}" "${LAST[$5]}")"
	say "  $name: ${LAST[$name]} rows/s"
}

median_of() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

for ((r = 1; r <= RUNS; r++)); do
	say "overhead, round $r of $RUNS"
	run plain plain.yaml 2 "$ROWS"
	run conc conc.yaml 2 "$ROWS" plain
	run rate rate.yaml 2 "$ROWS" plain
	run far far.yaml 2 "$ROWS" plain
	run keys keys.yaml 2 "$ROWS" plain
	run plain40 plain40.yaml 40 "$C40_ROWS"
	run conc40 conc40.yaml 40 "$C40_ROWS" plain40
done
declare -A M R
for k in plain conc rate far keys plain40 conc40; do
	M[$k]=$(median_of "${RESULT[$k]}")
	R[$k]=$(median_of "${RATIO[$k]:-1.00}")
done

# ---- accuracy: three daemons -------------------------------------------

# fleet SECONDS LOG LIMIT HANDLER_MS [DAEMONS [pipe]]: DAEMONS (3) daemons
# of 4 workers on a deep queue for SECONDS, the trace handler's lines in
# LOG (with pipe, pipefake's, written as the trace's start lines).
fleet()
{
	local secs=$1 log=$2 limit=$3 ms=$4 n=${5:-3} kind=${6:-exec} d pids=()
	# Deep enough for the pipe handler's thousands a second.
	fill "$([ "$kind" = exec ] && echo 20000 || echo $((secs * 8000)))"
	: >"$log"
	for d in a b c; do
		[ "$n" -gt 0 ] || break
		n=$((n - 1))
		WORKERS=4 email_config "$d.yaml" "[$HANDLERS/trace, $log, \"$ms\"]" \
		    "limit: $limit"
		[ "$kind" = exec ] ||
			sed -i "s|^    exec: .*|    pipe: [$HANDLERS/pipefake, timed, $log.pipe]|" "$d.yaml"
		sed -i "s|^queues:|status_socket: $W/$d.sock\nqueues:|" "$d.yaml"
		"$ROWQ" -c "$d.yaml" run >"$d.log" 2>&1 &
		pids+=($!)
		track_pid $!
	done
	sleep "$secs"
	for d in "${pids[@]}"; do
		kill -TERM "$d"
		wait "$d" || fail "a daemon exited with $?"
		untrack_pid "$d"
	done
	[ "$kind" = exec ] ||
		awk '{ print "start", $1, $2, 0, 0, $3 }' "$log.pipe" >"$log"
}

# per_s_counted LOG: starts per second from 1 s after the first start to
# 1 s before the last (the start-up and the stop left out).
per_s_counted()
{
	awk '$1 == "start" { print $6 }' "$1" | sort -n | awk '
	    { t[NR] = $1 }
	    END {
		a = t[1] + 1e6; b = t[NR] - 1e6; n = 0
		for (i = 1; i <= NR; i++) if (t[i] >= a && t[i] < b) n++
		printf "%.1f", (b > a ? n / ((b - a) / 1e6) : 0)
	    }'
}

# burst1 RATE KIND: the 2-daemon fleet at RATE/1s, burst 1, then without
# limit:, ACC_S / 2 each; sets B1_PER_S, B1_MOST and B1_FREE.
burst1()
{
	local secs=$((ACC_S / 2))
	say "accuracy: rate $1/1s, burst 1, 2 daemons of 4 workers ($2), ${secs}s, and without limit:"
	fleet "$secs" "b1.log" "{rate: $1/1s, burst: 1}" 0 2 "$2"
	B1_PER_S=$(per_s_counted b1.log)
	B1_MOST=$(starts_per_window b1.log 1000000)
	fleet "$secs" "free.log" "{}" 0 2 "$2"
	B1_FREE=$(per_s_counted free.log)
}

say "accuracy: rate 50/1s, burst 5, 3 daemons of 4 workers, ${ACC_S}s"
fleet "$ACC_S" rate.log "{rate: 50/1s, burst: 5}" 0
RATE_MOST=$(starts_per_window rate.log 1000000)
RATE_N=$(grep -c '^start' rate.log)
rate_first=$(awk '$1 == "start" { print $6; exit }' rate.log)
rate_last=$(awk '$1 == "start" { t = $6 } END { print t }' rate.log)
RATE_PER_S=$(awk -v n="$RATE_N" -v a="$rate_first" -v b="$rate_last" \
    'BEGIN { printf "%.1f", (n - 5) / ((b - a) / 1e6) }')

CONC_S=$((ACC_S / 2))
say "accuracy: concurrency 3, 3 daemons of 4 workers, rows of 100 ms, ${CONC_S}s"
fleet "$CONC_S" conc.log "{concurrency: 3}" 100
CONC_MOST=$(overlap_max conc.log)
CONC_AVG=$(overlap_avg conc.log)

burst1 20 exec
R20_PER_S=$B1_PER_S R20_MOST=$B1_MOST R20_FREE=$B1_FREE
burst1 2000 pipe
R2K_PER_S=$B1_PER_S R2K_MOST=$B1_MOST R2K_FREE=$B1_FREE
TOTAL_S=$(($(date +%s) - START_S))

# ---- the table -----------------------------------------------------------

section()
{
	cat <<EOF
$MARK_BEGIN
## Flow control: limit: (\`bash bench/limits.sh\`)

Written on $(date -u '+%Y-%m-%d %H:%M UTC') in $TOTAL_S s$([ "$QUICK" = 1 ] && echo ", **quick mode**"); load average at the end
$(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine shows here).
Rows per second of \`rowq drain\`, batch 1, pipe handler, median of $RUNS
run(s), each contender in turn in every round; the ratio is the median of
each round's ratio to the queue without \`limit:\` of the same round
(each round's: $(for k in conc rate far keys conc40; do printf '%s %s; ' "$k" "${RATIO[$k]# }"; done)).

| queue | workers | rows/s | ratio | target |
|---|---:|---:|---:|---|
| no limit: | 2 | ${M[plain]} | 1.00 | |
| concurrency: 64 (far above) | 2 | ${M[conc]} | ${R[conc]} | |
| rate: 1000000/1s (far above) | 2 | ${M[rate]} | ${R[rate]} | |
| limits far above the load (both) | 2 | ${M[far]} | ${R[far]} | ≥ 0.9 |
| per_key over $KEYS keys (concurrency 1 each) | 2 | ${M[keys]} | ${R[keys]} | ≥ 0.8 |
| rows of 20 ms, no limit: | 40 | ${M[plain40]} | 1.00 | |
| rows of 20 ms, concurrency: 40 | 40 | ${M[conc40]} | ${R[conc40]} | ≥ 0.9 (costs < 10 %) |

Accuracy, 3 daemons of 4 workers on one server, counted from the
handlers' own start and end lines:

| limit | measured | target |
|---|---:|---|
| rate: 50/1s, burst 5, ${ACC_S} s: most starts in any 1 s window | $RATE_MOST | ≤ 55 |
| the same: starts per second over the run (the burst left out) | $RATE_PER_S | ≥ 45 (0.9 × 50) |
| concurrency: 3, rows of 100 ms, ${CONC_S} s: most handlers at once | $CONC_MOST | ≤ 3 |
| the same: handlers at once on average while rows waited | $CONC_AVG | ≥ 2.7 |

Burst 1, 2 daemons of 4 workers, $((ACC_S / 2)) s each, starts per second
from 1 s after the first start to 1 s before the last; "without limit:"
is the same fleet with \`limit: {}\` right after, what the machine does at
all then:

| limit | starts per second | without limit: | most in any 1 s window | target |
|---|---:|---:|---:|---|
| rate: 20/1s, burst 1, exec (trace) | $R20_PER_S | $R20_FREE | $R20_MOST | ≥ 19 (0.95 ×), ≤ 21 in 1 s |
| rate: 2000/1s, burst 1, pipe (pipefake) | $R2K_PER_S | $R2K_FREE | $R2K_MOST | ≥ 1900 (0.95 ×) where the machine does more |
$MARK_END
EOF
}

section >section.md
readme_section "$MARK_BEGIN" "$MARK_END" "$W/section.md"
sed -n '/^| /p' section.md
echo
echo "limits bench: wrote its section of bench/README.md in $TOTAL_S s"
