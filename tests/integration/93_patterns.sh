#!/usr/bin/env bash
# The PATTERNS of rowq.yaml(5), each as the page writes it, with several
# workers:
# - priorities: rows come out in urgency order, oldest first among equals;
#   `rowq check` warns of an ORDER BY with DESC, naming the way out;
# - delayed jobs: no row runs before its run_at;
# - one row per customer at a time: the select joins the customer, whose
#   lock makes every other worker skip that customer's rows, so no two
#   rows of one customer ever run at once, while other customers' do;
# - a recurring job: two daemons run it at most once in each period, and
#   in every period;
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

# config FILE: the database part; queues are appended to it.
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 5s
queues:
YAML
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
    WHEN seq <= 12 THEN 5 ELSE 0 END FROM seq_1_to_18"
config prio.yaml
cat >>prio.yaml <<YAML
  task:
    workers: 3
    select: |
      SELECT id, urgency FROM task
      WHERE status = 'waiting'
      ORDER BY urgency, id
    exec: [$WORK, $ROWQ_TEST_TMP/prio.log, "0.1"]
    done: UPDATE task SET status = 'done', done_count = done_count + 1
          WHERE id = :id
    failed: UPDATE task SET status = 'failed' WHERE id = :id
    idle: 100ms
YAML
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
sed -i 's/^      ORDER BY urgency DESC$/      ORDER BY urgency, id/' prio.yaml
out=$("$ROWQ" -c prio.yaml check 2>&1) || fail "check: $out"
assert_eq "" "$(grep -i 'DESC' <<<"$out" || true)" "check: no warning for the ascending order"

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
    INDEX (status, id),
    INDEX (customer_id)
) ENGINE=InnoDB"
# Four customers, each with runs of three rows in a row: 1 1 1 2 2 2 ...,
# so that three workers claiming by id alone would run one customer's
# rows together.
sql "INSERT INTO customer SELECT seq, CONCAT('customer ', seq) FROM seq_1_to_4;
    INSERT INTO job (customer_id) SELECT 1 + (seq - 1) DIV 3 % 4
    FROM seq_1_to_24"
config cust.yaml
cat >>cust.yaml <<YAML
  job:
    workers: 3
    select: |
      SELECT job.id, job.customer_id FROM job
      STRAIGHT_JOIN customer ON customer.id = job.customer_id
      WHERE job.status = 'waiting'
      ORDER BY job.id
    exec: [$WORK, $ROWQ_TEST_TMP/cust.log, "0.1", "{customer_id}"]
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :id
    failed: UPDATE job SET status = 'failed' WHERE id = :id
    idle: 100ms
YAML
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
