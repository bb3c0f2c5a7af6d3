#!/usr/bin/env bash
# A prune on the queue's own table while 4 workers work it and the
# application inserts: 20,000 finished rows older than a week go, in
# chunks; the recent finished rows and every waiting row stay until the
# workers finish them, each exactly once.  The daemon logs the run, shows
# it in `rowq status` and counts it in rowq_pruned_rows_total; `rowq
# prune --dry-run` counts first, `rowq check` warns of a prune that scans.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

old=20000 recent=500 waiting=1000 inserted=1000
email_table $waiting
sql "ALTER TABLE email ADD COLUMN sent_at DATETIME NULL, ADD INDEX (sent_at)"
sql "INSERT INTO email (recipient, subject, body, status, done_count, sent_at)
    SELECT 'old@example.com', 's', '', 'sent', 1, NOW() - INTERVAL 30 DAY
    FROM $(seq_rows "$old")"
sql "INSERT INTO email (recipient, subject, body, status, done_count, sent_at)
    SELECT 'recent@example.com', 's', '', 'sent', 1, NOW()
    FROM $(seq_rows "$recent")"
log=$ROWQ_TEST_TMP/handled
WORKERS=4 email_config rowq.yaml "[$HANDLERS/fake, append, $log]" \
    "prune:" \
    "  delete: DELETE FROM email WHERE status = 'sent'" \
    "          AND sent_at < NOW() - INTERVAL 7 DAY" \
    "  chunk: 1000" \
    "  pause: 50ms" \
    "  every: 1s"
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics_textfile: $ROWQ_TEST_TMP/rowq.prom\nqueues:|" rowq.yaml

out=$("$ROWQ" -c rowq.yaml prune email --dry-run) || fail "dry run: $out"
assert_eq "email: would remove $old rows in 21 chunks of 1000" "$out" "dry run"
assert_eq $((old + recent + waiting)) "$(sql_value "SELECT COUNT(*) FROM email")" "rows after the dry run"

# The index on sent_at serves the delete; with no index it can use, check
# warns.
"$ROWQ" -c rowq.yaml check >/dev/null 2>check.err || fail "check: $(cat check.err)"
assert_eq "" "$(grep 'each chunk scans' check.err)" "check with the index"
sql "ALTER TABLE email DROP INDEX sent_at, DROP INDEX status"
"$ROWQ" -c rowq.yaml check >/dev/null 2>check.err || fail "check: $(cat check.err)"
assert_match "rowq.yaml:[0-9]*: queues.email.prune.delete: each chunk scans the table" \
    "$(cat check.err)" "check without the index"
sql "ALTER TABLE email ADD INDEX (sent_at), ADD INDEX status (status, id)"

rowq_start rowq.yaml daemon.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/daemon.log"'
# The application goes on inserting while the prune runs.
for i in $(seq 1 10); do
	sql "INSERT INTO email (recipient, subject, body)
	    SELECT 'new@example.com', 's', '' FROM $(seq_rows $((inserted / 10)))"
	sleep 0.2
done
wait_until 20 'grep -q "pruned [0-9]* rows" daemon.log' || fail "no prune in the log"
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'waiting'"'")" = 0 ]' ||
	fail "waiting rows left"
assert_match "prune email.*pruned $old rows in 21 chunks, [0-9.]*s" \
    "$(grep -m1 "pruned [0-9]* rows" daemon.log)" "the first run's log line"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM email WHERE recipient = 'old@example.com'")" "old rows left"
assert_eq $recent "$(sql_value "SELECT COUNT(*) FROM email WHERE recipient = 'recent@example.com'")" "recent rows kept"
total=$((waiting + inserted))
assert_eq $total "$(wc -l <"$log")" "handler runs"
assert_eq $total "$(cut -d' ' -f1 "$log" | sort -u | wc -l)" "distinct keys handled"
assert_eq $total "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'sent' AND done_count = 1 AND recipient <> 'recent@example.com'")" "rows done once"

wait_until 20 'grep -q "^rowq_pruned_rows_total{queue=\"email\"} $old$" rowq.prom' ||
	fail "metrics: $(grep pruned rowq.prom)"
st=$("$ROWQ" -c rowq.yaml status email) || true
assert_match "email last prune: done, [0-9]+ rows in [0-9]+ chunks" "$st" "status"
kill_wait 15 "$ROWQ_PID"
