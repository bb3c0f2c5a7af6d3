#!/usr/bin/env bash
# What a handler gets: a column value with spaces, quotes, ;, $(...),
# backticks and newlines as exactly one argument, unchanged, and no
# command run by a shell; the row as one line of valid JSON on stdin;
# ROWQ_QUEUE, ROWQ_KEY and ROWQ_ATTEMPT; no descriptor but 0, 1 and 2.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 0
cd "$ROWQ_TEST_TMP"
sql "INSERT INTO email (id, recipient, subject, body) VALUES (7, 'x@example.com',
    CONCAT('a b \"quoted\" ''single'' ; \$(touch pwned) \`touch pwned2\` | cat > pwned3 ', CHAR(10), 'line2 {id}'),
    CONCAT('caf', CHAR(0xC3, 0xA9), ' ', CHAR(0xC3, 0xBF), ' tab', CHAR(9), 'nul', CHAR(0), '.'))"
expected=$(sql_value "SELECT HEX(subject) FROM email WHERE id = 7")

for mode in args stdin env fds; do
	email_config "$ROWQ_TEST_TMP/$mode.yaml" "[$HANDLERS/fake, $mode, $ROWQ_TEST_TMP/$mode.out, \"{subject}\", \"<{id}>\", \"{{literal}}\"]"
	sql "UPDATE email SET status = 'waiting', attempts = 0"
	"$ROWQ" -c "$ROWQ_TEST_TMP/$mode.yaml" drain email >/dev/null 2>"$ROWQ_TEST_TMP/$mode.err" ||
		fail "drain ($mode): $(cat "$ROWQ_TEST_TMP/$mode.err")"
done

# argv: three arguments, NUL-terminated, the first the subject's bytes.
assert_eq 3 "$(tr -cd '\0' <args.out | wc -c)" "arguments received"
assert_eq "$expected" "$(head -z -n1 args.out | head -c -1 | od -An -tx1 | tr -d ' \n' | tr a-f A-F)" "first argument, as hex"
assert_eq "<7>" "$(tr '\0' '\n' <args.out | sed -n 3p)" "second argument"
assert_eq "{literal}" "$(tr '\0' '\n' <args.out | sed -n 4p)" "braces argument"
for f in pwned pwned2 pwned3; do
	[ ! -e "$ROWQ_TEST_TMP/$f" ] && [ ! -e "$REPO_ROOT/$f" ] || fail "a shell ran: $f exists"
done

# stdin: one line, valid JSON, with the values as the select returned them.
assert_eq 1 "$(wc -l <stdin.out)" "lines on stdin"
python3 - "$ROWQ_TEST_TMP/stdin.out" <<'PY' || fail "stdin is not the row as JSON: $(cat stdin.out)"
import json, sys
row = json.loads(open(sys.argv[1], 'rb').read().decode('utf-8'))
assert row['id'] == 7, row
assert row['attempts'] == 0, row
assert row['recipient'] == 'x@example.com', row
assert row['subject'].startswith('a b "quoted" \'single\' ; $(touch pwned)'), row
assert row['subject'].endswith('\nline2 {id}'), row
assert list(row) == ['id', 'recipient', 'subject', 'attempts'], row
PY

# environment
assert_match "^ROWQ_QUEUE=email$" "$(grep '^ROWQ_QUEUE=' env.out)" "ROWQ_QUEUE"
assert_match "^ROWQ_KEY=7$" "$(grep '^ROWQ_KEY=' env.out)" "ROWQ_KEY"
assert_match "^ROWQ_ATTEMPT=1$" "$(grep '^ROWQ_ATTEMPT=' env.out)" "ROWQ_ATTEMPT"
assert_eq "" "$(grep -E '^(NOTIFY_SOCKET|WATCHDOG_)' env.out || true)" "systemd variables passed on"

# descriptors: only stdin, stdout and stderr; the database socket stays home.
assert_eq "0 1 2" "$(sort -n fds.out | tr '\n' ' ' | sed 's/ $//')" "open descriptors"
