#!/usr/bin/env bash
# A claimed row larger than ROW_BYTES_MAX (64 MiB, all columns together)
# is not given to a handler: it is marked failed, with a log line naming
# the queue and the key, once; it is not claimed again in a loop, and the
# rows behind it are done.  The row is five LONGBLOBs of 14 MiB (70 MiB),
# each under the server's default max_allowed_packet of 16 MiB.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/handled
: >"$log"

sql "CREATE TABLE blobs (
    id INT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    last_error TEXT NULL,
    a LONGBLOB NULL, b LONGBLOB NULL, c LONGBLOB NULL,
    d LONGBLOB NULL, e LONGBLOB NULL,
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO blobs (id) VALUES (1), (2)"
for col in a b c d e; do
	sql "UPDATE blobs SET $col = REPEAT('x', 14 * 1024 * 1024) WHERE id = 1"
done
assert_eq $((70 * 1024 * 1024)) \
    "$(sql_value "SELECT LENGTH(a) + LENGTH(b) + LENGTH(c) + LENGTH(d) + LENGTH(e) FROM blobs WHERE id = 1")" \
    "bytes in row 1"

cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  blobs:
    workers: 1
    select: SELECT id, a, b, c, d, e FROM blobs WHERE status = 'waiting'
            ORDER BY id
    exec: [$HANDLERS/fake, append, $log]
    timeout: 20s
    idle: 200ms
    done: UPDATE blobs SET status = 'done' WHERE id = :id
    failed: UPDATE blobs SET status = 'failed', last_error = :error
            WHERE id = :id
YAML
on_exit '[ $? -eq 0 ] || { echo "--- rowq.log"; head -c 4000 "$ROWQ_TEST_TMP/rowq.log"; }'
# It exits 1 for the row that failed.
status=0
timeout 25 "$ROWQ" -c rowq.yaml drain blobs >rowq.log 2>&1 || status=$?
[ "$status" -le 1 ] || fail "drain exited $status"

assert_eq "1 failed|2 done" "$(sql "SELECT CONCAT_WS(' ', id, status) FROM blobs ORDER BY id" | paste -sd '|')" \
    "rows (id status)"
assert_eq "2 1" "$(cat "$log")" "handler runs (none for the row over the limit)"
[ -n "$(sql_value "SELECT COALESCE(last_error, '') FROM blobs WHERE id = 1" 2>/dev/null || true)" ] ||
	fail "no :error for the row over the limit"
said=$(grep -cE 'blobs/[0-9]+: row 1: .*(bytes|large|MiB|limit|size)' rowq.log || true)
assert_ge "$said" 1 "log lines naming queue, key and the size"
assert_le "$said" 2 "log lines about the row over the limit"
