#!/usr/bin/env bash
# rowq show: one row's story.  Two daemons of one worker each: row 1 is
# done, row 3 fails for good (exit 65), rows 2 and 4 hang in a handler,
# one on each daemon, so row 5 waits.  `rowq show` says so for each, as
# text and as JSON (read by python3): the daemon that runs row 2 names
# its worker, the other says it is not running there; the failed row is
# in failed_select:, with its run and the handler's message.  Then a
# binary key (bytes 00 0a ff) with --hex: its runs and its story.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 6
cat >handler <<'SH'
#!/bin/sh
case $ROWQ_KEY in
2|4) exec sleep 600 ;;
3) echo "no such mailbox" >&2; exit 65 ;;
esac
exit 0
SH
chmod +x handler
for d in a b; do
	WORKERS=1 TIMEOUT=15m email_config $d.yaml "[$ROWQ_TEST_TMP/handler]" \
	    "runs: {}" "failed_select: SELECT id, last_error, attempts FROM email WHERE status = 'failed'"
	sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$d.sock\nqueues:|" $d.yaml
done
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP"/[ab].log'
declare -A pid
for d in a b; do
	rowq_start $d.yaml $d.log
	pid[$d]=$ROWQ_PID
done
hanging() { local d; for d in a b; do handlers_of "${pid[$d]}"; done | wc -l; }
wait_until 20 '[ "$(hanging)" = 2 ] &&
    [ "$(sql_value "SELECT COUNT(*) FROM rowq_runs" 2>/dev/null)" = 2 ]' ||
	fail "rows 2 and 4 are not both running, or rows 1 and 3 not finished"
sleep 0.5	# the status socket says busy once the handler started

show() { "$ROWQ" -c "$1" show email "$2" "${@:3}"; }
py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }

# ---- done ----
out=$(show a.yaml 1)
assert_match "^email 1: done" "$out" "row 1 in words"
assert_match "select: does not return it" "$out" "row 1 and the select"
assert_eq "done 1 0 None" "$(show a.yaml 1 --json | py 'r=d["runs"]; print(d["state"], len(r), r[0]["exit_status"], d["running"])')" "row 1 as JSON"

# ---- failed ----
out=$(show b.yaml 3)
assert_match "^email 3: failed" "$out" "row 3 in words"
assert_match "failed_select: returns it" "$out" "row 3 in the failed set"
assert_match "no such mailbox" "$out" "row 3's error in its run"
assert_eq "failed True failed permanent 65 1" "$(show b.yaml 3 --json | py 'r=d["runs"][0]; print(d["state"], d["in_failed"], r["outcome"], r["reason"], r["exit_status"], r["try"])')" "row 3 as JSON"

# ---- running: on one daemon, with its worker ----
ran=""
for d in a b; do
	st=$(show $d.yaml 2 --json | py 'print(d["state"])')
	if [ "$st" = running ]; then
		ran=$d
		w=$(handlers_of "${pid[$d]}" | head -1)
		assert_eq "$(ps -o ppid= "$w" | tr -d ' ')" "$(show $d.yaml 2 --json | py 'print(d["running"]["pid"])')" "row 2's worker pid"
		assert_match "running: worker 1 \(pid [0-9]+\) of this daemon, try 1" "$(show $d.yaml 2)" "row 2 in words, on its daemon"
	else
		assert_eq waiting "$st" "row 2 seen from the other daemon"
		assert_match "running: not on this daemon" "$(show $d.yaml 2)" "row 2 in words, elsewhere"
	fi
done
[ -n "$ran" ] || fail "no daemon says it runs row 2"
for d in a b; do
	[ "$(show $d.yaml 4 --json | py 'print(d["state"])')" = running ] && r4=$d
done
[ "${r4:-}" != "" ] && [ "$r4" != "$ran" ] || fail "row 4 is not running on the other daemon (${r4:-none})"

# ---- waiting ----
out=$(show a.yaml 5)
assert_match "^email 5: waiting" "$out" "row 5 in words"
assert_match "recipient +user5@example.com" "$out" "row 5's columns"
assert_eq "waiting True 0 None" "$(show a.yaml 5 --json | py 'print(d["state"], d["in_select"], len(d["runs"]), d["running"])')" "row 5 as JSON"
# A key the queue has never seen.
assert_eq "gone" "$(show a.yaml 999 --json | py 'print(d["state"])')" "an unknown key"
expect_exit 2 "name a queue and a key" -c a.yaml show email

for d in a b; do
	stop_rowq "${pid[$d]}"
done

# ---- a binary key ----
sql "CREATE TABLE bin (k VARBINARY(16) NOT NULL PRIMARY KEY,
    status VARCHAR(10) NOT NULL DEFAULT 'waiting', attempts INT NOT NULL DEFAULT 0)"
sql "INSERT INTO bin (k) VALUES (X'000aff'), (X'41'), (X'000a')"
cat >bin.yaml <<YAML
database:
  socket: $ROWQ_TEST_SOCKET
  user: root
  name: $ROWQ_TEST_DB
queues:
  bin:
    select: SELECT k, attempts FROM bin WHERE status = 'waiting' ORDER BY k
    exec: [$HANDLERS/fake, fail-until, "2", $ROWQ_TEST_TMP/bin.log]
    done: UPDATE bin SET status = 'done', attempts = attempts + 1 WHERE k = :k
    retry:
      attempts_column: attempts
      delay: 0s
      update: UPDATE bin SET attempts = attempts + 1 WHERE k = :k
    runs: {}
YAML
"$ROWQ" -c bin.yaml drain bin >/dev/null 2>bin.err || fail "bin drain: $(cat bin.err)"
assert_eq "[1, 2] ['000aff', '000aff'] [None, None]" "$("$ROWQ" -c bin.yaml runs bin --hex 000aff --json |
    py 'print([r["try"] for r in d], [r["key_hex"] for r in d], [r["key"] for r in d])')" "the binary key's runs"
assert_eq "2" "$("$ROWQ" -c bin.yaml runs bin --hex 000a --json | py 'print(len(d))')" "a key that is another's prefix"
assert_eq "done 000aff 2" "$("$ROWQ" -c bin.yaml show bin --hex 000aff --json |
    py 'print(d["state"], d["key_hex"], len(d["runs"]))')" "the binary key's story"
assert_match "^bin x'000aff': done" "$("$ROWQ" -c bin.yaml show bin --hex 000aff)" "the binary key in words"
assert_eq "A" "$("$ROWQ" -c bin.yaml runs bin A --json | py 'print(d[0]["key"])')" "a printable binary key"
expect_exit 2 "is not hex digits" -c bin.yaml runs bin --hex 0g
