#!/usr/bin/env bash
# rowq pause / resume: two daemons see a pause within 2 s and start no
# handler after it; a daemon started during the pause claims nothing;
# resume starts the workers of both again.  Bad input: an unknown queue,
# resume of a queue that is not paused (no table yet), pause twice, a
# user who cannot create the pause table.
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
INSERT INTO job (id) SELECT seq FROM $(seq_rows 600)"

# config FILE USER SOCKET
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: $2, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $3
queues:
  work:
    workers: 2
    select: SELECT id FROM job WHERE status = 'waiting' ORDER BY id
    exec: [$HANDLERS/trace, $log, "100"]
    idle: 200ms
    done: UPDATE job SET status = 'done' WHERE id = :id
    failed: UPDATE job SET status = 'done' WHERE id = :id
YAML
}
config a.yaml root "$ROWQ_TEST_TMP/a.sock"
config b.yaml root "$ROWQ_TEST_TMP/b.sock"
sql "CREATE USER IF NOT EXISTS 'pweak'@'localhost';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$ROWQ_TEST_DB\`.* TO 'pweak'@'localhost'"
on_exit "sql \"DROP USER IF EXISTS 'pweak'@'localhost'\""
config weak.yaml pweak "$ROWQ_TEST_TMP/w.sock"

starts() { grep -c '^start' "$log" || true; }

# ---- bad input, before any table exists ----
rc=0; "$ROWQ" -c a.yaml pause nosuch >out 2>&1 || rc=$?
assert_eq 2 "$rc" "pause of an unknown queue"
assert_match 'no queue named nosuch' "$(cat out)"
rc=0; "$ROWQ" -c a.yaml resume work >out 2>&1 || rc=$?
assert_eq 0 "$rc" "resume with no pause table"
assert_match 'work: not paused' "$(cat out)"
rc=0; "$ROWQ" -c weak.yaml pause work >out 2>&1 || rc=$?
assert_eq 1 "$rc" "pause by a user who cannot create the table"
assert_match 'pause_table: cannot create rowq_pause: .*CREATE.*needs the CREATE privilege' "$(cat out)"
rc=0; "$ROWQ" -c a.yaml pause >out 2>&1 || rc=$?
assert_eq 2 "$rc" "pause without a queue"

# ---- two daemons work; a pause stops both within 2 s ----
: >"$log"
"$ROWQ" -c a.yaml run >a.log 2>&1 & A=$!; track_pid $A
"$ROWQ" -c b.yaml run >b.log 2>&1 & B=$!; track_pid $B
wait_until 10 '[ "$(starts)" -ge 8 ]' || fail "no work: $(cat a.log b.log)"
"$ROWQ" -c a.yaml pause work --reason "deploy 42" >out 2>&1 ||
	fail "pause: $(cat out)"
t0=$(now_us)
assert_match 'work: paused' "$(cat out)"
rc=0; "$ROWQ" -c a.yaml pause work >out 2>&1 || rc=$?
assert_eq 0 "$rc" "pause twice"
assert_match 'work: already paused since .*: deploy 42' "$(cat out)"
sleep 2
seen=$(starts)
sleep 2
assert_eq "$seen" "$(starts)" "handler starts after the pause was 2 s old"
late=$(awk -v t=$((t0 + 2000000)) '$1 == "start" && $6 > t' "$log" | wc -l)
assert_eq 0 "$late" "handlers started more than 2 s after the pause"
assert_ge "$(sql_value "SELECT COUNT(*) FROM job WHERE status = 'waiting'")" 100
assert_match 'work: paused in rowq_pause' "$(cat a.log)"
assert_match 'work: paused in rowq_pause' "$(cat b.log)"
"$ROWQ" -c a.yaml status >out 2>&1 || true
assert_match 'work PAUSED since .*: deploy 42' "$(cat out)"
"$ROWQ" -c a.yaml status --json >out 2>&1 || true
assert_match '"paused":\{"since":"[^"]+","for_seconds":[0-9]+,"reason":"deploy 42","resume_in_seconds":null\}' "$(cat out)"

# ---- a daemon started during the pause claims nothing ----
kill -TERM $B; wait $B || fail "daemon b exited with $?"; untrack_pid $B
"$ROWQ" -c b.yaml run >b2.log 2>&1 & B=$!; track_pid $B
sleep 2
assert_eq "$seen" "$(starts)" "handler starts by a daemon started while paused"

# ---- resume: both start again ----
# ran_under DAEMON SINCE_US: a worker of DAEMON started a handler since then.
ran_under()
{
	local w
	for w in $(pgrep -P "$1"); do
		awk -v w="$w" -v t="$2" '$1 == "start" && $4 == w && $6 > t' \
		    "$log" | grep -q . && return 0
	done
	return 1
}
t1=$(now_us)
"$ROWQ" -c a.yaml resume work >out 2>&1 || fail "resume: $(cat out)"
assert_match 'work: resumed' "$(cat out)"
wait_until 5 "ran_under $A $t1" || fail "daemon a did not start again: $(cat a.log)"
wait_until 5 "ran_under $B $t1" || fail "daemon b did not start again: $(cat b2.log)"
assert_match 'work: resumed: starting its workers' "$(cat a.log)"
rc=0; "$ROWQ" -c a.yaml resume work >out 2>&1 || rc=$?
assert_eq 0 "$rc" "resume twice"
assert_match 'work: not paused' "$(cat out)"
for p in $A $B; do
	kill -TERM $p; wait $p || fail "rowq $p exited with $?"; untrack_pid $p
done
