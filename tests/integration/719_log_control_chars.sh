#!/usr/bin/env bash
# A value that reaches a log line cannot make a line of its own: an
# operator's pause reason and a discarded row's key with a newline in
# them (and an escape sequence) are written escaped, \n and \x1b, inside
# the one line that logs the action, on plain standard error and in
# log_format: json alike.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "CREATE TABLE jobs (k VARCHAR(200) NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    last_error TEXT NULL, INDEX (status, k)) ENGINE=InnoDB"
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
console_config rowq.yaml "$port"
cat >>rowq.yaml <<YAML
  jobs:
    select: SELECT k FROM jobs WHERE status = 'waiting' ORDER BY k
    exec: [/bin/true]
    done: UPDATE jobs SET status = 'done' WHERE k = :k
    failed: UPDATE jobs SET status = 'failed' WHERE k = :k
    failed_select: SELECT k, last_error FROM jobs WHERE status = 'failed' ORDER BY k
    discard: DELETE FROM jobs WHERE k = :k AND status = 'failed'
YAML
forged='2026-01-01 00:00:00.000 console: FORGED'
code() { console_curl -o /dev/null -w '%{http_code}' "$@"; }

# act LOG: a pause with a reason of two lines, a resume, and the discard
# of a row whose key has a newline and an escape in it, through the
# console of a daemon that logs to LOG.
act()
{
	local csrf key log=$1
	sql "INSERT INTO jobs VALUES (CONCAT('k', CHAR(10), '$forged key', CHAR(27), '[2J'), 'failed', 'x')"
	rowq_start rowq.yaml "$1"
	console_up
	console_login a.jar alice
	csrf=$(console_csrf a.jar /queue/email)
	assert_eq 303 "$(code -b a.jar --data "csrf=$csrf" \
	    --data-urlencode "reason=maintenance
$forged reason" "$CONSOLE/queue/email/pause")" "pause with a reason of two lines"
	assert_eq 303 "$(code -b a.jar --data "csrf=$csrf" "$CONSOLE/queue/email/resume")" "resume"
	key=$(sql "SELECT HEX(k) FROM jobs")
	# The page's box, or for a console that posts text, the key itself.
	if console_curl -b a.jar "$CONSOLE/queue/jobs/failed" | grep -q 'name="key_hex"'; then
		assert_eq 303 "$(code -b a.jar --data "csrf=$csrf&action=discard&key_hex=$key" \
		    "$CONSOLE/queue/jobs/failed")" "discard the row"
	else
		assert_eq 303 "$(code -b a.jar --data "csrf=$csrf&action=discard" --data-urlencode \
		    "key=$(sql "SELECT k FROM jobs")" "$CONSOLE/queue/jobs/failed")" "discard the row"
	fi
	assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM jobs")" "the row discarded"
	wait_until 5 'grep -q "discarded jobs" "$log"' || fail "no line for the discard in $log"
	kill_wait 10 "$ROWQ_PID"
	untrack_pid "$ROWQ_PID"
}

# ---- plain standard error ----
act plain.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/plain.log"'
forgeries=$(grep -c '^2026-01-01 00:00:00.000 console: FORGED' plain.log || true)
echo "figure: plain: lines forged: $forgeries; the pause: $(grep 'paused email' plain.log | cut -c 25-)"
assert_eq 0 "$forgeries" "plain: lines that begin as the forged ones"
assert_match 'paused email: maintenance\\n2026-01-01 00:00:00.000 console: FORGED reason$' \
    "$(grep 'paused email' plain.log)" "plain: the reason, escaped"
assert_match 'discarded jobs: 1 row; key k\\n2026-01-01 00:00:00.000 console: FORGED key\\x1b\[2J$' \
    "$(grep 'discarded jobs' plain.log)" "plain: the key, escaped"
! grep -q $'\x1b' plain.log || fail "plain: an escape character in the log"

# ---- log_format: json ----
sed -i "s|^queues:|log_format: json\nqueues:|" rowq.yaml
act json.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/json.log"'
python3 - json.log <<'PY' || fail "json: a line that is not one JSON object, or a message not escaped"
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)["MESSAGE"]
    assert "\n" not in m and "\x1b" not in m, m
    if "paused email" in m:
        assert m.endswith("maintenance\\n2026-01-01 00:00:00.000 console: FORGED reason"), m
PY
