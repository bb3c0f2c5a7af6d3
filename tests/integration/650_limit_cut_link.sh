#!/usr/bin/env bash
# limit.concurrency with a link cut (3 hosts of 2 workers, each a network
# namespace, over TCP with TLS): h1 holds two of the three slots when its
# link is cut.  Its handlers go on and end within their timeout, before
# the server ends its idle transactions (the queue's session bound,
# timeout + 2 s kill grace + 5 s margin) and frees its slots with its
# rows; then h2 and h3 run 3 at once.  Counted from the handlers' own
# lines, h1's included (the file system is shared): never more than 3.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/netns.sh"
. "$TESTS_DIR/tls.sh"
. "$TESTS_DIR/tcp.sh"
. "$TESTS_DIR/hosts.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
hosts_db_start
cd "$ROWQ_TEST_TMP"

rows=40
bound_s=9
email_table $rows
log=$ROWQ_TEST_TMP/trace
: >"$log"
hosts="h1 h2 h3"
on_exit '[ $? -eq 0 ] || for h in $hosts; do echo "--- $h.rowq"; tail -n 20 "$ROWQ_TEST_TMP/$h.rowq"; done'
n=21
declare -A rowq_pid
for h in $hosts; do
	host_add "$h" 10.91.0.$n
	n=$((n + 1))
	WORKERS=2 TIMEOUT=2s host_config "$h.yaml" "[$HANDLERS/trace, $log, \"1000\"]" \
	    "limit: {concurrency: 3}"
done
# h1 first, so that it holds two slots (a worker that finishes a row
# takes its slot again in the same round trip).
host_rowq_start h1 h1.yaml h1.rowq
rowq_pid[h1]=$ROWQ_PID
wait_until 20 '[ "$(running_at "$log" "$(now_us)")" = 2 ]' || fail "h1 never ran 2 handlers"
for h in h2 h3; do
	host_rowq_start "$h" "$h.yaml" "$h.rowq"
	rowq_pid[$h]=$ROWQ_PID
done
sleep 2
net_cut h1
cut_at=$(now_us)
first_full()
{
	awk '$1 == "start" { print $6, 1 } $1 == "end" { print $6, -1 }' "$log" |
	    sort -n -k1,1 -k2,2n | awk -v t="$1" '{ n += $2 }
		$1 > t && n >= 3 { print $1; exit }'
}
wait_until $((bound_s + 10)) '[ -n "$(first_full "$((cut_at + 3000000))")" ]' ||
	fail "h2 and h3 never ran 3 at once after the cut"
back=$(first_full "$((cut_at + 3000000))")
figure "s from the cut until 3 ran at once again (session bound $bound_s s)" \
    "$(((back - cut_at) / 1000000))"
assert_le "$(((back - cut_at) / 1000000))" $((bound_s + 5)) "s until the cap was reached again"
net_restore h1
wait_all_final 60 || fail "rows still waiting: $(email_count "status = 'waiting'")"
for h in $hosts; do
	stop_rowq "${rowq_pid[$h]}"
done
close_starts "$log" "$(now_us)"
max=$(overlap_max "$log")
figure "handlers at once, most, h1's cut ones included" "$max"
assert_le "$max" 3 "handlers at once across the 3 hosts"
assert_eq "$rows" "$(email_count "status = 'sent'")" "rows sent"
