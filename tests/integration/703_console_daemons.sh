#!/usr/bin/env bash
# Two daemons share the database, each with its console: each console's
# Daemons page (and /api/daemons) lists both, from the daemons table they
# write every 10 s; one killed stops writing, and is shown as gone once
# its row is 30 s old; a row of a daemon gone a day is removed.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "CREATE TABLE rowq_daemons (host VARCHAR(255) NOT NULL, pid INT UNSIGNED NOT NULL,
    version VARCHAR(32) NOT NULL, started DATETIME NOT NULL, busy INT UNSIGNED NOT NULL,
    workers INT UNSIGNED NOT NULL, console VARCHAR(255) NOT NULL DEFAULT '',
    seen DATETIME NOT NULL, PRIMARY KEY (host, pid)) ENGINE=InnoDB"
sql "INSERT INTO rowq_daemons VALUES ('old-host', 4242, '0.0.9', NOW() - INTERVAL 3 DAY, 0, 1, '', NOW() - INTERVAL 2 DAY)"
pa=$(free_port)
pb=$(free_port)
console_config a.yaml "$pa"
console_config b.yaml "$pb"
sed -i "s|$ROWQ_TEST_TMP/rowq.sock|$ROWQ_TEST_TMP/b.sock|" b.yaml
rowq_start a.yaml a.log
apid=$ROWQ_PID
rowq_start b.yaml b.log
bpid=$ROWQ_PID
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP/a.log" "$ROWQ_TEST_TMP/b.log"'
daemons() { console_curl -u victor:victor-password "http://127.0.0.1:$1/api/daemons"; }
# pids and states from a console's /api/daemons: "PID:live PID:gone".
states()
{
	daemons "$1" | python3 -c 'import json,sys
print(" ".join("%d:%s" % (d["pid"], "gone" if d["gone"] else "live")
    for d in sorted(json.load(sys.stdin)["daemons"], key=lambda d: d["pid"])))' 2>/dev/null
}
both="$(printf '%s\n' "$apid:live" "$bpid:live" | sort -t: -k1n | tr '\n' ' ' | sed 's/ $//')"
for p in "$pa" "$pb"; do
	wait_until 20 '[ "$(states "$p")" = "$both" ]' ||
	    fail "the console on $p lists '$(states "$p")', not '$both'"
done
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM rowq_daemons WHERE host = 'old-host'")" "the row of a daemon gone 2 days is removed"
CONSOLE=http://127.0.0.1:$pa
console_login a.jar alice
page=$(console_curl -b a.jar "$CONSOLE/daemons")
assert_match "<td class=\"n\">$bpid</td>" "$page" "the Daemons page lists the other daemon"
assert_match "<td>$("$ROWQ" --version | cut -d" " -f2)</td>" "$page" "with its version"

# B dies (its console with it): its row stops; A's goes on.
kill -KILL "$bpid"
untrack_pid "$bpid"
wait_until 10 '! daemons "$pb" >/dev/null 2>&1 || [ -z "$(daemons "$pb")" ]' ||
    fail "B's console outlived it"
seen() { sql_value "SELECT UNIX_TIMESTAMP(seen) FROM rowq_daemons WHERE pid = $1"; }
b0=$(seen "$bpid")
# shellcheck disable=SC2034 # read by wait_until's eval
a0=$(seen "$apid")
wait_until 15 '[ "$(seen "$apid")" -gt "$a0" ]' || fail "A's row is not written again"
assert_eq "$b0" "$(seen "$bpid")" "B's row is no longer written"
# Three intervals without a word: gone.  (Aged here rather than waited for.)
sql "UPDATE rowq_daemons SET seen = seen - INTERVAL 30 SECOND WHERE pid = $bpid"
wait_until 5 '[[ "$(states "$pa")" == *"$bpid:gone"* ]]' ||
    fail "A's console does not show B as gone: $(states "$pa")"
assert_match "$apid:live" "$(states "$pa")" "A itself is live"
page=$(console_curl -b a.jar "$CONSOLE/daemons")
assert_match 'class="tag gone">gone' "$page" "the Daemons page says gone"

# A's console crashes: the supervisor starts it again, and the session
# (in memory the supervisor shares with it) still holds.
cpid=$(for p in $(cat /proc/"$apid"/task/*/children); do
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" != console ] || echo "$p"; done)
[ -n "$cpid" ] || fail "no console child of $apid"
kill -KILL "$cpid"
wait_until 10 '[ "$(console_curl -o /dev/null -w "%{http_code}" -b a.jar "$CONSOLE/daemons")" = 200 ]' ||
    fail "the console did not come back with the session"
kill -0 "$apid" || fail "the supervisor died with its console"
grep -q "console: killed by signal 9.*starting it again" a.log || fail "the console's death is not logged"

# A reload replaces the console with one that serves the new generation:
# quietly (no death logged), and the session holds.
console_of() { for p in $(cat /proc/"$apid"/task/*/children); do
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" != console ] || echo "$p"; done; }
# shellcheck disable=SC2034 # read by wait_until's eval
old=$(console_of)
kill -HUP "$apid"
wait_until 15 '[ -n "$(console_of)" ] && [ "$(console_of)" != "$old" ]' ||
    fail "the console was not replaced after the reload"
wait_until 10 '[ "$(console_curl -o /dev/null -w "%{http_code}" -b a.jar "$CONSOLE/")" = 200 ]' ||
    fail "the session did not hold across the reload"
assert_eq 1 "$(grep -c "console: killed by signal" a.log)" "only the crash above is logged as a death"

# A daemon without a console but with daemons_table: writes its heartbeat
# all the same (no listener of its own), and the consoles list it.
email_config c.yaml "[/bin/true]"
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/c.sock\ndaemons_table: rowq_daemons\nqueues:|" c.yaml
rowq_start c.yaml c.log
cpid_daemon=$ROWQ_PID
wait_until 25 'states "$pa" | grep -q "$cpid_daemon:live"' ||
    fail "a daemon with daemons_table: and no console is not listed: $(states "$pa")"
assert_match 'heartbeat' "$(for p in $(cat /proc/"$cpid_daemon"/task/*/children); do cat /proc/"$p"/comm; done)" \
    "its heartbeat child"
! grep -q 'console: listening\|serving http' c.log || fail "a console-less daemon listens: $(cat c.log)"
