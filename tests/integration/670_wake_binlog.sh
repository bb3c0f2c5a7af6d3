#!/usr/bin/env bash
# wake: binlog on a server with a binary log (ROW), idle: 30s, so that
# only the binary log can wake a queue in time:
#   - a row is picked up well within the idle (5 s at most); each wake
#     goes to the queue whose select finds the row: queues a and b read
#     one table (different WHERE), c another; the other queues' workers
#     do not claim (their claim counts, from the metrics, do not move);
#   - status and metrics say binlog, with a lag;
#   - a user without the grants: check names both and says the queue
#     falls back to polling, and passes;
#   - the binlog connection KILLed, then the server killed and restarted:
#     the daemon falls back, follows again, and every row is done once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/wake.sh"
cd "$ROWQ_TEST_TMP"
server_start b --log-bin --binlog-format=ROW --server-id=1
server_sql b "CREATE DATABASE q;
    CREATE TABLE q.jobs (id INT AUTO_INCREMENT PRIMARY KEY,
        kind CHAR(1) NOT NULL, done INT NOT NULL DEFAULT 0,
        INDEX (done, kind, id));
    CREATE TABLE q.other (id INT AUTO_INCREMENT PRIMARY KEY,
        done INT NOT NULL DEFAULT 0, INDEX (done, id));
    CREATE USER plain@localhost;
    GRANT ALL ON q.* TO plain@localhost"
port=$(free_port)

# queue NAME TABLE WHERE: a queue whose handler traces to NAME.trace.
queue()
{
	: >"$1.trace"
	cat <<YAML
  $1:
    workers: 2
    idle: 30s
    wake: binlog
    select: SELECT id FROM $2 WHERE done = 0 $3 ORDER BY id
    exec: [$HANDLERS/trace, $ROWQ_TEST_TMP/$1.trace, "0"]
    done: UPDATE $2 SET done = done + 1 WHERE id = :id
    failed: UPDATE $2 SET done = -1 WHERE id = :id
YAML
}
config()
{
	cat <<YAML
database:
  socket: $(server_sock b)
  user: $1
  name: q
status_socket: $ROWQ_TEST_TMP/b.sock
metrics: 127.0.0.1:$port
queues:
YAML
	queue a jobs "AND kind = 'a'"
	queue b jobs "AND kind = 'b'"
	queue c other ""
}
config plain >plain.yaml
config root >b.yaml

out=$("$ROWQ" -c plain.yaml check 2>&1) || fail "check refused: $out"
assert_match "queues.a.wake: binlog: cannot follow the binary log: the user lacks the grant REPLICATION SLAVE ON \*\.\*; the user lacks the grant BINLOG MONITOR \(or REPLICATION CLIENT\) ON \*\.\*: the queue falls back to polling" "$out"

rowq_start b.yaml b.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/b.log"'
wait_until 10 'grep -q "following" b.log' || fail "the daemon does not follow the binary log"
wait_until 10 '[ "$(metric "$port" rowq_wake_binlog_lag_seconds a)" = 0 ]' ||
	fail "no binlog lag in the metrics"
# Past the workers' first claims and the watcher's first readings.
sleep 1

claims() { metric "$port" rowq_claim_duration_seconds_count "$1"; }
starts() { grep -c '^start' "$1.trace" || true; }
# insert TABLE KIND QUEUE N: a row for QUEUE, its Nth, picked up within 2 s;
# the other queues' workers do not claim meanwhile.
insert()
{
	local table=$1 kind=$2 queue=$3 n=$4 others=() before=() t0 took k
	for k in a b c; do [ "$k" = "$queue" ] || others+=("$k"); done
	for k in "${others[@]}"; do before+=("$(claims "$k")"); done
	t0=$(now_us)
	if [ "$table" = jobs ]; then
		server_sql b "INSERT INTO q.jobs (kind) VALUES ('$kind')"
	else
		server_sql b "INSERT INTO q.other () VALUES ()"
	fi
	wait_until 6 '[ "$(starts "$queue")" -ge "$n" ]' ||
		fail "queue $queue did not pick up its row $n"
	took=$(( ($(awk '$1 == "start" { t = $6 } END { print t }' "$queue.trace") - t0) / 1000 ))
	echo "queue $queue: row $n picked up in ${took} ms"
	assert_le "$took" 5000 "ms from the insert to queue $queue's handler"
	sleep 0.3
	for k in 0 1; do
		assert_eq "${before[$k]}" "$(claims "${others[$k]}")" \
		    "claims of queue ${others[$k]} after a row for $queue"
	done
}
insert jobs a a 1
insert jobs b b 1
insert other - c 1

"$ROWQ" -c b.yaml status >status.out || fail "status: $(cat status.out)"
assert_match "a wake: binlog, [0-9]+s behind the server's binary log" "$(cat status.out)"
assert_eq 1 "$(python3 -c 'import sys, urllib.request; b = urllib.request.urlopen(sys.argv[1]).read().decode(); print(int(float([l.split()[1] for l in b.splitlines() if l.startswith("rowq_wake_mode{queue=\"c\",mode=\"binlog\"}")][0])))' "http://127.0.0.1:$port/metrics")" "rowq_wake_mode binlog for c"

# The binlog connection killed: fall back, follow again, a row comes.
id=$(server_value b "SELECT id FROM information_schema.PROCESSLIST WHERE command = 'Binlog Dump'")
server_sql b "KILL $id"
wait_until 10 'grep -q "binary log connection ended" b.log' || fail "no fallback logged after KILL"
server_sql b "INSERT INTO q.jobs (kind) VALUES ('a')"
wait_until 10 '[ "$(grep -c "following" b.log)" -ge 2 ]' || fail "did not follow again after KILL"
wait_until 5 '[ "$(starts a)" -ge 2 ]' || fail "the row inserted while not following was not picked up"

# The server killed and restarted: the same, and no row lost.
server_kill9 b
server_restart b
wait_until 20 '[ "$(grep -c "following" b.log)" -ge 3 ]' || fail "did not follow again after the restart"
insert jobs a a 3
assert_eq 0 "$(server_value b "SELECT COUNT(*) FROM q.jobs WHERE done <> 1")" \
    "rows of jobs not done exactly once"
assert_eq 4 "$(server_value b "SELECT COUNT(*) FROM q.jobs")" "rows in jobs"
assert_le "$(grep -c "binlog queues are polled" b.log)" 6 "fallback lines logged"
