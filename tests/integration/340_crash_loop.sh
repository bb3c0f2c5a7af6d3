#!/usr/bin/env bash
# A worker that cannot start: the database stops accepting rowq's user (its
# password changed, its connection killed).  The worker exits EX_CONFIG and
# is restarted with growing delays (2 s, 4 s, 8 s: three tries in 12 s,
# not hundreds); every death is logged with its cause; a reload with the
# right password brings it back at once.  The password, given as a
# systemd credential, never shows in argv, ps, an environment or the log;
# ps shows each process's role.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 0
cd "$ROWQ_TEST_TMP"
cfg=$ROWQ_TEST_TMP/rowq.yaml
dbuser=rq_$$_$RANDOM
password=pw-$RANDOM-$RANDOM-not-for-logs
on_exit 'sql "DROP USER IF EXISTS '"'$dbuser'"'@'"'localhost'"'" || true'
sql "CREATE USER '$dbuser'@'localhost' IDENTIFIED BY '$password';
    GRANT SELECT, UPDATE ON \`$ROWQ_TEST_DB\`.* TO '$dbuser'@'localhost'"

mkdir creds
printf '%s\n' "$password" >creds/db.password
chmod 600 creds/db.password
export CREDENTIALS_DIRECTORY=$ROWQ_TEST_TMP/creds
WORKERS=1 email_config "$cfg" "[$HANDLERS/fake, env, $ROWQ_TEST_TMP/env.out]"
sed -i "s/^  user: root$/  user: $dbuser\n  credential: db.password/" "$cfg"
rowq_start "$cfg" rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'

sql "INSERT INTO email (id, recipient, subject, body) VALUES (1, 'a@example.com', 's', '')"
wait_until 10 '[ "$(sql_value "SELECT status FROM email WHERE id = 1")" = sent ]' || fail "row 1 not done"
worker=$(children_of "$ROWQ_PID")

# ps: the role of each process, and no password anywhere.
assert_eq "rowq: supervisor" "$(ps -o args= -p "$ROWQ_PID" | sed 's/ *$//')" "supervisor's title"
wait_until 5 '[ "$(ps -o args= -p "$worker" | sed "s/ *$//")" = "rowq: email worker 1 (idle)" ]' ||
	fail "worker's title: '$(ps -o args= -p "$worker")'"
for p in "$ROWQ_PID" "$worker"; do
	for f in cmdline environ; do
		! grep -aq -- "$password" /proc/"$p"/$f || fail "password in /proc/$p/$f"
	done
done
ps -eo args >ps.out
! grep -q -- "$password" ps.out || fail "password in ps"
! grep -q -- "$password" env.out || fail "password in the handler's environment"

# The database refuses the user from now on; the worker's link is cut.
sql "ALTER USER '$dbuser'@'localhost' IDENTIFIED BY 'another-$password'"
for id in $(sql "SELECT id FROM information_schema.processlist WHERE user = '$dbuser'"); do
	sql "KILL CONNECTION $id" || true
done
wait_until 10 'grep -q "died (exit status 78" rowq.log' || fail "the worker did not die of the refusal"
sleep 12
deaths=$(grep -c "email worker 1 died (exit status 78" rowq.log)
echo "$deaths deaths in 12 s; delays: $(grep -o 'restarting in [0-9a-z]*' rowq.log | cut -d' ' -f3 | tr '\n' ' ')"
assert_ge "$deaths" 3 "restarts of a refused worker in 12 s"
assert_le "$deaths" 4 "restarts of a refused worker in 12 s"
kill -0 "$ROWQ_PID" || fail "rowq died"
assert_eq "2s 4s 8s" "$(grep -o 'restarting in [0-9a-z]*' rowq.log | head -3 | cut -d' ' -f3 | tr '\n' ' ' | sed 's/ $//')" "restart delays"
assert_match "email worker 1 died \(exit status 78, EX_CONFIG: .*\) after [0-9.a-z]+; restarting in 2s" "$(cat rowq.log)" "a death and its cause"
# The times between deaths grow too, as measured.
gaps=$(grep "email worker 1 died" rowq.log | head -3 | awk '{ split($2, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]; if (NR > 1) printf "%d ", (s - p) * 1000; p = s }')
read -r gap1 gap2 <<<"$gaps"
assert_ge "$gap1" 1800 "ms between the first two deaths"
assert_ge "$gap2" $((gap1 + 1000)) "ms between the second and third deaths (first: $gap1)"

# The password is fixed: a reload starts a worker at once, which works.
sql "ALTER USER '$dbuser'@'localhost' IDENTIFIED BY '$password'"
sql "INSERT INTO email (id, recipient, subject, body) VALUES (2, 'b@example.com', 's', '')"
kill -HUP "$ROWQ_PID"
wait_until 8 '[ "$(sql_value "SELECT status FROM email WHERE id = 2")" = sent ]' ||
	fail "row 2 not done after the reload"
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"
! grep -q -- "$password" rowq.log || fail "password in the log"
