/*
 * worker.c: one worker's loop over its queue, in transaction mode.
 *
 * A turn claims up to `batch` rows with the queue's select plus LIMIT n FOR
 * UPDATE SKIP LOCKED, runs the handler for each while the transaction holds
 * the row locks, runs done, retry or failed for each in the same
 * transaction, and commits.  Whatever dies before the commit (the handler,
 * the worker, the connection) rolls the transaction back and the rows are
 * simply waiting again: delivery is at least once, never lost.
 */
#include "rowq.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Where a statement parameter's value comes from. */
enum param_source {
	PARAM_COLUMN,
	PARAM_ATTEMPT,
	PARAM_DELAY,
	PARAM_ERROR,
	PARAM_OUTPUT,
	PARAM_LEASE,
};

struct bound {
	const struct sql	*sql;
	struct db_stmt		*stmt;
	enum param_source	*source;
	int			*column;
	struct value		*values;
};

struct worker {
	const struct worker_args *args;
	const struct queue	*q;
	struct stopper		 stopper;
	struct db		*db;
	struct db_stmt		*claim;
	struct bound		 done, retry, failed;
	const struct column	*cols;
	size_t			 ncols;
	int			 key_index;
	int			 attempts_index;
	char			*path;
	char		       **base_env;
	struct rowset		 rows;
	struct handler_result	 result;
	long			 jobs;
	int			 db_failures;	/* in a row, for backoff */
	int64_t			 db_failing_since;
	int64_t			 db_last_log;
};

/* Log a database problem once, then at most once a minute while it lasts. */
static void
worker_db_trouble(struct worker *w, const char *what)
{
	int64_t now = now_ms();

	if (w->db_failures++ == 0) {
		w->db_failing_since = now;
		w->db_last_log = now;
		log_warnx("%s: %s", what, w->db ? db_error(w->db) : "");
	} else if (now - w->db_last_log >= 60000) {
		w->db_last_log = now;
		log_warnx("%s, still (%d tries in %llds): %s", what,
		    w->db_failures,
		    (long long)(now - w->db_failing_since) / 1000,
		    w->db ? db_error(w->db) : "");
	}
}

static void
worker_db_ok(struct worker *w)
{
	if (w->db_failures > 0)
		log_info("database back after %llds",
		    (long long)(now_ms() - w->db_failing_since) / 1000);
	w->db_failures = 0;
}

static void
worker_set_state(struct worker *w, enum worker_state s, const char *key)
{
	struct worker_stats *st = w->args->stats;

	if (st == NULL)
		return;
	st->state = s;
	st->since_ms = wall_ms();
	snprintf(st->key, sizeof(st->key), "%s", key ? key : "");
}

static void
bound_free(struct bound *b)
{
	db_stmt_free(b->stmt);
	free(b->source);
	free(b->column);
	free(b->values);
	memset(b, 0, sizeof(*b));
}

static void
worker_disconnect(struct worker *w)
{
	bound_free(&w->done);
	bound_free(&w->retry);
	bound_free(&w->failed);
	db_stmt_free(w->claim);
	w->claim = NULL;
	db_close(w->db);
	w->db = NULL;
	w->cols = NULL;
}

static int
worker_column(const struct worker *w, const char *name)
{
	for (size_t i = 0; i < w->ncols; i++)
		if (strcmp(w->cols[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Prepare one finishing statement and work out where its values come from. */
static int
worker_bind(struct worker *w, struct bound *b, const struct sql *sql)
{
	static const struct {
		const char *name;
		enum param_source source;
	} builtins[] = {
		{ "attempt", PARAM_ATTEMPT }, { "delay", PARAM_DELAY },
		{ "error", PARAM_ERROR }, { "output", PARAM_OUTPUT },
		{ "lease", PARAM_LEASE },
	};
	enum db_status st;

	if (sql->text == NULL)
		return 0;
	b->sql = sql;
	b->stmt = db_prepare(w->db, sql->positional, &st);
	if (b->stmt == NULL) {
		log_error("%s: %s", sql->where, db_error(w->db));
		return st == DB_RECONNECT ? -1 : -2;
	}
	b->source = xcalloc(sql->nparams, sizeof(*b->source));
	b->column = xcalloc(sql->nparams, sizeof(*b->column));
	b->values = xcalloc(sql->nparams, sizeof(*b->values));
	for (size_t i = 0; i < sql->nparams; i++) {
		b->column[i] = worker_column(w, sql->params[i]);
		b->source[i] = PARAM_COLUMN;
		if (b->column[i] >= 0)
			continue;
		for (size_t k = 0; k < sizeof(builtins) / sizeof(builtins[0]); k++)
			if (strcmp(builtins[k].name, sql->params[i]) == 0)
				b->source[i] = builtins[k].source;
		if (b->source[i] == PARAM_COLUMN) {
			log_error("%s: :%s is not a column of the select",
			    sql->where, sql->params[i]);
			return -2;
		}
	}
	return 0;
}

/*
 * Connect and prepare everything.  Returns 0, -1 to try again later (the
 * database is away), or -2 when the configuration does not fit the schema.
 */
static int
worker_connect(struct worker *w)
{
	enum db_status st;
	char *claim;
	char **names;
	int problems, r;

	w->db = db_open(&w->args->cfg->db, &st);
	if (st != DB_OK)
		return st == DB_CONFIG ? -2 : -1;
	claim = sql_claim(w->q->select.positional, w->q->batch);
	w->claim = db_prepare(w->db, claim, &st);
	free(claim);
	if (w->claim == NULL) {
		log_error("%s: %s", w->q->select.where, db_error(w->db));
		return st == DB_RECONNECT ? -1 : -2;
	}
	w->cols = db_stmt_columns(w->claim, &w->ncols);
	names = xcalloc(w->ncols + 1, sizeof(*names));
	for (size_t i = 0; i < w->ncols; i++)
		names[i] = w->cols[i].name;
	problems = config_check_columns(w->q, names, w->ncols);
	free(names);
	if (problems > 0)
		return -2;
	w->key_index = w->q->key_column ? worker_column(w, w->q->key_column) : 0;
	w->attempts_index = w->q->retry.attempts_column ?
	    worker_column(w, w->q->retry.attempts_column) : -1;
	if ((r = worker_bind(w, &w->done, &w->q->done)) != 0 ||
	    (r = worker_bind(w, &w->retry, &w->q->retry.update)) != 0 ||
	    (r = worker_bind(w, &w->failed, &w->q->failed)) != 0)
		return r;
	return 0;
}

/* Connect, waiting with capped backoff while the database is away. */
static int
worker_ensure_db(struct worker *w)
{
	while (w->db == NULL || w->claim == NULL) {
		worker_disconnect(w);
		int r = worker_connect(w);
		if (r == 0) {
			if (w->db_failures > 0 && w->args->stats)
				w->args->stats->reconnects++;
			worker_db_ok(w);
			return 0;
		}
		if (r == -2)
			return -2;
		worker_set_state(w, WORKER_DB_DOWN, NULL);
		worker_db_trouble(w, "cannot connect to the database");
		if (stopper_sleep(&w->stopper,
		    backoff_capped_ms(500, 30000, w->db_failures)))
			return -1;
	}
	return 0;
}

/*
 * After a failed statement: roll back, and wait before the next turn so
 * that a broken database or statement never turns into a hot loop.
 */
static void
worker_db_failed(struct worker *w, enum db_status st, const char *what)
{
	if (w->args->stats)
		w->args->stats->errors++;
	switch (st) {
	case DB_RETRY:
		/* A deadlock or lock wait: common, cheap, retried quietly. */
		log_info("%s: %s; rolled back, will retry", what,
		    db_error(w->db));
		(void)db_rollback(w->db);
		stopper_sleep(&w->stopper, 10 + (int64_t)(backoff_random() % 200));
		return;
	case DB_RECONNECT:
		worker_db_trouble(w, what);
		worker_disconnect(w);
		return;
	default:
		log_error("%s: %s", what, db_error(w->db));
		(void)db_rollback(w->db);
		w->db_failures++;
		stopper_sleep(&w->stopper,
		    backoff_capped_ms(1000, 60000, w->db_failures));
		return;
	}
}

static void
worker_value(struct value *v, const struct column *col, const char *s,
    size_t len)
{
	char *end;

	memset(v, 0, sizeof(*v));
	if (s == NULL) {
		v->type = VALUE_NULL;
		return;
	}
	if (col->kind == COLUMN_INTEGER) {
		errno = 0;
		if (col->is_unsigned)
			v->i = (long long)strtoull(s, &end, 10);
		else
			v->i = strtoll(s, &end, 10);
		if (errno == 0 && end != s && *end == '\0') {
			v->type = VALUE_INT;
			v->is_unsigned = col->is_unsigned;
			return;
		}
	}
	v->type = col->kind == COLUMN_BINARY ? VALUE_BLOB : VALUE_TEXT;
	v->s = s;
	v->len = len;
}

/* Run a finishing statement for a row; an error is returned to roll back. */
static enum db_status
worker_finish(struct worker *w, struct bound *b, const struct row *row,
    int attempt, int64_t delay_ms, const char *key)
{
	unsigned long long affected = 0;
	enum db_status st;

	for (size_t i = 0; i < b->sql->nparams; i++) {
		struct value *v = &b->values[i];
		memset(v, 0, sizeof(*v));
		switch (b->source[i]) {
		case PARAM_COLUMN:
			worker_value(v, &w->cols[b->column[i]],
			    row->value[b->column[i]], row->len[b->column[i]]);
			break;
		case PARAM_ATTEMPT:
			v->type = VALUE_INT;
			v->i = attempt;
			break;
		case PARAM_DELAY:
			v->type = VALUE_INT;
			v->i = (delay_ms + 999) / 1000;
			break;
		case PARAM_ERROR:
			v->type = VALUE_TEXT;
			v->s = w->result.error.data ? w->result.error.data : "";
			v->len = w->result.error.len;
			break;
		case PARAM_OUTPUT:
			v->type = VALUE_TEXT;
			v->s = w->result.output.data ? w->result.output.data : "";
			v->len = w->result.output.len;
			break;
		case PARAM_LEASE:
			v->type = VALUE_NULL;
			break;
		}
	}
	st = db_stmt_exec(b->stmt, b->values, b->sql->nparams, &affected);
	if (st == DB_OK && affected == 0) {
		/* The row was not where we left it: say so, loudly. */
		log_error("%s changed no row for key %s: the row stays as it "
		    "was", b->sql->where, key);
		if (w->args->stats)
			w->args->stats->errors++;
	}
	return st;
}

static int
worker_attempt(const struct worker *w, const struct row *row)
{
	if (w->attempts_index < 0 || row->value[w->attempts_index] == NULL)
		return 1;
	long long n = strtoll(row->value[w->attempts_index], NULL, 10);
	if (n < 0)
		n = 0;
	return n >= 1000000 ? 1000000 : (int)n + 1;
}

/* Which statement a handler's outcome leads to, and log it. */
static struct bound *
worker_decide(struct worker *w, int attempt, int64_t *delay_ms)
{
	const struct queue *q = w->q;
	const char *err = w->result.error.data ? w->result.error.data : "";
	struct worker_stats *st = w->args->stats;
	bool can_retry = q->retry.enabled && (q->retry.max_attempts == 0 ||
	    attempt < q->retry.max_attempts);
	char d[32];

	*delay_ms = 0;
	if (w->result.outcome == OUTCOME_DONE) {
		if (st)
			st->done++;
		return &w->done;
	}
	if (w->result.outcome == OUTCOME_FAILED && w->failed.stmt != NULL) {
		log_error("failed permanently on try %d: %s", attempt, err);
		if (st)
			st->failed++;
		return &w->failed;
	}
	if ((can_retry && w->result.outcome == OUTCOME_RETRY) ||
	    w->failed.stmt == NULL) {
		*delay_ms = backoff_retry_delay_ms(&q->retry, attempt,
		    backoff_random());
		duration_format(*delay_ms, d, sizeof(d));
		log_warnx("try %d failed: %s; next try in %s", attempt, err, d);
		if (st)
			st->retried++;
		return &w->retry;
	}
	log_error("failed after %d tries: %s", attempt, err);
	if (st)
		st->failed++;
	return &w->failed;
}

/* Handle one claimed row.  Returns DB_OK, or the status that ends the turn. */
static enum db_status
worker_row(struct worker *w, const struct row *row, bool *aborted)
{
	const char *key = row->value[w->key_index];
	int attempt = worker_attempt(w, row);
	struct handler_job job = { 0 };
	struct buf json = { 0 };
	struct bound *b;
	int64_t delay_ms;
	enum db_status st;

	if (key == NULL) {
		log_error("%s: the key column is NULL in a claimed row; it "
		    "cannot be finished, skipped", w->q->select.where);
		if (w->args->stats)
			w->args->stats->errors++;
		return DB_OK;
	}
	log_set_row(key);
	worker_set_state(w, WORKER_BUSY, key);
	proc_title("rowq: %s worker %d (row %s)", w->q->name,
	    w->args->number, key);
	json_row(&json, w->cols, w->ncols, row);
	buf_putc(&json, '\n');
	job.queue = w->q->name;
	job.key = key;
	job.argv = handler_argv(w->q->argv, w->cols, w->ncols, row);
	job.envp = handler_env(w->base_env, w->q->name, key, attempt);
	job.input = json.data;
	job.input_len = json.len;
	job.timeout_ms = w->q->timeout_ms;
	handler_exec(w->path, &job, &w->stopper, &w->result);
	handler_argv_free(job.argv);
	handler_env_free(job.envp);
	buf_free(&json);

	if (w->result.outcome == OUTCOME_ABORTED) {
		log_warnx("handler stopped: the row goes back to the queue");
		*aborted = true;
		log_set_row(NULL);
		return DB_OK;
	}
	b = worker_decide(w, attempt, &delay_ms);
	st = worker_finish(w, b, row, attempt, delay_ms, key);
	log_set_row(NULL);
	w->jobs++;
	return st;
}

/* One turn: claim, handle, finish, commit.  Returns rows claimed, or -1. */
static int
worker_turn(struct worker *w)
{
	enum db_status st;
	bool aborted = false;
	size_t i;

	rowset_clear(&w->rows, w->ncols);
	st = db_stmt_fetch_all(w->claim, NULL, 0, &w->rows);
	if (st != DB_OK) {
		worker_db_failed(w, st, "claim");
		return -1;
	}
	if (w->rows.nrows == 0) {
		st = db_commit(w->db);
		if (st != DB_OK) {
			worker_db_failed(w, st, "commit");
			return -1;
		}
		worker_db_ok(w);
		return 0;
	}
	for (i = 0; i < w->rows.nrows && !aborted; i++) {
		st = worker_row(w, &w->rows.rows[i], &aborted);
		if (st != DB_OK) {
			worker_db_failed(w, st, "finishing a row");
			return -1;
		}
		/* Stopping: the rest of the batch goes back untouched. */
		if (w->stopper.stop)
			break;
	}
	if (aborted) {
		(void)db_rollback(w->db);
		return -1;
	}
	st = db_commit(w->db);
	if (st != DB_OK) {
		worker_db_failed(w, st, "commit");
		return -1;
	}
	worker_db_ok(w);
	return (int)w->rows.nrows;
}

static void
worker_free(struct worker *w)
{
	worker_disconnect(w);
	rowset_clear(&w->rows, w->ncols);
	free(w->rows.rows);
	free(w->path);
	handler_env_free(w->base_env);
	handler_result_free(&w->result);
}

/*
 * The worker's loop.  Each turn: stop if asked to or after max_jobs rows;
 * make sure the connection is up; claim and handle a batch; when nothing
 * was claimed, exit in drain mode or sleep `idle` (with jitter, so that
 * workers started together do not poll together).
 */
int
worker_run(const struct worker_args *args)
{
	struct worker w = { .args = args, .q = args->queue };
	int rc = ROWQ_EXIT_OK;

	log_procinit("%s/%d", w.q->name, args->number);
	proc_title("rowq: %s worker %d (starting)", w.q->name, args->number);
	stopper_init(&w.stopper, args->cfg->stop_timeout_ms);
	signal(SIGPIPE, SIG_IGN);
	worker_set_state(&w, WORKER_STARTING, NULL);
	if (handler_resolve(w.q->argv[0], &w.path) == -1) {
		log_error("%s: cannot run %s: %s", w.q->argv_where,
		    w.q->argv[0], strerror(errno));
		return ROWQ_EXIT_CONFIG;
	}
	w.base_env = handler_base_env();
	while (!w.stopper.stop) {
		if (w.q->max_jobs > 0 && w.jobs >= w.q->max_jobs) {
			log_info("%ld rows handled: exiting to be replaced",
			    w.jobs);
			break;
		}
		int r = worker_ensure_db(&w);
		if (r == -2) {
			rc = ROWQ_EXIT_CONFIG;
			break;
		}
		if (r == -1)
			continue;
		int n = worker_turn(&w);
		if (n == 0) {
			if (args->drain)
				break;
			worker_set_state(&w, WORKER_IDLE, NULL);
			proc_title("rowq: %s worker %d (idle)", w.q->name,
			    args->number);
			int64_t idle = w.q->idle_ms;
			idle += (int64_t)(backoff_random() % (uint64_t)(idle / 10 + 1));
			stopper_sleep(&w.stopper, idle);
		}
	}
	worker_set_state(&w, WORKER_STOPPING, NULL);
	worker_free(&w);
	return rc;
}
