#!/usr/bin/env bash
# What every process of rowq starts with, whatever it was given:
# - started with standard input and output closed, the supervisor has
#   /dev/null there (not the next socket it opens, where a stray write
#   would land);
# - a worker forked after the status and metrics listeners exist (a
#   reload's) holds none of the supervisor's sockets;
# - SIGPIPE is ignored in the supervisor, the workers and the metrics
#   probe (a peer that goes away is an error to handle, not a death).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 30
port=$(free_port)
WORKERS=1 email_config rowq.yaml "[$HANDLERS/fake, sleep, 30000, $ROWQ_TEST_TMP/handled]"
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics: 127.0.0.1:$port\nqueues:|" rowq.yaml
# The metrics probe reads the waiting rows a tenth of a second each: it
# lives for a few seconds, long enough to be looked at.
sed -i 's/^      ORDER BY id$/        AND SLEEP(0.1) = 0\n      ORDER BY id/' rowq.yaml

"$ROWQ" -c rowq.yaml -d run <&- >&- 2>rowq.log &
ROWQ_PID=$!
track_pid "$ROWQ_PID"
on_exit '[ $? -eq 0 ] || tail -n 40 "$ROWQ_TEST_TMP/rowq.log"'

# SigIgn of PID has SIGPIPE (13: bit 12).
ignores_sigpipe()
{
	local mask
	mask=$(awk '/^SigIgn:/ { print $2 }' "/proc/$1/status") || return 1
	(( (16#$mask >> 12) & 1 ))
}
# The socket inodes PID holds, one per line.
sockets_of()
{
	find "/proc/$1/fd" -mindepth 1 -maxdepth 1 -printf '%l\n' 2>/dev/null | grep '^socket:' | sort -u || true
}
worker_pid() { sed -n "s/.*started email worker 1 (generation $1), pid \([0-9]*\)$/\1/p" rowq.log; }

wait_until 10 '[ -n "$(worker_pid 1)" ] && [ -S rowq.sock ]' || fail "rowq did not start"
w1=$(worker_pid 1)
# The probe: the supervisor's child that is not the worker.
wait_until 10 '[ -n "$(children_of "$ROWQ_PID" | grep -vx "$w1")" ]' || fail "no metrics probe seen"
probe=$(children_of "$ROWQ_PID" | grep -vx "$w1" | head -n 1)
ignores_sigpipe "$probe" || fail "the metrics probe ($probe) does not ignore SIGPIPE"

for fd in 0 1; do
	assert_eq /dev/null "$(readlink "/proc/$ROWQ_PID/fd/$fd")" "the supervisor's descriptor $fd"
done
ignores_sigpipe "$ROWQ_PID" || fail "the supervisor does not ignore SIGPIPE"
ignores_sigpipe "$w1" || fail "the worker does not ignore SIGPIPE"

# A worker of a later generation: none of the supervisor's sockets.
kill -HUP "$ROWQ_PID"
wait_until 10 '[ -n "$(worker_pid 2)" ]' || fail "no generation 2 worker"
w2=$(worker_pid 2)
wait_until 5 'grep -q "rowq: email worker 1" "/proc/$w2/cmdline" 2>/dev/null' || fail "worker $w2 did not start"
shared=$(comm -12 <(sockets_of "$ROWQ_PID") <(sockets_of "$w2"))
assert_eq "" "$shared" "sockets the generation 2 worker shares with the supervisor"
[ -n "$(sockets_of "$ROWQ_PID")" ] || fail "the supervisor holds no socket: the test looks at nothing"
