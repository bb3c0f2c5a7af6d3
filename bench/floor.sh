#!/usr/bin/env bash
# bench/floor.sh: what the server itself charges for the statements each
# mode sends, with no rowq and no handler: the same statements, in the
# same transactions and round trips as rowq's (its general log), sent by
# one plain client (mariadb, a packet a round trip) over fresh rows of
# lease.sh's job table.  The server's CPU a row is then the whole cost,
# and the ratio of two modes' is the rate each leaves where the database
# server is the limit, as it is when many daemons share it: the bound
# below which no client, rowq or another, can bring a mode's extra writes.
#
# Contenders (a row's statements; B the batch):
#   tx B        the claim, then B done and a COMMIT
#   lease B     the claim, B leases and a COMMIT; then B done (each with
#               its token) and a COMMIT
#   ahead 1     lease.ahead 10: a claim of 10 and their leases, then each
#               row's done and a COMMIT
#   tx B, IN / lease B, IN   the same with one statement for a batch's
#               rows (WHERE id IN (...), one token a batch): the fewest
#               statements any shape of them could take
#   tx B + runs the run log's INSERT (runs:) in front of each COMMIT
#
# `bash bench/floor.sh` (BENCH_QUICK=1: fewer rows, one round;
# ROWQ_TEST_SERVER=mysql-9.7 or mariadb-11.8: that server, tests/lib.sh);
# prints a table and writes its section of bench/README.md, one for each
# server.  Kept out of make check.

. "$(dirname "$0")/../tests/lib.sh"
. "$(dirname "$0")/lib.sh"

QUICK=${BENCH_QUICK:-0}
ROUNDS=${BENCH_RUNS:-$([ "$QUICK" = 1 ] && echo 1 || echo 3)}
ROWS=${BENCH_ROWS:-$([ "$QUICK" = 1 ] && echo 5000 || echo 20000)}
# A section of bench/README.md for each server (ROWQ_TEST_SERVER, which
# tests/lib.sh made mariadb, Debian's, when unset).
SERVER_SAYS=$([ "$ROWQ_TEST_SERVER" = mariadb ] || echo "$ROWQ_TEST_SERVER")
MARK_BEGIN="<!-- bench/floor.sh${SERVER_SAYS:+ $SERVER_SAYS}: begin -->"
MARK_END="<!-- bench/floor.sh${SERVER_SAYS:+ $SERVER_SAYS}: end -->"
START_S=$(date +%s)

[ -x "$ROWQ" ] || fail "no $ROWQ: run make first"
bench_server_start 512M

# The run log's table, made by rowq itself (a drain of one row), so that
# its shape is the one a daemon writes.
job_fill 1
cat >runs.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  job:
    select: SELECT id FROM job WHERE status = 'waiting' ORDER BY id
    exec: [/bin/true]
    done: UPDATE job SET status = 'done' WHERE id = :id
    failed: UPDATE job SET status = 'failed' WHERE id = :id
    runs: {}
YAML
"$ROWQ" -c runs.yaml drain job >drain.out 2>&1 || fail "runs table: $(tail -n 3 drain.out)"

# statements CONTENDER: the contender's statements over ROWS rows, a
# line a round trip (DELIMITER //), as rowq sends them.
statements()
{
	awk -v c="$1" -v n="$ROWS" -v pid=$$ -v family="$(server_family)" \
	    -f /dev/stdin <<'AWK'
function claim(after, b) {
	return sprintf("SELECT id, payload, attempts FROM job FORCE INDEX (PRIMARY) " \
	    "WHERE id > %d AND (status = 'waiting' AND leased_until < UNIX_TIMESTAMP()) " \
	    "ORDER BY id LIMIT %d FOR UPDATE SKIP LOCKED;", after, b)
}
function ids(from, b,   s, i) {
	for (i = from; i < from + b; i++)
		s = s (i > from ? "," : "") i
	return s
}
function token(i) { return sprintf("'%032x'", i) }
# EXECUTE name USING the values a and b: literals on MariaDB, as rowq
# sends them; MySQL takes user variables only.
function ex(name, a, b) {
	if (family != "mysql")
		return sprintf("EXECUTE %s USING %s%s;", name, a, b == "" ? "" : ", " b)
	return sprintf("SET @a = %s%s;EXECUTE %s USING @a%s;", a,
	    b == "" ? "" : ", @b = " b, name, b == "" ? "" : ", @b")
}
# A row's key as rowq writes it: the bytes of its text, in hex.
function hexkey(i,   s, k, d) {
	d = i ""
	for (k = 1; k <= length(d); k++)
		s = s "3" substr(d, k, 1)
	return s
}
function run(i) {
	return sprintf("('job', X'%s', 1, 'done', '', NULL, '2026-12-03 17:00:00.000000', " \
	    "'2026-12-03 17:00:00.000000', 0, X'766d', 1, %d, X'', NULL)", hexkey(i), pid)
}
function runs(from, b,   s, i) {
	s = "INSERT INTO rowq_runs (queue, row_key, attempt, outcome, reason, exit_status, " \
	    "started, finished, duration_ms, host, worker, pid, error, trace_id) VALUES "
	for (i = from; i < from + b; i++)
		s = s (i > from ? "," : "") run(i)
	return s ";"
}
BEGIN {
	split(c, w, " "); mode = w[1]; b = w[2] + 0; extra = w[3]
	print "SET autocommit = 0;"
	print "PREPARE txdone FROM 'UPDATE job SET status = ''done'', attempts = attempts + 1, done_count = done_count + 1 WHERE id = ?';"
	print "PREPARE lease FROM 'UPDATE job SET lease = ?, attempts = attempts + 1, leased_until = UNIX_TIMESTAMP() + 60 WHERE id = ?';"
	print "PREPARE ldone FROM 'UPDATE job SET status = ''done'', done_count = done_count + 1 WHERE id = ? AND lease = ?';"
	print "DELIMITER //"
	take = mode == "ahead" ? 10 : b
	printf "%s//\n", claim(0, take)
	for (i = 1; i <= n; i += take) {
		last = i + take - 1
		next_claim = last < n ? claim(last, take) : ""
		if (mode == "tx" && extra == "IN")
			printf "UPDATE job SET status = 'done', attempts = attempts + 1, done_count = done_count + 1 WHERE id IN (%s);COMMIT;%s//\n", ids(i, b), next_claim
		else if (mode == "tx") {
			for (j = i; j <= last; j++)
				printf "%s", ex("txdone", j)
			if (extra == "runs")
				printf "%s", runs(i, b)
			printf "COMMIT;%s//\n", next_claim
		} else if (mode == "lease" && extra == "IN") {
			printf "UPDATE job SET lease = %s, attempts = attempts + 1, leased_until = UNIX_TIMESTAMP() + 60 WHERE id IN (%s);COMMIT//\n", token(i), ids(i, b)
			printf "UPDATE job SET status = 'done', done_count = done_count + 1 WHERE id IN (%s) AND lease = %s;COMMIT;%s//\n", ids(i, b), token(i), next_claim
		} else {
			# lease and ahead: the leases of the claim's rows, then
			# each batch's (ahead: each row's) done and its COMMIT.
			for (j = i; j <= last; j++)
				printf "%s", ex("lease", token(j), j)
			printf "COMMIT//\n"
			for (j = i; j <= last; j += b) {
				for (k = j; k < j + b; k++)
					printf "%s", ex("ldone", k, token(k))
				printf "COMMIT;%s//\n", (j + b > last ? next_claim : "")
			}
		}
	}
}
AWK
}

server_ticks() { read -ra st <"/proc/$_lib_db_pid/stat"; TICKS=$((st[13] + st[14])); }
CLK_TCK=$(getconf CLK_TCK)

CONTENDERS=("tx 1" "lease 1" "ahead 1" "tx 1 runs" "tx 10" "lease 10" "tx 10 runs"
    "tx 10 IN" "lease 10 IN")
declare -A CPU RATE
# measure CONTENDER: one pass over fresh rows, its server CPU µs a row and
# rows/s into CPU and RATE; checks that every row ended done once.
measure()
{
	local c=$1 t0 t1 s0 s1 got
	statements "$c" >statements.sql
	job_fill "$ROWS"
	sql "TRUNCATE rowq_runs"
	server_ticks; s0=$TICKS
	t0=$(now_us)
	mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot "$ROWQ_TEST_DB" \
	    <statements.sql >/dev/null || fail "$c: the statements failed"
	t1=$(now_us)
	server_ticks; s1=$TICKS
	got=$(sql_value "SELECT CONCAT_WS(' ', SUM(status = 'done'), MAX(done_count),
	    MIN(done_count)) FROM job")
	[ "$got" = "$ROWS 1 1" ] || fail "$c: not every row done once: $got"
	CPU[$c]="${CPU[$c]:-} $(((s1 - s0) * 1000000 / CLK_TCK / ROWS))"
	RATE[$c]="${RATE[$c]:-} $((ROWS * 1000000 / (t1 - t0)))"
	say "  $c: server CPU ${CPU[$c]##* } µs a row, ${RATE[$c]##* } rows/s"
}

median_of() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for ((r = 1; r <= ROUNDS; r++)); do
	say "round $r of $ROUNDS"
	for c in "${CONTENDERS[@]}"; do
		measure "$c"
	done
done
TOTAL_S=$(($(date +%s) - START_S))

# base CONTENDER: what it is compared with (the transaction mode of the
# same batch and shape).
base()
{
	case $1 in
	"lease 10 IN") echo "tx 10 IN" ;;
	ahead*) echo "tx 1" ;;
	*) set -- $1; echo "tx $2" ;;
	esac
}

section()
{
	local c b
	cat <<EOF
$MARK_BEGIN
## What the server charges for each mode's statements (\`${SERVER_SAYS:+ROWQ_TEST_SERVER=$SERVER_SAYS }bash bench/floor.sh\`)

Written on $(date -u '+%Y-%m-%d %H:%M UTC') in $TOTAL_S s$([ "$QUICK" = 1 ] && echo ", **quick mode**"), $(server_family) $(sql_value "SELECT VERSION()");
load average at the end $(cut -d' ' -f1-3 /proc/loadavg).  No rowq and no
handler: the statements rowq sends for each mode, in its transactions and
round trips, by one \`mariadb\` client over $ROWS fresh rows of lease.sh's
job table; medians of $ROUNDS round(s).  The server's CPU a row is the
whole of what the statements cost it; "where the server is the limit" is
the ratio of transaction mode's CPU a row to the contender's: the rate it
leaves when the database server, not the daemons' hosts, sets the pace.
Each round's CPU µs a row: $(for c in "${CONTENDERS[@]}"; do printf "%s:%s; " "$c" "${CPU[$c]}"; done | sed 's/; $//').

| statements | server CPU µs a row | rows/s, one client | where the server is the limit, against |
|---|---:|---:|---:|
$(for c in "${CONTENDERS[@]}"; do
	b=$(base "$c")
	if [ "$b" = "$c" ]; then r=1.00; else r=$(ratio "$(median_of "${CPU[$b]}")" "$(median_of "${CPU[$c]}")"); fi
	printf '| %s | %s | %s | %s × (%s) |\n' "$c" "$(median_of "${CPU[$c]}")" "$(median_of "${RATE[$c]}")" "$r" "$b"
done)
$MARK_END
EOF
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

section >section.md
readme_section "$MARK_BEGIN" "$MARK_END" "$W/section.md"
sed -n '/^| /p' section.md
echo
echo "floor bench: wrote its section of bench/README.md in $TOTAL_S s"
