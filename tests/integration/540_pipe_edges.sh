#!/usr/bin/env bash
# Pipe handlers at the protocol's edges: stderr written between rows is
# logged within a bound, with a note of what was dropped; an answer that
# comes before rowq has written the whole row (a large one) belongs to
# that row, and the next row gets its own line and its own answer.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
ODD=$HANDLERS/pipeodd
log=$ROWQ_TEST_TMP/handled

odd_config()
{
	WORKERS=1 TIMEOUT=3s email_config "$1" "[x]"
	sed -i "s|^    exec: .*|    pipe: $2|; s|SELECT id, recipient, subject, attempts|SELECT id, recipient, subject, attempts, body|" "$1"
}

# ---- stderr between rows: 20,000 lines, at most the per-row bound logged ----
email_table 1
odd_config flood.yaml "[$ODD, stderr-flood, \"20000\", $log]"
rowq_start flood.yaml flood.rowq
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP/flood.rowq"'
wait_until 20 'grep -q "^1 flooded" "$log" 2>/dev/null' ||
	fail "the handler never finished its chatter"
sleep 1
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "flood: rowq exited with $?"
untrack_pid "$ROWQ_PID"
assert_eq "sent" "$(sql_value "SELECT status FROM email WHERE id = 1")" "flood: row 1"
chatter=$(grep -c 'stderr: chatter line' flood.rowq || true)
assert_ge "$chatter" 1 "flood: stderr between rows logged at all"
# At most 100 a minute between rows, and 100 for row 1 itself: the first
# lines may be read with its answer, while row 1 is still the current row.
assert_le "$chatter" 200 "flood: stderr lines logged (20,000 written)"
assert_match "more lines not logged" "$(grep 'stderr: [0-9]* more lines' flood.rowq)" \
    "flood: a note of what was dropped"

# ---- an answer before the whole row was written ----
# Row 2 is larger than a pipe's buffer: written in several goes.
sql "ALTER TABLE email MODIFY body MEDIUMTEXT NOT NULL;
    DELETE FROM email; INSERT INTO email (id, recipient, subject, body)
    SELECT seq, CONCAT('u', seq, '@example.com'), 's',
    IF(seq = 2, REPEAT('x', 300000), 'small') FROM $(seq_rows 4)"
: >"$log"
odd_config early.yaml "[$ODD, early, $log]"
"$ROWQ" -c early.yaml drain email >early.out 2>early.err || fail "drain: $(cat early.err)"
assert_eq "1 ids=1
2 ids=1
3 ids=1
4 ids=1" "$(cat "$log")" "early: each row read as one whole line of its own"
assert_eq 4 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'sent' AND attempts = 1")" \
    "early: rows done on the first try ($(sql "SELECT id, status, attempts, last_error FROM email WHERE attempts <> 1"))"
