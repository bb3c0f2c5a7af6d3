#!/usr/bin/env bash
# What the run log (runs:) costs a busy queue: 2 workers with a pipe
# handler that answers at once (bench/okpipe.c), so that nothing but
# rowq and the database is measured, at batch 1 and batch 10, 20,000
# rows a drain, in rounds that alternate, with the same build:
#   off   the queue without runs:
#   on    the same queue with runs: {} (its INSERT in front of each
#         COMMIT; the table emptied before each drain)
# medians of ROUNDS (default 5) rounds, as rows/s and as the ratio of on
# to off measured in the same round; the table goes into its section of
# bench/README.md.  Run from the repository root after `make`; starts
# its own server like the tests do.
#   ROWQ_BEFORE   another build of rowq (a change's parent): each round
#                 also drains with runs: at batch 1 and 10 with it, so
#                 that a change is measured before and after in one run
#   BENCH_QUICK=1 3 rounds of 5,000 rows (500 with exec), not 5 of 20,000
. "$(dirname "$0")/../tests/lib.sh"
. "$(dirname "$0")/lib.sh"
QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	ROUNDS=${ROUNDS:-3} ROWS=${ROWS:-5000} ROWS_EXEC=${ROWS_EXEC:-500}
fi
ROUNDS=${ROUNDS:-5}
MARK_BEGIN='<!-- bench/runs.sh: begin -->'
MARK_END='<!-- bench/runs.sh: end -->'
ROWS=${ROWS:-20000}
ROWS_EXEC=${ROWS_EXEC:-2000}
BEFORE=${ROWQ_BEFORE:-}
db_start
db_create b_runs
cd "$ROWQ_TEST_TMP"
cc -O2 -o okpipe "$REPO_ROOT/bench/okpipe.c"

sql "CREATE TABLE email (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    status ENUM('waiting', 'sent') NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0,
    INDEX (status, id)
) ENGINE=InnoDB"

# config FILE BATCH [EXTRA-KEY...]
config()
{
	local f=$1 batch=$2
	shift 2
	cat >"$f" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: $ROWQ_TEST_TMP/$f.sock
queues:
  email:
    workers: 2
    batch: $batch
    select: SELECT id, attempts FROM email
            WHERE status = 'waiting' ORDER BY id
    pipe: [$ROWQ_TEST_TMP/okpipe]
    done: UPDATE email SET status = 'sent' WHERE id = :id
    failed: UPDATE email SET status = 'sent' WHERE id = :id
YAML
	for k in "$@"; do
		printf '    %s\n' "$k" >>"$f"
	done
}
for b in 1 10; do
	config off$b.yaml $b
	config on$b.yaml $b "runs: {}"
done
# A handler that is a process a row: /bin/true.
for f in off on; do
	sed "s|^    pipe: .*|    exec: [/bin/true]|" ${f}1.yaml >${f}x.yaml
done

# CPU time so far, in clock ticks: the server's, and that of the
# children the calling shell has waited for (rowq, with its workers and
# handlers); read without a subshell of its own, into TICKS.
server_ticks() { read -ra st <"/proc/$_lib_db_pid/stat"; TICKS=$((st[13] + st[14])); }
client_ticks() { read -ra st <"/proc/$BASHPID/stat"; TICKS=$((st[15] + st[16])); }
CLK_TCK=$(getconf CLK_TCK)

# run CONFIG [ROWQ]: "rows/s cpu-µs/row" of one drain of ROWS fresh rows
# (by ROWQ, $ROWQ by default), the CPU being the server's and rowq's
# together; with runs:, checks that each row has its one run.
run()
{
	local t0 t1 s0 s1 c0 c1 rows=$ROWS bin=${2:-$ROWQ}
	case $1 in *x.yaml) rows=$ROWS_EXEC ;; esac
	sql "TRUNCATE email"
	sql "TRUNCATE rowq_runs"
	sql "INSERT INTO email (attempts) SELECT 0 FROM $(seq_rows "$rows")"
	server_ticks; s0=$TICKS
	client_ticks; c0=$TICKS
	t0=$(now_us)
	"$bin" -c "$1" drain email >drain.log 2>&1 || { cat drain.log >&2; exit 1; }
	t1=$(now_us)
	server_ticks; s1=$TICKS
	client_ticks; c1=$TICKS
	[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'waiting'")" = 0 ] ||
	    { echo "rows left" >&2; exit 1; }
	case $1 in on*)
		[ "$(sql_value "SELECT COUNT(*) FROM rowq_runs")" = "$rows" ] ||
		    { echo "runs are not one a row" >&2; exit 1; } ;;
	esac
	awk -v n="$rows" -v us=$((t1 - t0)) -v t=$((s1 - s0 + c1 - c0)) \
	    -v hz="$CLK_TCK" 'BEGIN { printf "%.0f %.0f", n / (us / 1e6), t / hz * 1e6 / n }'
}
# The run log's table made once, by a drain of one row, as a daemon has it.
sql "INSERT INTO email (attempts) VALUES (0)"
"$ROWQ" -c on1.yaml drain email >/dev/null 2>&1 || exit 1
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

: >rounds
for ((r = 1; r <= ROUNDS; r++)); do
	f1=$(run off1.yaml)
	n1=$(run on1.yaml)
	f10=$(run off10.yaml)
	n10=$(run on10.yaml)
	fx=$(run offx.yaml)
	nx=$(run onx.yaml)
	b1='' b10=''
	if [ -n "$BEFORE" ]; then
		b1=" $(run on1.yaml "$BEFORE")"
		b10=" $(run on10.yaml "$BEFORE")"
	fi
	echo "$f1 $n1 $f10 $n10 $fx $nx$b1$b10" >>rounds
	echo "round $r: batch 1 off $f1, on $n1; batch 10 off $f10, on $n10; exec off $fx, on $nx${BEFORE:+; before: batch 1 on$b1, batch 10 on$b10} (rows/s, CPU µs/row)" >&2
done
# Columns of rounds: rows/s and CPU µs a row, for off1 on1 off10 on10
# offx onx.
col() { awk -v c="$1" '{ print $c }' rounds | median; }
ratio() { awk -v a="$1" -v b="$2" '{ printf "%.3f\n", $b / $a }' rounds | median; }
{
	echo "$MARK_BEGIN"
	echo "## What the run log costs a busy queue (\`bash bench/runs.sh\`)"
	echo "Written on $(date -u '+%Y-%m-%d %H:%M UTC')$([ "$QUICK" = 1 ] && echo ", **quick mode** (BENCH_QUICK=1)"); load average at the end"
	echo "$(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine shows here)."
	echo "2 workers, the pipe handler bench/okpipe.c (it answers at once, so"
	echo "that only rowq and the database are measured: with a handler that"
	echo "works, the same cost is a smaller part), $ROWS rows a drain; the same"
	echo "build without and with \`runs: {}\` in turn, each round; each round's"
	echo "rows/s and CPU µs a row: $(tr '\n' ';' <rounds | sed 's/;$//; s/;/; /g') (batch 1 off, on;"
	echo "batch 10 off, on; exec /bin/true at batch 1, $ROWS_EXEC rows, off, on$([ -n "$BEFORE" ] && echo "; then on at batch 1 and 10 with the build before, ROWQ_BEFORE")."
	echo "CPU is the server's and rowq's (its workers and"
	echo "handlers) over the drain, divided by the rows: on a loaded machine the"
	echo "steadier measure; its ratio (off / on) is the rate the run log leaves"
	echo "where CPU is the limit."
	echo
	echo "| batch | rows/s without / with runs: | ratio, same round | CPU µs a row without / with | CPU ratio off/on, same round |"
	echo "|---|---:|---:|---:|---:|"
	echo "| 1 | $(col 1) / $(col 3) | $(ratio 1 3) | $(col 2) / $(col 4) | $(ratio 4 2) |"
	echo "| 10 | $(col 5) / $(col 7) | $(ratio 5 7) | $(col 6) / $(col 8) | $(ratio 8 6) |"
	echo "| 1, exec /bin/true | $(col 9) / $(col 11) | $(ratio 9 11) | $(col 10) / $(col 12) | $(ratio 12 10) |"
	if [ -n "$BEFORE" ]; then
		echo "| 1, the build before | $(col 1) / $(col 13) | $(ratio 1 13) | $(col 2) / $(col 14) | $(ratio 14 2) |"
		echo "| 10, the build before | $(col 5) / $(col 15) | $(ratio 5 15) | $(col 6) / $(col 16) | $(ratio 16 6) |"
	fi
	echo "(medians of $ROUNDS rounds)"
	echo "$MARK_END"
} >section.md
cat section.md
readme_section "$MARK_BEGIN" "$MARK_END" section.md
