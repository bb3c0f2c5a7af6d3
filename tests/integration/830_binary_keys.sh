#!/usr/bin/env bash
# BINARY(16) keys, pairs of which are equal up to a zero byte (as C
# strings they are one key): every row is its own row, claimed together
# in one batch, handled once, in the select's order, and finished once;
# ROWQ_KEY and the log carry the key as lowercase hex, 32 digits for 16
# bytes, never cut at the first zero byte.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
trace=$ROWQ_TEST_TMP/trace
: >"$trace"

sql "CREATE TABLE bk (
    id BINARY(16) NOT NULL PRIMARY KEY,
    code INT NOT NULL DEFAULT 0,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, id)
) ENGINE=InnoDB"
keys="00000000000000000000000000000001
00000000000000000000000000000002
61620078000000000000000000000000
61620079000000000000000000000000"
# One more whose handler fails for good, to be named in the log.
bad=ff0000000000000000000000000000ff
for k in $keys; do
	sql "INSERT INTO bk (id) VALUES (UNHEX('$k'))"
done
sql "INSERT INTO bk (id, code) VALUES (UNHEX('$bad'), 65)"

cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  bk:
    workers: 1
    batch: 5
    select: SELECT id, code FROM bk WHERE status = 'waiting' ORDER BY id
    exec: [$HANDLERS/trace, $trace, "0", "{code}"]
    timeout: 10s
    idle: 200ms
    done: UPDATE bk SET status = 'done', done_count = done_count + 1
          WHERE id = :id
    failed: UPDATE bk SET status = 'failed' WHERE id = :id
YAML
on_exit '[ $? -eq 0 ] || { echo "--- rowq.log"; cat "$ROWQ_TEST_TMP/rowq.log"; echo "--- trace"; cat -v "$ROWQ_TEST_TMP/trace"; }'
# It exits 1 for the row that failed.
status=0
timeout 20 "$ROWQ" -c rowq.yaml drain bk >rowq.log 2>&1 || status=$?
[ "$status" -le 1 ] || fail "drain exited $status"

assert_eq "$(printf '%s\n' $keys | sed 's/$/ done 1/')
$bad failed 0" \
    "$(sql "SELECT CONCAT_WS(' ', LOWER(HEX(id)), status, done_count) FROM bk ORDER BY id")" \
    "rows (key, status, done_count)"
# The handler saw each key once, in hex, in the select's order: all five
# in the first claim, none put off as "returned twice".
assert_eq "$(printf '%s\n' $keys $bad)" \
    "$(awk '$1 == "start" { print $2 }' "$trace")" \
    "ROWQ_KEY of each handler run, in order"
assert_match "$bad" "$(grep -v '^ *$' rowq.log)" "the failed row's key in the log, in hex"
