#!/usr/bin/env bash
# kill -9.  Of a worker whose handler has started a grandchild: the
# handler dies with its worker (PR_SET_PDEATHSIG) and the supervisor kills
# the rest of the handler's process group.  Of the supervisor: every
# worker, handler and grandchild is gone within a short grace time, no row
# is left half done, and the next start does every row once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
rows=6
email_table $rows
cd "$ROWQ_TEST_TMP"
cfg=$ROWQ_TEST_TMP/rowq.yaml
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP"/*.log'

# Appends its key, starts a grandchild in its process group, sleeps $1.
cat >handler <<SH
#!/bin/sh
echo "\$ROWQ_KEY" >>"$ROWQ_TEST_TMP/handled"
sleep 600 &
sleep "\$1"
kill \$!
SH
chmod +x handler
WORKERS=2 TIMEOUT=10m email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"600\"]"

# "WORKER HANDLER GRANDCHILDREN..." for each worker whose handler has
# started both its sleeps.
tree()
{
	local w h g
	for w in $(children_of "$ROWQ_PID"); do
		for h in $(children_of "$w"); do
			g=$(children_of "$h" | tr '\n' ' ')
			[ "$(wc -w <<<"$g")" = 2 ] && echo "$w $h $g"
		done
	done
}
all_alive() { local p; for p in "$@"; do _lib_alive "$p" || return 1; done; }
none_alive() { local p; for p in "$@"; do ! _lib_alive "$p" || return 1; done; }

rowq_start "$cfg" first.log
wait_until 10 '[ "$(tree | wc -l)" = 2 ]' || fail "two handlers with a grandchild each did not start: $(tree)"

# ---- kill -9 of a worker: its handler and the grandchild go too ----
read -r w h g < <(tree | head -1)
kill -KILL "$w"
wait_until 3 'none_alive $w $h $g' || fail "worker $w, handler $h or grandchildren $g still alive"
assert_match "worker [0-9] died \(killed by signal 9 \(Killed\)\)" "$(cat first.log)" "the worker's death"
assert_match "killed its handler's process group $h" "$(cat first.log)" "the group's kill"

# ---- kill -9 of the supervisor ----
wait_until 10 '[ "$(tree | wc -l)" = 2 ]' || fail "the worker was not restarted: $(tree)"
pids=$(tree | tr '\n' ' ')
# shellcheck disable=SC2086 # $pids is a list
all_alive $pids || fail "not all of $pids alive"
start=$(now_us)
kill -KILL "$ROWQ_PID"
wait "$ROWQ_PID" 2>/dev/null || true
untrack_pid "$ROWQ_PID"
# shellcheck disable=SC2086 # $pids is a list
wait_until 5 'none_alive $pids' || fail "still alive 5 s after the supervisor's kill -9: $(for p in $pids; do _lib_alive $p && ps -o pid=,args= -p $p; done)"
echo "workers, handlers and grandchildren gone $(( ($(now_us) - start) / 1000 )) ms after kill -9"
assert_eq "$rows 0" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(done_count)) FROM email WHERE status = 'waiting' AND attempts = 0")" "rows waiting, untouched"

# ---- the next start does every row, once ----
WORKERS=2 email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"0\"]"
rowq_start "$cfg" second.log
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" = '$rows' ]' ||
	fail "not every row done after the restart: $(sql "SELECT id, status FROM email")"
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"
assert_eq "$rows" "$(sql_value "SELECT SUM(done_count) FROM email")" "done statements"
