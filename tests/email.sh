# shellcheck shell=bash
# The design article's email queue, for integration tests.  Sourced after
# lib.sh, once db_create has run.
#
#   email_table N [COLUMNS]  the table, with N waiting rows and the index
#                            that keeps the claim on two rows per claim
#                            (or an index on COLUMNS, to test a bad one)
#   email_config FILE EXEC [KEY: VALUE...]
#                            a configuration for it, EXEC being the YAML
#                            flow sequence of the handler's argv; more
#                            queue keys may follow, one argument each
#
# `done` counts in `done_count`, so that a row done twice shows up as 2
# even when the handler's side effects cannot tell.

email_table()
{
	sql "CREATE TABLE email (
	    id BIGINT NOT NULL AUTO_INCREMENT,
	    recipient VARCHAR(250) NOT NULL,
	    subject VARCHAR(250) NOT NULL,
	    body TEXT NOT NULL,
	    status ENUM('waiting', 'sent', 'failed') NOT NULL DEFAULT 'waiting',
	    attempts INT NOT NULL DEFAULT 0,
	    done_count INT NOT NULL DEFAULT 0,
	    retry_at BIGINT NULL,
	    last_error TEXT NULL,
	    PRIMARY KEY (id),
	    INDEX (${2:-status, id})
	) ENGINE=InnoDB"
	if [ "$1" -gt 0 ]; then
		sql "INSERT INTO email (recipient, subject, body)
		    SELECT CONCAT('user', seq, '@example.com'),
		    CONCAT('hello ', seq), 'body' FROM $(seq_rows "$1")"
	fi
}

email_config()
{
	local file=$1 exec=$2 extra
	shift 2
	cat >"$file" <<YAML
database:
  socket: $ROWQ_TEST_SOCKET
  user: root
  name: $ROWQ_TEST_DB
stop_timeout: ${STOP_TIMEOUT:-10s}
queues:
  email:
    workers: ${WORKERS:-2}
    select: |
      SELECT id, recipient, subject, attempts FROM email
      WHERE status = 'waiting'
        AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())
      ORDER BY id
    exec: $exec
    timeout: ${TIMEOUT:-10s}
    done: UPDATE email SET status = 'sent', attempts = attempts + 1,
          done_count = done_count + 1 WHERE id = :id
    retry:
      max_attempts: ${MAX_ATTEMPTS:-3}
      attempts_column: attempts
      backoff: fixed
      delay: ${DELAY:-0s}
      jitter: false
      update: UPDATE email SET attempts = attempts + 1, last_error = :error,
              retry_at = UNIX_TIMESTAMP() + :delay WHERE id = :id
    failed: UPDATE email SET status = 'failed', attempts = attempts + 1,
            last_error = :error WHERE id = :id
    idle: ${IDLE:-200ms}
YAML
	for extra in "$@"; do
		printf '    %s\n' "$extra" >>"$file"
	done
}

# rowq_start CONFIG LOG: `rowq run` in the background, tracked; sets ROWQ_PID.
rowq_start()
{
	"$ROWQ" -c "$1" run >"$2" 2>&1 &
	ROWQ_PID=$!
	track_pid "$ROWQ_PID"
}

# The pids of a process's children, one per line.
children_of()
{
	local f p
	for f in /proc/"$1"/task/*/children; do
		[ -r "$f" ] && tr ' ' '\n' <"$f"
	done | grep -v '^$' | while read -r p; do
		not_watcher "$p" && echo "$p"
	done || true
}

# A worker of daemon PID: a child whose title says it is one.
a_worker()
{
	local w
	for w in $(children_of "$1"); do
		if tr '\0' ' ' <"/proc/$w/cmdline" 2>/dev/null |
		    grep -q 'worker [0-9]'; then
			echo "$w"
			return 0
		fi
	done
	return 1
}
