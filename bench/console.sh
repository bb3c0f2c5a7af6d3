#!/usr/bin/env bash
# What the web console costs the workers: batch-1 throughput of `rowq
# run` (2 workers, the pipe handler bench/okpipe.c, ROWS rows put on the
# queue at once and timed to the last one done) in three cases, taken in
# turn in the same run, median of RUNS:
#
#   off        no console: configured
#   idle       console: on, nobody looking
#   50 clients console: on, 50 logged-in clients each loading the Queues
#              page once a second (bench/consoleload.c, one poll loop),
#              for the whole drain
#
#	bash bench/console.sh        prints a Markdown table
#
# ROWS (default 100000) and RUNS (default 3) may be set.  Run from the
# repository root after `make`; starts its own server like the tests do.
. "$(dirname "$0")/../tests/lib.sh"
. "$TESTS_DIR/email.sh"
# shellcheck source=/dev/null # (followed, it costs shellcheck all its memory)
. "$TESTS_DIR/console.sh"
. "$(dirname "$0")/lib.sh"

ROWS=${ROWS:-100000}
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-50}
mkdir -p "$BIN"
cc -O2 -g -Wall -Wextra -o "$BIN/okpipe" "$BENCH_DIR/okpipe.c"
cc -O2 -g -Wall -Wextra -o "$BIN/consoleload" "$BENCH_DIR/consoleload.c"
[ -x "$ROWQ" ] || fail "no $ROWQ: run make first"
DB_SERVER_OPTS+=(--innodb-buffer-pool-size=1G)
unset ROWQ_TEST_SOCKET
db_start
db_create rowq_console
cd "$ROWQ_TEST_TMP" || exit 1
say() { printf '%s\n' "$*" >&2; }

email_table 0
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
IDLE=100ms WORKERS=2 console_config on.yaml "$port"
sed -i "s|^    exec: .*|    pipe: [$BIN/okpipe]|" on.yaml
sed '/^console:/,/^  users_file:/d' on.yaml >off.yaml

# clients N: N clients logged in with the form (curl, one at a time),
# then bench/consoleload.c loading / with each one's cookie once a
# second, from when the file ready appears until the file stop does;
# then the pages loaded, the failures and the slowest load (ms).
clients()
{
	rm -f ready stop cookies
	logins "$1" >cookies
	[ "$(wc -l <cookies)" -eq "$1" ] || { echo "the logins failed" >&2; return 1; }
	touch ready
	exec "$BIN/consoleload" "$port" / cookies stop
}

# logins N: N sessions of the viewer, their tokens one a line.
logins()
{
	local i
	for ((i = 0; i < $1; i++)); do
		console_curl -D - -o /dev/null --data 'user=victor&password=victor-password' \
		    "$CONSOLE/login" | sed -n 's/^[Ss]et-[Cc]ookie: rowq_session=\([0-9a-f]*\);.*/\1/p'
	done
}

# cpu PID: the CPU time PID has used, in clock ticks (0: no such process).
cpu()
{
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
	stat=${stat##*) }
	# shellcheck disable=SC2086 # the fields, one word each
	set -- $stat
	echo $(( ${12} + ${13} ))
}

# The console child of the daemon PID.
console_pid()
{
	local p
	for p in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" != console ] || echo "$p"
	done
}

# clients_start N: the clients, running once all are logged in; LOADER.
clients_start()
{
	clients "$1" >clients.out 2>clients.err &
	LOADER=$!
	track_pid "$LOADER"
	wait_until 60 '[ -e ready ]' || fail "the clients did not log in: $(cat clients.err)"
	sleep 2	# every client loading
}

# clients_stop: stop them, and add up what they saw.
clients_stop()
{
	local p e w
	touch stop
	wait "$LOADER" || fail "the clients failed: $(cat clients.err)"
	untrack_pid "$LOADER"
	read -r p e w <clients.out
	PAGES=$((${PAGES:-0} + p)) ERRORS=$((${ERRORS:-0} + e))
	[ "$w" -le "${SLOWEST:-0}" ] || SLOWEST=$w
}

# drain: ROWS rows put on the queue at once, timed to the last one done;
# microseconds in DRAIN_US.
drain()
{
	local t0
	t0=$(now_us)
	sql "INSERT INTO email (recipient, subject, body)
	    SELECT CONCAT('user', seq, '@example.com'), 's', 'b' FROM $(seq_rows "$ROWS")"
	wait_until 300 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" = "$ROWS" ]' ||
	    fail "the drain did not finish"
	DRAIN_US=$(($(now_us) - t0))
	[ "$(sql_value "SELECT MAX(done_count) FROM email")" = 1 ] || fail "a row done twice"
}

# add_cpu VAR TICKS: VAR += TICKS in seconds.
add_cpu()
{
	local hz
	hz=$(getconf CLK_TCK)
	printf -v "$1" '%s' "$(awk -v a="${!1:-0}" -v t="$2" -v hz="$hz" 'BEGIN { print a + t / hz }')"
}

# run CONFIG [CLIENTS]: rows/s of one drain of ROWS rows, in RATE; with
# clients, the CPU seconds the console and the clients used meanwhile
# added to CPU_CONSOLE and CPU_CLIENTS, and the drain's seconds to
# LOADED_S.
run()
{
	local cfg=$1 n=${2:-0} pid cpid c0=0 l0=0
	sql "TRUNCATE email"
	"$ROWQ" -c "$cfg" run >"run.log" 2>&1 &
	pid=$!
	track_pid "$pid"
	[ "$cfg" != on.yaml ] ||
	    wait_until 15 '[ "$(console_curl -o /dev/null -w "%{http_code}" "$CONSOLE/login")" = 200 ]' ||
	    fail "no console"
	sleep 2
	[ "$n" -eq 0 ] || clients_start "$n"
	cpid=$(console_pid "$pid")
	[ -z "$cpid" ] || c0=$(cpu "$cpid")
	[ "$n" -eq 0 ] || l0=$(cpu "$LOADER")
	drain
	if [ "$n" -gt 0 ]; then
		add_cpu CPU_CONSOLE $(( $(cpu "$cpid") - c0 ))
		add_cpu CPU_CLIENTS $(( $(cpu "$LOADER") - l0 ))
		LOADED_S=$(awk -v a="${LOADED_S:-0}" -v us="$DRAIN_US" 'BEGIN { print a + us / 1e6 }')
		clients_stop
	fi
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	untrack_pid "$pid"
	RATE=$(awk -v n="$ROWS" -v us="$DRAIN_US" 'BEGIN { printf "%.0f", n / (us / 1e6) }')
}

median()
{
	sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# The cases in turn, in a rotated order each round, so that a drift of
# the machine's load falls on each alike; each round's ratios to its own
# off run are kept too.
# rounds: RUNS rounds of the three cases, in a rotated order each.
rounds()
{
	local i k
	for ((i = 1; i <= RUNS; i++)); do
		for ((k = 0; k < 3; k++)); do
			one_case $(( (i + k) % 3 ))
		done
		RATIO_IDLE+="$(awk -v a="$R_IDLE" -v b="$R_OFF" 'BEGIN { printf "%.3f", a / b }') "
		RATIO_BUSY+="$(awk -v a="$R_BUSY" -v b="$R_OFF" 'BEGIN { printf "%.3f", a / b }') "
		say "round $i: off $R_OFF, idle $R_IDLE, busy $R_BUSY"
	done
}

# one_case 0|1|2: no console, an idle one, or one with the clients.
one_case()
{
	case $1 in
	0) run off.yaml; R_OFF=$RATE; GOT_OFF+="$RATE " ;;
	1) run on.yaml; R_IDLE=$RATE; GOT_IDLE+="$RATE " ;;
	2) run on.yaml "$CLIENTS"; R_BUSY=$RATE; GOT_BUSY+="$RATE " ;;
	esac
}

# row LABEL RATES RATIOS: a line of the table.
row()
{
	local m r
	# shellcheck disable=SC2086 # one word per figure
	m=$(printf '%s\n' $2 | median)
	# shellcheck disable=SC2086
	r=$([ -z "$3" ] && echo 1.000 || printf '%s\n' $3 | median)
	echo "| $1 | $m | $r | $2|"
}

GOT_OFF='' GOT_IDLE='' GOT_BUSY='' RATIO_IDLE='' RATIO_BUSY=''
rounds
echo "| case | rows/s (median of $RUNS) | median of the rounds' ratios to off | rows/s of each round |"
echo "|---|---:|---:|---|"
row "no console" "$GOT_OFF" ""
row "console on, no client" "$GOT_IDLE" "$RATIO_IDLE"
row "$CLIENTS clients, the Queues page each second" "$GOT_BUSY" "$RATIO_BUSY"
echo
echo "The clients, over the $RUNS loaded drains ($LOADED_S s in all): $PAGES pages loaded, $ERRORS failed, the slowest in $SLOWEST ms; CPU seconds used meanwhile by the console $CPU_CONSOLE, by the clients $CPU_CLIENTS."
