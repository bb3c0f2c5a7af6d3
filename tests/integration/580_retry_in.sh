#!/usr/bin/env bash
# The handler picks its retry delay: an exec handler's last stderr line
# "retry-in N" with exit 75, a pipe handler's answer "retry-in N
# [message]".  The delay reaches :delay as asked, capped at
# retry.max_delay; the try still counts; a retry-in line with another exit
# status is only text; a bad N is out of protocol.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
# retry_at - the try's own second, per row: a little over N, never under.
# assert_delay ID SECONDS WHAT: row ID's retry_at is SECONDS after a moment
# between $t0 and $t1 (the drain's start and end: a loaded machine may
# take seconds for a drain).
assert_delay()
{
	local at
	at=$(sql_value "SELECT retry_at FROM email WHERE id = $1")
	assert_ge "$at" $((t0 + $2 - 1)) "$3"
	assert_le "$at" $((t1 + $2)) "$3"
}

# ---- exec ----
# 1 asks for 100 s; 2 for 2h, over max_delay (1h); 3 writes the line but
# exits 1; 4 asks on its last try.
sql "INSERT INTO email (id, recipient, subject, body, attempts) VALUES
    (1, 'a@x', 's', '', 0), (2, 'b@x', 's', '', 0), (3, 'c@x', 's', '', 0),
    (4, 'd@x', 's', '', 2)"
cat >handler <<'SH'
#!/bin/sh
case "$ROWQ_KEY" in
1) echo "rate limited" >&2; echo "retry-in 100" >&2; exit 75 ;;
2) echo "retry-in 2h" >&2; exit 75 ;;
3) echo "retry-in 100" >&2; exit 1 ;;
4) echo "retry-in 100" >&2; exit 75 ;;
esac
SH
chmod +x handler
MAX_ATTEMPTS=3 email_config exec.yaml "[$ROWQ_TEST_TMP/handler]"
t0=$(date +%s)
"$ROWQ" -c exec.yaml drain email -w 1 >exec.out 2>exec.err ||
	fail "drain: $(cat exec.err)"
t1=$(date +%s)
assert_delay 1 100 "row 1's delay"
assert_eq "waiting 1" "$(sql_value "SELECT CONCAT(status, ' ', attempts) FROM email WHERE id = 1")" "row 1 counts a try"
assert_match "exit status 75: rate limited" "$(sql_value "SELECT last_error FROM email WHERE id = 1")" "row 1's :error"
assert_delay 2 3600 "row 2 capped at max_delay"
# Row 3's line was not heeded: delay 0s, so it ran to its last try at once.
assert_eq "failed 3" "$(sql_value "SELECT CONCAT(status, ' ', attempts) FROM email WHERE id = 3")" "row 3, exit 1"
assert_eq "failed 3" "$(sql_value "SELECT CONCAT(status, ' ', attempts) FROM email WHERE id = 4")" "row 4, retry-in on the last try"
log=$(cat exec.err)
assert_match "next try in 1m40s, as the handler asked" "$log" "log of row 1"
assert_match "asked for the next try in 2h, capped at retry.max_delay: next try in 1h" "$log" "log of row 2"
assert_match "only exit status 75 asks for it" "$log" "log of row 3"

# ---- pipe ----
# 5 answers retry-in with a message, 6 a bad N on its last try.
sql "INSERT INTO email (id, recipient, subject, body, attempts) VALUES
    (5, 'e@x', 's', '', 0), (6, 'f@x', 's', '', 2)"
cat >pipehandler <<'SH'
#!/bin/sh
while IFS= read -r line; do
	case "$line" in
	*'"id":5,'*) echo "retry-in 50 greylisted until later" ;;
	*) echo "retry-in soon" ;;
	esac
done
SH
chmod +x pipehandler
MAX_ATTEMPTS=3 email_config pipe.yaml "[x]"
sed -i "s|^    exec: .*|    pipe: [$ROWQ_TEST_TMP/pipehandler]|" pipe.yaml
t0=$(date +%s)
"$ROWQ" -c pipe.yaml drain email -w 1 >pipe.out 2>pipe.err ||
	fail "drain: $(cat pipe.err)"
t1=$(date +%s)
assert_delay 5 50 "row 5's delay"
assert_eq "greylisted until later" "$(sql_value "SELECT last_error FROM email WHERE id = 5")" "row 5's :error"
assert_eq "failed 3" "$(sql_value "SELECT CONCAT(status, ' ', attempts) FROM email WHERE id = 6")" "row 6"
assert_match "out of protocol" "$(sql_value "SELECT last_error FROM email WHERE id = 6")" "row 6's :error"
