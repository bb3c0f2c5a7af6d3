# shellcheck shell=bash
# Helpers of the benchmark scripts, sourced after tests/lib.sh (and
# tests/email.sh, for the contenders):
#
#   settle, readme_section   once the server runs, any script's
#   job_fill                 lease.sh's and floor.sh's job table
#   bench_build              the helper programs, in BIN
#   bench_server_start       a server with the buffer pool a script needs
#   measure, measure_rounds  bench.sh's contenders on the email table: one
#                            run, or RUNS rounds of them, each verified, a
#                            line each in results.tsv (in the current
#                            directory)
#   median, ratio, table     what results.tsv says
#
# BENCH_DIR is bench/, BIN where the helper programs are built.

BENCH_DIR=$REPO_ROOT/bench
BIN=$REPO_ROOT/build/bench

# settle: have the server write out what a bulk change left dirty (at most
# 20 s), so that background flushing does not compete with the
# measurements that follow; SETTLE_S adds up the seconds it waited.
settle()
{
	local i pct
	pct=$(sql_value "SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
	sql "SET GLOBAL innodb_max_dirty_pages_pct = 0"
	for ((i = 0; i < 20; i++)); do
		[ "$(sql_value "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
		    WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_DIRTY'")" -gt 1000 ] || break
		sleep 1
	done
	sql "SET GLOBAL innodb_max_dirty_pages_pct = $pct"
	SETTLE_S=$((${SETTLE_S:-0} + i))
}

# readme_section BEGIN END FILE: FILE's text (its first line BEGIN, its last
# END) in place of bench/README.md's section between those markers, or
# after the rest when it has none.
readme_section()
{
	local readme=$BENCH_DIR/README.md
	if grep -qxF "$1" "$readme"; then
		awk -v b="$1" -v e="$2" -v f="$3" '
		    $0 == b { while ((getline l < f) > 0) print l; skip = 1; next }
		    $0 == e { skip = 0; next }
		    !skip' "$readme" >"$3.readme"
	else
		{ cat "$readme"; echo; cat "$3"; } >"$3.readme"
	fi
	cp "$3.readme" "$readme"
	rm -f "$3.readme"
}

say() { printf '%s\n' "$*" >&2; }

# job_fill N: the job table of lease.sh and floor.sh, made anew with N
# waiting rows, with a lease's columns; transaction mode reads the same
# table with the same select.
job_fill()
{
	sql "DROP TABLE IF EXISTS job;
	    CREATE TABLE job (
	    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	    payload VARCHAR(250) NOT NULL,
	    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
	    lease CHAR(32) NULL,
	    leased_until BIGINT NOT NULL DEFAULT 0,
	    attempts INT NOT NULL DEFAULT 0,
	    done_count INT NOT NULL DEFAULT 0,
	    last_error TEXT NULL,
	    INDEX (status, id)
	) ENGINE=InnoDB;
	INSERT INTO job (payload) SELECT CONCAT('job ', seq) FROM $(seq_rows "$1")"
}

# ---- the build and the server ------------------------------------------

# bench_build: rawloop, okpipe and beanbench in BIN; rowq must be built.
bench_build()
{
	mkdir -p "$BIN"
	# shellcheck disable=SC2046 # pkg-config's words
	cc -O2 -g -Wall -Wextra -o "$BIN/rawloop" "$BENCH_DIR/rawloop.c" \
	    $(pkg-config --cflags --libs libmariadb)
	cc -O2 -g -Wall -Wextra -o "$BIN/okpipe" "$BENCH_DIR/okpipe.c"
	cc -O2 -g -Wall -Wextra -o "$BIN/beanbench" "$BENCH_DIR/beanbench.c"
	[ -x "$ROWQ" ] || fail "no $ROWQ: run make first"
}

# bench_server_start [POOL [OPTION...]]: a throwaway server of
# ROWQ_TEST_SERVER's kind (tests/lib.sh), with a buffer pool of POOL (1G,
# and a log of 512M, unless told) and the server options given, and its
# database rowq_bench; sets SERVER_PID, and W (ROWQ_TEST_TMP), where the
# script then works.
bench_server_start()
{
	# By default, room for bench.sh's 4,000,000-row table in memory;
	# durability as in the tests (flush at commit 2): the limit here is
	# CPU and round trips, not fsync.
	if [ $# -eq 0 ]; then
		set -- 1G --innodb-log-file-size=512M
	fi
	DB_SERVER_OPTS+=(--innodb-buffer-pool-size="$1" "${@:2}")
	unset ROWQ_TEST_SOCKET
	db_start
	db_create rowq_bench
	# shellcheck disable=SC2154 # tests/lib.sh's, set by db_start
	SERVER_PID=$_lib_db_pid
	W=$ROWQ_TEST_TMP
	cd "$W" || fail "cannot work in $W"
}

# status NAME...: global status counters, "name value" lines.
status()
{
	local names
	names=$(printf "'%s'," "$@")
	mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B -e \
	    "SHOW GLOBAL STATUS WHERE Variable_name IN (${names%,})"
}

# CPU time of the server so far, in clock ticks.
server_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }
CLK_TCK=$(getconf CLK_TCK)

# ---- configurations ----------------------------------------------------

pipe_config()
{
	local file=$1 batch=$2
	shift 2
	email_config "$file" "[x]" "batch: $batch" "$@"
	sed -i "s|^    exec: .*|    pipe: [$BIN/okpipe]|" "$file"
}

make_configs()
{
	pipe_config pipe1.yaml 1
	pipe_config pipe10.yaml 10
	email_config exec.yaml "[/bin/true]"
}

# ---- the contenders ----------------------------------------------------

label()
{
	case $1 in
	raw1) echo "raw loop, 1 row/transaction" ;;
	rawc) echo "raw loop, cursor claim, 1 row/transaction" ;;
	rawrr) echo "raw loop, REPEATABLE READ, 1 row/transaction" ;;
	bean) echo "beanstalkd -f 0, reserve + delete" ;;
	raw10) echo "raw loop, 10 rows/transaction" ;;
	php) echo "PHP worker of the article" ;;
	rowq1) echo "rowq, pipe handler, batch 1" ;;
	rowq1b) echo "rowq, pipe handler, batch 1, BENCH_ROWQ_BEFORE" ;;
	rowq10) echo "rowq, pipe handler, batch 10" ;;
	rawx) echo "raw loop + posix_spawn /bin/true" ;;
	rowqx) echo "rowq, exec /bin/true" ;;
	esac
}

# What each contender is compared with.
baseline()
{
	case $1 in
	raw10 | php | rowq1 | rowq1b | rawc | rawrr | bean) echo raw1 ;;
	rowq10) echo raw10 ;;
	rowqx) echo rawx ;;
	*) echo "" ;;
	esac
}

# The command a contender runs, for WORKERS workers.
contender_run()
{
	local c=$1 n=$2 i pids=()
	case $c in
	raw1) "$BIN/rawloop" -S "$ROWQ_TEST_SOCKET" -D "$ROWQ_TEST_DB" -w "$n" -b 1 ;;
	rawc) "$BIN/rawloop" -S "$ROWQ_TEST_SOCKET" -D "$ROWQ_TEST_DB" -w "$n" -b 1 -C ;;
	rawrr) "$BIN/rawloop" -S "$ROWQ_TEST_SOCKET" -D "$ROWQ_TEST_DB" -w "$n" -b 1 -R ;;
	bean) "$BIN/beanbench" -s "$BEAN_SOCK" -n "$BEAN_JOBS" -w "$n" ;;
	raw10) "$BIN/rawloop" -S "$ROWQ_TEST_SOCKET" -D "$ROWQ_TEST_DB" -w "$n" -b 10 ;;
	rawx) "$BIN/rawloop" -S "$ROWQ_TEST_SOCKET" -D "$ROWQ_TEST_DB" -w "$n" -b 1 -x /bin/true ;;
	rowq1) "$ROWQ" -c pipe1.yaml drain email -w "$n" ;;
	rowq1b) "$ROWQ_BEFORE" -c pipe1.yaml drain email -w "$n" ;;
	rowq10) "$ROWQ" -c pipe10.yaml drain email -w "$n" ;;
	rowqx) "$ROWQ" -c exec.yaml drain email -w "$n" ;;
	php)
		for ((i = 0; i < n; i++)); do
			php "$BENCH_DIR/worker.php" "$ROWQ_TEST_SOCKET" "$ROWQ_TEST_DB" &
			pids+=($!)
		done
		for i in "${pids[@]}"; do
			wait "$i" || return 1
		done
		;;
	esac
}

# verify ROWS [WHERE]: every row done exactly once.
verify()
{
	local rows=$1 where=${2:-1} got
	got=$(sql_value "SELECT CONCAT_WS(' ', COUNT(*), SUM(status = 'sent'),
	    SUM(done_count), MAX(done_count), MIN(done_count)) FROM email WHERE $where")
	[ "$got" = "$rows $rows $rows 1 1" ] ||
	    fail "not every row done exactly once: rows, sent, done, max, min = $got (expected $rows rows)"
}

# ---- beanstalkd, and a read view that holds purge back -----------------

# bean_start: a fresh beanstalkd with an empty binlog, fsync on every
# write; sets BEAN_PID and BEAN_SOCK.
bean_start()
{
	bean_stop
	rm -rf "$W/bean"
	mkdir -p "$W/bean/binlog"
	BEAN_SOCK=$W/bean/sock
	beanstalkd -l "unix:$BEAN_SOCK" -b "$W/bean/binlog" -f 0 \
	    </dev/null >"$W/bean/log" 2>&1 &
	BEAN_PID=$!
	track_pid "$BEAN_PID"
	wait_until 10 '[ -S "$BEAN_SOCK" ]' || fail "beanstalkd did not start: $(cat "$W/bean/log")"
}

bean_stop()
{
	[ -n "${BEAN_PID:-}" ] || return 0
	kill_wait 5 "$BEAN_PID"
	wait "$BEAN_PID" 2>/dev/null || true
	untrack_pid "$BEAN_PID"
	BEAN_PID=
}

# hold_start: another connection opens a read view and keeps it, so that
# purge cannot remove what the drain's UPDATEs delete-mark; sets HOLD_ID.
hold_start()
{
	mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot "$ROWQ_TEST_DB" -e \
	    "START TRANSACTION WITH CONSISTENT SNAPSHOT; SELECT COUNT(*) FROM email;
	    SELECT SLEEP(86400) AS rowq_bench_hold" >/dev/null 2>&1 &
	HOLD_PID=$!
	track_pid "$HOLD_PID"
	wait_until 10 'HOLD_ID=$(sql "SELECT ID FROM information_schema.PROCESSLIST
	    WHERE INFO LIKE '"'"'SELECT SLEEP(86400) AS rowq_bench_hold%'"'"'") && [ -n "$HOLD_ID" ]' ||
	    fail "the read view did not open"
}

hold_stop()
{
	sql "KILL $HOLD_ID"
	wait "$HOLD_PID" 2>/dev/null || true
	untrack_pid "$HOLD_PID"
}

# measure CONTENDER WORKERS RUN ROWS [TAG LIMIT]: fill, run, verify, append
# a line to results.tsv: contender workers run rows seconds rows/s
# questions/row client-cpu-us/row server-cpu-us/row.  TAG "_held" holds
# purge back during the run; LIMIT (s) stops the run then, and rows/s is
# the rows done over the time taken.  With MEASURE_COUNTERS (names of
# global status counters), a line per counter to counters.tsv too:
# contender workers run name per-row.
measure()
{
	local c=$1 n=$2 run=$3 rows=$4 tag=${5:-} limit=${6:-0}
	local q0 q1 s0 s1 t0 t1 cpu secs spid=$SERVER_PID done_rows=$rows
	# shellcheck disable=SC2206 # a list of names, split where it is blank
	local status=0 counters=(Questions ${MEASURE_COUNTERS:-})
	if [ "$c" = bean ]; then
		bean_start
		BEAN_JOBS=$rows
		"$BIN/beanbench" -s "$BEAN_SOCK" -n "$rows" -P || fail "beanstalkd: put failed"
		spid=$BEAN_PID
	else
		sql "DROP TABLE IF EXISTS email"
		email_table "$rows"
	fi
	[ "$tag" != _held ] || hold_start
	# One statement reads them all, before and after: it is the one
	# Questions counts that the contender did not send.
	status "${counters[@]}" >status.0
	q0=$(awk '$1 == "Questions" { print $2 }' status.0)
	s0=$(awk '{ print $14 + $15 }' "/proc/$spid/stat")
	t0=$(now_us)
	TIMEFORMAT='%3U %3S'
	if [ "$limit" -gt 0 ]; then
		{ time timeout -s TERM "$limit" bash -c "$(declare -f contender_run); $(declare -p BIN ROWQ ROWQ_BEFORE); contender_run $c $n" \
		    >"run.$c.log" 2>&1; } 2>time.out || status=$?
		[ "$status" -eq 0 ] || [ "$status" -eq 124 ] ||
		    fail "$c$tag with $n workers failed: $(tail -5 "run.$c.log")"
	else
		{ time contender_run "$c" "$n" >"run.$c.log" 2>&1; } 2>time.out ||
		    fail "$c$tag with $n workers failed: $(tail -5 "run.$c.log")"
	fi
	t1=$(now_us)
	s1=$(awk '{ print $14 + $15 }' "/proc/$spid/stat")
	status "${counters[@]}" >status.1
	q1=$(awk '$1 == "Questions" { print $2 }' status.1)
	[ "$tag" != _held ] || hold_stop
	cpu=$(tail -1 time.out)
	if [ "$c" = bean ]; then
		bean_stop
	elif [ "$status" -eq 124 ]; then
		# Stopped by the time limit: nothing done twice, the rest left.
		done_rows=$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'sent'")
		[ "$(sql_value "SELECT MAX(done_count) FROM email")" -le 1 ] ||
		    fail "$c$tag: a row done twice"
	else
		verify "$rows"
	fi
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e6 }')
	awk -v c="$c$tag" -v n="$n" -v r="$run" -v rows="$done_rows" -v secs="$secs" \
	    -v q=$((q1 - q0 - 1)) -v cpu="$cpu" -v st=$((s1 - s0)) -v hz="$CLK_TCK" '
	    BEGIN {
		split(cpu, u, " ")
		printf "%s\t%d\t%d\t%d\t%.3f\t%.1f\t%.2f\t%.0f\t%.0f\n", c, n, r,
		    rows, secs, rows / secs, q / rows,
		    (u[1] + u[2]) * 1e6 / rows, st / hz * 1e6 / rows
	    }' >>results.tsv
	[ -z "${MEASURE_COUNTERS:-}" ] ||
	    awk -v c="$c$tag" -v n="$n" -v r="$run" -v rows="$done_rows" '
		FNR == NR { v[$1] = $2; next }
		$1 != "Questions" { printf "%s\t%d\t%d\t%s\t%.2f\n", c, n, r,
		    $1, ($2 - v[$1]) / rows }' status.0 status.1 >>counters.tsv
	say "$(tail -1 results.tsv | awk -F'\t' '{ printf "  %-11s %d workers, run %d: %8.0f rows/s (%.2f statements/row)", $1, $2, $3, $6, $7 }')"
}

# measure_rounds: RUNS rounds, each of every contender of CONTENDERS at
# every count of WORKERS_LIST in turn, on ROWS rows (EXEC_ROWS for those
# that start a process per row).
measure_rounds()
{
	local run n c rows
	for ((run = 1; run <= RUNS; run++)); do
		for n in $WORKERS_LIST; do
			for c in $CONTENDERS; do
				rows=$ROWS
				case $c in rawx | rowqx) rows=$EXEC_ROWS ;; esac
				measure "$c" "$n" "$run" "$rows"
			done
		done
	done
}

# ---- what results.tsv says ---------------------------------------------

# median CONTENDER WORKERS COLUMN: the median over runs (odd counts: the
# middle one; even: the mean of the middle two).
median()
{
	awk -F'\t' -v c="$1" -v n="$2" -v col="$3" '
	    $1 == c && $2 == n { v[++k] = $col }
	    END {
		if (k == 0) { print "-"; exit }
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
			if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
		m = k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
		print m
	    }' results.tsv
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

# table: rows/s of each of CONTENDERS at each count of WORKERS_LIST,
# medians, each with its ratio to its baseline of the same run.
# table_head COLUMN and table_rows CELL make one with a first column
# COLUMN, CELL in its first row, to put together several runs' in one.
table()
{
	table_head
	table_rows
}

# shellcheck disable=SC2120 # bench/servers.sh names the column
table_head()
{
	local n
	printf '|%s contender |' "${1:+ $1 |}"
	for n in $WORKERS_LIST; do printf ' %s worker%s |' "$n" "$([ "$n" = 1 ] || echo s)"; done
	printf '\n|%s---|' "${1:+---|}"
	for n in $WORKERS_LIST; do printf -- '---:|'; done
	printf '\n'
}

# shellcheck disable=SC2120 # bench/servers.sh gives the cell
table_rows()
{
	local c n m b first=$# cell=${1:-}
	for c in $CONTENDERS; do
		[ "$first" = 0 ] || printf '| %s ' "$cell"
		cell=
		printf '| %s |' "$(label "$c")"
		b=$(baseline "$c")
		for n in $WORKERS_LIST; do
			m=$(median "$c" "$n" 6)
			if [ -n "$b" ]; then
				printf ' %s (%s×) |' "$(printf '%.0f' "$m")" "$(ratio "$m" "$(median "$b" "$n" 6)")"
			else
				printf ' %s |' "$(printf '%.0f' "$m")"
			fi
		done
		printf '\n'
	done
}
