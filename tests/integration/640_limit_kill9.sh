#!/usr/bin/env bash
# A daemon holding concurrency slots dies or freezes.  3 daemons of 2
# workers each, limit: {concurrency: 3}, rows of 0.4 s, timeout 1s:
#  - kill -9 of daemon a and its workers while they hold the 3 slots:
#    their sessions end, the slots with them, and the other two reach 3
#    at once again within a couple of seconds;
#  - SIGSTOP of the busier of b and c, handlers and all, as a frozen
#    host: the server ends its idle transactions after the queue's
#    session bound (timeout + 2 s kill grace + 5 s margin = 8 s,
#    db_limits.c), the slots come back with its rows, and the other
#    alone reaches 3; thawed, the frozen one's workers find their
#    handlers past their timeout and kill them at once: they ran over
#    the limit only for that moment (measured, as rowq(8) says).
# Counted from the handlers' own lines, a killed handler ending at the
# kill: never more than 3 at once but for those moments (a killed
# worker's handler dies with it as the server frees its slot: a few ms at
# most); every row done once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/limit.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=80
bound_s=8
email_table $rows
log=$ROWQ_TEST_TMP/trace
: >"$log"
for d in a b c; do
	WORKERS=3 TIMEOUT=1s email_config $d.yaml "[$HANDLERS/trace, $log, \"400\"]" \
	    "limit: {concurrency: 3}"
	sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$d.sock\nqueues:|" $d.yaml
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[abc].log'
declare -A pid
# a first: a worker that finishes a row takes its slot again in the same
# round trip, so a keeps the three until it dies.
rowq_start a.yaml a.log
pid[a]=$ROWQ_PID
wait_until 20 '[ "$(running_at "$log" "$(now_us)")" = 3 ]' ||
	fail "daemon a never ran 3 handlers"
for d in b c; do
	rowq_start $d.yaml $d.log
	pid[$d]=$ROWQ_PID
done

# busy D: how many of daemon D's workers run a handler now.
busy()
{
	local w n=0
	for w in $(children_of "${pid[$1]}"); do
		[ -z "$(children_of "$w")" ] || n=$((n + 1))
	done
	echo $n
}
# first_full SINCE_US: when handlers were 3 at once again after SINCE_US
# (the log's starts and ends in order), or nothing.
first_full()
{
	awk '$1 == "start" { print $6, 1 } $1 == "end" { print $6, -1 }' "$log" |
	    sort -n -k1,1 -k2,2n | awk -v t="$1" '{ n += $2 }
		$1 > t && n >= 3 { print $1; exit }'
}

# ---- kill -9 ----
sleep 1
a_workers=$(children_of "${pid[a]}" | tr '\n' ' ')
kill -KILL "${pid[a]}" $a_workers
killed_at=$(now_us)
untrack_pid "${pid[a]}"
sleep 0.5
close_starts "$log" "$killed_at" $a_workers
wait_until 10 '[ -n "$(first_full "$killed_at")" ]' ||
	fail "the others never ran 3 at once after the kill"
back=$(first_full "$killed_at")
took_ms=$(((back - killed_at) / 1000))
figure "ms from the kill -9 until 3 ran at once again" "$took_ms"
assert_le "$took_ms" 3000 "ms until the cap was reached again after kill -9"

# ---- a frozen host: whichever of b and c runs more handlers ----
wait_until 20 '[ $(($(busy b) + $(busy c))) -ge 2 ]' || fail "b and c are not busy"
f=b o=c
[ "$(busy b)" -ge "$(busy c)" ] || { f=c o=b; }
# The supervisor and workers first, so that no handler starts meanwhile.
f_workers=$(children_of "${pid[$f]}" | tr '\n' ' ')
kill -STOP "${pid[$f]}" $f_workers
frozen_at=$(now_us)
b_all="${pid[$f]} $f_workers"
for w in $f_workers; do
	b_all="$b_all $(children_of "$w" | tr '\n' ' ')"
done
kill -STOP $b_all 2>/dev/null || true
stopped_at=$(now_us)
wait_until $((bound_s + 8)) '[ -n "$(first_full "$((frozen_at + bound_s * 1000000 - 500000))")" ]' ||
	fail "$o never ran 3 at once after $f froze"
back=$(first_full "$((frozen_at + bound_s * 1000000 - 500000))")
figure "s from the freeze until 3 ran at once again (session bound $bound_s s)" \
    "$(((back - frozen_at) / 1000000))"
assert_le "$(((back - frozen_at) / 1000000))" $((bound_s + 4)) \
    "s until the cap was reached again after a freeze"
# Every session of the frozen host is ended before it thaws: none of
# its handlers' results can be recorded (a timed-out one would count).
wait_until $((bound_s + 4)) '[ "$(now_us)" -gt $((frozen_at + (bound_s + 1) * 1000000)) ]'
thawed_at=$(now_us)
kill -CONT $b_all 2>/dev/null || true
wait_all_final 60 || fail "rows still waiting: $(email_count "status = 'waiting'")"
stop_rowq "${pid[b]}"
stop_rowq "${pid[c]}"
# A thawed handler that its worker killed (its timeout passed while it
# was frozen) has no end line: it ended by its worker's last word of it.
stopped=$(grep -E 'timed out after|handler stopped' $f.log | tail -n 1 |
    cut -c1-23 || true)
close_starts "$log" "$([ -n "$stopped" ] && date -d "$stopped" +%s%6N ||
    echo "$thawed_at")" $f_workers
# The frozen host's handlers did nothing while it was frozen: their time
# from the freeze to the thaw is taken out of the count.  That includes
# a handler whose start line came after frozen_at, before its own
# SIGSTOP (its worker was starting it as the worker froze): counted as
# running, it would seem to run beside the other host's three from the
# session bound to the thaw.
awk -v a="$frozen_at" -v s_at="$stopped_at" -v b="$thawed_at" -v only="$f_workers" '
    BEGIN { n = split(only, o, " "); for (i = 1; i <= n; i++) w[o[i]] = 1 }
    $1 == "start" && ($4 in w) && $6 < s_at { s[$3] = $6 > a ? $6 : a }
    $1 == "end" && ($3 in s) && $6 >= b { print "end", $2, $3, $4, $5, s[$3];
	print "start", $2, $3, $4, $5, b }' "$log" >frozen
cat frozen >>"$log"
# Over the limit: for a moment after the kill (a killed worker's handler
# dies with it, as the server frees its slot) and after the thaw.
over_ms()
{
	awk '$1 == "start" { print $6, 1 } $1 == "end" { print $6, -1 }' "$log" |
	    sort -n -k1,1 -k2,2n | awk -v a="$1" -v b="$2" '{
		if (n > 3 && last >= a && $1 <= b) over += $1 - last
		n += $2; last = $1 } END { print int(over / 1000) }'
}
at_kill=$(over_ms 0 "$thawed_at")
at_thaw=$(over_ms "$thawed_at" 99999999999999999)
figure "ms with more than 3 running, around the kill -9" "$at_kill"
figure "ms with more than 3 running, after the thaw" "$at_thaw"
assert_le "$at_kill" 100 "ms over the limit around the kill"
assert_le "$at_thaw" 1000 "ms over the limit after the thaw"
assert_exactly_once $rows
