#!/usr/bin/env bash
# bench/fanin.sh: what a fan-in's counter costs (rowq.yaml(5), PATTERNS,
# Batches with a callback): each child's done counts its batch down in the
# child's own transaction, so every child of a batch takes the batch row's
# lock in turn.  `bash bench/fanin.sh` (BENCH_QUICK=1: one round, fewer
# rows); kept out of make check.
#
# Starts its own throwaway MariaDB (tests/lib.sh), as bench/bench.sh does.
# ROWS children (20,000), consecutive ids in batches of 50, of 5,000 and
# all in one (the hard case: the workers claim neighbours, all of one
# batch), drained
# by 2 daemons of 4 workers each (`rowq drain -w 4` twice, side by side),
# pipe handler bench/okpipe.c, batch 1, against the same rows with no
# counter (done: the child's UPDATE alone), in turn in each of RUNS
# rounds; the ratio is the median of each round's.  And the fan-in by
# count (rowq.yaml(5), PATTERNS, A fan-in by count): the children's done
# alone, with the index (batch_id, status) that the callback's select
# looks a batch up by, and the callback queue running beside the drain
# in a daemon of its own.  Every run checked: every child done once,
# every batch at zero (counter), every batch's callback run once (count).
# InnoDB's row lock waits over the run are told too.
#
# Prints a table, and writes its section of bench/README.md (between its
# markers).

. "$(dirname "$0")/../tests/lib.sh"
. "$(dirname "$0")/lib.sh"

QUICK=${BENCH_QUICK:-0}
RUNS=${BENCH_RUNS:-$([ "$QUICK" = 1 ] && echo 1 || echo 3)}
ROWS=${BENCH_ROWS:-$([ "$QUICK" = 1 ] && echo 5000 || echo 20000)}
# Children per batch: 50, 5,000, and all of them in one batch.
SIZES=${BENCH_SIZES:-"50 5000 $ROWS"}
MARK_BEGIN='<!-- bench/fanin.sh: begin -->'
MARK_END='<!-- bench/fanin.sh: end -->'
START_S=$(date +%s)

mkdir -p "$BIN"
cc -O2 -g -Wall -Wextra -o "$BIN/okpipe" "$BENCH_DIR/okpipe.c"
[ -x "$ROWQ" ] || fail "no $ROWQ: run make first"

DB_SERVER_OPTS+=(--innodb-buffer-pool-size=512M --max-connections=500)
unset ROWQ_TEST_SOCKET
db_start
db_create rowq_bench
W=$ROWQ_TEST_TMP
cd "$W"

# fill SIZE [INDEX]: ROWS children in batches of SIZE, consecutive ids;
# INDEX the children's index by batch (batch_id).
fill()
{
	sql "DROP TABLE IF EXISTS item; DROP TABLE IF EXISTS batch;
	CREATE TABLE batch (
	    id      BIGINT NOT NULL PRIMARY KEY,
	    pending INT NOT NULL,
	    status  ENUM('running', 'complete') NOT NULL DEFAULT 'running',
	    callbacks INT NOT NULL DEFAULT 0,
	    INDEX (status, pending, id),
	    INDEX (status, id)
	) ENGINE=InnoDB;
	CREATE TABLE item (
	    id         BIGINT NOT NULL PRIMARY KEY,
	    batch_id   BIGINT NOT NULL,
	    status     ENUM('waiting', 'done', 'failed') NOT NULL
	               DEFAULT 'waiting',
	    done_count INT NOT NULL DEFAULT 0,
	    INDEX (status, id),
	    INDEX (${2:-batch_id})
	) ENGINE=InnoDB;
	INSERT INTO item (id, batch_id) SELECT seq, (seq - 1) DIV $1 + 1
	    FROM $(seq_rows "$ROWS");
	INSERT INTO batch (id, pending) SELECT batch_id, COUNT(*) FROM item
	    GROUP BY batch_id"
	settle
}

# config FILE DONE FAILED: the children's queue, its finishing lists.
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: rowq_bench }
status_socket: $W/${1%.yaml}.sock
queues:
  item:
    workers: 4
    select: |
      SELECT id, batch_id FROM item
      WHERE status = 'waiting'
      ORDER BY id
    pipe: [$BIN/okpipe]
    done: $2
    failed: $3
    idle: 100ms
YAML
	sed "s|$W/${1%.yaml}.sock|$W/${1%.yaml}.b.sock|" "$1" >"${1%.yaml}.b.yaml"
}
config plain.yaml "UPDATE item SET status = 'done', done_count = done_count + 1 WHERE id = :id" \
    "UPDATE item SET status = 'failed' WHERE id = :id"
config count.yaml "UPDATE item SET status = 'done', done_count = done_count + 1 WHERE id = :id" \
    "UPDATE item SET status = 'failed' WHERE id = :id"
# The callback of the fan-in by count, in a daemon of its own.
cat >callback.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: rowq_bench }
status_socket: $W/callback.sock
queues:
  callback:
    select: |
      SELECT b.id FROM batch b
      WHERE b.status = 'running'
        AND NOT EXISTS (SELECT 1 FROM item i
                        WHERE i.batch_id = b.id AND i.status = 'waiting')
      ORDER BY b.id
    pipe: [$BIN/okpipe]
    done: UPDATE batch SET status = 'complete', callbacks = callbacks + 1
          WHERE id = :id
    failed: UPDATE batch SET status = 'running' WHERE id = :id
    idle: 100ms
YAML
config counter.yaml "[\"UPDATE item SET status = 'done', done_count = done_count + 1 WHERE id = :id\", \"UPDATE batch SET pending = pending - 1 WHERE id = :batch_id\"]" \
    "[\"UPDATE item SET status = 'failed' WHERE id = :id\", \"UPDATE batch SET pending = pending - 1 WHERE id = :batch_id\"]"

lock_waits() { sql_value "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_ROW_LOCK_WAITS'"; }

declare -A RESULT LAST RATIO WAITS
# run NAME CONFIG SIZE [BASE]: the two daemons' drains, rows/s into
# RESULT, its ratio to BASE's of the same round into RATIO.
run()
{
	local name=$1 cfg=$2 size=$3 t0 t1 got w0 a b cb=
	if [ "$cfg" = count.yaml ]; then
		fill "$size" "batch_id, status"
		"$ROWQ" -c callback.yaml run >callback.out 2>&1 & cb=$!
		track_pid "$cb"
	else
		fill "$size"
	fi
	w0=$(lock_waits)
	t0=$(now_us)
	"$ROWQ" -c "$cfg" drain item -w 4 >a.out 2>&1 & a=$!
	"$ROWQ" -c "${cfg%.yaml}.b.yaml" drain item -w 4 >b.out 2>&1 & b=$!
	wait "$a" || fail "$name: drain a: $(tail -n 5 a.out)"
	wait "$b" || fail "$name: drain b: $(tail -n 5 b.out)"
	t1=$(now_us)
	got=$(sql_value "SELECT CONCAT_WS(' ', SUM(status = 'done'),
	    MAX(done_count), MIN(done_count)) FROM item")
	[ "$got" = "$ROWS 1 1" ] || fail "$name: not every child done once: $got"
	if [ "$cfg" = counter.yaml ]; then
		got=$(sql_value "SELECT COUNT(*) FROM batch WHERE pending <> 0")
		[ "$got" = 0 ] || fail "$name: $got batches not at zero"
	fi
	if [ -n "$cb" ]; then
		wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM batch WHERE status = '"'running'"'")" = 0 ]' ||
			fail "$name: batches left without their callback"
		kill -TERM "$cb"
		wait "$cb" || fail "$name: the callback's daemon exited with $?"
		untrack_pid "$cb"
		got=$(sql_value "SELECT COUNT(*) FROM batch WHERE callbacks <> 1")
		[ "$got" = 0 ] || fail "$name: $got batches' callbacks not run once"
	fi
	LAST[$name]=$((ROWS * 1000000 / (t1 - t0)))
	RESULT[$name]="${RESULT[$name]:-} ${LAST[$name]}"
	WAITS[$name]="${WAITS[$name]:-} $(($(lock_waits) - w0))"
	[ -z "${4:-}" ] ||
	    RATIO[$name]="${RATIO[$name]:-} $(ratio "${LAST[$name]}" "${LAST[$4]}")"
	say "  $name: ${LAST[$name]} rows/s"
}

median_of() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for ((r = 1; r <= RUNS; r++)); do
	say "round $r of $RUNS"
	# In turn, and the other way round in every other round, so that
	# what the machine does meanwhile weighs on both alike.
	for size in $SIZES; do
		if [ $((r % 2)) = 1 ]; then
			run "plain$size" plain.yaml "$size"
			run "counter$size" counter.yaml "$size" "plain$size"
			run "count$size" count.yaml "$size" "plain$size"
		else
			run "count$size" count.yaml "$size"
			run "counter$size" counter.yaml "$size"
			run "plain$size" plain.yaml "$size"
			for c in counter count; do
				RATIO[$c$size]="${RATIO[$c$size]:-} $(ratio "${LAST[$c$size]}" "${LAST[plain$size]}")"
			done
		fi
	done
done

cat >section.md <<MD
$MARK_BEGIN
## Fan-in: a batch's counter in each child's done, or a count at the callback

Written by bench/fanin.sh on $(date -u '+%Y-%m-%d %H:%M UTC'), in $(($(date +%s) - START_S)) s,
$RUNS round(s); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (a
shared machine: compare within the table only).
$ROWS children, consecutive ids, 2 daemons of 4 workers (\`rowq drain -w 4\`
twice), pipe handler okpipe, batch 1.  "counter" adds
\`UPDATE batch SET pending = pending - 1 WHERE id = :batch_id\` to done and
failed; "no counter" is the same rows with the child's UPDATE alone;
"by count" is those with the index (batch_id, status) and the callback
queue of rowq.yaml(5)'s "A fan-in by count" running beside the drain.
Rows per second, median of the rounds; the ratio is the median of each
round's (each round's pair in turn, the order swapped every other
round); row lock waits are InnoDB's over the run (median), and the
ratios of every round are listed, for the spread.

| children per batch | no counter | counter | ratio | row lock waits (counter) | by count | ratio | row lock waits (by count) |
|---:|---:|---:|---:|---:|---:|---:|---:|
MD
for size in $SIZES; do
	printf '| %s | %s | %s | %s× | %s | %s | %s× | %s |\n' "$size" \
	    "$(median_of "${RESULT[plain$size]}")" \
	    "$(median_of "${RESULT[counter$size]}")" \
	    "$(median_of "${RATIO[counter$size]}")" \
	    "$(median_of "${WAITS[counter$size]}")" \
	    "$(median_of "${RESULT[count$size]}")" \
	    "$(median_of "${RATIO[count$size]}")" \
	    "$(median_of "${WAITS[count$size]}")" >>section.md
done
echo >>section.md
for size in $SIZES; do
	echo "Ratios of the rounds, $size per batch: counter${RATIO[counter$size]}; by count${RATIO[count$size]}." >>section.md
done
echo "When they spread wider than they differ from 1, the machine was too
busy for a verdict: run it again on a quiet one." >>section.md
echo "$MARK_END" >>section.md
cat section.md
readme_section "$MARK_BEGIN" "$MARK_END" "$W/section.md"
