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
# ROWQ_TEST_SERVER picks the server the tests run against:
#     mariadb        the host's MariaDB (Debian 12's 10.11), the default
#     mariadb-11.8   MariaDB 11.8 (Debian 13's), in a chroot
#     mysql-9.7      MySQL 9.7 (Debian sid's), in a chroot
# tests/chroot-server.sh builds a chroot the first time it is needed
# (ROWQ_TEST_SERVER_ROOT, when set, names another chroot to run that kind
# from, with the same server: check-deb-trixie.sh's Debian 13).  A
# test that must know asks server_family (mariadb or mysql) or
# server_version, and skips where it cannot hold with skip_on_server.
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

ROWQ_TEST_SERVER=${ROWQ_TEST_SERVER:-mariadb}
case $ROWQ_TEST_SERVER in
mariadb) _lib_family=mariadb _lib_server_bin=mariadbd ;;
mariadb-11.8) _lib_family=mariadb _lib_server_bin=mariadbd ;;
mysql-9.7) _lib_family=mysql _lib_server_bin=mysqld ;;
*)
	echo "lib.sh: ROWQ_TEST_SERVER=$ROWQ_TEST_SERVER: not one of mariadb, mariadb-11.8, mysql-9.7" >&2
	exit 2
	;;
esac
export ROWQ_TEST_SERVER
# The chroot of a server that is not the host's (_lib_server_root).
_lib_root=

if [ -z "${ROWQ_TEST_TMP:-}" ]; then
	# Keep it short: the server's socket lives here, and sun_path has
	# room for 107 bytes only.
	ROWQ_TEST_TMP=$(mktemp -d /tmp/rowq-test.XXXXXX)
	_lib_own_tmp=$ROWQ_TEST_TMP
fi
export ROWQ_TEST_TMP

# Options for a disposable server: small, fast, and room for many workers.
# Durability does not matter, and no binary log is needed.  They are
# MariaDB's; _lib_server_args says them to MySQL and adds each family's
# own.
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

# server_family: mariadb or mysql, the family of ROWQ_TEST_SERVER.
server_family()
{
	echo "$_lib_family"
}

# server_version: the version of the server at $ROWQ_TEST_SOCKET (after
# db_start), its numbers only: 10.11.6, 11.8.3, 9.7.4.
server_version()
{
	local v
	v=$(mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B \
	    -e 'SELECT VERSION()') || fail "no server at $ROWQ_TEST_SOCKET"
	echo "${v%%-*}"
}

# skip_on_server KIND-OR-FAMILY 'WHY': end the test as skipped (77), WHY
# its last line (the runner shows it), when ROWQ_TEST_SERVER is KIND
# (mysql-9.7, mariadb-11.8, mariadb) or of FAMILY (mysql, mariadb).  Only
# for what cannot hold on that server; where rowq refuses a setting there
# with a message, the test should assert the message instead.
skip_on_server()
{
	[ "$1" = "$ROWQ_TEST_SERVER" ] || [ "$1" = "$_lib_family" ] ||
	    return 0
	echo "skipped on $ROWQ_TEST_SERVER: $2" >&2
	exit 77
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on now, for a
# server or listener of a test's own (tests run side by side: no fixed
# ports).  Taken below the kernel's ephemeral range, which the port bound
# to 0 would come from: an outgoing connection (a client of another test)
# may take such a port between this choice and the listener's bind.
free_port()
{
	python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(1000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randint(10000, low - 1) if low > 11000 else 0))
    except OSError:
        continue
    print(s.getsockname()[1])
    break
PY
}

# seq_rows N: a derived table of one column, seq, the numbers 1 to N in
# that order, for either family (MariaDB's seq_1_to_N tables are its
# own): INSERT INTO t (id) SELECT seq FROM $(seq_rows 100).  Its recursive
# query goes N deep, which the servers lib.sh and servers.sh start allow
# (a server of the user's own may stop it at 1,000 and say so).
seq_rows()
{
	echo "(WITH RECURSIVE seq_rows (seq) AS (SELECT CAST(1 AS SIGNED)" \
	    "FROM DUAL WHERE 1 <= $1 UNION ALL SELECT seq + 1 FROM seq_rows" \
	    "WHERE seq < $1) SELECT seq FROM seq_rows) AS seq_rows"
}

_lib_ping()
{
	mariadb-admin --no-defaults -S "$1" -uroot ping >/dev/null 2>&1
}

# _lib_server_root: make sure the chroot of ROWQ_TEST_SERVER is built (a
# minute or two the first time) and set _lib_root to it, or to
# ROWQ_TEST_SERVER_ROOT; nothing for the host's.
_lib_server_root()
{
	[ "$ROWQ_TEST_SERVER" != mariadb ] && [ -z "$_lib_root" ] || return 0
	_lib_root=${ROWQ_TEST_SERVER_ROOT:-}
	[ -z "$_lib_root" ] || return 0
	_lib_root=$(bash "$TESTS_DIR/chroot-server.sh" "$ROWQ_TEST_SERVER") ||
	    fail "no chroot for $ROWQ_TEST_SERVER (tests/chroot-server.sh)"
}

# _lib_server_exec NETNS PROGRAM ARG...: exec PROGRAM (the server, or the
# tool that makes its data directory) of ROWQ_TEST_SERVER in a session of
# its own, in network namespace NETNS unless that is empty.  A chroot's
# program runs in a mount namespace of its own where the host's /tmp is
# the chroot's /tmp: paths under /tmp, the socket's among them, are the
# same for it as for the host's clients.  Every step execs, so that the
# pid of `_lib_server_exec ... &` is the server's.
_lib_server_exec()
{
	local ns=() root=()
	[ -z "$1" ] || ns=(ip netns exec "$1")
	shift
	if [ -n "$_lib_root" ]; then
		# shellcheck disable=SC2016 # for sh -c, which gets them as $0 and $@
		root=(unshare --mount --propagation private sh -c
		    'mount --bind /tmp "$0/tmp" && mount -t proc proc "$0/proc" &&
			exec chroot "$0" "$@"' "$_lib_root")
	fi
	exec setsid "${ns[@]}" "${root[@]}" "$@"
}

# _lib_server_args OPTION...: _lib_args, the server's options: its
# family's own, DB_SERVER_OPTS, then OPTIONs (which win), in its family's
# words (MySQL's redo log is one size, innodb_redo_log_capacity).
# The recursive queries of seq_rows may go deep; MySQL is told where its
# files may be written (its default directory is not in the chroot), and
# not to listen for its X protocol.  A server has TLS when it is given a
# certificate (--ssl-cert) and not otherwise, as MariaDB 10.11 does: MySQL
# and MariaDB 11.8 would make one of their own.
_lib_server_args()
{
	local o tls=
	_lib_args=()
	case $_lib_family in
	mariadb) _lib_args=(--max-recursive-iterations=4294967295) ;;
	mysql) _lib_args=(--cte-max-recursion-depth=4294967295 --mysqlx=OFF
	    --secure-file-priv=) ;;
	esac
	for o in "${DB_SERVER_OPTS[@]}" "$@"; do
		case $_lib_family:$o in
		mysql:--innodb-log-file-size=*)
			o=--innodb-redo-log-capacity=${o#*=} ;;
		*:--ssl-cert=*)
			tls=1 ;;
		esac
		_lib_args+=("$o")
	done
	if [ -z "$tls" ]; then
		case $_lib_family in
		mariadb) _lib_args+=(--skip-ssl) ;;
		mysql) _lib_args+=(--tls-version=) ;;
		esac
	fi
}

# _lib_server_init DIR: a data directory DIR/data for ROWQ_TEST_SERVER,
# root without a password on the socket; what it said in DIR/install.log.
_lib_server_init()
{
	local dir=$1 user=()
	[ "$(id -u)" -ne 0 ] || user=(--user=root)
	_lib_server_root
	[ -z "$_lib_root" ] || [[ $dir == /tmp/* ]] ||
	    fail "a server in a chroot keeps its files under /tmp, not in $dir"
	_lib_server_args
	if [ "$_lib_family" = mysql ]; then
		(_lib_server_exec "" mysqld --no-defaults --initialize-insecure \
		    --datadir="$dir/data" "${user[@]}" --tmpdir="$dir" \
		    "${_lib_args[@]}")
	else
		(_lib_server_exec "" mariadb-install-db --no-defaults \
		    --datadir="$dir/data" "${user[@]}" \
		    --auth-root-authentication-method=normal --skip-test-db \
		    --tmpdir="$dir" "${_lib_args[@]}")
	fi </dev/null >"$dir/install.log" 2>&1 || {
		tail -n 30 "$dir/install.log" >&2
		fail "could not make a $ROWQ_TEST_SERVER data directory in $dir/data; the end of its log is above"
	}
}

# _lib_server_run NETNS DIR SOCKET PIDFILE OPTION...: exec the server on
# DIR/data, its error log DIR/error.log, with _lib_server_args OPTIONs;
# for `_lib_server_run ... &`, whose $! is then the server itself.
_lib_server_run()
{
	local netns=$1 dir=$2 sock=$3 pidfile=$4 user=()
	shift 4
	[ "$(id -u)" -ne 0 ] || user=(--user=root)
	_lib_server_root
	_lib_server_args "$@"
	_lib_server_exec "$netns" "$_lib_server_bin" --no-defaults \
	    --datadir="$dir/data" --socket="$sock" --pid-file="$pidfile" \
	    --log-error="$dir/error.log" --tmpdir="$dir" "${user[@]}" \
	    "${_lib_args[@]}" </dev/null >/dev/null 2>&1
}

# _lib_server_up PID SOCKET ERRORLOG WHAT: wait (SERVER_START_WAIT s,
# default 120) until the server PID answers on SOCKET; if it dies or
# does not answer, fail with the end of its log.
_lib_server_up()
{
	local pid=$1 sock=$2
	if ! wait_until "${SERVER_START_WAIT:-120}" \
	    '_lib_ping "$sock" || ! _lib_alive "$pid"' ||
	    ! _lib_ping "$sock"; then
		tail -n 30 "$3" >&2 2>/dev/null || true
		fail "$4 did not start; the end of its log is above"
	fi
}

# _lib_server_shutdown SOCKET PID WHAT: shut the server down with SQL's
# SHUTDOWN (MySQL has no COM_SHUTDOWN for mariadb-admin), wait until PID
# is gone, SIGKILL it after 30 s.
_lib_server_shutdown()
{
	local pid=$2
	mariadb --no-defaults -S "$1" -uroot -e SHUTDOWN >/dev/null 2>&1 || true
	if ! wait_until 30 '! _lib_alive "$pid"'; then
		echo "$ROWQ_TEST_NAME: $3 ($pid) ignored shutdown; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
}

# db_start: reuse the server at $ROWQ_TEST_SOCKET if it answers, or start a
# private one in $ROWQ_TEST_TMP/db that db_stop (or exit) shuts down.
db_start()
{
	local dir sock

	if [ -n "${ROWQ_TEST_SOCKET:-}" ] && _lib_ping "$ROWQ_TEST_SOCKET"; then
		export ROWQ_TEST_SOCKET
		return 0
	fi
	dir=$ROWQ_TEST_TMP/db
	sock=$dir/mysqld.sock
	[ "${#sock}" -lt 108 ] ||
	    fail "socket path too long for a unix socket: $sock"
	mkdir -p "$dir"
	_lib_server_init "$dir"

	# setsid (in _lib_server_exec): a Ctrl-C at the terminal must not
	# reach the server before the clean-up has shut it down properly.
	_lib_server_run "" "$dir" "$sock" "$dir/mariadbd.pid" \
	    --skip-networking &
	_lib_db_pid=$!
	_lib_db_dir=$dir
	_lib_server_up "$_lib_db_pid" "$sock" "$dir/error.log" \
	    "the $ROWQ_TEST_SERVER server"
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
	_lib_server_shutdown "$_lib_db_dir/mysqld.sock" "$_lib_db_pid" \
	    "the $ROWQ_TEST_SERVER server"
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
