#!/usr/bin/env bash
# What the web console costs the workers: batch-1 throughput of `rowq
# run` (2 workers, the pipe handler bench/okpipe.c, ROWS rows put on the
# queue at once and timed to the last one done) in three cases, taken in
# turn in the same run, median of RUNS:
#
#   off        no console: configured
#   idle       console: on, nobody looking
#   50 clients console: on, 50 logged-in clients each loading the Queues
#              page once a second (python3, one thread each), for the
#              whole drain
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
[ -x "$ROWQ" ] || fail "no $ROWQ: run make first"
DB_SERVER_OPTS+=(--innodb-buffer-pool-size=1G)
unset ROWQ_TEST_SOCKET
db_start
db_create rowq_console
cd "$ROWQ_TEST_TMP"
say() { printf '%s\n' "$*" >&2; }

email_table 0
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
IDLE=100ms WORKERS=2 console_config on.yaml "$port"
sed -i "s|^    exec: .*|    pipe: [$BIN/okpipe]|" on.yaml
sed '/^console:/,/^  users_file:/d' on.yaml >off.yaml

# clients N: N logged-in clients loading / once a second, from when the
# file ready appears (all logged in) until the file stop does; then the
# pages loaded, the failures and the slowest load (ms) on standard output.
clients()
{
	rm -f ready stop
	python3 - "$CONSOLE" "$1" <<'PY'
import http.cookiejar, os, sys, threading, time, urllib.error, urllib.parse, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
pages, slowest, errors = [0], [0.0], [0]
lock = threading.Lock()
logged = threading.Barrier(n + 1)
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a):
        return None
def client():
    jar = http.cookiejar.CookieJar()
    op = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    data = urllib.parse.urlencode({"user": "victor", "password": "victor-password"}).encode()
    try:
        op.open(url + "/login", data, timeout=30)
    except urllib.error.HTTPError as e:
        if e.code != 303:
            raise
    logged.wait()
    while not os.path.exists("stop"):
        t = time.time()
        try:
            ok = b'id="queues"' in op.open(url + "/", timeout=10).read()
        except Exception:
            ok = False
        took = time.time() - t
        with lock:
            pages[0] += ok
            errors[0] += not ok
            slowest[0] = max(slowest[0], took)
        time.sleep(max(0.0, 1.0 - took))
threads = [threading.Thread(target=client) for _ in range(n)]
for t in threads:
    t.start()
logged.wait()
open("ready", "w").close()
for t in threads:
    t.join()
print(pages[0], errors[0], "%.0f" % (slowest[0] * 1000))
PY
}

# run CONFIG [CLIENTS]: rows/s of one drain of ROWS rows.
run()
{
	local cfg=$1 n=${2:-0} t0 t1 loader= pid
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
	t0=$(now_us)
	sql "INSERT INTO email (recipient, subject, body)
	    SELECT CONCAT('user', seq, '@example.com'), 's', 'b' FROM seq_1_to_$ROWS"
	wait_until 300 '[ "$(sql_value "SELECT COUNT(*) FROM email WHERE status = '"'sent'"'")" = "$ROWS" ]' ||
	    fail "the drain did not finish"
	t1=$(now_us)
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

declare -A got=()
for ((i = 1; i <= RUNS; i++)); do
	run off.yaml; got[off]+="$RATE "
	run on.yaml; got[idle]+="$RATE "
	run on.yaml "$CLIENTS"; got[busy]+="$RATE "
	say "run $i: off ${got[off]}| idle ${got[idle]}| busy ${got[busy]}"
done
m_off=$(printf '%s\n' ${got[off]} | median)
echo "| case | rows/s (median of $RUNS) | ratio to off | runs |"
echo "|---|---:|---:|---|"
for k in off idle busy; do
	m=$(printf '%s\n' ${got[$k]} | median)
	label=$k
	[ "$k" != busy ] || label="$CLIENTS clients, the Queues page each second"
	echo "| $label | $m | $(awk -v a="$m" -v b="$m_off" 'BEGIN { printf "%.3f", a / b }') | ${got[$k]}|"
done
echo
echo "The clients, over the $RUNS loaded drains: $PAGES pages loaded, $ERRORS failed, the slowest in $SLOWEST ms."
