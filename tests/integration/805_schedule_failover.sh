#!/usr/bin/env bash
# Failover: a primary p and its replica r (real replication over TCP, by
# GTID, r applying 3 s behind); two daemons with host: [p, r] run a
# schedule, every: 1s; p is killed (-9) mid-run and r promoted 2 s later,
# without the transactions it had not applied yet.  On r every slot of the
# run is there exactly once, none missing: the slots whose transaction
# p had committed but not yet sent to r are not in r's schedule table
# either, so the daemons insert them again on r, with the slots of the
# failover itself, all less than a minute late.  Counted from p's own
# data, read after the run.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/servers.sh"
. "$TESTS_DIR/tcp.sh"
db_start
db_create

tcp_pair 0
server_replica_delay r 3
server_sql p "CREATE TABLE tick (
    id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    slot_unix BIGINT NOT NULL,
    host CHAR(1) NOT NULL
) ENGINE=InnoDB" "$ROWQ_TEST_DB"
server_caught_up r p
cd "$ROWQ_TEST_TMP"
for d in a b; do
	cat >$d.yaml <<YAML
database:
  name: $ROWQ_TEST_DB
status_socket: $ROWQ_TEST_TMP/$d.sock
schedules:
  tick:
    every: 1s
    insert: INSERT INTO tick (slot_unix, host) VALUES (:slot_unix, '$d')
YAML
	tcp_config $d.yaml "[\"127.0.0.1:$P_PORT\", \"127.0.0.1:$R_PORT\"]"
done
"$ROWQ" -c a.yaml run >a.log 2>&1 & A=$!
track_pid $A
"$ROWQ" -c b.yaml run >b.log 2>&1 & B=$!
track_pid $B
on_exit '[ $? = 0 ] || tail -n 20 a.log b.log'

slots() { server_value "$1" "SELECT COUNT(*) FROM tick" "$ROWQ_TEST_DB"; }
# Once r has the schedule's row (a schedule whose row r never got would
# start afresh there, as one seen for the first time).
wait_until 15 '[ "$(slots p)" -ge 6 ] &&
    [ "$(server_sql r "SELECT COUNT(*) FROM rowq_schedule" "$ROWQ_TEST_DB" 2>/dev/null)" = 1 ]' ||
    fail "no slots on p, or no schedule row on r"
server_kill9 p
# shellcheck disable=SC2034 # read by wait_until's eval
killed=$(date +%s)
at_kill=$(slots r)
sleep 2
server_promote r
wait_until 25 '[ "$(server_value r "SELECT MAX(slot_unix) FROM tick" "$ROWQ_TEST_DB")" -ge $((killed + 4)) ]' ||
    fail "no slot on r after the failover"
for p in $A $B; do
	kill -TERM "$p"
	wait "$p" || fail "daemon $p exited with $?"
	untrack_pid "$p"
done

read -r first last n distinct < <(server_sql r "SELECT MIN(slot_unix),
    MAX(slot_unix), COUNT(*), COUNT(DISTINCT slot_unix) FROM tick" "$ROWQ_TEST_DB")
# p's own rows, now that it is started again (alone: no daemon runs).
server_restart p
on_p=$(slots p)
p_last=$(server_value p "SELECT MAX(slot_unix) FROM tick" "$ROWQ_TEST_DB")
again=$(server_value r "SELECT COUNT(*) FROM tick WHERE slot_unix <= $p_last" "$ROWQ_TEST_DB")
echo "figure: slots on p when it died: $on_p; on r then: $at_kill; not replicated: $((on_p - at_kill)); on r after the run: $n ($first..$last), each once"
assert_eq "$n" "$distinct" "slots inserted twice on r"
assert_eq "$((last - first + 1))" "$n" "slots missing on r"
assert_eq "$on_p" "$again" "the slots of p's time, on r"
assert_ge "$((on_p - at_kill))" 1 "slots p had not sent to r when it died"
assert_match "moved from 127.0.0.1:$P_PORT to 127.0.0.1:$R_PORT|connected to 127.0.0.1:$R_PORT" \
    "$(cat a.log b.log)" "a daemon's move to r"
