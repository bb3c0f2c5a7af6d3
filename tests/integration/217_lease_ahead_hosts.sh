#!/usr/bin/env bash
# lease.ahead on two hosts (network namespaces, over TCP with TLS, 2
# workers each, leases of 3 s, a claim leasing 4 rows, rows of 200 ms):
#   1. h1's link cut while its workers hold leases: its handlers finish
#      the rows they were running, whose `done` cannot reach the server,
#      and start no other; h2 does every row once the leases run out, the
#      rows h1 leased ahead included: each row done once, and run twice
#      only where h1's handler finished it after the cut.  The link
#      restored, h1 does new rows alone.
#   2. h2 frozen (SIGSTOP of rowq, its workers and handlers) while it
#      holds leases: h1 does every row once those leases run out; h2,
#      resumed, finds them lost (its `done` and its renewals change no
#      row, and are said): each row done once, and h2 starts no row of
#      the claim it held.
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
email_table $rows
sql "ALTER TABLE email ADD lease CHAR(32) NULL,
    ADD leased_until BIGINT NOT NULL DEFAULT 0"
hosts="h1 h2"
on_exit '[ $? -eq 0 ] || for h in $hosts; do echo "--- $h.rowq"; tail -n 20 "$ROWQ_TEST_TMP/$h.rowq"; done'

# lease_config FILE LOG: the lease queue of email, over TCP with TLS.
lease_config()
{
	cat >"$1" <<YAML
database:
  socket: $ROWQ_TEST_SOCKET
  name: $ROWQ_TEST_DB
stop_timeout: 5s
status_socket: ${1%.yaml}.sock
queues:
  email:
    workers: 2
    select: SELECT id, attempts FROM email
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    pipe: [$HANDLERS/pipefake, sleep, "200", $2]
    timeout: 2s
    idle: 100ms
    lease:
      duration: 3s
      ahead: 4
      claim: UPDATE email SET lease = :lease, attempts = attempts + 1,
             leased_until = UNIX_TIMESTAMP() + 3 WHERE id = :id
      renew: UPDATE email SET leased_until = UNIX_TIMESTAMP() + 3
             WHERE id = :id AND lease = :lease
    done: UPDATE email SET status = 'sent', done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE email SET status = 'failed'
            WHERE id = :id AND lease = :lease
YAML
	tcp_config "$1" "$HOSTS_DB_ADDR:3306" "tls: {ca: $HOSTS_TLS/ca.pem, cert: $HOSTS_TLS/client.pem, key: $HOSTS_TLS/client-key.pem, verify: full}"
}

n=41
declare -A rowq_pid addr
for h in $hosts; do
	addr[$h]=10.91.0.$n
	n=$((n + 1))
	host_add "$h" "${addr[$h]}"
	: >"$h.log"
	lease_config "$h.yaml" "$ROWQ_TEST_TMP/$h.log"
	host_rowq_start "$h" "$h.yaml" "$h.rowq"
	rowq_pid[$h]=$ROWQ_PID
done
all_sent() { [ "$(email_count "status = 'sent'")" = "$1" ]; }
# done_once ROWS: every row sent, its done run once (attempts count
# leases here, a row leased again after a fault counting twice).
done_once()
{
	assert_eq "$1" "$(email_count "status = 'sent'")" "rows sent"
	assert_eq 0 "$(email_count "done_count <> 1")" "rows whose done ran other than once"
}
# Every process of the tree under PID, PID first.
tree_of()
{
	local c
	echo "$1"
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		tree_of "$c"
	done
}

# ---- 1. h1's link cut ----
wait_until 20 '[ "$(wc -l <h1.log)" -ge 4 ]' || fail "h1 ran no rows"
net_cut h1
h1_before=$(wc -l <h1.log)
sleep 1
h1_after=$(($(wc -l <h1.log) - h1_before))
wait_until 40 'all_sent $rows' || fail "rows not sent with h1 cut: $(email_count "status = 'waiting'") waiting"
done_once $rows
twice=$(cat h1.log h2.log | cut -d' ' -f1 | sort | uniq -d | wc -l)
figure "rows h1's handlers finished after the cut" "$h1_after"
figure "rows run twice" "$twice"
assert_le "$h1_after" 2 "rows h1's handlers finished after the cut (one a worker)"
assert_le "$twice" "$h1_after" "rows run twice"
assert_eq 0 "$(($(wc -l <h1.log) - h1_before - h1_after))" "rows h1 started after the cut"
stop_rowq "${rowq_pid[h2]}"
net_restore h1
sql "INSERT INTO email (recipient, subject, body)
    SELECT CONCAT('late', seq, '@example.com'), 'late', '' FROM $(seq_rows 8)"
wait_all_final 60 || fail "h1 did not come back: $(email_count "status = 'waiting'") rows waiting"
done_once $((rows + 8))
assert_eq 8 "$(tail -n 8 h1.log | awk -v r=$rows '$1 > r' | wc -l)" "new rows done by h1"

# ---- 2. h2 frozen ----
rows=$((rows + 8))
: >h1.log
: >h2.log
host_rowq_start h2 h2.yaml h2.rowq
rowq_pid[h2]=$ROWQ_PID
sql "INSERT INTO email (recipient, subject, body)
    SELECT CONCAT('more', seq, '@example.com'), 'more', '' FROM $(seq_rows 60)"
rows=$((rows + 60))
wait_until 20 '[ "$(wc -l <h2.log)" -ge 4 ]' || fail "h2 ran no rows"
frozen=$(tree_of "${rowq_pid[h2]}" | tr '\n' ' ')
kill -STOP $frozen
on_exit "kill -CONT $frozen 2>/dev/null || true"
h2_frozen=$(wc -l <h2.log)
wait_until 40 'all_sent $rows' || fail "rows not sent with h2 frozen: $(email_count "status = 'waiting'") waiting"
kill -CONT $frozen
sleep 2
h2_resumed=$(($(wc -l <h2.log) - h2_frozen))
stop_rowq "${rowq_pid[h1]}"
stop_rowq "${rowq_pid[h2]}"
done_once $rows
twice=$(cat h1.log h2.log | cut -d' ' -f1 | sort | uniq -d | wc -l)
figure "rows h2's handlers finished after it was resumed" "$h2_resumed"
figure "rows run twice" "$twice"
assert_le "$h2_resumed" 2 "rows h2 ran after it was resumed (those its frozen handlers ran)"
assert_le "$twice" "$h2_resumed" "rows run twice"
assert_match "the lease (was )?lost" "$(cat h2.rowq)" "h2's log: its leases lost"
