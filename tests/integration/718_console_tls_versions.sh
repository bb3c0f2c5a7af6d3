#!/usr/bin/env bash
# The HTTPS console speaks TLS 1.2 and 1.3, never 1.0 or 1.1 (a client
# that offers only those gets no session: openssl s_client, told to allow
# them); with console.tls.min_version: "1.3", not 1.2 either.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout console.key -out console.crt \
    >openssl.log 2>&1 || fail "openssl: $(cat openssl.log)"
chmod 600 console.key
port=$(free_port)
console_config rowq.yaml "$port"
sed -i "s|^  users_file: .*|&\n  tls: {cert: $ROWQ_TEST_TMP/console.crt, key: $ROWQ_TEST_TMP/console.key}|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
CONSOLE=https://127.0.0.1:$port
wait_until 15 '[ "$(console_curl --cacert console.crt -o /dev/null -w "%{http_code}" "$CONSOLE/login")" = 200 ]' ||
    fail "no HTTPS console at $CONSOLE"

# version FLAG: the protocol s_client gets with only FLAG's version
# offered (SECLEVEL=0: OpenSSL would offer none below 1.2 otherwise), or
# "none" when no cipher was agreed: the session's Protocol, or for TLS
# 1.3, which prints none before the session's ticket, the version of the
# cipher.
version()
{
	timeout 10 openssl s_client -connect "127.0.0.1:$port" "$1" \
	    -cipher 'DEFAULT:@SECLEVEL=0' </dev/null 2>/dev/null |
	    awk '$1 == "Protocol" && $2 == ":" { p = $3 }
		$1 == "New," { n = $2; sub(",", "", n) }
		END { print n == "" || n == "(NONE)" ? "none" : p ? p : n }' ||
	    true
}

got=""
for v in -tls1 -tls1_1 -tls1_2 -tls1_3; do
	got="$got $v:$(version "$v")"
done
echo "figure: the console's TLS versions:$got"
assert_eq " -tls1:none -tls1_1:none -tls1_2:TLSv1.2 -tls1_3:TLSv1.3" "$got" \
    "the versions the console speaks"

# min_version: "1.3", and a reload.
sed -i "s|^  tls: {cert: \(.*\)}|  tls: {cert: \1, min_version: \"1.3\"}|" rowq.yaml
"$ROWQ" -c rowq.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
kill -HUP "$ROWQ_PID"
wait_until 15 '[ "$(version -tls1_2)" = none ]' || fail "TLS 1.2 after min_version: \"1.3\": $(version -tls1_2)"
assert_eq TLSv1.3 "$(version -tls1_3)" "TLS 1.3 after min_version: \"1.3\""
assert_eq 200 "$(console_curl --cacert console.crt -o /dev/null -w '%{http_code}' "$CONSOLE/login")" \
    "curl over TLS 1.3"
