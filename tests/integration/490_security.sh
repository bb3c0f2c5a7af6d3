#!/usr/bin/env bash
# Security.
#   1. Never a shell, never spliced SQL: every column holds $(touch pwned),
#      backticks, ;, |, > and newlines, and is passed as {column}
#      arguments (exec), on stdin (exec and pipe), and back into SQL as
#      :error and :output.  No command runs (no pwned file anywhere), each
#      value arrives byte for byte, and the table survives an :error of
#      '; DROP TABLE email; --.
#   2. The database password (from password_file, as user rowqsec) is in
#      no process's argv or environment (rowq's or a handler's), not in
#      `ps`, not in the log, also when the password is wrong.
#   3. A password_file that everyone may read is warned about, by name.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
mkdir -p "$ROWQ_TEST_TMP/cwd"
cd "$ROWQ_TEST_TMP/cwd"

# ---- 1. hostile values ----
email_table 0
evil="a \$(touch pwned1) \`touch pwned2\` ; touch pwned3 | tee pwned4 > pwned5 && touch pwned6
\$(touch pwned7)'\"; DROP TABLE email; --"
printf '%s' "$evil" >evil.txt
hex=$(od -An -tx1 <evil.txt | tr -d ' \n')
for id in 1 2 3; do
	sql "INSERT INTO email (id, recipient, subject, body) VALUES
	    ($id, UNHEX('$hex'), UNHEX('$hex'), UNHEX('$hex'))"
done
assert_eq "$hex" "$(sql_value "SELECT LOWER(HEX(subject)) FROM email WHERE id = 1")" "the value as stored"

# A handler that reports its arguments back through :error, then fails.
cat >"$ROWQ_TEST_TMP/echo-args" <<'SH'
#!/bin/sh
# Writes each argument NUL-terminated to $OUT.$ROWQ_KEY, copies stdin to
# $OUT.$ROWQ_KEY.stdin, says the first argument on stderr, exits 1.
out=$1
shift
: >"$out.$ROWQ_KEY"
for a in "$@"; do printf '%s\0' "$a" >>"$out.$ROWQ_KEY"; done
cat >"$out.$ROWQ_KEY.stdin"
printf '%s' "$1" >&2
exit 1
SH
chmod +x "$ROWQ_TEST_TMP/echo-args"
MAX_ATTEMPTS=1 email_config evil.yaml "[$ROWQ_TEST_TMP/echo-args, $ROWQ_TEST_TMP/args, \"{recipient}\", \"{subject}\", \"x{id}{subject}\"]"
"$ROWQ" -c evil.yaml drain email >drain.out 2>drain.err || true
assert_eq 3 "$(email_count "status = 'failed'")" "rows failed through :error"
assert_eq 1 "$(sql_value "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'email'")" "the email table, after :error held DROP TABLE"
# last_error is "exit status 1: " and the first argument, i.e. the value.
assert_eq "$(printf 'exit status 1: %s' "$evil" | od -An -tx1 | tr -d ' \n')" \
    "$(sql_value "SELECT LOWER(HEX(last_error)) FROM email WHERE id = 2")" ":error stored byte for byte"
python3 - "$ROWQ_TEST_TMP/args.1" evil.txt <<'PY' || fail "arguments were changed (above)"
import json, sys
args = open(sys.argv[1], "rb").read().split(b"\0")[:-1]
evil = open(sys.argv[2], "rb").read()
assert args == [evil, evil, b"x1" + evil], args
row = json.loads(open(sys.argv[1] + ".stdin", "rb").read())
assert row["recipient"] == row["subject"] == evil.decode(), row
PY

# The same values through a pipe handler, and back into SQL as :output.
sql "UPDATE email SET status = 'waiting', attempts = 0, last_error = NULL"
cat >"$ROWQ_TEST_TMP/echo-pipe" <<'PY'
#!/usr/bin/env python3
# Answers "ok" and the row's subject, escaped the way the protocol needs
# (one line): the newline as \n, which is text to rowq.
import json, sys
for line in sys.stdin:
    row = json.loads(line)
    print("ok " + row["subject"].replace("\n", "\\n"), flush=True)
PY
chmod +x "$ROWQ_TEST_TMP/echo-pipe"
email_config pipe.yaml "[x]"
sed -i "s|^    exec: .*|    pipe: [$ROWQ_TEST_TMP/echo-pipe]|; s|done_count = done_count + 1 WHERE id = :id|done_count = done_count + 1, last_error = :output WHERE id = :id|" pipe.yaml
"$ROWQ" -c pipe.yaml drain email >drain.out 2>drain.err || fail "pipe drain: $(cat drain.err)"
assert_eq 3 "$(email_count "status = 'sent'")" "rows done by the pipe handler"
assert_eq "$(printf '%s' "${evil//$'\n'/\\n}" | od -An -tx1 | tr -d ' \n')" \
    "$(sql_value "SELECT LOWER(HEX(last_error)) FROM email WHERE id = 3")" ":output stored byte for byte"
found=$(find "$ROWQ_TEST_TMP" "$REPO_ROOT" /tmp -maxdepth 3 -name 'pwned*' 2>/dev/null | head -3)
assert_eq "" "$found" "files a shell would have made"
figure "hostile values passed without a shell (argv, stdin, pipe, :error, :output)" "3 rows x 3 columns"

# ---- 2. the password ----
secret="S3cr3t-$RANDOM$RANDOM-pw"
sql "DROP USER IF EXISTS rowqsec@localhost;
    CREATE USER rowqsec@localhost IDENTIFIED BY '$secret';
    GRANT ALL ON \`$ROWQ_TEST_DB\`.* TO rowqsec@localhost"
printf '%s\n' "$secret" >"$ROWQ_TEST_TMP/pw"
chmod 600 "$ROWQ_TEST_TMP/pw"
sql "DELETE FROM email"
sql "INSERT INTO email (recipient, subject, body) SELECT 'r', 's', 'b' FROM $(seq_rows 200)"
email_config pw.yaml "[$HANDLERS/fake, env, $ROWQ_TEST_TMP/env.out]"
sed -i "s|^  user: root|  user: rowqsec\n  password_file: $ROWQ_TEST_TMP/pw|" pw.yaml
grep -q password_file pw.yaml || fail "pw.yaml: edit did not apply"
"$ROWQ" -c pw.yaml check >check.out 2>&1 || fail "check as rowqsec: $(cat check.out)"
assert_eq 0 "$(lines check.out 'readable by everyone')" "warnings about a 0600 password file"
rowq_start pw.yaml pw.log
wait_until 20 '[ "$(email_count "status = '"'sent'"'")" -ge 20 ]' || fail "rowq as rowqsec did nothing: $(cat pw.log)"
# While it runs: every process of ours, and ps.
procs="$ROWQ_PID $(descendants "$ROWQ_PID")"
for p in $procs; do
	for f in cmdline environ; do
		if tr '\0' '\n' 2>/dev/null <"/proc/$p/$f" | grep -qF "$secret"; then
			fail "the password is in /proc/$p/$f ($(tr '\0' ' ' <"/proc/$p/cmdline"))"
		fi
	done
done
ps -eo pid,args >ps.out
! grep -qF "$secret" ps.out || fail "the password is in ps: $(grep -F "$secret" ps.out)"
wait_all_final 60 || fail "rows still waiting"
stop_rowq "$ROWQ_PID"
[ -s "$ROWQ_TEST_TMP/env.out" ] || fail "no handler wrote its environment"
! grep -qF "$secret" "$ROWQ_TEST_TMP/env.out" || fail "the password is in a handler's environment"
! grep -qF "$secret" pw.log || fail "the password is in the log"
figure "processes searched for the password (argv, environ)" "$(wc -w <<<"$procs")"

# A wrong password: refused, and the log still does not say it.
printf 'wrong-%s\n' "$secret" >"$ROWQ_TEST_TMP/pw"
status=0
"$ROWQ" -c pw.yaml check >wrong.out 2>&1 || status=$?
assert_eq 78 "$status" "exit status of check with a wrong password (access denied is a configuration error)"
assert_match "Access denied for user 'rowqsec'" "$(cat wrong.out)" "wrong password: message"
line=$(grep -n 'password_file:' pw.yaml | cut -d: -f1)
assert_match "pw\.yaml:$line: database\.password_file: the password from $ROWQ_TEST_TMP/pw was refused" \
    "$(cat wrong.out)" "wrong password: names the file and line of password_file:"
for cmd in status "drain email"; do
	"$ROWQ" -c pw.yaml $cmd >wrong.out 2>&1 || true
	assert_match "pw\.yaml:$line: database\.password_file: the password from" \
	    "$(cat wrong.out)" "wrong password, rowq $cmd: names password_file:"
done
! grep -qF "$secret" wrong.out || fail "the wrong password is in the log: $(cat wrong.out)"

# ---- 3. a password file everyone may read ----
printf '%s\n' "$secret" >"$ROWQ_TEST_TMP/pw"
chmod 644 "$ROWQ_TEST_TMP/pw"
"$ROWQ" -c pw.yaml check >loose.out 2>&1 || fail "check with a 0644 password file: $(cat loose.out)"
assert_match "$ROWQ_TEST_TMP/pw: the password file is readable by everyone \(mode 0644\)" "$(cat loose.out)" "warning for a 0644 password file"
! grep -qF "$secret" loose.out || fail "the password is in the warning"
