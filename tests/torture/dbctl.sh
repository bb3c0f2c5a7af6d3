# shellcheck shell=bash
# Doing things to the test's own MariaDB server: kill it, start it again on
# the same data directory and socket, freeze and thaw it.  Sourced after
# lib.sh by a test that started a private server:
#
#     unset ROWQ_TEST_SOCKET      # never the shared server of the run
#     db_start
#     db_create
#
# The server is the one lib.sh started (its pid in _lib_db_pid, its files
# in _lib_db_dir); a restarted one is recorded there too, so that lib.sh's
# clean-up shuts down whichever is running at exit.

dbctl_own()
{
	[ -n "${_lib_db_pid:-}" ] && [ -n "${_lib_db_dir:-}" ] ||
	    fail "dbctl: this test did not start its own server"
}

# dbctl_kill9: SIGKILL the server and wait until it is gone.
dbctl_kill9()
{
	dbctl_own
	kill -KILL "$_lib_db_pid"
	wait_until 30 '! _lib_alive "$_lib_db_pid"' ||
	    fail "dbctl: server $_lib_db_pid survived SIGKILL"
	wait "$_lib_db_pid" 2>/dev/null || true
}

# dbctl_start: start the server again as lib.sh does, and wait until it
# answers (InnoDB recovers what the kill left first).
dbctl_start()
{
	local dir=$_lib_db_dir user=()
	dbctl_own
	! _lib_alive "$_lib_db_pid" || fail "dbctl: server $_lib_db_pid still runs"
	[ "$(id -u)" -ne 0 ] || user=(--user=root)
	setsid mariadbd --no-defaults --datadir="$dir/data" \
	    --socket="$dir/mysqld.sock" --pid-file="$dir/mariadbd.pid" \
	    --log-error="$dir/error.log" --tmpdir="$dir" --skip-networking \
	    "${user[@]}" "${DB_SERVER_OPTS[@]}" ${DBCTL_EXTRA_OPTS:-} \
	    </dev/null >/dev/null 2>&1 &
	_lib_db_pid=$!
	if ! wait_until 120 '_lib_ping "$dir/mysqld.sock" || ! _lib_alive "$_lib_db_pid"' ||
	    ! _lib_ping "$dir/mysqld.sock"; then
		tail -n 30 "$dir/error.log" >&2 2>/dev/null || true
		fail "dbctl: the server did not start again"
	fi
}

# dbctl_freeze / dbctl_thaw: SIGSTOP and SIGCONT.
dbctl_freeze()
{
	dbctl_own
	kill -STOP "$_lib_db_pid"
	on_exit 'kill -CONT "$_lib_db_pid" 2>/dev/null || true'
}

dbctl_thaw()
{
	kill -CONT "$_lib_db_pid"
}

# dbctl_kill_connections USER: KILL CONNECTION every session of USER in
# the test's database but our own; prints how many.
dbctl_kill_connections()
{
	local ids id n=0
	ids=$(mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B -e \
	    "SELECT ID FROM information_schema.PROCESSLIST
	     WHERE USER = '$1' AND DB = '$ROWQ_TEST_DB' AND ID <> CONNECTION_ID()")
	for id in $ids; do
		mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -e \
		    "KILL CONNECTION $id" 2>/dev/null && n=$((n + 1))
	done
	echo "$n"
}
