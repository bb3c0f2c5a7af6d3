/*
 * requeue.c: `rowq requeue QUEUE KEY...` and `rowq requeue QUEUE --all
 * [--where-error TEXT]`: make failed rows waiting again with the queue's
 * requeue statement; `rowq discard` the same with its discard statement,
 * which gives them up (deletes them, or marks them so that
 * failed_select no longer finds them).  One row per execute, in chunks
 * of REQUEUE_CHUNK keys.
 * Each chunk is one short transaction, and a pause follows it, so that
 * the application's own statements get the rows' locks in between.  A key
 * whose statement changes no row is reported, and the others go on.  The
 * console (console.c) runs the same, quietly.
 */
#include "rowq.h"
#include "db.h"
#include "claim.h"
#include "commands.h"
#include "runs.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define REQUEUE_CHUNK		1000	/* keys per transaction */
#define REQUEUE_PAUSE_MS	200	/* between two chunks */
#define REQUEUE_TRIES		3	/* of a chunk after a deadlock */

const struct failed_action requeue_action = {
	"requeue", "requeued", offsetof(struct queue, requeue),
};
const struct failed_action discard_action = {
	"discard", "discarded", offsetof(struct queue, discard),
};
const struct failed_action cancel_action = {
	"cancel", "cancelled", offsetof(struct queue, cancel),
};

/* The action of a command's or a form's name; NULL: none such. */
const struct failed_action *
failed_action_named(const char *name)
{
	const struct failed_action *all[] = { &requeue_action,
	    &discard_action, &cancel_action };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (name != NULL && strcmp(name, all[i]->name) == 0)
			return all[i];
	return NULL;
}

const struct sql *
failed_action_sql(const struct queue *q, const struct failed_action *a)
{
	return (const struct sql *)((const char *)q + a->offset);
}

static void
requeue_pause(void)
{
	struct timespec ts = { 0, REQUEUE_PAUSE_MS * 1000000L };

	while (nanosleep(&ts, &ts) == -1)
		;
}

/*
 * Where requeue's and discard's parameters come from: the key, or a
 * column of failed_select's row of that key (a batch's id, for a fan-in's
 * counter in discard), read by key in the chunk's transaction before its
 * statements run.  A name that is neither is given the key, as it always
 * was (rowq check refuses it).  Returns an exit status.
 */
static int
requeue_sources(struct requeue_run *run)
{
	const struct queue *q = run->what->q;
	const struct sql *sql = failed_action_sql(q, run->action);
	const struct column *cols = NULL;
	struct buf b = { 0 };
	size_t ncols = 0, j = 0;
	bool any = false;
	int rc = ROWQ_EXIT_OK;

	if ((run->key_column = failed_key_column(run->what->db, q)) == NULL)
		return ROWQ_EXIT_CONFIG;
	if (q->failed_select.text != NULL) {
		buf_printf(&b, "SELECT * FROM (\n%s\n) AS rowq_failed WHERE "
		    "rowq_failed.", q->failed_select.positional);
		failed_quote(&b, run->key_column);
		buf_puts(&b, " = ? LIMIT 1");
		run->row_stmt = failed_prepare(run->what->db, b.data,
		    q->failed_select.where, &rc);
		buf_free(&b);
		if (run->row_stmt == NULL)
			return rc;
		cols = db_stmt_columns(run->row_stmt, &ncols);
	}
	for (; sql != NULL && sql->text != NULL && j < SQL_LIST_MAX;
	    sql = sql->next, j++) {
		run->source[j] = xcalloc(sql->nparams ? sql->nparams : 1,
		    sizeof(int));
		for (size_t i = 0; i < sql->nparams; i++) {
			run->source[j][i] = -1;
			if (strcasecmp(sql->params[i], run->key_column) == 0)
				continue;
			for (size_t c = 0; c < ncols; c++)
				if (strcasecmp(cols[c].name,
				    sql->params[i]) == 0) {
					run->source[j][i] = (int)c;
					any = true;
					break;
				}
		}
	}
	if (!any) {
		db_stmt_free(run->row_stmt);
		run->row_stmt = NULL;
	}
	return ROWQ_EXIT_OK;
}

/*
 * The j-th statement of the action's list for one key: each parameter
 * the key, or a column of row, the key's row in failed_select.
 */
static enum db_status
requeue_exec(struct requeue_run *run, size_t j, const struct value *key,
    const struct rowset *row, unsigned long long *affected)
{
	const struct sql *sql = failed_action_sql(run->what->q, run->action);
	const struct column *cols = NULL;
	size_t np, ncols = 0;
	struct value *v;
	enum db_status st;

	for (size_t i = 0; i < j; i++)
		sql = sql->next;
	if (run->row_stmt != NULL)
		cols = db_stmt_columns(run->row_stmt, &ncols);
	np = sql->nparams;
	v = xcalloc(np ? np : 1, sizeof(*v));
	for (size_t i = 0; i < np; i++) {
		int c = run->source[j] != NULL ? run->source[j][i] : -1;
		if (c < 0 || cols == NULL || row->nrows == 0)
			v[i] = *key;
		else
			db_value_of_column(&v[i], &cols[c],
			    row->rows[0].value[c], row->rows[0].len[c]);
	}
	*affected = 0;
	st = db_stmt_exec(run->stmt[j], v, np, affected);
	free(v);
	return st;
}

/*
 * Read the key's row of failed_select, where a statement takes one of its
 * columns: *found false when failed_select has no row of that key, which
 * then is not acted on.
 */
static enum db_status
requeue_read_row(struct requeue_run *run, const struct value *key,
    struct rowset *row, bool *found)
{
	size_t ncols = 0;
	enum db_status st;

	*found = true;
	if (run->row_stmt == NULL)
		return DB_OK;
	(void)db_stmt_columns(run->row_stmt, &ncols);
	rowset_clear(row, ncols);
	row->nrows = 0;
	st = db_stmt_fetch_all(run->row_stmt, key, 1, row);
	*found = st == DB_OK && row->nrows > 0;
	return st;
}

/*
 * A cancelled row's run, in the cancel's transaction, where the queue
 * keeps a run log: outcome cancel, try 0 (the canceller knows no try;
 * the worker's try of a running row leaves none, its lease gone), who
 * cancelled it as its text.
 */
static enum db_status
requeue_cancel_run(struct requeue_run *run, const struct value *key)
{
	const struct queue *q = run->what->q;
	char host[256] = "";
	int64_t now = wall_ms() * 1000;
	const char *by = run->by != NULL ? run->by : "rowq cancel";
	struct run_rec r = { .queue = q->name, .key = key->s,
	    .key_len = key->len, .outcome = "cancel", .reason = "cancelled",
	    .exit_status = -1, .started_us = now, .finished_us = now,
	    .host = host, .pid = (long)getpid(), .error = by,
	    .error_len = strlen(by) };
	struct buf sql = { 0 };
	enum db_status st;

	(void)gethostname(host, sizeof(host) - 1);
	runs_insert_head(&sql, q, false);
	buf_puts(&sql, "VALUES (");
	runs_values(&sql, &r);
	buf_putc(&sql, ')');
	st = db_run(run->what->db, sql.data);
	buf_free(&sql);
	return st;
}

/*
 * One chunk of keys in one transaction: every parameter of requeue is
 * the key.  A deadlock or lock wait rolls it back and runs it again,
 * after a pause, up to REQUEUE_TRIES times.  Prints each key's outcome
 * once the transaction has committed.  Returns an exit status.
 */
static int
requeue_chunk(struct requeue_run *run, const struct value *keys, size_t n)
{
	const struct sql *sql = failed_action_sql(run->what->q, run->action);
	struct db *db = run->what->db;
	bool *hit = xcalloc(n, sizeof(*hit)), found;
	enum db_status st = DB_RETRY;
	unsigned long long affected;
	struct rowset row = { 0 };
	size_t nrowcols = 0;

	for (int tries = 0; st == DB_RETRY && tries < REQUEUE_TRIES; tries++) {
		if (tries > 0) {
			(void)db_rollback(db);
			requeue_pause();
		}
		st = DB_OK;
		for (size_t k = 0; k < n && st == DB_OK; k++) {
			hit[k] = false;
			st = requeue_read_row(run, &keys[k], &row, &found);
			if (st != DB_OK || !found)
				continue;
			st = requeue_exec(run, 0, &keys[k], &row, &affected);
			hit[k] = affected > 0;
			/*
			 * A list: the first statement is the row's own; the
			 * rest run, in order, only when it changed the row.
			 */
			for (size_t j = 1; hit[k] && st == DB_OK &&
			    j < run->nstmts; j++)
				st = requeue_exec(run, j, &keys[k], &row,
				    &affected);
			if (hit[k] && st == DB_OK &&
			    run->action == &cancel_action &&
			    run->what->q->runs.enabled)
				st = requeue_cancel_run(run, &keys[k]);
		}
		if (st == DB_OK)
			st = db_commit(db);
	}
	if (st != DB_OK) {
		log_error("%s: %s; the %zu keys of this chunk stay as they were",
		    sql->where, db_error(db), n);
		(void)db_rollback(db);
	}
	for (size_t k = 0; k < n && st == DB_OK; k++) {
		if (hit[k])
			run->done++;
		else
			run->missed++;
		if (!run->quiet)
			printf("%s%s %.*s%s\n", hit[k] ? "" : "not ",
			    run->action->done, (int)keys[k].len, keys[k].s,
			    hit[k] ? "" : run->action == &cancel_action ?
			    ": the statement changed no row" :
			    ": no failed row with this key");
	}
	fflush(stdout);
	free(hit);
	if (run->row_stmt != NULL)
		(void)db_stmt_columns(run->row_stmt, &nrowcols);
	rowset_free(&row, nrowcols);
	return st == DB_OK ? ROWQ_EXIT_OK : ROWQ_EXIT_FAILURE;
}

/*
 * Keys bound as they are given, each with its own type and length (the
 * console's, decoded from the page byte for byte, binary ones as blobs),
 * a chunk of REQUEUE_CHUNK at a time.
 */
int
requeue_values(struct requeue_run *run, const struct value *keys, size_t n)
{
	int rc = ROWQ_EXIT_OK;

	for (size_t at = 0; at < n && rc == ROWQ_EXIT_OK;
	    at += REQUEUE_CHUNK) {
		if (at > 0)
			requeue_pause();
		rc = requeue_chunk(run, keys + at, n - at < REQUEUE_CHUNK ?
		    n - at : REQUEUE_CHUNK);
	}
	return rc;
}

/* The keys named on the command line, bound as text. */
int
requeue_keys(struct requeue_run *run, char **keys, size_t n)
{
	struct value *v = xcalloc(n ? n : 1, sizeof(*v));
	int rc;

	for (size_t k = 0; k < n; k++) {
		v[k].type = VALUE_TEXT;
		v[k].s = keys[k];
		v[k].len = strlen(keys[k]);
	}
	rc = requeue_values(run, v, n);
	free(v);
	return rc;
}

/* ---- --all ---- */

/* The first column of failed_select whose name holds "error". */
const char *
requeue_error_column(const struct column *cols, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *c = cols[i].name;
		for (; *c != '\0'; c++)
			if (strncasecmp(c, "error", 5) == 0)
				return cols[i].name;
	}
	return NULL;
}

/* TEXT for LIKE, its own % _ and \ matching only themselves. */
void
requeue_like(struct buf *b, const char *text)
{
	buf_putc(b, '%');
	for (; *text != '\0'; text++) {
		if (*text == '%' || *text == '_' || *text == '\\')
			buf_putc(b, '\\');
		buf_putc(b, *text);
	}
	buf_putc(b, '%');
}

/*
 * The select of the next chunk's keys: failed_select's rows, those whose
 * error column holds TEXT, past the last key seen, in key order.  The
 * key only grows, so a row that could not be requeued is not met again,
 * and the run ends.
 */
static void
requeue_select_sql(struct buf *b, const struct queue *q, const char *key,
    const char *errcol, bool after)
{
	buf_puts(b, "SELECT rowq_failed.");
	failed_quote(b, key);
	buf_printf(b, " FROM (\n%s\n) AS rowq_failed WHERE 1",
	    q->failed_select.positional);
	if (errcol != NULL) {
		buf_puts(b, " AND rowq_failed.");
		failed_quote(b, errcol);
		buf_puts(b, " LIKE ?");
	}
	if (after) {
		buf_puts(b, " AND rowq_failed.");
		failed_quote(b, key);
		buf_puts(b, " > ?");
	}
	buf_puts(b, " ORDER BY rowq_failed.");
	failed_quote(b, key);
	buf_printf(b, " LIMIT %d", REQUEUE_CHUNK);
}

/*
 * Every key failed_select returns (with TEXT: whose error column holds
 * it), a chunk at a time.  The select of each chunk is a plain read.
 */
int
requeue_all(struct requeue_run *run, const char *where_error)
{
	const struct queue *q = run->what->q;
	struct db *db = run->what->db;
	const char *key = run->key_column;
	const char *errcol = NULL;
	struct db_stmt *first = NULL, *next = NULL, *s;
	struct buf sql = { 0 }, like = { 0 }, last = { 0 };
	struct rowset rs = { 0 };
	struct value params[2], *keys = NULL;
	const struct column *cols;
	size_t ncols, np;
	int rc = ROWQ_EXIT_OK;

	if (where_error != NULL) {
		if ((s = failed_prepare(db, q->failed_select.positional,
		    q->failed_select.where, &rc)) == NULL)
			return rc;
		cols = db_stmt_columns(s, &ncols);
		if ((errcol = requeue_error_column(cols, ncols)) != NULL)
			errcol = xstrdup(errcol);
		db_stmt_free(s);
		if (errcol == NULL) {
			log_error("%s: --where-error needs a column of "
			    "failed_select whose name holds \"error\", such "
			    "as last_error", q->failed_select.where);
			return ROWQ_EXIT_USAGE;
		}
		requeue_like(&like, where_error);
	}
	requeue_select_sql(&sql, q, key, errcol, false);
	first = failed_prepare(db, sql.data, q->failed_select.where, &rc);
	buf_reset(&sql);
	requeue_select_sql(&sql, q, key, errcol, true);
	if (first != NULL)
		next = failed_prepare(db, sql.data, q->failed_select.where, &rc);
	if (next != NULL) {
		cols = db_stmt_columns(next, &ncols);
		keys = xcalloc(REQUEUE_CHUNK, sizeof(*keys));
	}
	for (bool after = false; next != NULL && rc == ROWQ_EXIT_OK;
	    after = true) {
		np = 0;
		if (errcol != NULL) {
			params[np] = (struct value){ .type = VALUE_TEXT,
			    .s = like.data, .len = like.len };
			np++;
		}
		if (after)
			db_value_of_column(&params[np++], &cols[0],
			    last.data, last.len);
		rowset_clear(&rs, 1);
		rs.nrows = 0;
		if (db_stmt_fetch_all(after ? next : first, params, np,
		    &rs) != DB_OK) {
			log_error("%s: %s", q->failed_select.where,
			    db_error(db));
			rc = ROWQ_EXIT_FAILURE;
			break;
		}
		if (rs.nrows == 0)
			break;
		if (after)
			requeue_pause();
		for (size_t k = 0; k < rs.nrows; k++)
			db_value_of_column(&keys[k], &cols[0],
			    rs.rows[k].value[0] ? rs.rows[k].value[0] : "",
			    rs.rows[k].len[0]);
		rc = requeue_chunk(run, keys, rs.nrows);
		buf_reset(&last);
		buf_append(&last, rs.rows[rs.nrows - 1].value[0] ?
		    rs.rows[rs.nrows - 1].value[0] : "",
		    rs.rows[rs.nrows - 1].len[0]);
		if (rs.nrows < REQUEUE_CHUNK)
			break;
	}
	rowset_free(&rs, 1);
	free(keys);
	db_stmt_free(first);
	db_stmt_free(next);
	free((char *)errcol);
	buf_free(&sql);
	buf_free(&like);
	buf_free(&last);
	return rc;
}

/*
 * Prepare the action's statement on what's connection; returns an exit
 * status, and on ROWQ_EXIT_OK run is ready for requeue_keys or
 * requeue_all, and requeue_end frees it.
 */
int
requeue_begin(struct requeue_run *run, const struct failed_ctx *what,
    const struct failed_action *action)
{
	const struct sql *sql = failed_action_sql(what->q, action);
	int rc = ROWQ_EXIT_OK;

	memset(run, 0, sizeof(*run));
	run->what = what;
	run->action = action;
	if (sql->nparams == 0) {
		log_error("%s: takes no parameter: give it the queue's key",
		    sql->where);
		return ROWQ_EXIT_CONFIG;
	}
	if (action == &cancel_action && what->q->runs.enabled &&
	    runs_ensure(what->db, what->q) != 0)
		return ROWQ_EXIT_FAILURE;
	if (action != &cancel_action &&
	    (rc = requeue_sources(run)) != ROWQ_EXIT_OK)
		return rc;
	for (; sql != NULL && sql->text != NULL && rc == ROWQ_EXIT_OK &&
	    run->nstmts < sizeof(run->stmt) / sizeof(run->stmt[0]);
	    sql = sql->next) {
		run->stmt[run->nstmts] = failed_prepare(what->db,
		    sql->positional, sql->where, &rc);
		if (run->stmt[run->nstmts] != NULL)
			run->nstmts++;
	}
	return rc;
}

void
requeue_end(struct requeue_run *run)
{
	for (size_t i = 0; i < run->nstmts; i++)
		db_stmt_free(run->stmt[i]);
	run->nstmts = 0;
	for (size_t i = 0; i < SQL_LIST_MAX; i++) {
		free(run->source[i]);
		run->source[i] = NULL;
	}
	db_stmt_free(run->row_stmt);
	run->row_stmt = NULL;
	free(run->key_column);
	run->key_column = NULL;
}

/*
 * `rowq requeue QUEUE KEY...` or `rowq requeue QUEUE --all [--where-error
 * TEXT]`, and `rowq discard` alike; argv[0] is "requeue" or "discard".
 * Exit 0 when every key was requeued (or discarded), 1 when one matched
 * no row or the database failed.
 */
int
requeue_command(const char *path, int argc, char **argv)
{
	const struct failed_action *action = failed_action_named(argv[0]);
	struct failed_ctx what;
	struct requeue_run run = { 0 };
	char **keys = xcalloc((size_t)argc, sizeof(*keys));
	const char *name = NULL, *where_error = NULL, *why = NULL;
	char cmd[64];
	size_t nkeys = 0;
	bool all = false;
	int rc;

	for (int i = 1; i < argc && why == NULL; i++) {
		if (strcmp(argv[i], "--all") == 0)
			all = true;
		else if (strcmp(argv[i], "--where-error") == 0) {
			if (i + 1 >= argc || argv[i + 1][0] == '\0')
				why = "--where-error takes a text";
			else
				where_error = argv[++i];
		} else if (strcmp(argv[i], "--") == 0) {
			/* Keys that begin with '-' follow. */
			while (++i < argc)
				keys[nkeys++] = argv[i];
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "rowq: %s: unknown option %s\n",
			    action->name, argv[i]);
			free(keys);
			return ROWQ_EXIT_USAGE;
		} else if (name == NULL)
			name = argv[i];
		else
			keys[nkeys++] = argv[i];
	}
	if (why == NULL && name == NULL)
		why = "name a queue";
	else if (why == NULL && all == (nkeys > 0))
		why = all ? "either keys or --all, not both" :
		    action == &cancel_action ? "name the keys to cancel" :
		    action == &discard_action ?
		    "name the keys to discard, or --all" :
		    "name the keys to requeue, or --all";
	else if (why == NULL && where_error != NULL && !all)
		why = "--where-error goes with --all";
	else if (why == NULL && all && action == &cancel_action)
		why = "name the keys to cancel: --all is for failed rows";
	if (why != NULL) {
		fprintf(stderr, "rowq: %s: %s\n", action->name, why);
		free(keys);
		return ROWQ_EXIT_USAGE;
	}
	snprintf(cmd, sizeof(cmd), "rowq %s%s", action->name,
	    all ? " --all" : "");
	rc = failed_open(path, name, cmd, all, action, &what);
	if (rc == ROWQ_EXIT_OK)
		rc = requeue_begin(&run, &what, action);
	if (run.nstmts > 0) {
		rc = all ? requeue_all(&run, where_error) :
		    requeue_keys(&run, keys, nkeys);
		printf("%s: %s %llu row%s, %llu key%s matched no %srow\n",
		    name, action->done, run.done, run.done == 1 ? "" : "s",
		    run.missed, run.missed == 1 ? "" : "s",
		    action == &cancel_action ? "" : "failed ");
		if (rc == ROWQ_EXIT_OK && run.missed > 0)
			rc = ROWQ_EXIT_FAILURE;
	}
	requeue_end(&run);
	if (what.cfg != NULL)
		failed_close(&what);
	free(keys);
	return rc;
}
