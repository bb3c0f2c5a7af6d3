#!/usr/bin/env bash
# Failover: a primary p and its replica r (real replication over TCP, by
# GTID); a daemon with host: [p, r] works the queue; p is killed (-9)
# mid-run and r promoted (it stops replicating; read_only = 0).  The
# daemon moves to r by itself and finishes every row.  Rows whose
# completion had not reached r when p died run again: at-least-once,
# counted and printed.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/tcp.sh"
db_start
db_create

rows=600
tcp_pair $rows
cfg=$ROWQ_TEST_TMP/rowq.yaml
log=$ROWQ_TEST_TMP/handled
WORKERS=3 email_config "$cfg" "[$HANDLERS/fake, sleep, 5, $log]"
p=127.0.0.1:$P_PORT r=127.0.0.1:$R_PORT
tcp_config "$cfg" "[\"$p\", \"$r\"]"

rowq_start "$cfg" "$ROWQ_TEST_TMP/run.log"
on_exit '[ $? = 0 ] || tail -n 40 "$ROWQ_TEST_TMP/run.log"'
wait_until 20 '[ "$(cat "$log" 2>/dev/null | wc -l)" -ge 150 ]' ||
    fail "the daemon did not start working on p"
server_kill9 p
ran_on_p=$(cut -d" " -f1 "$log" | sort -u | wc -l)
replicated=$(tcp_done r)
# A while with no writable host at all: the workers wait with backoff.
sleep 2
server_promote r
wait_until 25 '[ "$(tcp_done r)" = $rows ]' ||
    fail "only $(tcp_done r) of $rows rows done on r"

again=$(cut -d' ' -f1 "$log" | sort | uniq -d | wc -l)
grep -E "moved|cannot connect" "$ROWQ_TEST_TMP/run.log" || true
echo "rows run by the handler before p died: $ran_on_p; done on r then: $replicated; rows run again: $again"
assert_eq $rows "$(cut -d' ' -f1 "$log" | sort -u | wc -l)" "rows the handler ran"
assert_eq $rows "$(server_value r "SELECT COUNT(*) FROM email WHERE done_count = 1" "$ROWQ_TEST_DB")" \
    "rows done once on r"
# Those run again are at most those run but not replicated when p died.
assert_le "$again" "$((ran_on_p - replicated))" "rows run again"
assert_match "moved from $p to $r" "$(cat "$ROWQ_TEST_TMP/run.log")" \
    "a worker's line on its move"
# The workers waited with backoff while no host was writable: no flood.
assert_le "$(grep -c "cannot connect" "$ROWQ_TEST_TMP/run.log" || true)" 12 \
    "lines about the database being away"
