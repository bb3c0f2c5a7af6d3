#!/usr/bin/env bash
# A session is bound to its user's password: once the users file gives
# alice a new password (her role the same) and the daemon reloads, her
# old password is refused, and so is every session it opened: a page
# sends her cookie to the login form, a POST with the session's CSRF
# token is refused and changes nothing.  victor's password did not change:
# his session holds.
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
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
console_up
code() { console_curl -o /dev/null -w '%{http_code}' "$@"; }

console_login a.jar alice
console_login v.jar victor
csrf=$(console_csrf a.jar /queue/email)
[ -n "$csrf" ] || fail "no CSRF token on alice's page"
assert_eq 200 "$(code -b a.jar "$CONSOLE/")" "alice's session before the change"

# alice's new password, the same role; a reload.
users=$ROWQ_TEST_TMP/console.users
{
	grep -v '^alice:' "$users"
	printf 'alice-new-password\n' | "$ROWQ" console-user alice --role operator
} >users.new
cat users.new >"$users"
kill -HUP "$ROWQ_PID"
wait_until 15 '[ "$(code -u alice:alice-new-password "$CONSOLE/api/status")" = 200 ]' ||
    fail "alice's new password is not taken after the reload"
assert_eq 401 "$(code -u alice:alice-password "$CONSOLE/api/status")" "alice's old password"

page=$(code -b a.jar "$CONSOLE/")
post=$(code -b a.jar --data "csrf=$csrf&reason=old+session" "$CONSOLE/queue/email/pause")
# The pause table is made by the first pause.
paused=$(sql "SELECT COUNT(*) FROM rowq_pause" 2>/dev/null) || paused=0
echo "figure: alice's old session after the change: GET / $page, POST pause $post, $paused paused"
assert_eq 303 "$page" "alice's old session loads a page"
assert_match '^40[13]$' "$post" "alice's old session posts a pause"
assert_eq 0 "$paused" "queues paused by the old session"
assert_eq 200 "$(code -b v.jar "$CONSOLE/")" "victor's session, whose password did not change"
grep -q "alice's session ends" rowq.log || fail "the end of alice's session is not logged"
