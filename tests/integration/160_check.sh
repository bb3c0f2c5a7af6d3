#!/usr/bin/env bash
# `rowq check` prepares every statement on the live database and checks its
# parameters against the select's columns: exit 0 when all is well, 78
# with FILE:LINE: key: reason for each problem, before any worker starts.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 5
cd "$ROWQ_TEST_TMP"

email_config good.yaml "[$HANDLERS/fake, append, log]"
out=$("$ROWQ" -c good.yaml check 2>&1) || fail "check of a good config: $out"
assert_match "good.yaml: ok, 1 queue" "$out" "check output"
case $out in *"may be NULL"*) fail "check warns of a NOT NULL key: $out" ;; esac

expect_78()
{
	local file=$1 pattern=$2 out status=0
	out=$("$ROWQ" -c "$file" check 2>&1) || status=$?
	assert_eq 78 "$status" "exit status of check $file ($out)"
	assert_match "$pattern" "$out" "message of check $file"
}

# A parameter that is neither a column of the select nor a built-in.
email_config p.yaml "[$HANDLERS/fake, append, log]"
sed -i 's/WHERE id = :id$/WHERE id = :idd/' p.yaml
expect_78 p.yaml "p.yaml:[0-9]+: queues.email.done: :idd is not a column"

# A column the table lacks, in a finishing statement: the server says so.
email_config c.yaml "[$HANDLERS/fake, append, log]"
sed -i 's/done_count = done_count + 1/sent_at = NOW()/' c.yaml
expect_78 c.yaml "c.yaml:[0-9]+: queues.email.done: Unknown column 'sent_at'"

# A syntax error in the select.
email_config s.yaml "[$HANDLERS/fake, append, log]"
sed -i 's/ORDER BY id/ORDER BY BY id/' s.yaml
expect_78 s.yaml "s.yaml:[0-9]+: queues.email.select: .*SQL syntax"

# A {column} in the handler's arguments that the select does not return.
email_config a.yaml "[$HANDLERS/fake, args, out, \"{body}\"]"
expect_78 a.yaml "a.yaml:[0-9]+: queues.email.exec.3.: .body. is not a column"

# A handler that does not exist.
email_config h.yaml "[/nonexistent/handler]"
expect_78 h.yaml "h.yaml:[0-9]+: queues.email.exec: cannot run /nonexistent/handler"

# Nothing ran: every row is still waiting.
assert_eq 5 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'waiting' AND attempts = 0")" "rows untouched"

# `run` refuses the same configuration before starting any worker.
status=0
"$ROWQ" -c p.yaml run >run.log 2>&1 || status=$?
assert_eq 78 "$status" "exit status of run with a bad config"
assert_eq 0 "$(grep -c 'started' run.log || true)" "workers started"
