#!/usr/bin/env bash
# A lease claim whose list fails whatever the row (its second statement's
# JSON path typo, which the server refuses only when it runs: `check`
# cannot see it) stops the queue's workers as a failing finishing
# statement does (865), instead of retrying it for ever:
#   1. drain: exits 1 within seconds, the error with the file, line and
#      statement in its log; no row leased, no try counted, no handler
#      run;
#   2. run, two daemons: the workers wait in state failing, which `rowq
#      status` shows, saying the long message once per worker; the list
#      fixed and a reload, every row is done once.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
rows=100
sql "CREATE TABLE job (
    id BIGINT NOT NULL PRIMARY KEY,
    status VARCHAR(8) NOT NULL DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    attempts INT NOT NULL DEFAULT 0,
    done_count INT NOT NULL DEFAULT 0,
    meta JSON NULL,
    INDEX (status, leased_until, id)
) ENGINE=InnoDB;
INSERT INTO job (id, meta) SELECT seq, '{}' FROM $(seq_rows $rows)"
: >handled

# config FILE PATH: the queue, its claim's second statement setting PATH.
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: $ROWQ_TEST_TMP/${1%.yaml}.sock
queues:
  job:
    workers: 2
    select: SELECT id, attempts FROM job
            WHERE status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY id
    exec: [$HANDLERS/fake, append, $ROWQ_TEST_TMP/handled]
    idle: 100ms
    lease:
      duration: 10s
      claim:
        - UPDATE job SET lease = :lease, attempts = attempts + 1,
          leased_until = UNIX_TIMESTAMP() + 10 WHERE id = :id
        - "UPDATE job SET meta = JSON_SET(meta, '$2', NOW()) WHERE id = :id"
      renew: UPDATE job SET leased_until = UNIX_TIMESTAMP() + 10
             WHERE id = :id AND lease = :lease
    done: UPDATE job SET status = 'done', done_count = done_count + 1
          WHERE id = :id AND lease = :lease
    failed: UPDATE job SET status = 'failed' WHERE id = :id AND lease = :lease
YAML
}

# ---- 1. drain ----
config bad.yaml '$claimed_at'
line=$(grep -n 'JSON_SET' bad.yaml | cut -d: -f1)
"$ROWQ" -c bad.yaml check >check.out 2>&1 ||
	fail "check refused what only running shows: $(cat check.out)"
start=$(now_us)
status=0
timeout 60 "$ROWQ" -c bad.yaml drain job >drain.out 2>drain.err || status=$?
took=$((($(now_us) - start) / 1000))
figure "drain with a failing claim list: ms until it ended" "$took"
assert_eq 1 "$status" "drain's exit status ($(cat drain.err))"
assert_le "$took" 10000 "drain: ms until it ended"
assert_match "bad.yaml:$line: queues.job.lease.claim\\[1\\] for key [0-9]+: .*JSON path.*: the statement fails whatever the row, so no row is marked: the rows go back as they were and the drain ends; fix the statement and reload\\.  The statement: UPDATE job SET meta" \
    "$(cat drain.err)" "drain: the error"
assert_eq "$rows 0 0" "$(sql_value "SELECT CONCAT_WS(' ', SUM(status = 'waiting'
    AND lease IS NULL), SUM(attempts), SUM(done_count)) FROM job")" \
    "drain: rows left as they were"
assert_eq 0 "$(wc -l <handled)" "drain: handlers run"

# ---- 2. run, two daemons, then the fix and a reload ----
declare -A pid=()
for d in a b; do
	sed "s|/bad.sock|/$d.sock|" bad.yaml >$d.yaml
	rowq_start $d.yaml $d.log
	pid[$d]=$ROWQ_PID
done
on_exit '[ $? -eq 0 ] || tail -n 20 a.log b.log'
wait_until 20 '"$ROWQ" -c a.yaml status job 2>&1 | grep -Eq "job/[12] pid [0-9]+: failing"' ||
	fail "run: status never showed a failing worker: $("$ROWQ" -c a.yaml status job 2>&1)"
sleep 3
assert_le "$(grep -c 'the statement fails whatever the row' a.log)" 2 \
    "run: the long message once per worker"
assert_eq "$rows 0" "$(sql_value "SELECT CONCAT_WS(' ', SUM(lease IS NULL),
    SUM(attempts)) FROM job")" "run: no row leased"
for d in a b; do
	config fixed.yaml '$.claimed_at'
	sed "s|/fixed.sock|/$d.sock|" fixed.yaml >$d.yaml
	kill -HUP "${pid[$d]}"
done
wait_until 60 '[ "$(sql_value "SELECT COUNT(*) FROM job WHERE status = '"'done'"'")" = $rows ]' ||
	fail "run: rows not done after the fix: $(sql_value "SELECT COUNT(*) FROM job WHERE status = 'done'")"
for d in a b; do
	kill -TERM "${pid[$d]}"
	wait "${pid[$d]}" || fail "daemon $d exited with $?"
	untrack_pid "${pid[$d]}"
done
assert_eq "$rows $rows" "$(sql_value "SELECT CONCAT_WS(' ', SUM(done_count = 1),
    SUM(JSON_EXTRACT(meta, '\$.claimed_at') IS NOT NULL)) FROM job")" \
    "run: each row done once, by the fixed list"
