/*
 * runs.c: the run log (runs:, table rowq_runs by default), a table rowq
 * owns, like the pause table: one row for each try of each row, written
 * by the worker in the transaction that runs the try's done, retry or
 * failed statement (worker_runs.c), so that the log never disagrees with
 * the queue's table: a try whose transaction rolled back (a crash, a
 * lost link, a restart) leaves no run, and is seen as a try that ended
 * with no outcome when the row's attempts column is past its last run.
 *
 * Its values are written into the statement's text as literals: bytes
 * (the row's key, the host, the error) as hex, which a binary column
 * takes whatever the connection's character set, and numbers as digits;
 * so a batch's runs go in one INSERT that can ride in front of the
 * COMMIT, in the same round trip.  The times are UTC, from the worker's
 * clock.  The pruner (prune_daemon.c, `rowq prune`) removes runs older
 * than keep:, in chunks; `rowq runs` and `rowq show` read them
 * (runs_cmd.c).
 *
 * A queue with group_by: also keeps each run's group (grp, cut to
 * RUNS_GROUP_MAX bytes, NULL for null), for the DONE of status --by
 * (status_group_done.c).  The column came after the table's first
 * shape: runs_ensure adds it to a table made before, when a queue with
 * group_by: first uses it.  Queues without group_by: leave it NULL, and
 * write as before, so that a table not yet upgraded still takes them.
 */
#include "rowq.h"
#include "db.h"
#include "runs.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The group's column, in the DDL and added to a table made without it. */
#define RUNS_GROUP_COLUMN	"grp VARBINARY(" RUNS_GROUP_MAX_S ") NULL"
#define RUNS_GROUP_ADD		"ALTER TABLE %s ADD COLUMN " RUNS_GROUP_COLUMN

/* Another session added the column first (ER_DUP_FIELDNAME). */
#define RUNS_ER_DUP_FIELDNAME	1060

/*
 * How long the ALTER waits for the table's metadata lock, in seconds.
 * While it waits, every INSERT into the run log queues behind it: a
 * transaction left open on the table (a session that read it and went
 * idle) would stop the run logs of every queue and daemon that share it
 * for as long as the server's lock_wait_timeout, a day or a year.  It
 * gives up instead, and the worker tries again at its next connection.
 */
#define RUNS_ALTER_WAIT_S	5

/* What a worker creates when the table is missing; rowq.yaml(5) says so. */
#define RUNS_DDL \
	"CREATE TABLE IF NOT EXISTS %s (\n" \
	"  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,\n" \
	"  queue VARCHAR(64) CHARACTER SET ascii NOT NULL,\n" \
	"  row_key VARBINARY(" RUNS_KEY_MAX_S ") NOT NULL,\n" \
	"  attempt INT NOT NULL,\n" \
	"  outcome VARCHAR(8) CHARACTER SET ascii NOT NULL,\n" \
	"  reason VARCHAR(32) CHARACTER SET ascii NOT NULL DEFAULT '',\n" \
	"  exit_status INT NULL,\n" \
	"  started DATETIME(6) NOT NULL,\n" \
	"  finished DATETIME(6) NOT NULL,\n" \
	"  duration_ms BIGINT NOT NULL,\n" \
	"  host VARBINARY(255) NOT NULL,\n" \
	"  worker INT NOT NULL,\n" \
	"  pid INT NOT NULL,\n" \
	"  error VARBINARY(" RUNS_ERROR_MAX_S ") NOT NULL,\n" \
	"  trace_id CHAR(32) CHARACTER SET ascii NULL,\n" \
	"  " RUNS_GROUP_COLUMN ",\n" \
	"  KEY by_key (queue, row_key(255), id),\n" \
	"  KEY by_time (queue, finished)\n" \
	") ENGINE=InnoDB"

#define RUNS_COLUMNS \
	"(queue, row_key, attempt, outcome, reason, exit_status, started, " \
	"finished, duration_ms, host, worker, pid, error, trace_id"

/* Runs removed by one DELETE of the pruner. */
#define RUNS_PRUNE_CHUNK	1000
#define RUNS_PRUNE_PAUSE_MS	100

const char *
runs_table(const struct queue *q)
{
	return q->runs.table != NULL ? q->runs.table : RUNS_TABLE_DEFAULT;
}

/* The bytes of a group a run keeps, and status --by matches. */
size_t
runs_group_len(size_t len)
{
	return len < RUNS_GROUP_MAX ? len : RUNS_GROUP_MAX;
}

/* Whether q's runs keep their group (grp): it has group_by:. */
bool
runs_grouped(const struct queue *q)
{
	return q->group_by.name != NULL;
}

/*
 * The table has the group's column, or has it now: a plain read of it,
 * and when the server does not know the column (a table made before
 * it), the ALTER that adds it, waiting RUNS_ALTER_WAIT_S at most.  Two
 * sessions may both find it missing: the second's ALTER, which waits for
 * the first's, then finds it there, which is as good.  Returns 0, or -1
 * with the reason logged, and the statement to run by hand when it is a
 * privilege.
 */
static int
runs_ensure_group(struct db *db, const struct queue *q)
{
	struct buf sql = { 0 };
	enum db_status st;
	int rc = 0;

	buf_printf(&sql, "SELECT grp FROM %s LIMIT 0", runs_table(q));
	if (db_run(db, sql.data) == DB_OK || !db_no_such_column(db)) {
		/* Another error is the table's, and its INSERT will say. */
		buf_free(&sql);
		return 0;
	}
	(void)db_rollback(db);
	buf_reset(&sql);
	buf_printf(&sql, "SET SESSION lock_wait_timeout = %d",
	    RUNS_ALTER_WAIT_S);
	if ((st = db_run(db, sql.data)) == DB_OK) {
		buf_reset(&sql);
		buf_printf(&sql, RUNS_GROUP_ADD, runs_table(q));
		st = db_run(db, sql.data);
	}
	if (st == DB_OK)
		log_info("added the column grp to the run log %s, for "
		    "group_by: (status --by's DONE)", runs_table(q));
	else if (db_errno(db) != RUNS_ER_DUP_FIELDNAME) {
		bool denied = db_denied(db);
		log_error("%s: the run log %s has no column grp, which "
		    "group_by: needs, and it cannot be added: %s%s%s%s",
		    q->runs.where, runs_table(q), db_error(db), denied ?
		    " (grant ALTER on it, or run: " : "", denied ? sql.data :
		    "", denied ? ")" : "");
		rc = -1;
	}
	(void)db_run(db, "SET SESSION lock_wait_timeout = DEFAULT");
	buf_free(&sql);
	return rc;
}

/*
 * The table is there, or made now: a plain read of no row, then the DDL
 * when it is missing.  Returns 0, or -1 with the reason logged (the
 * database's error, and the privilege to grant when it is that).
 */
int
runs_ensure(struct db *db, const struct queue *q)
{
	struct buf sql = { 0 };
	int rc = 0;

	buf_printf(&sql, "SELECT id FROM %s LIMIT 0", runs_table(q));
	if (db_run(db, sql.data) != DB_OK && db_no_such_table(db)) {
		buf_reset(&sql);
		buf_printf(&sql, RUNS_DDL, runs_table(q));
		if (db_run(db, sql.data) == DB_OK)
			log_info("created the run log %s", runs_table(q));
		else {
			log_error("%s: cannot create the run log %s: %s%s",
			    q->runs.where, runs_table(q), db_error(db),
			    db_denied(db) ? " (grant CREATE on it, or create "
			    "it as rowq.yaml(5) shows)" : "");
			rc = -1;
		}
	}
	(void)db_rollback(db);
	if (rc == 0 && runs_grouped(q))
		rc = runs_ensure_group(db, q);
	(void)db_rollback(db);
	buf_free(&sql);
	return rc;
}

static void
runs_hex(struct buf *b, const char *s, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	buf_puts(b, "X'");
	for (size_t i = 0; i < n; i++) {
		char two[2] = { digits[(unsigned char)s[i] >> 4],
		    digits[(unsigned char)s[i] & 15] };
		buf_append(b, two, 2);
	}
	buf_puts(b, "'");
}

/* A time in microseconds since the epoch as DATETIME(6) text, UTC. */
static void
runs_time_text(char s[RUNS_TIME_LEN], int64_t us)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	char whole[32];

	gmtime_r(&t, &tm);
	strftime(whole, sizeof(whole), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(s, RUNS_TIME_LEN, "%s.%06lld", whole,
	    (long long)(us % 1000000));
}

/* The same as a literal. */
static void
runs_time(struct buf *b, int64_t us)
{
	char s[RUNS_TIME_LEN];

	runs_time_text(s, us);
	buf_printf(b, "'%s'", s);
}

/* Only the characters that cannot break out of a literal: ASCII words. */
static bool
runs_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '-' || c == ' ';
}

static void
runs_word(struct buf *b, const char *s)
{
	buf_puts(b, "'");
	for (; s != NULL && *s != '\0'; s++)
		if (runs_word_char(*s))
			buf_append(b, s, 1);
	buf_puts(b, "'");
}

/* The same word, its characters kept in to[RUNS_WORD_LEN], as a value. */
static void
runs_word_value(struct value *v, char *to, const char *s)
{
	size_t n = 0;

	for (; s != NULL && *s != '\0' && n < RUNS_WORD_LEN - 1; s++)
		if (runs_word_char(*s))
			to[n++] = *s;
	to[n] = '\0';
	*v = (struct value){ .type = VALUE_TEXT, .s = to, .len = n,
	    .plain = true };
}

/*
 * A run's values, in RUNS_COLUMNS' order, without parentheses; the key
 * and the error cut at their columns' size.
 */
void
runs_values(struct buf *b, const struct run_rec *r)
{
	size_t klen = r->key_len < RUNS_KEY_MAX ? r->key_len : RUNS_KEY_MAX;
	size_t elen = r->error_len < RUNS_ERROR_MAX ? r->error_len :
	    RUNS_ERROR_MAX;

	runs_word(b, r->queue);
	buf_puts(b, ", ");
	runs_hex(b, r->key, klen);
	buf_printf(b, ", %d, ", r->attempt);
	if (r->if_changed) {
		buf_puts(b, "IF(ROW_COUNT() > 0, ");
		runs_word(b, r->outcome);
		buf_puts(b, ", 'none'), IF(ROW_COUNT() > 0, ");
		runs_word(b, r->reason);
		buf_puts(b, ", 'no_row')");
	} else {
		runs_word(b, r->outcome);
		buf_puts(b, ", ");
		runs_word(b, r->reason);
	}
	if (r->exit_status >= 0)
		buf_printf(b, ", %d, ", r->exit_status);
	else
		buf_puts(b, ", NULL, ");
	runs_time(b, r->started_us);
	buf_puts(b, ", ");
	runs_time(b, r->finished_us);
	buf_printf(b, ", %lld, ", (long long)r->duration_ms);
	runs_hex(b, r->host, strlen(r->host));
	buf_printf(b, ", %d, %ld, ", r->worker, r->pid);
	runs_hex(b, r->error, elen);
	buf_puts(b, ", ");
	if (r->trace_id != NULL && *r->trace_id != '\0')
		runs_word(b, r->trace_id);
	else
		buf_puts(b, "NULL");
	if (!r->grouped)
		return;
	buf_puts(b, ", ");
	if (r->group != NULL)
		runs_hex(b, r->group, runs_group_len(r->group_len));
	else
		buf_puts(b, "NULL");
}

/*
 * The INSERT of one run written behind its `done` (if_changed), with a
 * '?' for each of runs_held_values' values, to be prepared once per
 * session (dialect_stmt_init): the server then parses the column list
 * and the IF()s once, not for each row.
 */
void
runs_held_text(struct buf *b, const struct queue *q)
{
	runs_insert_head(b, q, runs_grouped(q));
	buf_puts(b, "VALUES (?, ?, ?, IF(ROW_COUNT() > 0, ?, 'none'), "
	    "IF(ROW_COUNT() > 0, ?, 'no_row'), ?, ?, ?, ?, ?, ?, ?, ?, ?");
	buf_puts(b, runs_grouped(q) ? ", ?)" : ")");
}

static struct value
runs_int(long long i)
{
	return (struct value){ .type = VALUE_INT, .i = i };
}

static struct value
runs_bytes(const char *s, size_t len)
{
	return (struct value){ .type = VALUE_BLOB, .s = s, .len = len };
}

/*
 * runs_held_text's values for r, in v->v: the same as runs_values
 * writes.  Words and times are ASCII without quotes or backslashes, so
 * written as literals they are the same bytes in any character set
 * (plain); v keeps them, and points into r for the bytes.
 */
void
runs_held_values(struct run_values *v, const struct run_rec *r)
{
	size_t klen = r->key_len < RUNS_KEY_MAX ? r->key_len : RUNS_KEY_MAX;
	size_t elen = r->error_len < RUNS_ERROR_MAX ? r->error_len :
	    RUNS_ERROR_MAX;

	runs_word_value(&v->v[0], v->queue, r->queue);
	v->v[1] = runs_bytes(r->key, klen);
	v->v[2] = runs_int(r->attempt);
	runs_word_value(&v->v[3], v->outcome, r->outcome);
	runs_word_value(&v->v[4], v->reason, r->reason);
	v->v[5] = r->exit_status >= 0 ? runs_int(r->exit_status) :
	    (struct value){ .type = VALUE_NULL };
	runs_time_text(v->started, r->started_us);
	v->v[6] = (struct value){ .type = VALUE_TEXT, .s = v->started,
	    .len = strlen(v->started), .plain = true };
	runs_time_text(v->finished, r->finished_us);
	v->v[7] = (struct value){ .type = VALUE_TEXT, .s = v->finished,
	    .len = strlen(v->finished), .plain = true };
	v->v[8] = runs_int(r->duration_ms);
	v->v[9] = runs_bytes(r->host, strlen(r->host));
	v->v[10] = runs_int(r->worker);
	v->v[11] = runs_int(r->pid);
	v->v[12] = runs_bytes(r->error, elen);
	if (r->trace_id != NULL && *r->trace_id != '\0')
		runs_word_value(&v->v[13], v->trace, r->trace_id);
	else
		v->v[13] = (struct value){ .type = VALUE_NULL };
	v->n = 14;
	if (!r->grouped)
		return;
	if (r->group == NULL)
		v->v[v->n++] = (struct value){ .type = VALUE_NULL };
	else
		v->v[v->n++] = runs_bytes(r->group,
		    runs_group_len(r->group_len));
}

/*
 * "INSERT INTO table (columns) ", for VALUES or a SELECT to follow; the
 * group's column too when grouped (the values' run_rec.grouped).
 */
void
runs_insert_head(struct buf *b, const struct queue *q, bool grouped)
{
	buf_printf(b, "INSERT INTO %s " RUNS_COLUMNS "%s ", runs_table(q),
	    grouped ? ", grp)" : ")");
}

/*
 * The runs older than keep: removed, a chunk of its own transaction at a
 * time with a pause between, until a chunk finds fewer; stopped early
 * when asked to.  *rows says how many went.  Returns 0, or -1 with the
 * error in err.
 */
int
runs_prune(struct db *db, const struct queue *q, struct stopper *stopper,
    unsigned long long *rows, char *err, size_t errlen)
{
	struct buf sql = { 0 };
	int rc = 0, retries = 0;

	*rows = 0;
	if (!q->runs.enabled || q->runs.keep_ms == 0)
		return 0;
	/* Queue names are letters, digits, _ and -: nothing to escape. */
	buf_printf(&sql, "DELETE FROM %s WHERE queue = '%s' AND finished < "
	    "UTC_TIMESTAMP(6) - INTERVAL %lld SECOND LIMIT %d", runs_table(q),
	    q->name, (long long)(q->runs.keep_ms / 1000), RUNS_PRUNE_CHUNK);
	for (;;) {
		unsigned long long n = 0;
		enum db_status st = db_run_count(db, sql.data, &n);
		if (st == DB_OK)
			st = db_commit(db);
		if (st != DB_OK) {
			(void)db_rollback(db);
			if (db_no_such_table(db))
				break;
			if (st == DB_RETRY && retries++ < 3)
				continue;
			snprintf(err, errlen, "run log %s: %s", runs_table(q),
			    db_error(db));
			rc = -1;
			break;
		}
		retries = 0;
		*rows += n;
		if (n < RUNS_PRUNE_CHUNK ||
		    stopper_sleep(stopper, RUNS_PRUNE_PAUSE_MS))
			break;
	}
	buf_free(&sql);
	return rc;
}

/* The columns of enum R_*, in their order. */
#define RUNS_SELECT \
	"SELECT row_key, attempt, outcome, reason, exit_status, " \
	"DATE_FORMAT(started, '%%Y-%%m-%%dT%%H:%%i:%%s.%%fZ') AS started_at, " \
	"duration_ms, host, worker, pid, error, trace_id, " \
	"DATE_FORMAT(finished, '%%Y-%%m-%%dT%%H:%%i:%%s.%%fZ') AS finished_at, " \
	"id FROM %s"

/*
 * The runs f asks for, oldest first (the newest f->limit of them), into
 * rs, R_NCOLS columns a row, by a plain read, which locks nothing; the
 * transaction ends after it.  A missing table is no run.  Returns 0, or
 * -1 (logged).  `rowq runs`, `rowq show` and the console's row page read
 * the run log here.
 */
int
runs_read(struct db *db, const struct queue *q, const struct runs_filter *f,
    struct rowset *rs)
{
	struct buf sql = { 0 };
	struct value v[3];
	size_t nv = 0;
	enum db_status st;
	struct db_stmt *s;
	int rc = 0;

	buf_printf(&sql, "SELECT * FROM (" RUNS_SELECT " WHERE queue = '%s'",
	    runs_table(q), q->name);
	if (f->key != NULL) {
		buf_puts(&sql, " AND row_key = ?");
		v[nv++] = (struct value){ .type = VALUE_BLOB, .s = f->key,
		    .len = f->key_len };
	}
	if (f->outcome != NULL) {
		buf_puts(&sql, " AND outcome = ?");
		v[nv++] = (struct value){ .type = VALUE_TEXT, .s = f->outcome,
		    .len = strlen(f->outcome) };
	}
	if (f->since_ms > 0)
		buf_printf(&sql, " AND finished >= UTC_TIMESTAMP(6) - "
		    "INTERVAL %lld SECOND", (long long)(f->since_ms / 1000));
	buf_printf(&sql, " ORDER BY finished DESC, id DESC LIMIT %ld) AS r "
	    "ORDER BY finished_at, id", f->limit);
	if ((s = db_prepare(db, sql.data, &st)) == NULL) {
		if (!db_no_such_table(db)) {
			log_error("the run log %s: %s", runs_table(q),
			    db_error(db));
			rc = -1;
		}
	} else if (db_stmt_fetch_all(s, v, nv, rs) != DB_OK) {
		log_error("the run log %s: %s", runs_table(q), db_error(db));
		rc = -1;
	}
	db_stmt_free(s);
	(void)db_rollback(db);
	buf_free(&sql);
	return rc;
}

/* A run's column as text: "" for NULL. */
const char *
runs_v(const struct row *r, int column)
{
	return r->value[column] != NULL ? r->value[column] : "";
}

/* Text that may hold any byte, for JSON: as a string when it is text. */
void
runs_json_text(struct buf *b, const char *name, const char *s, size_t n)
{
	buf_printf(b, ",\"%s\":", name);
	if (s == NULL)
		buf_puts(b, "null");
	else
		json_string(b, s, n);
}

/* One run as a JSON object, `rowq runs --json`'s. */
static void
runs_json_one(struct buf *b, const struct row *r)
{
	buf_printf(b, "{\"try\":%s,\"outcome\":", runs_v(r, R_TRY));
	json_string(b, runs_v(r, R_OUTCOME), strlen(runs_v(r, R_OUTCOME)));
	buf_puts(b, ",\"started\":");
	json_string(b, runs_v(r, R_STARTED), strlen(runs_v(r, R_STARTED)));
	buf_puts(b, ",\"finished\":");
	json_string(b, runs_v(r, R_FINISHED), strlen(runs_v(r, R_FINISHED)));
	buf_printf(b, ",\"duration_ms\":%s", runs_v(r, R_DURATION));
	runs_json_text(b, "host", r->value[R_HOST], r->len[R_HOST]);
	buf_printf(b, ",\"worker\":%s,\"pid\":%s", runs_v(r, R_WORKER),
	    runs_v(r, R_PID));
	buf_printf(b, ",\"exit_status\":%s", r->value[R_EXIT] != NULL ?
	    r->value[R_EXIT] : "null");
	runs_json_text(b, "reason", runs_v(r, R_REASON),
	    strlen(runs_v(r, R_REASON)));
	runs_json_text(b, "error", r->value[R_ERROR], r->len[R_ERROR]);
	runs_json_text(b, "trace_id", r->value[R_TRACE],
	    r->value[R_TRACE] ? r->len[R_TRACE] : 0);
	runs_json_text(b, "key", row_story_printable(r->value[R_KEY],
	    r->len[R_KEY]) ? r->value[R_KEY] : NULL, r->len[R_KEY]);
	buf_puts(b, ",\"key_hex\":\"");
	buf_put_hex(b, r->value[R_KEY], r->len[R_KEY]);
	buf_puts(b, "\"}");
}

/* The runs of rs as a JSON array, oldest first. */
void
runs_json_list(struct buf *b, const struct rowset *rs)
{
	buf_putc(b, '[');
	for (size_t i = 0; i < rs->nrows; i++) {
		buf_puts(b, i ? ",\n" : "\n");
		runs_json_one(b, &rs->rows[i]);
	}
	buf_puts(b, rs->nrows ? "\n]" : "]");
}
