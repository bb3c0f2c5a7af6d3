#!/bin/sh
# Run Check unit test binaries: tests/run-unit.sh BIN...
# One line per binary with Check's own summary; the whole output of a binary
# that fails.  Ends with "unit: N passed, N failed", counting binaries.

set -u

if [ $# -eq 0 ]; then
	echo "usage: $0 BIN..." >&2
	exit 2
fi

# Check's per-test limit; a whole binary gets far longer, in case a test
# hangs where Check cannot time it out (CK_FORK=no under a debugger).
CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-20}
export CK_DEFAULT_TIMEOUT

log=$(mktemp)
trap 'rm -f "$log"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

passed=0
failed=0
for bin in "$@"; do
	status=0
	timeout --kill-after=5 600 "$bin" >"$log" 2>&1 </dev/null || status=$?
	summary=$(grep -E '^[0-9]+%: Checks:' "$log" | tail -n 1)
	if [ "$status" -eq 0 ]; then
		echo "ok   $bin: ${summary:-no summary}"
		passed=$((passed + 1))
	else
		echo "FAIL $bin (exit status $status)"
		sed 's/^/    /' "$log"
		failed=$((failed + 1))
	fi
done

echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
