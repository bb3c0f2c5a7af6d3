#!/usr/bin/env bash
# The console over HTTPS (console.tls: cert and key, libmicrohttpd's
# GnuTLS): the login page answers over TLS with the certificate given,
# the session cookie is Secure, HSTS is sent, and plain HTTP on the port
# gets no page.  An address beyond loopback is accepted with tls:, or
# with insecure_listen: true, and refused with neither.
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
tls() { console_curl --cacert console.crt "$@"; }
wait_until 15 '[ "$(tls -o /dev/null -w "%{http_code}" "$CONSOLE/login")" = 200 ]' ||
    fail "no HTTPS console at $CONSOLE"
headers=$(tls -D - -o /dev/null --data 'user=alice&password=alice-password' "$CONSOLE/login")
assert_match 'rowq_session=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict; Secure' "$headers" "a Secure cookie"
assert_match 'Strict-Transport-Security: max-age=' "$headers" "HSTS"
assert_eq 200 "$(tls -o /dev/null -w '%{http_code}' -u victor:victor-password "$CONSOLE/api/status")" "/api/ over TLS"
code=$(console_curl -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/login" || true)
[ "$code" != 200 ] || fail "plain HTTP served a page on the TLS port"
assert_match "console: serving https://127.0.0.1:$port/" "$(cat rowq.log)" "the log says https"

# Beyond loopback: tls: or insecure_listen: true, else refused at load.
sed "s|listen: 127.0.0.1:$port|listen: 0.0.0.0:$port|" rowq.yaml >any.yaml
"$ROWQ" -c any.yaml check >any.out 2>&1 || fail "0.0.0.0 with tls: refused: $(cat any.out)"
sed '/^  tls: /d' any.yaml >plain.yaml
status=0; "$ROWQ" -c plain.yaml check >plain.out 2>&1 || status=$?
assert_eq 78 "$status" "0.0.0.0 without tls:"
assert_match 'console.listen: 0.0.0.0:[0-9]+ is not a loopback address' "$(cat plain.out)" "why"
sed 's|^  listen: .*|&\n  insecure_listen: true|' plain.yaml >insecure.yaml
"$ROWQ" -c insecure.yaml check >insecure.out 2>&1 || fail "insecure_listen: true refused: $(cat insecure.out)"
