#!/usr/bin/env bash
# age: of a DATETIME kept in UTC, on a server whose time zone is +02:00:
# without time_zone: UTC, rowq status reads it in the session's zone and
# the oldest row looks two hours older than it is; with it, its age is
# right, in the table and in --json.
# serial: sets the server's global time_zone, which every session takes.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
email_table 0
tz=$(sql_value "SELECT @@GLOBAL.time_zone")
on_exit "sql \"SET GLOBAL time_zone = '$tz'\""
sql "SET GLOBAL time_zone = '+02:00'"
sql "ALTER TABLE email ADD COLUMN created_at DATETIME NOT NULL"
# The oldest waiting row came 5 minutes ago, written in UTC.
sql "INSERT INTO email (id, recipient, subject, body, created_at)
    SELECT seq, 'u@example.com', 's', '', UTC_TIMESTAMP() - INTERVAL 5 MINUTE
    FROM $(seq_rows 3)"

# oldest_s FILE: the queue's oldest_age_seconds in rowq status --json.
oldest_s()
{
	"$ROWQ" -c "$1" status --json email 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
q = d["queues"][0] if isinstance(d.get("queues"), list) else d["queues"]["email"]
print(q["oldest_age_seconds"])'
}

for zone in server UTC; do
	email_config "$zone.yaml" "[/bin/true]" "age: created_at" "time_zone: $zone"
	sed -i "s/SELECT id, recipient, subject, attempts FROM email/SELECT id, recipient, subject, attempts, created_at FROM email/" "$zone.yaml"
	sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/$zone.sock\nqueues:|" "$zone.yaml"
	"$ROWQ" -c "$zone.yaml" check >check.out 2>&1 || fail "$zone: check: $(cat check.out)"
done
age=$(oldest_s server.yaml)
assert_ge "$age" $((2 * 3600 + 290)) "time_zone: server: the age read in +02:00"
assert_le "$age" $((2 * 3600 + 330)) "time_zone: server: the age read in +02:00"
age=$(oldest_s UTC.yaml)
assert_ge "$age" 290 "time_zone: UTC: the age"
assert_le "$age" 330 "time_zone: UTC: the age"
assert_match "email +3 +- +5m" "$("$ROWQ" -c UTC.yaml status email 2>&1)" "time_zone: UTC: OLDEST in the table"
