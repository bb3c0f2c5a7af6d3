#!/usr/bin/env bash
# A user who logs in again and again ends their own oldest sessions, not
# another user's: after 256 logins of the viewer, the operator's session
# still holds, and the viewer's newest do.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
console_config rowq.yaml "$port"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || tail -n 40 "$ROWQ_TEST_TMP/rowq.log"'
console_up
code() { console_curl -o /dev/null -w '%{http_code}' "$@"; }

console_login a.jar alice
console_login first.jar victor
# 255 more in one connection, and the last with its cookie kept.
start=$(now_us)
urls=()
for _ in $(seq 1 255); do
	urls+=("$CONSOLE/login")
done
passed=$(curl -s --max-time 120 -w '%{http_code}\n' --data 'user=victor&password=victor-password' \
    "${urls[@]}" 2>/dev/null | grep -c '^303$' || true)
assert_eq 255 "$passed" "victor's logins that passed"
console_login v.jar victor
echo "figure: 256 logins of victor took $((($(now_us) - start) / 1000)) ms"
a=$(code -b a.jar "$CONSOLE/")
echo "figure: alice's session after them: GET / $a"
assert_eq 200 "$a" "alice's session after 256 logins of victor"
assert_eq 200 "$(code -b v.jar "$CONSOLE/")" "victor's newest session"
assert_eq 303 "$(code -b first.jar "$CONSOLE/")" "victor's first session, his oldest"
