#!/usr/bin/env bash
# `make torture`: the fault tests of tests/integration/4*_*.sh at full
# size (100,000 rows at scale, 50 kills per handler kind, a server frozen
# past the client timeouts, ...), then the config fuzzer for a bounded
# time, then tests/TORTURE.md rewritten from the figures they reported.
# A few minutes on the 2-core reference machine; not part of `make check`.
#
#   ROWQ_FUZZ_SECONDS   fuzzing time (90)
#   ROWQ                the binary under test (default: the plain build,
#                       whose figures are the product's; `make check` runs
#                       the same tests under ASan at small sizes)
#   TORTURE_TESTS       which tests (default: every 4*_*.sh)
#
# Exit status: non-zero when a test failed or the fuzzer found a crash.
set -u -o pipefail

REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO_ROOT" || exit 1

export ROWQ=${ROWQ:-$REPO_ROOT/rowq}
export ROWQ_TEST_TIMEOUT=${ROWQ_TEST_TIMEOUT:-900}
fuzz_seconds=${ROWQ_FUZZ_SECONDS:-90}

# Full size.
export ROWQ_SCALE_ROWS=${ROWQ_SCALE_ROWS:-100000}
export ROWQ_SCALE_EXEC_ROWS=${ROWQ_SCALE_EXEC_ROWS:-5000}
export ROWQ_STORM_ROWS=${ROWQ_STORM_ROWS:-400}
export ROWQ_STORM_KILLS=${ROWQ_STORM_KILLS:-50}
export ROWQ_STORM_MODES=${ROWQ_STORM_MODES:-exec pipe}
export ROWQ_STORM_INTERVAL=${ROWQ_STORM_INTERVAL:-0.5}
export ROWQ_DBAWAY_ROWS=${ROWQ_DBAWAY_ROWS:-5000}
export ROWQ_DBAWAY_DOWN=${ROWQ_DBAWAY_DOWN:-10}
export ROWQ_DBAWAY_FREEZE=${ROWQ_DBAWAY_FREEZE:-70}
export ROWQ_DEADLOCK_ROWS=${ROWQ_DEADLOCK_ROWS:-1500}
export ROWQ_DEADLOCK_SECONDS=${ROWQ_DEADLOCK_SECONDS:-15}
export ROWQ_RES_ROWS=${ROWQ_RES_ROWS:-100000}
export ROWQ_RES_EXEC_ROWS=${ROWQ_RES_EXEC_ROWS:-3000}
export ROWQ_RES_VALGRIND_ROWS=${ROWQ_RES_VALGRIND_ROWS:-300}
export ROWQ_FLOOD_MB=${ROWQ_FLOOD_MB:-500}

# Kept after the run (build/ is not in git): the figures, the tests'
# output, the fuzzer's log and any input that crashed it.
work=$REPO_ROOT/build/torture
rm -rf "$work"
mkdir -p "$work"
export ROWQ_FIGURES=$work/figures.tsv
: >"$ROWQ_FIGURES"
started=$(date +%s)
started_utc=$(date -u '+%Y-%m-%d %H:%M UTC')

# ---- the fault tests ----
if [ -n "${TORTURE_TESTS:-}" ]; then
	read -r -a tests <<<"$TORTURE_TESTS"
else
	tests=()
	for t in tests/integration/4*_*.sh; do
		tests+=("$(basename "$t" .sh)")
	done
fi
status=0
bash tests/run-integration.sh "${tests[@]}" 2>&1 | tee "$work/tests.out" || status=1

# ---- the fuzzer ----
fuzz_status=0
corpus=$work/corpus
mkdir -p "$corpus"
if [ "$fuzz_seconds" -gt 0 ]; then
	echo "fuzz: config_load for ${fuzz_seconds}s on tests/fuzz/corpus"
	(cd "$work" && "$REPO_ROOT/build/fuzz/fuzz_config" -close_fd_mask=2 \
	    -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
	    -max_len=16384 -print_final_stats=1 \
	    "$corpus" "$REPO_ROOT/tests/fuzz/corpus" \
	    </dev/null >"$work/fuzz.out" 2>&1) || fuzz_status=$?
	tail -n 12 "$work/fuzz.out"
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.out")
	secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$work/fuzz.out")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.out")
	crashes=$(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null | wc -l)
	[ "$fuzz_status" -eq 0 ] || crashes=$((crashes > 0 ? crashes : 1))
	{
		printf 'fuzz_config\texecutions\t%s\n' "${execs:-?}"
		printf 'fuzz_config\tseconds\t%s\n' "${secs:-$fuzz_seconds}"
		printf 'fuzz_config\texecutions/s\t%s\n' "${rate:-?}"
		printf 'fuzz_config\tinputs in the corpus at the start / new\t%s / %s\n' \
		    "$(ls "$REPO_ROOT/tests/fuzz/corpus" | wc -l)" "$(ls "$corpus" | wc -l)"
		printf 'fuzz_config\tcrashes, leaks, timeouts\t%s\n' "$crashes"
	} >>"$ROWQ_FIGURES"
	if [ "$crashes" -gt 0 ]; then
		echo "fuzz: FAILED: the report is in $work/fuzz.out, the input in $work"
		echo "(reproduce: build/fuzz/fuzz_config FILE; once fixed, add FILE to tests/fuzz/corpus)"
		status=1
	fi
fi

# ---- the summary ----
elapsed=$(( $(date +%s) - started ))
bash tests/torture/summary.sh "$ROWQ_FIGURES" "$work/tests.out" "$elapsed" "$started_utc" \
    >"$REPO_ROOT/tests/TORTURE.md" || status=1
echo "torture: $(grep -cE '^ok ' "$work/tests.out") passed, $(grep -cE '^FAIL ' "$work/tests.out") failed, $(grep -cE '^skip ' "$work/tests.out") skipped; fuzz crashes: ${crashes:-not run}; ${elapsed}s; figures in tests/TORTURE.md"
exit "$status"
