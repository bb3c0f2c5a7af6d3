#!/usr/bin/env bash
# Pipe handlers: 10,000 rows through one long-running handler per worker,
# each row once; then handlers that crash on a row, hang, answer garbage or
# cannot start: each row ends where the retry policy says, the daemon stays
# up, and restarts are spaced out (no hot loop, no fork bomb).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
PIPE=$HANDLERS/pipefake

pipe_config()
{
	email_config "$1" "[x]"
	sed -i "s|^    exec: .*|    pipe: $2|" "$1"
}

# ---- 10,000 rows, 2 workers, each row once ----
rows=10000
email_table $rows
pipe_config many.yaml "[$PIPE, ok, $ROWQ_TEST_TMP/many.log]"
"$ROWQ" -c many.yaml drain email -w 2 >many.out 2>many.err || fail "drain: $(cat many.err)"
cat many.out
assert_eq $rows "$(wc -l <many.log)" "rows handled"
assert_eq "" "$(cut -d' ' -f1 many.log | sort | uniq -d | head -3)" "rows handled twice"
assert_eq $rows "$(sql_value "SELECT SUM(done_count) FROM email WHERE status = 'sent'")" "rows done once"
assert_eq 2 "$(cut -d' ' -f2 many.log | sort -u | wc -l)" "handler processes for 2 workers"

# ---- misbehaving handlers: 10 rows each, row 5 is the bad one ----
misbehave()
{
	local name=$1 handler=$2
	sql "DELETE FROM email; INSERT INTO email (id, recipient, subject, body)
	    SELECT seq, CONCAT('u', seq, '@example.com'), 's', '' FROM $(seq_rows 10)"
	TIMEOUT=1s MAX_ATTEMPTS=3 pipe_config "$name.yaml" "$handler"
	rowq_start "$name.yaml" "$name.rowq"
	wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status <> '"'waiting'"'")" = 10 ]' ||
		fail "$name: rows not final: $(sql "SELECT id, status, attempts, last_error FROM email WHERE status = 'waiting'"; cat "$name.rowq")"
	kill -0 "$ROWQ_PID" || fail "$name: rowq died"
	kill -TERM "$ROWQ_PID"
	wait "$ROWQ_PID" || fail "$name: rowq exited with $?"
	untrack_pid "$ROWQ_PID"
	assert_eq 9 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'sent' AND attempts = 1")" "$name: good rows done on the first try"
	assert_eq "failed 3" "$(sql_value "SELECT CONCAT(status, ' ', attempts) FROM email WHERE id = 5")" "$name: row 5"
}

misbehave crash "[$PIPE, crash-on, \"5\", $ROWQ_TEST_TMP/crash.log]"
assert_match "pipe handler died: exit status 3" "$(sql_value "SELECT last_error FROM email WHERE id = 5")" "crash: :error"

misbehave hang "[$PIPE, hang-on, \"5\", $ROWQ_TEST_TMP/hang.log]"
assert_match "timed out after 1s" "$(sql_value "SELECT last_error FROM email WHERE id = 5")" "hang: :error"

misbehave garbage "[$PIPE, garbage-on, \"5\", $ROWQ_TEST_TMP/garbage.log]"
assert_match "answer out of protocol: \"what is this row\?\"" "$(sql_value "SELECT last_error FROM email WHERE id = 5")" "garbage: :error"
assert_match "stderr: started" "$(cat garbage.rowq)" "handler stderr logged"

# An answer too many is never taken for the next row's: every row done
# was seen by the handler, and the handler was restarted.
sql "DELETE FROM email; INSERT INTO email (id, recipient, subject, body)
    SELECT seq, CONCAT('u', seq, '@example.com'), 's', '' FROM $(seq_rows 10)"
WORKERS=1 pipe_config double.yaml "[$PIPE, double-on, \"5\", $ROWQ_TEST_TMP/double.log]"
"$ROWQ" -c double.yaml drain email >/dev/null 2>double.err || fail "drain: $(cat double.err)"
# When both answers arrive in one read, row 5's own answer is out of
# protocol: the handler does it again each time, so row 5 may end failed.
assert_eq 9 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'sent' AND id <> 5")" "double: other rows done"
case $(sql_value "SELECT status FROM email WHERE id = 5") in
sent) ;;
failed) assert_match "answer out of protocol" "$(sql_value "SELECT last_error FROM email WHERE id = 5")" "double: row 5's error" ;;
*) fail "double: row 5 neither sent nor failed" ;;
esac
for id in $(sql "SELECT id FROM email WHERE status = 'sent'"); do
	grep -q "^$id " double.log || fail "double: row $id done but never seen by the handler"
done
# Caught between rows, or with the next row's answer (which then counts
# as a failed try of that row, not as its answer).  An answer carries no
# key, so a second "ok 5" written just after rowq looked for strays is
# taken as row 6's: the answers then run one row behind until one arrives
# with no row waiting ("ok 10" after the last row, said at the latest when
# the handler stops), or until two arrive in one read ("ok 7\nok 8").
assert_match "(wrote .*ok (5|6|7|8|9|10).* when no row was waiting for an answer|answer out of protocol: .ok (5|6|7|8|9|10))" "$(cat double.err)" "double: stray answer logged"
# Caught out, the handler is started again; not when its stray answer
# came after the last row, as the drain then ends without another row.
grep -qE "wrote .*ok 10.* when no row was waiting" double.err ||
	assert_ge "$(cut -d' ' -f2 double.log | sort -u | wc -l)" 2 "double: handler processes (restarted)"

# What a handler writes after its last answer, when no row follows to
# catch it, is said at its stop: an answer too many is never unseen.
sql "DELETE FROM email; INSERT INTO email (id, recipient, subject, body)
    VALUES (1, 'u1@example.com', 's', '')"
WORKERS=1 pipe_config bye.yaml "[$PIPE, bye-at-eof, $ROWQ_TEST_TMP/bye.log]"
"$ROWQ" -c bye.yaml drain email >/dev/null 2>bye.err || fail "drain: $(cat bye.err)"
assert_eq "sent" "$(sql_value "SELECT status FROM email WHERE id = 1")" "bye: row 1"
assert_match 'wrote "bye\\n" when no row was waiting for an answer: out of protocol \(one line per row\); at its stop' \
	"$(cat bye.err)" "bye: output after the last answer logged"

# ---- a handler that exits at start-up: restarts spaced out ----
sql "DELETE FROM email; INSERT INTO email (id, recipient, subject, body)
    SELECT seq, CONCAT('u', seq, '@example.com'), 's', '' FROM $(seq_rows 10)"
WORKERS=1 MAX_ATTEMPTS=100 pipe_config dead.yaml "[$PIPE, exit-at-start]"
rowq_start dead.yaml dead.rowq
sleep 8
kill -0 "$ROWQ_PID" || fail "rowq died with a handler that cannot start"
starts=$(grep -c 'stderr: started' dead.rowq || true)
# Restart delays 1, 2, 4 s...: about 4 starts in 8 s, never hundreds.
assert_ge "$starts" 2 "starts of a dying handler in 8 s"
assert_le "$starts" 6 "starts of a dying handler in 8 s"
assert_eq 10 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'waiting'")" "rows still waiting"
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "dead: rowq exited with $?"
untrack_pid "$ROWQ_PID"
