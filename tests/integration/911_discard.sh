#!/usr/bin/env bash
# `rowq discard` gives failed rows up with the queue's discard: statement,
# as `rowq requeue` makes them waiting again: by key (a key that matches
# no failed row is reported, exit 1), or --all [--where-error TEXT], in
# chunks; the rows not named stay.  rowq check holds discard: to the
# queue's key and failed_select's columns, and a queue without discard:
# is a usage error.  A list's statement may take a column of the key's
# failed row: a fan-in's batch counted down by its id, read from the row
# (no JOIN through the key), once per row actually discarded.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
sql "INSERT INTO email (id, recipient, subject, body, status, attempts, last_error)
    SELECT seq, CONCAT('u', seq, '@x'), 's', '', 'failed', 3,
    IF(seq % 2, 'smtp down', 'no such address') FROM $(seq_rows 1500)"
sql "INSERT INTO email (id, recipient, subject, body) VALUES (1501, 'w@x', 's', '')"
email_config rowq.yaml "[/bin/true]" \
	"failed_select: SELECT id, recipient, last_error FROM email WHERE status = 'failed' ORDER BY id DESC" \
	"discard: DELETE FROM email WHERE id = :id AND status = 'failed'"
count() { sql_value "SELECT COUNT(*) FROM email WHERE $1"; }
"$ROWQ" -c rowq.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"

status=0; "$ROWQ" -c rowq.yaml discard email 1 2 1501 >keys.out 2>&1 || status=$?
assert_eq 1 "$status" "exit status with a key that is not failed"
grep -qxF "discarded 1" keys.out || fail "keys: $(cat keys.out)"
grep -qxF "not discarded 1501: no failed row with this key" keys.out || fail "keys: $(cat keys.out)"
grep -qxF "email: discarded 2 rows, 1 key matched no failed row" keys.out || fail "keys: $(cat keys.out)"
assert_eq 0 "$(count 'id IN (1, 2)')" "rows 1 and 2 are gone"
assert_eq 1 "$(count "id = 1501 AND status = 'waiting'")" "the waiting row stays"

"$ROWQ" -c rowq.yaml discard email --all --where-error 'no such' >like.out 2>&1 || fail "where-error: $(tail -3 like.out)"
grep -qxF "email: discarded 749 rows, 0 keys matched no failed row" like.out || fail "where-error: $(tail -1 like.out)"
assert_eq 749 "$(count "status = 'failed'")" "the odd rows stay"
"$ROWQ" -c rowq.yaml discard email --all >all.out 2>&1 || fail "all: $(tail -3 all.out)"
assert_eq 0 "$(count "status = 'failed'")" "no failed row is left"
assert_eq 1 "$(count 'id = 1501')" "the waiting row is untouched"

expect_exit 2 "name the keys to discard, or --all" -c rowq.yaml discard email
expect_exit 2 "unknown option --bogus" -c rowq.yaml discard email --bogus
email_config bare.yaml "[/bin/true]"
expect_exit 2 "queues.email has no discard: key" -c bare.yaml discard email 1
sed 's/WHERE id = :id AND status/WHERE subject = :subject AND status/' rowq.yaml >badkey.yaml
expect_exit 78 "queues.email.discard: :subject: discard takes the queue's key, :id, and the columns of failed_select's row, and this is neither" -c badkey.yaml check

# discard: as a list, one transaction in order: the row marked, then a
# log row; the log row only for a row the first statement changed.
sql "CREATE TABLE discard_log (id BIGINT NOT NULL PRIMARY KEY)"
sql "ALTER TABLE email MODIFY status ENUM('waiting', 'sent', 'failed', 'discarded') NOT NULL DEFAULT 'waiting'"
sql "UPDATE email SET status = 'failed' WHERE id = 1501"
sql "INSERT INTO email (id, recipient, subject, body, status) VALUES (1502, 'r', 's', '', 'failed')"
sed -e "s|^    discard: DELETE FROM email WHERE id = :id AND status = 'failed'|    discard: [\"UPDATE email SET status = 'discarded' WHERE id = :id AND status = 'failed'\", \"INSERT INTO discard_log (id) VALUES (:id)\"]|" rowq.yaml >list.yaml
grep -q 'discard_log' list.yaml || fail "list.yaml: the edit did not apply"
"$ROWQ" -c list.yaml check >check.out 2>&1 || fail "check with a list: $(cat check.out)"
status=0; "$ROWQ" -c list.yaml discard email 1501 1502 99 >list.out 2>&1 || status=$?
assert_eq 1 "$status" "exit status with a key that is not failed"
assert_eq "discarded discarded" "$(sql "SELECT status FROM email WHERE id IN (1501, 1502) ORDER BY id" | tr '\n' ' ' | sed 's/ $//')" "both rows marked"
assert_eq "1501 1502" "$(sql "SELECT id FROM discard_log ORDER BY id" | tr '\n' ' ' | sed 's/ $//')" "a log row each, none for key 99"

# A fan-in's counter in discard and a requeue log, each by the batch's id
# read from the key's row in failed_select: a row counted once when it is
# discarded, never for a key that is not failed (done, gone, discarded
# already), nothing for a row whose batch is NULL; requeue the same.
sql "CREATE TABLE batch (id INT NOT NULL PRIMARY KEY, pending INT NOT NULL,
    requeued INT NOT NULL DEFAULT 0)"
sql "CREATE TABLE item (id INT NOT NULL PRIMARY KEY, batch_id INT NULL,
    status ENUM('waiting', 'done', 'failed', 'discarded') NOT NULL DEFAULT 'waiting',
    last_error TEXT NULL, INDEX (status, id))"
sql "INSERT INTO batch (id, pending) VALUES (1, 3), (2, 2), (3, 1)"
sql "INSERT INTO item VALUES (1, 1, 'failed', 'x'), (2, 1, 'failed', 'y'),
    (3, 1, 'done', NULL), (4, 2, 'failed', 'x'), (5, 2, 'failed', 'y'),
    (6, NULL, 'failed', 'x'), (7, 3, 'failed', 'y')"
cat >fanin.yaml <<YAML
database:
  socket: $ROWQ_TEST_SOCKET
  user: root
  name: $ROWQ_TEST_DB
queues:
  item:
    select: SELECT id, batch_id FROM item WHERE status = 'waiting' ORDER BY id
    exec: [/bin/true]
    done: ["UPDATE item SET status = 'done' WHERE id = :id",
           "UPDATE batch SET pending = pending - 1 WHERE id = :batch_id"]
    failed: UPDATE item SET status = 'failed', last_error = :error WHERE id = :id
    failed_select: SELECT id, batch_id, last_error FROM item
                   WHERE status = 'failed' ORDER BY id DESC
    discard: ["UPDATE item SET status = 'discarded' WHERE id = :id AND status = 'failed'",
              "UPDATE batch SET pending = pending - 1 WHERE id = :Batch_Id"]
    requeue: ["UPDATE item SET status = 'waiting' WHERE id = :id AND status = 'failed'",
              "UPDATE batch SET requeued = requeued + 1 WHERE id = :batch_id"]
YAML
batches() { sql "SELECT CONCAT_WS(':', id, pending, requeued) FROM batch ORDER BY id" | tr '\n' ' ' | sed 's/ $//'; }
"$ROWQ" -c fanin.yaml check >check.out 2>&1 || fail "check of the fan-in: $(cat check.out)"
status=0; "$ROWQ" -c fanin.yaml discard item 1 3 99 >fanin.out 2>&1 || status=$?
assert_eq 1 "$status" "exit status with keys that are not failed"
grep -qxF "discarded 1" fanin.out || fail "fan-in discard: $(cat fanin.out)"
grep -qxF "not discarded 3: no failed row with this key" fanin.out || fail "fan-in discard: $(cat fanin.out)"
grep -qxF "not discarded 99: no failed row with this key" fanin.out || fail "fan-in discard: $(cat fanin.out)"
assert_eq "1:2:0 2:2:0 3:1:0" "$(batches)" "batch 1 counted once, for row 1 only"
status=0; "$ROWQ" -c fanin.yaml discard item 1 >again.out 2>&1 || status=$?
assert_eq 1 "$status" "exit status of a second discard"
assert_eq "1:2:0 2:2:0 3:1:0" "$(batches)" "a row discarded twice counts once"
"$ROWQ" -c fanin.yaml requeue item 2 >requeue.out 2>&1 || fail "requeue: $(cat requeue.out)"
assert_eq "1:2:1 2:2:0 3:1:0" "$(batches)" "requeue logged in row 2's batch"
assert_eq waiting "$(sql_value "SELECT status FROM item WHERE id = 2")" "row 2 waits again"
"$ROWQ" -c fanin.yaml discard item --all --where-error x >all.out 2>&1 || fail "fan-in --all: $(cat all.out)"
grep -qxF "item: discarded 2 rows, 0 keys matched no failed row" all.out || fail "fan-in --all: $(tail -1 all.out)"
assert_eq "1:2:1 2:1:0 3:1:0" "$(batches)" "--all: row 4 counted in batch 2, row 6 (no batch) in none"
"$ROWQ" -c fanin.yaml discard item --all >rest.out 2>&1 || fail "fan-in --all: $(cat rest.out)"
assert_eq "1:2:1 2:0:0 3:0:0" "$(batches)" "every failed row counted once in its batch"
assert_eq "1 3 4 5 6 7" "$(sql "SELECT id FROM item WHERE status IN ('discarded', 'done') ORDER BY id" | tr '\n' ' ' | sed 's/ $//')" "rows discarded"
