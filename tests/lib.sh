# shellcheck shell=bash
# Sourced by every integration test and by run-integration.sh.
#
# A test starts with
#     . "$(dirname "$0")/../lib.sh"
#     db_start
#     db_create
# and then works in $ROWQ_TEST_DB on the server at $ROWQ_TEST_SOCKET, keeps
# its files in $ROWQ_TEST_TMP, and registers every background process with
# track_pid so that it dies with the test, even when the test fails.  The
# same file runs alone (`bash tests/integration/x.sh`, with its own server)
# or under run-integration.sh (one shared server, one database per test).
#
# Tests must not replace the EXIT/INT/TERM traps; use on_exit instead.

set -eu -o pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TESTS_DIR=$REPO_ROOT/tests
HANDLERS=$REPO_ROOT/build/handlers
ROWQ=${ROWQ:-$REPO_ROOT/rowq}
ROWQ_TEST_NAME=${ROWQ_TEST_NAME:-$(basename "$0" .sh)}
export REPO_ROOT TESTS_DIR HANDLERS ROWQ ROWQ_TEST_NAME

# State owned by this shell only; a reused server or temp dir belongs to
# whoever created it and is left alone.
_lib_pids=()
_lib_on_exit=()
_lib_own_tmp=
_lib_db_pid=
_lib_db_dir=
# How long tracked processes get between TERM and KILL at exit.
_lib_kill_wait=3

if [ -z "${ROWQ_TEST_TMP:-}" ]; then
	# Keep it short: the server's socket lives here, and sun_path has
	# room for 107 bytes only.
	ROWQ_TEST_TMP=$(mktemp -d /tmp/rowq-test.XXXXXX)
	_lib_own_tmp=$ROWQ_TEST_TMP
fi
export ROWQ_TEST_TMP

# Options for a disposable server: small, fast, and room for many workers.
# Durability does not matter, and no binary log is needed.
DB_SERVER_OPTS=(
	--innodb-buffer-pool-size=128M
	--innodb-log-file-size=64M
	--innodb-flush-log-at-trx-commit=2
	--max-connections=500
	--skip-log-bin
	--skip-name-resolve
)

# ---- failure reporting -------------------------------------------------

# The test's file and line that called into this library.
_lib_where()
{
	local i=1
	while [ "${BASH_SOURCE[i]}" = "${BASH_SOURCE[0]}" ] &&
	    [ "$i" -lt $((${#BASH_SOURCE[@]} - 1)) ]; do
		i=$((i + 1))
	done
	echo "${BASH_SOURCE[i]##*/}:${BASH_LINENO[i - 1]}"
}

fail()
{
	echo "FAIL $ROWQ_TEST_NAME ($(_lib_where)): $*" >&2
	exit 1
}

# A command that fails under `set -e` would otherwise end the test silently.
trap 'echo "FAIL $ROWQ_TEST_NAME (${BASH_SOURCE[0]##*/}:$LINENO): exit status $? from: $BASH_COMMAND" >&2' ERR

assert_eq()
{
	[ "$1" = "$2" ] ||
	    fail "${3:-values differ}: expected '$1', got '$2'"
}

assert_match()
{
	[[ $2 =~ $1 ]] ||
	    fail "${3:-no match}: '$2' does not match /$1/"
}

_lib_number()
{
	[[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]]
}

# assert_le VALUE LIMIT [MESSAGE]: VALUE <= LIMIT; decimals allowed.
assert_le()
{
	if ! _lib_number "$1" || ! _lib_number "$2"; then
		fail "${3:-assert_le}: not numbers: '$1', '$2'"
	fi
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }' ||
	    fail "${3:-too large}: expected $1 <= $2"
}

# assert_ge VALUE LIMIT [MESSAGE]: VALUE >= LIMIT; decimals allowed.
assert_ge()
{
	if ! _lib_number "$1" || ! _lib_number "$2"; then
		fail "${3:-assert_ge}: not numbers: '$1', '$2'"
	fi
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }' ||
	    fail "${3:-too small}: expected $1 >= $2"
}

# expect_exit STATUS PATTERN ARGS...: `rowq ARGS` exits STATUS, and what it
# prints (standard output and error) matches PATTERN.
expect_exit()
{
	local want=$1 pattern=$2 out status=0
	shift 2
	out=$("$ROWQ" "$@" 2>&1) || status=$?
	assert_eq "$want" "$status" "exit status of rowq $*"
	assert_match "$pattern" "$out" "message of rowq $*"
}

# ---- time ---------------------------------------------------------------

# now_us: microseconds since the epoch, for measuring elapsed time.
now_us()
{
	echo "${EPOCHREALTIME/./}"
}

# wait_until SECONDS 'CONDITION': evaluate CONDITION every 0.1 s until it
# succeeds (return 0) or SECONDS (decimals allowed) have passed (return 1).
# The condition is tried once more at the deadline, so a slow condition
# still gets its last chance.
wait_until()
{
	local int=${1%.*} frac deadline
	frac=${1#"$int"}
	frac=${frac#.}000000
	deadline=$(($(now_us) + 10#${int:-0} * 1000000 + 10#${frac:0:6}))
	while :; do
		if eval "$2"; then
			return 0
		fi
		[ "$(now_us)" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# ---- processes and clean-up -------------------------------------------

# True while PID runs; a zombie does not count.
_lib_alive()
{
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

# True while PID, or the process group it leads, has a live process.
# Zombies do not count: an orphan's may linger where init is slow to reap.
_lib_alive_or_group()
{
	_lib_alive "$1" || ps -e -o pgid=,stat= |
	    awk -v g="$1" '$1 == g && $2 !~ /^Z/ { f = 1 } END { exit !f }'
}

# track_pid PID...: kill PID at exit, and its process group if PID leads
# one (a process started with setsid).  The group is looked up at exit, not
# now, because `setsid cmd &` may not have called setsid() yet.
track_pid()
{
	_lib_pids+=("$@")
}

# untrack_pid PID...: the test has stopped PID itself.
untrack_pid()
{
	local p i
	for p in "$@"; do
		for i in "${!_lib_pids[@]}"; do
			[ "${_lib_pids[i]}" != "$p" ] || unset '_lib_pids[i]'
		done
	done
}

# on_exit 'COMMAND': run COMMAND at exit, before processes are killed
# (e.g. to print a log when the test failed: the exit status is in $?).
on_exit()
{
	_lib_on_exit+=("$1")
}

# kill_wait SECONDS PID...: TERM each PID and the group it leads, wait up to
# SECONDS for all of them to go, then KILL what is left.
kill_wait()
{
	local timeout=$1 p left
	shift
	for p in "$@"; do
		kill -TERM -- "-$p" 2>/dev/null || true
		kill -TERM "$p" 2>/dev/null || true
	done
	left="$*"
	if [ -n "$left" ] &&
	    ! wait_until "$timeout" '_lib_none_alive $left'; then
		for p in "$@"; do
			kill -KILL -- "-$p" 2>/dev/null || true
			kill -KILL "$p" 2>/dev/null || true
		done
	fi
}

_lib_none_alive()
{
	local p
	for p in "$@"; do
		! _lib_alive_or_group "$p" || return 1
	done
}

_lib_cleanup()
{
	local status=$? c
	# A second signal (timeout forwards one, the runner signals the
	# whole group) must not cut the clean-up short.
	trap '' INT TERM
	trap - ERR
	set +e
	for c in "${_lib_on_exit[@]}"; do
		(exit "$status"); eval "$c"
	done
	if [ "${#_lib_pids[@]}" -gt 0 ]; then
		kill_wait "$_lib_kill_wait" "${_lib_pids[@]}"
	fi
	db_stop
	if [ -n "$_lib_own_tmp" ]; then
		rm -rf "$_lib_own_tmp"
	fi
	exit "$status"
}

trap _lib_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the runners' report -----------------------------------------------

# report_test NAME STATUS TOOK LOG [figures]: one line for a test that
# ended with STATUS (0 ok, 77 skipped, else failed, 124/137 timed out
# after $timeout_s), its log when it failed, its "figure:" lines when
# asked; counts it in passed, skipped or failed.
report_test()
{
	local name=$1 status=$2 took=$3 log=$4
	case $status in
	0)
		echo "ok   $name $took"
		[ "${5:-}" != figures ] ||
		    grep '^figure: ' "$log" | sed 's/^figure: /    /'
		passed=$((passed + 1))
		;;
	77)
		echo "skip $name $took: $(tail -n 1 "$log")"
		skipped=$((skipped + 1))
		;;
	*)
		# shellcheck disable=SC2154 # set by the runner that sources us
		[ "$status" -ne 124 ] && [ "$status" -ne 137 ] ||
		    echo "(timed out after $timeout_s s)" >>"$log"
		echo "FAIL $name $took"
		sed 's/^/    /' "$log"
		failed=$((failed + 1))
		;;
	esac
}

# ---- the database server ----------------------------------------------

_lib_ping()
{
	mariadb-admin --no-defaults -S "$1" -uroot ping >/dev/null 2>&1
}

# db_start: reuse the server at $ROWQ_TEST_SOCKET if it answers, or start a
# private one in $ROWQ_TEST_TMP/db that db_stop (or exit) shuts down.
db_start()
{
	local dir sock user=()

	if [ -n "${ROWQ_TEST_SOCKET:-}" ] && _lib_ping "$ROWQ_TEST_SOCKET"; then
		export ROWQ_TEST_SOCKET
		return 0
	fi
	dir=$ROWQ_TEST_TMP/db
	sock=$dir/mysqld.sock
	[ "${#sock}" -lt 108 ] ||
	    fail "socket path too long for a unix socket: $sock"
	mkdir -p "$dir"
	# mariadbd refuses to run as root unless told to.
	[ "$(id -u)" -ne 0 ] || user=(--user=root)

	if ! mariadb-install-db --no-defaults --datadir="$dir/data" \
	    "${user[@]}" --auth-root-authentication-method=normal \
	    --skip-test-db --tmpdir="$dir" "${DB_SERVER_OPTS[@]}" \
	    >"$dir/install.log" 2>&1; then
		cat "$dir/install.log" >&2
		fail "mariadb-install-db failed"
	fi

	# setsid: a Ctrl-C at the terminal must not reach the server before
	# the clean-up has shut it down properly.
	setsid mariadbd --no-defaults --datadir="$dir/data" --socket="$sock" \
	    --pid-file="$dir/mariadbd.pid" --log-error="$dir/error.log" \
	    --tmpdir="$dir" --skip-networking "${user[@]}" \
	    "${DB_SERVER_OPTS[@]}" </dev/null >/dev/null 2>&1 &
	# setsid execs without forking here (a background job does not lead
	# its group), so $! is the server itself: stoppable even if it never
	# writes its pid file.
	_lib_db_pid=$!
	_lib_db_dir=$dir

	if ! wait_until 60 '_lib_ping "$sock" || ! _lib_alive "$_lib_db_pid"' ||
	    ! _lib_ping "$sock"; then
		tail -n 30 "$dir/error.log" >&2 2>/dev/null || true
		fail "MariaDB server did not start; the end of its log is above"
	fi
	[ "$(cat "$dir/mariadbd.pid")" = "$_lib_db_pid" ] ||
	    fail "pid file $dir/mariadbd.pid does not name $_lib_db_pid"
	ROWQ_TEST_SOCKET=$sock
	export ROWQ_TEST_SOCKET
}

# db_stop: shut down the server db_start started, if any; a reused server
# is left running.
db_stop()
{
	[ -n "$_lib_db_pid" ] || return 0
	mariadb-admin --no-defaults -S "$_lib_db_dir/mysqld.sock" -uroot \
	    --shutdown-timeout=30 shutdown >/dev/null 2>&1 || true
	if ! wait_until 30 '! _lib_alive "$_lib_db_pid"'; then
		echo "$ROWQ_TEST_NAME: MariaDB $_lib_db_pid ignored shutdown; killing it" >&2
		kill -KILL "$_lib_db_pid" 2>/dev/null || true
	fi
	_lib_db_pid=
	if [ "${ROWQ_TEST_SOCKET:-}" = "$_lib_db_dir/mysqld.sock" ]; then
		unset ROWQ_TEST_SOCKET
	fi
}

# db_create [NAME]: drop and create database NAME (default: $ROWQ_TEST_DB,
# else t_ and the test's name) and make it the one sql and rowq configs use.
# shellcheck disable=SC2120
db_create()
{
	local name=${1:-${ROWQ_TEST_DB:-t_${ROWQ_TEST_NAME//[^A-Za-z0-9_]/_}}}
	mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -e \
	    "DROP DATABASE IF EXISTS \`$name\`; CREATE DATABASE \`$name\`"
	ROWQ_TEST_DB=$name
	export ROWQ_TEST_DB
}

# not_watcher PID: PID is not the supervisor's wake watcher (which reads
# the pause table too), a child of `rowq run` that is neither a worker nor
# a probe.
not_watcher()
{
	case "$(cat "/proc/$1/comm" 2>/dev/null)" in
	"wake watch") return 1 ;;
	esac
}

# sql 'STATEMENTS': run them in $ROWQ_TEST_DB; rows come out tab-separated,
# without column names.  With no argument the statements are read from
# standard input (a heredoc).
sql()
{
	if [ $# -eq 0 ]; then
		mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B \
		    "$ROWQ_TEST_DB"
	else
		mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B \
		    -e "$1" "$ROWQ_TEST_DB"
	fi
}

# sql_value 'SELECT ...': print the one value the query returns; anything
# but exactly one row of one column fails the test.
sql_value()
{
	local out
	out=$(sql "$1") || fail "query failed: $1"
	one_value "$out" "$1"
}

# one_value OUT QUERY: print OUT, a query's output, if it is exactly one
# row of one column; else fail, naming QUERY.
one_value()
{
	[[ $1 != *$'\n'* && $1 != *$'\t'* && -n $1 ]] ||
	    fail "expected one value from: $2; got: '$1'"
	printf '%s\n' "$1"
}
