#!/usr/bin/env bash
# What a newcomer reads matches what they see:
# - `rowq status` prints the header that rowq.8 shows;
# - with the configuration file broken on disk (a bad key, or not YAML
#   at all) while a daemon runs, `rowq status` still shows that daemon's
#   live status from its socket, warns about the file and exits 78.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 3
email_config rowq.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/log]"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" -eq 3 ]' ||
    fail "the rows were not done"

"$ROWQ" -c rowq.yaml status >out 2>&1 || fail "status: $(cat out)"
header=$(head -n 1 out)
man_header=$(grep -m1 '^QUEUE  ' "$REPO_ROOT/man/rowq.8")
assert_eq "$man_header" "$header" "rowq.8's status header against rowq status"
cp rowq.yaml good.yaml

# broken STATUS: rowq status with the file as it is now.
broken()
{
	local rc=0
	"$ROWQ" -c rowq.yaml status "$@" >out 2>err || rc=$?
	assert_eq 78 "$rc" "status with a broken file: exit status"
	assert_match 'the configuration has errors \(above\); the running daemon.s own status follows' \
	    "$(cat err)" "status with a broken file: the warning"
}

printf '    bogus_key: 1\n' >>rowq.yaml
broken
assert_match "rowq\.yaml:[0-9]+: queues\.email\.bogus_key: unknown key" "$(cat err)" "the file's error"
assert_match '^email +\? +\? +\? +\? +3 ' "$(sed -n 2p out)" "the daemon's counts, '?' for the database's"
assert_match "daemon: pid $ROWQ_PID, generation 1" "$(cat out)" "the daemon's line"
broken --json
python3 -c 'import json, sys; d = json.load(open("out")); assert any(q["name"] == "email" for q in d["queues"]), d' ||
    fail "status --json with a broken file: $(cat out)"

cp good.yaml rowq.yaml
printf 'queues: [\n' >>rowq.yaml
broken
assert_match 'syntax error' "$(cat err)" "the file's YAML error"
assert_match "daemon: pid $ROWQ_PID" "$(cat out)" "the daemon's status through the default socket path"
cp good.yaml rowq.yaml
"$ROWQ" -c rowq.yaml status >out 2>&1 || fail "status with the file fixed: $(cat out)"
