#!/usr/bin/env bash
# Hostile handlers (tests/handlers/hostile.c): rowq's memory stays bounded,
# the handler's whole process group is killed when its time is up, and the
# row ends where the policy says (max_attempts 1 here: a failed try is
# final).  Exec:
#   - ROWQ_FLOOD_MB (200) MB on stdout and as many on stderr, then exit 0:
#     done, :output is the first 64 KiB, the log has at most 100 stderr
#     lines for the row, the worker's peak RSS stays small;
#   - 100 MB on stderr with no newline at all: logged as at most 100
#     lines of 1 KiB;
#   - ignoring SIGTERM past the timeout: killed, failed "timed out";
#   - forking a grandchild and exiting 0: done, the grandchild killed;
#   - forking a grandchild and hanging: both killed at the timeout;
#   - closing stdin before a 1 MiB row is written, or never reading it:
#     the row's fate is the exit status, and the worker does not die of
#     SIGPIPE or wait forever.
# Pipe:
#   - a ROWQ_FLOOD_MB MB answer with no newline: refused (too long), the
#     handler restarted, memory bounded;
#   - 10 MB of stderr per row: rows done, stderr lines bounded per row;
#   - never reading stdin, closing stdin: timeout, failed, restarted.
# The plain build is measured for memory (ASan's RSS means little).
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

H=$HANDLERS/hostile
flood_mb=${ROWQ_FLOOD_MB:-200}
flood=$((flood_mb * 1024 * 1024))

# setup ROWS [BODY_BYTES]: the email table with ROWS waiting rows (bodies
# of BODY_BYTES), made once and refilled after.
setup()
{
	if [ -z "${made:-}" ]; then
		email_table 0
		sql "ALTER TABLE email MODIFY last_error MEDIUMTEXT NULL, MODIFY body MEDIUMTEXT NOT NULL"
		made=1
	fi
	sql "DELETE FROM email; INSERT INTO email (id, recipient, subject, body)
	    SELECT seq, CONCAT('u', seq, '@example.com'), 's', REPEAT('b', ${2:-4}) FROM $(seq_rows "$1")"
}

# conf NAME MODE HANDLER: a config, one worker, one try, the row's output
# kept in last_error by done, body in the select.
conf()
{
	WORKERS=1 MAX_ATTEMPTS=1 TIMEOUT=${TIMEOUT:-60s} email_config "$1.yaml" "[x]"
	sed -i "s|^    exec: .*|    $2: $3|; s|SELECT id, recipient, subject, attempts FROM email|SELECT id, recipient, subject, attempts, body FROM email|; s|done_count = done_count + 1 WHERE id = :id|done_count = done_count + 1, last_error = :output WHERE id = :id|" "$1.yaml"
}

# run_until_final BINARY NAME: `rowq run` until no row waits; sets PEAK_KB
# to the worker's peak RSS, then stops rowq.
run_until_final()
{
	local w
	"$1" -c "$2.yaml" run >"$2.log" 2>&1 &
	ROWQ_PID=$!
	track_pid "$ROWQ_PID"
	wait_all_final 120 || fail "$2: rows still waiting: $(tail -5 "$2.log")"
	w=$(workers_of "$ROWQ_PID" | head -1)
	PEAK_KB=$(proc_kb "$w" VmHWM)
	stop_rowq "$ROWQ_PID"
}

# drain NAME: `rowq drain` (ASan build in make check) until no row waits.
drain()
{
	"$ROWQ" -c "$1.yaml" drain email >"$1.out" 2>"$1.log" || true
	[ "$(email_count "status = 'waiting'")" = 0 ] || fail "$1: rows still waiting: $(tail -5 "$1.log")"
}

status_of() { sql_value "SELECT status FROM email WHERE id = $1"; }
error_of() { sql_value "SELECT COALESCE(last_error, '') FROM email WHERE id = $1"; }

# ---- exec: floods ----
setup 1
conf flood exec "[$H, flood, \"$flood\", both, \"0\"]"
start=$(now_us)
run_until_final "$ROWQ_PLAIN" flood
secs=$(( ($(now_us) - start) / 1000000 ))
assert_eq sent "$(status_of 1)" "flood: row 1"
assert_eq 65536 "$(sql_value "SELECT LENGTH(last_error) FROM email WHERE id = 1")" "flood: bytes of :output kept"
assert_le "$(lines flood.log 'row 1: stderr: x')" 100 "flood: stderr lines logged"
assert_match "row 1: stderr: [0-9]+ more lines not logged" "$(cat flood.log)" "flood: the rest counted"
assert_match "row 1: stdout over 65536 bytes: the rest was discarded" "$(cat flood.log)" "flood: stdout cut said"
assert_le "$PEAK_KB" 32768 "flood: worker peak RSS (kB) after ${flood_mb} MB on stdout and stderr"
figure "exec flood: MB on stdout + stderr" "$flood_mb + $flood_mb"
figure "exec flood: worker peak RSS kB" "$PEAK_KB"
figure "exec flood: seconds" "$secs"

setup 1
conf nonl exec "[$H, flood, \"104857600\", err-nonl, \"3\"]"
run_until_final "$ROWQ_PLAIN" nonl
assert_eq failed "$(status_of 1)" "one-line flood: row 1"
assert_le "$(lines nonl.log 'row 1: stderr: x')" 100 "one-line flood: stderr lines logged"
# Every log line is bounded (the verdict carries :error's 4 KiB tail).
assert_eq 0 "$(awk 'length($0) > 4096' nonl.log | wc -l)" "one-line flood: log lines longer than 4 KiB"
assert_le "$(sql_value "SELECT LENGTH(last_error) FROM email WHERE id = 1")" 8192 "one-line flood: bytes of :error"
assert_le "$PEAK_KB" 32768 "one-line flood: worker peak RSS (kB)"
figure "exec 100 MB one-line stderr: worker peak RSS kB" "$PEAK_KB"

# ---- exec: processes that will not go ----
setup 1
TIMEOUT=1s conf term exec "[$H, ignore-term, $ROWQ_TEST_TMP/term.pid]"
start=$(now_us)
drain term
took=$(( ($(now_us) - start) / 1000 ))
assert_eq failed "$(status_of 1)" "ignore-term: row 1"
assert_match "timed out after 1s" "$(error_of 1)" "ignore-term: :error"
assert_le "$took" 15000 "ignore-term: ms until final (1 s timeout, 2 s grace)"
! _lib_alive "$(cat term.pid)" || fail "ignore-term: handler $(cat term.pid) still runs"

setup 1
conf gcexit exec "[$H, grandchild, $ROWQ_TEST_TMP/gcexit.pid, exit]"
drain gcexit
assert_eq sent "$(status_of 1)" "grandchild, parent exits 0: row 1"
wait_until 5 '! _lib_alive "$(cat gcexit.pid)"' || fail "grandchild $(cat gcexit.pid) outlived its handler"

setup 1
TIMEOUT=1s conf gchang exec "[$H, grandchild, $ROWQ_TEST_TMP/gchang.pid, hang]"
drain gchang
assert_eq failed "$(status_of 1)" "grandchild, both hang: row 1"
wait_until 5 '! _lib_alive "$(cat gchang.pid)"' || fail "grandchild $(cat gchang.pid) outlived the timeout"

# ---- exec: stdin refused ----
setup 2 1048576
sql "UPDATE email SET subject = 'ok' WHERE id = 1"
conf stdin exec "[$H, close-stdin, \"0\"]"
drain stdin
assert_eq "sent sent" "$(status_of 1) $(status_of 2)" "close-stdin, exit 0: rows"
setup 2 1048576
conf noread exec "[$H, no-read, \"300\", \"0\"]"
drain noread
assert_eq "sent sent" "$(status_of 1) $(status_of 2)" "no-read, exit 0: rows"
setup 1 1048576
TIMEOUT=1s conf noreadhang exec "[$H, no-read, \"600000\", \"0\"]"
drain noreadhang
assert_eq failed "$(status_of 1)" "no-read, hang: row 1"
assert_match "timed out after 1s" "$(error_of 1)" "no-read, hang: :error"

# ---- pipe ----
setup 2
TIMEOUT=30s conf longanswer pipe "[$H, pipe-long-answer, \"$flood\"]"
run_until_final "$ROWQ_PLAIN" longanswer
assert_eq "failed failed" "$(status_of 1) $(status_of 2)" "pipe answer of ${flood_mb} MB: rows"
assert_match "answer longer than [0-9]+ bytes" "$(error_of 1)" "pipe long answer: :error"
assert_le "$PEAK_KB" 32768 "pipe long answer: worker peak RSS (kB)"
figure "pipe ${flood_mb} MB answer: worker peak RSS kB" "$PEAK_KB"

setup 3
conf pstderr pipe "[$H, pipe-stderr, \"10485760\"]"
run_until_final "$ROWQ_PLAIN" pstderr
assert_eq 3 "$(email_count "status = 'sent'")" "pipe stderr flood: rows done"
for id in 1 2 3; do
	assert_le "$(lines pstderr.log "row $id: stderr: x")" 100 "pipe stderr flood: lines logged for row $id"
done
assert_le "$PEAK_KB" 32768 "pipe stderr flood: worker peak RSS (kB)"

setup 1 1048576
TIMEOUT=1s conf pnoread pipe "[$H, pipe-no-read]"
drain pnoread
assert_eq failed "$(status_of 1)" "pipe never reading: row 1"
assert_match "timed out after 1s" "$(error_of 1)" "pipe never reading: :error"

setup 1 1048576
TIMEOUT=1s conf pclose pipe "[$H, pipe-close-stdin]"
drain pclose
assert_eq failed "$(status_of 1)" "pipe closing stdin: row 1"
assert_match "timed out after 1s|pipe handler" "$(error_of 1)" "pipe closing stdin: :error"

# Nothing hostile is left running.
echo "$H" >pattern
assert_eq "" "$(grep -lFf pattern /proc/[0-9]*/cmdline 2>/dev/null | head -3)" "hostile handlers left running"
figure "hostile handler cases" 13
