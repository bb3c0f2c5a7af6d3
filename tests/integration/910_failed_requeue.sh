#!/usr/bin/env bash
# Failed rows: `rowq failed` lists them through failed_select (newest last,
# with the total, as a table or JSON); `rowq requeue` makes them waiting
# again through requeue:, by key or --all [--where-error TEXT], in chunks
# of 1,000, reporting the keys that matched nothing; alert_failed makes
# `rowq status` exit 1.  Bad input: unknown queue, a queue without the
# keys, usage errors, statements that do not fit the queue's key.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
# 2,500 failed rows, odd ids by an SMTP outage, even ids by bad data
# whose message holds LIKE's wildcards; one more that they must not match.
sql "INSERT INTO email (id, recipient, subject, body, status, attempts, last_error)
    SELECT seq, CONCAT('u', seq, '@x'), 's', '', 'failed', 3,
    IF(seq % 2, 'exit status 75: smtp down', 'exit status 65: 50%_off is no address')
    FROM $(seq_rows 2500)"
sql "INSERT INTO email (id, recipient, subject, body, status, attempts, last_error)
    VALUES (2501, 'w@x', 's', '', 'failed', 3, 'exit status 65: 50xyoff')"
FAILED_KEYS=(
	"failed_select: SELECT id, recipient, attempts, last_error FROM email WHERE status = 'failed' ORDER BY id DESC"
	"requeue: UPDATE email SET status = 'waiting', attempts = 0, retry_at = NULL, last_error = NULL WHERE id = :id AND status = 'failed'"
	"failed_count: SELECT COUNT(*) FROM email WHERE status = 'failed'"
)
email_config rowq.yaml "[/bin/true]" "${FAILED_KEYS[@]}" "alert_failed: 10"
failed_rows() { sql_value "SELECT COUNT(*) FROM email WHERE status = 'failed'"; }

"$ROWQ" -c rowq.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"

# ---- rowq failed ----
"$ROWQ" -c rowq.yaml failed email --limit 3 >failed.out 2>&1 || fail "failed: $(cat failed.out)"
assert_match "^id +recipient +attempts +last_error" "$(head -1 failed.out)" "header"
assert_eq "2499 2500 2501" "$(sed -n '2,4p' failed.out | cut -d' ' -f1 | tr '\n' ' ' | sed 's/ $//')" "newest last"
assert_eq "3 shown of 2501 failed rows" "$(tail -1 failed.out)" "total"
"$ROWQ" -c rowq.yaml failed email --json --limit 2 >failed.json || fail "failed --json"
python3 - failed.json <<'PY' || fail "failed --json: $(cat failed.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["queue"] == "email" and d["total"] == 2501, d
assert [r["id"] for r in d["rows"]] == [2500, 2501], d
assert d["rows"][1]["last_error"] == "exit status 65: 50xyoff", d
PY

# ---- alert_failed ----
status=0; "$ROWQ" -c rowq.yaml status email >status.out 2>&1 || status=$?
assert_eq 1 "$status" "status over alert_failed"
assert_match "ALERT email: 2501 failed rows, more than alert_failed 10" "$(cat status.out)" "status says why"
"$ROWQ" -c rowq.yaml status --json >status.json 2>/dev/null || true
python3 -c 'import json,sys; q=json.load(open(sys.argv[1]))["queues"][0]; assert q["alert"] is True and q["alert_failed"] is True, q' status.json ||
	fail "status --json: $(cat status.json)"
sed 's/alert_failed: 10/alert_failed: 2501/' rowq.yaml >calm.yaml
"$ROWQ" -c calm.yaml status >/dev/null 2>&1 || fail "status exits $? at alert_failed"

# ---- rowq requeue KEY... ----
status=0; "$ROWQ" -c rowq.yaml requeue email 1 2 999999 >requeue.out 2>&1 || status=$?
assert_eq 1 "$status" "exit status with a key that matched nothing"
has_line() { grep -qxF "$2" "$1" || fail "$1 has no line '$2': $(cat "$1")"; }
has_line requeue.out "requeued 1"
has_line requeue.out "requeued 2"
has_line requeue.out "not requeued 999999: no failed row with this key"
has_line requeue.out "email: requeued 2 rows, 1 key matched no failed row"
assert_eq "waiting 0 NULL" "$(sql_value "SELECT CONCAT_WS(' ', status, attempts, IFNULL(last_error, 'NULL')) FROM email WHERE id = 2")" "row 2 requeued"
"$ROWQ" -c rowq.yaml requeue email 3 >one.out 2>&1 || fail "requeue 3: $(cat one.out)"
assert_eq 2498 "$(failed_rows)" "failed rows left"

# ---- --all --where-error: LIKE's wildcards in TEXT are literal ----
"$ROWQ" -c rowq.yaml requeue email --all --where-error '50%_off' >like.out 2>&1 || fail "where-error: $(tail -3 like.out)"
assert_eq "1249" "$(grep -c '^requeued ' like.out)" "rows of the bad-data message (2 was requeued already)"
assert_eq "failed" "$(sql_value "SELECT status FROM email WHERE id = 2501")" "50xyoff did not match 50%_off"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM email WHERE status = 'failed' AND id % 2 = 0 AND id <= 2500")" "even rows requeued"
# Odd rows: 1,248 in two chunks (1,000 and 248), with a pause between.
start=$(now_us)
"$ROWQ" -c rowq.yaml requeue email --all --where-error 'smtp down' >smtp.out 2>&1 || fail "smtp: $(tail -3 smtp.out)"
assert_ge $(( $(now_us) - start )) 200000 "a pause between chunks"
has_line smtp.out "email: requeued 1248 rows, 0 keys matched no failed row"
assert_eq 1 "$(failed_rows)" "only 2501 is left"
"$ROWQ" -c rowq.yaml requeue email --all >all.out 2>&1 || fail "all: $(cat all.out)"
assert_eq 0 "$(failed_rows)" "nothing is left"
"$ROWQ" -c rowq.yaml failed email >empty.out 2>&1 || fail "failed, none: $(cat empty.out)"
assert_eq "0 shown of 0 failed rows" "$(tail -1 empty.out)" "no failed rows"

# ---- bad input ----
expect_exit 2 "rowq.yaml: no queue named nosuch" -c rowq.yaml failed nosuch
expect_exit 2 "rowq.yaml: no queue named nosuch" -c rowq.yaml requeue nosuch 1
email_config bare.yaml "[/bin/true]"
expect_exit 2 "queues.email has no requeue: key" -c bare.yaml requeue email 1
expect_exit 2 "queues.email has no failed_select: key" -c bare.yaml failed email
expect_exit 2 "name the keys to requeue, or --all" -c rowq.yaml requeue email
expect_exit 2 "either keys or --all, not both" -c rowq.yaml requeue email 1 --all
expect_exit 2 "--where-error goes with --all" -c rowq.yaml requeue email 1 --where-error x
expect_exit 2 "--limit takes a number from 1 to 10000" -c rowq.yaml failed email --limit 0
expect_exit 2 "unknown option --bogus" -c rowq.yaml failed email --bogus
sed "s/SELECT id, recipient, attempts, last_error FROM email WHERE status = 'failed'/SELECT id, recipient FROM email WHERE status = 'failed'/" rowq.yaml >noerr.yaml
expect_exit 2 "needs a column of failed_select whose name holds \"error\"" -c noerr.yaml requeue email --all --where-error x

# rowq check: requeue takes the key and failed_select's columns (recipient
# is one, subject is not); failed_select returns the key.
line=$(grep -n "^    requeue:" rowq.yaml | cut -d: -f1)
sed 's/WHERE id = :id AND/WHERE id = :id AND recipient = :recipient AND/' rowq.yaml >colreq.yaml
"$ROWQ" -c colreq.yaml check >colreq.out 2>&1 || fail "check of a requeue by failed_select's column: $(cat colreq.out)"
sed 's/WHERE id = :id AND/WHERE id = :id AND subject = :subject AND/' rowq.yaml >badreq.yaml
expect_exit 78 "badreq.yaml:$line: queues.email.requeue: :subject: requeue takes the queue's key, :id, and the columns of failed_select's row" -c badreq.yaml check
sed 's/SELECT id, recipient, attempts, last_error FROM email WHERE/SELECT recipient, last_error FROM email WHERE/' rowq.yaml >nokey.yaml
expect_exit 78 "queues.email.failed_select: returns no column id, the queue's key" -c nokey.yaml check
sed 's/FROM email WHERE status = .failed. ORDER BY id DESC/FROM no_such_table/' rowq.yaml >badsql.yaml
expect_exit 78 "queues.email.failed_select: .*no_such_table" -c badsql.yaml check
sed 's/WHERE id = :id AND status/WHERE status/' rowq.yaml >noparam.yaml
expect_exit 78 "queues.email.requeue: takes no parameter" -c noparam.yaml check
email_config noalert.yaml "[/bin/true]" "alert_failed: 3"
expect_exit 78 "queues.email.alert_failed: alert_failed needs failed_count" -c noalert.yaml check
