#!/usr/bin/env bash
# The rig the multi-host tests stand on (tests/servers.sh, netns.sh,
# tls.sh): a server of the test's own in a namespace of its own, reached
# over TCP with TLS from another namespace, the link between them cut and
# restored, the server killed and started again.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/netns.sh"
. "$TESTS_DIR/tls.sh"
net_require

net_host db 10.91.0.1
net_host h1 10.91.0.11
t=$ROWQ_TEST_TMP/tls
tls_certs "$t" 10.91.0.1 localhost
SERVER_NETNS=$(net_ns db) server_start a --bind-address=10.91.0.1 \
    --port=3306 --ssl-ca="$t/ca.pem" --ssl-cert="$t/server.pem" \
    --ssl-key="$t/server-key.pem"
server_sql a "CREATE USER u@'%' IDENTIFIED BY 'pw' REQUIRE SSL;
    GRANT ALL ON *.* TO u@'%'"

# h1's client: TCP to the db namespace, the server's name verified.
h1_sql()
{
	ip netns exec "$(net_ns h1)" mariadb --no-defaults -h 10.91.0.1 -uu \
	    -ppw --connect-timeout=2 --ssl-ca="$t/ca.pem" \
	    --ssl-verify-server-cert -N -B -e "$1"
}

cipher=$(h1_sql "SHOW STATUS LIKE 'Ssl_cipher'" | cut -f2)
assert_match '^TLS' "$cipher" "cipher of h1's session"
# The db namespace has its own link and loopback only.
assert_eq "eth0 lo" "$(ip -n "$(net_ns db)" -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort | tr '\n' ' ' | sed 's/ $//')" \
    "links in the db namespace"

net_cut h1
if timeout 5 bash -c "$(declare -f h1_sql); t=$t; h1_sql 'SELECT 1'" \
    >/dev/null 2>&1; then
	fail "h1 reached the server through a cut link"
fi
net_restore h1
assert_eq back "$(h1_sql "SELECT 'back'")" "h1 after the link is restored"

server_kill9 a
server_restart a
assert_eq 42 "$(server_value a 'SELECT 42')" "server a after kill -9"

# A server with no options of the test's own; one_value names the query.
server_start plain
assert_eq 7 "$(server_value plain 'SELECT 7')" "server plain"
if (server_value plain 'SELECT 1, 2') 2>two.err; then
	fail "server_value took two columns"
fi
assert_match "expected one value from: server plain: SELECT 1, 2; got" \
    "$(cat two.err)" "server_value's message"
