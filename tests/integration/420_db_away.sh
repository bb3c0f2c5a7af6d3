#!/usr/bin/env bash
# The database goes away under a running `rowq run`, three ways:
#   1. KILL CONNECTION of every worker's connection from another session;
#   2. mariadbd killed with SIGKILL mid-run, and started again a few
#      seconds later on the same data directory and socket;
#   3. mariadbd frozen with SIGSTOP, then resumed with SIGCONT (for longer
#      than the client timeouts in `make torture`: ROWQ_DBAWAY_FREEZE=75).
# Each time: the daemon and its workers stay up (the same pids), the
# workers reconnect with backoff and burn no CPU while they wait, each
# event is logged a bounded number of times (not a flood), and every row
# ends done exactly once in the database.  The handler may see a row twice
# when its transaction was lost after the handler ran: that is delivery
# at least once, and is counted.
#
# Runs its own server: killing the shared one would take the other tests
# down with it.
#
# Knobs: ROWQ_DBAWAY_ROWS (rows per phase, 1000), ROWQ_DBAWAY_DOWN
# (seconds the server stays dead, 2), ROWQ_DBAWAY_FREEZE (seconds frozen, 3).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
. "$TESTS_DIR/torture/dbctl.sh"
unset ROWQ_TEST_SOCKET
db_start
db_create
cd "$ROWQ_TEST_TMP"

rows=${ROWQ_DBAWAY_ROWS:-1000}
down=${ROWQ_DBAWAY_DOWN:-2}
freeze=${ROWQ_DBAWAY_FREEZE:-3}
workers=4
log=$ROWQ_TEST_TMP/handled

# rowq connects as its own user, so that its sessions can be told apart.
sql "CREATE USER rowqw@localhost; GRANT ALL ON \`$ROWQ_TEST_DB\`.* TO rowqw@localhost"
email_table 0
WORKERS=$workers email_config rowq.yaml "[x]"
sed -i "s|^    exec: .*|    pipe: [$HANDLERS/pipefake, sleep, \"4\", $log]|; s|^  user: root|  user: rowqw|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || tail -n 40 "$ROWQ_TEST_TMP/rowq.log"'
wait_until 10 '[ "$(workers_of "$ROWQ_PID" | wc -l)" = '$workers' ]' || fail "workers did not start"
pids=$(workers_of "$ROWQ_PID" | sort | tr '\n' ' ')

total=0
# CPU seconds (user + system) the workers have used.
workers_cpu()
{
	local p t=0
	for p in $(workers_of "$ROWQ_PID"); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	awk -v t="$t" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }'
}

# phase NAME: add rows, let a quarter of them be done, do NAME's damage,
# and wait until all are done; check the log lines the damage caused.
phase()
{
	local name=$1 before after start events budget
	sql "INSERT INTO email (recipient, subject, body)
	    SELECT CONCAT('u', seq, '@example.com'), 's', 'b' FROM $(seq_rows "$rows")"
	total=$((total + rows))
	wait_until 60 '[ "$(email_count "status = '"'sent'"'")" -ge $((total - rows * 3 / 4)) ]' ||
		fail "$name: rows are not being done"
	before=$(wc -l <rowq.log)
	start=$(now_us)
	"damage_$name"
	wait_all_final $((120 + rows / 50)) ||
		fail "$name: rows still waiting: $(email_count "status = 'waiting'")"
	figure "$name: seconds from the damage to every row done" \
	    "$(awk -v t="$(( $(now_us) - start ))" 'BEGIN { printf "%.1f", t / 1e6 }')"
	kill -0 "$ROWQ_PID" || fail "$name: rowq died"
	assert_eq "$pids" "$(workers_of "$ROWQ_PID" | sort | tr '\n' ' ')" "$name: worker pids (none died)"
	after=$(wc -l <rowq.log)
	events=$(tail -n +$((before + 1)) rowq.log | head -n $((after - before)))
	echo "$events" | sed "s/^/    $name: /"
	# Per worker, and for the wake watcher (which reads the pause table
	# too, on its one connection): what went wrong, that it is still
	# wrong once a minute, and that it is fixed.
	budget=$(((workers + 1) * (3 + ${2:-0} / 60)))
	assert_le "$(echo "$events" | grep -c . || true)" "$budget" "$name: log lines about it"
	figure "$name: log lines" "$(echo "$events" | grep -c . || true)"
}

damage_kill_connection()
{
	local n
	n=$(dbctl_kill_connections rowqw)
	assert_eq "$workers" "$n" "connections killed"
}

damage_sigkill()
{
	local cpu0 cpu1
	dbctl_kill9
	cpu0=$(workers_cpu)
	sleep "$down"
	cpu1=$(workers_cpu)
	# Retrying with backoff, not spinning.
	assert_le "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { print b - a }')" 0.5 \
	    "CPU seconds the workers used while the server was down for ${down}s"
	figure "sigkill: worker CPU seconds while down ${down}s" \
	    "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { print b - a }')"
	dbctl_start
}

damage_sigstop()
{
	dbctl_freeze
	sleep "$freeze"
	dbctl_thaw
}

phase kill_connection
phase sigkill "$down"
phase sigstop "$freeze"

stop_rowq "$ROWQ_PID"
assert_eq 0 "$(rowq_transactions rowqw)" "transactions left open"
assert_exactly_once "$total"
assert_eq "$total" "$(cut -d' ' -f1 "$log" | sort -u | wc -l)" "distinct rows the handler saw"
dup=$(( $(wc -l <"$log") - total ))
# A lost transaction gives its rows back: at most a batch per worker per event.
assert_le "$dup" $((3 * workers)) "rows the handler saw twice"
figure "rows" "$total"
figure "handler runs repeated after a lost transaction" "$dup"
figure "done twice" 0
figure "lost" 0
figure "reconnect lines ('database back')" "$(lines rowq.log 'database back')"
