/*
 * pause.c: the pause table, and `rowq pause` / `rowq resume`.  A pause
 * is a row in a small table that rowq owns (pause_table:, default
 * rowq_pause), so that every daemon on every host that works the queue
 * sees it: each supervisor reads the table about once a second
 * (pause_watch.c) and retires the queue's workers while its row is there.
 * `rowq status` shows it from the same read (pause_read).
 *
 * The table is needed only once something is paused: a table that does
 * not exist pauses nothing, and `rowq pause` creates it when it is missing.
 */
#include "rowq.h"
#include "db.h"

#include <stdlib.h>
#include <string.h>

/* What `rowq pause` creates; rowq.yaml(5) gives the same DDL. */
#define PAUSE_DDL \
	"CREATE TABLE IF NOT EXISTS %s (\n" \
	"  queue VARCHAR(191) NOT NULL PRIMARY KEY,\n" \
	"  since TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,\n" \
	"  reason VARCHAR(1000) NOT NULL DEFAULT ''\n" \
	") ENGINE=InnoDB"

const char *
pause_table(const struct config *cfg)
{
	return cfg->pause_table != NULL ? cfg->pause_table :
	    PAUSE_TABLE_DEFAULT;
}

static char *
pause_dup(const char *s)
{
	return xstrdup(s != NULL ? s : "");
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
	    "NOW()), reason FROM %s", table);
	st = db_query(db, sql.data, &rs, &cols, &ncols);
	if (st != DB_OK)
		rc = db_no_such_table(db) ? 0 : -1;
	else if (ncols == 4 && rs.nrows > 0) {
		out->entry = xcalloc(rs.nrows, sizeof(*out->entry));
		for (size_t i = 0; i < rs.nrows; i++) {
			char *const *v = rs.rows[i].value;
			struct pause_entry *e = &out->entry[out->n++];
			e->queue = pause_dup(v[0]);
			e->since = pause_dup(v[1]);
			e->for_s = v[2] != NULL ? atoll(v[2]) : 0;
			e->reason = pause_dup(v[3]);
		}
	}
	(void)db_rollback(db);
	rowset_clear(&rs, ncols);
	free(rs.rows);
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

/*
 * `rowq pause QUEUE [--reason TEXT]`: 0 paused, or paused already; 1 the
 * database refused (the message names the privilege); 2 usage or an
 * unknown queue; 78 a bad configuration.
 */
int
pause_command(const char *path, const char *queue, const char *reason)
{
	struct config *cfg;
	int rc = ROWQ_EXIT_OK, changed;
	struct db *db = pause_connect(path, queue, &cfg, &rc);

	if (db == NULL)
		goto out;
	changed = pause_change(db, cfg, queue, reason);
	if (changed == -1)
		rc = ROWQ_EXIT_FAILURE;
	else if (changed == 0)
		pause_say_already(db, cfg, queue);
	else
		printf("%s: paused; every daemon's workers finish their rows "
		    "and stop within 2s\n", queue);
out:
	db_close(db);
	config_free(cfg);
	return rc;
}

/*
 * `rowq resume QUEUE`: 0 resumed, or it was not paused; otherwise as
 * pause_command.
 */
int
resume_command(const char *path, const char *queue)
{
	struct config *cfg;
	int rc = ROWQ_EXIT_OK, changed;
	struct db *db = pause_connect(path, queue, &cfg, &rc);

	if (db == NULL)
		goto out;
	changed = pause_change(db, cfg, queue, NULL);
	if (changed == -1)
		rc = ROWQ_EXIT_FAILURE;
	else if (changed == 0)
		printf("%s: not paused\n", queue);
	else
		printf("%s: resumed; every daemon starts its workers again "
		    "within 2s\n", queue);
out:
	db_close(db);
	config_free(cfg);
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
