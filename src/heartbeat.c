/*
 * heartbeat.c: the daemons table (daemons_table:, default rowq_daemons),
 * a small table rowq owns, like the pause table: each daemon with a
 * console, or with daemons_table: set, writes its row every
 * HEARTBEAT_EVERY_MS (one INSERT ... ON DUPLICATE KEY UPDATE, and its
 * COMMIT), so that every console lists every such daemon that shares the
 * database, with its host, pid,
 * version, start, busy and running workers, the groups its busy workers
 * are on (running, for status --by: status_others.c), and when it was
 * last seen.
 * A row unseen for HEARTBEAT_GONE_INTERVALS is shown as gone; rows of
 * daemons gone a day are removed, by whichever console notices, once an
 * hour at most.
 *
 * The console writes it, from its own connection, so that the
 * supervisor and the workers never wait for it.  The table is created
 * when it is missing; a user without the right is told once, and the
 * console goes on without the Daemons page's row of its own.  A table
 * made before the running column gets it (ALTER TABLE) the first time a
 * daemon misses it; a user without ALTER is told once, and the row is
 * written without it (tried with it again once an hour): other daemons'
 * status --by cannot count this one's running rows then.
 */
#include "rowq.h"
#include "console.h"
#include "db.h"
#include "dialect.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEARTBEAT_PRUNE_EVERY_MS	(3600 * 1000)

/* The upgrade of a table made before the running column. */
#define HEARTBEAT_ADD_RUNNING	"ALTER TABLE %s ADD COLUMN running TEXT NULL"

/* What the console creates; rowq.yaml(5) gives the same DDL. */
#define HEARTBEAT_DDL \
	"CREATE TABLE IF NOT EXISTS %s (\n" \
	"  host VARCHAR(255) NOT NULL,\n" \
	"  pid INT UNSIGNED NOT NULL,\n" \
	"  version VARCHAR(32) NOT NULL,\n" \
	"  started DATETIME NOT NULL,\n" \
	"  busy INT UNSIGNED NOT NULL,\n" \
	"  workers INT UNSIGNED NOT NULL,\n" \
	"  console VARCHAR(255) NOT NULL DEFAULT '',\n" \
	"  seen DATETIME NOT NULL,\n" \
	"  running TEXT NULL,\n" \
	"  PRIMARY KEY (host, pid)\n" \
	") ENGINE=InnoDB"

const char *
heartbeat_table(const struct config *cfg)
{
	return cfg->daemons_table != NULL ? cfg->daemons_table :
	    HEARTBEAT_TABLE_DEFAULT;
}

void
heartbeat_init(struct heartbeat *h)
{
	memset(h, 0, sizeof(*h));
	if (gethostname(h->host, sizeof(h->host) - 1) == -1)
		snprintf(h->host, sizeof(h->host), "?");
	h->pid = (long)getppid();
}

/* Busy and running workers, as the daemon's status last said. */
static void
heartbeat_workers(const struct console_view *v, long long *busy,
    long long *workers)
{
	const struct line *l;
	size_t i = 0;

	*busy = *workers = 0;
	while ((l = status_live_find(&v->live, "queue", NULL, &i)) != NULL) {
		*busy += atoll(status_live_value(l, "busy"));
		*workers += atoll(status_live_value(l, "workers"));
	}
}

static enum db_status
heartbeat_write(struct db *db, struct heartbeat *h, struct console *c)
{
	static const char *const updated[] = { "version", "started", "busy",
	    "workers", "console", "seen", "running" };
	/* Stopping: the workers are gone, and nobody answers the socket. */
	const struct console_view *v = h->stopping ? NULL :
	    console_live_view(c);
	struct buf sql = { 0 }, where = { 0 }, running = { 0 };
	size_t nupdated = sizeof(updated) / sizeof(updated[0]);
	long long busy, workers, up_s = (wall_ms() - c->started_wall_ms) / 1000;
	unsigned long long affected;
	enum db_status st;
	struct db_stmt *s;

	busy = workers = 0;
	if (v != NULL)
		heartbeat_workers(v, &busy, &workers);
	if (c->cfg->console.on)
		buf_printf(&where, "%s://%s", c->cfg->console.tls_cert ?
		    "https" : "http", c->cfg->console.listen);
	else
		buf_puts(&where, "");
	/* Unknown (no answer from the daemon): null, not "none". */
	if (v == NULL)
		buf_puts(&running, "[]");
	else if (v->live.text != NULL)
		status_others_json(&running, c->cfg, &v->live);
	if (h->no_running)
		nupdated--;
	buf_printf(&sql, "INSERT INTO %s (host, pid, version, started, busy, "
	    "workers, console, seen%s) VALUES (?, ?, ?, NOW() - INTERVAL ? "
	    "SECOND, ?, ?, ?, NOW()%s)", heartbeat_table(c->cfg),
	    h->no_running ? "" : ", running", h->no_running ? "" : ", ?");
	dialect_upsert_alias(db_dialect(db), &sql);
	buf_puts(&sql, " ON DUPLICATE KEY UPDATE ");
	for (size_t i = 0; i < nupdated; i++) {
		buf_printf(&sql, "%s%s = ", i ? ", " : "", updated[i]);
		dialect_upsert_value(db_dialect(db), &sql, updated[i]);
	}
	struct value vals[] = {
		{ .type = VALUE_TEXT, .s = h->host, .len = strlen(h->host) },
		{ .type = VALUE_INT, .i = h->pid },
		{ .type = VALUE_TEXT, .s = ROWQ_VERSION,
		    .len = strlen(ROWQ_VERSION) },
		{ .type = VALUE_INT, .i = up_s > 0 ? up_s : 0 },
		{ .type = VALUE_INT, .i = busy },
		{ .type = VALUE_INT, .i = workers },
		{ .type = VALUE_TEXT, .s = where.data, .len = where.len },
		{ .type = running.data ? VALUE_TEXT : VALUE_NULL,
		    .s = running.data, .len = running.len },
	};
	if ((s = db_prepare(db, sql.data, &st)) != NULL) {
		st = db_stmt_exec(s, vals, sizeof(vals) / sizeof(vals[0]) -
		    (h->no_running ? 1 : 0), &affected);
		db_stmt_free(s);
	}
	if (st == DB_OK)
		st = db_commit(db);
	(void)db_rollback(db);
	buf_free(&sql);
	buf_free(&where);
	buf_free(&running);
	return st;
}

static void
heartbeat_create(struct db *db, const struct config *cfg)
{
	struct buf ddl = { 0 };

	buf_printf(&ddl, HEARTBEAT_DDL, heartbeat_table(cfg));
	if (db_run(db, ddl.data) == DB_OK)
		log_info("created the daemons table %s", heartbeat_table(cfg));
	buf_free(&ddl);
}

/*
 * A table made before the running column: add it.  Another daemon may
 * add it at the same time; the write after says whether it is there.
 */
static void
heartbeat_upgrade(struct db *db, const struct config *cfg, char *why,
    size_t whylen)
{
	struct buf ddl = { 0 };

	buf_printf(&ddl, HEARTBEAT_ADD_RUNNING, heartbeat_table(cfg));
	if (db_run(db, ddl.data) == DB_OK)
		log_info("daemons table %s: added the column running (the "
		    "groups each daemon's workers are on)", heartbeat_table(cfg));
	else
		snprintf(why, whylen, "%s", db_error(db));
	buf_free(&ddl);
}

/* The write, after creating or upgrading the table when it must. */
static enum db_status
heartbeat_write_table(struct db *db, struct heartbeat *h, struct console *c)
{
	enum db_status st = heartbeat_write(db, h, c);
	char why[256] = "another daemon added it, yet it is missing";

	if (st != DB_OK && db_no_such_table(db)) {
		heartbeat_create(db, c->cfg);
		st = heartbeat_write(db, h, c);
	}
	if (st != DB_OK && !h->no_running && db_no_such_column(db)) {
		heartbeat_upgrade(db, c->cfg, why, sizeof(why));
		if ((st = heartbeat_write(db, h, c)) != DB_OK &&
		    db_no_such_column(db)) {
			if (!h->running_told)
				log_warnx("daemons table %s: cannot add the "
				    "column running (%s): other daemons' status "
				    "--by will not count this one's running "
				    "rows; ALTER TABLE %s ADD COLUMN running "
				    "TEXT NULL, or give the user ALTER on it",
				    heartbeat_table(c->cfg), why,
				    heartbeat_table(c->cfg));
			h->running_told = true;
			h->no_running = true;
			h->running_retry_ms = now_ms() +
			    HEARTBEAT_PRUNE_EVERY_MS;
			st = heartbeat_write(db, h, c);
		}
	}
	if (st == DB_OK && !h->no_running && h->running_told) {
		log_info("daemons table %s: has the column running now",
		    heartbeat_table(c->cfg));
		h->running_told = false;
	}
	return st;
}

/*
 * The daemon stops (its workers are gone): its row says that nothing runs
 * here now, so that other daemons' status --by stops counting its rows at
 * once, not when its row is 30 seconds old.  Once, where the row could
 * be written before; the supervisor waits a moment for it, no more.
 */
void
heartbeat_last(struct heartbeat *h, struct console *c)
{
	struct db *db;

	if (h->failing || h->due_ms == 0 || (db = console_db(c)) == NULL)
		return;
	h->stopping = true;
	if (heartbeat_write(db, h, c) != DB_OK)
		log_warnx("daemons table %s: cannot say that this daemon "
		    "stopped: %s", heartbeat_table(c->cfg), db_error(db));
}

/* Rows of daemons gone a day: removed, once an hour at most. */
static void
heartbeat_prune(struct db *db, const struct config *cfg)
{
	struct buf sql = { 0 };
	unsigned long long n = 0;

	buf_printf(&sql, "DELETE FROM %s WHERE seen < NOW() - INTERVAL 1 DAY",
	    heartbeat_table(cfg));
	if (db_run_count(db, sql.data, &n) == DB_OK && db_commit(db) == DB_OK &&
	    n > 0)
		log_info("daemons table: removed %llu row%s of daemons gone a "
		    "day", n, n == 1 ? "" : "s");
	(void)db_rollback(db);
	buf_free(&sql);
}

/* The daemon's row, when it is due. */
void
heartbeat_tick(struct heartbeat *h, struct console *c, int64_t now,
    int64_t *next)
{
	struct db *db;
	enum db_status st;

	if (now < h->due_ms) {
		if (h->due_ms < *next)
			*next = h->due_ms;
		return;
	}
	h->due_ms = now + HEARTBEAT_EVERY_MS;
	if (h->due_ms < *next)
		*next = h->due_ms;
	if ((db = console_db(c)) == NULL)
		return;
	/* Once an hour, whether an administrator added the column. */
	if (h->no_running && now >= h->running_retry_ms)
		h->no_running = false;
	st = heartbeat_write_table(db, h, c);
	if (st != DB_OK && !h->failing)
		log_warnx("daemons table %s: cannot write this daemon's row "
		    "(the Daemons page will miss it): %s%s",
		    heartbeat_table(c->cfg), db_error(db), db_denied(db) ?
		    "; the database user needs CREATE, or SELECT, INSERT, "
		    "UPDATE and DELETE on it (rowq.yaml(5), DAEMONS TABLE)" :
		    "");
	else if (st == DB_OK && h->failing)
		log_info("daemons table %s: written again",
		    heartbeat_table(c->cfg));
	h->failing = st != DB_OK;
	if (st == DB_OK && now >= h->prune_due_ms) {
		heartbeat_prune(db, c->cfg);
		h->prune_due_ms = now + HEARTBEAT_PRUNE_EVERY_MS;
	}
}

/*
 * Every daemon's row, by a plain read; a missing table is no daemon.
 * 0, or -1 (db_error says why).
 */
int
heartbeat_read(struct db *db, const struct config *cfg,
    struct heartbeat_rows *out)
{
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };
	int rc = 0;

	memset(out, 0, sizeof(*out));
	buf_printf(&sql, "SELECT host, pid, version, started, busy, workers, "
	    "console, seen, TIMESTAMPDIFF(SECOND, seen, NOW()) FROM %s "
	    "ORDER BY host, pid", heartbeat_table(cfg));
	if (db_query(db, sql.data, &rs, &cols, &ncols) != DB_OK)
		rc = db_no_such_table(db) ? 0 : -1;
	else if (ncols == 9 && rs.nrows > 0) {
		out->row = xcalloc(rs.nrows, sizeof(*out->row));
		for (size_t i = 0; i < rs.nrows; i++) {
			char *const *v = rs.rows[i].value;
			struct heartbeat_row *d = &out->row[out->n++];
			d->host = xstrdup_or_empty(v[0]);
			d->pid = v[1] ? atol(v[1]) : 0;
			d->version = xstrdup_or_empty(v[2]);
			d->started = xstrdup_or_empty(v[3]);
			d->busy = v[4] ? atol(v[4]) : 0;
			d->workers = v[5] ? atol(v[5]) : 0;
			d->console = xstrdup_or_empty(v[6]);
			d->seen = xstrdup_or_empty(v[7]);
			d->seen_ago_s = v[8] ? atoll(v[8]) : 0;
		}
	}
	(void)db_rollback(db);
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	buf_free(&sql);
	return rc;
}

void
heartbeat_rows_free(struct heartbeat_rows *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->row[i].host);
		free(r->row[i].version);
		free(r->row[i].started);
		free(r->row[i].console);
		free(r->row[i].seen);
	}
	free(r->row);
	memset(r, 0, sizeof(*r));
}
