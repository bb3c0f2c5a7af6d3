# shellcheck shell=bash
# rowq daemons on hosts of their own: the database server in a namespace
# `db` at 10.91.0.1, reached over TCP with TLS (verify: full, a client
# certificate) from hosts h1, h2, ... (namespaces on one bridge,
# tests/netns.sh), each running a `rowq run` of its own.  Sourced after
# lib.sh, email.sh, servers.sh, netns.sh, tls.sh and tcp.sh:
#
#     hosts_db_start            # skips (77) where namespaces cannot be made
#     email_table 100
#     host_add h1 10.91.0.11
#     host_config h1.yaml "[$HANDLERS/fake, ok]"
#     host_rowq_start h1 h1.yaml h1.rowq
#
# sql, sql_value and email_table work on that server (its unix socket, as
# root); the daemons log in over TCP as user rowq (tests/tcp.sh).

HOSTS_DB_ADDR=10.91.0.1
HOSTS_TLS=$ROWQ_TEST_TMP/tls

# hosts_db_start: the db namespace and server `db` in it, listening on
# $HOSTS_DB_ADDR:3306 with a certificate for that address; the test's
# database and user rowq@'%', who must show a client certificate.
hosts_db_start()
{
	net_require
	net_host db "$HOSTS_DB_ADDR"
	tls_certs "$HOSTS_TLS" "$HOSTS_DB_ADDR"
	SERVER_NETNS=$(net_ns db) server_start db \
	    --bind-address="$HOSTS_DB_ADDR" --port=3306 \
	    --ssl-ca="$HOSTS_TLS/ca.pem" --ssl-cert="$HOSTS_TLS/server.pem" \
	    --ssl-key="$HOSTS_TLS/server-key.pem"
	ROWQ_TEST_SOCKET=$(server_sock db)
	export ROWQ_TEST_SOCKET
	db_create
	tcp_user db REQUIRE X509
}

# host_add NAME ADDRESS: a host on the db namespace's bridge.
host_add()
{
	net_host "$@"
}

# host_config FILE EXEC [KEY: VALUE...]: email_config's queue, the
# database reached over TCP with TLS, the server's certificate checked
# against its address.  EXEC given as `pipe: [...]` makes the handler a
# pipe handler.  Its status socket is FILE with .sock for .yaml.
host_config()
{
	local file=$1 exec=$2
	shift 2
	email_config "$file" "${exec#pipe: }" "$@"
	[ "$exec" = "${exec#pipe: }" ] ||
	    sed -i 's|^    exec: |    pipe: |' "$file"
	tcp_config "$file" "$HOSTS_DB_ADDR:3306" "tls: {ca: $HOSTS_TLS/ca.pem, cert: $HOSTS_TLS/client.pem, key: $HOSTS_TLS/client-key.pem, verify: full}"
	# Not /run/rowq/NAME.sock, which another test's h1.yaml may hold.
	sed -i "s|^queues:|status_socket: ${file%.yaml}.sock\nqueues:|" "$file"
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
