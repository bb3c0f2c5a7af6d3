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
