#!/usr/bin/env bash
# rowq's benchmark: `make bench`, or `BENCH_QUICK=1 make bench` to try
# things out (2 worker counts, 1 run, smaller tables).
#
# Starts its own throwaway MariaDB (tests/lib.sh), and measures, on the
# same table for every contender, rows per second as the median of RUNS
# runs, each contender also as a ratio to the raw loop measured in the
# same run:
#
#   raw1   bench/rawloop.c: BEGIN / claim LIMIT 1 / UPDATE / COMMIT
#   rawc   the same, the claim in the cursor form (rawloop -C): the anchor
#          for the claim of src/cursor.c, the best known
#   rawrr  raw1 at REPEATABLE READ (rawloop -R)
#   bean   beanstalkd -b DIR -f 0 (an fsync per write), bench/beanbench.c:
#          N jobs put, then reserve/delete from W connections
#   raw10  the same, 10 rows per transaction
#   php    the design article's PDO worker (bench/worker.php), N processes
#   rowq1  rowq drain, pipe handler bench/okpipe.c answering "ok", batch 1
#   rowq10 the same, batch 10
#   rawx   raw1 plus posix_spawn of /bin/true per row, in the transaction
#   rowqx  rowq drain, exec handler /bin/true
#
# then the same drain with purge held back by a read view open in another
# connection (HELD_CONTENDERS, 2 workers), the residue (1,000 waiting rows behind 4,000,000 finished ones,
# with the good index and with the article's), the idle cost (queries per
# worker against an empty queue, pickup latency) and memory (RSS).
# After every run it checks that every row was done exactly once.
#
# Prints a table and writes bench/README.md, bench/results.png and
# bench/results.tsv.  BENCH_PRUNE=1 then runs bench/prune.sh (the residue
# before and after `rowq prune`), which adds its section to
# bench/README.md; without it, the section of an earlier run is kept.

. "$(dirname "$0")/../tests/lib.sh"
. "$TESTS_DIR/email.sh"
. "$(dirname "$0")/lib.sh"

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	WORKERS_LIST=${BENCH_WORKERS:-"1 2"}
	RUNS=${BENCH_RUNS:-1}
	ROWS=${BENCH_ROWS:-5000}
	EXEC_ROWS=${BENCH_EXEC_ROWS:-300}
	RESIDUE=${BENCH_RESIDUE:-400000}
	ARTICLE_LIMIT_S=8
	IDLE_WINDOW_S=5
	LATENCY_SAMPLES=5
else
	WORKERS_LIST=${BENCH_WORKERS:-"1 2 4 8"}
	RUNS=${BENCH_RUNS:-3}
	ROWS=${BENCH_ROWS:-20000}
	EXEC_ROWS=${BENCH_EXEC_ROWS:-1000}
	RESIDUE=${BENCH_RESIDUE:-4000000}
	ARTICLE_LIMIT_S=10
	IDLE_WINDOW_S=10
	LATENCY_SAMPLES=10
fi
# Long enough drains that start-up and a slow second are not the figure.
RESIDUE_WAITING=$((QUICK == 1 ? 1000 : 10000))
RESIDUE_WORKERS=2
# A drain of 1,000 rows lasts about a second: more runs for a steadier median.
RESIDUE_RUNS=$((QUICK == 1 ? RUNS : (RUNS < 5 ? 5 : RUNS)))
IDLE=1s
IDLE_WORKERS=2
CONTENDERS=${BENCH_CONTENDERS:-"raw1 rawc rawrr bean raw10 php rowq1 rowq10 rawx rowqx"}
# Purge held back: these, at HELD_WORKERS, each drain given HELD_LIMIT_S
# at most (today's claim slows down as the delete-marked entries pile up).
HELD_CONTENDERS=${BENCH_HELD_CONTENDERS:-"raw1 rawc rowq1"}
HELD_WORKERS=${BENCH_HELD_WORKERS:-2}
HELD_LIMIT_S=$((QUICK == 1 ? 30 : 60))
# BENCH_CONTENDERS_ONLY=1: print the contenders' medians and stop, leaving
# bench/README.md as it is (to compare two builds of rowq by hand).
CONTENDERS_ONLY=${BENCH_CONTENDERS_ONLY:-0}
# BENCH_ROWQ_BEFORE=PATH: another build of rowq, contender rowq1b (add it
# to BENCH_CONTENDERS), measured in the same rounds as rowq1.
ROWQ_BEFORE=${BENCH_ROWQ_BEFORE:-}

bench_build
bench_server_start
MAIN_DB=$ROWQ_TEST_DB
make_configs

# ---- the contenders ----------------------------------------------------

started=$(now_us)
: >results.tsv
say "bench: $ROWS rows ($EXEC_ROWS for the exec pair), workers $WORKERS_LIST, $RUNS run(s)"
measure_rounds

# Purge held back: each contender's drain without and with a read view
# open in another connection, in turn.
if [ "$CONTENDERS_ONLY" != 1 ]; then
	say "bench: purge held back, $HELD_WORKERS workers, $ROWS rows, at most $HELD_LIMIT_S s each"
	for ((run = 1; run <= RUNS; run++)); do
		for c in $HELD_CONTENDERS; do
			measure "$c" "$HELD_WORKERS" "$run" "$ROWS" _free "$HELD_LIMIT_S"
			measure "$c" "$HELD_WORKERS" "$run" "$ROWS" _held "$HELD_LIMIT_S"
		done
	done
fi

if [ "$CONTENDERS_ONLY" = 1 ]; then
	for n in $WORKERS_LIST; do
		for c in $CONTENDERS; do
			printf '%-7s %d workers: %8s rows/s\n' "$c" "$n" "$(median "$c" "$n" 6)"
		done
	done
	exit 0
fi

# ---- residue: 1,000 waiting rows behind RESIDUE finished ones -----------

say "bench: residue, $RESIDUE finished rows"
residue_drain()
{
	local cfg=$1 limit=${2:-0} lo t0 t1 done_rows status=0
	lo=$(sql_value "SELECT COALESCE(MAX(id), 0) FROM email")
	sql "INSERT INTO email (recipient, subject, body)
	    SELECT CONCAT('user', seq, '@example.com'), 'new', 'body'
	    FROM $(seq_rows "$RESIDUE_WAITING")"
	t0=$(now_us)
	if [ "$limit" -gt 0 ]; then
		timeout -s TERM "$limit" "$ROWQ" -c "$cfg" drain email \
		    -w "$RESIDUE_WORKERS" >residue.out 2>>residue.err || status=$?
		[ "$status" -eq 0 ] || [ "$status" -eq 124 ] ||
		    fail "residue drain: exit $status: $(tail -3 residue.err)"
	else
		"$ROWQ" -c "$cfg" drain email -w "$RESIDUE_WORKERS" \
		    >residue.out 2>>residue.err || fail "residue drain: $(tail -3 residue.err)"
	fi
	t1=$(now_us)
	done_rows=$(sql_value "SELECT COUNT(*) FROM email WHERE id > $lo AND status = 'sent'")
	[ "$(sql_value "SELECT COALESCE(MAX(done_count), 0) FROM email WHERE id > $lo")" -le 1 ] ||
	    fail "residue: a row done twice"
	if [ "$limit" -eq 0 ]; then
		verify "$RESIDUE_WAITING" "id > $lo"
	else
		# Stopped by the time limit: what is left is put out of the way.
		sql "UPDATE email SET status = 'failed' WHERE id > $lo AND status = 'waiting'"
	fi
	awk -v d="$done_rows" -v a="$t0" -v b="$t1" \
	    'BEGIN { printf "%.1f %d\n", d / ((b - a) / 1e6), d }'
}

db_create rowq_bench_big
email_table 0
t0=$(now_us)
step=1000000
for ((a = 1; a <= RESIDUE; a += step)); do
	b=$((a + step - 1))
	[ "$b" -le "$RESIDUE" ] || b=$RESIDUE
	sql "INSERT INTO email (recipient, subject, body, status, attempts, done_count)
	    SELECT CONCAT('user', seq, '@example.com'), 'old', '', 'sent', 1, 1
	    FROM seq_${a}_to_$b"
done
sql "ANALYZE TABLE email" >/dev/null
FILL_S=$(awk -v a="$t0" -v b="$(now_us)" 'BEGIN { printf "%.0f", (b - a) / 1e6 }')
say "  filled in $FILL_S s"
pipe_config big.yaml 1
ROWQ_TEST_DB=$MAIN_DB pipe_config small.yaml 1
settle

# The small table (the waiting rows and those the earlier runs finished)
# and the big one, in turn, so that both see the same load, and both
# carry what their earlier drains left behind for purge.
residue_small=()
residue_good=()
ROWQ_TEST_DB=$MAIN_DB sql "DROP TABLE IF EXISTS email"
ROWQ_TEST_DB=$MAIN_DB email_table 0
for ((run = 1; run <= RESIDUE_RUNS; run++)); do
	residue_small+=("$(ROWQ_TEST_DB=$MAIN_DB residue_drain small.yaml | cut -d' ' -f1)")
	residue_good+=("$(residue_drain big.yaml | cut -d' ' -f1)")
done
CHECK_GOOD=$("$ROWQ" -c big.yaml check 2>&1 || true)

t0=$(now_us)
sql "ALTER TABLE email DROP INDEX status, ADD INDEX (status, retry_at);
    ANALYZE TABLE email" >/dev/null
ALTER_S=$(awk -v a="$t0" -v b="$(now_us)" 'BEGIN { printf "%.0f", (b - a) / 1e6 }')
settle
CHECK_ARTICLE=$("$ROWQ" -c big.yaml check 2>&1 || true)
EXPLAIN_ARTICLE=$(sql "EXPLAIN SELECT id, recipient, subject, attempts FROM email
    WHERE status = 'waiting' AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())
    ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED" | cut -f4-10)
residue_article=()
residue_article_done=()
for ((run = 1; run <= RUNS; run++)); do
	r=$(residue_drain big.yaml "$ARTICLE_LIMIT_S")
	residue_article+=("${r% *}")
	residue_article_done+=("${r#* }")
done
sql "DROP TABLE email"
ROWQ_TEST_DB=$MAIN_DB
make_configs

# The start-up cost of check's EXPLAIN on the big table, for the record.
list_median()
{
	printf '%s\n' "$@" | sort -g | awk '{ v[++k] = $1 }
	    END { print k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2 }'
}

# ---- idle cost, pickup latency, memory ---------------------------------

say "bench: idle cost and pickup latency, $IDLE_WORKERS workers, idle $IDLE"
sql "DROP TABLE IF EXISTS email"
email_table 0
: >stamps
WORKERS=$IDLE_WORKERS IDLE=$IDLE email_config idle.yaml "[x]"
sed -i "s|^    exec: .*|    pipe: [$BIN/okpipe, $W/stamps]|" idle.yaml
rowq_start idle.yaml idle.log
wait_until 10 '[ "$(children_of "$ROWQ_PID" | wc -l)" -ge '"$IDLE_WORKERS"' ]' ||
    fail "rowq run did not start its workers: $(cat idle.log)"
sleep 3
read -r sel0 q0 < <(status Com_select Questions | awk '{ v[$1] = $2 } END { print v["Com_select"], v["Questions"] }')
sleep "$IDLE_WINDOW_S"
read -r sel1 q1 < <(status Com_select Questions | awk '{ v[$1] = $2 } END { print v["Com_select"], v["Questions"] }')
idle_s=${IDLE%s}
CLAIMS_PER_IDLE=$(awk -v d=$((sel1 - sel0)) -v w="$IDLE_WINDOW_S" -v i="$idle_s" -v n="$IDLE_WORKERS" \
    'BEGIN { printf "%.2f", d / (w / i) / n }')
QPS_PER_WORKER=$(awk -v d=$((q1 - q0 - 1)) -v w="$IDLE_WINDOW_S" -v n="$IDLE_WORKERS" \
    'BEGIN { printf "%.2f", d / w / n }')

# Pickup: the row carries its insert time (the server's clock, at the
# INSERT), the handler notes when the row reaches it.
for ((i = 0; i < LATENCY_SAMPLES; i++)); do
	sleep "0.$((RANDOM % 9 + 1))$((RANDOM % 10))"
	id=$(sql "INSERT INTO email (recipient, subject, body)
	    VALUES ('late@example.com', ROUND(UNIX_TIMESTAMP(NOW(6)) * 1000000), 'body');
	    SELECT LAST_INSERT_ID()")
	wait_until 10 '[ "$(sql_value "SELECT done_count FROM email WHERE id = '"$id"'")" = 1 ]' ||
	    fail "row $id not picked up in 10 s"
done
sql "SELECT id, subject FROM email" | sort >inserted
sort stamps | awk '{ print $2, $1 }' | sort >arrived
join inserted arrived | awk '{ print ($3 - $2) / 1000 }' | sort -g >latency
mapfile -t samples <latency
LAT_MEDIAN=$(list_median "${samples[@]}")
LAT_MAX=$(tail -1 latency)
LAT_MIN=$(head -1 latency)
[ "$(wc -l <latency)" -eq "$LATENCY_SAMPLES" ] || fail "latency: $(wc -l <latency) samples"

# Memory in steady state: the supervisor and each worker, idle after work.
rss()
{
	local pid=$1
	awk '/^VmRSS|^RssAnon|^RssFile|^RssShmem/ { v[$1] = $2 }
	    END { printf "%d %d %d %d", v["VmRSS:"], v["RssAnon:"], v["RssFile:"], v["RssShmem:"] }' \
	    "/proc/$pid/status"
	awk '/^Pss:/ { printf " %d\n", $2 }' "/proc/$pid/smaps_rollup"
}
SUP_MEM=$(rss "$ROWQ_PID")
WORKER_MEM=
for p in $(children_of "$ROWQ_PID"); do
	m=$(rss "$p")
	# The largest worker.
	if [ -z "$WORKER_MEM" ] || [ "${m%% *}" -gt "${WORKER_MEM%% *}" ]; then
		WORKER_MEM=$m
	fi
done
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq run exited with $?"
untrack_pid "$ROWQ_PID"
TOTAL_S=$(awk -v a="$started" -v b="$(now_us)" 'BEGIN { printf "%.0f", (b - a) / 1e6 }')

# ---- report ------------------------------------------------------------

kib_mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

costs()
{
	local c n
	n=${WORKERS_LIST%% *}
	printf '| contender | statements per row | client CPU µs per row | server CPU µs per row |\n'
	printf '|---|---:|---:|---:|\n'
	for c in $CONTENDERS; do
		printf '| %s | %s | %s | %s |\n' "$(label "$c")" "$(median "$c" "$n" 7)" \
		    "$(median "$c" "$n" 8)" "$(median "$c" "$n" 9)"
	done
}

held_table()
{
	local c f h
	printf '| contender | purge running | purge held back | ratio |\n|---|---:|---:|---:|\n'
	for c in $HELD_CONTENDERS; do
		f=$(median "${c}_free" "$HELD_WORKERS" 6)
		h=$(median "${c}_held" "$HELD_WORKERS" 6)
		printf '| %s | %.0f | %.0f | %s× |\n' "$(label "$c")" "$f" "$h" "$(ratio "$h" "$f")"
	done
}

# target NAME CONDITION-TEXT MET: a line of the targets table.
targets()
{
	local n r1 rx lows okall
	printf '| target | measured | met |\n|---|---|---|\n'
	for pair in "rowq1 raw1 1.0 rowq pipe batch 1 ≥ 1.0× raw loop" \
	    "rowq10 raw10 1.0 rowq pipe batch 10 ≥ 1.0× raw 10-row loop" \
	    "rowq10 php 3.0 rowq pipe batch 10 ≥ 3× PHP worker" \
	    "rowqx rawx 1.0 rowq exec ≥ 1.0× raw spawn loop"; do
		read -r a b want text <<<"$pair"
		lows=
		okall=yes
		for n in $WORKERS_LIST; do
			r1=$(ratio "$(median "$a" "$n" 6)" "$(median "$b" "$n" 6)")
			lows="$lows${lows:+, }$n: ${r1}×"
			awk -v r="$r1" -v w="$want" 'BEGIN { exit !(r >= w) }' || okall=no
		done
		printf '| %s | %s | %s |\n' "$text" "$lows" "$okall"
	done
	# Issue 16: against the anchors (when they ran).
	for pair in "rowq1 rawrr 1.3 rowq pipe batch 1 ≥ 1.3× raw REPEATABLE READ loop" \
	    "rowq1 rawc 0.9 rowq pipe batch 1 ≥ 0.9× raw cursor loop" \
	    "rowq1 bean 1.0 rowq pipe batch 1 ≥ beanstalkd -f 0"; do
		read -r a b want text <<<"$pair"
		case " $CONTENDERS " in *" $a "*" $b "* | *" $b "*" $a "*) ;; *) continue ;; esac
		lows=
		okall=yes
		for n in $WORKERS_LIST; do
			r1=$(ratio "$(median "$a" "$n" 6)" "$(median "$b" "$n" 6)")
			lows="$lows${lows:+, }$n: ${r1}×"
			awk -v r="$r1" -v w="$want" 'BEGIN { exit !(r >= w) }' || okall=no
		done
		printf '| %s | %s | %s |\n' "$text" "$lows" "$okall"
	done
	r1=$(ratio "$(median rowq10 2 6)" "$(median bean 2 6)")
	printf '| rowq pipe batch 10 ≥ 2× beanstalkd -f 0 at 2 workers | %s× | %s |\n' "$r1" \
	    "$(awk -v r="$r1" 'BEGIN { print r >= 2 ? "yes" : "no" }')"
	case " $HELD_CONTENDERS " in *" rowq1 "*)
		rx=$(ratio "$(median rowq1_held "$HELD_WORKERS" 6)" "$(median rowq1_free "$HELD_WORKERS" 6)")
		printf '| purge held back: rowq pipe batch 1 ≥ 0.8× its rate with purge running | %s× | %s |\n' "$rx" \
		    "$(awk -v r="$rx" 'BEGIN { print r >= 0.8 ? "yes" : "no" }')"
	esac
	rx=$(ratio "$RES_GOOD" "$RES_SMALL")
	printf '| %s finished rows, good index ≥ 0.9× small table | %s× | %s |\n' \
	    "$RESIDUE" "$rx" "$(awk -v r="$rx" 'BEGIN { print r >= 0.9 ? "yes" : "no" }')"
	printf '| idle: ≤ 1 claim per worker per idle interval | %s | %s |\n' "$CLAIMS_PER_IDLE" \
	    "$(awk -v r="$CLAIMS_PER_IDLE" 'BEGIN { print r <= 1.0 ? "yes" : "no" }')"
	printf '| supervisor RSS ≤ 4 MiB | %s MiB | %s |\n' "$(kib_mib "${SUP_MEM%% *}")" \
	    "$(awk -v k="${SUP_MEM%% *}" 'BEGIN { print k <= 4096 ? "yes" : "no" }')"
	printf '| worker RSS ≤ 4 MiB | %s MiB | %s |\n' "$(kib_mib "${WORKER_MEM%% *}")" \
	    "$(awk -v k="${WORKER_MEM%% *}" 'BEGIN { print k <= 4096 ? "yes" : "no" }')"
}

RES_SMALL=$(list_median "${residue_small[@]}")
RES_GOOD=$(list_median "${residue_good[@]}")
RES_ARTICLE=$(list_median "${residue_article[@]}")

# The chart: rows/s against workers, database-bound contenders on the
# left, process-spawning ones on the right.
for c in $CONTENDERS; do
	for n in $WORKERS_LIST; do
		printf '%s %s\n' "$n" "$(median "$c" "$n" 6)"
	done >"chart.$c"
done
gnuplot <<GNUPLOT || say "bench: gnuplot failed; no chart"
set terminal pngcairo size 1100,480 font "sans,10" noenhanced
set output "$BENCH_DIR/results.png"
set multiplot layout 1,2 title "rowq benchmark: rows/s, median of $RUNS run(s), $(nproc) CPUs"
set xlabel "workers"
set ylabel "rows/s"
set logscale x 2
set xrange [0.8:$(echo "$WORKERS_LIST" | awk '{ print $NF * 1.25 }')]
set xtics ($(echo "$WORKERS_LIST" | sed 's/ /, /g'))
set key top left
set grid ytics
set yrange [0:*]
set title "$ROWS rows, no-op handler"
plot "chart.raw1" w lp lw 2 t "raw loop, 1 row/txn", \
     "chart.rawc" w lp lw 2 t "raw loop, cursor claim", \
     "chart.rawrr" w lp lw 2 t "raw loop, REPEATABLE READ", \
     "chart.bean" w lp lw 2 t "beanstalkd -f 0", \
     "chart.raw10" w lp lw 2 t "raw loop, 10 rows/txn", \
     "chart.php" w lp lw 2 t "PHP worker (article)", \
     "chart.rowq1" w lp lw 2 dt 2 t "rowq pipe, batch 1", \
     "chart.rowq10" w lp lw 2 dt 2 t "rowq pipe, batch 10"
set title "$EXEC_ROWS rows, one /bin/true per row"
plot "chart.rawx" w lp lw 2 t "raw loop + posix_spawn", \
     "chart.rowqx" w lp lw 2 dt 2 t "rowq exec"
unset multiplot
GNUPLOT

cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mem_total=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
mariadb_version=$(sql_value "SELECT VERSION()")
php_version=$(php -r 'echo PHP_VERSION;')
spawn_rate=$(median rawx 1 6)

# The sections the other scripts write (bench/prune.sh, wake.sh,
# foreign.sh, console.sh, limits.sh, observability.sh: each between its
# markers, with text around them written by hand), kept from the README
# this one replaces: everything from the first marker on.
other_sections=$(sed -n '/^<!-- [a-z/]*\.sh: begin -->$/,$p' \
    "$BENCH_DIR/README.md" 2>/dev/null || true)
{
	cat <<EOF
# rowq benchmark

Written by \`make bench\` (bench/bench.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'),
in $TOTAL_S s$([ "$QUICK" = 1 ] && echo ", **quick mode** (BENCH_QUICK=1): fewer workers, runs and rows").
Run it again to replace every figure below; the text after the figures is
bench/analysis.md, written by hand from a run like this one.

## Machine
- $(nproc) CPUs: $cpu_model; $mem_total; Linux $(uname -r)
- MariaDB $mariadb_version, a throwaway server (tests/lib.sh) with
  \`innodb_flush_log_at_trx_commit=2\`, 1 GiB buffer pool, no binary log
- PHP $php_version (PDO, mysqlnd), rowq $("$ROWQ" --version | cut -d' ' -f2)
- Load average when the run ended: $(cut -d' ' -f1-3 /proc/loadavg) (other work
  on the machine shows here, and in the spread between runs)

## Throughput
Rows per second, median of $RUNS run(s); in brackets, the ratio to the
loop it is measured against in the same run (raw loop 1 row/transaction for
the anchors, the 10-row loop, PHP and rowq batch 1; the 10-row loop for rowq batch 10;
the spawning loop for rowq exec). $ROWS rows per run, $EXEC_ROWS for the two
contenders that start a process per row. Every run is checked: every row
sent, \`done_count\` exactly 1 everywhere.

$(table)

![rows per second against workers](results.png)

Cost per row at ${WORKERS_LIST%% *} worker (medians): statements are the server's
\`Questions\` counter over the run, divided by the rows (start-up included;
rowq sends the last row's done, its COMMIT and the next claim in one round trip, and they count
as three);
client CPU is user + system time of the contender and all its processes
(rowq: supervisor, worker, handler); server CPU is mariadbd's.

$(costs)

## Purge held back
The same drain ($ROWS rows, $HELD_WORKERS workers), measured in turn without and
with a read view held open by another connection for the whole drain
(\`START TRANSACTION WITH CONSISTENT SNAPSHOT\`, as a long report or a
backup would), so that purge cannot remove the index entries each
\`done\` delete-marks; rows/s, median of $RUNS run(s), each drain given
at most $HELD_LIMIT_S s (rows done over the time taken).

$(held_table)

## Residue: $RESIDUE_WAITING waiting rows behind $RESIDUE finished ones
rowq, pipe handler, batch 1, $RESIDUE_WORKERS workers; rows/s, median of $RESIDUE_RUNS run(s) for the
good index (the small and the big table in turn), $RUNS with the article's.
Filling the $RESIDUE finished rows took $FILL_S s (once per bench run);
swapping the index took $ALTER_S s; writing out the dirty pages after
each took $SETTLE_S s in all.

| table | rows/s | ratio to the small table | each run |
|---|---:|---:|---|
| $RESIDUE_WAITING rows (+ those of the earlier runs), INDEX (status, id) | $RES_SMALL | 1.00 | ${residue_small[*]} |
| + $RESIDUE finished, INDEX (status, id) | $RES_GOOD | $(ratio "$RES_GOOD" "$RES_SMALL") | ${residue_good[*]} |
| + $RESIDUE finished, the article's INDEX (status, retry_at) | $RES_ARTICLE | $(ratio "$RES_ARTICLE" "$RES_SMALL") | ${residue_article[*]} |

Each drain with the article's index was given at most $ARTICLE_LIMIT_S s and did
$(printf '%s, ' "${residue_article_done[@]}" | sed 's/, $//') of its $RESIDUE_WAITING rows (the rate is rows done over time
taken). Its plan, by EXPLAIN of the claim (type, possible keys, key,
key length, ref, rows, Extra):

\`\`\`
$EXPLAIN_ARTICLE
\`\`\`

What \`rowq check\` says about that table (it says nothing but ok with
INDEX (status, id): \`$(echo "$CHECK_GOOD" | tail -1)\`):

\`\`\`
$(echo "$CHECK_ARTICLE" | fold -s -w 100)
\`\`\`

## Idle cost and pickup latency
\`rowq run\`, $IDLE_WORKERS workers, \`idle: $IDLE\`, an empty queue, over $IDLE_WINDOW_S s:
- claims (Com_select) per worker per idle interval: **$CLAIMS_PER_IDLE**
- all statements (Questions) per worker per second: **$QPS_PER_WORKER**
- pickup latency, INSERT to the handler reading the row, $LATENCY_SAMPLES rows
  inserted at random moments: median **$LAT_MEDIAN ms**, min $LAT_MIN ms,
  max $LAT_MAX ms

## Memory
Steady state: \`rowq run\` idle after handling rows; KiB from /proc.

| process | VmRSS | RssAnon | RssFile | RssShmem | Pss |
|---|---:|---:|---:|---:|---:|
| supervisor | $(echo "$SUP_MEM" | tr ' ' '|' | sed 's/|/ | /g') |
| worker (largest) | $(echo "$WORKER_MEM" | tr ' ' '|' | sed 's/|/ | /g') |

## Targets (issues 6 and 16), as measured in this run

$(targets)

For scale: one /bin/true started per row by the raw loop at 1 worker gives
$spawn_rate rows/s here.

EOF
	cat "$BENCH_DIR/analysis.md"
	[ -z "$other_sections" ] || printf '\n%s\n' "$other_sections"
} >"$BENCH_DIR/README.md"
cp results.tsv "$BENCH_DIR/results.tsv"

# The terminal gets the tables.
echo
table
echo
costs
echo
held_table
echo
echo "residue: small $RES_SMALL rows/s, $RESIDUE finished + good index $RES_GOOD, article's index $RES_ARTICLE"
echo "idle: $CLAIMS_PER_IDLE claims/worker/interval, $QPS_PER_WORKER queries/s/worker; pickup median $LAT_MEDIAN ms (max $LAT_MAX)"
echo "memory (KiB VmRSS RssAnon RssFile RssShmem Pss): supervisor $SUP_MEM; worker $WORKER_MEM"
echo
targets
echo
echo "bench: wrote bench/README.md, bench/results.png, bench/results.tsv in $TOTAL_S s"

if [ "${BENCH_PRUNE:-0}" = 1 ]; then
	# On a server of its own; this one is done.
	db_stop
	env -u ROWQ_TEST_SOCKET -u ROWQ_TEST_TMP -u ROWQ_TEST_DB ROWQ_TEST_NAME=prune \
	    bash "$BENCH_DIR/prune.sh" || fail "bench/prune.sh failed"
fi
