#!/usr/bin/env bash
# The workflow PATTERNS of rowq.yaml(5), each as the page writes it, on two
# daemons with several workers, while a worker and then a whole daemon are
# killed with SIGKILL in the middle:
# - fan-out: a batch's row inserts its children in its done, from the
#   handler's :output;
# - fan-in: each child's done or failed counts its batch down in the
#   child's own transaction, and a queue over batches at zero runs the
#   callback: exactly once, after the last child finished (the callback
#   handler's start, from its :output, against each child's finish time),
#   two children released in the same instant included;
# - a failure policy: a child that fails for good continues its batch
#   (the callback is told how many failed) or fails it at once (a queue
#   over failed batches runs their failure callback once, and the success
#   callback never runs);
# - a chain: each step's done inserts the next with its :output as the
#   next step's input;
# - a DAG: a count of parents not yet done, which each parent's done
#   counts down; no task starts before all its parents are done;
# - a fan-in by count: the children's done and failed touch no batch
#   row, and the callback's select asks that none of a batch's children
#   waits (a subquery, which reads committed rows and takes no lock):
#   exactly once, after the last child, as the counter's.
# The workflow cancel and unique rows come after, on their own.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

# step LOG KIND [NAME=VALUE...]: the handler of every queue here.  Logs "start
# KIND KEY TIME PID" and "end KIND KEY TIME"; one echo is one write on an
# O_APPEND descriptor.  Its output is what the pattern needs: a batch's
# children as a JSON array (split), the next step's input (chain), its
# own start time (the others), which done records.
cat >step <<'SH'
#!/bin/bash
log=$1 kind=$2
shift 2
# Arguments come as name=value (never starting with '-'): the values.
for a; do set -- "$@" "${a#*=}"; shift; done
start=$EPOCHREALTIME
echo "start $kind $ROWQ_KEY $start $$" >>"$log"
case $kind in
split)
	out= i=0
	while [ "$i" -lt "$1" ]; do
		i=$((i + 1))
		case ",$2," in *",$i,"*) p=bad$i ;; *) p=c$i ;; esac
		[ "$3" = sync ] && p=sync$i
		out=$out${out:+,}\"$p\"
	done
	sleep 0.05
	echo "[$out]"
	;;
item | citem)
	case $1 in
	bad*)
		sleep 0.1
		echo "end $kind $ROWQ_KEY $EPOCHREALTIME" >>"$log"
		echo "bad payload $1" >&2
		exit 65
		;;
	sync*)
		for _ in $(seq 3000); do [ -e "$log.go" ] && break; sleep 0.01; done
		;;
	*) sleep "0.$((RANDOM % 3))$((RANDOM % 10))" ;;
	esac
	echo "$start"
	;;
chain)
	sleep 0.05
	echo "$1>$2"
	;;
*)
	sleep 0.1
	echo "$start"
	;;
esac
echo "end $kind $ROWQ_KEY $EPOCHREALTIME" >>"$log"
SH
chmod +x step
STEP=$ROWQ_TEST_TMP/step
LOG=$ROWQ_TEST_TMP/steps.log

# ---- the tables, as rowq.yaml(5) PATTERNS writes them ----
sql "CREATE TABLE batch (
    id        BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    size      INT NOT NULL,
    bad       VARCHAR(20) NOT NULL DEFAULT '',
    kind      VARCHAR(10) NOT NULL DEFAULT '',
    policy    ENUM('continue', 'fail') NOT NULL DEFAULT 'continue',
    status    ENUM('new', 'running', 'complete', 'failed', 'failure_told')
              NOT NULL DEFAULT 'new',
    pending   INT NOT NULL DEFAULT 0,
    failures  INT NOT NULL DEFAULT 0,
    callback_started DECIMAL(20,6) NULL,
    callback_count   INT NOT NULL DEFAULT 0,
    INDEX (status, pending, id),
    INDEX (status, id)
) ENGINE=InnoDB;
CREATE TABLE item (
    id        BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    batch_id  BIGINT NOT NULL,
    payload   VARCHAR(100) NOT NULL,
    status    ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    finished  DECIMAL(20,6) NULL,
    done_count   INT NOT NULL DEFAULT 0,
    failed_count INT NOT NULL DEFAULT 0,
    INDEX (status, id),
    INDEX (batch_id)
) ENGINE=InnoDB;
CREATE TABLE cbatch (
    id        BIGINT NOT NULL PRIMARY KEY,
    status    ENUM('running', 'complete', 'failed') NOT NULL
              DEFAULT 'running',
    failures  INT NULL,
    callback_started DECIMAL(20,6) NULL,
    callback_count   INT NOT NULL DEFAULT 0,
    INDEX (status, id)
) ENGINE=InnoDB;
CREATE TABLE citem (
    id        BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    batch_id  BIGINT NOT NULL,
    payload   VARCHAR(100) NOT NULL,
    status    ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    finished  DECIMAL(20,6) NULL,
    done_count   INT NOT NULL DEFAULT 0,
    failed_count INT NOT NULL DEFAULT 0,
    INDEX (status, id),
    INDEX (batch_id, status)
) ENGINE=InnoDB;
CREATE TABLE workflow (
    id       BIGINT NOT NULL PRIMARY KEY,
    steps    INT NOT NULL,
    status   ENUM('running', 'done', 'failed', 'cancelled') NOT NULL
             DEFAULT 'running',
    result   VARCHAR(200) NULL
) ENGINE=InnoDB;
CREATE TABLE step (
    id          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    workflow_id BIGINT NOT NULL,
    n           INT NOT NULL,
    input       VARCHAR(200) NOT NULL,
    status      ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    output      VARCHAR(200) NULL,
    done_count  INT NOT NULL DEFAULT 0,
    UNIQUE (workflow_id, n),
    INDEX (status, id)
) ENGINE=InnoDB;
CREATE TABLE task (
    id           BIGINT NOT NULL PRIMARY KEY,
    parents_left INT NOT NULL,
    status       ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    started      DECIMAL(20,6) NULL,
    finished     DECIMAL(20,6) NULL,
    done_count   INT NOT NULL DEFAULT 0,
    INDEX (status, parents_left, id)
) ENGINE=InnoDB;
CREATE TABLE task_edge (
    parent_id BIGINT NOT NULL,
    child_id  BIGINT NOT NULL,
    PRIMARY KEY (parent_id, child_id),
    INDEX (child_id)
) ENGINE=InnoDB"

# config FILE: both daemons' queues, each with a status socket of its own.
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: ${1%.yaml}.sock
stop_timeout: 5s
queues:
  split:
    select: |
      SELECT id, size, bad, kind FROM batch
      WHERE status = 'new'
      ORDER BY id
    exec: [$STEP, $LOG, split, "size={size}", "bad={bad}", "kind={kind}"]
    done:
      - UPDATE batch SET status = 'running', pending = JSON_LENGTH(:output)
        WHERE id = :id
      - INSERT INTO item (batch_id, payload)
        SELECT :id, j.payload
        FROM JSON_TABLE(:output, '\$[*]'
                        COLUMNS (payload VARCHAR(100) PATH '\$')) AS j
    failed: UPDATE batch SET status = 'failed' WHERE id = :id
    idle: 100ms
  item:
    workers: 3
    select: |
      SELECT id, batch_id, payload FROM item
      WHERE status = 'waiting'
      ORDER BY id
    exec: [$STEP, $LOG, item, "payload={payload}"]
    timeout: 20s
    done:
      - UPDATE item SET status = 'done', finished = UNIX_TIMESTAMP(NOW(6)),
               done_count = done_count + 1
        WHERE id = :id
      - UPDATE batch SET pending = pending - 1 WHERE id = :batch_id
    failed:
      - UPDATE item SET status = 'failed', finished = UNIX_TIMESTAMP(NOW(6)),
               failed_count = failed_count + 1
        WHERE id = :id
      - UPDATE batch SET pending = pending - 1, failures = failures + 1,
               status = IF(policy = 'fail' AND status = 'running',
                           'failed', status)
        WHERE id = :batch_id
    idle: 100ms
  callback:
    select: |
      SELECT id, failures FROM batch
      WHERE status = 'running' AND pending = 0
      ORDER BY id
    exec: [$STEP, $LOG, callback, "failures={failures}"]
    done: UPDATE batch SET status = 'complete', callback_started = :output,
                 callback_count = callback_count + 1
          WHERE id = :id
    failed: UPDATE batch SET status = 'failed' WHERE id = :id
    idle: 100ms
  on_failure:
    select: |
      SELECT id FROM batch
      WHERE status = 'failed'
      ORDER BY id
    exec: [$STEP, $LOG, on_failure]
    done: UPDATE batch SET status = 'failure_told', callback_started = :output,
                 callback_count = callback_count + 1
          WHERE id = :id
    failed: UPDATE batch SET status = 'failure_told' WHERE id = :id
    idle: 100ms
  citem:
    workers: 3
    select: |
      SELECT id, payload FROM citem
      WHERE status = 'waiting'
      ORDER BY id
    exec: [$STEP, $LOG, citem, "payload={payload}"]
    timeout: 20s
    done: UPDATE citem SET status = 'done', finished = UNIX_TIMESTAMP(NOW(6)),
                 done_count = done_count + 1
          WHERE id = :id
    failed: UPDATE citem SET status = 'failed',
                   finished = UNIX_TIMESTAMP(NOW(6)),
                   failed_count = failed_count + 1
            WHERE id = :id
    idle: 100ms
  ccallback:
    select: |
      SELECT b.id,
             (SELECT COUNT(*) FROM citem f
              WHERE f.batch_id = b.id AND f.status = 'failed') AS failures
      FROM cbatch b
      WHERE b.status = 'running'
        AND NOT EXISTS (SELECT 1 FROM citem i
                        WHERE i.batch_id = b.id AND i.status = 'waiting')
      ORDER BY b.id
    exec: [$STEP, $LOG, ccallback, "failures={failures}"]
    done: UPDATE cbatch SET status = 'complete', failures = :failures,
                 callback_started = :output,
                 callback_count = callback_count + 1
          WHERE id = :id
    failed: UPDATE cbatch SET status = 'failed' WHERE id = :id
    idle: 100ms
  chain:
    workers: 2
    select: |
      SELECT id, workflow_id, n, input FROM step
      WHERE status = 'waiting'
      ORDER BY id
    exec: [$STEP, $LOG, chain, "input={input}", "n={n}"]
    done:
      - UPDATE step SET status = 'done', output = :output,
               done_count = done_count + 1
        WHERE id = :id
      - INSERT INTO step (workflow_id, n, input)
        SELECT id, :n + 1, :output FROM workflow
        WHERE id = :workflow_id AND status = 'running' AND steps > :n
      - UPDATE workflow SET status = 'done', result = :output
        WHERE id = :workflow_id AND status = 'running' AND steps = :n
    failed:
      - UPDATE step SET status = 'failed' WHERE id = :id
      - UPDATE workflow SET status = 'failed'
        WHERE id = :workflow_id AND status = 'running'
    idle: 100ms
  dag:
    workers: 2
    select: |
      SELECT id FROM task
      WHERE status = 'waiting' AND parents_left = 0
      ORDER BY id
    exec: [$STEP, $LOG, dag]
    done:
      - UPDATE task SET status = 'done', started = :output,
               finished = UNIX_TIMESTAMP(NOW(6)), done_count = done_count + 1
        WHERE id = :id
      - UPDATE task_edge JOIN task ON task.id = task_edge.child_id
        SET task.parents_left = task.parents_left - 1
        WHERE task_edge.parent_id = :id
    failed: UPDATE task SET status = 'failed' WHERE id = :id
    idle: 100ms
YAML
}
config a.yaml
config b.yaml
out=$("$ROWQ" -c a.yaml check 2>&1) || fail "check: $out"
assert_eq "" "$(grep -E 'warning|and then reads it|does not: if' <<<"$out" || true)" "check warns of nothing"

# Batches: 1-6 of 8 children (3: child 2 fails, continue; 4: child 3
# fails, fail), 7 of 2 children released together, 8 of none.
sql "INSERT INTO batch (size, bad, policy, kind) VALUES
    (8, '', 'continue', ''), (8, '', 'continue', ''),
    (8, '2', 'continue', ''), (8, '3', 'fail', ''),
    (8, '', 'continue', ''), (8, '5,6', 'continue', ''),
    (2, '', 'continue', 'sync'), (0, '', 'continue', '');
INSERT INTO workflow (id, steps) SELECT seq, 4 FROM $(seq_rows 4);
INSERT INTO cbatch (id) VALUES (1), (2), (3), (4);
INSERT INTO citem (batch_id, payload) SELECT 1, CONCAT('c', seq)
    FROM $(seq_rows 6);
INSERT INTO citem (batch_id, payload) SELECT 2, IF(seq = 2, 'bad2',
    CONCAT('c', seq)) FROM $(seq_rows 6);
INSERT INTO citem (batch_id, payload) VALUES (3, 'sync1'), (3, 'sync2');
INSERT INTO step (workflow_id, n, input) SELECT seq, 1, CONCAT('w', seq)
    FROM $(seq_rows 4)"
# Three diamonds with a tail: 1 -> 2, 3 -> 4 -> 5, task ids 10w + 1..5.
for w in 1 2 3; do
	b=$((w * 10))
	sql "INSERT INTO task (id, parents_left) VALUES ($b + 1, 0), ($b + 2, 1),
	    ($b + 3, 1), ($b + 4, 2), ($b + 5, 1);
	INSERT INTO task_edge VALUES ($b + 1, $b + 2), ($b + 1, $b + 3),
	    ($b + 2, $b + 4), ($b + 3, $b + 4), ($b + 4, $b + 5)"
done

"$ROWQ" -c a.yaml run >a.log 2>&1 & A=$!; track_pid $A
"$ROWQ" -c b.yaml run >b.log 2>&1 & B=$!; track_pid $B
on_exit '[ $? -eq 0 ] || { tail -n 40 a.log b.log*; sort -k4 steps.log | tail -n 60; }'

# kill -9 of a worker of A whose item handler runs.
busy_item_worker()
{
	local w h
	for w in $(children_of "$A"); do
		for h in $(children_of "$w"); do
			if grep -q "^start item [0-9]* [0-9.]* $h\$" "$LOG"; then
				echo "$w"
				return 0
			fi
		done
	done
	return 1
}
victim=
wait_until 30 'victim=$(busy_item_worker)' || fail "no item handler ran in daemon a"
kill -KILL "$victim"
# kill -9 of daemon B in the middle: its workers and handlers die with it.
sleep 0.5
kill -KILL "$B"
wait "$B" 2>/dev/null || true
untrack_pid "$B"
"$ROWQ" -c b.yaml run >b.log.2 2>&1 & B=$!; track_pid $B

# Batch 7's two children, and cbatch 3's, released in the same instant:
# each waiting in a live handler (one that started on B and died with it
# runs again later).
sync_started()
{
	local id pid n=0
	for id in $(sql "SELECT id FROM $1 WHERE payload LIKE 'sync%'"); do
		pid=$(awk -v k="$1" -v id="$id" '$1 == "start" && $2 == k && $3 == id { p = $5 } END { print p }' "$LOG")
		[ -n "$pid" ] && _lib_alive "$pid" && n=$((n + 1))
	done
	[ "$n" -ge 2 ]
}
wait_until 60 'sync_started item && sync_started citem' || fail "batch 7's or cbatch 3's children never both started: $(sql "SELECT * FROM item WHERE batch_id = 7; SELECT * FROM citem WHERE batch_id = 3")"
touch "$LOG.go"

all_done()
{
	[ "$(sql_value "SELECT COUNT(*) FROM batch WHERE status IN ('complete', 'failure_told')")" = 8 ] &&
	[ "$(sql_value "SELECT COUNT(*) FROM workflow WHERE status = 'done'")" = 4 ] &&
	[ "$(sql_value "SELECT COUNT(*) FROM task WHERE status = 'done'")" = 15 ] &&
	[ "$(sql_value "SELECT COUNT(*) FROM cbatch WHERE status = 'complete'")" = 4 ] &&
	[ "$(sql_value "SELECT COUNT(*) FROM item WHERE status = 'waiting'")" = 0 ]
}
wait_until 120 all_done || fail "workflows not finished: $(sql "SELECT * FROM batch; SELECT * FROM workflow; SELECT id, status, parents_left FROM task")"
kill -TERM "$A" "$B"
wait "$A" || fail "daemon a exited with $?"
wait "$B" || fail "daemon b exited with $?"
untrack_pid "$A" "$B"
assert_match "worker [0-9] died \(killed by signal 9" "$(cat a.log)" "a worker killed"

# ---- fan-out ----
assert_eq "8 8 8 8 8 8 2" "$(sql_value "SELECT GROUP_CONCAT(n ORDER BY batch_id SEPARATOR ' ') FROM (SELECT batch_id, COUNT(*) n FROM item GROUP BY batch_id) c")" "children per batch"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM item WHERE done_count + failed_count <> 1")" "children finished other than once"

# ---- fan-in: each batch's callback once, after its last child ----
assert_eq "1 complete 0 1,2 complete 0 1,3 complete 1 1,4 failure_told 1 1,5 complete 0 1,6 complete 2 1,7 complete 0 1,8 complete 0 1" \
    "$(sql_value "SELECT GROUP_CONCAT(id, ' ', status, ' ', failures, ' ', callback_count ORDER BY id) FROM batch")" \
    "batches: status, failures, callbacks run"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM batch WHERE pending <> 0")" "batches left pending"
while read -r id started last; do
	[ "$(echo "$started > $last" | bc)" = 1 ] ||
	    fail "batch $id: callback started at $started, before its last child finished at $last"
done < <(sql "SELECT b.id, b.callback_started, MAX(i.finished) FROM batch b
    JOIN item i ON i.batch_id = b.id WHERE b.policy = 'continue' GROUP BY b.id")
# Batch 4 failed with its child 3, before its other children were done;
# its success callback never ran.
assert_eq 1 "$(sql_value "SELECT b.callback_started > i.finished FROM batch b JOIN item i ON i.batch_id = b.id WHERE b.id = 4 AND i.payload = 'bad3'")" "batch 4: its failure callback after its failed child"
assert_eq "" "$(awk '$1 == "start" && $2 == "callback" && $3 == 4' "$LOG")" "batch 4: the success callback ran"
# Batch 7: its two children finished within a moment of each other.
assert_le "$(sql_value "SELECT ROUND((MAX(finished) - MIN(finished)) * 1000) FROM item WHERE batch_id = 7")" 1000 "ms between batch 7's children"

# ---- fan-in by count: the same, with no counter ----
assert_eq "1 0 1,2 1 1,3 0 1,4 0 1" \
    "$(sql_value "SELECT GROUP_CONCAT(id, ' ', failures, ' ', callback_count ORDER BY id) FROM cbatch")" \
    "by count: batches' failures and callbacks run"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM citem WHERE done_count + failed_count <> 1")" "by count: children finished other than once"
while read -r id started last; do
	[ "$(echo "$started > $last" | bc)" = 1 ] ||
	    fail "cbatch $id: callback started at $started, before its last child finished at $last"
done < <(sql "SELECT b.id, b.callback_started, MAX(i.finished) FROM cbatch b
    JOIN citem i ON i.batch_id = b.id GROUP BY b.id")
assert_le "$(sql_value "SELECT ROUND((MAX(finished) - MIN(finished)) * 1000) FROM citem WHERE batch_id = 3")" 1000 "ms between cbatch 3's children"

# ---- chain ----
assert_eq "1 w1>1>2>3>4,2 w2>1>2>3>4,3 w3>1>2>3>4,4 w4>1>2>3>4" \
    "$(sql_value "SELECT GROUP_CONCAT(id, ' ', result ORDER BY id) FROM workflow")" "chains: each step's output the next's input"
assert_eq "16 16" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(done_count)) FROM step WHERE status = 'done'")" "chain steps done once"

# ---- DAG ----
assert_eq 15 "$(sql_value "SELECT SUM(done_count) FROM task")" "tasks done once"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM task_edge e JOIN task p ON p.id = e.parent_id
    JOIN task c ON c.id = e.child_id WHERE c.started <= p.finished")" "tasks started before a parent finished"
