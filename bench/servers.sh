#!/usr/bin/env bash
# Throughput per server: `make bench-servers`, or `BENCH_QUICK=1 make
# bench-servers` to try things out (1 run, fewer rows).
#
# For each server of SERVERS in turn (tests/lib.sh's ROWQ_TEST_SERVER:
# the host's MariaDB 10.11, MariaDB 11.8 and MySQL 9.7 from their chroots),
# started with bench/bench.sh's options and stopped after, bench.sh's
# contenders on its email table with the good index, at each count of
# WORKERS_LIST (1, 2 and 4), rows per second as the median of RUNS runs:
#
#   raw1   bench/rawloop.c, 1 row/transaction: the server's baseline
#   raw10  the same, 10 rows per transaction
#   rowq1  rowq drain, pipe handler bench/okpipe.c, batch 1
#   rowq10 the same, batch 10
#   rawx   raw1 plus posix_spawn of /bin/true per row
#   rowqx  rowq drain, exec handler /bin/true
#
# each against its loop measured on the same server in the same run
# (bench.sh's baselines), every run checked (every row sent, done_count
# exactly 1); and at 1 worker the statements per row (Questions) with
# the counters of each kind behind them, and the server's CPU per row.
#
# Each server is measured by this script run again with --server, a
# process of its own (lib.sh reads ROWQ_TEST_SERVER when sourced) in a
# directory of its own.  Prints a table, and writes its section of
# bench/README.md (between its markers, which bench/bench.sh keeps).

. "$(dirname "$0")/../tests/lib.sh"
. "$TESTS_DIR/email.sh"
. "$(dirname "$0")/lib.sh"

QUICK=${BENCH_QUICK:-0}
SERVERS=${BENCH_SERVERS:-"mariadb mariadb-11.8 mysql-9.7"}
WORKERS_LIST=${BENCH_WORKERS:-"1 2 4"}
if [ "$QUICK" = 1 ]; then
	RUNS=${BENCH_RUNS:-1}
	ROWS=${BENCH_ROWS:-3000}
	EXEC_ROWS=${BENCH_EXEC_ROWS:-200}
else
	RUNS=${BENCH_RUNS:-3}
	ROWS=${BENCH_ROWS:-20000}
	EXEC_ROWS=${BENCH_EXEC_ROWS:-1000}
fi
CONTENDERS="raw1 raw10 rowq1 rowq10 rawx rowqx"
# What the statements of a run were, beside Questions: the kinds that
# rowq and the loops send (MariaDB's bulk execute counts in
# Com_stmt_execute), those of one family only being 0 on the other.
MEASURE_COUNTERS="Com_select Com_update Com_begin Com_commit Com_rollback
Com_savepoint Com_stmt_execute Com_stmt_prepare Com_execute_sql
Com_prepare_sql Com_set_option"
MARK_BEGIN='<!-- bench/servers.sh: begin -->'
MARK_END='<!-- bench/servers.sh: end -->'

# ---- one server (--server): its measurements, in ROWQ_TEST_TMP ---------

if [ "${1:-}" = --server ]; then
	t0=$(now_us)
	bench_server_start
	make_configs
	: >results.tsv
	: >counters.tsv
	say "bench-servers: $ROWQ_TEST_SERVER, $(sql_value "SELECT VERSION()")"
	measure_rounds
	# What the report says of this server.
	case $(server_family) in
	mysql) echo "MySQL $(server_version)" ;;
	*) echo "MariaDB $(server_version)" ;;
	esac >name
	sql_value "SELECT VERSION()" >version
	sql_value "SELECT IF(@@performance_schema, 'ON', 'OFF')" >perfschema
	cut -d' ' -f1-3 /proc/loadavg >load
	awk -v a="$t0" -v b="$(now_us)" 'BEGIN { printf "%.0f\n", (b - a) / 1e6 }' >secs
	exit 0
fi

# ---- every server, in turn ----------------------------------------------

bench_build
W=$ROWQ_TEST_TMP
started=$(now_us)
say "bench-servers: $SERVERS; $ROWS rows ($EXEC_ROWS for the exec pair), workers $WORKERS_LIST, $RUNS run(s)"
for s in $SERVERS; do
	mkdir -p "$W/$s"
	date -u +%H:%M >"$W/$s/start"
	# Tracked, so that a signal to this script stops it, and it its server.
	ROWQ_TEST_SERVER=$s ROWQ_TEST_TMP=$W/$s bash "$BENCH_DIR/servers.sh" --server &
	one=$!
	track_pid "$one"
	wait "$one" || fail "$s: the measurements failed (above)"
	untrack_pid "$one"
	# Its data directory (a redo log of 512 MiB) is done with.
	rm -rf "$W/$s/db"
	date -u +%H:%M >"$W/$s/end"
done
TOTAL_S=$(awk -v a="$started" -v b="$(now_us)" 'BEGIN { printf "%.0f", (b - a) / 1e6 }')
cd "$W"

# ---- report ---------------------------------------------------------------

# of SERVER FILE: what the server's run wrote in FILE.
of() { cat "$W/$1/$2"; }

# count_median CONTENDER WORKERS NAME: the median over runs of counter
# NAME per row (counters.tsv, in the current directory).
count_median()
{
	awk -F'\t' -v c="$1" -v n="$2" -v k="$3" '$1 == c && $2 == n && $4 == k { print $5 }' \
	    counters.tsv | sort -g | awk '{ v[++k] = $1 }
	    END { if (k) print k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2 }'
}

throughput()
{
	local s
	table_head server
	for s in $SERVERS; do
		(cd "$W/$s" && table_rows "$(of "$s" name)")
	done
}

servers_head()
{
	local s
	printf '| contender |'
	for s in $SERVERS; do printf ' %s |' "$(of "$s" name)"; done
	printf '\n|---|'
	for s in $SERVERS; do printf -- '---:|'; done
	printf '\n'
}

# per_server COLUMN FORMAT CONTENDER...: one row per CONTENDER, the median
# of results.tsv's COLUMN at 1 worker on each server.
per_server()
{
	local col=$1 fmt=$2 c s n=${WORKERS_LIST%% *}
	shift 2
	servers_head
	for c in "$@"; do
		printf '| %s |' "$(label "$c")"
		for s in $SERVERS; do
			# shellcheck disable=SC2059 # the format is the caller's
			printf " $fmt |" "$(cd "$W/$s" && median "$c" "$n" "$col")"
		done
		printf '\n'
	done
}

# kinds: for rowq batch 1 and 10 at 1 worker, each server's Com_
# counters per row, those under 0.01 left out.
kinds()
{
	local c s k v n=${WORKERS_LIST%% *} line
	printf '| server | contender | per row, `Com_` counters |\n|---|---|---|\n'
	for s in $SERVERS; do
		for c in rowq1 rowq10; do
			line=
			for k in $(cut -f4 "$W/$s/counters.tsv" | sort -u); do
				v=$(cd "$W/$s" && count_median "$c" "$n" "$k")
				awk -v v="$v" 'BEGIN { exit !(v >= 0.01) }' || continue
				line="$line${line:+, }${k#Com_} $(printf '%.2f' "$v")"
			done
			printf '| %s | %s | %s |\n' "$(of "$s" name)" "$(label "$c")" "$line"
		done
	done
}

servers_table()
{
	local s
	printf '| server | VERSION() | performance_schema | measured (UTC) | took | load average at its end |\n'
	printf '|---|---|---|---|---:|---|\n'
	for s in $SERVERS; do
		printf '| %s | %s | %s | %s–%s | %s s | %s |\n' "$(of "$s" name)" \
		    "$(of "$s" version)" "$(of "$s" perfschema)" "$(of "$s" start)" \
		    "$(of "$s" end)" "$(of "$s" secs)" "$(of "$s" load)"
	done
}

# stmts CONTENDER SERVER: its statements per row at 1 worker there.
stmts() { (cd "$W/$2" && median "$1" "${WORKERS_LIST%% *}" 7); }

# The section's figures for batch 10 on each server, for the text.
batch10=
for s in $SERVERS; do
	batch10="$batch10${batch10:+, }$(printf '%.2f' "$(stmts rowq10 "$s")") on $(of "$s" name)"
done

cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mem_total=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
cat >section.md <<EOF
$MARK_BEGIN
## Throughput per server (\`make bench-servers\`)

Written by bench/servers.sh on $(date -u '+%Y-%m-%d %H:%M UTC') in $TOTAL_S s$([ "$QUICK" = 1 ] && echo ", **quick mode** (BENCH_QUICK=1): 1 run, fewer rows"),
on $(nproc) CPUs ($cpu_model), $mem_total, Linux $(uname -r);
rowq $("$ROWQ" --version | cut -d' ' -f2). Load average when the run ended: $(cut -d' ' -f1-3 /proc/loadavg)
(the machine is shared: other work shows here, in each server's line
below and in the spread between runs).

Each server in turn (tests/lib.sh's \`ROWQ_TEST_SERVER\`), a throwaway one
started with the same options as \`make bench\`'s (1 GiB buffer pool,
512 MiB redo log, \`innodb_flush_log_at_trx_commit=2\`, no binary log; the
rest each server's defaults, performance_schema among them) and stopped
after, with the same contenders on the same email table and INDEX
(status, id). Rows per second, median of $RUNS run(s), $ROWS rows per run,
$EXEC_ROWS for the two that start a process per row; in brackets the
ratio to the loop measured against on the same server in the same run
(the raw loop, 1 row/transaction, for the 10-row loop and rowq batch 1;
the 10-row loop for rowq batch 10; the spawning loop for rowq exec).
Every run checked: every row sent, \`done_count\` exactly 1 everywhere.

$(servers_table)

$(throughput)

Statements per row at ${WORKERS_LIST%% *} worker (the server's \`Questions\` over the run,
divided by the rows, start-up included), median of the runs:

$(per_server 7 %.2f raw1 raw10 rowq1 rowq10)

For rowq, what the server ran, by its \`Com_\` counters over the same
runs, per row. They count statements run, not sent: an \`EXECUTE\` by SQL
counts in execute_sql, and its statement again in stmt_execute and
update; a bulk execute counts once in \`Questions\`, but each of its rows
in stmt_execute and update.

$(kinds)

The server's CPU per row at ${WORKERS_LIST%% *} worker, µs (user + system time of the server's
process over the run, divided by the rows):

$(per_server 9 %.0f $CONTENDERS)

What differs, and why (src/dialect.h: rowq takes the dialect from the
server's greeting, never from its configuration). MariaDB runs a batch's
\`done\` for all its rows in one COM_STMT_BULK_EXECUTE; MySQL has no bulk
execution, so there a batch of 10 is ten executes of the prepared
\`done\`, one a row: batch 10's statements per row, $batch10,
the same rows updated either way. At batch 1 the row's \`done\` goes in
front of the COMMIT and the next claim, three statements in one round
trip on either family: on MariaDB as \`EXECUTE\` of the \`done\` prepared
once per connection by SQL (\`PREPARE rowq_done FROM X'..'\`: execute_sql
above), on MySQL, whose \`EXECUTE\` takes user variables only and whose
\`PREPARE\` refuses \`X'..'\`, as the \`done\`'s own text with its values
written in (update alone), which the server parses at every row. The raw
loops send the same prepared statements to every server, so their rates
are what each server's claim through INDEX (status, id), UPDATE and
COMMIT cost at READ COMMITTED, where rowq claims from a cursor on the
primary key (src/cursor.c): each ratio compares rowq with a loop on its
own server, not one server with another; the servers compare by their
rows/s and CPU per row, measured minutes apart on a shared machine.
$MARK_END
EOF
readme_section "$MARK_BEGIN" "$MARK_END" "$W/section.md"

echo
servers_table
echo
throughput
echo
per_server 7 %.2f raw1 raw10 rowq1 rowq10
echo
kinds
echo
per_server 9 %.0f $CONTENDERS
echo
echo "bench-servers: wrote its section of bench/README.md in $TOTAL_S s"
