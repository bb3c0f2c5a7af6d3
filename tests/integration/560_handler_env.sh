#!/usr/bin/env bash
# A handler's environment is built from an allowlist, not inherited:
# PATH, LANG, LC_*, TZ, HOME, USER, LOGNAME from rowq's, what env: passes
# (NAME) or sets (NAME: value) at the top level and in the queue (the
# queue's last), and rowq's ROWQ_ variables; nothing else of rowq's, not
# CREDENTIALS_DIRECTORY, NOTIFY_SOCKET or an unlisted secret.
# Exec and pipe handlers alike.  env: names that are not for handlers
# are refused with file:line (exit 78).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 1

# A pipe handler that records the environment it was started with.
cat >pipe-env <<'SH'
#!/bin/sh
tr '\0' '\n' </proc/$$/environ >"$1"
while read -r line; do echo ok; done
SH
chmod +x pipe-env

conf()
{
	WORKERS=1 email_config "$1.yaml" "$2" \
	    "env: [FROM_ROWQ, UNSET_IN_ROWQ, {SET_HERE: 'a value'}, {OVERRIDDEN: queue}]"
	sed -i "s|^stop_timeout:|env: [TOP_NAME, {TOP_SET: top, OVERRIDDEN: top}]\n&|" "$1.yaml"
	grep -q '^env: \[TOP_NAME' "$1.yaml" || fail "$1.yaml: edit did not apply"
}
run()
{
	sql "UPDATE email SET status = 'waiting', attempts = 0"
	env -i PATH=/usr/bin:/bin LANG=C.UTF-8 LC_TIME=C TZ=UTC HOME=/h USER=u LOGNAME=u \
	    FROM_ROWQ=yes TOP_NAME=t SECRET_TOKEN=x DB_PASSWORD=y PYTHONPATH=/evil \
	    CREDENTIALS_DIRECTORY=/nonexistent NOTIFY_SOCKET=/nonexistent ROWQ_OWN=1 \
	    "$ROWQ" -c "$1.yaml" drain email >"$1.log" 2>&1 || fail "drain $1: $(cat "$1.log")"
	assert_eq 1 "$(email_count "status = 'sent'")" "$1: rows done ($(cat "$1.log"))"
}
common="FROM_ROWQ=yes HOME=/h LANG=C.UTF-8 LC_TIME=C LOGNAME=u OVERRIDDEN=queue PATH=/usr/bin:/bin"
common2="SET_HERE=a value TOP_NAME=t TOP_SET=top TZ=UTC USER=u"

conf exec "[$HANDLERS/fake, env, $ROWQ_TEST_TMP/exec.env]"
run exec
assert_eq "$common ROWQ_ATTEMPT=1 ROWQ_KEY=1 ROWQ_QUEUE=email ROWQ_WORKER=1 $common2" \
    "$(tr '\0' '\n' <exec.env | grep . | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')" "an exec handler's environment"

conf pipe "[x]"
sed -i "s|^    exec: .*|    pipe: [$ROWQ_TEST_TMP/pipe-env, $ROWQ_TEST_TMP/pipe.env]|" pipe.yaml
run pipe
assert_eq "$common ROWQ_QUEUE=email ROWQ_WORKER=1 $common2" \
    "$(grep . pipe.env | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')" "a pipe handler's environment"

# Names not for handlers.
WORKERS=1 email_config bad.yaml "[$HANDLERS/fake, env, x]" \
    "env: [CREDENTIALS_DIRECTORY, {ROWQ_KEY: 1}, NOTIFY_SOCKET, 1BAD, [x], OK, OK]"
status=0
"$ROWQ" -c bad.yaml check >bad.out 2>&1 || status=$?
assert_eq 78 "$status" "check with bad env: names ($(cat bad.out))"
for want in "queues\.email\.env\[0\]: CREDENTIALS_DIRECTORY: not for handlers: it leads to rowq's database password" \
    "queues\.email\.env\[1\]: ROWQ_KEY: not for handlers: rowq sets ROWQ_ variables itself" \
    "queues\.email\.env\[2\]: NOTIFY_SOCKET: not for handlers" \
    "queues\.email\.env\[3\]: \"1BAD\" is not a variable name" \
    "queues\.email\.env\[4\]: expected NAME or NAME: value, not a sequence" \
    "queues\.email\.env\[6\]: OK is named twice"; do
	assert_match "bad\.yaml:[0-9]+: $want" "$(cat bad.out)" "message for bad env:"
done
