#!/usr/bin/env bash
# A finishing statement whose failure rolled back the whole transaction,
# not just itself, mid-batch: the turn must stop there.  Going on would
# run the batch's other rows in a fresh transaction without their locks,
# while another worker claims and runs them at the same time.
#
# The statement: `retry` is a procedure that, the first time, rolls back
# and signals an error (1644, an error rowq would otherwise answer by
# marking the row failed and going on), standing in for the server's own
# whole-transaction rollbacks (1206 lock table full, a deadlock caught
# and re-signalled by a procedure's handler).
#
# Needs the worker to look at db_in_transaction() after a failed
# finishing statement: fails until it does.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/handled

email_table 3
sql <<'SQL'
CREATE TABLE tripped (id BIGINT) ENGINE=MyISAM;
DELIMITER //
CREATE PROCEDURE rowq_retry(p_id BIGINT, p_error TEXT, p_delay INT)
BEGIN
	-- MyISAM: the mark stays, whatever is rolled back.
	IF (SELECT COUNT(*) FROM tripped) = 0 THEN
		INSERT INTO tripped VALUES (p_id);
		ROLLBACK;
		SIGNAL SQLSTATE '45000'
		    SET MESSAGE_TEXT = 'the whole transaction was rolled back';
	END IF;
	UPDATE email SET attempts = attempts + 1, last_error = p_error,
	    retry_at = UNIX_TIMESTAMP() + p_delay WHERE id = p_id;
END//
DELIMITER ;
SQL

# Each run logs its start and end; row 2 fails its first try.
cat >handler <<SH
#!/bin/sh
echo "\$ROWQ_KEY start \$(date +%s.%N) \$\$" >>"$log"
sleep 1
echo "\$ROWQ_KEY end \$(date +%s.%N) \$\$" >>"$log"
[ "\$ROWQ_KEY" = 2 ] && [ "\$ROWQ_ATTEMPT" = 1 ] && exit 1
exit 0
SH
chmod +x handler
WORKERS=2 email_config rowq.yaml "[$ROWQ_TEST_TMP/handler]" "batch: 3"
sed -i 's|^      update: UPDATE email SET attempts = attempts + 1, last_error = :error,|      update: CALL rowq_retry(:id, :error, :delay)|; /^              retry_at = UNIX_TIMESTAMP() + :delay WHERE id = :id$/d' rowq.yaml
grep -q 'CALL rowq_retry' rowq.yaml || fail "config not rewritten"

rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || { cat "$ROWQ_TEST_TMP/rowq.log"; cat "$log"; }'
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status <> '"'waiting'"'")" = 3 ]' ||
	fail "rows not finished: $(sql "SELECT id, status, attempts FROM email")"
sleep 1
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"

assert_eq 1 "$(sql_value "SELECT COUNT(*) FROM tripped")" "the rollback happened"
# No row ran in two handlers at once: a row may run again after the
# rollback (at least once), but never while another run holds it.
overlaps=$(awk '
	$2 == "start" { s[$1 " " $4] = $3 }
	$2 == "end" { e[$1 " " $4] = $3 }
	END {
		for (a in s) for (b in s) {
			split(a, x, " "); split(b, y, " ")
			if (a < b && x[1] == y[1] && s[a] < e[b] && s[b] < e[a])
				print "row " x[1] " in pids " x[2] " and " y[2]
		}
	}' "$log")
assert_eq "" "$overlaps" "rows run by two handlers at once"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM email WHERE done_count > 1")" "rows done twice"
assert_eq 3 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'sent'")" "rows sent"
