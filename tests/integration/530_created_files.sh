#!/usr/bin/env bash
# Files rowq creates, under the units' UMask=0077:
#   - status_socket: naming a file that is not a socket: rowq leaves the
#     file alone (it used to unlink whatever was there), says why, and
#     runs without the socket;
#   - metrics_textfile: written with mode 0640, so that a node_exporter in
#     rowq's group can read it whatever the umask; no temporary file left.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 3

echo "keep me" >notasocket
mkdir textfile
WORKERS=1 email_config files.yaml "[$HANDLERS/fake, exit, 0]"
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/notasocket\nmetrics_textfile: $ROWQ_TEST_TMP/textfile/rowq.prom\nqueues:|" files.yaml
(umask 077; exec "$ROWQ" -c files.yaml run) >files.log 2>&1 &
ROWQ_PID=$!
track_pid "$ROWQ_PID"
wait_all_final 20 || fail "rows not done: $(cat files.log)"
wait_until 10 '[ -f textfile/rowq.prom ]' || fail "no textfile: $(cat files.log)"
assert_eq "keep me" "$(cat notasocket)" "the file at status_socket"
assert_match "status_socket $ROWQ_TEST_TMP/notasocket: not a socket" "$(cat files.log)" "why there is no status socket"
assert_eq 640 "$(stat -c %a textfile/rowq.prom)" "mode of the metrics textfile under umask 0077"
assert_match "rowq_" "$(cat textfile/rowq.prom)" "the textfile's content"
stop_rowq "$ROWQ_PID"
assert_eq "rowq.prom" "$(ls textfile)" "files in the textfile directory (temporary files left?)"
