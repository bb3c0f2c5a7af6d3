#!/usr/bin/env bash
# on_failed: runs once for each row that failed for good, after its
# failed statement committed, never for a retry; with the row on standard
# input and ROWQ_QUEUE, ROWQ_KEY, ROWQ_ATTEMPT, ROWQ_ERROR, ROWQ_OUTCOME
# (failed, timeout, killed) in its environment; a hook that hangs is
# killed at on_failed_timeout and does not hold up the queue; over
# on_failed_rate a minute the rest are dropped, counted and said.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "INSERT INTO email (id, recipient, subject, body)
    SELECT seq, CONCAT('u', seq, '@x'), 's', '' FROM $(seq_rows 12)"
port=$(free_port)

# The handler, by key: 1-4 can never work (65), 5-6 fail every try, 7
# hangs past the timeout, 8 fails once then works, 9 dies of SIGKILL,
# the rest work.
cat >handle <<'SH'
#!/bin/bash
cat >/dev/null
case $ROWQ_KEY in
1|2|3|4) echo "no such mailbox" >&2; exit 65 ;;
5|6) echo "smtp down" >&2; exit 3 ;;
7) sleep 30 ;;
8) [ "$ROWQ_ATTEMPT" -ge 2 ] || { echo "once" >&2; exit 3; } ;;
9) kill -9 $$ ;;
esac
exit 0
SH
# The hook: one line per run, then (row 2) hang.
cat >hook <<'SH'
#!/bin/bash
row=$(cat)
printf '%s %s %s %s [%s] %s\n' "$ROWQ_QUEUE" "$ROWQ_KEY" "$ROWQ_ATTEMPT" \
    "$ROWQ_OUTCOME" "$ROWQ_ERROR" "$row" >>"$1"
[ "$ROWQ_KEY" != 2 ] || exec sleep 60
exit 0
SH
chmod +x handle hook
MAX_ATTEMPTS=2 TIMEOUT=1s email_config rowq.yaml "[$ROWQ_TEST_TMP/handle]" \
    "on_failed: [$ROWQ_TEST_TMP/hook, $ROWQ_TEST_TMP/hooks.log]" \
    "on_failed_timeout: 1s"
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics: 127.0.0.1:$port\nqueues:|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
final() { [ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'waiting'")" = 0 ]; }
t0=$(now_us)
wait_until 30 final || fail "rows still waiting: $(sql "SELECT id, attempts FROM email WHERE status = 'waiting'")"
took=$((($(now_us) - t0) / 1000))
echo "all 12 rows final in ${took} ms, with a hook hanging"
wait_until 10 '[ "$(wc -l <hooks.log)" -ge 8 ]' || fail "hooks: $(cat hooks.log)"
sleep 2
cat hooks.log
# Once for each failed row, none for the rows done (8 was retried once).
assert_eq "1 2 3 4 5 6 7 9" "$(cut -d' ' -f2 hooks.log | sort -n | tr '\n' ' ' | sed 's/ $//')" \
    "rows whose hook ran"
assert_eq "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'failed'")" 8 "failed rows"
line() { grep "^email $1 " hooks.log; }
assert_match '^email 1 1 failed \[.*no such mailbox.*\] \{"id":1,"recipient":"u1@x"' "$(line 1)" "row 1's hook"
assert_match '^email 5 2 failed \[.*smtp down.*\]' "$(line 5)" "row 5's hook, after its last try"
assert_match '^email 7 2 timeout \[timed out after 1s' "$(line 7)" "row 7's hook"
assert_match '^email 9 2 killed \[killed by signal 9' "$(line 9)" "row 9's hook"
# Row 2's hook hung: killed at its timeout, logged, and the queue did not wait.
wait_until 10 'grep -q "on_failed email: row 2: .*timed out after 1s" rowq.log' ||
    fail "the hanging hook was not stopped at on_failed_timeout"
metric() { curl -fs "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
assert_eq 8 "$(metric 'rowq_on_failed_runs_total{queue="email"}')" "runs counted"
assert_eq 1 "$(metric 'rowq_on_failed_failures_total{queue="email"}')" "failures counted"

# ---- on_failed_rate: 3 a minute; 6 more rows fail at once ----
kill -TERM "$ROWQ_PID"; wait "$ROWQ_PID" || true; untrack_pid "$ROWQ_PID"
sed -i 's|^    on_failed_timeout: 1s|    on_failed_timeout: 1s\n    on_failed_rate: 3|' rowq.yaml
: >hooks.log
sql "INSERT INTO email (id, recipient, subject, body)
    SELECT 100 + seq, 'x', 's', '' FROM $(seq_rows 6)"
sed -i 's/^1|2|3|4)/1|2|3|4|10[1-6])/' handle
rowq_start rowq.yaml rowq2.log
wait_until 30 final || fail "rows still waiting after the second start"
sleep 2
assert_eq 3 "$(wc -l <hooks.log)" "hooks run with on_failed_rate 3"
assert_eq 3 "$(metric 'rowq_on_failed_dropped_total{queue="email"}')" "runs dropped, counted"
assert_match 'email: on_failed_rate 3 reached' "$(cat rowq2.log)" "the drop said once"
assert_eq 1 "$(grep -c 'on_failed_rate 3 reached' rowq2.log)" "said once, not per row"
