#!/usr/bin/env bash
# A finishing statement that fails whatever the row (a JSON path typo,
# JSON_SET(meta, '$finished_at', ...), which the server refuses at run
# time: `check` cannot see it) stops the queue's workers with a clear
# error instead of marking every row failed for good:
#   1. drain: exits 1 within seconds, the error with the file, line and
#      statement in its log; no row marked, no try counted;
#   2. run: the workers wait, `rowq status` shows them failing and the
#      error, rowq_statement_failing_workers says so; the statement fixed
#      and a reload, every row is done once;
#   3. a statement that fails for one row's data alone (a value too long
#      for its column) still marks that row failed and goes on.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/wake.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=200
email_table $rows
sql "ALTER TABLE email ADD meta JSON NULL"
sql "UPDATE email SET meta = '{}'"
bad="UPDATE email SET status = 'sent', attempts = attempts + 1, done_count = done_count + 1, meta = JSON_SET(meta, '\$finished_at', NOW()) WHERE id = :id"
good=${bad//\$finished_at/\$.finished_at}

# config FILE DONE: the email queue with that done.
config()
{
	email_config "$1" "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/handled]"
	python3 - "$1" "$2" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s, n = re.subn(r"    done: UPDATE email SET status = 'sent'[^\n]*\n(          [^\n]*\n)*",
    "    done: \"" + sys.argv[2] + "\"\n", s)
assert n == 1, n
open(sys.argv[1], 'w').write(s)
PY
}

# ---- 1. drain ----
config bad.yaml "$bad"
line=$(grep -n '^    done:' bad.yaml | cut -d: -f1)
"$ROWQ" -c bad.yaml check --strict >check.out 2>&1 ||
	fail "check refused what only running shows: $(cat check.out)"
start=$(now_us)
status=0
timeout 60 "$ROWQ" -c bad.yaml drain email >drain.out 2>drain.err || status=$?
took=$((($(now_us) - start) / 1000))
figure "drain with a failing done: ms until it ended" "$took"
assert_eq 1 "$status" "drain's exit status ($(cat drain.err))"
assert_le "$took" 10000 "drain: ms until it ended"
assert_match "bad.yaml:$line: queues.email.done for key [0-9]+: .*JSON path.*: the statement fails whatever the row, so no row is marked: the rows go back as they were and the drain ends; fix the statement and reload.  The statement: UPDATE email SET status = 'sent'" \
    "$(cat drain.err)" "drain: the error"
assert_eq "$rows 0 0" "$(sql_value "SELECT CONCAT_WS(' ', SUM(status = 'waiting'), SUM(attempts), SUM(done_count)) FROM email")" "drain: rows left as they were"

# ---- 2. run, then the fix and a reload ----
port=$(free_port)
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics: 127.0.0.1:$port\nqueues:|" bad.yaml
rowq_start bad.yaml run.log
pid=$ROWQ_PID
wait_until 20 '[ "$(metric "$port" rowq_statement_failing_workers email 2>/dev/null)" = 2 ]' ||
	fail "run: rowq_statement_failing_workers is '$(metric "$port" rowq_statement_failing_workers email)', not 2: $(cat run.log)"
out=$("$ROWQ" -c bad.yaml status email 2>&1) || true
assert_match "email/[12] pid [0-9]+: failing" "$out" "run: status shows the workers failing"
assert_match "email last error: .*JSON path" "$out" "run: status shows the error"
assert_le "$(grep -c 'the statement fails whatever the row' run.log)" 2 "run: the long message once per worker"
sleep 3
assert_eq "$rows 0" "$(sql_value "SELECT CONCAT_WS(' ', SUM(status = 'waiting'), SUM(attempts)) FROM email")" "run: rows left as they were"
# Waits grow: 2 workers, about 5 s, a handful of tries each, not hundreds.
tries=$(wc -l <handled)
figure "handler runs in the first seconds of a failing done" "$tries"
assert_le "$tries" 20 "run: handler runs while the statement fails"
config fixed.yaml "$good"
sed "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics: 127.0.0.1:$port\nqueues:|" fixed.yaml >bad.yaml
kill -HUP "$pid"
wait_all_final 90 || fail "run: rows still waiting after the fix: $(email_count "status = 'waiting'")"
stop_rowq "$pid"
assert_exactly_once $rows
assert_eq "$rows" "$(sql_value "SELECT COUNT(*) FROM email WHERE JSON_EXTRACT(meta, '\$.finished_at') IS NOT NULL")" "run: the fixed statement's work"

# ---- 3. one row's data: that row marked failed, the others done ----
sql "DROP TABLE email"
email_table 0
sql "INSERT INTO email (id, recipient, subject, body)
    SELECT seq, 'u@example.com', 's', '' FROM $(seq_rows 5)"
sql "ALTER TABLE email MODIFY subject VARCHAR(3) NOT NULL"
config data.yaml "UPDATE email SET status = 'sent', attempts = attempts + 1, done_count = done_count + 1, subject = IF(id = 3, 'far too long', subject) WHERE id = :id"
timeout 60 "$ROWQ" -c data.yaml drain email >data.out 2>data.err ||
	fail "data: drain: $(cat data.err)"
assert_eq "failed" "$(sql_value "SELECT status FROM email WHERE id = 3")" "data: the row with the bad value"
assert_eq 4 "$(email_count "status = 'sent'")" "data: the other rows"
