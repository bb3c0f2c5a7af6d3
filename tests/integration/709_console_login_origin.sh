#!/usr/bin/env bash
# The login form cannot be posted from another site's page: a POST whose
# browser says it comes from elsewhere (Sec-Fetch-Site, or an Origin
# that is not the console's) is refused before its password is looked
# at, so that a page the operator opens cannot spend the wait of the
# console's users (once, every user behind that address); the form posted
# from the console's own page, and a script's POST (no such header),
# log in as before, and wrong passwords from elsewhere at the same
# address hold back only the name they tried.
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
basic() { console_curl -o /dev/null -w '%{http_code}' -u "$1:$1-password" "$CONSOLE/api/status"; }

# A page of evil.example posts wrong logins, as a browser sends them.
for user in alice victor alice; do
	answer=$(console_post_login 127.0.0.1 "$user" wrong-password \
	    -H 'Origin: http://evil.example' -H 'Sec-Fetch-Site: cross-site')
	echo "figure: a cross-site login for $user: $answer"
	assert_eq "403 " "$answer" "a cross-site login for $user"
done
# An older browser sends Origin only; a sibling site is no better.
assert_eq "403 " "$(console_post_login 127.0.0.1 alice wrong-password -H 'Origin: http://evil.example')" \
    "a login with a foreign Origin"
assert_eq "403 " "$(console_post_login 127.0.0.1 alice wrong-password -H 'Origin: null')" \
    "a login with Origin null"
assert_eq "403 " "$(console_post_login 127.0.0.1 alice wrong-password -H 'Sec-Fetch-Site: same-site')" \
    "a login from a sibling site"
page=$(console_curl --data 'user=alice&password=wrong-password' -H 'Sec-Fetch-Site: cross-site' "$CONSOLE/login")
assert_match "another site" "$page" "why a cross-site login is refused"
# None of them counted: alice and victor log in at once, there.
a=$(basic alice)
v=$(basic victor)
echo "figure: Basic after the cross-site logins: alice $a, victor $v"
assert_eq 200 "$a" "alice's Basic after the cross-site logins"
assert_eq 200 "$v" "victor's Basic after the cross-site logins"

# The form from the console's own page, and a script's POST, log in.
assert_eq "303 " "$(console_post_login 127.0.0.1 alice alice-password \
    -H "Origin: $CONSOLE" -H 'Sec-Fetch-Site: same-origin')" "the form from the console's page"
assert_eq "303 " "$(console_post_login 127.0.0.1 victor victor-password \
    -H "Origin: $CONSOLE")" "the form with the console's Origin only"
assert_eq "303 " "$(console_post_login 127.0.0.1 alice alice-password)" "a script's login"

# Another POST from elsewhere, with a good session and its token: refused.
console_login a.jar alice
csrf=$(console_csrf a.jar /queue/email)
assert_eq 403 "$(console_curl -o /dev/null -w '%{http_code}' -b a.jar -H 'Sec-Fetch-Site: cross-site' \
    --data "csrf=$csrf&reason=x" "$CONSOLE/queue/email/pause")" "a cross-site pause"
assert_eq 303 "$(console_curl -o /dev/null -w '%{http_code}' -b a.jar -H 'Sec-Fetch-Site: same-origin' \
    --data "csrf=$csrf" "$CONSOLE/queue/email/wake")" "a wake from the console's page"

# Wrong passwords for a name nobody has, from the same address (a proxy's
# users share it): the others there log in at once.
for i in 1 2 3; do
	assert_eq 403 "$(console_post_login 127.0.0.1 nosuch "wrong-$i" | cut -d' ' -f1)" "wrong login $i for nosuch"
	sleep "$i"
done
assert_eq 200 "$(basic alice)" "alice after wrong logins of another name at her address"
assert_eq 200 "$(basic victor)" "victor after wrong logins of another name at his address"
