# shellcheck shell=bash
# Helpers of the benchmark scripts (bench/bench.sh, bench/prune.sh), sourced
# after tests/lib.sh once the server runs.

# settle: have the server write out what a bulk change left dirty (at most
# 20 s), so that background flushing does not compete with the
# measurements that follow; SETTLE_S adds up the seconds it waited.
settle()
{
	local i pct
	pct=$(sql_value "SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
	sql "SET GLOBAL innodb_max_dirty_pages_pct = 0"
	for ((i = 0; i < 20; i++)); do
		[ "$(sql_value "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
		    WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_DIRTY'")" -gt 1000 ] || break
		sleep 1
	done
	sql "SET GLOBAL innodb_max_dirty_pages_pct = $pct"
	SETTLE_S=$((${SETTLE_S:-0} + i))
}

# readme_section BEGIN END FILE: FILE's text (its first line BEGIN, its last
# END) in place of bench/README.md's section between those markers, or
# after the rest when it has none.
readme_section()
{
	local readme=$BENCH_DIR/README.md
	if grep -qxF "$1" "$readme"; then
		awk -v b="$1" -v e="$2" -v f="$3" '
		    $0 == b { while ((getline l < f) > 0) print l; skip = 1; next }
		    $0 == e { skip = 0; next }
		    !skip' "$readme" >"$3.readme"
	else
		{ cat "$readme"; echo; cat "$3"; } >"$3.readme"
	fi
	cp "$3.readme" "$readme"
	rm -f "$3.readme"
}
