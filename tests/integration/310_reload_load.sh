#!/usr/bin/env bash
# 20 SIGHUPs while 2 workers with pipe handlers work through 20,000 rows
# (5 per claim); the 10th finds a statement the database refuses.  Every
# row is done exactly once (the handler's log holds each key once,
# done_count sums to the rows): a retiring worker finishes the row it is
# on, commits, and leaves the rest of its batch to the others.  Each good
# reload replaces the workers and their pipe handlers (new pids); the bad
# one is logged with its reason and changes nothing.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=20000
email_table $rows
cfg=$ROWQ_TEST_TMP/rowq.yaml
log=$ROWQ_TEST_TMP/handled
WORKERS=2 email_config "$cfg" "[x]" "batch: 5"
sed -i "s|^    exec: .*|    pipe: [$HANDLERS/pipefake, ok, $log]|" "$cfg"
cp "$cfg" good.yaml
rowq_start "$cfg" rowq.log
on_exit '[ $? -eq 0 ] || tail -n 60 "$ROWQ_TEST_TMP/rowq.log"'

# The process tree, read with bash builtins only: these run in tight loops
# while the machine is busy with 20,000 rows, and a fork per look would
# slow the loop more than the reloads themselves.
#   kids PID       the children of PID in KIDS
#   snapshot       the workers in W, their pipe handlers in H
#   settled_after  2 workers with a handler each, none of them in OLD
kids()
{
	local f c p
	KIDS=()
	for f in /proc/"$1"/task/*/children; do
		c=()
		read -r -a c <"$f" 2>/dev/null || true
		for p in "${c[@]}"; do
			if not_watcher "$p"; then KIDS+=("$p"); fi
		done
	done
}
snapshot()
{
	local w
	kids "$ROWQ_PID"
	W=("${KIDS[@]}")
	H=()
	for w in "${W[@]}"; do
		kids "$w"
		H+=("${KIDS[@]}")
	done
}
declare -A OLD
settled_after()
{
	local p
	snapshot
	[ "${#W[@]}" = 2 ] && [ "${#H[@]}" = 2 ] || return 1
	for p in "${W[@]}" "${H[@]}"; do
		[ -z "${OLD[$p]:-}" ] || return 1
	done
}
outcomes() { grep -cE 'reload: generation [0-9]+ started|reload failed' rowq.log || true; }

OLD=()
wait_until 20 '[ -s "$log" ] && settled_after' || fail "no work started"
under_load=0
for i in $(seq 1 20); do
	snapshot
	before="${W[*]} / ${H[*]}"
	OLD=()
	for p in "${W[@]}" "${H[@]}"; do OLD[$p]=1; done
	# shellcheck disable=SC2034 # read by the wait_until below
	n=$(outcomes)
	[ "$(wc -l <"$log")" -ge $rows ] || under_load=$((under_load + 1))
	if [ "$i" = 10 ]; then
		sed 's/done_count = done_count + 1/done_count = no_such_column + 1/' good.yaml >"$cfg"
	fi
	kill -HUP "$ROWQ_PID"
	wait_until 20 '[ "$(outcomes)" -gt "$n" ]' || fail "reload $i: no outcome logged"
	if [ "$i" = 10 ]; then
		cp good.yaml "$cfg"
		assert_match "reload failed, old workers kept \(generation 10\): .*rowq.yaml:[0-9]+: queues.email.done: .*no_such_column" \
			"$(grep 'reload failed' rowq.log)" "the broken reload's log"
		sleep 0.3
		snapshot
		assert_eq "$before" "${W[*]} / ${H[*]}" "workers / pipe handlers after the broken reload"
		continue
	fi
	wait_until 20 settled_after ||
		fail "reload $i: workers / handlers $before were not all replaced: now ${W[*]} / ${H[*]}"
done
echo "$under_load of 20 reloads came while rows were waiting"
assert_ge "$under_load" 5 "reloads under load"
assert_eq 19 "$(grep -c 'reload: generation [0-9]* started' rowq.log)" "good reloads"
assert_match "reload: generation 20 started" "$(tail -n 100 rowq.log)" "last generation"

wait_until 120 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" = '$rows' ]' ||
	fail "rows not done: $(sql_value "SELECT COUNT(*) FROM email WHERE status <> 'sent'") left"
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"

assert_eq $rows "$(wc -l <"$log")" "handler runs"
assert_eq "" "$(cut -d' ' -f1 "$log" | sort | uniq -d | head -5 | tr '\n' ' ')" "keys handled twice"
assert_eq $rows "$(sql_value "SELECT SUM(done_count) FROM email")" "sum of done_count"
pids=$(cut -d' ' -f2 "$log" | sort -u | wc -l)
echo "$pids pipe handler processes did the rows"
assert_ge "$pids" 4 "pipe handler processes that did rows"
assert_eq 0 "$(grep -c 'died' rowq.log || true)" "workers that died"
