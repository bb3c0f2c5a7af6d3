#!/usr/bin/env bash
# Pickup latency by wake-up: INSERT committed -> the handler reads the
# row, for SAMPLES rows (200) inserted one at a time at random moments
# (50-450 ms apart), p50 / p99 / max, for
#
#   poll     the default: the wake watcher reads the queue every idle (2s)
#   wake     idle: 30s, and `rowq wake email` run by the producer after
#            each INSERT (its start, config read included, is counted)
#   dgram    idle: 30s, and the producer sends the datagram `rowq wake`
#            sends itself (bench/wakedgram.c, one process for the run),
#            as a long-running producer would
#   binlog   idle: 30s, wake: binlog
#
# 2 workers, pipe handler bench/okpipe.c (it stamps each row's arrival),
# on a server of its own with a binary log (ROW), the same for all three.
# The row carries the server's clock at the INSERT (NOW(6)).
#
#	bash bench/wake.sh        prints a Markdown table
. "$(dirname "$0")/../tests/lib.sh"
. "$TESTS_DIR/email.sh"
. "$(dirname "$0")/lib.sh"

SAMPLES=${BENCH_WAKE_SAMPLES:-200}
MODES=${BENCH_WAKE_MODES:-"poll wake dgram binlog"}

mkdir -p "$BIN"
cc -O2 -g -Wall -Wextra -o "$BIN/okpipe" "$BENCH_DIR/okpipe.c"
cc -O2 -g -Wall -Wextra -o "$BIN/wakedgram" "$BENCH_DIR/wakedgram.c"
[ -x "$ROWQ" ] || fail "no $ROWQ: run make first"

DB_SERVER_OPTS+=(--log-bin --binlog-format=ROW --server-id=1)
unset ROWQ_TEST_SOCKET
db_start
db_create rowq_wake
W=$ROWQ_TEST_TMP
cd "$W"
say() { printf '%s\n' "$*" >&2; }

# measure MODE: prints "MODE p50 p99 max" in ms.
measure()
{
	local mode=$1 idle=30s extra=() i id
	case $mode in
	poll) idle=2s ;;
	binlog) extra=("wake: binlog") ;;
	esac
	sql "DROP TABLE IF EXISTS email"
	email_table 0
	: >stamps
	: >returned
	WORKERS=2 IDLE=$idle email_config "$mode.yaml" "[x]" "${extra[@]}"
	sed -i -e "s|^    exec: .*|    pipe: [$BIN/okpipe, $W/stamps]|" \
	    -e "s|^stop_timeout:|status_socket: $W/$mode.sock\n&|" "$mode.yaml"
	rowq_start "$mode.yaml" "$mode.log"
	wait_until 10 '[ "$(children_of "$ROWQ_PID" | wc -l)" -ge 2 ]' ||
		fail "rowq run did not start: $(cat "$mode.log")"
	[ "$mode" != binlog ] || wait_until 10 'grep -q following "$mode.log"' ||
		fail "wake: binlog does not follow: $(cat "$mode.log")"
	sleep 3
	if [ "$mode" = dgram ]; then
		exec 7> >(exec "$BIN/wakedgram" "$W/$mode.wake")
	fi
	for ((i = 0; i < SAMPLES; i++)); do
		sleep "0.$((RANDOM % 4 + 0))$((RANDOM % 10))$((RANDOM % 10))"
		sleep 0.05
		id=$(sql "INSERT INTO email (recipient, subject, body)
		    VALUES ('late@example.com', ROUND(UNIX_TIMESTAMP(NOW(6)) * 1000000), 'body');
		    SELECT LAST_INSERT_ID()")
		echo "$id $(now_us)" >>returned
		[ "$mode" != wake ] || "$ROWQ" -c "$mode.yaml" wake email
		[ "$mode" != dgram ] || echo email >&7
	done
	[ "$mode" != dgram ] || exec 7>&-
	wait_until 30 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE done_count = 1")" = '"$SAMPLES"' ]' ||
		fail "$mode: not every row was done once"
	kill_wait 15 "$ROWQ_PID"
	sql "SELECT id, subject FROM email" | sort >inserted
	sort stamps | awk '{ print $2, $1 }' | sort >arrived
	join inserted arrived | awk '{ print ($3 - $2) / 1000 }' | sort -g >"$mode.latency"
	[ "$(wc -l <"$mode.latency")" -eq "$SAMPLES" ] ||
		fail "$mode: $(wc -l <"$mode.latency") samples"
	# From the moment the producer's INSERT had returned (its client
	# gone, the commit seen), when the wake is sent: negative when the
	# handler had the row first.
	sort returned >returned.sorted
	join returned.sorted arrived | awk '{ print ($3 - $2) / 1000 }' |
	    sort -g >"$mode.from-return"
	awk -v m="$mode" -v r="$(awk '{ v[NR] = $1 } END {
	    printf "%.1f", v[int((NR + 1) / 2)] }' "$mode.from-return")" '
	    { v[NR] = $1 } END {
	    p50 = v[int((NR + 1) / 2)]; p99 = v[int(NR * 0.99 + 0.999)]
	    printf "%s %.1f %.1f %.1f %s\n", m, p50, p99, v[NR], r }' "$mode.latency"
}

for mode in $MODES; do
	say "bench: pickup latency, $mode, $SAMPLES rows"
	measure "$mode" >>results
done
printf '| wake-up | idle | p50 ms | p99 ms | max ms | p50 ms from the INSERT returned |\n|---|---|---:|---:|---:|---:|\n'
while read -r mode p50 p99 max ret; do
	case $mode in
	poll) what="polling (default)"; idle=2s ;;
	wake) what="\`rowq wake\` after each INSERT"; idle=30s ;;
	dgram) what="the same datagram, sent by the producer itself"; idle=30s ;;
	binlog) what="\`wake: binlog\`"; idle=30s ;;
	esac
	printf '| %s | %s | %s | %s | %s | %s |\n' "$what" "$idle" "$p50" "$p99" "$max" "$ret"
done <results
