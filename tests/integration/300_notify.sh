#!/usr/bin/env bash
# sd_notify, with NOTIFY_SOCKET on a datagram socket this test owns: READY
# once the workers run; a SIGHUP gives RELOADING=1 with MONOTONIC_USEC and
# then READY=1; a broken reload says so in STATUS= and keeps the workers;
# WATCHDOG=1 comes at half WATCHDOG_USEC when WATCHDOG_PID is rowq's (and
# never when it names another process); SIGTERM gives STOPPING=1 and
# EXTEND_TIMEOUT_USEC while a row is finishing.  Every message comes from
# the supervisor's pid, and neither workers nor handlers see NOTIFY_SOCKET.
# Logs: <N> prefixes and no timestamps when stderr is the journal.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
email_table 0
cd "$ROWQ_TEST_TMP"
cfg=$ROWQ_TEST_TMP/rowq.yaml
msgs=$ROWQ_TEST_TMP/notify.log
sock=$ROWQ_TEST_TMP/notify.sock

# The handler writes its environment; the row with subject 'slow' takes 3 s.
cat >handler <<SH
#!/bin/sh
env >"$ROWQ_TEST_TMP/env.\$ROWQ_KEY"
[ "\$2" != slow ] || sleep 3
exit 0
SH
chmod +x handler
email_config "$cfg" "[$ROWQ_TEST_TMP/handler, \"{id}\", \"{subject}\"]"
cp "$cfg" good.yaml

# Records "SENDER_PID MONOTONIC_US MESSAGE" per datagram, newlines as '|'.
cat >listen.py <<'PY'
import socket, struct, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(sys.argv[1])
with open(sys.argv[2], 'a', buffering=1) as out:
    while True:
        data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(12))
        pid = -1
        for level, kind, value in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack('iII', value[:12])[0]
        text = data.decode('utf-8', 'replace').replace('\n', '|')
        out.write('%d %d %s\n' % (pid, time.monotonic_ns() // 1000, text))
PY
python3 listen.py "$sock" "$msgs" &
track_pid $!
wait_until 5 '[ -S "$sock" ]' || fail "the listener did not bind $sock"
: >"$msgs"

# WATCHDOG_PID is checked: $$ of the exec'ing shell is rowq's pid.
NOTIFY_SOCKET=$sock WATCHDOG_USEC=1000000 bash -c 'export WATCHDOG_PID=$$; exec "$@"' \
	sh "$ROWQ" -c "$cfg" run >rowq.log 2>&1 &
ROWQ_PID=$!
track_pid "$ROWQ_PID"
on_exit '[ $? -eq 0 ] || { cat "$ROWQ_TEST_TMP/rowq.log"; cat "$ROWQ_TEST_TMP/notify.log"; }'

count() { grep -c -- "$1" "$msgs" || true; }
messages() { cut -d' ' -f3- "$msgs"; }

wait_until 10 '[ "$(count " READY=1")" -ge 1 ]' || fail "no READY=1"
assert_match "^STATUS=email: 2/2 up, 0 done, 0 failed" "$(messages | grep '^STATUS=' | tail -1)" "first STATUS="

# A row: its handler runs without NOTIFY_SOCKET, and so do the workers.
sql "INSERT INTO email (id, recipient, subject, body) VALUES (1, 'a@example.com', 'fast', '')"
wait_until 10 '[ -s env.1 ]' || fail "row 1 not handled"
assert_eq "" "$(grep -E '^(NOTIFY_SOCKET|WATCHDOG_)' env.1 || true)" "systemd variables in a handler's environment"
workers=$(children_of "$ROWQ_PID" | sort)
assert_eq 2 "$(echo "$workers" | wc -l)" "workers"
for w in $workers; do
	! tr '\0' '\n' </proc/"$w"/environ | grep -q '^NOTIFY_SOCKET=' ||
		fail "worker $w has NOTIFY_SOCKET in its environment"
done

# The watchdog: WATCHDOG_USEC=1 s, so a ping every 0.5 s.
# Counted over a window measured here: a loaded machine may sleep longer.
t0=$(now_us)
pings=$(count " WATCHDOG=1$")
sleep 2
pings2=$(count " WATCHDOG=1$")
window_ms=$((($(now_us) - t0) / 1000))
assert_ge $((pings2 - pings)) 3 "WATCHDOG=1 in $window_ms ms"
assert_le $((pings2 - pings)) $((window_ms / 500 + 1)) "WATCHDOG=1 in $window_ms ms"

# A good reload: RELOADING=1 with the monotonic time, then READY=1.
kill -HUP "$ROWQ_PID"
wait_until 10 '[ "$(count " READY=1")" -ge 2 ]' || fail "no READY=1 after the first reload"
line=$(grep ' RELOADING=1' "$msgs" | head -1)
assert_match '^[0-9]+ [0-9]+ RELOADING=1\|MONOTONIC_USEC=[0-9]+$' "$line" "RELOADING message"
received=$(echo "$line" | cut -d' ' -f2)
stamp=${line##*MONOTONIC_USEC=}
assert_le "$stamp" "$received" "MONOTONIC_USEC not after its arrival"
assert_le $((received - stamp)) 1000000 "µs between MONOTONIC_USEC and its arrival"
wait_until 10 'messages | grep -q "^STATUS=.*last reload [0-9:]* ok (generation 2)"' ||
	fail "STATUS= does not report the good reload"
wait_until 10 '[ "$(children_of "$ROWQ_PID" | sort)" != "$workers" ] && [ "$(children_of "$ROWQ_PID" | wc -l)" = 2 ]' ||
	fail "the workers of generation 2 did not replace the old ones"
workers=$(children_of "$ROWQ_PID" | sort)

# A broken reload (invalid YAML): said in STATUS=, and the workers stay.
printf 'queues:\n  email: [\n' >"$cfg"
kill -HUP "$ROWQ_PID"
wait_until 10 '[ "$(count " READY=1")" -ge 3 ]' || fail "no READY=1 after the broken reload"
wait_until 10 'messages | grep -q "^STATUS=.*last reload [0-9:]* FAILED, old workers kept: .*rowq.yaml:[0-9]"' ||
	fail "STATUS= does not report the failed reload: $(messages | grep '^STATUS=' | tail -1)"
assert_match "reload failed, old workers kept \(generation 2\): .*rowq.yaml:[0-9]+" "$(cat rowq.log)" "failed reload logged"
sleep 0.5
assert_eq "$workers" "$(children_of "$ROWQ_PID" | sort)" "workers after the broken reload"

cp good.yaml "$cfg"
kill -HUP "$ROWQ_PID"
wait_until 10 'messages | grep -q "^STATUS=.*last reload [0-9:]* ok (generation 3)"' ||
	fail "STATUS= does not report the reload after the fix"

# SIGTERM while a 3 s row runs: STOPPING=1, then more time asked of systemd
# until the row is done; rowq exits 0.
sql "INSERT INTO email (id, recipient, subject, body) VALUES (2, 'b@example.com', 'slow', '')"
wait_until 10 '[ -s env.2 ]' || fail "row 2 not started"
kill -TERM "$ROWQ_PID"
status=0
wait "$ROWQ_PID" || status=$?
untrack_pid "$ROWQ_PID"
assert_eq 0 "$status" "exit status after SIGTERM"
assert_eq "sent 1" "$(sql_value "SELECT CONCAT(status, ' ', done_count) FROM email WHERE id = 2")" "row 2, finished during the stop"
assert_ge "$(count " EXTEND_TIMEOUT_USEC=[0-9]*$")" 1 "EXTEND_TIMEOUT_USEC during the stop"
assert_match "^STOPPING=1$" "$(messages | grep -E '^(STOPPING|EXTEND)' | head -1)" "STOPPING=1 before EXTEND_TIMEOUT_USEC"

# The order of the state changes, and who sent them.
assert_eq "READY RELOADING READY RELOADING READY RELOADING READY STOPPING" \
	"$(messages | grep -oE '^(READY|RELOADING|STOPPING)=1' | cut -d= -f1 | tr '\n' ' ' | sed 's/ $//')" \
	"state messages"
assert_eq "$ROWQ_PID" "$(cut -d' ' -f1 "$msgs" | sort -u)" "pids that sent messages"

# WATCHDOG_PID naming another process: no pings from this one.
: >"$msgs"
NOTIFY_SOCKET=$sock WATCHDOG_USEC=200000 WATCHDOG_PID=1 "$ROWQ" -c "$cfg" run >other.log 2>&1 &
ROWQ_PID=$!
track_pid "$ROWQ_PID"
wait_until 10 '[ "$(count " READY=1")" -ge 1 ]' || fail "no READY=1 from the second run"
sleep 1
kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "second run exited with $?"
untrack_pid "$ROWQ_PID"
assert_eq 0 "$(count " WATCHDOG=1")" "pings with WATCHDOG_PID=1"

# Logs under the journal: <N> and no timestamp; elsewhere a timestamp.
# (Where a journal socket exists, lines go there as structured entries.)
printf 'queues:\n  email: [\n' >broken.yaml
"$ROWQ" -c broken.yaml run 2>plain.log && fail "run with a broken config succeeded"
assert_match "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+ rowq: .*broken.yaml:[0-9]+" "$(head -1 plain.log)" "plain log line"
if [ ! -S /run/systemd/journal/socket ]; then
	: >journal.log
	JOURNAL_STREAM=$(stat -c '%d:%i' journal.log) "$ROWQ" -c broken.yaml run 2>>journal.log &&
		fail "run with a broken config succeeded"
	assert_match "^<3>rowq: .*broken.yaml:[0-9]+" "$(head -1 journal.log)" "journal log line"
fi
