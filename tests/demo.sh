#!/usr/bin/env bash
# `make demo`: rowq working the example email queue of config/rowq.yaml
# on a throwaway MariaDB server, in about fifteen seconds.
#
# It starts a private server (nothing of the machine's own MariaDB is
# touched), loads config/schema.sql, inserts 30 emails, runs `rowq run`
# with the example configuration and the example handler
# config/handlers/send-email until every email is sent or failed, and
# shows what happened.  Everything it started or wrote goes away at exit.

# The Makefile runs us with sh; the rest of this file needs bash.
if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"
fi

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

CONFIG_DIR=$REPO_ROOT/config
DEMO_DB=rowq_demo
demo_config=$ROWQ_TEST_TMP/rowq.yaml
demo_log=$ROWQ_TEST_TMP/rowq.log
export SEND_EMAIL_OUTBOX=$ROWQ_TEST_TMP/outbox

step()
{
	printf '\n== %s\n\n' "$*"
}

# Indented, so that what the programs say stands apart from the narration.
show()
{
	sed 's/^/    /'
}

table()
{
	mariadb --no-defaults -S "$ROWQ_TEST_SOCKET" -uroot -t -e "$1" \
	    "$DEMO_DB" | show
}

[ -x "$ROWQ" ] || fail "no rowq binary at $ROWQ: run make rowq first"

cat <<'EOF'
rowq demo: the email queue of config/rowq.yaml on a throwaway MariaDB
server.  30 emails are queued; three are for a greylisting mail server,
which refuses the first two tries, and three have addresses that can never
work.  The example handler, config/handlers/send-email, pretends to send.
EOF

step "Starting a throwaway MariaDB server"
db_start
db_create "$DEMO_DB"
echo "Socket $ROWQ_TEST_SOCKET, database $DEMO_DB."

step "Loading config/schema.sql and queueing 30 emails"
sql <"$CONFIG_DIR/schema.sql"
# Most addresses are fine.  Three are at a greylisting server, which
# refuses the first two tries (send-email exits 75) and takes the third;
# three can never work (send-email exits 65).
sql "INSERT INTO email (recipient, subject, body)
    SELECT CASE seq
	WHEN 5 THEN 'dana@greylist.example'
	WHEN 12 THEN 'eve@greylist.example'
	WHEN 21 THEN 'finn@greylist.example'
	WHEN 8 THEN 'gus@example'
	WHEN 17 THEN 'hal at example.com'
	WHEN 26 THEN 'ida@shop.invalid'
	ELSE CONCAT('customer', seq, '@example.com') END,
    CONCAT('Your order #', 1000 + seq), 'Thank you for your order.'
    FROM $(seq_rows 30)"
table "SELECT status, COUNT(*) AS emails FROM email GROUP BY status"

step "The demo configuration: config/rowq.yaml with these changes"
# The database section points at the throwaway server, the status socket
# and the handler's outbox are in the demo's directory (a handler sees only
# the environment that env: names), the handler is the example in
# config/handlers, retries come sooner so that the demo ends quickly, and
# the webhooks queue (include:) is left out: it needs the network.
awk -v sock="$ROWQ_TEST_SOCKET" -v db="$DEMO_DB" \
    -v status="$ROWQ_TEST_TMP/rowq.sock" -v outbox="$SEND_EMAIL_OUTBOX" '
	/^database:/ {
		print
		print "  socket: " sock
		print "  user: root"
		print "  name: " db
		print "status_socket: " status
		skip = 1
		next
	}
	skip && /^  / { next }
	/^    exec: / {
		print
		print "    env: [{SEND_EMAIL_OUTBOX: " outbox "}]"
		next
	}
	{ skip = 0; print }' "$CONFIG_DIR/rowq.yaml" |
    sed -e "s|/usr/local/bin/send-email|$CONFIG_DIR/handlers/send-email|" \
	-e '/^include:/d' \
	-e 's/^\(      delay:\) 10s/\1 1s/' \
	-e 's/^\(    idle:\) 2s   /\1 250ms/' >"$demo_config"
diff -U0 "$CONFIG_DIR/rowq.yaml" "$demo_config" | tail -n +3 |
    grep -v '^@@' | show || true

step "rowq check: the configuration against the database"
"$ROWQ" -c "$demo_config" check 2>&1 | show

step "rowq run, until every email is sent or failed"
start=$SECONDS
"$ROWQ" -c "$demo_config" run >"$demo_log" 2>&1 &
ROWQ_PID=$!
track_pid "$ROWQ_PID"
on_exit '[ $? -eq 0 ] || { echo "rowq log:"; show <"$demo_log"; }'
final()
{
	[ "$(sql "SELECT COUNT(*) FROM email WHERE status = 'waiting'")" = 0 ]
}
wait_until 25 final ||
    fail "emails still waiting after 25 s: $(sql "SELECT id, attempts FROM email WHERE status = 'waiting'")"
echo "All 30 emails final after $((SECONDS - start)) s; stopping rowq (SIGTERM)."
kill -TERM "$ROWQ_PID"
status=0
wait "$ROWQ_PID" || status=$?
untrack_pid "$ROWQ_PID"
[ "$status" -eq 0 ] || fail "rowq run exited with status $status"

step "What happened, by status (attempts counts every try)"
table "SELECT status, COUNT(*) AS emails, SUM(attempts) AS tries
    FROM email GROUP BY status ORDER BY status"
echo "The emails that did not go through on the first try:"
table "SELECT id, recipient, status, attempts, last_error FROM email
    WHERE status <> 'sent' OR attempts > 1 ORDER BY id"

step "rowq's log (standard error; the journal's, under systemd)"
# Without the date, which is today's.
sed 's/^[0-9]\{4\}-[0-9]\{2\}-[0-9]\{2\} //' "$demo_log" | show

step "The pretend outbox ($SEND_EMAIL_OUTBOX)"
sent=$(sql "SELECT COUNT(*) FROM email WHERE status = 'sent'")
failed=$(sql "SELECT COUNT(*) FROM email WHERE status = 'failed'")
lines=$(wc -l <"$SEND_EMAIL_OUTBOX")
twice=$(cut -d' ' -f1 "$SEND_EMAIL_OUTBOX" | sort | uniq -d | wc -l)
head -n 3 "$SEND_EMAIL_OUTBOX" | cut -c1-150 | show
echo "    ..."
echo "$lines emails in the outbox, $twice of them more than once;" \
    "$sent rows sent and $failed failed in the table."
if [ "$sent" != 27 ] || [ "$failed" != 3 ] || [ "$lines" != 27 ] ||
    [ "$twice" != 0 ]; then
	fail "expected 27 emails sent once each and 3 failed"
fi

cat <<'EOF'

The greylisted emails were tried again after a delay and sent on their
third try; the bad addresses failed at once (exit status 65) without
retries; and no email went out twice.

Next: man/rowq.8 and man/rowq.yaml.5 (man -l man/rowq.8), and
config/rowq.yaml to start a configuration of your own.  The server and
everything the demo wrote are removed now.
EOF
