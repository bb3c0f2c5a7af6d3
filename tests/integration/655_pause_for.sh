#!/usr/bin/env bash
# rowq pause QUEUE --for DURATION: two daemons stop within 2 s, `rowq
# status` says when it ends, and both start again by themselves once it
# has (by the server's clock), with no command.  --for on a paused queue
# moves its end; a plain pause makes a timed one last until resume.  A
# pause table from before --for gets its resume_at column.  Bad --for
# values are refused.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/trace
sql "CREATE TABLE job (
    id INT NOT NULL PRIMARY KEY,
    status ENUM('waiting', 'done') NOT NULL DEFAULT 'waiting',
    INDEX (status, id)
) ENGINE=InnoDB;
INSERT INTO job (id) SELECT seq FROM $(seq_rows 2000);
CREATE TABLE rowq_pause (
  queue VARCHAR(191) NOT NULL PRIMARY KEY,
  since TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  reason VARCHAR(1000) NOT NULL DEFAULT ''
) ENGINE=InnoDB"
for d in a b; do
	cat >$d.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $ROWQ_TEST_TMP/$d.sock
queues:
  work:
    workers: 2
    select: SELECT id FROM job WHERE status = 'waiting' ORDER BY id
    exec: [$HANDLERS/trace, $log, "100"]
    idle: 200ms
    done: UPDATE job SET status = 'done' WHERE id = :id
    failed: UPDATE job SET status = 'done' WHERE id = :id
YAML
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
starts_since() { awk -v t="$1" '$1 == "start" && $6 > t' "$log" | wc -l; }

for bad in 0s 500ms abc 400d; do
	rc=0; "$ROWQ" -c a.yaml pause work --for "$bad" >out 2>&1 || rc=$?
	assert_eq 2 "$rc" "pause --for $bad"
	assert_match "pause: --for takes a duration from 1s to 366d, such as 10m, not $bad" "$(cat out)"
done

: >"$log"
"$ROWQ" -c a.yaml run >a.log 2>&1 & A=$!; track_pid $A
"$ROWQ" -c b.yaml run >b.log 2>&1 & B=$!; track_pid $B
wait_until 10 '[ "$(starts_since 0)" -ge 8 ]' || fail "no work"
"$ROWQ" -c a.yaml pause work --for 4s --reason "deploy 43" >out 2>&1 ||
	fail "pause --for: $(cat out)"
t0=$(now_us)
assert_match 'added resume_at to the pause table rowq_pause' "$(cat out)" "the old table"
assert_match 'work: paused for 4s; every daemon' "$(cat out)"
"$ROWQ" -c a.yaml status >status.out 2>&1 || true
assert_match 'work PAUSED since .*: deploy 43; resumes by itself at [0-9:]{8} \(in [0-9]s\)' \
    "$(cat status.out)" "status"
# Stopped within 2 s on both, and nothing starts until the end (4 s).
assert_eq 0 "$(starts_since $((t0 + 2000000)) )" "starts 2 s into the pause (early look)"
wait_until 5 '[ "$(now_us)" -gt $((t0 + 3500000)) ]'
assert_eq 0 "$(starts_since $((t0 + 2000000)))" "starts from 2 s to 3.5 s into the pause"
# Back by themselves, both, within 2 s of the end.
ran_under()
{
	local w
	for w in $(pgrep -P "$1"); do
		awk -v w="$w" -v t="$2" '$1 == "start" && $4 == w && $6 > t' \
		    "$log" | grep -q . && return 0
	done
	return 1
}
wait_until 6 "ran_under $A $((t0 + 4000000))" || fail "a did not resume by itself: $(tail -n 5 a.log)"
wait_until 3 "ran_under $B $((t0 + 4000000))" || fail "b did not resume by itself: $(tail -n 5 b.log)"
late=$(awk -v t=$((t0 + 2000000)) -v e=$((t0 + 3900000)) '$1 == "start" && $6 > t && $6 < e' "$log" | wc -l)
assert_eq 0 "$late" "starts during the pause"
assert_match 'work: resumed: starting its workers' "$(cat a.log)" "a's log"

# --for on a paused queue moves its end; a plain pause keeps it paused.
"$ROWQ" -c a.yaml pause work --for 1h >out 2>&1 || fail "pause: $(cat out)"
"$ROWQ" -c a.yaml pause work --for 2h >out 2>&1 || fail "pause: $(cat out)"
assert_match 'work: already paused; it now ends in 2h' "$(cat out)"
"$ROWQ" -c a.yaml pause work >out 2>&1 || fail "pause: $(cat out)"
assert_match 'work: already paused for a while; it now lasts until rowq resume' "$(cat out)"
"$ROWQ" -c a.yaml status --json >out 2>&1 || true
assert_match '"reason":"","resume_in_seconds":null\}' "$(cat out)" "status --json"
"$ROWQ" -c a.yaml resume work >out 2>&1 || fail "resume: $(cat out)"
assert_match 'work: resumed' "$(cat out)"
for p in $A $B; do
	kill -TERM $p; wait $p || fail "rowq $p exited with $?"; untrack_pid $p
done
