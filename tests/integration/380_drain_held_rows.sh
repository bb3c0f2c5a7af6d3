#!/usr/bin/env bash
# A drain exits only when the select finds nothing anyone is working on:
# while another session holds two waiting rows locked, a drain does the
# other rows and then waits (it must not exit 0 with rows waiting); once
# that session lets go, it does those two as well and exits 0.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 5
log=$ROWQ_TEST_TMP/handled
WORKERS=1 email_config rowq.yaml "[$HANDLERS/fake, append, $log]"

# Rows 4 and 5 held by another transaction, as another worker would.
mkfifo hold
mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot "$ROWQ_TEST_DB" <hold >/dev/null &
holder=$!
track_pid "$holder"
exec 7>hold
echo "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; BEGIN; SELECT id FROM email FORCE INDEX (PRIMARY) WHERE id IN (4, 5) FOR UPDATE;" >&7
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_rows_locked > 0")" -ge 1 ]' ||
	fail "the test transaction holds no lock"

"$ROWQ" -c rowq.yaml drain email >drain.out 2>drain.err &
drain=$!
track_pid "$drain"
on_exit '[ $? -eq 0 ] || { cat "$ROWQ_TEST_TMP/drain.out" "$ROWQ_TEST_TMP/drain.err"; }'
wait_until 10 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" = 3 ]' ||
	fail "the free rows were not done"
# Several idle periods (200 ms) later, the drain still waits for rows 4, 5.
sleep 1.5
if ! kill -0 "$drain" 2>/dev/null; then
	status=0
	wait "$drain" || status=$?
	fail "drain exited ($status) while rows 4 and 5 were held: $(cat drain.out)"
fi

echo "COMMIT;" >&7
exec 7>&-
wait "$holder" || true
untrack_pid "$holder"
wait_until 10 '! kill -0 "$drain" 2>/dev/null' || fail "drain did not end once the rows were free"
status=0
wait "$drain" || status=$?
untrack_pid "$drain"
assert_eq 0 "$status" "drain's exit status"
assert_eq 5 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'sent'")" "rows sent"
assert_eq "1 2 3 4 5" "$(cut -d' ' -f1 "$log" | sort -n | tr '\n' ' ' | sed 's/ $//')" "rows handled, once each"
assert_match "^email: 5 done, 0 retried, 0 failed" "$(cat drain.out)" "drain summary"
