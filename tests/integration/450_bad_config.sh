#!/usr/bin/env bash
# Bad input in the configuration: refused with FILE:LINE and exit 78, never
# a crash (the binary under test is the ASan build in `make check`).
#   1. The fuzz corpus (tests/fuzz/corpus) replayed through config_load
#      with ASan and UBSan, leaks checked at exit.
#   2. Hostile YAML made here: "billion laughs", nesting 200 deep, a 70 kB
#      scalar, a 2 MB file, a NUL byte, Latin-1, random bytes, an empty
#      file, a directory, /dev/zero, an include loop, a BOM.
#   3. SQL: parameters next to `::`, `:=`, colons in strings, backtick
#      identifiers with colons and comments work as written (checked on
#      the rows); a syntax error, a column the table lacks, LIMIT, FOR
#      UPDATE, `?`, two statements and an unknown parameter are refused
#      by `rowq check` and by `rowq run` before any worker starts.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

# ---- 1. the fuzz corpus ----
make --no-print-directory -s -C "$REPO_ROOT" build/fuzz/replay_config >make.out 2>&1 ||
	fail "building the corpus replay: $(cat make.out)"
corpus=("$TESTS_DIR"/fuzz/corpus/*)
TMPDIR=$ROWQ_TEST_TMP "$REPO_ROOT/build/fuzz/replay_config" "${corpus[@]}" >replay.out 2>replay.err </dev/null ||
	fail "corpus replay: $(grep -A20 -E 'Sanitizer|runtime error' replay.err | head -40)"
! grep -qE 'Sanitizer|runtime error' replay.err || fail "corpus replay: $(grep -A20 -E 'Sanitizer|runtime error' replay.err | head -40)"
assert_eq "replay: ${#corpus[@]} inputs" "$(cat replay.out)" "corpus inputs loaded"
figure "fuzz corpus inputs replayed under ASan" "${#corpus[@]}"

# ---- 2. hostile YAML ----

# refused FILE PATTERN: `rowq check` exits 78 with PATTERN in its stderr,
# every line of which is FILE:LINE: or names FILE, and no sanitizer spoke.
refused()
{
	local f=$1 pattern=$2 status=0 out
	out=$("$ROWQ" -c "$f" check 2>&1 </dev/null) || status=$?
	! grep -qE 'Sanitizer|runtime error' <<<"$out" || fail "$f: $out"
	assert_eq 78 "$status" "exit status of check $f ($(head -c 300 <<<"$out"))"
	assert_match "$pattern" "$out" "message for $f"
}

python3 - <<'PY'
import os
w = lambda n, b: open(n, 'wb').write(b)
w('laughs.yaml', b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
  b'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n'
  b'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\nqueues: *d\n')
w('deep.yaml', b'queues:\n  q: ' + b'[' * 200 + b']' * 200 + b'\n')
w('scalar.yaml', b'queues:\n  q:\n    select: "' + b'x' * 70000 + b'"\n')
w('big.yaml', b'# ' + b'x' * 2000000 + b'\nqueues: {}\n')
w('nul.yaml', b'queues:\n  q:\n    select: "SELECT\x00 1"\n')
w('latin1.yaml', b'queues:\n  caf\xe9:\n    select: SELECT 1\n')
w('random.yaml', os.urandom(4096))
w('empty.yaml', b'')
w('loop_a.yaml', b'include: loop_b.yaml\nqueues: {}\n')
w('loop_b.yaml', b'include: loop_a.yaml\n')
PY
mkdir -p dir.yaml
refused laughs.yaml 'laughs.yaml:[0-9]+: .*alias'
refused deep.yaml 'deep.yaml:[0-9]+: .*(deep|nest)'
refused scalar.yaml 'scalar.yaml:3: .*(long|large|bytes)'
refused big.yaml 'big.yaml: larger than [0-9]+ bytes'
refused nul.yaml 'nul.yaml:[0-9]+: '
refused latin1.yaml 'latin1.yaml:[0-9]*:? .*UTF-8'
refused random.yaml 'random.yaml:[0-9]+: '
refused empty.yaml 'empty.yaml:[0-9]+: queues: no queue is defined'
refused dir.yaml 'dir.yaml: not a regular file'
refused /dev/zero '/dev/zero: not a regular file'
refused loop_a.yaml 'loop_a.yaml:[0-9]+: queues: no queue is defined'

# A byte order mark is allowed by YAML: the file works as without it.
email_table 3
email_config plain.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/bom.handled]"
{ printf '\357\273\277'; cat plain.yaml; } >bom.yaml
out=$("$ROWQ" -c bom.yaml check 2>&1) || fail "check of a config with a BOM: $out"
assert_match "bom.yaml: ok, 1 queue" "$out" "check of a config with a BOM"

# ---- 3. SQL ----
sql "ALTER TABLE email ADD \`note:x\` VARCHAR(200) NULL"
# Colons that are not parameters, all in one done statement; its result
# is checked on the rows.
email_config sql.yaml "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/sql.handled]"
python3 - <<'PY'
s = open('sql.yaml').read()
done = s[s.index('    done:'):s.index('    retry:')]
new = '''    done: |
      UPDATE email /* :not_a_param */ SET status = 'sent', attempts = attempts + 1,
        done_count = done_count + 1,   -- :nor_this
        `note:x` = CONCAT('at 10:30 :x ', "dq :y ", 'a::b ', (@v := :id), ' ', CAST(:id AS CHAR))
      WHERE `id` = :id  # :comment
'''
open('sql.yaml', 'w').write(s.replace(done, new))
PY
out=$("$ROWQ" -c sql.yaml check 2>&1) || fail "check of the colon statement: $out"
"$ROWQ" -c sql.yaml drain email >drain.out 2>drain.err || fail "drain: $(cat drain.err)"
assert_exactly_once 3
assert_eq "at 10:30 :x dq :y a::b 2 2" "$(sql_value "SELECT \`note:x\` FROM email WHERE id = 2")" "value the statement wrote"

# refused_sql NAME FROM TO PATTERN [run]: a config with one edit, refused
# by check (and by run, before any worker starts) with PATTERN.
refused_sql()
{
	local name=$1 from=$2 to=$3 pattern=$4 status
	email_config "$name.yaml" "[$HANDLERS/fake, append, $ROWQ_TEST_TMP/never]"
	FROM=$from TO=$to python3 -c '
import os, sys
s = open(sys.argv[1]).read()
assert os.environ["FROM"] in s, os.environ["FROM"]
open(sys.argv[1], "w").write(s.replace(os.environ["FROM"], os.environ["TO"], 1))' "$name.yaml"
	refused "$name.yaml" "$name.yaml:[0-9]+: $pattern"
	if [ -n "${5:-}" ]; then
		status=0
		"$ROWQ" -c "$name.yaml" run >"$name.run" 2>&1 </dev/null || status=$?
		assert_eq 78 "$status" "exit status of run $name.yaml"
	fi
	[ ! -e never ] || fail "$name: a handler ran"
}
sql "UPDATE email SET status = 'waiting'"
refused_sql syntax "attempts = attempts + 1, last_error" "attempts = attempts +, last_error" \
    'queues.email.retry.update: .*SQL syntax' run
refused_sql nocolumn "SELECT id, recipient" "SELECT id, no_such_column, recipient" \
    "queues.email.select: .*Unknown column 'no_such_column'"
refused_sql limit "ORDER BY id" "ORDER BY id LIMIT 5" 'queues.email.select: .*LIMIT'
refused_sql forupdate "ORDER BY id" "ORDER BY id FOR UPDATE" 'queues.email.select: .*locking clause'
refused_sql positional "WHERE id = :id" "WHERE id = ?" "queues.email.done: .*positional"
refused_sql twostatements "WHERE id = :id" "WHERE id = :id; DELETE FROM email" 'queues.email.done: .*one statement'
refused_sql unknownparam "WHERE id = :id" "WHERE id = :idd" 'queues.email.done: :idd is not a column' run
assert_eq 3 "$(email_count "status = 'waiting' AND done_count = 1")" "rows untouched by the refused configs"
figure "hostile YAML files refused with FILE:LINE" 11
figure "bad SQL statements refused before any worker" 7
