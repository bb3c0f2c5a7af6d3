#!/usr/bin/env bash
# A rate of more than 2,000 a second: each take at batch 1 takes a
# millisecond's tokens at once (at most 16), and the worker starts its
# next claims on them without a take, for 10 ms at most; what it does not
# use goes back.  2 daemons of 2 workers, the pipe handler, counted from
# its own lines (each start's microsecond) and from the rows the server
# changed (each row's done and the bucket's UPDATEs):
#   1. rate: 1000000/1s, far above: far fewer UPDATEs than rows (one a
#      row before), every row done once;
#   2. rate: 2000/1s with burst: 10, below what the workers do: in no
#      1 s window more starts than rowq.yaml(5) allows, burst + (1 s +
#      10 ms) x 2,000 + (2 - 1) x 4 workers, and the rate used (at least
#      0.8 of it).  With burst
#      1 at such a rate the bucket cannot keep what comes in while the
#      workers wait for it (a millisecond at least): rowq.yaml(5) says
#      to give a few milliseconds' worth;
#   3. the same rate with burst: 1, where each take reserves its token
#      ahead (the bucket holds no more than one take): the same bound,
#      and the rate used (at least 0.7 of it);
#   4. the bucket at rest after each: no more than the burst;
#   5. a trigger on the limit table, which would hide when a reserved
#      token is due (it did in this test once): `rowq check` refuses it.
# serial: the workers must outrun 2,000 rows a second, under ASan
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=3000
email_table 0
# The limit table as rowq makes it (rowq.yaml(5), LIMIT TABLE).  The
# updates of the bucket are counted from the server's Handler_update (the
# rows it changed: each row's done, once, and the bucket's), not by a
# trigger: a trigger's statement hides the LAST_INSERT_ID that tells a
# take when its reserved token is due (the workers then start at once).
sql "CREATE TABLE rowq_limit (
  queue VARCHAR(191) NOT NULL,
  scope VARBINARY(255) NOT NULL DEFAULT '',
  slot INT NOT NULL DEFAULT 0,
  tokens DOUBLE NOT NULL DEFAULT 0,
  took INT NOT NULL DEFAULT 0,
  tokens_at DATETIME(6) NOT NULL DEFAULT '2000-01-01 00:00:00',
  lease CHAR(32) NULL,
  lease_until DATETIME(6) NULL,
  throttled_until DATETIME(6) NULL,
  reason VARCHAR(1000) NOT NULL DEFAULT '',
  PRIMARY KEY (queue, scope, slot),
  KEY rowq_throttled (queue, throttled_until)
) ENGINE=InnoDB"
# The rows the server changed so far.
changed() { sql "SHOW GLOBAL STATUS LIKE 'Handler_update'" | awk '{ print $2 }'; }
log=$ROWQ_TEST_TMP/handled
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'

# phase LIMIT: a fresh run of the two daemons over $rows new rows.
phase()
{
	local d
	: >"$log"
	sql "TRUNCATE email;
	    INSERT INTO email (recipient, subject, body)
	    SELECT CONCAT('u', seq, '@example.com'), 's', 'b' FROM $(seq_rows "$rows")"
	for d in a b; do
		WORKERS=2 email_config $d.yaml "[x]" "limit: {$1}"
		sed -i "s|^    exec: .*|    pipe: [$HANDLERS/pipefake, timed, $log]|" $d.yaml
		sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$d.sock\nqueues:|" $d.yaml
	done
	changed0=$(changed)
	rowq_start a.yaml a.log
	A=$ROWQ_PID
	rowq_start b.yaml b.log
	B=$ROWQ_PID
	wait_all_final 120 || fail "$1: rows still waiting: $(email_count "status = 'waiting'")"
	stop_rowq "$A"
	stop_rowq "$B"
	assert_exactly_once $rows
	# Given back, never past the burst.
	assert_le "$(sql_value "SELECT CEIL(tokens) FROM rowq_limit
	    WHERE queue = 'email' AND scope = '' AND slot = 0")" "${2:-1}" \
	    "$1: tokens at rest"
}
# starts LOG: "KEY PID US" lines as the trace handler's starts.
starts_of() { awk '{ print "start", $1, $2, 0, 0, $3 }' "$1"; }

# ---- 1. far above ----
phase "rate: 1000000/1s"
# Every row's done changed it once; the rest are the bucket's.
updates=$(( $(changed) - changed0 - rows ))
first=$(awk 'NR == 1 || $3 < m { m = $3 } END { print m }' "$log")
last=$(awk '$3 > m { m = $3 } END { print m }' "$log")
speed=$(awk -v n=$rows -v us=$((last - first)) 'BEGIN { printf "%d", n / (us / 1e6) }')
figure "rows/s with rate 1000000/1s" "$speed"
figure "UPDATEs of the bucket for $rows rows (one a row before)" "$updates"
assert_le "$updates" $((rows / 4)) "UPDATEs of the bucket, far above the load"

# ---- 2. binding ----
rate=${ROWQ_RESERVE_RATE:-2000}
# A machine too busy to outrun 2,000 a second (567 seen under a load of
# 9 on 2 cores) still shows the bound, at a rate it can outrun.
if [ "$speed" -le $((rate * 5 / 4)) ]; then
	rate=$((speed * 2 / 3 / 100 * 100))
	[ "$rate" -ge 200 ] ||
		fail "the workers do $speed rows/s: too few to hold any rate back"
	echo "the workers do $speed rows/s: the rate held back is $rate/1s" >&2
fi
# binding BURST [TENTHS]: a phase at $rate/1s with BURST, its starts
# counted, at least TENTHS (8) tenths of the rate used.  A
# token may start a handler up to 10 ms after its take, and a take
# leaves the bucket one token short at 2,000 a second; the handler's
# line comes after its fork and exec, 10 ms more on a loaded machine
# (2,041 seen once on MySQL in CI against 2,034 without it).
binding()
{
	local most first last used
	phase "rate: $rate/1s, burst: $1" "$1"
	starts_of "$log" >starts
	most=$(starts_per_window starts 1000000)
	first=$(awk 'NR == 1 || $3 < m { m = $3 } END { print m }' "$log")
	last=$(awk '$3 > m { m = $3 } END { print m }' "$log")
	used=$(awk -v n=$rows -v us=$((last - first)) 'BEGIN { printf "%d", (n - 1) / (us / 1e6) }')
	figure "the most starts in any 1 s window, rate $rate/1s, burst $1" "$most"
	figure "starts per second over the run, rate $rate/1s, burst $1" "$used"
	assert_le "$most" $(($1 + rate * 1020 / 1000 + (2 - 1) * 4)) "burst $1: starts in any 1 s window"
	assert_ge "$used" $((rate * ${2:-8} / 10)) "burst $1: starts per second over the run"
}
binding 10

# ---- 3. burst 1 at the same rate ----
# A bucket that holds one take keeps nothing for a worker that comes a
# millisecond late: each take reserves its token (the bucket goes into
# debt) and the worker sleeps until it is due.  The same bound with a
# burst of 1; and the rate used: 0.99 of it on a quiet machine in
# bench/limits.sh, about 0.75 without the reservation.  Under ASan on a
# loaded machine a worker that wakes over 10 ms after its token leaves
# it (limit_late), and the bucket, in debt, cannot keep it (1,602 and
# 1,952 a second seen on MariaDB 11.8), so the bound here is looser, 0.7
# of the rate: above what polling workers gave (about 0.75 on a quiet
# machine, less under load).
binding 1 7

# ---- 5. a trigger on the limit table: check refuses it ----
sql "CREATE TABLE bucket_updates (n INT NOT NULL) ENGINE=InnoDB;
    CREATE TRIGGER count_bucket AFTER UPDATE ON rowq_limit FOR EACH ROW
    UPDATE bucket_updates SET n = n + 1"
status=0
out=$("$ROWQ" -c a.yaml check 2>&1) || status=$?
assert_eq 78 "$status" "check with a trigger on the limit table: exit status"
assert_match "queues\.email\.limit: the limit table rowq_limit has a trigger, count_bucket: .*LAST_INSERT_ID" "$out" "check names the trigger"
