#!/usr/bin/env bash
# The wait after a failed login belongs to the name tried and the address
# it came from: a viewer who alternates a guess at the operator's
# password with a correct login of their own waits 1, 2, 4, then 8 s
# between guesses (their own logins do not clear it), while their own
# logins pass meanwhile and the operator logs in at once from another
# address; the operator's wait at the guesser's address is the guesser's.
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

# login FROM USER PASSWORD: the form, waiting as told (Retry-After) when
# it comes too soon, as a guesser would; prints the last answer's status,
# and counts the waits in waited_USER.
login()
{
	local answer tries=0
	while :; do
		answer=$(console_post_login "$1" "$2" "$3")
		[ "${answer%% *}" = 429 ] || break
		tries=$((tries + 1))
		[ "$tries" -le 3 ] || fail "$2 from $1: still 429 after $tries waits"
		echo "$2" >>waited
		sleep "${answer#* }"
	done
	echo "${answer%% *}"
}

# guess N: one guess at alice's password from 127.0.0.1, then victor's
# own login there.
guess()
{
	assert_eq 403 "$(login 127.0.0.1 alice "guess-$1")" "guess $1 at alice's password"
	assert_eq 303 "$(login 127.0.0.1 victor victor-password)" \
	    "victor's own login after guess $1"
}

: >waited
start=$(now_us)
for i in 1 2 3 4; do
	guess "$i"
done
took=$((($(now_us) - start) / 1000))
# The next guess at once: refused, for 8 s (1, 2, 4, 8).
answer=$(console_post_login 127.0.0.1 alice guess-5)
echo "figure: 4 guesses alternated with the viewer's own logins took $took ms; the next: $answer"
assert_eq 429 "${answer%% *}" "a 5th guess at once, after the viewer's own login"
assert_ge "${answer#* }" 7 "s of Retry-After after 4 guesses"
assert_ge "$took" 6500 "ms that 4 guesses took (waits of 1, 2 and 4 s)"
assert_eq 0 "$(grep -c victor waited)" "times victor's own login had to wait"
# Basic at the guesser's address is refused for alice too...
assert_eq 429 "$(console_curl --interface 127.0.0.1 -o /dev/null -w '%{http_code}' \
    -u alice:alice-password "$CONSOLE/api/status")" "alice's Basic at the guesser's address"
# ...but not for victor, nor for alice elsewhere.
assert_eq 200 "$(console_curl --interface 127.0.0.1 -o /dev/null -w '%{http_code}' \
    -u victor:victor-password "$CONSOLE/api/status")" "victor's Basic at the guesser's address"
assert_eq "303 " "$(console_post_login 127.0.0.2 alice alice-password)" "alice from another address"
# A success clears its own wait only: alice's login from 127.0.0.2 left
# the wait at 127.0.0.1 as it was.
assert_eq 429 "$(console_post_login 127.0.0.1 alice guess-6 | cut -d' ' -f1)" \
    "the guesser's wait after alice's login elsewhere"
