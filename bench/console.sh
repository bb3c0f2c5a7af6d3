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
. "$TESTS_DIR/console.sh"
. "$(dirname "$0")/lib.sh"

BENCH_DIR=$REPO_ROOT/bench
BIN=$REPO_ROOT/build/bench
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
	local i
	rm -f ready stop cookies
	for ((i = 0; i < $1; i++)); do
		console_curl -D - -o /dev/null --data 'user=victor&password=victor-password' \
		    "$CONSOLE/login" | sed -n 's/^[Ss]et-[Cc]ookie: rowq_session=\([0-9a-f]*\);.*/\1/p' >>cookies
	done
	[ "$(wc -l <cookies)" -eq "$1" ] || { echo "the logins failed" >&2; return 1; }
	touch ready
	exec "$BIN/consoleload" "$port" / cookies stop
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

# run CONFIG [CLIENTS]: rows/s of one drain of ROWS rows, in RATE; with
# clients, the CPU seconds the console and the clients used meanwhile
# added to CPU_CONSOLE and CPU_CLIENTS, and the drain's seconds to
# LOADED_S.
run()
{
	local cfg=$1 n=${2:-0} t0 t1 loader='' pid
	sql "TRUNCATE email"
	"$ROWQ" -c "$cfg" run >"run.log" 2>&1 &
	pid=$!
	track_pid "$pid"
	if [ "$cfg" = on.yaml ]; then
		wait_until 15 '[ "$(console_curl -o /dev/null -w "%{http_code}" "$CONSOLE/login")" = 200 ]' ||
		    fail "no console"
	fi
	sleep 2
	if [ "$n" -gt 0 ]; then
		clients "$n" >clients.out 2>clients.err &
		loader=$!
		track_pid "$loader"
		wait_until 60 '[ -e ready ]' || fail "the clients did not log in: $(cat clients.err)"
		sleep 2	# every client loading
	fi
	local cpid c0=0 l0=0
	cpid=$(console_pid "$pid")
	[ -z "$cpid" ] || c0=$(cpu "$cpid")
	[ -z "$loader" ] || l0=$(cpu "$loader")
	t0=$(now_us)
	sql "INSERT INTO email (recipient, subject, body)
	    SELECT CONCAT('user', seq, '@example.com'), 's', 'b' FROM seq_1_to_$ROWS"
	wait_until 300 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" = "$ROWS" ]' ||
	    fail "the drain did not finish"
	t1=$(now_us)
	if [ -n "$loader" ]; then
		local hz
		hz=$(getconf CLK_TCK)
		CPU_CONSOLE=$(awk -v a="${CPU_CONSOLE:-0}" -v t=$(( $(cpu "$cpid") - c0 )) -v hz="$hz" 'BEGIN { print a + t / hz }')
		CPU_CLIENTS=$(awk -v a="${CPU_CLIENTS:-0}" -v t=$(( $(cpu "$loader") - l0 )) -v hz="$hz" 'BEGIN { print a + t / hz }')
		LOADED_S=$(awk -v a="${LOADED_S:-0}" -v us=$((t1 - t0)) 'BEGIN { print a + us / 1e6 }')
	fi
	[ "$(sql_value "SELECT MAX(done_count) FROM email")" = 1 ] || fail "a row done twice"
	if [ -n "$loader" ]; then
		touch stop
		wait "$loader" || fail "the clients failed: $(cat clients.err)"
		untrack_pid "$loader"
		read -r p e w <clients.out
		PAGES=$((${PAGES:-0} + p)) ERRORS=$((${ERRORS:-0} + e))
		[ "$w" -le "${SLOWEST:-0}" ] || SLOWEST=$w
	fi
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	untrack_pid "$pid"
	RATE=$(awk -v n="$ROWS" -v us=$((t1 - t0)) 'BEGIN { printf "%.0f", n / (us / 1e6) }')
}

median()
{
	sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# The cases in turn, in a rotated order each round, so that a drift of
# the machine's load falls on each alike; each round's ratios to its own
# off run are kept too.
declare -A got=() ratio=()
cases=(off idle busy)
for ((i = 1; i <= RUNS; i++)); do
	declare -A this=()
	for ((k = 0; k < 3; k++)); do
		c=${cases[(i + k) % 3]}
		case $c in
		off) run off.yaml ;;
		idle) run on.yaml ;;
		busy) run on.yaml "$CLIENTS" ;;
		esac
		this[$c]=$RATE
		got[$c]+="$RATE "
	done
	for c in idle busy; do
		ratio[$c]+="$(awk -v a="${this[$c]}" -v b="${this[off]}" 'BEGIN { printf "%.3f", a / b }') "
	done
	say "round $i: off ${this[off]}, idle ${this[idle]}, busy ${this[busy]}"
	unset this
done
m_off=$(printf '%s\n' ${got[off]} | median)
echo "| case | rows/s (median of $RUNS) | median of the rounds' ratios to off | rows/s of each round |"
echo "|---|---:|---:|---|"
for k in off idle busy; do
	m=$(printf '%s\n' ${got[$k]} | median)
	label=$k r=1.000
	[ "$k" = off ] || r=$(printf '%s\n' ${ratio[$k]} | median)
	[ "$k" != idle ] || label="console on, no client"
	[ "$k" != off ] || label="no console"
	[ "$k" != busy ] || label="$CLIENTS clients, the Queues page each second"
	echo "| $label | $m | $r | ${got[$k]}|"
done
echo
echo "The clients, over the $RUNS loaded drains ($LOADED_S s in all): $PAGES pages loaded, $ERRORS failed, the slowest in $SLOWEST ms; CPU seconds used meanwhile by the console $CPU_CONSOLE, by the clients $CPU_CLIENTS."
