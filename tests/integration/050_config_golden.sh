#!/usr/bin/env bash
# Golden configuration tests.  Every tests/config/NAME.yaml is an invalid
# configuration: `rowq -c NAME.yaml check` must refuse it with exit status
# 78 (EX_CONFIG) before it connects to any database, and print exactly
# NAME.ok on standard error.  The messages are part of the product, so
# they are compared to the letter.  Files under tests/config/*.d/ are
# included by the cases, not cases themselves.
#
# To add a case, write NAME.yaml, then
#     ROWQ_GOLDEN_UPDATE=1 bash tests/integration/050_config_golden.sh
# writes NAME.ok (and rewrites the others): read every line of `git diff`
# before committing it, since from then on this test holds rowq to it.

if [ -f "$(dirname "$0")/../lib.sh" ]; then
	# shellcheck source=../lib.sh
	. "$(dirname "$0")/../lib.sh"
	trap - ERR		# a mismatch is counted and shown, not fatal
else
	set -u
	ROWQ=${ROWQ:-$(git -C "$(dirname "$0")" rev-parse --show-toplevel)/rowq}
fi

config_dir=$(cd "$(dirname "$0")/../config" && pwd)
out=$(mktemp)
failed=0 passed=0

[ -x "$ROWQ" ] || { echo "no rowq binary at $ROWQ" >&2; exit 1; }

# From the directory itself, so that messages say NAME.yaml:LINE.
cd "$config_dir" || exit 1
for yaml in *.yaml; do
	name=${yaml%.yaml}
	status=0
	# Nothing from the caller's environment may change the messages.
	env -u CREDENTIALS_DIRECTORY -u JOURNAL_STREAM \
	    "$ROWQ" -c "$yaml" check >/dev/null 2>"$out" </dev/null ||
	    status=$?
	if [ -n "${ROWQ_GOLDEN_UPDATE:-}" ]; then
		cp "$out" "$name.ok"
	fi
	if [ ! -f "$name.ok" ]; then
		echo "FAIL $yaml: no $name.ok (see the top of $0)"
		failed=$((failed + 1))
	elif [ "$status" -ne 78 ]; then
		echo "FAIL $yaml: exit status $status, not 78; stderr:"
		sed 's/^/    /' "$out"
		failed=$((failed + 1))
	elif ! diff -u "$name.ok" "$out" >"$out.diff"; then
		echo "FAIL $yaml: stderr differs from $name.ok:"
		sed "s|$out|$yaml (rowq's stderr)|" "$out.diff"
		failed=$((failed + 1))
	else
		passed=$((passed + 1))
	fi
done
rm -f "$out" "$out.diff"

echo "config golden: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
