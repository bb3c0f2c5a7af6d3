# shellcheck shell=bash
# rowq daemons on hosts of their own: the database server in a namespace
# `db` at 10.91.0.1, reached over TCP from hosts h1, h2, ... (namespaces
# on one bridge, tests/netns.sh), each running a `rowq run` of its own.
# Sourced after lib.sh, email.sh, servers.sh and netns.sh:
#
#     hosts_db_start            # skips (77) where namespaces cannot be made
#     email_table 100
#     host_add h1 10.91.0.11
#     host_config h1.yaml "[$HANDLERS/fake, ok]"
#     host_rowq_start h1 h1.yaml h1.rowq
#
# sql, sql_value and email_table work on that server (its unix socket, as
# root); the daemons log in over TCP as user rowq.

HOSTS_DB_ADDR=10.91.0.1

# hosts_db_start: the db namespace and server `db` in it, listening on
# $HOSTS_DB_ADDR:3306; a database for the test and user rowq@'%' for it.
hosts_db_start()
{
	net_require
	net_host db "$HOSTS_DB_ADDR"
	SERVER_NETNS=$(net_ns db) server_start db \
	    --bind-address="$HOSTS_DB_ADDR" --port=3306
	ROWQ_TEST_SOCKET=$(server_sock db)
	export ROWQ_TEST_SOCKET
	db_create
	server_sql db "CREATE USER rowq@'%' IDENTIFIED BY 'rowq-pw';
	    GRANT ALL ON \`$ROWQ_TEST_DB\`.* TO rowq@'%'"
	printf 'rowq-pw\n' >"$ROWQ_TEST_TMP/db.password"
	chmod 600 "$ROWQ_TEST_TMP/db.password"
}

# host_add NAME ADDRESS: a host on the db namespace's bridge.
host_add()
{
	net_host "$@"
}

# host_config FILE EXEC [KEY: VALUE...]: email_config's queue, the
# database reached over TCP as rowq.  EXEC given as `pipe: [...]` makes
# the handler a pipe handler.
host_config()
{
	local file=$1 exec=$2
	shift 2
	email_config "$file" "${exec#pipe: }" "$@"
	[ "$exec" = "${exec#pipe: }" ] ||
	    sed -i 's|^    exec: |    pipe: |' "$file"
	sed -i -e "s|^  socket: .*|  host: $HOSTS_DB_ADDR\\n  port: 3306|" \
	    -e "s|^  user: root|  user: rowq\\n  password_file: $ROWQ_TEST_TMP/db.password|" \
	    "$file"
}

# host_rowq_start NAME CONFIG LOG: `rowq run` in NAME's namespace, in the
# background and tracked; sets ROWQ_PID (rowq itself: net_exec execs).
host_rowq_start()
{
	net_exec "$1" "$ROWQ" -c "$2" run >"$3" 2>&1 &
	ROWQ_PID=$!
	track_pid "$ROWQ_PID"
}

# host_sessions ADDRESS: the server's sessions of user rowq from ADDRESS.
host_sessions()
{
	server_value db "SELECT COUNT(*) FROM information_schema.PROCESSLIST
	    WHERE USER = 'rowq' AND HOST LIKE '$1:%'"
}
