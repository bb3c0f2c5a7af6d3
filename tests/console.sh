# shellcheck shell=bash
# The web console, for integration tests.  Sourced after lib.sh and
# email.sh, once db_create has run.
#
#   console_users FILE       alice (operator, password alice-password)
#                            and victor (viewer, victor-password)
#   console_config FILE PORT [QUEUE KEY: VALUE...]
#                            email_config with failed_select:, requeue:,
#                            discard:, a status socket in $ROWQ_TEST_TMP
#                            and console: on 127.0.0.1:PORT
#   console_login JAR USER   log in with the form; the cookie in JAR
#   console_csrf JAR PATH    the CSRF token of the page at PATH
#   console_up               wait until the console at $CONSOLE answers
#   console_post_login FROM USER PASSWORD
#                            the login form from address FROM: "CODE RETRY-AFTER"

console_users()
{
	{
		printf 'alice-password\n' | "$ROWQ" console-user alice --role operator
		printf 'victor-password\n' | "$ROWQ" console-user victor
	} >"$1" || fail "rowq console-user"
	chmod 600 "$1"
}

console_config()
{
	local file=$1 port=$2
	shift 2
	console_users "$ROWQ_TEST_TMP/console.users"
	email_config "$file" "${CONSOLE_EXEC:-[/bin/true]}" \
		"failed_select: SELECT id, recipient, attempts, last_error FROM email WHERE status = 'failed' ORDER BY id DESC" \
		"requeue: UPDATE email SET status = 'waiting', attempts = 0, retry_at = NULL, last_error = NULL WHERE id = :id AND status = 'failed'" \
		"discard: DELETE FROM email WHERE id = :id AND status = 'failed'" \
		"failed_count: SELECT COUNT(*) FROM email WHERE status = 'failed'" \
		"$@"
	sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nconsole:\n  listen: 127.0.0.1:$port\n  users_file: $ROWQ_TEST_TMP/console.users\nqueues:|" "$file"
}

# console_curl ARGS...: curl with bounds, never failing on an HTTP status.
console_curl()
{
	curl -s --max-time 10 "$@"
}

console_login()
{
	local jar=$1 user=$2
	rm -f "$jar"
	[ "$(console_curl -c "$jar" -o /dev/null -w '%{http_code}' \
	    --data-urlencode "user=$user" --data-urlencode "password=$user-password" \
	    "$CONSOLE/login")" = 303 ] || fail "login as $user at $CONSOLE"
}

console_csrf()
{
	console_curl -b "$1" "$CONSOLE$2" |
	    sed -n 's/.*name="csrf" value="\([0-9a-f]*\)".*/\1/p' | head -n 1
}

# console_up: wait for the console at $CONSOLE to serve its login page.
console_up()
{
	wait_until 15 '[ "$(console_curl -o /dev/null -w "%{http_code}" "$CONSOLE/login")" = 200 ]' ||
	    fail "no console at $CONSOLE"
}

# console_post_login FROM USER PASSWORD [CURL ARGS...]: the login form
# posted from source address FROM (any 127.x.y.z is this machine's
# loopback); prints the status and the Retry-After header, "403 " or
# "429 8".
console_post_login()
{
	local from=$1 user=$2 password=$3
	shift 3
	console_curl --interface "$from" -o /dev/null \
	    -w '%{http_code} %header{retry-after}' "$@" \
	    --data-urlencode "user=$user" --data-urlencode "password=$password" \
	    "$CONSOLE/login"
}
