# shellcheck shell=bash
# Helpers shared by the fault tests (tests/integration/4*_*.sh) and the
# torture run (tests/torture/run.sh).  Sourced after lib.sh.
#
# A test reads its sizes from environment knobs with small defaults, so
# that `make check` runs it in seconds and `make torture` runs the same
# script at full size; it reports what it measured with `figure`, which
# tests/torture/summary.sh turns into tests/TORTURE.md.

# The binary for measurements of memory: ASan's shadow memory and
# quarantine make a sanitized process's RSS mean little.
ROWQ_PLAIN=${ROWQ_PLAIN:-$REPO_ROOT/rowq}

# figure NAME VALUE: say it, and keep it for the torture summary.
figure()
{
	echo "figure: $1 = $2"
	if [ -n "${ROWQ_FIGURES:-}" ]; then
		printf '%s\t%s\t%s\n' "$ROWQ_TEST_NAME" "$1" "$2" >>"$ROWQ_FIGURES"
	fi
}

# skip MESSAGE: exit 77, which run-integration.sh reports as skipped with
# the last line of output.
skip()
{
	echo "$*"
	exit 77
}

# proc_kb PID FIELD: a /proc/PID/status field in kB (VmRSS, VmHWM), or 0.
proc_kb()
{
	awk -v f="$2:" '$1 == f { print $2; found = 1 } END { if (!found) print 0 }' \
	    "/proc/$1/status" 2>/dev/null || echo 0
}

# fd_count PID: open descriptors of PID.
fd_count()
{
	local n
	n=$(ls "/proc/$1/fd" 2>/dev/null | wc -l) || n=0
	echo "$n"
}

# fd_min PID: the fewest descriptors PID has over 20 looks 20 ms apart:
# between rows, without a handler's pipes.
fd_min()
{
	local n min=
	for _ in $(seq 1 20); do
		n=$(fd_count "$1")
		[ -n "$min" ] && [ "$min" -le "$n" ] || min=$n
		sleep 0.02
	done
	echo "$min"
}

# descendants PID: every process below PID, one per line.
descendants()
{
	local c
	for c in $(children_of "$1"); do
		echo "$c"
		descendants "$c"
	done
}

# workers_of SUPERVISOR: its worker processes.
workers_of()
{
	children_of "$1"
}

# handlers_of SUPERVISOR: handler processes (children of its workers).
handlers_of()
{
	local w
	for w in $(children_of "$1"); do
		children_of "$w"
	done
}

# row_count 'WHERE': rows of table email matching it.
email_count()
{
	sql_value "SELECT COUNT(*) FROM email WHERE $1"
}

# wait_all_final TIMEOUT: every email row is sent or failed.
wait_all_final()
{
	wait_until "$1" '[ "$(email_count "status = '"'waiting'"'")" = 0 ]'
}

# assert_exactly_once ROWS: the seed article's check and ours.  Every row
# is sent, its done statement ran once (done_count), and SUM(attempts)
# equals the row count, which also catches a double claim whose side
# effects happen to look right.
assert_exactly_once()
{
	local rows=$1
	assert_eq "$rows" "$(email_count "status = 'sent'")" "rows sent"
	assert_eq "$rows" "$(sql_value "SELECT SUM(done_count) FROM email")" "sum of done_count"
	assert_eq 0 "$(email_count "done_count <> 1")" "rows whose done ran other than once"
	assert_eq "$rows" "$(sql_value "SELECT SUM(attempts) FROM email")" "sum of attempts"
}

# no_rowq_transactions: nothing of ours holds a transaction open.
rowq_transactions()
{
	mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B -e \
	    "SELECT COUNT(*) FROM information_schema.INNODB_TRX t
	     JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
	     WHERE p.DB = '$ROWQ_TEST_DB' AND p.USER = '${1:-root}'
	       AND p.ID <> CONNECTION_ID()"
}

# lines LOG PATTERN: how many lines of LOG match the extended regex.
lines()
{
	grep -cE -- "$2" "$1" 2>/dev/null || true
}

# stop_rowq PID: TERM, wait, and fail unless it exits 0.
stop_rowq()
{
	local pid=$1 status=0
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" || status=$?
	untrack_pid "$pid"
	assert_eq 0 "$status" "exit status of rowq $pid after SIGTERM"
}
