/*
 * pause.c: the pause table, and `rowq pause` / `rowq resume`.  A pause
 * is a row in a small table that rowq owns (pause_table:, default
 * rowq_pause), so that every daemon on every host that works the queue
 * sees it: each supervisor reads the table about once a second
 * (pause_watch.c) and retires the queue's workers while its row is there.
 * `rowq status` shows it from the same read (pause_read).  A pause --for
 * a while has its end in resume_at, by the server's clock (UTC, so that
 * no time zone's repeated hour can move it): the row then pauses nothing,
 * and every daemon starts its workers again by itself.
 *
 * The table is needed only once something is paused: a table that does
 * not exist pauses nothing, and `rowq pause` creates it when it is missing.
 */
#include "rowq.h"
#include "db.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>

/* What `rowq pause` creates; rowq.yaml(5) gives the same DDL. */
#define PAUSE_DDL \
	"CREATE TABLE IF NOT EXISTS %s (\n" \
	"  queue VARCHAR(191) NOT NULL PRIMARY KEY,\n" \
	"  since TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,\n" \
	"  reason VARCHAR(1000) NOT NULL DEFAULT '',\n" \
	"  resume_at DATETIME(6) NULL\n" \
	") ENGINE=InnoDB"
/* A table made before pause --for: the column it needs. */
#define PAUSE_ALTER \
	"ALTER TABLE %s ADD COLUMN resume_at DATETIME(6) NULL"

const char *
pause_table(const struct config *cfg)
{
	return cfg->pause_table != NULL ? cfg->pause_table :
	    PAUSE_TABLE_DEFAULT;
}

/*
 * Every paused queue, by a plain read that locks nothing, and with the
 * transaction ended, so that no metadata lock stays on the table (an
 * ALTER or DROP of it must not wait for a daemon).  A missing table is
 * no pause: 0 and an empty list.  -1: the database failed (db_error).
 */
int
pause_read(struct db *db, const char *table, struct pause_list *out)
{
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };
	enum db_status st;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	buf_printf(&sql, "SELECT queue, since, TIMESTAMPDIFF(SECOND, since, "
	    "NOW()), reason, TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), resume_at) "
	    "FROM %s WHERE " PAUSE_LIVE, table);
	st = db_query(db, sql.data, &rs, &cols, &ncols);
	if (st != DB_OK && db_no_such_column(db)) {
		/* A table from before pause --for. */
		buf_reset(&sql);
		buf_printf(&sql, "SELECT queue, since, TIMESTAMPDIFF(SECOND, "
		    "since, NOW()), reason, NULL FROM %s", table);
		st = db_query(db, sql.data, &rs, &cols, &ncols);
	}
	if (st != DB_OK)
		rc = db_no_such_table(db) ? 0 : -1;
	else if (ncols == 5 && rs.nrows > 0) {
		out->entry = xcalloc(rs.nrows, sizeof(*out->entry));
		for (size_t i = 0; i < rs.nrows; i++) {
			char *const *v = rs.rows[i].value;
			struct pause_entry *e = &out->entry[out->n++];
			e->queue = xstrdup_or_empty(v[0]);
			e->since = xstrdup_or_empty(v[1]);
			e->for_s = v[2] != NULL ? atoll(v[2]) : 0;
			e->reason = xstrdup_or_empty(v[3]);
			e->resume_in_s = v[4] != NULL ? atoll(v[4]) : -1;
		}
	}
	(void)db_rollback(db);
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	buf_free(&sql);
	return rc;
}

const struct pause_entry *
pause_find(const struct pause_list *l, const char *queue)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->entry[i].queue, queue) == 0)
			return &l->entry[i];
	return NULL;
}

void
pause_list_free(struct pause_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->entry[i].queue);
		free(l->entry[i].since);
		free(l->entry[i].reason);
	}
	free(l->entry);
	memset(l, 0, sizeof(*l));
}

/* Run one statement with text values; affected rows in *affected. */
static enum db_status
pause_exec(struct db *db, const char *sql, const char *a, const char *b,
    unsigned long long *affected)
{
	struct value v[2] = {
		{ .type = VALUE_TEXT, .s = a, .len = a ? strlen(a) : 0 },
		{ .type = VALUE_TEXT, .s = b, .len = b ? strlen(b) : 0 },
	};
	enum db_status st;
	struct db_stmt *s = db_prepare(db, sql, &st);

	*affected = 0;
	if (s == NULL)
		return st;
	st = db_stmt_exec(s, v, b != NULL ? 2 : 1, affected);
	db_stmt_free(s);
	return st;
}

/* The pause table is missing: create it, or say which privilege lacks. */
static int
pause_create(struct db *db, const struct config *cfg)
{
	struct buf ddl = { 0 };
	int rc = 0;

	buf_printf(&ddl, PAUSE_DDL, pause_table(cfg));
	if (db_run(db, ddl.data) != DB_OK) {
		log_error("%s: pause_table: cannot create %s: %s%s", cfg->path,
		    pause_table(cfg), db_error(db), db_denied(db) ?
		    "; the database user needs the CREATE privilege on it, "
		    "or an administrator creates it (rowq.yaml(5), PAUSE "
		    "TABLE) and grants SELECT, INSERT, DELETE" : "");
		rc = -1;
	} else
		log_info("created the pause table %s", pause_table(cfg));
	buf_free(&ddl);
	return rc;
}

/*
 * The config and a connection for a pause command, or another command
 * of the database (queue NULL: no queue to check); NULL: *rc says why,
 * logged.
 */
struct db *
pause_connect(const char *path, const char *queue, struct config **cfg,
    int *rc)
{
	enum db_status st;
	struct db *db;

	*cfg = config_load(path);
	if (*cfg == NULL) {
		*rc = ROWQ_EXIT_CONFIG;
		return NULL;
	}
	if (queue != NULL && config_queue(*cfg, queue) == NULL) {
		log_error("%s: no queue named %s", path, queue);
		*rc = ROWQ_EXIT_USAGE;
		return NULL;
	}
	db = db_open(&(*cfg)->db, &st);
	if (st != DB_OK) {
		log_error("%s: database: cannot connect: %s", path,
		    db_error(db));
		db_close(db);
		*rc = ROWQ_EXIT_FAILURE;
		return NULL;
	}
	return db;
}

static void
pause_say_already(struct db *db, const struct config *cfg, const char *queue)
{
	struct pause_list l;
	const struct pause_entry *e = NULL;
	char d[32] = "";

	if (pause_read(db, pause_table(cfg), &l) == 0)
		e = pause_find(&l, queue);
	if (e != NULL)
		duration_format(e->for_s * 1000, d, sizeof(d));
	if (e == NULL)
		printf("%s: already paused\n", queue);
	else
		printf("%s: already paused since %s (%s ago)%s%s\n", queue,
		    e->since, d, *e->reason ? ": " : "", e->reason);
	pause_list_free(&l);
}

/* How a queue stands in the pause table, as pause_look finds it. */
enum pause_state {
	PAUSE_NONE,		/* no row, or a --for pause that has ended */
	PAUSE_FOR_GOOD,		/* until rowq resume */
	PAUSE_TIMED,		/* until resume_at */
};

/*
 * The queue's pause row, locked for the change that follows.  Fails with
 * the server's error: no table, or a table from before --for, that has no
 * resume_at.
 */
static enum db_status
pause_look(struct db *db, const struct config *cfg, const char *queue,
    enum pause_state *state)
{
	struct buf sql = { 0 };
	struct value v = { .type = VALUE_TEXT, .s = queue, .len = strlen(queue) };
	struct rowset rs = { 0 };
	struct db_stmt *s;
	enum db_status st;

	*state = PAUSE_NONE;
	buf_printf(&sql, "SELECT resume_at IS NOT NULL FROM %s WHERE queue = ? "
	    "AND " PAUSE_LIVE " FOR UPDATE", pause_table(cfg));
	s = db_prepare(db, sql.data, &st);
	if (s != NULL)
		st = db_stmt_fetch_all(s, &v, 1, &rs);
	if (st == DB_OK && rs.nrows > 0)
		*state = rs.rows[0].value[0] != NULL &&
		    strcmp(rs.rows[0].value[0], "1") == 0 ? PAUSE_TIMED :
		    PAUSE_FOR_GOOD;
	rowset_free(&rs, 1);
	db_stmt_free(s);
	buf_free(&sql);
	return st;
}

/* resume_at for a pause of for_ms from now, rounded up, or NULL. */
static void
pause_resume_at(struct buf *b, int64_t for_ms)
{
	if (for_ms > 0)
		buf_printf(b, "UTC_TIMESTAMP(6) + INTERVAL %lld SECOND",
		    (long long)((for_ms + 999) / 1000));
	else
		buf_puts(b, "NULL");
}

/*
 * A table from before --for (no resume_at): a pause for good goes in as
 * it always did; one --for a while needs the column, added here (ALTER
 * privilege), or by an administrator.
 */
static int
pause_legacy(struct db *db, const struct config *cfg, const char *queue,
    const char *reason, int64_t for_ms, bool *done)
{
	struct buf sql = { 0 };
	unsigned long long affected = 0;
	enum db_status st;
	int rc = 0;

	*done = false;
	if (for_ms > 0) {
		buf_printf(&sql, PAUSE_ALTER, pause_table(cfg));
		if (db_run(db, sql.data) != DB_OK) {
			log_error("%s: pause_table: %s has no resume_at column, "
			    "which pause --for needs, and it cannot be added: "
			    "%s; an administrator runs: %s", cfg->path,
			    pause_table(cfg), db_error(db), sql.data);
			rc = -1;
		} else
			log_info("added resume_at to the pause table %s",
			    pause_table(cfg));
		buf_free(&sql);
		return rc;
	}
	*done = true;
	buf_printf(&sql, "INSERT IGNORE INTO %s (queue, reason) VALUES (?, ?)",
	    pause_table(cfg));
	st = pause_exec(db, sql.data, queue, reason ? reason : "", &affected);
	if (st == DB_OK)
		st = db_commit(db);
	if (st != DB_OK) {
		log_error("%s: cannot pause %s in %s: %s", cfg->path, queue,
		    pause_table(cfg), db_error(db));
		rc = -1;
	} else if (affected == 0)
		pause_say_already(db, cfg, queue);
	else
		printf("%s: paused; every daemon's workers finish their rows "
		    "and stop within 2s\n", queue);
	buf_free(&sql);
	return rc;
}

/* The change a pause command makes, by how the queue stands. */
static enum db_status
pause_write(struct db *db, const struct config *cfg, const char *queue,
    const char *reason, int64_t for_ms, enum pause_state state)
{
	struct buf sql = { 0 };
	unsigned long long affected = 0;
	enum db_status st;
	char d[32];

	duration_format(for_ms, d, sizeof(d));
	if (state == PAUSE_NONE) {
		buf_printf(&sql, "REPLACE INTO %s (queue, reason, resume_at) "
		    "VALUES (?, ?, ", pause_table(cfg));
		pause_resume_at(&sql, for_ms);
		buf_putc(&sql, ')');
		st = pause_exec(db, sql.data, queue, reason ? reason : "",
		    &affected);
		if (st == DB_OK && for_ms > 0)
			printf("%s: paused for %s; every daemon's workers finish "
			    "their rows and stop within 2s, and start again "
			    "by themselves when it ends\n", queue, d);
		else if (st == DB_OK)
			printf("%s: paused; every daemon's workers finish their "
			    "rows and stop within 2s\n", queue);
	} else {
		buf_printf(&sql, "UPDATE %s SET resume_at = ", pause_table(cfg));
		pause_resume_at(&sql, for_ms);
		buf_puts(&sql, reason ? ", reason = ? WHERE queue = ?" :
		    " WHERE queue = ?");
		st = pause_exec(db, sql.data, reason ? reason : queue,
		    reason ? queue : NULL, &affected);
		if (st == DB_OK && for_ms > 0)
			printf("%s: already paused; it now ends in %s, and every "
			    "daemon starts its workers again by itself then\n",
			    queue, d);
		else if (st == DB_OK)
			printf("%s: already paused for a while; it now lasts "
			    "until rowq resume\n", queue);
	}
	buf_free(&sql);
	return st;
}

/*
 * `rowq pause QUEUE [--for DURATION] [--reason TEXT]`: 0 paused, or
 * paused already (--for then sets when it ends; without it, a pause for
 * a while lasts until resumed); 1 the database refused (the message
 * names the privilege); 2 usage or an unknown queue; 78 a bad
 * configuration.
 */
int
pause_command(const char *path, const char *queue, const char *reason,
    int64_t for_ms)
{
	struct config *cfg;
	enum pause_state state;
	enum db_status st;
	int rc = ROWQ_EXIT_OK;
	bool done = false;
	struct db *db = pause_connect(path, queue, &cfg, &rc);

	if (db == NULL)
		goto out;
	st = pause_look(db, cfg, queue, &state);
	if (st != DB_OK && db_no_such_table(db)) {
		if (pause_create(db, cfg) == -1) {
			rc = ROWQ_EXIT_FAILURE;
			goto out;
		}
		st = pause_look(db, cfg, queue, &state);
	}
	if (st != DB_OK && db_no_such_column(db)) {
		if (pause_legacy(db, cfg, queue, reason, for_ms, &done) == -1) {
			rc = ROWQ_EXIT_FAILURE;
			goto out;
		}
		if (done)
			goto out;
		st = pause_look(db, cfg, queue, &state);
	}
	if (st == DB_OK && state == PAUSE_FOR_GOOD && for_ms == 0) {
		(void)db_rollback(db);
		pause_say_already(db, cfg, queue);
		goto out;
	}
	if (st == DB_OK)
		st = pause_write(db, cfg, queue, reason, for_ms, state);
	if (st == DB_OK)
		st = db_commit(db);
	if (st != DB_OK) {
		log_error("%s: cannot pause %s in %s: %s%s", path, queue,
		    pause_table(cfg), db_error(db), db_denied(db) ?
		    "; the database user needs SELECT, INSERT, UPDATE and "
		    "DELETE on the pause table" : "");
		rc = ROWQ_EXIT_FAILURE;
	}
out:
	db_close(db);
	config_free(cfg);
	return rc;
}

/*
 * A queue resumed by hand: its throttles (the queue's and its keys', a
 * handler's "throttle N", limit.c) end too.  Only logged when it fails:
 * they end by themselves.  Returns how many ended.
 */
static unsigned long long
resume_throttles(struct db *db, const struct config *cfg, const char *queue)
{
	const struct queue *q = config_queue(cfg, queue);
	struct buf sql = { 0 };
	unsigned long long n = 0;

	if (q == NULL || !q->limit.enabled)
		return 0;
	buf_printf(&sql, "UPDATE %s SET throttled_until = NULL WHERE queue = ? "
	    "AND slot = 0 AND throttled_until > UTC_TIMESTAMP(6)",
	    limit_table(cfg));
	if (pause_exec(db, sql.data, queue, NULL, &n) != DB_OK ||
	    db_commit(db) != DB_OK) {
		if (!db_no_such_table(db))
			log_warnx("%s: limit_table: cannot end the throttles "
			    "of %s: %s", cfg->path, queue, db_error(db));
		(void)db_rollback(db);
		n = 0;
	}
	buf_free(&sql);
	return n;
}

/*
 * `rowq resume QUEUE`: 0 resumed, or it was not paused; otherwise as
 * pause_command.  Its throttles end as well.
 */
int
resume_command(const char *path, const char *queue)
{
	struct config *cfg;
	unsigned long long affected = 0, throttles;
	struct buf sql = { 0 };
	enum db_status st;
	int rc = ROWQ_EXIT_OK;
	struct db *db = pause_connect(path, queue, &cfg, &rc);

	if (db == NULL)
		goto out;
	/* A pause --for that has ended goes too, but is not one resumed. */
	buf_printf(&sql, "DELETE FROM %s WHERE queue = ? AND " PAUSE_LIVE,
	    pause_table(cfg));
	st = pause_exec(db, sql.data, queue, NULL, &affected);
	buf_reset(&sql);
	buf_printf(&sql, "DELETE FROM %s WHERE queue = ?", pause_table(cfg));
	if (st != DB_OK && db_no_such_column(db))
		st = pause_exec(db, sql.data, queue, NULL, &affected);
	else if (st == DB_OK)
		st = pause_exec(db, sql.data, queue, NULL,
		    &(unsigned long long){ 0 });
	if (st == DB_OK)
		st = db_commit(db);
	if ((st == DB_OK || db_no_such_table(db)) &&
	    (throttles = resume_throttles(db, cfg, queue)) > 0)
		printf("%s: throttle ended (%llu, the queue's or its keys')\n",
		    queue, throttles);
	if (st != DB_OK && !db_no_such_table(db)) {
		log_error("%s: cannot resume %s in %s: %s%s", path, queue,
		    pause_table(cfg), db_error(db), db_denied(db) ?
		    "; the database user needs SELECT, INSERT and DELETE on "
		    "the pause table" : "");
		rc = ROWQ_EXIT_FAILURE;
	} else if (affected == 0)
		printf("%s: not paused\n", queue);
	else
		printf("%s: resumed; every daemon starts its workers again "
		    "within 2s\n", queue);
out:
	db_close(db);
	config_free(cfg);
	buf_free(&sql);
	return rc;
}

/*
 * Pause queue (reason: why, "" for none) or resume it (reason NULL) in
 * the pause table, creating the table for a pause when it is missing.
 * 1: done; 0: it was so already; -1: the database refused (logged, with
 * the privilege it lacks).
 */
int
pause_change(struct db *db, const struct config *cfg, const char *queue,
    const char *reason)
{
	unsigned long long affected = 0;
	struct buf sql = { 0 };
	enum db_status st;
	int rc;

	if (reason != NULL)
		buf_printf(&sql, "INSERT IGNORE INTO %s (queue, reason) "
		    "VALUES (?, ?)", pause_table(cfg));
	else
		buf_printf(&sql, "DELETE FROM %s WHERE queue = ?",
		    pause_table(cfg));
	st = pause_exec(db, sql.data, queue, reason, &affected);
	if (st != DB_OK && db_no_such_table(db) && reason != NULL) {
		if (pause_create(db, cfg) == -1) {
			buf_free(&sql);
			return -1;
		}
		st = pause_exec(db, sql.data, queue, reason, &affected);
	}
	if (st == DB_OK)
		st = db_commit(db);
	if (reason == NULL && (st == DB_OK || db_no_such_table(db)))
		(void)resume_throttles(db, cfg, queue);
	if (st != DB_OK && !(reason == NULL && db_no_such_table(db))) {
		log_error("%s: cannot %s %s in %s: %s%s", cfg->path,
		    reason != NULL ? "pause" : "resume", queue,
		    pause_table(cfg), db_error(db), db_denied(db) ?
		    "; the database user needs SELECT, INSERT and DELETE on "
		    "the pause table" : "");
		rc = -1;
	} else
		rc = affected > 0;
	(void)db_rollback(db);
	buf_free(&sql);
	return rc;
}

static void
pause_row_failed(struct db *db, const struct config *cfg, const char *what,
    const char *key)
{
	log_error("%s: cannot %s %s in %s: %s%s", cfg->path, what, key,
	    pause_table(cfg), db_error(db), db_denied(db) ?
	    "; the database user needs SELECT, INSERT and DELETE on the pause "
	    "table" : "");
}

/*
 * The pause table's row key, for a pause of something else than a queue
 * (a schedule's, schedule_cmd.c): inserted, the table created when it is
 * missing.  0 (*affected 0: there already), or -1 logged.
 */
int
pause_row_add(struct db *db, const struct config *cfg, const char *key,
    const char *reason, unsigned long long *affected)
{
	struct buf sql = { 0 };
	enum db_status st;

	buf_printf(&sql, "INSERT IGNORE INTO %s (queue, reason) VALUES (?, ?)",
	    pause_table(cfg));
	st = pause_exec(db, sql.data, key, reason, affected);
	if (st != DB_OK && db_no_such_table(db) && pause_create(db, cfg) == 0)
		st = pause_exec(db, sql.data, key, reason, affected);
	if (st == DB_OK)
		st = db_commit(db);
	if (st != DB_OK && !db_no_such_table(db))
		pause_row_failed(db, cfg, "pause", key);
	buf_free(&sql);
	return st == DB_OK ? 0 : -1;
}

/* The row key deleted: 0 (*affected 0: there was none), or -1 logged. */
int
pause_row_remove(struct db *db, const struct config *cfg, const char *key,
    unsigned long long *affected)
{
	struct buf sql = { 0 };
	enum db_status st;

	buf_printf(&sql, "DELETE FROM %s WHERE queue = ?", pause_table(cfg));
	st = pause_exec(db, sql.data, key, NULL, affected);
	if (st == DB_OK)
		st = db_commit(db);
	if (st != DB_OK && db_no_such_table(db))
		st = DB_OK;
	else if (st != DB_OK)
		pause_row_failed(db, cfg, "resume", key);
	buf_free(&sql);
	return st == DB_OK ? 0 : -1;
}
