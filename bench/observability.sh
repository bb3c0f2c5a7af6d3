#!/usr/bin/env bash
# What observability costs a busy queue: batch 1 at 2 workers with a pipe
# handler that answers at once (bench/okpipe), 20,000 rows, in rounds
# that alternate
#   before   BENCH_ROWQ_BEFORE, a build without it (required), as is;
#   plain    this build, the queue as before (its handler histogram now
#            by outcome, a journal-less plain log);
#   all      this build with ready_at: (the pickup histogram, a clock read
#            per connection), traceparent_column: (a column parsed per
#            row) and log_format: json;
# medians of ROUNDS (default 5) rounds, as rows/s and as a ratio to
# before measured in the same rounds; the table goes into its section of
# bench/README.md.  Run from the repository root after
# `make`; starts its own server like the tests do.
#     BENCH_ROWQ_BEFORE=/path/to/old/rowq bash bench/observability.sh
. "$(dirname "$0")/../tests/lib.sh"
. "$(dirname "$0")/lib.sh"
[ -x "${BENCH_ROWQ_BEFORE:-}" ] || { echo "set BENCH_ROWQ_BEFORE to a rowq build without it" >&2; exit 2; }
ROUNDS=${ROUNDS:-5}
MARK_BEGIN='<!-- bench/observability.sh: begin -->'
MARK_END='<!-- bench/observability.sh: end -->'
ROWS=${ROWS:-20000}
db_start
db_create b_obs
cd "$ROWQ_TEST_TMP"
cc -O2 -o okpipe "$REPO_ROOT/bench/okpipe.c"

sql "CREATE TABLE email (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    status ENUM('waiting', 'sent') NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    trace VARCHAR(64) NULL,
    INDEX (status, id)
) ENGINE=InnoDB"

# config FILE [EXTRA-KEY...]
config()
{
	local f=$1
	shift
	cat >"$f" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: $ROWQ_TEST_TMP/$f.sock
queues:
  email:
    workers: 2
    select: SELECT id, attempts, created_at, trace FROM email
            WHERE status = 'waiting' ORDER BY id
    pipe: [$ROWQ_TEST_TMP/okpipe]
    done: UPDATE email SET status = 'sent' WHERE id = :id
    failed: UPDATE email SET status = 'sent' WHERE id = :id
YAML
	for k in "$@"; do
		case $k in
		log_format:*) sed -i "s|^queues:|$k\nqueues:|" "$f" ;;
		*) printf '    %s\n' "$k" >>"$f" ;;
		esac
	done
}
config plain.yaml
config all.yaml "ready_at: created_at" "traceparent_column: trace" "log_format: json"

# run BIN CONFIG: rows/s of one drain of ROWS fresh rows.
run()
{
	local t0 t1
	sql "TRUNCATE email"
	sql "INSERT INTO email (trace) SELECT
	    CONCAT('00-', LPAD(HEX(seq), 32, '0'), '-00f067aa0ba902b7-01')
	    FROM $(seq_rows "$ROWS")"
	t0=$(now_us)
	"$1" -c "$2" drain email >drain.log 2>&1 || { cat drain.log >&2; exit 1; }
	t1=$(now_us)
	[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'waiting'")" = 0 ] ||
	    { echo "rows left" >&2; exit 1; }
	awk -v n="$ROWS" -v us=$((t1 - t0)) 'BEGIN { printf "%.0f", n / (us / 1e6) }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

: >rounds
for ((r = 1; r <= ROUNDS; r++)); do
	b=$(run "$BENCH_ROWQ_BEFORE" plain.yaml)
	p=$(run "$ROWQ" plain.yaml)
	a=$(run "$ROWQ" all.yaml)
	echo "$b $p $a" >>rounds
	echo "round $r: before $b, plain $p, all $a rows/s" >&2
done
mb=$(awk '{ print $1 }' rounds | median)
mp=$(awk '{ print $2 }' rounds | median)
ma=$(awk '{ print $3 }' rounds | median)
rp=$(awk '{ printf "%.3f\n", $2 / $1 }' rounds | median)
ra=$(awk '{ printf "%.3f\n", $3 / $1 }' rounds | median)
{
	echo "$MARK_BEGIN"
	echo "## What observability costs a busy queue (\`bash bench/observability.sh\`)"
	echo "Written on $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the end"
	echo "$(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine shows here)."
	echo "Batch 1, 2 workers, the pipe handler bench/okpipe.c, $ROWS rows a drain;"
	echo "the build before it (BENCH_ROWQ_BEFORE) and this one in turn, each round;"
	echo "each round's rows/s: $(tr '\n' ';' <rounds | sed 's/;$//; s/;/; /g') (before, plain, all)."
	echo
	echo "| build | rows/s (median of $ROUNDS) | ratio to before, same round (median) |"
	echo "|---|---:|---:|"
	echo "| before | $mb | 1 |"
	echo "| this build, as before | $mp | $rp |"
	echo "| this build, ready_at + traceparent_column + log_format: json | $ma | $ra |"
	echo "$MARK_END"
} >section.md
cat section.md
readme_section "$MARK_BEGIN" "$MARK_END" section.md
