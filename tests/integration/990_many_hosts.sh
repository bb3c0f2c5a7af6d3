#!/usr/bin/env bash
# 3 hosts × 4 workers, each host a network namespace of its own with one
# `rowq run`, the server in another, reached over TCP with TLS (verify:
# full, a client certificate): 20,000 rows, every
# row done exactly once (no key twice in the handlers' logs, done_count 1
# everywhere), each host's share reported.  Only the database's row locks
# coordinate the hosts.
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

rows=20000
hosts="h1 h2 h3"
email_table $rows
on_exit '[ $? -eq 0 ] || for h in $hosts; do echo "--- $h.rowq"; tail -n 20 "$ROWQ_TEST_TMP/$h.rowq"; done'
n=11
declare -A rowq_pid addr
for h in $hosts; do
	addr[$h]=10.91.0.$n
	n=$((n + 1))
	host_add "$h" "${addr[$h]}"
	WORKERS=4 host_config "$h.yaml" "pipe: [$HANDLERS/pipefake, ok, $ROWQ_TEST_TMP/$h.log]"
done
start=$(now_us)
for h in $hosts; do
	host_rowq_start "$h" "$h.yaml" "$h.rowq"
	rowq_pid[$h]=$ROWQ_PID
done

wait_all_final 60 || fail "rows still waiting after 60 s: $(email_count "status = 'waiting'")"
figure "seconds for $rows rows on 3 hosts x 4 workers" \
    "$(awk -v us=$(($(now_us) - start)) 'BEGIN { printf "%.1f", us / 1e6 }')"
# Each host's workers came over TCP from the host's own address, with TLS.
for h in $hosts; do
	assert_ge "$(host_sessions "${addr[$h]}")" 4 "sessions from $h (${addr[$h]})"
	assert_eq 4 "$(lines "$h.rowq" '^[-0-9 :.]+ email/[1-4]: connected to 10\.91\.0\.1:3306, TLS ')" \
	    "$h's workers connected with TLS"
done
for h in $hosts; do
	stop_rowq "${rowq_pid[$h]}"
done

cat h1.log h2.log h3.log >all.log
assert_eq $rows "$(wc -l <all.log)" "handler runs on all hosts"
assert_eq "" "$(cut -d' ' -f1 all.log | sort | uniq -d | head -5)" "keys handled twice"
assert_exactly_once $rows
for h in $hosts; do
	share=$(wc -l <"$h.log")
	figure "rows done by $h" "$share"
	# All three started together: a host left out did not take part.
	assert_ge "$share" 1 "rows done by $h"
done
