#!/usr/bin/env bash
# kill -9 of a worker while its handler runs: the transaction rolls back,
# the row waits again and another worker does it; nothing is lost and the
# done statement runs once per row.  The orphaned handler dies too.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
rows=10
email_table $rows
cfg=$ROWQ_TEST_TMP/rowq.yaml
log=$ROWQ_TEST_TMP/handled
email_config "$cfg" "[$HANDLERS/fake, sleep, \"2000\", $log]"
rowq_start "$cfg" "$ROWQ_TEST_TMP/rowq.log"
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'

# A worker with a handler running: kill it, not the handler.
busy_worker()
{
	local w
	for w in $(children_of "$ROWQ_PID"); do
		if [ -n "$(children_of "$w")" ]; then
			echo "$w $(children_of "$w" | head -1)"
			return 0
		fi
	done
	return 1
}
# The handler's key, read from its environment while it still runs.
handler_key()
{
	tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | sed -n 's/^ROWQ_KEY=//p'
}
pick()
{
	read -r worker handler < <(busy_worker) && [ -n "$handler" ] &&
	    key=$(handler_key "$handler") && [ -n "$key" ]
}
wait_until 20 pick || fail "no worker ever ran a handler"
pick || fail "the handler ended before it could be looked at"
kill -KILL "$worker"
wait_until 5 '! kill -0 '"$handler"' 2>/dev/null' || fail "handler $handler outlived its worker"

wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" = '$rows' ]' ||
	fail "not every row was done: $(sql "SELECT id, status FROM email WHERE status <> 'sent'")"
assert_eq $rows "$(sql_value "SELECT SUM(done_count) FROM email")" "done statements run"
assert_eq 1 "$(sql_value "SELECT done_count FROM email WHERE id = $key")" "done_count of the killed row $key"
assert_ge "$(grep -c "^$key " "$log")" 2 "tries of the killed row $key"
assert_match "worker [0-9] died \(killed by signal 9" "$(cat "$ROWQ_TEST_TMP/rowq.log")" "death logged"

kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq run exited with $?"
untrack_pid "$ROWQ_PID"
