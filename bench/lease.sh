#!/usr/bin/env bash
# bench/lease.sh: what lease mode (rowq.yaml.5, LEASES) costs against
# transaction mode, on the same table and the same pipe handler, in one
# run: issue 33's target is lease mode at >= 0.85x transaction mode at
# batch 1 and batch 10.  `bash bench/lease.sh` (BENCH_QUICK=1: fewer
# rows, one round); kept out of make check.
#
# Starts its own throwaway server (tests/lib.sh; ROWQ_TEST_SERVER picks
# which), one table with a lease's columns, and drains it with `rowq
# drain`, 2 workers, pipe handler bench/okpipe.c, in rounds: transaction
# mode and lease mode at batch 1, lease mode at batch 1 with lease.ahead
# 10, then both modes at batch 10, each in turn in every round (a busy machine moves whole rounds, so the ratio is the
# median of each round's).  With BENCH_ROWQ_BEFORE=PATH, another build's
# lease mode runs in each round too, beside this one's.  Every run is
# checked: every row done exactly once.  Statements per row are the
# server's Questions over the drain (start-up included), divided by the
# rows.
#
# BENCH_HANDLER=exec runs /bin/true, a process a row, in place of the
# pipe handler (and 2,000 rows by default): a handler that costs what
# starting a process costs, beside the pipe's that costs nothing.
#
# Prints a table, and writes its section of bench/README.md (between its
# markers; with BENCH_HANDLER=exec, a section of its own).

. "$(dirname "$0")/../tests/lib.sh"
. "$(dirname "$0")/lib.sh"

QUICK=${BENCH_QUICK:-0}
RUNS=${BENCH_RUNS:-$([ "$QUICK" = 1 ] && echo 1 || echo 3)}
HANDLER=${BENCH_HANDLER:-pipe}
case $HANDLER in
pipe) ROWS_DEFAULT=20000 HANDLER_YAML="pipe: [$BIN/okpipe]" HANDLER_SAYS="pipe handler bench/okpipe.c" ;;
exec) ROWS_DEFAULT=2000 HANDLER_YAML="exec: [/bin/true]" HANDLER_SAYS="exec: [/bin/true] (a process a row)" ;;
*) echo "BENCH_HANDLER: pipe or exec, not $HANDLER" >&2; exit 2 ;;
esac
ROWS=${BENCH_ROWS:-$([ "$QUICK" = 1 ] && echo $((ROWS_DEFAULT / 4)) || echo $ROWS_DEFAULT)}
WORKERS=${BENCH_WORKERS:-2}
BATCHES=${BENCH_BATCHES:-1 10}
BEFORE=${BENCH_ROWQ_BEFORE:-}
MARK_BEGIN="<!-- bench/lease.sh$([ "$HANDLER" = pipe ] || echo " $HANDLER"): begin -->"
MARK_END="<!-- bench/lease.sh$([ "$HANDLER" = pipe ] || echo " $HANDLER"): end -->"
START_S=$(date +%s)

mkdir -p "$BIN"
cc -O2 -g -Wall -Wextra -o "$BIN/okpipe" "$BENCH_DIR/okpipe.c"
[ -x "$ROWQ" ] || fail "no $ROWQ: run make first"
[ -z "$BEFORE" ] || [ -x "$BEFORE" ] || fail "BENCH_ROWQ_BEFORE: no $BEFORE"

bench_server_start 512M

# config FILE BATCH lease|transaction [AHEAD]
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  job:
    workers: $WORKERS
    batch: $2
    select: SELECT id, payload, attempts FROM job
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    $HANDLER_YAML
    timeout: 10s
    idle: 200ms
YAML
	if [ "$3" = lease ]; then
		cat >>"$1" <<YAML
    lease:
      duration: 60s${4:+
      ahead: $4}
      claim: UPDATE job SET lease = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + 60 WHERE id = :id
      renew: UPDATE job SET leased_until = UNIX_TIMESTAMP() + 60
             WHERE id = :id AND lease = :lease
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE job SET status = 'failed', last_error = :error
            WHERE id = :id AND lease = :lease
YAML
	else
		cat >>"$1" <<YAML
    done: UPDATE job SET status = 'done', attempts = attempts + 1,
          done_count = done_count + 1 WHERE id = :id
    failed: UPDATE job SET status = 'failed', last_error = :error
            WHERE id = :id
YAML
	fi
}

for b in 1 10; do
	config "tx$b.yaml" "$b" transaction
	config "lease$b.yaml" "$b" lease
done
config ahead1.yaml 1 lease 10

questions() { sql "SHOW GLOBAL STATUS LIKE 'Questions'" | awk '{ print $2 }'; }
# CPU time so far, in clock ticks: the server's, and that of the
# children the calling shell has waited for (rowq, its workers and
# handlers); read without a subshell of its own, into TICKS.
server_ticks() { read -ra st <"/proc/$_lib_db_pid/stat"; TICKS=$((st[13] + st[14])); }
client_ticks() { read -ra st <"/proc/$BASHPID/stat"; TICKS=$((st[15] + st[16])); }
CLK_TCK=$(getconf CLK_TCK)

declare -A RESULT LAST RATIO STMTS REFUSED SCPU CCPU
# run NAME ROWQ CONFIG [BASE]: one drain, its rows/s into RESULT, its
# statements per row into STMTS, and its ratio to BASE's of the same
# round into RATIO.
run()
{
	local name=$1 bin=$2 cfg=$3 t0 t1 q0 q1 got s0 s1 c0 c1
	job_fill "$ROWS"
	q0=$(questions)
	server_ticks; s0=$TICKS
	client_ticks; c0=$TICKS
	t0=$(now_us)
	if ! "$bin" -c "$cfg" drain job -w "$WORKERS" >drain.out 2>&1; then
		# A build from before lease mode took batches refuses them.
		if grep -q 'with lease: a lease queue handles one row' drain.out; then
			say "  $name: refused (batch > 1 with lease)"
			REFUSED[$name]=1
			return
		fi
		fail "$name: drain: $(tail -n 5 drain.out)"
	fi
	t1=$(now_us)
	server_ticks; s1=$TICKS
	client_ticks; c1=$TICKS
	q1=$(questions)
	got=$(sql_value "SELECT CONCAT_WS(' ', SUM(status = 'done'),
	    MAX(done_count), MIN(done_count)) FROM job")
	[ "$got" = "$ROWS 1 1" ] || fail "$name: not every row done once: $got"
	LAST[$name]=$((ROWS * 1000000 / (t1 - t0)))
	RESULT[$name]="${RESULT[$name]:-} ${LAST[$name]}"
	# Less the two statements of questions() itself.
	STMTS[$name]="${STMTS[$name]:-} $(awk -v a="$q0" -v b="$q1" -v n="$ROWS" \
	    'BEGIN { printf "%.2f", (b - a - 2) / n }')"
	SCPU[$name]="${SCPU[$name]:-} $(((s1 - s0) * 1000000 / CLK_TCK / ROWS))"
	CCPU[$name]="${CCPU[$name]:-} $(((c1 - c0) * 1000000 / CLK_TCK / ROWS))"
	[ -z "${4:-}" ] ||
	    RATIO[$name]="${RATIO[$name]:-} $(ratio "${LAST[$name]}" "${LAST[$4]}")"
	say "  $name: ${LAST[$name]} rows/s, ${STMTS[$name]##* } statements a row, CPU µs a row: server ${SCPU[$name]##* }, rowq ${CCPU[$name]##* }"
}

median_of() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

NAMES=()
for ((r = 1; r <= RUNS; r++)); do
	say "round $r of $RUNS"
	for b in $BATCHES; do
		run "tx$b" "$ROWQ" "tx$b.yaml"
		run "lease$b" "$ROWQ" "lease$b.yaml" "tx$b"
		[ "$b" != 1 ] || run ahead1 "$ROWQ" ahead1.yaml tx1
		[ -z "$BEFORE" ] || run "before$b" "$BEFORE" "lease$b.yaml" "tx$b"
	done
done
declare -A M R S SC
for k in tx1 lease1 ahead1 before1 tx10 lease10 before10; do
	if [ -n "${REFUSED[$k]:-}" ]; then
		NAMES+=("$k")
		M[$k]="refused"; R[$k]="-"; S[$k]="-"; SC[$k]="-"
		continue
	fi
	[ -n "${RESULT[$k]:-}" ] || continue
	NAMES+=("$k")
	M[$k]=$(median_of "${RESULT[$k]}")
	R[$k]=$(median_of "${RATIO[$k]:-1.00}")
	S[$k]=$(median_of "${STMTS[$k]}")
	SC[$k]="$(median_of "${SCPU[$k]}") + $(median_of "${CCPU[$k]}")"
done
TOTAL_S=$(($(date +%s) - START_S))

label()
{
	case $1 in
	tx*) echo "transaction mode, batch ${1#tx}" ;;
	lease*) echo "lease mode, batch ${1#lease}" ;;
	ahead*) echo "lease mode, batch ${1#ahead}, lease.ahead 10" ;;
	before*) echo "lease mode, batch ${1#before}, BENCH_ROWQ_BEFORE" ;;
	esac
}

section()
{
	local k
	cat <<EOF
$MARK_BEGIN
## Lease mode against transaction mode (\`$([ "$HANDLER" = pipe ] || echo "BENCH_HANDLER=$HANDLER ")bash bench/lease.sh\`)

Written on $(date -u '+%Y-%m-%d %H:%M UTC') in $TOTAL_S s$([ "$QUICK" = 1 ] && echo ", **quick mode**"), $(server_family) $(sql_value "SELECT VERSION()");
load average at the end $(cut -d' ' -f1-3 /proc/loadavg) (other work on
the machine shows here: read the ratios, not the rates).  Rows per second
of \`rowq drain\`, $WORKERS workers, $HANDLER_SAYS, $ROWS rows,
one table read by the same select in both modes, median of $RUNS run(s),
each contender in turn in every round; the ratio is the median of each
round's ratio to transaction mode at the same batch (each round's:
$(for k in "${NAMES[@]}"; do case $k in tx*) ;; *) printf "%s %s; " "$k" "${RATIO[$k]:- refused}" ;; esac; done)).
Statements per row: the server's \`Questions\` over the drain, divided by
the rows.  CPU a row: the server's, and rowq's with its workers and
handlers, over the drain, divided by the rows (medians): where the two
cores are the limit, their sum sets the rate.

| queue | rows/s | ratio | statements per row | CPU µs a row, server + rowq |
|---|---:|---:|---:|---:|
$(for k in "${NAMES[@]}"; do printf '| %s | %s | %s | %s | %s |\n' "$(label "$k")" "${M[$k]}" "${R[$k]}" "${S[$k]}" "${SC[$k]}"; done)
$MARK_END
EOF
}

section >section.md
readme_section "$MARK_BEGIN" "$MARK_END" "$W/section.md"
sed -n '/^| /p' section.md
echo
echo "lease bench: wrote its section of bench/README.md in $TOTAL_S s"
