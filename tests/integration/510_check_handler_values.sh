#!/usr/bin/env bash
# Values that handlers and statements misread, caught by `rowq check`:
#   1. A select column named like a built-in parameter (error here) would
#      hide it: refused (78), naming the column, the statement and the
#      way out (alias the column); the same select with the column
#      aliased is fine.  A worker refuses it too (exit 78, no row done).
#   2. A {column} argument that can start with '-' becomes an option of
#      the handler: warned about, by argument and column, unless it comes
#      after a "--"; an UNSIGNED column is never warned about.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 2

# ---- 1. a column that shadows :error ----
email_config shadow.yaml "[$HANDLERS/fake, exit, 0]"
sed -i "s|SELECT id, recipient, subject, attempts FROM email|SELECT id, recipient, subject, attempts, last_error AS error FROM email|" shadow.yaml
grep -q "last_error AS error" shadow.yaml || fail "shadow.yaml: edit did not apply"
status=0
"$ROWQ" -c shadow.yaml check >shadow.out 2>&1 || status=$?
assert_eq 78 "$status" "check with a column named error ($(cat shadow.out))"
grep -q '^    retry:' shadow.yaml || fail "shadow.yaml: no retry: section"
assert_match "shadow\.yaml:[0-9]+: queues\.email\.retry\.update: :error is both a column of the select and a built-in parameter" \
    "$(cat shadow.out)" "the message names the statement and the column"
assert_match "alias the column in the select" "$(cat shadow.out)" "the message says the way out"
assert_match "queues\.email\.failed: :error is both" "$(cat shadow.out)" "every statement that uses it"
status=0
"$ROWQ" -c shadow.yaml drain email >shadow-drain.out 2>&1 || status=$?
assert_eq 78 "$status" "drain with a column named error ($(cat shadow-drain.out))"
assert_eq 0 "$(email_count "status <> 'waiting'")" "rows finished by a worker with the shadowing column"
sed -i "s|last_error AS error|last_error AS previous_error|" shadow.yaml
"$ROWQ" -c shadow.yaml check >aliased.out 2>&1 || fail "check with the column aliased: $(cat aliased.out)"

# ---- 2. {column} arguments that can start with '-' ----
sql "ALTER TABLE email ADD COLUMN size INT UNSIGNED NOT NULL DEFAULT 0"
email_config dash.yaml "[$HANDLERS/fake, args, out, \"{recipient}\", \"to={recipient}\", \"{size}\"]"
sed -i "s|SELECT id, recipient, subject, attempts FROM email|SELECT id, recipient, subject, attempts, size FROM email|" dash.yaml
"$ROWQ" -c dash.yaml check >dash.out 2>&1 || fail "check with a {column} argument: $(cat dash.out)"
assert_match "dash\.yaml:[0-9]+: queues\.email\.exec\[3\]: \{recipient\} can begin with '-'" "$(cat dash.out)" "warning for {recipient}"
assert_match "put \"--\" before it" "$(cat dash.out)" "the warning says the way out"
assert_eq 1 "$(lines dash.out "can begin with '-'")" "warnings (to={recipient} and the UNSIGNED {size} are safe)"
email_config dashdash.yaml "[$HANDLERS/fake, args, out, --, \"{recipient}\"]"
"$ROWQ" -c dashdash.yaml check >dashdash.out 2>&1 || fail "check with --: $(cat dashdash.out)"
assert_eq 0 "$(lines dashdash.out "can begin with '-'")" "warnings after --"
