#!/usr/bin/env bash
# The examples in config/ work as shipped: schema.sql loads; `rowq check`
# accepts rowq.yaml with every queues.d/*.yaml it includes once its
# database section points at the test server; each queue's select is
# served by an index (no filesort, no full scan); and the example
# handlers keep their contract.
#
# The check runs on a copy of config/ in which only two things differ:
# the database section, and handler programs named /usr/local/bin/NAME,
# which must be config/handlers/NAME and are run from there.
. "$(dirname "$0")/../lib.sh"
db_start
db_create

src=$REPO_ROOT/config
copy=$ROWQ_TEST_TMP/config
cp -R "$src" "$copy"

sql <"$src/schema.sql" || fail "config/schema.sql does not load"

# Only the database section: socket, root, the test's database.  The
# password_file line goes with it.
awk -v sock="$ROWQ_TEST_SOCKET" -v db="$ROWQ_TEST_DB" '
	/^database:/ {
		print
		print "  socket: " sock
		print "  user: root"
		print "  name: " db
		skip = 1
		next
	}
	skip && /^  / { next }
	{ skip = 0; print }' "$src/rowq.yaml" >"$copy/rowq.yaml"
assert_eq 1 "$(grep -c '^database:' "$copy/rowq.yaml")" "database sections in the copy"

yamls=("$copy/rowq.yaml" "$copy"/queues.d/*.yaml)
for f in "${yamls[@]}"; do
	while read -r prog; do
		[ -x "$src/handlers/${prog##*/}" ] ||
		    fail "${f#"$copy"/} runs $prog, which is not in config/handlers"
	done < <(grep -o '/usr/local/bin/[A-Za-z0-9_.-]*' "$f" | sort -u)
	sed -i "s|/usr/local/bin/\([A-Za-z0-9_.-]*\)|$src/handlers/\1|g" "$f"
done

# Queues defined: each "  NAME:" under a top-level queues:, in every file.
queues=$(awk '
	FNR == 1 { q = 0 }
	/^queues:/ { q = 1; next }
	/^[^ #]/ { q = 0 }
	q && /^  [A-Za-z0-9_-]+:/ { n++ }
	END { print n + 0 }' "${yamls[@]}")
assert_ge "$queues" 2 "queues in the examples"

out=$("$ROWQ" -c "$copy/rowq.yaml" check 2>&1) ||
	fail "rowq check of the examples: $out"
# The verdict, and for each queue a claim plan that reads only the rows
# it returns: no warning.  Webhooks orders by due time on purpose, and
# gets the note on what a claim that is not from a cursor costs, and
# those on its limit (the table the first worker creates, the cost);
# webhooks_due (handler: none) its own note on that, and on MySQL the
# note that its empty table's plan (an index scan) is no larger one's.
assert_eq "$copy/rowq.yaml: ok, $queues queues" "$(tail -n 1 <<<"$out")" "rowq check verdict"
assert_eq "" "$(head -n -1 <<<"$out" | grep -v 'claim plan: .* reads only the rows it returns$' |
    grep -v 'queues.webhooks.select: the claim cannot scan the primary key from a cursor: the select orders by more than one column' |
    grep -v 'queues.webhooks_due.select: the claim does not scan the primary key from a cursor (the select orders by more than one column)' |
    grep -v 'queues.webhooks_due.select: claim plan: .* on a table of ~0 rows, whose plan is not that of a larger one' |
    grep -v 'queues.webhooks.limit: \(the limit table rowq_limit is not there yet\|what a claim takes\)' || true)" "rowq check warnings"

# Each select, as rowq claims with it, on tables where most rows are
# finished: the plan must walk an index in the select's order.  A new
# example table needs rows here too, or its plan means nothing.
sql "INSERT INTO email (recipient, subject, body, status)
    SELECT CONCAT('u', seq, '@example.com'), 's', 'b',
    IF(seq % 10 = 0, 'waiting', 'sent') FROM $(seq_rows 5000)"
sql "INSERT INTO webhooks (url, payload, state, next_try_at)
    SELECT 'https://example.com/hook', '{}',
    IF(seq % 10 = 0, 'pending', 'delivered'),
    NOW() - INTERVAL seq SECOND FROM $(seq_rows 5000)"
sql "INSERT INTO images (width, status)
    SELECT 100 + seq % 900, IF(seq % 10 = 0, 'waiting', 'done')
    FROM $(seq_rows 5000)"
sql "INSERT INTO video (source, status)
    SELECT CONCAT('/srv/video/', seq, '.mov'),
    IF(seq % 10 = 0, 'waiting', 'rendered') FROM $(seq_rows 5000)"
sql "INSERT INTO scheduled_webhooks (url, payload, send_at)
    SELECT 'https://example.com/hook', '{}',
    NOW() + INTERVAL (seq - 500) MINUTE FROM $(seq_rows 5000)"
sql "ANALYZE TABLE email, webhooks, images, video, scheduled_webhooks" >/dev/null

# The literal block after "select: |", to the first line indented less.
selects()
{
	awk '
		function flush() { if (s != "") printf "%s%c", s, 0; s = "" }
		inside && (/^ *$/ || match($0, /^ */) && RLENGTH >= ind) {
			s = s substr($0, ind + 1) "\n"
			next
		}
		inside { inside = 0; flush() }
		/^ +select: *\|/ {
			inside = 1
			match($0, /^ */)
			ind = RLENGTH + 2
		}
		END { flush() }' "$@"
}
n=0
while IFS= read -r -d '' select; do
	n=$((n + 1))
	plan=$(sql "EXPLAIN $select LIMIT 1 FOR UPDATE SKIP LOCKED") ||
	    fail "EXPLAIN failed: $select"
	if [[ $plan == *filesort* ]] || [ "$(cut -f4 <<<"$plan")" = ALL ] ||
	    [ "$(cut -f4 <<<"$plan")" = index ]; then
		fail "no index serves this select:
$select
EXPLAIN: $plan"
	fi
done < <(selects "${yamls[@]}")
assert_eq "$queues" "$n" "selects EXPLAINed"

# The handlers are POSIX sh.
for h in "$src"/handlers/*; do
	sh -n "$h" || fail "$h: not valid sh"
done

# send-email: 0 when sent, 65 for an address that cannot work, and a
# second run for the same key (a rolled-back try) sends nothing.
send()
{
	local status=0
	echo '{"id":1}' | ROWQ_QUEUE=email ROWQ_KEY=$1 ROWQ_ATTEMPT=$2 \
	    SEND_EMAIL_OUTBOX=$ROWQ_TEST_TMP/outbox \
	    "$src/handlers/send-email" "$3" 2>/dev/null || status=$?
	echo "$status"
}
assert_eq 0 "$(send 1 1 ann@example.com)" "send-email, good address"
assert_eq 0 "$(send 1 1 ann@example.com)" "send-email, the same key again"
assert_eq 1 "$(grep -c '^1 ' "$ROWQ_TEST_TMP/outbox")" "emails sent for key 1"
assert_eq 65 "$(send 2 1 'ann at example.com')" "send-email, bad address"
assert_eq 75 "$(send 3 1 bo@greylist.example)" "send-email, greylisted"
assert_eq 0 "$(send 3 3 bo@greylist.example)" "send-email, greylisted, try 3"
