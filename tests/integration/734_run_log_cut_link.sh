#!/usr/bin/env bash
# runs: with a link cut.  Two hosts (network namespaces, over TCP with
# TLS, 2 workers each: h1 at batch 1, where a row's `done` and its run
# ride in front of the next claim's COMMIT, h2 at batch 4) work rows of
# 300 ms, a third of which fail their first try.  h1's link is cut while
# it holds rows: its handlers finish them, but its transactions never
# commit (the server ends them after the queue's session bound, timeout
# + 2 s kill grace + 5 s margin) and h2 runs those tries again.  The link
# restored, h1 reconnects and does new rows alone.  Afterwards each row's
# runs are its attempts column, no try has two runs, each row failing
# once has one retry run, and every try h1's handlers finished after the
# cut has exactly one run, h2's: the rolled-back one left none.
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

rows=60
late=6
bound_s=9
email_table $rows
hosts="h1 h2"
on_exit '[ $? -eq 0 ] || for h in $hosts; do echo "--- $h.rowq"; tail -n 20 "$ROWQ_TEST_TMP/$h.rowq"; done'

# Says each try in its host's file as it ends; keys divisible by 3 fail
# their first.
cat >handler <<'SH'
#!/bin/sh
sleep 0.3
echo "$ROWQ_KEY $ROWQ_ATTEMPT" >>"$1"
[ "$ROWQ_ATTEMPT" -ge 2 ] || [ $((ROWQ_KEY % 3)) -ne 0 ] || exit 3
exit 0
SH
chmod +x handler
n=31
b=1
declare -A rowq_pid addr
for h in $hosts; do
	addr[$h]=10.91.0.$n
	n=$((n + 1))
	host_add "$h" "${addr[$h]}"
	: >"$h.log"
	WORKERS=2 TIMEOUT=2s MAX_ATTEMPTS=5 host_config "$h.yaml" \
	    "[$ROWQ_TEST_TMP/handler, $ROWQ_TEST_TMP/$h.log]" "batch: $b" \
	    "runs: {}"
	b=4
done
for h in $hosts; do
	host_rowq_start "$h" "$h.yaml" "$h.rowq"
	rowq_pid[$h]=$ROWQ_PID
done

h1_holding()
{
	server_value db "SELECT COUNT(*) FROM information_schema.INNODB_TRX t
	    JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
	    WHERE p.HOST LIKE '${addr[h1]}:%' AND t.trx_rows_locked > 0"
}
# Runs so far; 0 before the first worker has made the table.
runs_so_far() { sql_value "SELECT COUNT(*) FROM rowq_runs" 2>/dev/null || echo 0; }
# Cut once runs have been written and both of h1's workers hold rows.
wait_until 30 '[ "$(runs_so_far)" -ge 6 ] && [ "$(h1_holding)" = 2 ]' ||
	fail "h1's two workers never held rows together after the first runs"
net_cut h1
h1_before=$(wc -l <h1.log)

# The tries h1's handlers end after the cut (each worker's held row)
# cannot commit.  (One may have ended between the look and the cut.)
sleep 1.5
cut_tries=$(tail -n +$((h1_before + 1)) h1.log | sort -u)
[ -n "$cut_tries" ] || fail "h1's handlers ran no try after the cut"
wait_until $((bound_s + 40)) '[ "$(email_count "status = '"'waiting'"'")" = 0 ]' ||
	fail "rows still waiting with h1 cut: $(email_count "status = 'waiting'")"
stop_rowq "${rowq_pid[h2]}"

# h1 back, alone: it reconnects and writes runs again.
net_restore h1
sql "INSERT INTO email (recipient, subject, body)
    SELECT CONCAT('late', seq, '@example.com'), 'late', '' FROM $(seq_rows $late)"
wait_all_final 60 || fail "h1 did not come back within 60 s: $(email_count "status = 'waiting'") rows waiting"
kill -0 "${rowq_pid[h1]}" || fail "h1's supervisor is gone"
stop_rowq "${rowq_pid[h1]}"
all=$((rows + late))

assert_eq "$all" "$(email_count "status = 'sent'")" "rows sent"
assert_eq 0 "$(email_count "done_count <> 1")" "rows whose done ran other than once"
runs=$(sql_value "SELECT COUNT(*) FROM rowq_runs")
assert_eq "$(sql_value "SELECT SUM(attempts) FROM email")" "$runs" \
    "runs against the attempts column"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM email e WHERE attempts <>
    (SELECT COUNT(*) FROM rowq_runs r WHERE r.queue = 'email' AND
     r.row_key = CAST(e.id AS CHAR))")" "rows whose runs are not their attempts"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM (SELECT row_key, attempt,
    COUNT(*) n FROM rowq_runs GROUP BY row_key, attempt HAVING n > 1) d")" \
    "tries with two runs"
assert_eq $((all / 3)) "$(sql_value "SELECT COUNT(*) FROM rowq_runs
    WHERE outcome = 'retry' AND reason = 'exit' AND exit_status = 3")" \
    "retried tries"
assert_eq $((all - all / 3)) "$(sql_value "SELECT COUNT(*) FROM rowq_runs
    WHERE outcome = 'done' AND attempt = 1")" "rows done on their first try"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM rowq_runs
    WHERE outcome NOT IN ('done', 'retry')")" "runs of another outcome"
# The tries h1 finished after the cut: run again by h2, one run each.
while read -r k a; do
	grep -qx "$k $a" h2.log || fail "try $a of row $k, h1's after the cut, was not run again by h2"
	assert_eq 1 "$(sql_value "SELECT COUNT(*) FROM rowq_runs
	    WHERE row_key = '$k' AND attempt = $a")" "runs of try $a of row $k, rolled back on h1"
done <<<"$cut_tries"
tries=$(cat h1.log h2.log | wc -l)
figure "tries the handlers ended" "$tries"
figure "runs written" "$runs"
figure "tries rolled back on h1 by the cut" "$(wc -l <<<"$cut_tries")"
assert_ge "$tries" $((runs + $(wc -l <<<"$cut_tries"))) "tries the handlers ended against runs"
assert_ge "$(sql_value "SELECT COUNT(*) FROM rowq_runs r JOIN email e
    ON r.row_key = CAST(e.id AS CHAR) WHERE e.subject = 'late'")" "$late" \
    "runs of the rows h1 did after the restore"
