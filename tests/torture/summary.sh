#!/usr/bin/env bash
# summary.sh FIGURES TESTS_OUT SECONDS [WHEN]: tests/TORTURE.md on stdout, from
# the figures the fault tests reported (TAB-separated: test, name, value)
# and the runner's ok/skip/FAIL lines.
set -u
figures=$1 tests_out=$2 elapsed=$3 when=${4:-$(date -u '+%Y-%m-%d %H:%M UTC')}
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# fig TEST NAME: one figure's value, or "-".
fig()
{
	awk -F'\t' -v t="$1" -v n="$2" '$1 == t && $2 == n { v = $3 } END { print (v == "" ? "-" : v) }' "$figures"
}

# sum_of REGEX: the sum of the first numbers of the figures whose name
# matches, in the fault tests 400-449 (460 shows known bugs on purpose).
sum_of()
{
	awk -F'\t' -v re="$1" '$1 ~ /^4[0-4][0-9]_/ && $2 ~ re { split($3, a, /[^0-9]+/); s += a[1] } END { print s + 0 }' "$figures"
}

mariadb_version=$(mariadbd --version 2>/dev/null | sed 's/^.*Ver //; s/ for .*//')
# Dirty only for a change other than this file, which the run rewrites.
rowq_version=$(git -C "$REPO_ROOT" describe --always 2>/dev/null || echo unknown)
git -C "$REPO_ROOT" diff --quiet HEAD -- . ':(exclude)tests/TORTURE.md' 2>/dev/null ||
	rowq_version="$rowq_version-dirty"
peak=$(awk -F'\t' '$2 ~ /peak RSS kB/ { split($3, a, /[^0-9]+/); if (a[1] + 0 > m) { m = a[1] + 0; w = $1 ": " $2 } } END { print m " kB (" w ")" }' "$figures")
kills=$(awk -F'\t' '$2 ~ /kills \(worker\/handler\/supervisor\)/ { print $1 ", " $2 ": " $3 }' "$figures" | sed 's/^/  - /')

cat <<EOF
# rowq under torture

Written by \`make torture\` (tests/torture/run.sh, tests/torture/summary.sh)
from an actual run; do not edit by hand, run it again.  The same tests run
in \`make check\` at small sizes under ASan; \`make torture\` runs them at
full size on the plain build, whose figures these are.

- when: $when; $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)
- MariaDB $mariadb_version; rowq $rowq_version
- $elapsed s in all

## Headline

| what | figure |
|---|---:|
| rows at scale, 3 daemons x 4 workers (pipe / exec) | $(fig 400_scale "pipe rows") / $(fig 400_scale "exec rows") |
| rate at scale (pipe / exec), rows/s | $(fig 400_scale "pipe rows/s") / $(fig 400_scale "exec rows/s") |
| kill -9s (workers, handlers, supervisors) | $(sum_of '^(exec|pipe) kills') |
| supervisor restarts after kill -9 | $(sum_of 'supervisor restarts') |
| database outages survived (KILL CONNECTION, SIGKILL + restart, SIGSTOP) | 3 |
| reconnects logged ("database back") | $(fig 420_db_away "reconnect lines ('database back')") |
| deadlocks / lock wait timeouts retried | $(fig 430_deadlock "deadlocks (1213) rolled back and retried by rowq") / $(fig 430_deadlock "lock wait timeouts (1205) rolled back and retried") |
| rows lost (400-440) | $(sum_of '(^| )lost$') |
| rows done twice (400-440) | $(sum_of '(duplicates|done twice)$') |
| rows over max_attempts | $(sum_of 'over max_attempts') |
| fuzz: executions in seconds (crashes) | $(fig fuzz_config executions) in $(fig fuzz_config seconds) s ($(fig fuzz_config "crashes, leaks, timeouts")) |
| peak RSS of a worker | $peak |

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
- mariadbd SIGKILL, restarted ${ROWQ_DBAWAY_DOWN:-10} s later on the same data directory:
  the workers wait with growing delays (0.5 s doubling to 30 s) and use no
  CPU meanwhile; the same 8 lines.  All four reconnect within a few
  milliseconds of each other: the backoff has no jitter (see below).
- mariadbd SIGSTOP for longer than the client timeouts: a worker inside a
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

Open, in files the lead owns (the first four reproduced by 460_sql_rows,
which exits 77 naming them until they are fixed):
- worker.c: a row whose key column is NULL, at the head of the queue,
  blocks it (batch 1: no other row is ever claimed) and is logged every
  second for ever: worker_no_progress() never sets last_hot_ms, so
  worker_hot_loop() resets hot_loops and the pause never grows.
- worker.c: a key the select returns twice in one claim (a join) is
  handled twice and done twice in one transaction, with no error logged.
- worker.c: a done statement that fails for one row only (e.g. 1406 Data
  too long) rolls the whole turn back and claims the same row again and
  again (pauses of 1 s to 60 s); the rows behind it wait for ever.
- db.c: BIT values wider than a byte reach the handler byte-swapped
  (BIT(12) 2730 arrives as 43530).
- worker.c: reconnect backoff without jitter (a thundering herd on a
  server that comes back); db.c: client timeouts of 60 s.

## Every figure

| test | figure | value |
|---|---|---|
EOF
sed 's/|/\\|/g' "$figures" | awk -F'\t' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }'
cat <<EOF

## Test results

\`\`\`
$(grep -E '^(ok|FAIL|skip) ' "$tests_out")
\`\`\`

A test that exits 77 (skip) names a known bug in a file this suite does
not own; it runs every other check first, and passes once the bug is
fixed.
EOF
