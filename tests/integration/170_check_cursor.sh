#!/usr/bin/env bash
# `rowq check` and the claim that scans the primary key from a cursor: for
# the README's select, `-d` shows the fast claim, the fallback's start and
# the fallback claim, and each of them runs on the server as shown; a
# select of another shape (ORDER BY another column, DESC, a join, a
# primary key of two columns or of text) gets one note under `rowq
# check` that names the reason, what today's claim costs and the shape
# that avoids it.  Neither changes check's exit status.  A select claimed
# by key shows, with -d, the list of keys the workers read, at most
# 10,000.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

email_table 5
sql "UPDATE email SET status = 'sent' WHERE id = 1"

# check_ok NAME [-d]: run check, which must exit 0; its output in $out.
check_ok()
{
	local name=$1 status=0
	shift
	out=$("$ROWQ" -c q.yaml "$@" check 2>&1) || status=$?
	assert_eq 0 "$status" "$name: exit status of check ($out)"
	assert_match "q.yaml: ok, 1 queue" "$out" "$name: check output"
}

email_config q.yaml "[/bin/true]"
line=$(grep -n '^    select:' q.yaml | cut -d: -f1)
where="q.yaml:$line: queues.email.select"

# derived WHAT: the statement -d showed after "WHAT: ".
derived()
{
	local l
	l=$(grep -F "$where: $1: " <<<"$out") || fail "no '$1' line in: $out"
	printf '%s\n' "${l#*"$where: $1: "}"
}

# ---- the README's select: derived, shown with -d, and they run ----
email_config q.yaml "[/bin/true]"
check_ok readme
case $out in *cursor*) fail "readme: check without -d talks of the cursor: $out" ;; esac
check_ok "readme -d" -d
assert_match "$where: the claim scans the primary key of email from a cursor" "$out" "readme: said"
fast=$(derived claim)
first=$(derived "fallback, first (locks nothing)")
then=$(derived "fallback, then")
assert_eq "SELECT id, recipient, subject, attempts FROM email FORCE INDEX (PRIMARY) WHERE id > ? AND (status = 'waiting' AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED" "$fast" "readme: the fast claim"
assert_eq "SELECT id FROM email WHERE status = 'waiting' AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP()) ORDER BY id LIMIT 1" "$first" "readme: the fallback's start"
assert_eq "${fast/id > ?/id >= ?}" "$then" "readme: the fallback claim"
# As the server runs them: row 1 is sent, so 2 is the first waiting.
assert_eq 2 "$(sql_value "$first")" "readme: the start"
assert_eq 3 "$(sql "BEGIN; ${fast/\?/2}; ROLLBACK" | cut -f1)" "readme: fast claim after 2"
assert_eq 2 "$(sql "BEGIN; ${then/\?/2}; ROLLBACK" | cut -f1)" "readme: fallback claim from 2"

# ---- the cursor is per batch; an alias, backquotes and a hint ----
email_config q.yaml "[/bin/true]" "batch: 10"
sed -i -e 's/FROM email$/FROM `email` AS e FORCE INDEX (status)/' \
    -e 's/^      ORDER BY id$/      ORDER BY `e`.`id`/' q.yaml
check_ok "alias -d" -d
fast=$(derived claim)
first=$(derived "fallback, first (locks nothing)")
assert_match 'FROM `email` AS e FORCE INDEX \(PRIMARY\) WHERE `e`.`id` > \? AND' "$fast" "alias: the fast claim"
assert_match 'LIMIT 10 FOR UPDATE SKIP LOCKED$' "$fast" "alias: batch 10"
assert_match 'FROM `email` AS e FORCE INDEX \(status\) WHERE' "$first" "alias: the start keeps the hint"
assert_eq "3 4 5" "$(sql "BEGIN; ${fast/\?/2}; ROLLBACK" | cut -f1 | xargs)" "alias: a batch after 2"

# ---- other shapes: one note under check, with the reason ----
# refused NAME REASON: check notes once, naming the reason and the costs.
refused()
{
	check_ok "$1"
	assert_match "$where: the claim cannot scan the primary key from a cursor: the select $2" "$out" "$1: the reason"
	assert_match "locked until the worker commits" "$out" "$1: the locks"
	assert_match "delete-marked index entry" "$out" "$1: purge"
	assert_match "ordered by its integer primary key ascending \(ORDER BY id\)" "$out" "$1: the shape that avoids it"
	assert_eq 1 "$(grep -c 'cannot scan the primary key' <<<"$out")" "$1: said once"
}

email_config q.yaml "[/bin/true]"
sed -i 's/^      ORDER BY id$/      ORDER BY status, id/' q.yaml
refused "ORDER BY status, id" "orders by more than one column"

# A select whose claim sorts is claimed by key (keyed.c): no note.
email_config q.yaml "[/bin/true]"
sed -i 's/^      ORDER BY id$/      ORDER BY subject/' q.yaml
check_ok "ORDER BY subject"
assert_match "$where: claims lock by key" "$out" "ORDER BY subject: by key"
assert_eq 0 "$(grep -c 'cannot scan the primary key' <<<"$out")" "ORDER BY subject: no note"
# The list -d shows is the workers': 1,000 claims of every worker, 10,000
# keys at most.
check_ok "ORDER BY subject -d" -d
assert_match "LIMIT 2000\$" "$(derived "list (locks nothing)")" "by key: the list, 2 workers"
WORKERS=6 email_config q.yaml "[/bin/true]" "batch: 10"
sed -i 's/^      ORDER BY id$/      ORDER BY subject/' q.yaml
check_ok "ORDER BY subject, batch 10 -d" -d
assert_match "LIMIT 10000\$" "$(derived "list (locks nothing)")" "by key: the list, 6 workers of batch 10"

email_config q.yaml "[/bin/true]"
sed -i 's/^      ORDER BY id$/      ORDER BY id DESC/' q.yaml
refused "DESC" "orders by id DESC, not ascending"

sql "CREATE TABLE hold (id BIGINT PRIMARY KEY, note TEXT)"
email_config q.yaml "[/bin/true]"
sed -i 's/FROM email$/FROM email LEFT JOIN hold h USING (id)/' q.yaml
refused join "joins tables"

# The primary key: what only the database knows.
sql "ALTER TABLE email DROP PRIMARY KEY, ADD PRIMARY KEY (id, recipient)"
email_config q.yaml "[/bin/true]"
refused "two-column key" "reads email, whose primary key has more than one column"

sql "ALTER TABLE email DROP PRIMARY KEY, MODIFY id VARCHAR(20) NOT NULL, ADD PRIMARY KEY (id)"
refused "text key" "orders by a primary key that is not an integer column \(varchar\)"
