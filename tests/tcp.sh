# shellcheck shell=bash
# rowq over TCP to servers of a test's own (tests/servers.sh).  Sourced
# after email.sh and servers.sh:
#
#     tcp_user a                 # user rowq, password in $TCP_PASSWORD_FILE
#     tcp_config FILE HOSTS [TLS]
#
# The user has no SUPER and no READ ONLY ADMIN, so that read_only holds
# for it as it does for an application's.

TCP_PASSWORD_FILE=$ROWQ_TEST_TMP/tcp-password

# tcp_user NAME [REQUIRE ...]: user rowq@'%' on server NAME, with every
# right on the test's database only.
tcp_user()
{
	local name=$1
	shift
	printf 'rowq-pw\n' >"$TCP_PASSWORD_FILE"
	chmod 600 "$TCP_PASSWORD_FILE"
	server_sql "$name" "CREATE DATABASE IF NOT EXISTS \`$ROWQ_TEST_DB\`;
	    CREATE USER IF NOT EXISTS rowq@'%' IDENTIFIED BY 'rowq-pw' $*;
	    GRANT ALL ON \`$ROWQ_TEST_DB\`.* TO rowq@'%'"
}

# tcp_config FILE HOSTS [TLS]: email_config's file (already written) with
# its database: over TCP: HOSTS as host: (a scalar or a flow sequence),
# TLS a tls: entry as it goes under database:, if any.
tcp_config()
{
	local file=$1 hosts=$2 tls=${3:-} tmp
	tmp=$(mktemp "$file.XXXXXX")
	awk -v hosts="$hosts" -v tls="$tls" -v pw="$TCP_PASSWORD_FILE" '
	    /^database:/ { print; indb = 1
		print "  host: " hosts; print "  user: rowq"
		print "  password_file: " pw
		if (tls != "") print "  " tls
		next }
	    indb && /^  / && !/^  name:/ { next }
	    /^[^ ]/ { indb = 0 }
	    { print }' "$file" >"$tmp"
	mv "$tmp" "$file"
}

# tcp_pair: servers p (primary, binary log) and r (its replica,
# read_only) on 127.0.0.1, ports $P_PORT and $R_PORT; user rowq and the
# email table with $1 rows on p, replicated to r.
tcp_pair()
{
	P_PORT=$(free_port)
	R_PORT=$(free_port)
	server_start p --bind-address=127.0.0.1 --port="$P_PORT" --server-id=1 \
	    --log-bin --binlog-format=ROW
	server_start r --bind-address=127.0.0.1 --port="$R_PORT" --server-id=2 \
	    --read-only
	server_replicate r p "$P_PORT"
	tcp_user p
	ROWQ_TEST_SOCKET=$(server_sock p) email_table "$1"
	server_caught_up r p
}

# tcp_done SERVER: how many rows of email are sent on SERVER.
tcp_done()
{
	server_value "$1" "SELECT COUNT(*) FROM email WHERE status = 'sent'" \
	    "$ROWQ_TEST_DB"
}
