#!/usr/bin/env bash
# traceparent_column: a row's W3C traceparent reaches an exec handler as
# TRACEPARENT (only when it is one: a malformed value is not passed on),
# and a pipe handler in the row's JSON (its environment is fixed per
# process), so that the handler joins the trace of the request that
# queued the row.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "ALTER TABLE email ADD COLUMN trace VARCHAR(600) NULL"
tp=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
sql "INSERT INTO email (id, recipient, subject, body, trace) VALUES
    (1, 'r', 's', '', '$tp'), (2, 'r', 's', '', 'not-a-traceparent'),
    (3, 'r', 's', '', NULL),
    (4, 'r', 's', '', '00-00000000000000000000000000000000-00f067aa0ba902b7-01')"
cat >exec-handler <<'SH'
#!/bin/bash
cat >/dev/null
echo "$ROWQ_KEY ${TRACEPARENT-none}" >>"$1"
SH
cat >pipe-handler <<'SH'
#!/bin/bash
while IFS= read -r line; do
	echo "$line" >>"$1"
	echo ok
done
SH
chmod +x exec-handler pipe-handler
email_config exec.yaml "[$ROWQ_TEST_TMP/exec-handler, $ROWQ_TEST_TMP/exec.log]" \
    "traceparent_column: trace"
sed -i "s/SELECT id, recipient, subject, attempts FROM email/SELECT id, recipient, subject, attempts, trace FROM email/" exec.yaml
"$ROWQ" -c exec.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
"$ROWQ" -c exec.yaml drain email >drain.out 2>&1 || fail "drain: $(cat drain.out)"
assert_eq "1 $tp" "$(grep '^1 ' exec.log)" "row 1: TRACEPARENT"
assert_eq "2 none" "$(grep '^2 ' exec.log)" "row 2: a malformed value is not passed"
assert_eq "3 none" "$(grep '^3 ' exec.log)" "row 3: NULL"
assert_eq "4 none" "$(grep '^4 ' exec.log)" "row 4: an all-zero trace id"

sql "UPDATE email SET status = 'waiting'"
sed -e "s|exec: \[$ROWQ_TEST_TMP/exec-handler, $ROWQ_TEST_TMP/exec.log\]|pipe: [$ROWQ_TEST_TMP/pipe-handler, $ROWQ_TEST_TMP/pipe.log]|" \
    exec.yaml >pipe.yaml
"$ROWQ" -c pipe.yaml drain email >drain.out 2>&1 || fail "drain (pipe): $(cat drain.out)"
assert_match "\"id\":1,.*\"trace\":\"$tp\"" "$(grep '"id":1,' pipe.log)" "pipe: the traceparent in the row's JSON"

# A traceparent_column that is not a column of the select: refused.
sed "s/traceparent_column: trace/traceparent_column: nosuch/" exec.yaml >bad.yaml
rc=0; "$ROWQ" -c bad.yaml check >bad.out 2>&1 || rc=$?
assert_eq 78 "$rc" "check with a traceparent_column not in the select"
assert_match 'bad\.yaml:[0-9]+: queues\.email\.traceparent_column: .*nosuch' "$(cat bad.out)" "the message names file, line and key"
