#!/usr/bin/env bash
# How long `rowq status` takes on a 1,000,000-row table with the claim's
# index: 10,000 waiting rows among 990,000 finished ones.  Prints a table
# row per case, medians of 5 runs.  Run from the repository root after
# `make`; starts its own server like the tests do.
. "$(dirname "$0")/../tests/lib.sh"
db_start
db_create b_status
cd "$ROWQ_TEST_TMP"

sql "CREATE TABLE email (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    status ENUM('waiting', 'sent', 'failed') NOT NULL DEFAULT 'waiting',
    attempts INT NOT NULL DEFAULT 0,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    INDEX (status, id)
) ENGINE=InnoDB"
start=$(now_us)
sql "INSERT INTO email (status, created_at)
    SELECT IF(seq % 100 = 0, 'waiting', IF(seq % 1000 = 1, 'failed', 'sent')),
    NOW() - INTERVAL (1000000 - seq) SECOND FROM $(seq_rows 1000000)"
sql "ANALYZE TABLE email" >/dev/null
fill=$(( ($(now_us) - start) / 1000 ))

cat >rowq.yaml <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
status_socket: $ROWQ_TEST_TMP/none.sock
queues:
  email:
    select: SELECT id, attempts, created_at FROM email
            WHERE status = 'waiting' ORDER BY id
    exec: [/bin/true]
    done: UPDATE email SET status = 'sent' WHERE id = :id
    failed: UPDATE email SET status = 'failed' WHERE id = :id
    age: created_at
    failed_count: SELECT COUNT(*) FROM email WHERE status = 'failed'
YAML

median()
{
	sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

time_status()
{
	local i t
	for i in 1 2 3 4 5; do
		t=$(now_us)
		"$ROWQ" -c rowq.yaml status "$@" >/dev/null 2>&1 || true
		echo $(( ($(now_us) - t) / 1000 ))
	done | median
}

echo "| case | ms (median of 5) |"
echo "|---|---:|"
echo "| fill 1,000,000 rows (once) | $fill |"
echo "| rowq status, 10,000 waiting in 1,000,000 rows | $(time_status) |"
echo "| rowq status --json, same | $(time_status --json) |"
"$ROWQ" -c rowq.yaml status 2>&1 | sed -n 1,2p | sed 's/^/    /'
