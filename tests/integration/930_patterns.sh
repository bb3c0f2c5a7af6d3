#!/usr/bin/env bash
# The PATTERNS of rowq.yaml(5), each as the page writes it, with several
# workers; `rowq check` finds that each pattern's index serves its claim.
# - priorities: rows come out in urgency order, oldest first among equals;
#   `rowq check` warns of an ORDER BY with DESC, naming the way out;
# - delayed jobs: no row runs before its run_at;
# - one row per customer at a time: the select joins the customer, whose
#   lock makes every other worker skip that customer's rows, so no two
#   rows of one customer ever run at once, while other customers' do;
# - a recurring job, period 1 s: two daemons run it again and again, never
#   twice in one period;
# - cancelling: a waiting row cancelled never runs (and a cancel that comes
#   too late changes no row); a running lease-mode row cancelled records
#   nothing, whether the finish or a renewal finds it gone, and the
#   renewal stops its handler.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

# work LOG WAIT [WHAT]: the handler of every queue here.  Logs "start KEY
# WHAT TIME PID", waits (WAIT seconds, or until the file WAIT exists), and
# logs "end KEY WHAT TIME".  One echo is one write on an O_APPEND
# descriptor, so the lines of concurrent handlers never mix, and the file
# holds them in the order they happened.
cat >work <<'SH'
#!/bin/bash
echo "start $ROWQ_KEY $3 $EPOCHREALTIME $$" >>"$1"
if [ "${2#/}" != "$2" ]; then
	for _ in $(seq 100); do [ -e "$2" ] && break; sleep 0.05; done
else
	sleep "$2"
fi
echo "end $ROWQ_KEY $3 $EPOCHREALTIME" >>"$1"
SH
chmod +x work
WORK=$ROWQ_TEST_TMP/work

# config FILE: the database part, and a status socket of the file's own
# so that two daemons can run side by side; queues are appended to it.
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: ${1%.yaml}.sock
stop_timeout: 5s
queues:
YAML
}

# plan_clean FILE QUEUE...: `rowq check` finds that each queue's index
# serves its claim, which reads only the rows it returns.
plan_clean()
{
	local out q file=$1
	shift
	out=$("$ROWQ" -c "$file" check 2>&1) || fail "check of $file: $out"
	for q in "$@"; do
		# MySQL scans the index whole on an empty table, and says so.
		assert_match "queues.$q.select: claim plan: ((range|ref) on index [a-z_]+, reads only the rows it returns|index on index [a-z_]+, on a table of ~0 rows)" "$out" "$q: its claim's plan"
	done
}

# keys_started LOG: the keys in the order their handlers started.
keys_started() { awk '$1 == "start" { print $2 }' "$1"; }

# ---- priorities ----
sql "CREATE TABLE task (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    urgency TINYINT NOT NULL DEFAULT 5,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, urgency, id)
) ENGINE=InnoDB"
# Ids against urgency: 1-6 least urgent (9), 13-18 most (0).
sql "INSERT INTO task (urgency) SELECT CASE WHEN seq <= 6 THEN 9
    WHEN seq <= 12 THEN 5 ELSE 0 END FROM $(seq_rows 18)"
config prio.yaml
cat >>prio.yaml <<YAML
  task:
    workers: 3
    select: |
      SELECT id, urgency FROM task
      WHERE status = 'waiting'
      ORDER BY urgency, id
    exec: [$WORK, $ROWQ_TEST_TMP/prio.log, "0.1", task]
    done: UPDATE task SET status = 'done', done_count = done_count + 1
          WHERE id = :id
    failed: UPDATE task SET status = 'failed' WHERE id = :id
    idle: 100ms
YAML
plan_clean prio.yaml task
"$ROWQ" -c prio.yaml drain task -w 3 >prio.out 2>prio.err ||
	fail "priorities: drain: $(cat prio.err)"
assert_eq "18 18" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(done_count)) FROM task WHERE status = 'done'")" "priorities: rows done once"
# Claims take rows in exactly the select's order; a handler may log its
# start a little after one that a later claim started, but no later than
# the rows in flight in the other two workers.
expected=$(sql "SELECT id FROM task ORDER BY urgency, id")
awk 'NR == FNR { pos[$1] = FNR; next }
    { d = pos[$1] - FNR; if (d < -2 || d > 2) print "row " $1 " started " FNR "th, expected " pos[$1] "th" }' \
    <(printf '%s\n' "$expected") <(keys_started prio.log) >prio.bad
assert_eq "" "$(cat prio.bad)" "priorities: start order ($(keys_started prio.log | tr '\n' ' '))"

# `rowq check` warns of a descending ORDER BY, with the way out.
line=$(grep -n '^    select:' prio.yaml | cut -d: -f1)
sed -i 's/^      ORDER BY urgency, id$/      ORDER BY urgency DESC, id/' prio.yaml
out=$("$ROWQ" -c prio.yaml check 2>&1) || fail "check of DESC: $out"
assert_match "prio.yaml:$line: queues.task.select: ORDER BY urgency DESC, id mixes directions: only an index with the same mix, \(status, urgency DESC, id\), serves it, and MariaDB before 10.8 \(MySQL before 8.0\) builds such an index ascending" "$out" "check: mixed directions"
assert_match "keep an ascending urgency column instead \(most urgent lowest\) and write ORDER BY urgency, id with INDEX \(status, urgency, id\)" "$out" "check: the way out"
sed -i 's/^      ORDER BY urgency DESC, id$/      ORDER BY urgency DESC/' prio.yaml
out=$("$ROWQ" -c prio.yaml check 2>&1) || fail "check of DESC: $out"
assert_match "prio.yaml:$line: queues.task.select: ORDER BY urgency DESC reads its index backwards, which takes the newest of equal rows first" "$out" "check: all descending"
# Descending throughout down to the primary key leaves no ties: nothing
# to say, and nothing for the ascending order either.
for order in "id DESC" "urgency DESC, id DESC" "urgency, id"; do
	sed -i "s/^      ORDER BY .*/      ORDER BY $order/" prio.yaml
	out=$("$ROWQ" -c prio.yaml check 2>&1) || fail "check: $out"
	assert_eq "" "$(grep -E 'mixes directions|reads its index backwards' <<<"$out" || true)" "check: ORDER BY $order"
done

# ---- one row per customer at a time ----
sql "CREATE TABLE customer (
    id INT NOT NULL PRIMARY KEY,
    name VARCHAR(100) NOT NULL
) ENGINE=InnoDB;
CREATE TABLE job (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    customer_id INT NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    done_count INT NOT NULL DEFAULT 0,
    INDEX waiting (status, id),
    INDEX (customer_id)
) ENGINE=InnoDB"
# Four customers, each with runs of three rows in a row: 1 1 1 2 2 2 ...,
# so that three workers claiming by id alone would run one customer's
# rows together.
sql "INSERT INTO customer SELECT seq, CONCAT('customer ', seq) FROM $(seq_rows 4);
    INSERT INTO job (customer_id) SELECT 1 + (seq - 1) DIV 3 % 4
    FROM $(seq_rows 24)"
config cust.yaml
cat >>cust.yaml <<YAML
  job:
    workers: 3
    select: |
      SELECT job.id, job.customer_id FROM job FORCE INDEX (waiting)
      STRAIGHT_JOIN customer FORCE INDEX (PRIMARY)
        ON customer.id = job.customer_id
      WHERE job.status = 'waiting'
      ORDER BY job.id
    exec: [$WORK, $ROWQ_TEST_TMP/cust.log, "0.1", "customer={customer_id}"]
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :id
    failed: UPDATE job SET status = 'failed' WHERE id = :id
    idle: 100ms
YAML
plan_clean cust.yaml job
"$ROWQ" -c cust.yaml drain job -w 3 >cust.out 2>cust.err ||
	fail "one per customer: drain: $(cat cust.err)"
assert_eq "24 24" "$(sql_value "SELECT CONCAT(COUNT(*), ' ', SUM(done_count)) FROM job WHERE status = 'done'")" "one per customer: rows done once"
# Walk the log in order: a start while the customer has a row running is
# an overlap; the most customers running at once shows the workers did
# work side by side.
awk '$1 == "start" { if (running[$3]++) print "row " $2 " of customer " $3 " started while another ran"; if (++n > peak) peak = n }
    $1 == "end" { running[$3]--; n-- }
    END { print "peak " peak }' cust.log >cust.check
assert_eq "" "$(grep -v '^peak' cust.check || true)" "one per customer: overlaps"
assert_ge "$(sed -n 's/^peak //p' cust.check)" 2 "one per customer: customers running at once"

# ---- delayed jobs, cancelling a waiting row, a recurring job ----
# Two daemons on the same queues, as on two hosts.
sql "CREATE TABLE reminder (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    run_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    status ENUM('waiting', 'sent', 'failed', 'cancelled') NOT NULL
        DEFAULT 'waiting',
    done_count INT NOT NULL DEFAULT 0,
    INDEX (status, run_at, id)
) ENGINE=InnoDB;
CREATE TABLE schedule (
    name VARCHAR(100) NOT NULL PRIMARY KEY,
    period INT NOT NULL,
    next_run_at DATETIME NOT NULL,
    last_error TEXT NULL,
    INDEX (next_run_at)
) ENGINE=InnoDB"
config a.yaml
cat >>a.yaml <<YAML
  reminder:
    workers: 2
    select: |
      SELECT id, run_at FROM reminder
      WHERE status = 'waiting' AND run_at <= NOW()
      ORDER BY run_at, id
    exec: [$WORK, $ROWQ_TEST_TMP/later.log, "0.05", reminder]
    done: UPDATE reminder SET status = 'sent', done_count = done_count + 1
          WHERE id = :id
    failed: UPDATE reminder SET status = 'failed' WHERE id = :id
    idle: 200ms
  schedule:
    workers: 2
    select: |
      SELECT name, period, next_run_at FROM schedule
      WHERE next_run_at <= NOW()
      ORDER BY next_run_at, name
    exec: [$WORK, $ROWQ_TEST_TMP/cron.log, "0.3", "schedule={name}"]
    done: UPDATE schedule SET last_error = NULL, next_run_at =
            FROM_UNIXTIME((UNIX_TIMESTAMP() DIV :period + 1) * :period)
          WHERE name = :name
    failed: UPDATE schedule SET last_error = :error, next_run_at =
              FROM_UNIXTIME((UNIX_TIMESTAMP() DIV :period + 1) * :period)
            WHERE name = :name
    idle: 200ms
YAML
sed 's/^status_socket: .*/status_socket: b.sock/' a.yaml >b.yaml
plan_clean a.yaml reminder schedule
# 1-3 are due, 4-6 due in 2 s; 6 is cancelled before its time.
sql "INSERT INTO reminder (run_at) SELECT IF(seq <= 3, NOW(),
    NOW() + INTERVAL 2 SECOND) FROM $(seq_rows 6);
    INSERT INTO schedule VALUES ('tick', 1, NOW(), NULL)"
assert_eq 1 "$(sql_value "UPDATE reminder SET status = 'cancelled'
    WHERE id = 6 AND status = 'waiting'; SELECT ROW_COUNT()")" "cancel of a waiting row"
"$ROWQ" -c a.yaml run >a.log 2>&1 & A=$!; track_pid $A
"$ROWQ" -c b.yaml run >b.log 2>&1 & B=$!; track_pid $B
runs() { grep -c '^end' cron.log 2>/dev/null || true; }
wait_until 15 '[ "$(sql_value "SELECT COUNT(*) FROM reminder WHERE status = '"'sent'"'")" = 5 ] &&
    [ "$(runs)" -ge 4 ]' ||
	fail "delayed and recurring: $(sql "SELECT * FROM reminder"; cat cron.log a.log b.log)"
# Too late: the row has run, and the cancel changes nothing.
assert_eq 0 "$(sql_value "UPDATE reminder SET status = 'cancelled'
    WHERE id = 4 AND status = 'waiting'; SELECT ROW_COUNT()")" "cancel of a row that ran"
kill -TERM "$A" "$B"
wait "$A" || fail "daemon a exited with $?: $(cat a.log)"
wait "$B" || fail "daemon b exited with $?: $(cat b.log)"
untrack_pid "$A" "$B"

assert_eq "1 sent 1,2 sent 1,3 sent 1,4 sent 1,5 sent 1,6 cancelled 0" \
    "$(sql_value "SELECT GROUP_CONCAT(id, ' ', status, ' ', done_count ORDER BY id) FROM reminder")" "reminders"
assert_eq "1 2 3 4 5" "$(keys_started later.log | sort -n | tr '\n' ' ' | sed 's/ $//')" "reminders run once each, 6 never"
# No row started before its run_at (whole seconds, as NOW() compares).
while read -r id due; do
	started=$(awk -v k="$id" '$1 == "start" && $2 == k { print $4 }' later.log)
	assert_ge "$started" "$due" "reminder $id started before its run_at"
done < <(sql "SELECT id, UNIX_TIMESTAMP(run_at) FROM reminder WHERE id <= 5")
# The recurring row: at most one run in each second, its period.
seconds=$(awk '$1 == "start" { print int($4) }' cron.log)
assert_eq "$(sort -u <<<"$seconds" | wc -l)" "$(wc -l <<<"$seconds")" "recurring: two runs in one period: $(cat cron.log)"
assert_eq "" "$(grep -i 'claimed again' a.log b.log || true)" "recurring: mistaken for a row that stays in the select"

# ---- cancelling a running row, in lease mode ----
sql "CREATE TABLE export (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    status ENUM('waiting', 'done', 'failed', 'cancelled') NOT NULL
        DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until DATETIME NULL,
    attempts INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    last_error TEXT NULL,
    INDEX (status, id)
) ENGINE=InnoDB;
INSERT INTO export (id) VALUES (1)"
# lease_config FILE SECONDS WAIT: leases of SECONDS, a handler that waits.
lease_config()
{
	config "$1"
	cat >>"$1" <<YAML
  export:
    workers: 2
    select: |
      SELECT id, attempts FROM export
      WHERE status = 'waiting'
        AND (leased_until IS NULL OR leased_until < NOW())
      ORDER BY id
    exec: [$WORK, $ROWQ_TEST_TMP/export.log, "$3", export]
    timeout: 60s
    lease:
      duration: $2s
      claim: UPDATE export SET lease = :lease, attempts = attempts + 1,
             leased_until = NOW() + INTERVAL $2 SECOND WHERE id = :id
      renew: UPDATE export SET leased_until = NOW() + INTERVAL $2 SECOND
             WHERE id = :id AND lease = :lease
    done: UPDATE export SET status = 'done', lease = NULL,
          leased_until = NULL, done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE export SET status = 'failed', lease = NULL,
            leased_until = NULL, last_error = :error
            WHERE id = :id AND lease = :lease
    idle: 200ms
YAML
}
cancel_export() { sql_value "UPDATE export SET status = 'cancelled', lease = NULL,
    leased_until = NULL WHERE id = $1 AND status = 'waiting'; SELECT ROW_COUNT()"; }
started() { grep -q "^start $1 " export.log 2>/dev/null; }

# The handler ends after the cancel, before any renewal: the finish
# changes no row, and nothing is recorded.
lease_config finish.yaml 30 "$ROWQ_TEST_TMP/go"
"$ROWQ" -c finish.yaml drain export -w 2 >finish.out 2>finish.err & D=$!; track_pid $D
wait_until 10 'started 1' || fail "row 1 never started: $(cat finish.err)"
assert_eq 1 "$(cancel_export 1)" "cancel of running row 1"
touch go
wait_until 10 '! _lib_alive $D' || fail "drain went on after the cancel: $(cat finish.err)"
wait "$D" || true
untrack_pid "$D"
assert_match "export/[12]: row 1: .*queues.export.done changed no row for key 1: the lease was lost" "$(cat finish.err)" "the finish of a cancelled row"
grep -q '^end 1 ' export.log || fail "row 1's handler did not finish: $(cat export.log)"
assert_eq "cancelled 0" "$(sql_value "SELECT CONCAT(status, ' ', done_count) FROM export WHERE id = 1")" "row 1 after its finish"
assert_eq 1 "$(grep -c '^start' export.log)" "handlers run in the finish case"

# The handler would run on: the next renewal changes no row, and stops it.
sql "INSERT INTO export (id) VALUES (2)"
lease_config renew.yaml 3 10
"$ROWQ" -c renew.yaml drain export -w 2 >renew.out 2>renew.err & D=$!; track_pid $D
wait_until 10 'started 2' || fail "row 2 never started: $(cat renew.err)"
# shellcheck disable=SC2034 # read by the wait_until below
handler=$(awk '$1 == "start" && $2 == 2 { print $5 }' export.log)
assert_eq 1 "$(cancel_export 2)" "cancel of running row 2"
t0=$(now_us)
# Renewals come every second (a third of the lease).
wait_until 3 '! _lib_alive $handler' || fail "row 2's handler still runs after the cancel: $(cat renew.err)"
assert_le $(( ($(now_us) - t0) / 1000 )) 2000 "ms from the cancel to the handler's end"
wait_until 10 '! _lib_alive $D' || fail "drain went on after the cancel: $(cat renew.err)"
wait "$D" || true
untrack_pid "$D"
assert_match "export/[12]: row 2: .*queues.export.lease.renew changed no row on renewal: the lease was lost" "$(cat renew.err)" "the renewal of a cancelled row"
! grep -q '^end 2 ' export.log || fail "row 2's handler ran to its end: $(cat export.log)"
assert_eq "cancelled 0" "$(sql_value "SELECT CONCAT(status, ' ', done_count) FROM export WHERE id = 2")" "row 2 after its renewal"
