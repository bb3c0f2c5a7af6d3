# shellcheck shell=bash
# Doing things to the test's own database server: kill it, start it again on
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
	local dir=$_lib_db_dir extra=()
	dbctl_own
	! _lib_alive "$_lib_db_pid" || fail "dbctl: server $_lib_db_pid still runs"
	# shellcheck disable=SC2206 # options, one word each
	extra=(${DBCTL_EXTRA_OPTS:-})
	_lib_server_run "" "$dir" "$dir/mysqld.sock" "$dir/mariadbd.pid" \
	    --skip-networking "${extra[@]}" &
	_lib_db_pid=$!
	_lib_server_up "$_lib_db_pid" "$dir/mysqld.sock" "$dir/error.log" \
	    "dbctl: the server, started again,"
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
