#!/usr/bin/env bash
# One host's link cut while its workers hold rows (3 hosts × 2 workers,
# over TCP with TLS, each host a network namespace of its own): the server ends
# the cut host's idle transactions after the queue's session bound
# (timeout + kill grace + margin, db_limits.c), the other hosts do the
# rows, and no row is done twice in the database; its handler may have
# run a row that another host ran again (at-least-once: counted).  The
# link restored, the same daemon (same supervisor) reconnects by itself
# and does rows again.
#
#   ROWQ_CUT_EXTRA_S   seconds the link stays cut after the others have
#                      done the held rows (0), for a long cut
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/netns.sh"
. "$TESTS_DIR/tls.sh"
. "$TESTS_DIR/tcp.sh"
. "$TESTS_DIR/hosts.sh"
. "$TESTS_DIR/torture/common.sh"
hosts_db_start
cd "$ROWQ_TEST_TMP"

rows=24
hosts="h1 h2 h3"
# A row takes 1 s: the workers hold rows most of the time.  The session
# bound of a 2 s timeout: 2 s + 2 s kill grace + 5 s margin.
bound_s=9
email_table $rows
on_exit '[ $? -eq 0 ] || for h in $hosts; do echo "--- $h.rowq"; tail -n 20 "$ROWQ_TEST_TMP/$h.rowq"; done'
n=11
declare -A rowq_pid addr
for h in $hosts; do
	addr[$h]=10.91.0.$n
	n=$((n + 1))
	host_add "$h" "${addr[$h]}"
	: >"$h.log"
	WORKERS=2 TIMEOUT=2s host_config "$h.yaml" \
	    "pipe: [$HANDLERS/pipefake, sleep, \"1000\", $ROWQ_TEST_TMP/$h.log]"
done
for h in $hosts; do
	host_rowq_start "$h" "$h.yaml" "$h.rowq"
	rowq_pid[$h]=$ROWQ_PID
done

# h1's transactions that hold rows, as the server sees them.
h1_holding()
{
	server_value db "SELECT COUNT(*) FROM information_schema.INNODB_TRX t
	    JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
	    WHERE p.HOST LIKE '${addr[h1]}:%' AND t.trx_rows_locked > 0"
}
wait_until 20 '[ "$(h1_holding)" = 2 ]' || fail "h1's two workers never held rows together"
net_cut h1
cut_at=$(now_us)
h1_before=$(wc -l <h1.log)

# h1's handlers still finish their rows (the file system is shared), and
# a row its handler logged after the cut cannot have been done by h1: the
# rows it held.  (One may have ended between the look and the cut.)
wait_until 5 '[ "$(wc -l <h1.log)" -gt "$h1_before" ]' ||
	fail "h1's handlers did not finish their rows after the cut"
sleep 1.5
held=$(tail -n +$((h1_before + 1)) h1.log | cut -d' ' -f1 | tr '\n' ' ')
nheld=$(echo "$held" | wc -w)
# shellcheck disable=SC2034 # read by the wait_until below
held_in=$(echo "$held" | tr ' ' ',' | sed 's/,$//')
wait_until $((bound_s + 15)) '[ "$(email_count "id IN ($held_in) AND status = '"'sent'"'")" = "$nheld" ]' ||
	fail "rows $held, held by h1, not done by the others within $((bound_s + 15)) s"
took=$((($(now_us) - cut_at) / 1000000))
figure "seconds from the cut until the $nheld rows h1 held were done elsewhere" "$took"
assert_le "$took" $((bound_s + 8)) "seconds until h1's held rows were done elsewhere (session bound $bound_s s)"
for k in $held; do
	grep -q "^$k " h2.log h3.log || fail "row $k, held by h1, was not run by h2 or h3"
done
wait_all_final 30 || fail "rows still waiting: $(email_count "status = 'waiting'")"
assert_exactly_once $rows
cat h1.log h2.log h3.log >all.log
twice=$(cut -d' ' -f1 all.log | sort | uniq -d | wc -l)
figure "rows the handlers ran twice (at-least-once)" "$twice"
assert_ge "$twice" "$nheld" "rows run by h1 and again by another host"

# The others stop: the rows to come are h1's alone.
stop_rowq "${rowq_pid[h2]}"
stop_rowq "${rowq_pid[h3]}"
sleep "${ROWQ_CUT_EXTRA_S:-0}"
net_restore h1
restored_at=$(now_us)
sql "INSERT INTO email (recipient, subject, body)
    SELECT CONCAT('late', seq, '@example.com'), 'late', '' FROM $(seq_rows 4)"
wait_all_final 60 || fail "h1 did not come back within 60 s: $(email_count "status = 'waiting'") rows waiting"
figure "seconds from the restore until h1 had done 4 new rows" \
    "$((($(now_us) - restored_at) / 1000000))"
kill -0 "${rowq_pid[h1]}" || fail "h1's supervisor is gone"
# What its operator reads: the lost link, then the database back.
# (At batch 1 the row's done travels with the COMMIT and the next claim;
# a client error 20NN, or MySQL's 4031 when its server closed the session
# for inactivity before the client noticed the cut.)
assert_match "queues\\.email\\.done for key [0-9]+(, commit)?: .*\\((20[0-9]{2}|4031)\\)" "$(cat h1.rowq)" "h1's log of the cut"
assert_match "email/[12]: database back after" "$(cat h1.rowq)" "h1's log of the restore"
assert_exactly_once $((rows + 4))
assert_eq 4 "$(tail -n 4 h1.log | cut -d' ' -f1 | awk -v r=$rows '$1 > r' | wc -l)" "new rows done by h1"
stop_rowq "${rowq_pid[h1]}"
