#!/usr/bin/env bash
# `rowq status QUEUE --by` in lease mode: a leased row leaves the select,
# so the rows the three workers hang on are counted in RUN only, never in
# WAIT as well; a running row whose group is NULL is its own group, shown
# though no waiting row has it; without failed_select, FAILED is unknown.
# A second daemon of one worker, both writing their rows in the daemons
# table: its leased row is in RUN from either daemon's socket, as of its
# last heartbeat.  A third, whose user may not ALTER the daemons table it
# names (made before the running column), says so once in its log and
# writes its row without it; a live row without running groups in that
# table is said not counted.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
sql "CREATE TABLE job (
    id INT NOT NULL PRIMARY KEY,
    batch VARCHAR(40) NULL,
    status ENUM('waiting', 'done') NOT NULL DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until DATETIME(6) NULL,
    INDEX (status, id)
) ENGINE=InnoDB"
sql "INSERT INTO job (id, batch) VALUES (1, 'b1'), (2, NULL), (3, 'b2'),
    (4, 'b1'), (5, 'b2'), (6, 'b3')"
cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
stop_timeout: 2s
status_socket: $ROWQ_TEST_TMP/rowq.sock
daemons_table: rowq_daemons
queues:
  job:
    workers: 3
    select: SELECT id, batch FROM job
            WHERE status = 'waiting'
              AND (leased_until IS NULL OR leased_until < UTC_TIMESTAMP(6))
            ORDER BY id
    group_by: batch
    exec: [$HANDLERS/fake, sleep, "120000", $ROWQ_TEST_TMP/handled]
    timeout: 5m
    idle: 200ms
    lease:
      duration: 1m
      claim: UPDATE job SET lease = :lease,
             leased_until = UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE WHERE id = :id
      renew: UPDATE job SET leased_until = UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE
             WHERE id = :id AND lease = :lease
    done: UPDATE job SET status = 'done', lease = NULL, leased_until = NULL
          WHERE id = :id AND lease = :lease
    failed: UPDATE job SET lease = NULL, leased_until = NULL
            WHERE id = :id AND lease = :lease
YAML
"$ROWQ" -c rowq.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || tail -n 20 "$ROWQ_TEST_TMP/rowq.log"'
wait_until 20 '[ "$(cat handled 2>/dev/null | wc -l)" -ge 3 ]' || fail "the workers did not start their rows"
assert_eq "1 2 3" "$(sed 's/ .*//' handled | sort -n | xargs)" "the rows the handlers hang on"
wait_until 10 '"$ROWQ" -c rowq.yaml status --json 2>/dev/null | grep -q "\"busy\":3"' ||
	fail "the three workers are not busy"
"$ROWQ" -c rowq.yaml status job --by --json >by.json 2>&1 || fail "status --by: $(cat by.json)"
python3 - by.json <<'PY' || fail "status --by in lease mode: $(cat by.json)"
import json, sys
v = json.load(open(sys.argv[1]))
got = [(g["group"], g["wait"], g["run"], g["failed"]) for g in v["groups"]]
assert got == [("b1", 1, 1, None), ("b2", 1, 1, None), (None, 0, 1, None),
               ("b3", 1, 0, None)], got
assert v["groups_total"] == 4 and v["groups_left_out"] == 0, v
# Its own row in the daemons table is not counted twice.
assert v["run_other_daemons"]["counted"] == 0, v
PY
"$ROWQ" -c rowq.yaml status job --by >by.out 2>&1 || fail "status --by: $(cat by.out)"
assert_match $'\nNULL +0 +1 +- +-\n' "$(cat by.out)" "the NULL group's line"

# A second daemon, one worker: it leases row 4 (b1).
sed "s|rowq.sock|d.sock|; s|workers: 3|workers: 1|" rowq.yaml >d.yaml
rowq_start d.yaml d.log
d=$ROWQ_PID
wait_until 20 '[ "$(cat handled | wc -l)" -ge 4 ]' || fail "the second daemon did not start its row"
assert_eq "1 2 3 4" "$(sed 's/ .*//' handled | sort -n | xargs)" "the rows the handlers hang on"
wait_until 25 '[ "$(sql_value "SELECT COUNT(*) FROM rowq_daemons
    WHERE busy > 0 AND running LIKE '"'%cut%'"'")" = 2 ]' ||
	fail "the daemons' rows never named their running groups: $(sql "SELECT pid, busy, running FROM rowq_daemons")"
for c in rowq d; do
	"$ROWQ" -c $c.yaml status job --by --json >by2.$c.json 2>&1 || fail "status --by ($c): $(cat by2.$c.json)"
done
python3 - by2.rowq.json by2.d.json <<'PY' || fail "status --by, two daemons, lease mode: $(cat by2.rowq.json by2.d.json)"
import json, sys
for f in sys.argv[1:]:
    v = json.load(open(f))
    got = [(g["group"], g["wait"], g["run"], g["failed"]) for g in v["groups"]]
    assert got == [("b1", 0, 2, None), ("b2", 1, 1, None), (None, 0, 1, None),
                   ("b3", 1, 0, None)], (f, got)
    assert v["run_other_daemons"]["counted"] == 1, v
PY

# A third, whose user may not ALTER the old daemons table it names.
sql "CREATE TABLE rowq_daemons_old (
  host VARCHAR(255) NOT NULL,
  pid INT UNSIGNED NOT NULL,
  version VARCHAR(32) NOT NULL,
  started DATETIME NOT NULL,
  busy INT UNSIGNED NOT NULL,
  workers INT UNSIGNED NOT NULL,
  console VARCHAR(255) NOT NULL DEFAULT '',
  seen DATETIME NOT NULL,
  PRIMARY KEY (host, pid)
) ENGINE=InnoDB"
sql "INSERT INTO rowq_daemons_old VALUES ('elsewhere', 1, 'old', NOW(), 1, 1, '', NOW())"
(umask 077; echo rowq726-password >pw)
sql "DROP USER IF EXISTS rowq726@localhost;
    CREATE USER rowq726@localhost IDENTIFIED BY 'rowq726-password';
    GRANT SELECT, INSERT, UPDATE, DELETE ON \`$ROWQ_TEST_DB\`.* TO rowq726@localhost"
sed "s|rowq.sock|c.sock|; s|workers: 3|workers: 1|; s|rowq_daemons|rowq_daemons_old|;
    s|user: root|user: rowq726, password_file: $ROWQ_TEST_TMP/pw|" rowq.yaml >c.yaml
grep -q "user: rowq726" c.yaml || fail "c.yaml: edit did not apply"
rowq_start c.yaml c.log
c=$ROWQ_PID
wait_until 20 '[ "$(sql_value "SELECT COUNT(*) FROM rowq_daemons_old WHERE busy = 1 AND host <> '"'elsewhere'"'")" = 1 ]' ||
	fail "the third daemon's row: $(sql "SELECT * FROM rowq_daemons_old"; cat c.log)"
assert_eq 1 "$(grep -c "daemons table rowq_daemons_old: cannot add the column running" c.log)" "the third daemon's warnings"
"$ROWQ" -c c.yaml status job --by --json >by3.json 2>&1 || fail "status --by (c): $(cat by3.json)"
python3 - by3.json <<'PY' || fail "status --by, a row without running groups: $(cat by3.json)"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["run_daemon_answered"] is True, v
o = v["run_other_daemons"]
assert o["counted"] == 0 and o["without_groups"] == 1, o
g = {x["group"]: (x["wait"], x["run"]) for x in v["groups"]}
assert g["b2"] == (0, 1), g
PY
"$ROWQ" -c c.yaml status job --by >by3.out 2>&1 || fail "status --by (c): $(cat by3.out)"
assert_match "\(RUN: 1 other daemon without running groups in the daemons table: not counted\)" \
    "$(cat by3.out)" "the note of the daemon without running groups"
for p in "$c" "$d"; do
	kill_wait 10 "$p"
	untrack_pid "$p"
done
