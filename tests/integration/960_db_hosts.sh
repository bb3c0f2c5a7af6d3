#!/usr/bin/env bash
# host: as a list, over TCP, to a primary p and its replica r (real
# replication, by GTID): the first host that is writable is taken, a
# read-only one passed over; tls: against a server without TLS is an
# error, not plain text; and a running daemon whose server turns
# read-only (its workers get error 1290) moves to the host promoted next
# and every row ends done once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/tcp.sh"
db_start
db_create

rows=400
tcp_pair $rows
cfg=$ROWQ_TEST_TMP/rowq.yaml
log=$ROWQ_TEST_TMP/handled
email_config "$cfg" "[$HANDLERS/fake, sleep, 10, $log]" "batch: 5"
p=127.0.0.1:$P_PORT r=127.0.0.1:$R_PORT

# The first host is read-only (the replica): the second is taken.
tcp_config "$cfg" "[\"$r\", \"$p\"]"
out=$("$ROWQ" -c "$cfg" check 2>&1) || fail "check with [replica, primary]: $out"
assert_match "database: $p, not encrypted" "$out" "the host check took"

# tls: given, a server without TLS: an error, no plain-text fallback,
# refused by the library before the login under verify: full, by rowq
# after it under off (and ca).
echo "not read: the server offers no TLS" >"$ROWQ_TEST_TMP/ca.pem"
tcp_config "$cfg" "\"$p\"" "tls: {ca: $ROWQ_TEST_TMP/ca.pem}"
status=0
out=$("$ROWQ" -c "$cfg" check 2>&1) || status=$?
echo "$out"
assert_eq 1 "$status" "check's exit status, tls: to a server without TLS"
assert_match "cannot connect: $p: TLS/SSL error: SSL is required, but the server does not support it" \
    "$out" "the error for a server without TLS, verify: full"
tcp_config "$cfg" "\"$p\"" "tls: {verify: off}"
status=0
out=$("$ROWQ" -c "$cfg" check 2>&1) || status=$?
echo "$out"
assert_eq 1 "$status" "check's exit status, verify: off to a server without TLS"
assert_match "cannot connect: $p: the server offers no TLS, and tls: allows no plain text" \
    "$out" "the error for a server without TLS, verify: off"

# A running daemon on p; p turns read-only, r is promoted: it moves.
tcp_config "$cfg" "[\"$p\", \"$r\"]"
rowq_start "$cfg" "$ROWQ_TEST_TMP/run.log"
on_exit '[ $? = 0 ] || tail -n 40 "$ROWQ_TEST_TMP/run.log"'
wait_until 20 '[ "$(cat "$log" 2>/dev/null | wc -l)" -ge 100 ]' ||
    fail "the daemon did not start working on p"
server_sql p "SET GLOBAL read_only = 1"
server_caught_up r p
# Nothing is written to p any more: the workers' writes fail with 1290.
sleep 1
server_promote r
before=$(tcp_done p)
wait_until 25 '[ "$(tcp_done r)" = $rows ]' ||
    fail "only $(tcp_done r) of $rows rows done on r"
echo "done on p before it turned read-only: $before; runs again: $(cut -d' ' -f1 "$log" | sort | uniq -d | wc -l)"
assert_eq "$before" "$(tcp_done p)" "rows done on p after it turned read-only"
assert_eq $rows "$(server_value r "SELECT COUNT(*) FROM email WHERE done_count = 1" "$ROWQ_TEST_DB")" \
    "rows done once on r"
assert_match "option so it cannot execute this statement \(1290\)" \
    "$(cat "$ROWQ_TEST_TMP/run.log")" "a worker's read-only error"
assert_match "email/1: moved from $p to $r" "$(cat "$ROWQ_TEST_TMP/run.log")" \
    "a worker's line on its move"
# Rows run again are those whose turn the 1290 cut short: a batch each.
assert_le "$(cut -d' ' -f1 "$log" | sort | uniq -d | wc -l)" 10 "rows run twice"

# The wake watcher, which reads the pause table, only reads, so it gets no
# 1290 from p, which stays up read-only: it must still move to r, or a
# pause made there (where `rowq pause` now goes) would never reach this
# daemon.
"$ROWQ" -c "$cfg" pause email >"$ROWQ_TEST_TMP/pause.out" 2>&1 ||
    fail "pause on r: $(cat "$ROWQ_TEST_TMP/pause.out")"
wait_until 15 'grep -q "email: paused in" "$ROWQ_TEST_TMP/run.log"' ||
    fail "the daemon did not see a pause made on r after the switchover"
# The wake watcher, reading p's stale rows, would wake workers for rows
# long done; it moves to r as well.
wait_until 15 'grep -q "wake watch: moved from $p to $r" "$ROWQ_TEST_TMP/run.log"' ||
    fail "the wake watcher stayed on the demoted primary"
