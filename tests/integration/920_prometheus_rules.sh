#!/usr/bin/env bash
# contrib/prometheus/rowq.rules.yml: promtool accepts the rules, its unit
# tests (rowq.rules.test.yml) fire each alert when they should and not
# before, and every rowq_ metric the rules use is one rowq serves.
. "$(dirname "$0")/../lib.sh"
dir=$REPO_ROOT/contrib/prometheus
command -v promtool >/dev/null || fail "promtool missing: tests/deps.sh installs Debian's prometheus"
promtool check rules "$dir/rowq.rules.yml" >"$ROWQ_TEST_TMP/check" 2>&1 ||
	fail "promtool check rules: $(cat "$ROWQ_TEST_TMP/check")"
(cd "$dir" && promtool test rules rowq.rules.test.yml) >"$ROWQ_TEST_TMP/test" 2>&1 ||
	fail "promtool test rules: $(cat "$ROWQ_TEST_TMP/test")"
used=$(grep -o 'rowq_[a-z_]*' "$dir/rowq.rules.yml" | sort -u)
[ -n "$used" ] || fail "the rules use no rowq metric"
for m in $used; do
	# A histogram's series are its name and _bucket, _sum, _count.
	base=${m%_bucket}
	grep -q "\"$base\"" "$REPO_ROOT/src/metrics.c" ||
		fail "the rules use $m, which src/metrics.c does not serve"
done
