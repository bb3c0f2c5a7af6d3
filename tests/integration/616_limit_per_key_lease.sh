#!/usr/bin/env bash
# limit.per_key in lease mode: the key's slot is a named lock of the
# worker's session, held while the handler runs with no transaction
# open (the session stays busy with the lease's renewals) and given back
# once the row is finished.  Concurrency 1 per customer, one hot
# customer (12 rows at the head of the queue) and 10 others (2 rows
# each); 2 daemons of 3 workers, leases of 3 s, rows of 0.3 s.  Counted
# from the handlers' own lines: no customer ran two rows at once, the
# others were not held up behind the hot one.  Then kill -9 of a daemon
# while its handlers run: its sessions end and their keys with them, its
# rows come back when their leases run out, and the other daemon does
# them, still one per customer at a time.  Last, a frozen host (SIGSTOP
# of a daemon, its workers and handlers): the keys its handlers hold are
# not run elsewhere while its sessions live (the rows' leases run out
# after 3 s, the sessions end after 3 s + 5 s of silence), the other
# keys go on.  Every row done once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
log=$ROWQ_TEST_TMP/trace
: >"$log"
sql "CREATE TABLE job (
    id INT NOT NULL PRIMARY KEY,
    customer_id INT NOT NULL,
    status ENUM('waiting', 'done') NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    lease CHAR(32) NULL,
    leased_until DATETIME(6) NULL,
    INDEX (status, id)
) ENGINE=InnoDB"
# fill FIRST: the hot customer's 12 rows, then the others' 20, from id FIRST.
fill()
{
	sql "INSERT INTO job (id, customer_id) SELECT $1 + seq - 1, 1
	    FROM $(seq_rows 12);
	    INSERT INTO job (id, customer_id)
	    SELECT $1 + 12 + seq - 1, 2 + (seq - 1) % 10 FROM $(seq_rows 20)"
}
for d in a b; do
	cat >$d.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
status_socket: $ROWQ_TEST_TMP/$d.sock
queues:
  job:
    workers: 3
    select: SELECT id, customer_id, attempts FROM job
            WHERE status = 'waiting'
              AND (leased_until IS NULL OR leased_until < UTC_TIMESTAMP(6))
            ORDER BY id
    exec: [$HANDLERS/trace, $log, "300"]
    idle: 200ms
    limit: {per_key: {column: customer_id, concurrency: 1}}
    lease:
      duration: 3s
      claim: UPDATE job SET lease = :lease, attempts = attempts + 1,
             leased_until = UTC_TIMESTAMP(6) + INTERVAL 3 SECOND WHERE id = :id
      renew: UPDATE job SET leased_until = UTC_TIMESTAMP(6) + INTERVAL 3 SECOND
             WHERE id = :id AND lease = :lease
    done: UPDATE job SET status = 'done', done_count = done_count + 1,
          lease = NULL, leased_until = NULL WHERE id = :id AND lease = :lease
    retry:
      attempts_column: attempts
      update: UPDATE job SET lease = NULL, leased_until = NULL
              WHERE id = :id AND lease = :lease
    failed: UPDATE job SET status = 'done', lease = NULL
            WHERE id = :id AND lease = :lease
YAML
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
"$ROWQ" -c a.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"

# one_at_a_time: no customer ran two rows at once, over the log so far.
one_at_a_time()
{
	local c
	job_by_customer "$log" bykey
	for c in $(seq 1 11); do
		awk -v c="$c" '$2 == c' bykey >key.$c
		[ "$(overlap_max key.$c)" -le 1 ] ||
			fail "$1: customer $c ran $(overlap_max key.$c) rows at once"
	done
}

# ---- 1. a hot customer, two daemons ----
fill 0
rowq_start a.yaml a.log; A=$ROWQ_PID
rowq_start b.yaml b.log; B=$ROWQ_PID
job_wait_done 60
one_at_a_time "two daemons"
hot_half=$(awk '$1 == "start" { print $6 }' key.1 | sort -n | sed -n 6p)
others_last=$(awk '$1 == "start" && $2 != 1 { print $6 }' bykey | sort -n | tail -n 1)
hot_first=$(awk '$1 == "start" { print $6 }' key.1 | sort -n | head -n 1)
figure "s after the hot customer's first row the others' last started" \
    "$(awk -v a="$hot_first" -v b="$others_last" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }')"
assert_le "$others_last" "$hot_half" \
    "the others' last start (us), against the hot customer's 6th"

# ---- 2. kill -9 of a daemon while its handlers run ----
: >"$log"
fill 100
wait_until 20 '[ -n "$(handlers_of "$A")" ]' || fail "daemon a ran no handler"
a_workers=$(workers_of "$A" | tr '\n' ' ')
kill -KILL "$A" $a_workers
killed_at=$(now_us)
close_starts "$log" "$killed_at" $a_workers
untrack_pid "$A"
wait "$A" 2>/dev/null || true
job_wait_done 60
done_at=$(now_us)
figure "s from the kill -9 until every row was done" \
    "$(awk -v a="$killed_at" -v b="$done_at" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }')"
one_at_a_time "after the kill -9"
# The killed daemon's rows came back once their leases ran out.
assert_ge "$(sql_value "SELECT COUNT(*) FROM job WHERE id > 100 AND attempts > 1")" 1 \
    "rows the killed daemon held, run again"

# ---- 3. a frozen host ----
: >"$log"
rowq_start a.yaml a.log; A=$ROWQ_PID
fill 200
wait_until 20 '[ "$(handlers_of "$A" | wc -l)" -ge 2 ]' || fail "daemon a ran no 2 handlers"
a_workers=$(workers_of "$A" | tr '\n' ' ')
# The supervisor and workers first, so that no handler starts meanwhile;
# then the handlers they run.
kill -STOP "$A" $a_workers
frozen_at=$(now_us)
a_all="$A $a_workers $(handlers_of "$A" | tr '\n' ' ')"
kill -STOP $a_all 2>/dev/null || true
on_exit "kill -CONT $a_all 2>/dev/null || true"
# The customers whose rows the frozen handlers hold.
held=$(awk -v only="$a_workers" 'BEGIN { n = split(only, o, " "); for (i = 1; i <= n; i++) w[o[i]] = 1 }
    $1 == "start" && ($4 in w) { s[$3] = $2 } $1 == "end" { delete s[$3] }
    END { for (p in s) print s[p] }' "$log" | sort -u)
[ -n "$held" ] || fail "no handler of daemon a ran at the freeze"
sleep 11
job_by_customer "$log" bykey
first_again=
for id in $held; do
	c=$(sql_value "SELECT customer_id FROM job WHERE id = $id")
	# Not a frozen worker's handler, whose start line can come just
	# after the freeze, before its own SIGSTOP.
	t=$(awk -v c="$c" -v t0="$frozen_at" -v only="$a_workers" '
	    BEGIN { n = split(only, o, " "); for (i = 1; i <= n; i++) w[o[i]] = 1 }
	    $1 == "start" && $2 == c && $6 > t0 && !($4 in w) { print $6; exit }' bykey)
	[ -n "$t" ] || continue
	[ -n "$first_again" ] && [ "$first_again" -le "$t" ] || first_again=$t
done
[ -n "$first_again" ] || fail "no held customer's row ran within 11 s of the freeze"
figure "s from the freeze until a held customer's row ran elsewhere" \
    "$(awk -v a="$frozen_at" -v b="$first_again" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }')"
assert_ge "$(((first_again - frozen_at) / 1000))" 3000 \
    "ms until a frozen host's customer ran elsewhere (its lease: 3 s)"
kill -CONT $a_all 2>/dev/null || true
job_wait_done 60
stop_rowq "$A"
stop_rowq "$B"
