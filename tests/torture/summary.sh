#!/usr/bin/env bash
# summary.sh SECONDS WHEN RUN...: tests/TORTURE.md on stdout, from each
# server's run of the fault tests.  RUN is "SERVER|FIGURES|TESTS_OUT":
# the server as the runner named it, the figures its tests reported
# (TAB-separated: test, name, value; the fuzzers' are in the first run's)
# and the runner's ok/skip/FAIL lines.
set -u
elapsed=$1 when=$2
shift 2
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
servers=() figs=() outs=()
for run in "$@"; do
	IFS='|' read -r sv f o <<<"$run"
	servers+=("$sv") figs+=("$f") outs+=("$o")
done

# fig TEST NAME [I]: one figure's value in run I (default 0), or "-".
fig()
{
	awk -F'\t' -v t="$1" -v n="$2" '$1 == t && $2 == n { v = $3 } END { print (v == "" ? "-" : v) }' "${figs[${3:-0}]}"
}

# sum_of REGEX I: the sum of the first numbers of run I's figures whose
# name matches, in the fault tests 400-449 (460 shows known bugs on
# purpose).
sum_of()
{
	awk -F'\t' -v re="$1" '$1 ~ /^4[0-4][0-9]_/ && $2 ~ re { split($3, a, /[^0-9]+/); s += a[1] } END { print s + 0 }' "${figs[$2]}"
}

# counts I: run I's tests passed / failed / skipped.
counts()
{
	echo "$(grep -cE '^ok ' "${outs[$1]}") / $(grep -cE '^FAIL ' "${outs[$1]}") / $(grep -cE '^skip ' "${outs[$1]}")"
}

# row TITLE FUNCTION [ARGS...]: a headline row, FUNCTION ARGS I in the
# column of each server I.
row()
{
	local title=$1 i line
	shift
	line="| $title |"
	for i in "${!servers[@]}"; do
		line="$line $("$@" "$i") |"
	done
	echo "$line"
}

scale() { echo "$(fig 400_scale "$1 rows" "$3") / $(fig 400_scale "$2 rows" "$3")"; }
scale_rate() { echo "$(fig 400_scale "pipe rows/s" "$1") / $(fig 400_scale "exec rows/s" "$1")"; }
reconnects() { fig 420_db_away "reconnect lines ('database back')" "$1"; }
retried() { echo "$(fig 430_deadlock "deadlocks (1213) rolled back and retried by rowq" "$1") / $(fig 430_deadlock "lock wait timeouts (1205) rolled back and retried" "$1")"; }
three() { echo 3; }

# Dirty only for a change other than this file, which the run rewrites.
rowq_version=$(git -C "$REPO_ROOT" describe --always 2>/dev/null || echo unknown)
git -C "$REPO_ROOT" diff --quiet HEAD -- . ':(exclude)tests/TORTURE.md' 2>/dev/null ||
	rowq_version="$rowq_version-dirty"
peak=$(cat "${figs[@]}" | awk -F'\t' '$2 ~ /peak RSS kB/ { split($3, a, /[^0-9]+/); if (a[1] + 0 > m) { m = a[1] + 0; w = $1 ": " $2 } } END { print m " kB (" w ")" }')
kills=$(for i in "${!servers[@]}"; do
	awk -F'\t' -v sv="${servers[$i]}" '$2 ~ /kills \(worker\/handler\/supervisor\)/ { print sv ", " $1 ", " $2 ": " $3 }' "${figs[$i]}"
done | sed 's/^/  - /')
columns="| what |" rule="|---|"
for sv in "${servers[@]}"; do
	columns="$columns $sv |" rule="$rule---:|"
done

cat <<EOF
# rowq under torture

Written by \`make torture\` (tests/torture/run.sh, tests/torture/summary.sh)
from an actual run; do not edit by hand, run it again.  The same tests run
in \`make check\` at small sizes under ASan, on each server by \`make
check-servers\`; \`make torture\` runs them at full size on the plain
build, against each server in turn, whose figures these are.

- when: $when; $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)
- rowq $rowq_version
- $elapsed s in all

## Headline

$columns
$rule
$(row "rows at scale, 3 daemons x 4 workers (pipe / exec)" scale pipe exec)
$(row "rate at scale (pipe / exec), rows/s" scale_rate)
$(row "kill -9s (workers, handlers, supervisors)" sum_of '^(exec|pipe) kills')
$(row "supervisor restarts after kill -9" sum_of 'supervisor restarts')
$(row "database outages survived (KILL CONNECTION, SIGKILL + restart, SIGSTOP)" three)
$(row "reconnects logged (\"database back\")" reconnects)
$(row "deadlocks / lock wait timeouts retried" retried)
$(row "rows lost (400-440)" sum_of '(^| )lost$')
$(row "rows done twice (400-440)" sum_of '(duplicates|done twice)$')
$(row "rows over max_attempts" sum_of 'over max_attempts')
$(row "fault tests passed / failed / skipped" counts)

- fuzz: $(fig fuzz_config executions) executions in $(fig fuzz_config seconds) s, $(fig fuzz_config "crashes, leaks, timeouts") crashes
- peak RSS of a worker: $peak

Kills, per storm:
$kills

## How a killed try counts

In transaction mode the claim, the handler, and the done/retry/failed
statement are one transaction.  A worker killed with SIGKILL (or a
supervisor, whose workers stop at once when it dies) never commits: the
transaction rolls back, the row is waiting again exactly as it was, and
the try does **not** count -- the next try has the same number
(\`ROWQ_ATTEMPT\` repeats), and the handler may have run for it (delivery is
at least once).  A handler killed with SIGKILL is a failed try like any
other signal death: the worker runs retry (or failed at the last try), so
it **does** count.  410_kill_storm checks both on every row: the attempts
column equals the number of distinct try numbers in the handler's log,
those are 1..attempts, every logged "killed by signal 9" of a handler is
followed by the next try, and no row has more than max_attempts.

In lease mode the claim statement is the user's; if it counts the try (as
in the examples, attempts = attempts + 1), a killed worker's try counts,
and the row comes back when its lease runs out (210_lease).

## What the database outages showed (420_db_away)

- KILL CONNECTION of the 4 workers' sessions: each worker logs the
  statement that lost its link once and "database back" once (8 lines),
  and carries on.
- the server SIGKILLed, restarted ${ROWQ_DBAWAY_DOWN:-10} s later on the same data directory:
  the workers wait with growing delays (0.5 s doubling to 30 s) and use no
  CPU meanwhile; the same 8 lines.  All four reconnect within a few
  milliseconds of each other: the backoff has no jitter (see below).
- the server SIGSTOPped for longer than the client timeouts: a worker inside a
  statement gets error 2013 exactly when db.c's 60 s read timeout runs
  out, then reconnects as soon as the server resumes.  60 s is too long
  for \`make check\`, which freezes the server for 3 s only (nothing times
  out); the proposal below is 30 s read/write and 5 s connect timeouts,
  configurable.

## Bugs found by this suite

Fixed with it (small changes in files this suite may touch):
- src/config.c (now config_yaml.c): a YAML mapping or sequence used as a mapping key, nested
  past the depth limit (\`{{{{...\`), read before the start of a node array
  while building the error message's key path (heap-buffer-overflow,
  found by the fuzzer in its first torture run; the input is now in the
  corpus as regression-complex-key-deep).
- src/config.c (now config_yaml.c): a UTF-8 byte order mark made a valid file a syntax error
  (libyaml skips a BOM only when it detects the encoding itself).
- src/json.c, src/child.c: a 16 MiB column and a flood of stderr were
  processed byte by byte (16 million calls per value); now in runs.

Found by it later, and fixed since: a row whose key column is NULL at
the head of the queue blocked it; a key the select returned twice in one
claim was done twice; a done statement that failed for one row only (1406
Data too long) rolled the turn back and claimed the row again and again;
BIT values wider than a byte reached the handler byte-swapped; reconnects
had no jitter, and the client timeouts were 60 s (now 30 s).

## Every figure

| server | test | figure | value |
|---|---|---|---|
EOF
for i in "${!servers[@]}"; do
	sed 's/|/\\|/g' "${figs[$i]}" |
	    awk -F'\t' -v sv="${servers[$i]}" '{ printf "| %s | %s | %s | %s |\n", sv, $1, $2, $3 }'
done
echo
echo "## Test results"
for i in "${!servers[@]}"; do
	printf '\n%s:\n\n```\n' "${servers[$i]}"
	grep -E '^(ok|FAIL|skip) ' "${outs[$i]}"
	printf '```\n'
done
cat <<EOF

A test that exits 77 (skip) names a known bug in a file this suite does
not own, or a feature the server lacks; it runs every other check first.
EOF
