# shellcheck shell=bash
# Helpers for the tests of limit: (tests/integration/61x-69x), sourced
# after lib.sh.  They read the trace handler's log (tests/handlers/trace.c:
# "start KEY PID PPID ATTEMPT US" and "end ..." lines), so that what is
# counted is what the handlers themselves did.
#
#   overlap_max LOG          the most handlers that ran at once
#   overlap_avg LOG [FROM_US TO_US]
#                            handlers running, on average over time, from
#                            the first start (or FROM_US) to the last end
#                            (or TO_US)
#   starts_per_window LOG US the most starts within any window of US
#                            microseconds that begins at a start
#   close_starts LOG US [PPID...]
#                            handlers killed at US (a start with no end,
#                            by pid; of these workers only, if given): an
#                            end line for each, at US
#   running_at LOG US        handlers running at US

overlap_max()
{
	awk '$1 == "start" { print $6, 1 } $1 == "end" { print $6, -1 }' "$1" |
	    sort -n -k1,1 -k2,2n | awk '{ n += $2; if (n > m) m = n } END { print m + 0 }'
}

overlap_avg()
{
	awk '$1 == "start" { print $6, 1 } $1 == "end" { print $6, -1 }' "$1" |
	    sort -n -k1,1 -k2,2n |
	    awk -v from="${2:-}" -v to="${3:-}" '
		NR == 1 && from == "" { from = $1 }
		{
			t = $1
			if (t > from && (to == "" || last < to)) {
				a = last < from ? from : last
				b = (to != "" && t > to) ? to : t
				if (b > a) area += n * (b - a)
			}
			n += $2; last = t
		}
		END {
			if (to == "") to = last
			if (to > from) printf "%.2f\n", area / (to - from)
			else print 0
		}'
}

starts_per_window()
{
	awk '$1 == "start" { print $6 }' "$1" | sort -n |
	    awk -v w="$2" '{ t[NR] = $1 } END {
		j = 1
		for (i = 1; i <= NR; i++) {
			while (t[i] - t[j] >= w) j++
			if (i - j + 1 > m) m = i - j + 1
		}
		print m + 0
	    }'
}

close_starts()
{
	local log=$1 t=$2
	shift 2
	awk -v t="$t" -v only="$*" 'BEGIN { n = split(only, o, " "); for (i = 1; i <= n; i++) w[o[i]] = 1 }
	    $1 == "start" && (n == 0 || ($4 in w)) { s[$3] = $0 }
	    $1 == "end" { delete s[$3] }
	    END { for (p in s) { split(s[p], f, " "); print "end", f[2], f[3], f[4], f[5], t } }' \
	    "$log" >"$log.closed"
	cat "$log.closed" >>"$log"
	rm -f "$log.closed"
}

running_at()
{
	awk -v t="$2" '$1 == "start" && $6 <= t { s[$3] = 1 }
	    $1 == "end" && $6 <= t { delete s[$3] }
	    END { n = 0; for (p in s) n++; print n }' "$1"
}
