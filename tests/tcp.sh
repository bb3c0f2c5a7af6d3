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
