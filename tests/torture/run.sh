#!/usr/bin/env bash
# `make torture`: the fault tests of tests/integration/4*_*.sh at full
# size, against each server in turn (100,000 rows at scale, 50 kills per handler kind, a server frozen
# past the client timeouts, ...), then the config and cron fuzzers for a
# bounded time, then tests/TORTURE.md rewritten from the figures they
# reported.
# A few minutes on the 2-core reference machine; not part of `make check`.
#
#   ROWQ_FUZZ_SECONDS   fuzzing time of config_load (90)
#   ROWQ_FUZZ_CRON_SECONDS  of cron expressions (30)
#   ROWQ                the binary under test (default: the plain build,
#                       whose figures are the product's; `make check` runs
#                       the same tests under ASan at small sizes)
#   TORTURE_TESTS       which tests (default: every 4*_*.sh)
#   TORTURE_SERVERS     the servers, in turn (default: mariadb mariadb-11.8
#                       mysql-9.7, as ROWQ_TEST_SERVER names them)
#
# Exit status: non-zero when a test failed or the fuzzer found a crash.
set -u -o pipefail

REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO_ROOT" || exit 1

export ROWQ=${ROWQ:-$REPO_ROOT/rowq}
export ROWQ_TEST_TIMEOUT=${ROWQ_TEST_TIMEOUT:-900}
fuzz_seconds=${ROWQ_FUZZ_SECONDS:-90}
fuzz_cron_seconds=${ROWQ_FUZZ_CRON_SECONDS:-30}

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
# Against each server in turn (TORTURE_SERVERS, ROWQ_TEST_SERVER's kinds);
# the first run's figures file gets the fuzzers' too.
read -r -a servers <<<"${TORTURE_SERVERS:-mariadb mariadb-11.8 mysql-9.7}"
runs=()
for sv in "${servers[@]}"; do
	export ROWQ_FIGURES=$work/figures.$sv.tsv
	: >"$ROWQ_FIGURES"
	ROWQ_TEST_SERVER=$sv bash tests/run-integration.sh "${tests[@]}" 2>&1 |
	    tee "$work/tests.$sv.out" || status=1
	label=$(sed -n 's/^integration: [^ ]* server, //p' "$work/tests.$sv.out" | head -n 1)
	runs+=("${label:-$sv}|$ROWQ_FIGURES|$work/tests.$sv.out")
done
export ROWQ_FIGURES=$work/figures.${servers[0]}.tsv

# ---- the fuzzers ----
# fuzz NAME SECONDS CORPUS MAX_LEN: run build/fuzz/NAME on CORPUS (and
# what it finds, kept in $work/NAME) for SECONDS, and report its figures.
fuzz()
{
	local name=$1 seconds=$2 seed=$3 max_len=$4 fuzz_status=0 n
	local corpus=$work/$name out=$work/$name.out
	mkdir -p "$corpus"
	[ "$seconds" -gt 0 ] || return 0
	echo "fuzz: $name for ${seconds}s on $seed"
	(cd "$work" && mkdir -p "$name.crash" && cd "$name.crash" &&
	    "$REPO_ROOT/build/fuzz/$name" -close_fd_mask=2 \
	    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	    -max_len="$max_len" -print_final_stats=1 \
	    "$corpus" "$REPO_ROOT/$seed" \
	    </dev/null >"$out" 2>&1) || fuzz_status=$?
	tail -n 12 "$out"
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out")
	secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$out")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out")
	n=$(ls "$work/$name.crash" | wc -l)
	[ "$fuzz_status" -eq 0 ] || n=$((n > 0 ? n : 1))
	crashes=$(( ${crashes:-0} + n ))
	{
		printf '%s\texecutions\t%s\n' "$name" "${execs:-?}"
		printf '%s\tseconds\t%s\n' "$name" "${secs:-$seconds}"
		printf '%s\texecutions/s\t%s\n' "$name" "${rate:-?}"
		printf '%s\tinputs in the corpus at the start / new\t%s / %s\n' \
		    "$name" "$(ls "$REPO_ROOT/$seed" | wc -l)" "$(ls "$corpus" | wc -l)"
		printf '%s\tcrashes, leaks, timeouts\t%s\n' "$name" "$n"
	} >>"$ROWQ_FIGURES"
	if [ "$n" -gt 0 ]; then
		echo "fuzz: FAILED: the report is in $out, the input in $work/$name.crash"
		echo "(reproduce: build/fuzz/$name FILE; once fixed, add FILE to $seed)"
		status=1
	fi
}
fuzz fuzz_config "$fuzz_seconds" tests/fuzz/corpus 16384
fuzz fuzz_cron "$fuzz_cron_seconds" tests/fuzz/corpus_cron 512

# ---- the summary ----
elapsed=$(( $(date +%s) - started ))
bash tests/torture/summary.sh "$elapsed" "$started_utc" "${runs[@]}" \
    >"$REPO_ROOT/tests/TORTURE.md" || status=1
outs=("$work"/tests.*.out)
echo "torture: $(cat "${outs[@]}" | grep -cE '^ok ') passed, $(cat "${outs[@]}" | grep -cE '^FAIL ') failed, $(cat "${outs[@]}" | grep -cE '^skip ') skipped on ${#servers[@]} servers; fuzz crashes: ${crashes:-not run}; ${elapsed}s; figures in tests/TORTURE.md"
exit "$status"
