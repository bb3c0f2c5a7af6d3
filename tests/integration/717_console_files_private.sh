#!/usr/bin/env bash
# The console's users file and TLS key are read only where the console is
# served: with both readable by root alone (0600, as rowq.yaml(5) asks),
# a producer's user runs `rowq wake` and `rowq status` against the same
# configuration, and its wake is heard; `rowq check` as that user warns
# that it cannot read them and passes; `rowq run` reads them, and refuses
# to start without a users file it can read.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
[ "$(id -u)" = 0 ] || { echo "not root: cannot create users"; exit 77; }
command -v useradd >/dev/null && command -v setpriv >/dev/null ||
	{ echo "no useradd or setpriv"; exit 77; }
db_start
db_create
T=$ROWQ_TEST_TMP
cd "$T"
email_table 0

# A producer's user, unique to this run, removed at exit.
producer=rowqp$$
useradd --system --no-create-home --home-dir "/nonexistent-$producer" \
    --shell /usr/sbin/nologin "$producer" || fail "useradd $producer"
on_exit "userdel $producer 2>/dev/null"
# It must reach the server's socket, this directory and rowq.
restore=()
for d in "$(dirname "$ROWQ_TEST_SOCKET")" "$T"; do
	while [ "$d" != / ]; do
		mode=$(stat -c %a "$d")
		if [ $((8#$mode & 1)) = 0 ]; then
			chmod o+x "$d"
			restore+=("chmod $mode '$d'")
		fi
		d=$(dirname "$d")
	done
done
for r in "${restore[@]}"; do on_exit "$r"; done
mkdir bin
cp "$ROWQ" bin/
chmod 755 bin bin/rowq
as_producer() { setpriv --reuid="$producer" --regid="$producer" --clear-groups bin/rowq "$@"; }

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout console.key -out console.crt \
    >openssl.log 2>&1 || fail "openssl: $(cat openssl.log)"
port=$(free_port)
console_config rowq.yaml "$port"
sed -i "s|^  users_file: .*|&\n  tls: {cert: $T/console.crt, key: $T/console.key}|" rowq.yaml
sed -i 's|^    idle: .*|    idle: 60s|' rowq.yaml
chmod 600 console.users console.key
chmod 644 rowq.yaml console.crt
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
wait_until 15 '[ "$(console_curl --cacert console.crt -o /dev/null -w "%{http_code}" "https://127.0.0.1:$port/login")" = 200 ]' ||
    fail "no console on $port"
# The producer may talk to the daemon's sockets: they are its group's.
wait_until 10 '[ -S rowq.sock ] && [ -S rowq.wake ]' || fail "no status or wake socket"
chgrp "$producer" rowq.sock rowq.wake

# rowq wake: heard, the row worked at once rather than after idle (60 s).
sleep 1
sql "INSERT INTO email (recipient, subject, body) VALUES ('x', 'woken', '')"
status=0
as_producer -c rowq.yaml wake email >wake.out 2>&1 || status=$?
echo "figure: rowq wake as the producer: exit $status: $(tr "\n" " " <wake.out | head -c 400)"
assert_eq 0 "$status" "rowq wake as the producer"
wait_until 10 '[ "$(sql_value "SELECT status FROM email WHERE subject = '"'woken'"'")" = sent ]' ||
    fail "the producer's wake was not heard"

status=0
as_producer -c rowq.yaml status >status.out 2>&1 || status=$?
echo "figure: rowq status as the producer: exit $status"
assert_eq 0 "$status" "rowq status as the producer: $(cat status.out)"
assert_match 'daemon: pid' "$(cat status.out)" "the daemon's line in rowq status"

status=0
as_producer -c rowq.yaml check >check.out 2>&1 || status=$?
echo "figure: rowq check as the producer: exit $status"
assert_eq 0 "$status" "rowq check as the producer: $(cat check.out)"
assert_match "rowq.yaml:[0-9]+: console.users_file: $T/console.users: Permission denied: not checked" \
    "$(cat check.out)" "check's warning for the users file"
assert_match "rowq.yaml:[0-9]+: console.tls.key: $T/console.key: Permission denied: not checked" \
    "$(cat check.out)" "check's warning for the key"
# As root, check reads them.
"$ROWQ" -c rowq.yaml check >root-check.out 2>&1 || fail "check as root: $(cat root-check.out)"
! grep -q 'not checked' root-check.out || fail "check as root: $(cat root-check.out)"

# rowq run reads the users file: without one it can read, it refuses.
sed "s|users_file: .*|users_file: $T/nonexistent.users|" rowq.yaml >gone.yaml
status=0
timeout 20 "$ROWQ" -c gone.yaml run >gone.out 2>&1 || status=$?
assert_eq 78 "$status" "rowq run without its users file"
assert_match "gone.yaml:[0-9]+: console.users_file: $T/nonexistent.users: No such file or directory" \
    "$(cat gone.out)" "why"
