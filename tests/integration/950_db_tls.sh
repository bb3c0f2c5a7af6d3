#!/usr/bin/env bash
# database.tls: over TCP to a server of the test's own that listens on
# 127.0.0.1 and 127.0.0.2, its certificate naming 127.0.0.1 only, its user
# made to show a client certificate (REQUIRE X509).  verify: full (the
# default) connects to 127.0.0.1 and `rowq check` and `rowq status` show
# the cipher, and the daemon's workers finish rows over it; 127.0.0.2 is
# refused under full and taken under ca; a CA that signed nothing here is
# refused; verify: off is warned of.  Bad tls: keys are named by
# file:line: key.  (A server without TLS: 96_db_hosts.sh.)
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/tls.sh"
. "$TESTS_DIR/tcp.sh"
db_start
db_create

t=$ROWQ_TEST_TMP/tls
tls_certs "$t" 127.0.0.1
port=$(free_port)
server_start a --bind-address=127.0.0.1,127.0.0.2 --port="$port" \
    --ssl-ca="$t/ca.pem" --ssl-cert="$t/server.pem" \
    --ssl-key="$t/server-key.pem"
tcp_user a REQUIRE X509
ROWQ_TEST_SOCKET=$(server_sock a) email_table 20

cfg=$ROWQ_TEST_TMP/rowq.yaml
email_config "$cfg" "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/handled]"
# tls_config HOST [TLS KEY: VALUE...]: the test's config over TCP to HOST.
tls_config()
{
	local host=$1 tls
	shift
	tls="tls: {ca: $t/ca.pem, cert: $t/client.pem, key: $t/client-key.pem"
	for kv in "$@"; do tls+=", $kv"; done
	tcp_config "$cfg" "$host:$port" "$tls}"
}

# verify: full, the default: the cipher is shown by check and status.
tls_config 127.0.0.1
out=$("$ROWQ" -c "$cfg" check 2>&1) || fail "check under verify: full: $out"
assert_match "database: 127\.0\.0\.1:$port, TLS cipher [A-Z0-9_-]+, verify full" \
    "$out" "check's line on the link"
out=$("$ROWQ" -c "$cfg" status 2>&1) || fail "status over TLS: $out"
assert_match "database: 127\.0\.0\.1:$port, TLS cipher [A-Z0-9_-]+" "$out" \
    "status's line on the link"
json=$("$ROWQ" -c "$cfg" status --json 2>/dev/null)
python3 -c 'import json, sys; d = json.loads(sys.argv[1])["database"]; assert d["tls_cipher"], d' "$json" ||
    fail "status --json has no cipher: $json"
"$ROWQ" -c "$cfg" drain email -w 2 >"$ROWQ_TEST_TMP/out" 2>&1 ||
    fail "drain over TLS: $(cat "$ROWQ_TEST_TMP/out")"
assert_eq 20 "$(server_value a "SELECT SUM(done_count) FROM email" "$ROWQ_TEST_DB")" \
    "rows done over TLS"
assert_match "email/1: connected to 127\.0\.0\.1:$port, TLS " \
    "$(cat "$ROWQ_TEST_TMP/out")" "a worker's line on its host"

# A certificate for another name: refused under full, taken under ca.
tls_config 127.0.0.2
status=0
out=$("$ROWQ" -c "$cfg" check 2>&1) || status=$?
echo "$out"
assert_eq 1 "$status" "check's exit status, the name not in the certificate"
assert_match "database: cannot connect: .*(certificate|hostname|match)" "$out" \
    "check's error for the wrong name"
tls_config 127.0.0.2 "verify: ca"
out=$("$ROWQ" -c "$cfg" check 2>&1) || fail "check under verify: ca: $out"
assert_match "127\.0\.0\.2:$port, TLS cipher .*, verify ca" "$out" "verify: ca"

# A CA that signed nothing here: refused, with the chain checked alone too.
tls_config 127.0.0.1 "ca: $t/other-ca.pem" "verify: ca"
sed -i "s|ca: $t/ca.pem, ||" "$cfg"
status=0
out=$("$ROWQ" -c "$cfg" check 2>&1) || status=$?
echo "$out"
assert_eq 1 "$status" "check's exit status, an unrelated CA"
assert_match "cannot connect: .*(certificate|verify)" "$out" "the unrelated CA's error"

# verify: off encrypts, and check warns.
tls_config 127.0.0.2 "verify: off"
out=$("$ROWQ" -c "$cfg" check 2>&1) || fail "check under verify: off: $out"
assert_match "TLS cipher .*, verify off" "$out" "verify: off still encrypts"
assert_match "database\.tls\.verify: off: .*taken for the server" "$out" \
    "the warning for verify: off"

# Bad keys, each named by file and line.
tcp_config "$cfg" "127.0.0.1:$port" "tls:
    ca: $t/nowhere.pem
    cert: $t/client.pem
    key: $t
    verify: maybe"
status=0
out=$("$ROWQ" -c "$cfg" check 2>&1) || status=$?
echo "$out"
assert_eq 78 "$status" "check's exit status, bad tls: keys"
assert_match "rowq\.yaml:[0-9]+: database\.tls\.ca: $t/nowhere\.pem: No such file" \
    "$out" "a missing ca:"
assert_match "rowq\.yaml:[0-9]+: database\.tls\.key: $t: not a regular file" \
    "$out" "a key: that is no file"
assert_match "rowq\.yaml:[0-9]+: database\.tls\.verify: expected full, ca or off, not \"maybe\"" \
    "$out" "an unknown verify:"
tcp_config "$cfg" "127.0.0.1:$port" "tls: {cert: $t/client.pem}"
out=$("$ROWQ" -c "$cfg" check 2>&1) && fail "cert: without key: passed"
assert_match "database\.tls\.cert: cert needs key:" "$out" "cert: without key:"
assert_match "database\.tls: verify: full needs ca:" "$out" "full without ca:"
