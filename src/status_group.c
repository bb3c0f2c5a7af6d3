/*
 * status_group.c: `rowq status QUEUE --by`, and the console's group view
 * (console_group.c): a queue's rows per group_by: value (a batch, a
 * workflow, a customer), how many wait, run and failed, and how old the
 * oldest waiting one is.
 *
 * What waits and what failed is one plain read (no lock: the session's
 * READ COMMITTED, as status_db.c reads) that groups at most
 * STATUS_GROUP_SCAN rows of the select and as many of failed_select, on
 * the server, and returns the groups with the most rows first, at most
 * --limit of them and the number of groups it saw.  What runs is what the
 * daemon's workers say on the status socket (each busy one names its
 * row's group), and what the other daemons' rows in the daemons table
 * say theirs ran at their last heartbeat (status_others.c).  The groups
 * running now are always among those shown.  What was done is the run
 * log's (status_group_done.c).
 */
#include "rowq.h"
#include "db.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>

/*
 * One more running row, or n, of a group: value copied; cut, the start
 * of a longer value (STATUS_GROUP_VALUE_MAX), stays apart from a whole
 * one, since either may be a group of its own.
 */
void
run_groups_add(struct run_groups *r, const char *value, bool cut, long n)
{
	size_t k;

	for (k = 0; k < r->n; k++)
		if (r->g[k].cut == cut && ((value == NULL &&
		    r->g[k].value == NULL) || (value != NULL &&
		    r->g[k].value != NULL && strcmp(value, r->g[k].value) == 0)))
			break;
	if (k == r->n) {
		r->g = xrealloc(r->g, (r->n + 1) * sizeof(*r->g));
		r->g[r->n++] = (struct run_group){ .value = value ?
		    xstrdup(value) : NULL, .cut = cut };
	}
	r->g[k].n += n;
}

void
run_groups_free(struct run_groups *r)
{
	for (size_t k = 0; k < r->n; k++)
		free(r->g[k].value);
	free(r->g);
	memset(r, 0, sizeof(*r));
}

/*
 * The groups the busy workers of q that lv's daemon names are on, added
 * to r.  A worker holds STATUS_GROUP_VALUE_MAX - 1 bytes of its value: one
 * that long may be cut.
 */
void
status_group_running(const struct live *lv, const struct queue *q,
    struct run_groups *r)
{
	const struct line *w;
	size_t i = 0;

	while ((w = status_live_find(lv, "worker", q->name, &i)) != NULL) {
		const char *v;
		if (strcmp(status_live_value(w, "state"), "busy") != 0)
			continue;
		v = strcmp(status_live_value(w, "group_null"), "1") == 0 ?
		    NULL : status_live_value(w, "group");
		run_groups_add(r, v, v != NULL &&
		    strlen(v) >= STATUS_GROUP_VALUE_MAX - 1, 1);
	}
}

/*
 * The grouping statement: the select's rows (at most STATUS_GROUP_SCAN)
 * and failed_select's, each as (group, wait, failed, age), summed per
 * group.  The nrun groups running now come first (their values bound as
 * parameters, a null one as has_null), then the most rows.  The age of
 * the oldest waiting row is the server's arithmetic, as status_db.c's:
 * Unix seconds when the age: column is a number, a time otherwise.
 */
static int
status_group_sql(struct db *db, const struct queue *q, size_t nrun,
    bool has_null, int limit, struct buf *sql)
{
	const struct column *cols;
	struct db_stmt *s;
	enum db_status st;
	size_t ncols;
	bool numeric = false;

	if ((s = db_prepare(db, q->select.positional, &st)) == NULL) {
		log_error("%s: %s", q->select.where, db_error(db));
		return -1;
	}
	cols = db_stmt_columns(s, &ncols);
	for (size_t i = 0; q->age.name != NULL && i < ncols; i++)
		if (strcmp(cols[i].name, q->age.name) == 0)
			numeric = cols[i].kind == COLUMN_INTEGER ||
			    cols[i].kind == COLUMN_NUMBER;
	db_stmt_free(s);

	buf_puts(sql, "SELECT x.g, SUM(x.w), SUM(x.f), ");
	if (q->age.name == NULL)
		buf_puts(sql, "NULL");
	else if (numeric)
		buf_puts(sql, "UNIX_TIMESTAMP() - MIN(x.a)");
	else
		buf_printf(sql, "TIMESTAMPDIFF(SECOND, MIN(x.a), %s)",
		    q->times_utc ? "UTC_TIMESTAMP()" : "NOW()");
	buf_puts(sql, ", COUNT(*) OVER (), SUM(SUM(x.w)) OVER (), "
	    "SUM(SUM(x.f)) OVER ()\nFROM (SELECT t.");
	failed_quote(sql, q->group_by.name);
	buf_puts(sql, " AS g, 1 AS w, 0 AS f, ");
	if (q->age.name != NULL) {
		buf_puts(sql, "t.");
		failed_quote(sql, q->age.name);
	} else
		buf_puts(sql, "NULL");
	buf_printf(sql, " AS a FROM (\n%s\nLIMIT %d) t", q->select.positional,
	    STATUS_GROUP_SCAN);
	if (q->failed_select.text != NULL) {
		buf_puts(sql, "\nUNION ALL SELECT u.");
		failed_quote(sql, q->group_by.name);
		buf_printf(sql, ", 0, 1, NULL FROM (\n%s\nLIMIT %d) u",
		    q->failed_select.positional, STATUS_GROUP_SCAN);
	}
	buf_puts(sql, ") x\nGROUP BY x.g ORDER BY ");
	if (nrun > 0 || has_null) {
		/* COALESCE: a null group's IN is null, which sorts last. */
		buf_puts(sql, "COALESCE(");
		if (nrun > 0) {
			buf_puts(sql, "x.g IN (");
			for (size_t i = 0; i < nrun; i++)
				buf_puts(sql, i ? ", ?" : "?");
			buf_puts(sql, ")");
		}
		if (has_null)
			buf_printf(sql, "%sx.g IS NULL", nrun ? " OR " : "");
		buf_puts(sql, ", 0) DESC, ");
	}
	/* Enough to hold every running group and limit more. */
	buf_printf(sql, "SUM(x.w) + SUM(x.f) DESC, x.g LIMIT %zu",
	    (size_t)limit + nrun + (has_null ? 1 : 0));
	return 0;
}

static long
status_group_num(const struct row *row, int i)
{
	return row->value[i] != NULL ? atol(row->value[i]) : 0;
}

/* Whether a worker's group (maybe cut: its start) is value. */
static bool
status_group_same(const struct run_group *r, const char *value)
{
	if (r->value == NULL || value == NULL)
		return r->value == NULL && value == NULL;
	if (r->cut)
		return strncmp(r->value, value, strlen(r->value)) == 0;
	return strcmp(r->value, value) == 0;
}

/* Running groups first, then the most rows, then by value. */
static int
status_group_cmp(const void *a, const void *b)
{
	const struct status_group *x = a, *y = b;
	long tx = x->wait + (x->run > 0 ? x->run : 0) +
	    (x->failed > 0 ? x->failed : 0);
	long ty = y->wait + (y->run > 0 ? y->run : 0) +
	    (y->failed > 0 ? y->failed : 0);

	if ((x->run > 0) != (y->run > 0))
		return x->run > 0 ? -1 : 1;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	if (x->value == NULL || y->value == NULL)
		return x->value == NULL ? (y->value == NULL ? 0 : -1) : 1;
	return strcmp(x->value, y->value);
}

/* The database's groups into out, with the running counts merged. */
static void
status_group_fill(const struct queue *q, const struct rowset *rs,
    struct run_groups *rg, bool run_known, struct status_groups *out)
{
	struct run_group *run = rg->g;
	size_t nrun = rg->n;

	if (rs->nrows > 0) {
		out->total = status_group_num(&rs->rows[0], 4);
		out->waiting = status_group_num(&rs->rows[0], 5);
		out->failed = status_group_num(&rs->rows[0], 6);
	}
	out->g = xcalloc(rs->nrows + nrun + 1, sizeof(*out->g));
	for (size_t i = 0; i < rs->nrows; i++) {
		const struct row *row = &rs->rows[i];
		struct status_group *g = &out->g[out->n++];
		g->value = row->value[0] ? xstrdup(row->value[0]) : NULL;
		g->wait = status_group_num(row, 1);
		g->failed = out->failed_known ? status_group_num(row, 2) : -1;
		g->oldest_age_s = row->value[3] ? atoll(row->value[3]) : -1;
		g->run = run_known ? 0 : -1;
		for (size_t k = 0; k < nrun; k++)
			if (!run[k].matched && status_group_same(&run[k],
			    g->value)) {
				run[k].matched = true;
				g->run += run[k].n;
			}
		/* A row a worker is on still matches, unless it is leased. */
		if (g->run > 0 && !q->lease.enabled)
			g->wait = g->wait > g->run ? g->wait - g->run : 0;
	}
	for (size_t k = 0; k < nrun; k++) {
		struct status_group *g;
		if (run[k].matched)
			continue;
		g = &out->g[out->n++];
		g->value = run[k].value ? xstrdup(run[k].value) : NULL;
		g->run = run[k].n;
		g->failed = out->failed_known ? 0 : -1;
		g->oldest_age_s = -1;
		out->total++;
	}
	qsort(out->g, out->n, sizeof(*out->g), status_group_cmp);
	while (out->n > (size_t)out->limit)
		free(out->g[--out->n].value);
}

/*
 * q's groups (q->group_by set) into out, at most limit of them: the
 * database's plain read, and the running rows lv's workers name and the
 * other daemons' rows say (lv may be a daemon that did not answer; run
 * is -1 when no daemon told).  Returns 0, or -1 when the database failed
 * (logged, out empty).
 */
int
status_group_read(struct db *db, const struct config *cfg,
    const struct queue *q, const struct live *lv, int limit,
    struct status_groups *out)
{
	struct run_groups run = { 0 };
	size_t nvals = 0, ncols = 0;
	struct value *vals;
	struct buf sql = { 0 };
	struct rowset rs = { 0 };
	struct db_stmt *s = NULL;
	enum db_status st;
	bool has_null = false;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->limit = limit;
	out->failed_known = q->failed_select.text != NULL;
	if (lv != NULL && lv->text != NULL)
		status_group_running(lv, q, &run);	/* fresh: its own */
	status_others_read(db, cfg, q, lv, &run, &out->others);
	out->answered = lv != NULL && lv->text != NULL;
	out->run_known = out->answered || out->others.counted > 0;
	vals = xcalloc(run.n + 1, sizeof(*vals));
	for (size_t k = 0; k < run.n; k++) {
		if (run.g[k].value == NULL) {
			has_null = true;
			continue;
		}
		vals[nvals].type = VALUE_TEXT;
		vals[nvals].s = run.g[k].value;
		vals[nvals++].len = strlen(run.g[k].value);
	}
	if (status_group_sql(db, q, nvals, has_null, limit, &sql) == -1)
		goto done;
	s = db_prepare(db, sql.data, &st);
	if (s == NULL || db_stmt_fetch_all(s, vals, nvals, &rs) != DB_OK) {
		log_error("%s: status --by: %s", q->group_by.where,
		    db_error(db));
		goto done;
	}
	(void)db_stmt_columns(s, &ncols);
	status_group_fill(q, &rs, &run, out->run_known, out);
	status_group_done(db, q, out);
	rc = 0;
done:
	(void)db_rollback(db);	/* a read: nothing to keep */
	rowset_free(&rs, ncols);
	db_stmt_free(s);
	buf_free(&sql);
	free(vals);
	run_groups_free(&run);
	return rc;
}

/* Whether group_by: is a column of the select (else check said so). */
static bool
status_group_in_select(struct db *db, const struct queue *q)
{
	const struct column *cols;
	struct db_stmt *s;
	enum db_status st;
	size_t ncols;
	bool in = false;

	if ((s = db_prepare(db, q->select.positional, &st)) == NULL)
		return false;
	cols = db_stmt_columns(s, &ncols);
	for (size_t i = 0; i < ncols; i++)
		in |= strcmp(cols[i].name, q->group_by.name) == 0;
	db_stmt_free(s);
	return in;
}

/*
 * rowq check: the grouping statement prepares (group_by: is a column of
 * the select, and of failed_select when there is one).  Returns the
 * problems logged.
 */
int
status_group_check(struct db *db, const struct queue *q)
{
	struct buf sql = { 0 };
	struct db_stmt *s;
	enum db_status st;
	int problems = 0;

	if (q->group_by.name == NULL || !status_group_in_select(db, q))
		return 0;
	if (status_group_sql(db, q, 0, false, 1, &sql) == -1)
		problems++;
	else if ((s = db_prepare(db, sql.data, &st)) == NULL) {
		log_error("%s: %s cannot group the select%s by it: %s",
		    q->group_by.where, q->group_by.name,
		    q->failed_select.text ? " and failed_select" : "",
		    db_error(db));
		problems++;
	} else
		db_stmt_free(s);
	buf_free(&sql);
	return problems;
}

void
status_group_free(struct status_groups *gs)
{
	for (size_t i = 0; i < gs->n; i++)
		free(gs->g[i].value);
	free(gs->g);
	memset(gs, 0, sizeof(*gs));
}

/* ---- shown ---- */

static void
status_group_cell(char *out, size_t len, long n)
{
	if (n < 0)
		snprintf(out, len, "-");
	else
		snprintf(out, len, "%ld", n);
}

/* Whose workers RUN counts, and how fresh the others' figures are. */
static void
status_group_run_note(const struct status_groups *gs)
{
	const struct status_others *o = &gs->others;

	if (!gs->run_known)
		printf("(RUN: no daemon answered on the status socket%s%s)\n",
		    o->known ? ", and no other daemon's row in the daemons "
		    "table is live" : "; the daemons table cannot be read: ",
		    o->known ? "" : o->error);
	else if (o->counted > 0)
		printf("(RUN: %s%ld other daemon%s workers, as of %s last "
		    "heartbeat, %llds ago at most)\n", gs->answered ?
		    "this daemon's and " : "no daemon answered on the status "
		    "socket; ", o->counted, o->counted == 1 ? "'s" : "s'",
		    o->counted == 1 ? "its" : "their", o->oldest_s);
	else if (!o->known)
		printf("(RUN: this daemon's workers only; the daemons table "
		    "cannot be read: %s)\n", o->error);
	if (o->blind > 0)
		printf("(RUN: %ld other daemon%s without running groups in the "
		    "daemons table: not counted)\n", o->blind,
		    o->blind == 1 ? "" : "s");
}

/* What DONE counted, under the table, where the queue keeps runs. */
static void
status_group_table_done(const struct queue *q, const struct status_groups *gs)
{
	struct buf b = { 0 };

	if (!q->runs.enabled)
		return;
	status_group_done_note(&b, q, gs);
	printf("(DONE: %s)\n", b.data);
	buf_free(&b);
}

static void
status_group_table(const struct queue *q, const struct status_groups *gs)
{
	printf("%s grouped by %s: %zu of %ld group%s, running ones first, "
	    "then the most rows (--limit %d)\n", q->name, q->group_by.name,
	    gs->n, gs->total, gs->total == 1 ? "" : "s", gs->limit);
	printf("%-32s %8s %8s %8s %8s", "GROUP", "WAIT", "RUN", "FAILED",
	    "OLDEST");
	printf(q->runs.enabled ? " %8s\n" : "\n", "DONE");
	for (size_t i = 0; i < gs->n; i++) {
		const struct status_group *g = &gs->g[i];
		char wait[24], run[24], failed[24], age[32], done[24];
		status_group_cell(wait, sizeof(wait), g->wait);
		status_group_cell(run, sizeof(run), g->run);
		status_group_cell(failed, sizeof(failed), g->failed);
		status_group_cell(done, sizeof(done), g->done);
		if (g->oldest_age_s < 0)
			snprintf(age, sizeof(age), "-");
		else
			duration_format(g->oldest_age_s * 1000, age,
			    sizeof(age));
		printf("%-32s %8s %8s %8s %8s", g->value ? g->value : "NULL",
		    wait, run, failed, age);
		printf(q->runs.enabled ? " %8s\n" : "\n", done);
	}
	if ((long)gs->n < gs->total)
		printf("(%ld group%s left out: --limit N shows more)\n",
		    gs->total - (long)gs->n, gs->total - (long)gs->n == 1 ?
		    "" : "s");
	if (gs->waiting >= STATUS_GROUP_SCAN)
		printf("(WAIT counts the first %d rows the select finds)\n",
		    STATUS_GROUP_SCAN);
	if (gs->failed >= STATUS_GROUP_SCAN)
		printf("(FAILED counts the first %d rows failed_select finds)\n",
		    STATUS_GROUP_SCAN);
	status_group_run_note(gs);
	status_group_table_done(q, gs);
}

static void
status_group_json_num(struct buf *b, const char *key, long long n, bool known)
{
	if (known)
		buf_printf(b, ",\"%s\":%lld", key, n);
	else
		buf_printf(b, ",\"%s\":null", key);
}

/*
 * Whose workers run counts: the daemon that answered, and the others
 * as of their last heartbeat (null: the daemons table cannot be read).
 */
static void
status_group_json_others(struct buf *b, const struct status_groups *gs)
{
	const struct status_others *o = &gs->others;

	buf_printf(b, ",\"run_daemon_answered\":%s,\"run_other_daemons\":",
	    gs->answered ? "true" : "false");
	if (!o->known) {
		buf_puts(b, "null");
		return;
	}
	buf_printf(b, "{\"counted\":%ld,\"without_groups\":%ld",
	    o->counted, o->blind);
	status_group_json_num(b, "oldest_heartbeat_seconds", o->oldest_s,
	    o->oldest_s >= 0);
	buf_putc(b, '}');
}

/* The --json answer (the console's /api/queue/NAME/groups too). */
void
status_group_json(struct buf *b, const struct queue *q,
    const struct status_groups *gs)
{
	buf_puts(b, "{\"queue\":");
	json_string(b, q->name, strlen(q->name));
	buf_puts(b, ",\"group_by\":");
	json_string(b, q->group_by.name, strlen(q->group_by.name));
	buf_printf(b, ",\"limit\":%d,\"groups_total\":%ld,\"groups_left_out\""
	    ":%ld,\"scan_limit\":%d,\"waiting_capped\":%s,\"failed_capped\":%s",
	    gs->limit, gs->total, gs->total > (long)gs->n ? gs->total -
	    (long)gs->n : 0, STATUS_GROUP_SCAN, gs->waiting >=
	    STATUS_GROUP_SCAN ? "true" : "false", gs->failed >=
	    STATUS_GROUP_SCAN ? "true" : "false");
	status_group_json_others(b, gs);
	status_group_json_num(b, "done_window", STATUS_GROUP_RUNS,
	    gs->done_known);
	status_group_json_num(b, "done_runs", gs->done_runs, gs->done_known);
	status_group_json_num(b, "done_oldest_seconds", gs->done_oldest_s,
	    gs->done_known && gs->done_oldest_s >= 0);
	buf_puts(b, ",\"groups\":[");
	for (size_t i = 0; i < gs->n; i++) {
		const struct status_group *g = &gs->g[i];
		buf_puts(b, i ? ",{\"group\":" : "{\"group\":");
		if (g->value != NULL)
			json_string(b, g->value, strlen(g->value));
		else
			buf_puts(b, "null");
		status_group_json_num(b, "wait", g->wait, true);
		status_group_json_num(b, "run", g->run, g->run >= 0);
		status_group_json_num(b, "failed", g->failed, g->failed >= 0);
		status_group_json_num(b, "oldest_age_seconds", g->oldest_age_s,
		    g->oldest_age_s >= 0);
		status_group_json_num(b, "done", g->done, g->done >= 0);
		buf_putc(b, '}');
	}
	buf_puts(b, "]}\n");
}

/*
 * `rowq status QUEUE --by [--limit N] [--json]`.  Exit 0; 1 when the
 * database cannot be asked; 2 for an unknown queue or one without
 * group_by:; 78 for a bad configuration.
 */
int
status_group_command(const char *path, const char *name, bool json, int limit)
{
	struct config *cfg = config_load(path);
	struct status_groups gs = { 0 };
	struct live lv = { 0 };
	const struct queue *q;
	struct db *db;
	enum db_status st;
	int rc = ROWQ_EXIT_OK;

	if (cfg == NULL)
		return ROWQ_EXIT_CONFIG;
	if ((q = config_queue(cfg, name)) == NULL) {
		log_error("%s: no queue named %s", path, name);
		config_free(cfg);
		return ROWQ_EXIT_USAGE;
	}
	if (q->group_by.name == NULL) {
		log_error("%s: queue %s has no group_by: (the column that "
		    "groups its rows) for status --by", q->where, name);
		config_free(cfg);
		return ROWQ_EXIT_USAGE;
	}
	db = db_open(&cfg->db, &st);
	if (st != DB_OK) {
		log_error("%s: database: cannot connect: %s", path,
		    db_error(db));
		db_close(db);
		config_free(cfg);
		return ROWQ_EXIT_FAILURE;
	}
	/*
	 * Two readings a moment apart: a row claimed or finished between
	 * them may be counted in WAIT or RUN as it was a moment before.
	 */
	status_live_load(&lv, cfg);
	if (status_group_read(db, cfg, q, &lv, limit, &gs) == -1)
		rc = ROWQ_EXIT_FAILURE;
	else if (json) {
		struct buf b = { 0 };
		status_group_json(&b, q, &gs);
		fputs(b.data, stdout);
		buf_free(&b);
	} else
		status_group_table(q, &gs);
	fflush(stdout);
	db_close(db);
	status_group_free(&gs);
	status_live_free(&lv);
	config_free(cfg);
	return rc;
}
