#!/usr/bin/env bash
# What ends a drain, and with which exit status:
# - a deadlock that was rolled back and retried is not an error: a drain
#   whose rows all finished exits 0, and its summary counts the retries
#   (a trigger fails each row's first done with error 1213, as InnoDB
#   does when it picks the worker as a deadlock's victim);
# - a row that comes straight back round (its done leaves it in the
#   select) ends the drain at once, exit 1, with the message, instead of
#   pausing the claims for longer and longer.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

email_table 20
# The marker table is not transactional: the failed statement's rollback
# leaves its row, so each row's done fails once only.
sql <<'SQL'
CREATE TABLE victim (id BIGINT PRIMARY KEY) ENGINE=MyISAM;
DELIMITER //
CREATE TRIGGER email_deadlock BEFORE UPDATE ON email FOR EACH ROW
BEGIN
    IF NEW.status = 'sent' AND NOT EXISTS (SELECT 1 FROM victim WHERE id = NEW.id) THEN
        INSERT INTO victim VALUES (NEW.id);
        SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213,
            MESSAGE_TEXT = 'Deadlock found when trying to get lock; try restarting transaction';
    END IF;
END//
DELIMITER ;
SQL
email_config q.yaml "[/bin/true]"
status=0
"$ROWQ" -c q.yaml drain email >drain.out 2>drain.err || status=$?
assert_eq 0 "$status" "exit status after retried deadlocks ($(cat drain.err))"
assert_eq 20 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'sent' AND done_count = 1")" "rows done once"
assert_eq 20 "$(grep -c 'Deadlock found.*rolled back, will retry' drain.err)" "retries logged"
assert_match "^email: 20 done, 0 retried, 0 failed, 0 errors, 20 deadlocks retried, 0 restarts in " "$(cat drain.out)" "the summary"

# ---- a row that comes straight back round ----
sql "DROP TRIGGER email_deadlock; TRUNCATE email"
sql "INSERT INTO email (recipient, subject, body) VALUES ('a@example.com', 's', 'b')"
# done changes the row, but not so that it leaves the select.  One
# worker: each notices the rows it finished itself.
WORKERS=1 email_config q.yaml "[/bin/true]"
sed -i "s/^    done: UPDATE email SET status = 'sent', attempts = attempts + 1,/    done: UPDATE email SET/" q.yaml
start=$(now_us)
status=0
timeout 60 "$ROWQ" -c q.yaml drain email >loop.out 2>loop.err || status=$?
took=$((($(now_us) - start) / 1000))
assert_eq 1 "$status" "exit status when a row comes straight back ($(cat loop.err))"
assert_match "row 1: claimed again, unchanged, right after q.yaml:[0-9]+: queues.email.done finished it: that statement does not take the row out of the select, so it would come straight back round; the drain ends" "$(cat loop.err)" "the message"
assert_le "$took" 10000 "ms until the drain ended"
assert_eq 1 "$(sql_value "SELECT done_count FROM email")" "the handler ran once"
