#!/usr/bin/env bash
# The prune benchmark: the residue of the queue-table article (seed 001)
# before and after `rowq prune`.  `bash bench/prune.sh` after `make rowq`,
# or `BENCH_PRUNE=1 make bench` to run it after the main benchmark;
# BENCH_QUICK=1 for a tenth of the rows.
#
# Starts its own throwaway MariaDB (tests/lib.sh, the options of
# bench/bench.sh), fills the email table of the tests with RESIDUE
# finished rows sent more than a week ago (4,000,000; quick 400,000),
# plus RECENT rows sent yesterday, and measures:
#
#   before  the claim rate: rows/s of `rowq drain email -w 4` (no-op pipe
#           handler) over WAITING new rows behind the residue, with the
#           article's INDEX (status, retry_at), given at most LIMIT_S, and
#           with INDEX (status, id), median of RUNS
#   prune   `rowq prune email` of the residue (DELETE ... LIMIT chunk:,
#           pause: between chunks, rowq's defaults) while `rowq run` works
#           the queue with 4 workers, a live queue of LIVE rows is put on
#           it, and bench/appinsert.c inserts a row every 10 ms and times
#           each INSERT; the same without the prune first, for comparison
#   after   the claim rate again, with both indexes
#
# Every waiting row is checked done exactly once (done_count), the prune
# must remove exactly the residue (not one recent or waiting row).
# Prints a table and writes it to bench/README.md, in a section of its own
# that replaces the one of an earlier run.

. "$(dirname "$0")/../tests/lib.sh"
. "$TESTS_DIR/email.sh"
. "$(dirname "$0")/lib.sh"

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	RESIDUE=${BENCH_RESIDUE:-400000}
	RUNS=${BENCH_RUNS:-1}
	WAITING=1000
	LIVE=5000
	LIMIT_S=8
	BASELINE_S=10
else
	RESIDUE=${BENCH_RESIDUE:-4000000}
	RUNS=${BENCH_RUNS:-3}
	WAITING=10000
	LIVE=20000
	LIMIT_S=10
	BASELINE_S=20
fi
RECENT=1000
WORKERS=4
CHUNK=${BENCH_PRUNE_CHUNK:-1000}
PAUSE=${BENCH_PRUNE_PAUSE:-100ms}
INSERT_EVERY_MS=10
PRUNE_WHERE="status = 'sent' AND sent_at < NOW() - INTERVAL 7 DAY"
CLAIM="SELECT id, recipient, subject, attempts FROM email
    WHERE status = 'waiting' AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())
    ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
MARK_BEGIN='<!-- bench/prune.sh: begin -->'
MARK_END='<!-- bench/prune.sh: end -->'

# Figures by phase: before, after (claim rates), baseline, prune (load).
declare -A GOOD GOOD_RUNS ARTICLE ARTICLE_DONE PLAN LIVE_S INSERTS

say() { printf '%s\n' "$*" >&2; }
seconds_since() { awk -v a="$1" -v b="$(now_us)" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }'; }

# ---- build, server, table ------------------------------------------------

mkdir -p "$BIN"
cc -O2 -g -Wall -Wextra -o "$BIN/okpipe" "$BENCH_DIR/okpipe.c"
# shellcheck disable=SC2046 # pkg-config's words
cc -O2 -g -Wall -Wextra -o "$BIN/appinsert" "$BENCH_DIR/appinsert.c" \
    $(pkg-config --cflags --libs libmariadb)
[ -x "$ROWQ" ] || fail "no $ROWQ: run make rowq first"

started=$(now_us)
DB_SERVER_OPTS+=(--innodb-buffer-pool-size=1G --innodb-log-file-size=512M)
unset ROWQ_TEST_SOCKET
db_start
db_create rowq_bench_prune
W=$ROWQ_TEST_TMP
cd "$W" || exit

# The claim's index, named status as email_table names it: "status, id"
# or the article's "status, retry_at".
set_index()
{
	sql "ALTER TABLE email DROP INDEX status, ADD INDEX status ($1);
	    ANALYZE TABLE email" >/dev/null
}

# The plan of the claim: type, key, rows, Extra.
claim_plan() { sql "EXPLAIN $CLAIM" | awk -F'\t' '{ print $4 ", " $6 ", " $9 " rows, " $10 }'; }

table_size()
{
	sql_value "SELECT CONCAT(ROUND((data_length + index_length) / 1048576),
	    ' MiB, ', ROUND(data_free / 1048576), ' MiB free')
	    FROM information_schema.tables
	    WHERE table_schema = DATABASE() AND table_name = 'email'"
}

email_table 0 "status, retry_at"
sql "ALTER TABLE email ADD COLUMN sent_at DATETIME NULL, ADD INDEX sent_at (sent_at)"
say "prune bench: $RESIDUE finished rows$([ "$QUICK" = 1 ] && echo ", quick mode")"
t0=$(now_us)
step=1000000
for ((a = 1; a <= RESIDUE; a += step)); do
	b=$((a + step - 1))
	[ "$b" -le "$RESIDUE" ] || b=$RESIDUE
	# Sent a second apart, the last 8 days ago.
	sql "INSERT INTO email (recipient, subject, body, status, attempts, done_count, sent_at)
	    SELECT CONCAT('user', seq, '@example.com'), 'old', '', 'sent', 1, 1,
	    NOW() - INTERVAL 8 DAY - INTERVAL ($RESIDUE - seq) SECOND
	    FROM seq_${a}_to_$b"
done
sql "INSERT INTO email (recipient, subject, body, status, attempts, done_count, sent_at)
    SELECT CONCAT('user', seq, '@example.com'), 'recent', '', 'sent', 1, 1,
    NOW() - INTERVAL 1 DAY FROM $(seq_rows "$RECENT")"
sql "ANALYZE TABLE email" >/dev/null
settle
FILL_S=$(seconds_since "$t0")
SIZE_BEFORE=$(table_size)

# The queue: done also stamps sent_at, as an application's would, so the
# rows done here are recent and the prune must keep them.
email_config rowq.yaml "[$BIN/okpipe]"
sed -i 's|^    exec: .*|    pipe: ['"$BIN"'/okpipe]|
    s|done_count = done_count + 1 WHERE|done_count = done_count + 1, sent_at = NOW() WHERE|' rowq.yaml
grep -q 'sent_at = NOW()' rowq.yaml || fail "the done statement was not changed: $(cat rowq.yaml)"
cp rowq.yaml prune.yaml
printf '    %s\n' "prune:" "  delete: DELETE FROM email WHERE $PRUNE_WHERE" \
    "  chunk: $CHUNK" "  pause: $PAUSE" >>prune.yaml

# ---- checks --------------------------------------------------------------

# verify_done: every row but the residue done exactly once; the residue
# (subject 'old') and the recent rows as filled, unless pruned.
verify_done()
{
	local got rows sent once
	got=$(sql_value "SELECT CONCAT_WS(' ', COUNT(*), SUM(status = 'sent'),
	    SUM(done_count = 1)) FROM email WHERE subject NOT IN ('old', 'recent')")
	read -r rows sent once <<<"$got"
	if [ "$sent" != "$rows" ] || [ "$once" != "$rows" ]; then
		fail "not every row done exactly once: rows $rows, sent $sent, done once $once"
	fi
	[ "$(sql_value "SELECT COUNT(*) FROM email WHERE subject = 'recent'")" = "$RECENT" ] ||
	    fail "recent rows went missing"
}

# ---- the claim rate ------------------------------------------------------

# drain [LIMIT]: WAITING new rows, drained by 4 workers; prints rows/s
# and the rows done.  With LIMIT (s) the drain is stopped then, and the
# rate is the rows done over the time taken (the rest are left waiting,
# for a later drain to finish).
drain()
{
	local limit=${1:-0} lo t0 t1 st=0 done_rows
	lo=$(sql_value "SELECT COALESCE(MAX(id), 0) FROM email")
	sql "INSERT INTO email (recipient, subject, body)
	    SELECT CONCAT('user', seq, '@example.com'), 'new', 'body'
	    FROM $(seq_rows "$WAITING")"
	t0=$(now_us)
	if [ "$limit" -gt 0 ]; then
		timeout -s TERM "$limit" "$ROWQ" -c rowq.yaml drain email -w "$WORKERS" \
		    >drain.out 2>>drain.err || st=$?
		[ "$st" -eq 0 ] || [ "$st" -eq 124 ] || fail "drain: exit $st: $(tail -3 drain.err)"
	else
		"$ROWQ" -c rowq.yaml drain email -w "$WORKERS" >drain.out 2>>drain.err ||
		    fail "drain: $(tail -3 drain.err)"
	fi
	t1=$(now_us)
	done_rows=$(sql_value "SELECT COUNT(*) FROM email WHERE id > $lo AND status = 'sent'")
	[ "$(sql_value "SELECT MAX(done_count) FROM email WHERE id > $lo")" -le 1 ] ||
	    fail "drain: a row done twice"
	[ "$limit" -gt 0 ] || verify_done
	awk -v d="$done_rows" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f %d\n", d / ((b - a) / 1e6), d }'
}

# claim_rates WHEN: the article's index (at most LIMIT_S), then the good
# one (RUNS drains, the first also finishing what the limited one left);
# sets ARTICLE, ARTICLE_DONE, PLAN, GOOD and GOOD_RUNS [WHEN].  Expects
# the article's index in place.
claim_rates()
{
	local when=$1 r runs=() run
	PLAN[$when]="$(claim_plan)"
	r=$(drain "$LIMIT_S")
	ARTICLE[$when]="${r% *}"
	ARTICLE_DONE[$when]="${r#* }"
	say "  $when, the article's index: ${r% *} rows/s (${r#* } of $WAITING rows in at most $LIMIT_S s)"
	set_index "status, id"
	settle
	"$ROWQ" -c rowq.yaml drain email -w "$WORKERS" >drain.out 2>>drain.err ||
	    fail "drain: $(tail -3 drain.err)"
	verify_done
	for ((run = 1; run <= RUNS; run++)); do
		r=$(drain)
		runs+=("${r% *}")
		say "  $when, INDEX (status, id), run $run: ${r% *} rows/s"
	done
	GOOD_RUNS[$when]="${runs[*]}"
	GOOD[$when]="$(printf '%s\n' "${runs[@]}" | sort -g |
	    awk '{ v[++k] = $1 } END { print k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2 }')"
}

say "prune bench: the claim rate before the prune"
ROWS_BEFORE=$(sql_value "SELECT COUNT(*) FROM email")
claim_rates before

# ---- the prune, under load -----------------------------------------------

# live_phase NAME [PRUNE]: LIVE waiting rows put on the queue while
# `rowq run` works it and the application inserts; with PRUNE, `rowq
# prune` runs meanwhile and the phase lasts as long as it does, otherwise
# BASELINE_S.  Sets LIVE_S[NAME] (the live rows done, by polling every
# 0.1 s), INSERTS[NAME] ("count median p99 max", µs).
live_phase()
{
	local name=$1 prune=${2:-} lo hi t0 app prune_pid st=0 live_s
	lo=$(sql_value "SELECT COALESCE(MAX(id), 0) FROM email")
	"$BIN/appinsert" -S "$ROWQ_TEST_SOCKET" -D "$ROWQ_TEST_DB" \
	    -i "$INSERT_EVERY_MS" >"app.$name" 2>"app.$name.err" &
	app=$!
	track_pid "$app"
	sql "INSERT INTO email (recipient, subject, body)
	    SELECT CONCAT('user', seq, '@example.com'), 'live', 'body'
	    FROM $(seq_rows "$LIVE")"
	hi=$(sql_value "SELECT MAX(id) FROM email WHERE subject = 'live'")
	t0=$(now_us)
	if [ -n "$prune" ]; then
		"$ROWQ" -c prune.yaml prune email >prune.out 2>prune.err &
		prune_pid=$!
		track_pid "$prune_pid"
	fi
	wait_until 600 '[ "$(sql_value "SELECT COUNT(*) FROM email
	    WHERE id > '"$lo"' AND id <= '"$hi"' AND status = '"'waiting'"'")" = 0 ]' ||
	    fail "$name: the live queue was not done in 600 s"
	live_s=$(seconds_since "$t0")
	LIVE_S[$name]="$live_s"
	if [ -n "$prune" ]; then
		wait "$prune_pid" || st=$?
		untrack_pid "$prune_pid"
		[ "$st" -eq 0 ] || fail "rowq prune: exit $st: $(cat prune.err)"
	else
		while [ "$(seconds_since "$t0" | cut -d. -f1)" -lt "$BASELINE_S" ]; do
			sleep 0.5
		done
	fi
	kill -TERM "$app"
	wait "$app" || fail "appinsert: $(cat "app.$name.err")"
	untrack_pid "$app"
	INSERTS[$name]="$(cat "app.$name")"
	say "  $name: live queue done in $live_s s; inserts (count, median, p99, max µs): $(cat "app.$name")"
}

say "prune bench: the prune, while $WORKERS workers work the queue"
rowq_start rowq.yaml run.log
on_exit '[ $? -eq 0 ] || tail -20 "$W/run.log"'
wait_until 10 '[ "$(children_of "$ROWQ_PID" | wc -l)" -ge '"$WORKERS"' ]' ||
    fail "rowq run did not start its workers: $(cat run.log)"
live_phase baseline
live_phase prune prune
# What the application inserted last is done before the workers stop.
wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'waiting'"'")" = 0 ]' ||
    fail "waiting rows left after the prune"
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq run exited with $?: $(tail -5 run.log)"
untrack_pid "$ROWQ_PID"
verify_done

# email: pruned N rows in C chunks, S.Ss
read -r PRUNED CHUNKS PRUNE_S < <(sed -n 's/^email: pruned \([0-9]*\) rows in \([0-9]*\) chunks, \([0-9.]*\)s$/\1 \2 \3/p' prune.out)
[ -n "${PRUNE_S:-}" ] || fail "rowq prune said: $(cat prune.out prune.err)"
[ "$PRUNED" = "$RESIDUE" ] || fail "rowq prune removed $PRUNED rows, not the $RESIDUE of the residue"
[ "$(sql_value "SELECT COUNT(*) FROM email WHERE subject = 'old'")" = 0 ] || fail "residue left"
PRUNE_RATE=$(rate "$PRUNED" "$PRUNE_S")
HISTORY=$(sql_value "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
    WHERE VARIABLE_NAME = 'INNODB_HISTORY_LIST_LENGTH'")
say "  pruned $PRUNED rows in $CHUNKS chunks, $PRUNE_S s ($PRUNE_RATE rows/s); history list $HISTORY"
SIZE_AFTER=$(table_size)

# ---- after ---------------------------------------------------------------

say "prune bench: the claim rate after the prune"
ROWS_AFTER=$(sql_value "SELECT COUNT(*) FROM email")
settle
set_index "status, retry_at"
claim_rates after
TOTAL_S=$(seconds_since "$started")

# ---- report --------------------------------------------------------------

ms() { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }
inserts_row()
{
	local label=$1 live_s=$2 n med p99 max
	read -r n med p99 max <<<"$3"
	printf '| %s | %s | %s | %s | %s | **%s** |\n' "$label" "$live_s s ($(rate "$LIVE" "$live_s") rows/s)" \
	    "$n" "$(ms "$med")" "$(ms "$p99")" "$(ms "$max")"
}

report()
{
	cat <<EOF
| claim rate, \`rowq drain\`, $WORKERS workers, rows/s | before the prune | after the prune |
|---|---:|---:|
| INDEX (status, id), median of $RUNS | ${GOOD[before]} (${GOOD_RUNS[before]}) | ${GOOD[after]} (${GOOD_RUNS[after]}) |
| the article's INDEX (status, retry_at), at most $LIMIT_S s | ${ARTICLE[before]} (${ARTICLE_DONE[before]} of $WAITING rows) | ${ARTICLE[after]} (${ARTICLE_DONE[after]} of $WAITING rows) |
| rows in the table | $ROWS_BEFORE | $ROWS_AFTER |
| table size (data + indexes, free) | $SIZE_BEFORE | $SIZE_AFTER |

| \`rowq prune email\` | rows | chunks | seconds | rows/s |
|---|---:|---:|---:|---:|
| chunk: $CHUNK, pause: $PAUSE, during the load below | $PRUNED | $CHUNKS | $PRUNE_S | $PRUNE_RATE |

| while $WORKERS workers work the queue | $LIVE live rows done in | INSERTs | median ms | p99 ms | longest INSERT ms |
|---|---:|---:|---:|---:|---:|
$(inserts_row "no prune, $BASELINE_S s" "${LIVE_S[baseline]}" "${INSERTS[baseline]}")
$(inserts_row "the prune running" "${LIVE_S[prune]}" "${INSERTS[prune]}")
EOF
}

section()
{
	cat <<EOF
$MARK_BEGIN
## Prune: the article's residue before and after \`rowq prune\`
Written by bench/prune.sh on $(date -u '+%Y-%m-%d %H:%M UTC'), in $TOTAL_S s,
$([ "$QUICK" = 1 ] && echo "**quick mode** (BENCH_QUICK=1): $RESIDUE finished rows, not 4,000,000" ||
    echo "full size: $RESIDUE finished rows");
$(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), load average
at the end $(cut -d' ' -f1-3 /proc/loadavg); MariaDB $(sql_value "SELECT VERSION()"), a
throwaway server set up as bench/bench.sh's (1 GiB buffer pool, flush at commit 2,
no binary log).

The table of the tests with a \`sent_at\` column and \`INDEX (sent_at)\`: $RESIDUE
rows sent more than 8 days ago (filled and written out in $FILL_S s), $RECENT sent yesterday, and the
rows each measurement adds. A drain is $WAITING new rows done by \`rowq drain
email -w $WORKERS\` with a no-op pipe handler; the prune is
\`DELETE FROM email WHERE $PRUNE_WHERE\`, run by
\`rowq prune email\` while \`rowq run\` works the queue with $WORKERS workers, $LIVE
live rows are put on it and an application inserts a row every $INSERT_EVERY_MS ms on
a connection of its own (bench/appinsert.c; each INSERT timed by that
client, autocommit). The same load ran first for $BASELINE_S s without the prune.
Every waiting row was done exactly once (\`done_count\`), the prune removed
the $RESIDUE old rows and not one other; the InnoDB history list was
$HISTORY when it ended.

$(report)

The select's claim with the article's index, as \`rowq check\` EXPLAINs it
(type, key, rows, Extra; rowq's workers claim from a cursor on the primary
key, src/cursor.c, and use the index for the cursor's first key): before
the prune \`${PLAN[before]}\`; after \`${PLAN[after]}\`.
$MARK_END
EOF
}

# Replace the section of an earlier run, or append it.
section >section.md
readme_section "$MARK_BEGIN" "$MARK_END" "$W/section.md"

echo
report
echo
echo "prune bench: wrote its section of bench/README.md in $TOTAL_S s"
