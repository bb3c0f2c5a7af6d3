#!/usr/bin/env bash
# `rowq check` with schedules: each insert prepared on the server, its
# errors with FILE:LINE: key, exit 78, and `rowq run` refusing the same;
# a schedule table of the wrong shape refused, a missing one noted; the
# next three slots of each schedule printed; a drain runs no schedule.
# And the cron fuzz corpus (tests/fuzz/corpus_cron) replayed under ASan.
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE report (id INT AUTO_INCREMENT PRIMARY KEY, slot DATETIME)"

# config FILE INSERT [TOP-LEVEL LINE]
config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
${3:-}
schedules:
  nightly:
    cron: "0 3 * * *"
    timezone: Europe/Paris
    insert: $2
  new-year:
    cron: "@yearly"
    insert: INSERT INTO report (slot) VALUES (:slot)
YAML
}

config good.yaml "INSERT INTO report (slot) VALUES (:slot)"
out=$("$ROWQ" -c good.yaml check 2>&1) || fail "check of a good config: $out"
assert_match "good.yaml: ok, 0 queues, 2 schedules" "$out"
assert_match "schedule_table: rowq_schedule does not exist yet: the first rowq run creates it" "$out"
d1=$(TZ=Europe/Paris date -d "$( [ "$(TZ=Europe/Paris date +%H)" -lt 3 ] && echo today || echo tomorrow) 03:00" +%F)
d2=$(date -d "$d1 + 1 day" +%F) d3=$(date -d "$d1 + 2 days" +%F)
assert_match "schedules.nightly: next slots $d1 03:00 Europe/Paris, $d2 03:00 Europe/Paris, $d3 03:00 Europe/Paris" "$out"
y=$(( $(date -u +%Y) + 1 ))
assert_match "schedules.new-year: next slots $y-01-01 00:00 UTC, $((y + 1))-01-01 00:00 UTC, $((y + 2))-01-01 00:00 UTC" "$out"

# expect_78 FILE PATTERN: check refuses FILE, saying PATTERN.
expect_78()
{
	local status=0 out
	out=$("$ROWQ" -c "$1" check 2>&1) || status=$?
	assert_eq 78 "$status" "exit status of check $1 ($out)"
	assert_match "$2" "$out" "message of check $1"
}
config column.yaml "INSERT INTO report (slot, kind) VALUES (:slot, 'x')"
expect_78 column.yaml "column.yaml:7: schedules.nightly.insert: Unknown column 'kind'"
config table.yaml "INSERT INTO reports (slot) VALUES (:slot)"
expect_78 table.yaml "table.yaml:7: schedules.nightly.insert: Table '$ROWQ_TEST_DB.reports' doesn't exist"
config syntax.yaml "INSERT INTO report slot VALUES (:slot)"
expect_78 syntax.yaml "syntax.yaml:7: schedules.nightly.insert: .*SQL syntax"
sql "CREATE TABLE odd (name INT PRIMARY KEY)"
config odd.yaml "INSERT INTO report (slot) VALUES (:slot)" "schedule_table: odd"
expect_78 odd.yaml "odd.yaml: schedule_table: odd: Unknown column 'last_slot'"

# run refuses a bad insert before it starts anything.
status=0
"$ROWQ" -c column.yaml run >run.log 2>&1 || status=$?
assert_eq 78 "$status" "exit status of run with a bad insert"
assert_match "schedules.nightly.insert: Unknown column 'kind'" "$(cat run.log)"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM report")" "rows inserted"

# A drain works its queues and runs no schedule.
sql "CREATE TABLE job (id INT PRIMARY KEY, done INT NOT NULL DEFAULT 0,
    INDEX (done, id));
    INSERT INTO job (id) VALUES (1), (2), (3)"
config drain.yaml "INSERT INTO report (slot) VALUES (:slot)"
cat >>drain.yaml <<YAML
queues:
  job:
    select: SELECT id FROM job WHERE done = 0 ORDER BY id
    exec: [/bin/true]
    done: UPDATE job SET done = 1 WHERE id = :id
    failed: UPDATE job SET done = 2 WHERE id = :id
YAML
timeout 30 "$ROWQ" -c drain.yaml drain job >drain.log 2>&1 ||
	fail "drain with schedules: $(cat drain.log)"
assert_eq 3 "$(sql_value "SELECT SUM(done) FROM job")" "rows the drain did"
assert_eq 0 "$(sql_value "SELECT COUNT(*) FROM report")" "slots a drain inserted"

# The cron fuzz corpus, under ASan and UBSan.
make --no-print-directory -s -C "$REPO_ROOT" build/fuzz/replay_cron >make.out 2>&1 ||
	fail "building the corpus replay: $(cat make.out)"
corpus=("$TESTS_DIR"/fuzz/corpus_cron/*)
"$REPO_ROOT/build/fuzz/replay_cron" "${corpus[@]}" >replay.out 2>replay.err </dev/null ||
	fail "corpus replay: $(grep -A20 -E 'Sanitizer|runtime error' replay.err | head -40)"
! grep -qE 'Sanitizer|runtime error' replay.err ||
	fail "corpus replay: $(grep -A20 -E 'Sanitizer|runtime error' replay.err | head -40)"
assert_eq "replay: ${#corpus[@]} inputs" "$(cat replay.out)" "corpus inputs replayed"
echo "figure: cron fuzz corpus inputs replayed under ASan: ${#corpus[@]}"
