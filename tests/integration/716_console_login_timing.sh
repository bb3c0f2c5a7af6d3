#!/usr/bin/env bash
# A refused login takes the same time whichever name it tried: a wrong
# password for a user whose hash is SHA-512 (fast), for one whose hash is
# yescrypt (slow), and for a name that is no user's; so the time of the
# answer does not tell which names exist.
# serial: it measures times, which other tests' load would blur
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
# Ten users whose hashes are SHA-512, beside alice's and victor's yescrypt.
for i in $(seq 1 10); do
	printf 'sha%d:%s:viewer\n' "$i" "$(openssl passwd -6 "sha$i-password")"
done >>console.users
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
console_up
assert_eq "303 " "$(console_post_login 127.0.0.1 sha1 sha1-password)" "a SHA-512 user logs in"

# ms NAME: the time of one wrong login of NAME (each name tried once, so
# that no wait is owed).
ms()
{
	console_curl -o /dev/null -w '%{time_total}' --data "user=$1&password=wrong-password" \
	    "$CONSOLE/login" | awk '{ printf "%.1f\n", $1 * 1000 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
: >sha.ms
: >ghost.ms
: >yes.ms
for i in $(seq 2 10); do
	ms "sha$i" >>sha.ms
	ms "ghost$i" >>ghost.ms
done
ms alice >>yes.ms
ms victor >>yes.ms
sha=$(median <sha.ms)
ghost=$(median <ghost.ms)
yes=$(median <yes.ms)
echo "figure: a wrong login takes (median, ms): SHA-512 user $sha, yescrypt user $yes, unknown name $ghost"
# Within a factor of 2 of each other, where they were 8 times apart.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a / b : b / a) }'; }
assert_ge "$(ratio "$sha" "$ghost")" 0.5 "SHA-512 user against an unknown name (ratio of times)"
assert_ge "$(ratio "$yes" "$ghost")" 0.5 "yescrypt user against an unknown name (ratio of times)"
