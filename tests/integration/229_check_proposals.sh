#!/usr/bin/env bash
# What `rowq check` proposes runs, and what it says of lease mode is so:
#   1. a table and columns named with reserved words (Set, Key), read
#      through an alias: the ALTER TABLE it proposes is quoted where SQL
#      needs it and names the table, not the alias; pasted into the
#      server it runs, and the claim's plan then reads only the rows it
#      returns;
#   2. a well-indexed lease queue whose select orders by two columns (no
#      cursor): --strict passes, with a note, not the warning about rows
#      kept locked while the handler runs (the lease claim commits at
#      once).
. "$(dirname "$0")/../lib.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

# ---- 1. reserved words, an alias ----
sql 'CREATE TABLE `Set` (
    `Id` BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    `Key` VARCHAR(50) NOT NULL,
    `Score` DOUBLE NOT NULL DEFAULT 0,
    `Value` TEXT NULL
) ENGINE=InnoDB'
sql "INSERT INTO \`Set\` (\`Key\`, \`Score\`) SELECT 'jobs', seq % 7
    FROM $(seq_rows 3000); ANALYZE TABLE \`Set\`" >/dev/null
cat >set.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  job:
    select: SELECT s.\`Id\`, s.\`Value\` FROM \`Set\` AS s
            WHERE s.\`Key\` = 'jobs' ORDER BY s.\`Score\`, s.\`Id\`
    exec: [/bin/true]
    done: DELETE FROM \`Set\` WHERE \`Id\` = :Id
    failed: DELETE FROM \`Set\` WHERE \`Id\` = :Id
YAML
out=$("$ROWQ" -c set.yaml check --strict 2>&1) && fail "1: --strict passed a sorting select: $out"
alter=$(grep -o 'ALTER TABLE [^;]*' <<<"$out" | head -n 1)
assert_eq 'ALTER TABLE `Set` ADD INDEX Key_Score_Id (`Key`, Score, Id)' "$alter" "1: the index proposed"
assert_match 'write ORDER BY Id, which rowq claims from a cursor' "$out" "1: the order proposed"
sql "$alter; ANALYZE TABLE \`Set\`" >/dev/null || fail "1: the proposed SQL does not run: $alter"
out=$("$ROWQ" -c set.yaml check 2>&1) || fail "1: check after the index: $out"
assert_match "queues.job.select: claim plan: (range|ref) on index Key_Score_Id, reads only the rows it returns" "$out" "1: the plan once the index is there"

# ---- 2. a well-indexed lease queue ----
sql "CREATE TABLE job (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    queue VARCHAR(50) NOT NULL,
    priority INT NOT NULL DEFAULT 0,
    status VARCHAR(20) NOT NULL DEFAULT 'waiting',
    lease CHAR(32) NULL,
    leased_until BIGINT NOT NULL DEFAULT 0,
    attempts INT NOT NULL DEFAULT 0,
    INDEX waiting (queue, status, priority, id)
) ENGINE=InnoDB"
sql "INSERT INTO job (queue, priority) SELECT 'default', seq % 5
    FROM $(seq_rows 3000); ANALYZE TABLE job" >/dev/null
cat >lease.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  job:
    workers: 2
    select: SELECT id, attempts FROM job WHERE queue = 'default'
            AND status = 'waiting' AND leased_until < UNIX_TIMESTAMP()
            ORDER BY priority, id
    exec: [/bin/true]
    lease:
      claim: UPDATE job SET lease = :lease,
             leased_until = UNIX_TIMESTAMP() + :duration WHERE id = :id
      duration: 30s
    done: UPDATE job SET status = 'done', lease = NULL
          WHERE id = :id AND lease = :lease
    retry:
      max_attempts: 3
      attempts_column: attempts
      update: UPDATE job SET attempts = attempts + 1, lease = NULL,
              leased_until = 0 WHERE id = :id AND lease = :lease
    failed: UPDATE job SET status = 'failed' WHERE id = :id AND lease = :lease
YAML
out=$("$ROWQ" -c lease.yaml check --strict 2>&1) || fail "2: --strict: $out"
assert_match "in lease mode the rows it reads and rejects are locked only until the claim commits" "$out" "2: the note"
assert_eq "" "$(grep 'while the handler runs' <<<"$out" || true)" "2: no word of rows locked while the handler runs"
