#!/usr/bin/env bash
# The harness itself: a private database on the test server, and the one
# server behaviour all of rowq rests on -- a row locked by one transaction's
# claim is skipped, not waited for, by another's.
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"
db_start
db_create

# The design article's email table, with the index the claim needs.
sql <<SQL
CREATE TABLE email (
    id        BIGINT NOT NULL AUTO_INCREMENT,
    recipient VARCHAR(250) NOT NULL,
    subject   VARCHAR(250) NOT NULL,
    body      TEXT NOT NULL,
    status    ENUM('waiting', 'sent', 'failed') NOT NULL DEFAULT 'waiting',
    attempts  INT NOT NULL DEFAULT 0,
    retry_at  BIGINT NULL,
    PRIMARY KEY (id),
    INDEX (status, id)
) ENGINE=InnoDB;
INSERT INTO email (recipient, subject, body)
    SELECT CONCAT('user', seq, '@example.com'), CONCAT('subject ', seq), 'body'
    FROM $(seq_rows 100);
SQL
assert_eq 100 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'waiting'")" \
    "rows inserted"

claim="SELECT id FROM email WHERE status = 'waiting' ORDER BY id
       LIMIT 1 FOR UPDATE SKIP LOCKED"

# Session A claims and keeps its transaction open for as long as the fifo
# stays open: no sleep decides how long the lock is held.
mkfifo "$ROWQ_TEST_TMP/a.in"
mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -N -B --unbuffered \
    "$ROWQ_TEST_DB" <"$ROWQ_TEST_TMP/a.in" >"$ROWQ_TEST_TMP/a.out" 2>&1 &
a_pid=$!
track_pid "$a_pid"
exec 3>"$ROWQ_TEST_TMP/a.in"
echo "START TRANSACTION; $claim;" >&3
wait_until 10 '[ -s "$ROWQ_TEST_TMP/a.out" ]' ||
    fail "session A claimed nothing"
a_id=$(cat "$ROWQ_TEST_TMP/a.out")
assert_eq 1 "$a_id" "session A claims the first row"

# Session B's identical claim, while A holds row 1, gets another row at once.
t0=$(now_us)
b_id=$(sql "START TRANSACTION; $claim; COMMIT")
took_ms=$((($(now_us) - t0) / 1000))
assert_eq 2 "$b_id" "session B skips the row A holds"
[ "$a_id" != "$b_id" ] || fail "both sessions claimed row $a_id"
# Waiting would last the lock wait timeout (50 s by default).
assert_le "$took_ms" 5000 "session B did not wait for A's lock (ms)"

# And A really holds it: a claim without SKIP LOCKED has to wait for it.
out=$(sql "SET innodb_lock_wait_timeout = 1; START TRANSACTION;
    SELECT id FROM email WHERE status = 'waiting' ORDER BY id LIMIT 1 FOR UPDATE;
    COMMIT" 2>&1) && fail "a locking read without SKIP LOCKED got: $out"
assert_match 'ERROR 1205' "$out" "a locking read waits for A's lock"

echo "COMMIT;" >&3
exec 3>&-
wait "$a_pid" || fail "session A failed: $(cat "$ROWQ_TEST_TMP/a.out")"
untrack_pid "$a_pid"

# The library's own timing: wait_until gives up at its deadline, not before.
t0=$(now_us)
if wait_until 0.3 false; then
	fail "wait_until succeeded on false"
fi
elapsed_ms=$((($(now_us) - t0) / 1000))
assert_ge "$elapsed_ms" 300 "wait_until waits its whole timeout (ms)"
assert_le "$elapsed_ms" 1000 "wait_until stops at its timeout (ms)"
