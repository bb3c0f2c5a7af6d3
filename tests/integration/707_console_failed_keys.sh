#!/usr/bin/env bash
# The failed rows page posts back each row's key exactly as stored: an
# operator who discards the row shown with a planted key ('victim' and a
# control character, which the page shows much as 'victim') discards
# that row, never the row 'victim' (the server's comparison ignores
# trailing spaces); binary keys, two of which are equal up to a zero
# byte, are requeued and discarded one by one, through the confirmation
# of a bulk action too.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/console.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
# A collation that sees CHAR(1) (MariaDB 11.8's default, uca1400, does
# not) and pads with spaces ('victim ' = 'victim'), on every server.
sql "CREATE TABLE jobs (k VARCHAR(64) CHARACTER SET utf8mb4
    COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, n INT NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    last_error TEXT NULL, INDEX (status, k)) ENGINE=InnoDB"
sql "INSERT INTO jobs VALUES ('victim', 1, 'failed', 'the victim''s own'),
    (CONCAT('victim', CHAR(1)), 2, 'failed', 'planted')"
sql "CREATE TABLE bk (id VARBINARY(16) NOT NULL PRIMARY KEY, n INT NOT NULL,
    status ENUM('waiting', 'done', 'failed') NOT NULL DEFAULT 'waiting',
    last_error TEXT NULL, INDEX (status, id)) ENGINE=InnoDB"
sql "INSERT INTO bk VALUES (UNHEX('6162007800'), 1, 'failed', 'first'),
    (UNHEX('6162007900'), 2, 'failed', 'second'),
    (UNHEX('ff00ff'), 3, 'failed', 'third')"
port=$(free_port)
CONSOLE=http://127.0.0.1:$port
console_users console.users
queue()
{
	cat <<YAML
  $1:
    select: SELECT $2 FROM $1 WHERE status = 'waiting' ORDER BY $2
    exec: [/bin/true]
    idle: 200ms
    done: UPDATE $1 SET status = 'done' WHERE $2 = :$2
    failed: UPDATE $1 SET status = 'failed' WHERE $2 = :$2
    failed_select: SELECT $2, n, last_error FROM $1 WHERE status = 'failed' ORDER BY n
    requeue: UPDATE $1 SET status = 'waiting' WHERE $2 = :$2 AND status = 'failed'
    discard: DELETE FROM $1 WHERE $2 = :$2 AND status = 'failed'
YAML
}
{
	cat <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: $ROWQ_TEST_TMP/rowq.sock
console:
  listen: 127.0.0.1:$port
  users_file: $ROWQ_TEST_TMP/console.users
queues:
YAML
	queue jobs k
	queue bk id
} >rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'
console_up
console_login a.jar alice
csrf=$(console_csrf a.jar /queue/jobs/failed)

# box QUEUE TEXT: the checkbox of the row whose cells hold TEXT, as the
# browser would post it: NAME=VALUE, for curl's --data-urlencode.
box()
{
	console_curl -b a.jar "$CONSOLE/queue/$1/failed" | python3 -c '
import html, re, sys
for line in sys.stdin:
    if "<td class=\"v\">%s</td>" % sys.argv[1] in line:
        m = re.search(r"name=\"(key[a-z_]*)\" value=\"([^\"]*)\"", line)
        print("%s=%s" % (m.group(1), html.unescape(m.group(2))))
        break
else:
    sys.exit("no row with " + sys.argv[1])' "$2"
}
code() { console_curl -o /dev/null -w '%{http_code}' "$@"; }
rows() { sql "SELECT GROUP_CONCAT(CONCAT(HEX($2), ':', status) ORDER BY n) FROM $1"; }

# ---- the planted text key ----
planted=$(box jobs planted)
echo "figure: the planted row's box posts $(printf '%s' "$planted" | od -An -c | tr -s ' ')"
assert_eq 303 "$(code -b a.jar --data "csrf=$csrf&action=discard" \
    --data-urlencode "$planted" "$CONSOLE/queue/jobs/failed")" "discard the planted row"
echo "figure: jobs after the discard: $(rows jobs k)"
assert_eq "76696374696D:failed" "$(rows jobs k)" "'victim' stays, the planted row is gone"
wait_until 5 'grep -q "alice (operator, from 127.0.0.1) discarded jobs: 1 row" rowq.log' ||
    fail "the discard is not logged"

# ---- binary keys: one requeued, two discarded after the confirmation ----
second=$(box bk second)
assert_eq 303 "$(code -b a.jar --data "csrf=$csrf&action=requeue" \
    --data-urlencode "$second" "$CONSOLE/queue/bk/failed")" "requeue the second binary key"
wait_until 5 '[ "$(rows bk id)" = "6162007800:failed,6162007900:done,FF00FF:failed" ]' ||
    fail "after the requeue of the second binary key: $(rows bk id)"
first=$(box bk first)
third=$(box bk third)
page=$(console_curl -b a.jar --data "csrf=$csrf&action=discard" --data-urlencode "$first" \
    --data-urlencode "$third" "$CONSOLE/queue/bk/failed")
assert_match 'id="confirm"' "$page" "a confirmation for two rows"
# What the confirmation posts: its hidden fields, as the browser sends them.
form=$(printf '%s' "$page" | python3 -c '
import html, re, sys, urllib.parse
fields = re.findall(r"<input type=\"hidden\" name=\"([a-z_]+)\" value=\"([^\"]*)\">", sys.stdin.read())
print(urllib.parse.urlencode([(k, html.unescape(v)) for k, v in fields]))')
assert_eq 303 "$(code -b a.jar --data "$form" "$CONSOLE/queue/bk/failed")" "discard confirmed"
assert_eq "6162007900:done" "$(rows bk id)" "the first and third binary keys discarded, the second kept"
