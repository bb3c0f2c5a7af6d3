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
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* Where a statement parameter's value comes from. */
enum param_source {
	PARAM_COLUMN,
	PARAM_ATTEMPT,
	PARAM_DELAY,
	PARAM_ERROR,
	PARAM_OUTPUT,
	PARAM_LEASE,
	PARAM_DURATION,
};

struct bound {
	const struct sql	*sql;
	struct db_stmt		*stmt;
	enum param_source	*source;
	int			*column;
	struct value		*values;
};

/*
 * After a turn that had to skip rows it cannot finish (NULL keys, a key
 * returned twice), the next claim asks for this many more, so that such
 * rows at the head of the queue do not block the ones behind them.
 */
#define WIDE_EXTRA		16

/*
 * A turn that finished rows leaves its COMMIT to go in front of the next
 * claim, in the same round trip; the claim texts start with it, and skip
 * it when there is nothing to commit.
 */
#define COMMIT_FIRST		"COMMIT;\n"
/* Taken by a batch's claim, for worker_finish_oks to go back to. */
#define CLAIMED_SAVEPOINT	"rowq_claimed"

/* A row claimed again this soon after it was finished never left. */
#define HOT_LOOP_WINDOW_MS	10000
#define HOT_LOOP_BACKOFF_MIN_MS	1000
#define HOT_LOOP_BACKOFF_MAX_MS	300000
/* The pauses grow until none was needed for this long. */
#define HOT_LOOP_CALM_MS	60000

struct worker {
	const struct worker_args *args;
	const struct queue	*q;
	struct stopper		 stopper;
	struct db		*db;
	struct db_stmt		*claim;		/* prepared for its columns */
	/*
	 * The claim as text, behind "COMMIT;\n" (see COMMIT_FIRST): one
	 * with LIMIT batch, one with LIMIT batch + WIDE_EXTRA.
	 */
	char			*claim_sql, *claim_wide_sql;
	bool			 uncommitted;	/* rows finished, COMMIT not sent */
	/*
	 * With batch > 1, the rows whose handler said ok run `done` together
	 * at the end of the turn, in one execute (see worker_finish_oks).
	 */
	bool			 bulk_done;
	bool			 finished_alone; /* a row of this turn, since the claim */
	int			 noks;
	int			 ok_row[BATCH_MAX + WIDE_EXTRA];
	int			 ok_attempt[BATCH_MAX + WIDE_EXTRA];
	int			 skipped;	/* rows the last turn skipped */
	bool			 used_wide;	/* this turn claimed wide */
	struct bound		 done, retry, failed, lease, renew;
	const struct column	*cols;
	size_t			 ncols;
	int			 key_index;
	int			 attempts_index;
	char			*path;
	char		       **base_env;
	struct pipe_handler	 pipe;
	char			 token[33];	/* :lease of the current row */
	const struct row	*leased_row;	/* being renewed, or NULL */
	int64_t			 lease_renewed_ms;
	struct recent		*recent;	/* rows finished lately */
	int			 hot_loops;	/* in a row, for backoff */
	int64_t			 last_hot_ms;
	char			 failing[256];	/* the statement that failed */
	int64_t			 null_key_logged_ms;
	/* The usual claim, for slow ones: [1] with a COMMIT in front. */
	int64_t			 claim_mean_us[2];
	int			 claims[2];
	int64_t			 slow_logged_ms;
	/* Counted when the transaction that finished them commits. */
	uint64_t		 pending_done, pending_retried, pending_failed;
	uint64_t		 pipe_restarts_seen;
	struct rowset		 rows;
	struct handler_result	 result;
	long			 jobs;
	int			 db_failures;	/* in a row, for backoff */
	int64_t			 db_failing_since;
	int64_t			 db_last_log;
};

/*
 * A wait of ms, give or take a quarter: workers that lost the database
 * together must not all come back in the same millisecond.
 */
static int64_t
worker_jitter(int64_t ms)
{
	int64_t spread = ms / 2;

	if (spread <= 0)
		return ms;
	return ms - ms / 4 + (int64_t)(backoff_random() % (uint64_t)(spread + 1));
}

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

/* The last thing that went wrong, for `rowq status`. */
static void
worker_note_error(struct worker *w, const char *what, const char *msg)
{
	struct worker_stats *st = w->args->stats;

	if (st == NULL)
		return;
	snprintf(st->last_error, sizeof(st->last_error), "%s%s%s", what,
	    *what ? ": " : "", msg ? msg : "");
	st->last_error_ms = wall_ms();
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
	bound_free(&w->lease);
	bound_free(&w->renew);
	db_stmt_free(w->claim);
	w->claim = NULL;
	free(w->claim_sql);
	free(w->claim_wide_sql);
	w->claim_sql = w->claim_wide_sql = NULL;
	w->uncommitted = false;
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
		{ "lease", PARAM_LEASE }, { "duration", PARAM_DURATION },
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
 * Whether `done` can run for a batch's ok rows at once: a batch, in one
 * transaction, and a statement whose values are the row's own (:output
 * differs from row to row and would have to be kept for each).  After
 * worker_bind, which says where each value comes from.
 */
static bool
worker_batches_done(const struct worker *w)
{
	if (w->q->batch < 2 || w->q->lease.enabled || w->done.stmt == NULL)
		return false;
	for (size_t i = 0; i < w->done.sql->nparams; i++)
		if (w->done.source[i] == PARAM_OUTPUT ||
		    w->done.source[i] == PARAM_ERROR)
			return false;
	return true;
}

static char *
worker_claim_sql(const struct worker *w, int limit)
{
	char *claim = sql_claim(w->q->select.positional, limit);
	struct buf b = { 0 };

	buf_printf(&b, "%s%s", COMMIT_FIRST, claim);
	if (w->bulk_done)
		buf_printf(&b, ";\nSAVEPOINT %s", CLAIMED_SAVEPOINT);
	free(claim);
	return buf_steal(&b);
}

/*
 * Connect and prepare everything.  Returns 0, -1 to try again later (the
 * database is away), or -2 when the configuration does not fit the schema.
 */
static int
worker_connect(struct worker *w)
{
	enum db_status st;
	char *claim, **names;
	int problems, r;

	w->db = db_open(&w->args->cfg->db, &st);
	if (st == DB_CONFIG)
		log_error("database refuses this configuration: %s",
		    db_error(w->db));
	if (st != DB_OK)
		return st == DB_CONFIG ? -2 : -1;
	if (db_session_limits(w->db, w->q) != DB_OK)
		return -1;
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
	    (r = worker_bind(w, &w->failed, &w->q->failed)) != 0 ||
	    (r = worker_bind(w, &w->lease, &w->q->lease.claim)) != 0 ||
	    (r = worker_bind(w, &w->renew, &w->q->lease.renew)) != 0)
		return r;
	w->bulk_done = worker_batches_done(w);
	w->claim_sql = worker_claim_sql(w, w->q->batch);
	w->claim_wide_sql = worker_claim_sql(w, w->q->batch + WIDE_EXTRA);
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
		/* Half prepared is not connected: all of it again next time. */
		worker_disconnect(w);
		if (stopper_sleep(&w->stopper, worker_jitter(
		    backoff_capped_ms(500, 30000, w->db_failures))))
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
	worker_note_error(w, what, db_error(w->db));
	switch (st) {
	case DB_RETRY:
		if (w->args->stats)
			w->args->stats->db_retries++;
		/* A deadlock or lock wait: common, cheap, retried quietly. */
		log_info("%s: %s; rolled back, will retry", what,
		    db_error(w->db));
		(void)db_rollback(w->db);
		stopper_sleep(&w->stopper, 10 + (int64_t)(backoff_random() % 200));
		return;
	case DB_RECONNECT:
		worker_db_trouble(w, what);
		worker_disconnect(w);
		/* A link that drops at every turn must not spin either. */
		stopper_sleep(&w->stopper, worker_jitter(
		    backoff_capped_ms(100, 30000, w->db_failures)));
		return;
	default:
		/* Bad SQL or data: it will likely fail again, so wait longer. */
		log_error("%s: %s", what, db_error(w->db));
		(void)db_rollback(w->db);
		if (w->db_failures++ == 0)
			w->db_failing_since = now_ms();
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

/* The values of a statement's parameters for a row. */
static void
worker_values(struct worker *w, const struct bound *b, const struct row *row,
    int attempt, int64_t delay_ms, struct value *values)
{
	for (size_t i = 0; i < b->sql->nparams; i++) {
		struct value *v = &values[i];
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
			v->type = VALUE_TEXT;
			v->s = w->token;
			v->len = strlen(w->token);
			break;
		case PARAM_DURATION:
			v->type = VALUE_INT;
			v->i = (w->q->lease.duration_ms + 999) / 1000;
			break;
		}
	}
}

/*
 * Run a statement for a row; a database error is returned to roll back.
 * *affected says how many rows it changed.
 */
static enum db_status
worker_exec(struct worker *w, struct bound *b, const struct row *row,
    int attempt, int64_t delay_ms, unsigned long long *affected)
{
	worker_values(w, b, row, attempt, delay_ms, b->values);
	*affected = 0;
	return db_stmt_exec(b->stmt, b->values, b->sql->nparams, affected);
}

/* A finishing statement: one that changes no row is an error to see. */
static enum db_status
worker_finish(struct worker *w, struct bound *b, const struct row *row,
    int attempt, int64_t delay_ms, const char *key)
{
	unsigned long long affected;
	enum db_status st;

	st = worker_exec(w, b, row, attempt, delay_ms, &affected);
	if (st == DB_OK && affected == 0) {
		if (w->q->lease.enabled)
			log_error("%s changed no row for key %s: the lease was "
			    "lost, so this worker's result is not recorded",
			    b->sql->where, key);
		else
			log_error("%s changed no row for key %s: the row stays "
			    "as it was", b->sql->where, key);
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
	bool can_retry = q->retry.enabled && (q->retry.max_attempts == 0 ||
	    attempt < q->retry.max_attempts);
	char d[32];

	*delay_ms = 0;
	if (w->result.outcome == OUTCOME_DONE) {
		w->pending_done++;
		return &w->done;
	}
	if (w->result.outcome == OUTCOME_FAILED && w->failed.stmt != NULL) {
		log_error("failed permanently on try %d: %s", attempt, err);
		w->pending_failed++;
		return &w->failed;
	}
	if ((can_retry && w->result.outcome == OUTCOME_RETRY) ||
	    w->failed.stmt == NULL) {
		*delay_ms = backoff_retry_delay_ms(&q->retry, attempt,
		    backoff_random());
		duration_format(*delay_ms, d, sizeof(d));
		log_warnx("try %d failed: %s; next try in %s", attempt, err, d);
		w->pending_retried++;
		return &w->retry;
	}
	log_error("failed after %d tries: %s", attempt, err);
	w->pending_failed++;
	return &w->failed;
}

/* A token unique to this claim, for :lease. */
static void
worker_new_token(struct worker *w)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t a = backoff_random(), b = backoff_random();

	for (int i = 0; i < 16; i++) {
		w->token[i] = hex[(a >> (i * 4)) & 15];
		w->token[16 + i] = hex[(b >> (i * 4)) & 15];
	}
	w->token[32] = '\0';
}

/*
 * Lease renewal, called while the handler runs: run lease.renew (or
 * lease.claim again) in a short transaction of its own.  A renewal that changes no row means the
 * lease is lost, and a lease that could not be renewed for two thirds of
 * its duration is about to run out: either way another worker may take
 * the row, so this handler is stopped.
 */
static int
worker_renew(void *ctx, struct handler_result *res)
{
	struct worker *w = ctx;
	const struct row *row = w->leased_row;
	int64_t duration = w->q->lease.duration_ms;
	unsigned long long affected = 0;
	enum db_status st = DB_RECONNECT;

	if (w->db == NULL || w->claim == NULL) {
		worker_disconnect(w);
		if (worker_connect(w) != 0)
			worker_disconnect(w);
	}
	if (w->db != NULL && w->claim != NULL) {
		st = worker_exec(w, w->renew.stmt ? &w->renew : &w->lease, row,
		    0, 0, &affected);
		if (st == DB_OK)
			st = db_commit(w->db);
	}
	if (st == DB_OK && affected == 0) {
		log_error("%s changed no row on renewal: the lease was lost; "
		    "stopping the handler", w->renew.stmt ?
		    w->q->lease.renew.where : w->q->lease.claim.where);
		buf_puts(&res->error, "lease lost");
		return 1;
	}
	if (st == DB_OK) {
		w->lease_renewed_ms = now_ms();
		worker_db_ok(w);
		return 0;
	}
	worker_db_trouble(w, "renewing the lease");
	if (st == DB_RECONNECT)
		worker_disconnect(w);
	else
		(void)db_rollback(w->db);
	if (now_ms() - w->lease_renewed_ms >= duration * 2 / 3) {
		log_error("the lease could not be renewed for %llds; stopping "
		    "the handler before it runs out",
		    (long long)(now_ms() - w->lease_renewed_ms) / 1000);
		buf_puts(&res->error, "lease could not be renewed");
		return 1;
	}
	return 0;
}

/* Run the handler for a row, whichever kind the queue has. */
static void
worker_handle(struct worker *w, const struct row *row, const char *key,
    int attempt)
{
	struct handler_job job = { 0 };
	struct buf json = { 0 };
	char attempt_s[32], worker_s[32];
	struct buf qenv = { 0 }, kenv = { 0 };

	json_row(&json, w->cols, w->ncols, row);
	buf_putc(&json, '\n');
	job.input = json.data;
	job.input_len = json.len;
	job.timeout_ms = w->q->timeout_ms;
	if (w->q->lease.enabled) {
		job.tick = worker_renew;
		job.tick_ctx = w;
		job.tick_ms = w->q->lease.duration_ms / 3;
		w->leased_row = row;
		w->lease_renewed_ms = now_ms();
	}
	if (w->q->handler == HANDLER_PIPE) {
		pipe_handle(&w->pipe, &job, &w->stopper, &w->result);
	} else {
		buf_printf(&qenv, "ROWQ_QUEUE=%s", w->q->name);
		buf_printf(&kenv, "ROWQ_KEY=%s", key);
		snprintf(attempt_s, sizeof(attempt_s), "ROWQ_ATTEMPT=%d", attempt);
		snprintf(worker_s, sizeof(worker_s), "ROWQ_WORKER=%d",
		    w->args->number);
		const char *extra[] = { qenv.data, kenv.data, attempt_s,
		    worker_s, NULL };
		job.argv = handler_argv(w->q->argv, w->cols, w->ncols, row);
		job.envp = handler_env(w->base_env, extra);
		handler_exec(w->path, &job, &w->stopper, &w->result);
		handler_argv_free(job.argv);
		handler_env_free(job.envp);
	}
	w->leased_row = NULL;
	buf_free(&qenv);
	buf_free(&kenv);
	buf_free(&json);
}

/* A hash of all a row's values, NULLs and lengths included. */
static uint64_t
worker_row_hash(const struct worker *w, const struct row *row)
{
	uint64_t h = 0;

	for (size_t c = 0; c < w->ncols; c++) {
		char mark[24];
		int n = snprintf(mark, sizeof(mark), "%c%zu|",
		    row->value[c] ? 'v' : 'n', row->value[c] ? row->len[c] : 0);
		h = recent_hash(mark, (size_t)n, h);
		if (row->value[c] != NULL)
			h = recent_hash(row->value[c], row->len[c], h);
	}
	return h;
}

static uint64_t
worker_key_hash(const char *key)
{
	return recent_hash(key, strlen(key), 0);
}

static void
worker_remember(struct worker *w, const struct row *row, const char *where)
{
	if (w->recent == NULL)
		w->recent = recent_new();
	recent_add(w->recent, worker_key_hash(row->value[w->key_index]),
	    worker_row_hash(w, row), where, now_ms());
}

/*
 * The design's one rule: finishing a row must take it out of the select,
 * or at least change it.  A row claimed again, unchanged, right after this
 * worker finished it would come straight back round for ever; say which
 * statement failed to move it, and pause this worker's claims (with
 * growing delays) rather than run its handler again and again.  Returns
 * true when the turn must stop.
 */
static bool
worker_hot_loop(struct worker *w)
{
	int64_t now = now_ms();

	if (w->recent == NULL)
		return false;
	if (now - w->last_hot_ms > HOT_LOOP_CALM_MS)
		w->hot_loops = 0;
	for (size_t i = 0; i < w->rows.nrows; i++) {
		const struct row *row = &w->rows.rows[i];
		const char *key = row->value[w->key_index];
		const char *where;
		char d[32];
		if (key == NULL)
			continue;
		where = recent_match(w->recent, worker_key_hash(key),
		    worker_row_hash(w, row), now, HOT_LOOP_WINDOW_MS);
		if (where == NULL)
			continue;
		int64_t delay = backoff_capped_ms(HOT_LOOP_BACKOFF_MIN_MS,
		    HOT_LOOP_BACKOFF_MAX_MS, ++w->hot_loops);
		duration_format(delay, d, sizeof(d));
		log_set_row(key);
		log_error("claimed again, unchanged, right after %s finished "
		    "it: that statement does not take the row out of the "
		    "select, so it would come straight back round; claims "
		    "paused for %s", where, d);
		log_set_row(NULL);
		worker_note_error(w, key, "came straight back round: the "
		    "finishing statement does not take it out of the select");
		if (w->args->stats)
			w->args->stats->errors++;
		(void)db_rollback(w->db);
		worker_set_state(w, WORKER_BACKOFF, key);
		proc_title("rowq: %s worker %d (paused: row %s came back)",
		    w->q->name, w->args->number, key);
		stopper_sleep(&w->stopper, delay);
		/*
		 * After the pause it may run once more: an application may
		 * have queued the same values again on purpose.  A real
		 * loop comes back here, later each time.
		 */
		recent_forget(w->recent, worker_key_hash(key));
		w->last_hot_ms = now_ms();
		return true;
	}
	return false;
}

/*
 * The finishing statement failed for this row alone (data too long for a
 * column, a constraint): InnoDB rolled back just that statement and the
 * transaction keeps its locks.  Rather than roll everything back and meet
 * the row again at the next claim, for ever, mark it failed with the
 * database's reason as :error.  Returns the failed statement's status.
 */
static enum db_status
worker_finish_failed_instead(struct worker *w, struct bound *b,
    const struct row *row, int attempt, const char *key, struct bound **used)
{
	enum db_status st;

	buf_reset(&w->result.error);
	buf_printf(&w->result.error, "%s for key %s: %s", b->sql->where, key,
	    db_error(w->db));
	utf8_sanitize(&w->result.error);
	log_error("%s; marking the row failed instead", w->result.error.data);
	st = worker_finish(w, &w->failed, row, attempt, 0, key);
	if (st != DB_OK)
		return st;
	if (b == &w->done)
		w->pending_done--;
	else if (b == &w->retry)
		w->pending_retried--;
	w->pending_failed++;
	worker_note_error(w, key, w->result.error.data);
	*used = &w->failed;
	return DB_OK;
}

/*
 * A select that returns the same key twice in one claim (a join) would
 * have the row handled and finished twice: the second is skipped.
 */
static bool
worker_key_repeated(struct worker *w, size_t i)
{
	const char *key = w->rows.rows[i].value[w->key_index];

	for (size_t k = 0; k < i; k++) {
		const char *other = w->rows.rows[k].value[w->key_index];
		if (other != NULL && strcmp(other, key) == 0) {
			log_set_row(key);
			log_error("%s: the select returned this key twice in "
			    "one claim (a join?); handled once",
			    w->q->select.where);
			log_set_row(NULL);
			if (w->args->stats)
				w->args->stats->errors++;
			return true;
		}
	}
	return false;
}

/*
 * Run a row's finishing statement; when the database refuses it for this
 * row alone, mark the row failed instead.  Returns DB_OK, or the status
 * that ends the turn.
 */
static enum db_status
worker_finish_row(struct worker *w, struct bound *b, const struct row *row,
    int attempt, int64_t delay_ms)
{
	const char *key = row->value[w->key_index];
	enum db_status st;

	st = worker_finish(w, b, row, attempt, delay_ms, key);
	if (st == DB_FATAL && b != &w->failed && w->failed.stmt != NULL)
		st = worker_finish_failed_instead(w, b, row, attempt, key, &b);
	if (st == DB_OK)
		worker_remember(w, row, b->sql->where);
	else
		snprintf(w->failing, sizeof(w->failing), "%s for key %s",
		    b->sql->where, key);
	return st;
}

/* Say which keys a bulk `done` may not have finished. */
static void
worker_oks_unmatched(struct worker *w, unsigned long long affected)
{
	struct buf keys = { 0 };

	for (int i = 0; i < w->noks && keys.len < 512; i++)
		buf_printf(&keys, "%s%s", i ? ", " : "",
		    w->rows.rows[w->ok_row[i]].value[w->key_index]);
	log_error("%s changed %llu of %d rows (keys %s%s): the others stay "
	    "as they were", w->done.sql->where, affected, w->noks, keys.data,
	    keys.len >= 512 ? ", ..." : "");
	buf_free(&keys);
	if (w->args->stats)
		w->args->stats->errors++;
}

/*
 * Run `done` for the turn's ok rows in one execute, one round trip
 * instead of one per row.  When the database refuses it (data too long
 * for a column, a constraint), the rows before the failing one have run
 * and the others not, and which one failed is not told: go back to the
 * savepoint the claim took and finish them one by one, which finds it.
 */
static enum db_status
worker_finish_oks(struct worker *w)
{
	size_t n = (size_t)w->noks, np = w->done.sql->nparams;
	struct value *values;
	unsigned long long affected;
	enum db_status st = DB_OK;

	if (n == 0)
		return DB_OK;
	values = xcalloc(n * np, sizeof(*values));
	for (size_t i = 0; i < n; i++)
		worker_values(w, &w->done, &w->rows.rows[w->ok_row[i]],
		    w->ok_attempt[i], 0, values + i * np);
	if (n > 1 && db_stmt_bulk_possible(w->done.stmt, values, n)) {
		/*
		 * Rows finished on their own (retry, failed) since the claim's
		 * savepoint would be undone with the bulk: move it here.
		 */
		if (w->finished_alone && (st = db_run(w->db, "SAVEPOINT "
		    CLAIMED_SAVEPOINT)) != DB_OK) {
			snprintf(w->failing, sizeof(w->failing), "a savepoint "
			    "before %s", w->done.sql->where);
			goto out;
		}
		st = db_stmt_exec_bulk(w->done.stmt, values, n, &affected);
		if (st == DB_OK) {
			if (affected < n)
				worker_oks_unmatched(w, affected);
			for (size_t i = 0; i < n; i++)
				worker_remember(w, &w->rows.rows[w->ok_row[i]],
				    w->done.sql->where);
			goto out;
		}
		snprintf(w->failing, sizeof(w->failing), "%s for %zu rows",
		    w->done.sql->where, n);
		if (st != DB_FATAL)
			goto out;
		log_info("%s for %zu rows at once: %s; finishing them one by "
		    "one", w->done.sql->where, n, db_error(w->db));
		if ((st = db_run(w->db, "ROLLBACK TO SAVEPOINT "
		    CLAIMED_SAVEPOINT)) != DB_OK)
			goto out;
	}
	/* Another row's :output must not reach a failed statement. */
	buf_reset(&w->result.output);
	for (size_t i = 0; i < n && st == DB_OK; i++) {
		const struct row *row = &w->rows.rows[w->ok_row[i]];
		log_set_row(row->value[w->key_index]);
		st = worker_finish_row(w, &w->done, row, w->ok_attempt[i], 0);
		log_set_row(NULL);
	}
out:
	free(values);
	return st;
}

/*
 * Handle one claimed row and run its finishing statement.  Returns DB_OK,
 * or the status that ends the turn.  *aborted is set when the handler was
 * stopped without a verdict (rowq is stopping, or the lease was lost): the
 * row must not be finished.
 */
static enum db_status
worker_row(struct worker *w, const struct row *row, bool *aborted)
{
	const char *key = row->value[w->key_index];
	int attempt = worker_attempt(w, row);
	struct bound *b;
	int64_t delay_ms;
	enum db_status st;

	log_set_row(key);
	worker_set_state(w, WORKER_BUSY, key);
	proc_title("rowq: %s worker %d (row %s)", w->q->name,
	    w->args->number, key);
	worker_handle(w, row, key, attempt);
	if (w->result.outcome == OUTCOME_ABORTED) {
		log_warnx("handler stopped (%s): the row is not finished",
		    w->result.error.data ? w->result.error.data : "");
		*aborted = true;
		log_set_row(NULL);
		return DB_OK;
	}
	/* A lease renewal that lost the link left nothing to finish on. */
	if (w->db == NULL && worker_connect(w) != 0) {
		worker_disconnect(w);
		log_warnx("the database is away: the row is not finished; it "
		    "comes back when its lease runs out");
		*aborted = true;
		log_set_row(NULL);
		return DB_OK;
	}
	/* Text parameters must be valid UTF-8 for a utf8mb4 column. */
	utf8_sanitize(&w->result.error);
	utf8_sanitize(&w->result.output);
	b = worker_decide(w, attempt, &delay_ms);
	if (w->result.outcome != OUTCOME_DONE)
		worker_note_error(w, key, w->result.error.data);
	if (b == &w->done && w->bulk_done) {
		/* Finished with the batch's other ok rows, at the end. */
		w->ok_row[w->noks] = (int)(row - w->rows.rows);
		w->ok_attempt[w->noks++] = attempt;
		st = DB_OK;
	} else {
		st = worker_finish_row(w, b, row, attempt, delay_ms);
		w->finished_alone = true;
	}
	if (w->args->stats)
		histogram_add(&w->args->stats->handler,
		    w->result.duration_ms * 1000);
	log_set_row(NULL);
	w->jobs++;
	return st;
}

/*
 * A claimed row whose key is NULL cannot be finished by key.  It is left
 * alone (it stays claimed until the commit), and said once per turn.
 */
static bool
worker_key_ok(struct worker *w, const struct row *row)
{
	int64_t now = now_ms();

	if (row->value[w->key_index] != NULL)
		return true;
	if (now - w->null_key_logged_ms >= 60000) {
		w->null_key_logged_ms = now;
		log_error("%s: the key column is NULL in a claimed row; it "
		    "cannot be finished, skipped (said once a minute)",
		    w->q->select.where);
	}
	if (w->args->stats)
		w->args->stats->errors++;
	return false;
}

/*
 * A claim much slower than this worker's usual (a table that grew, an
 * index dropped, a plan changed) is said once an hour at most, with a
 * pointer to `rowq check`.  The usual is a running mean over 16 claims,
 * fed a slow claim only up to twice the mean, so one stall hides no other;
 * claims that carried a COMMIT (which may wait for the disk) are compared
 * with their own kind.
 */
static void
worker_claim_time(struct worker *w, int64_t us, bool with_commit)
{
	int64_t *mean = &w->claim_mean_us[with_commit];
	int *n = &w->claims[with_commit];
	char took[32], usual[32];

	if (*n < 16) {
		*mean += (us - *mean) / ++*n;
		return;
	}
	if (us > 10 * *mean && us > 100000 &&
	    (w->slow_logged_ms == 0 || now_ms() - w->slow_logged_ms > 3600000)) {
		w->slow_logged_ms = now_ms();
		duration_format(us / 1000, took, sizeof(took));
		snprintf(usual, sizeof(usual), "%.1fms", (double)*mean / 1000);
		log_warnx("%s: a claim took %s (usually %s)%s: the select may "
		    "read rows it will not return; see `rowq check`",
		    w->q->select.where, took, usual, with_commit ?
		    ", with the last rows' COMMIT in front" : "");
	}
	if (us > 2 * *mean)
		us = 2 * *mean;
	*mean += (us - *mean) / 16;
}

/* A rolled back transaction finished nothing. */
static void
worker_discard(struct worker *w)
{
	w->pending_done = w->pending_retried = w->pending_failed = 0;
	w->uncommitted = false;
	if (w->recent != NULL)
		recent_rollback(w->recent);
}

/* The transaction committed: only now count the rows it finished. */
static void
worker_committed(struct worker *w)
{
	struct worker_stats *stats = w->args->stats;
	uint64_t n = w->pending_done + w->pending_retried + w->pending_failed;

	if (w->recent != NULL)
		recent_commit(w->recent);
	if (stats) {
		stats->done += w->pending_done;
		stats->retried += w->pending_retried;
		stats->failed += w->pending_failed;
		for (uint64_t i = 0; i < n; i++)
			rate_add(&stats->rate, wall_ms() / 1000);
	}
	worker_discard(w);	/* nothing is pending any more */
	worker_db_ok(w);
}

/*
 * Claim a batch, committing the last turn's rows in the same round trip
 * when they are still uncommitted.  Returns rows claimed, or -1 after a
 * database error.
 */
static int
worker_claim(struct worker *w)
{
	const char *sql = w->skipped > 0 ? w->claim_wide_sql : w->claim_sql;
	bool commit_first = w->uncommitted, committed;
	enum db_status st;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rowset_clear(&w->rows, w->ncols);
	w->used_wide = w->skipped > 0;
	if (!commit_first)
		sql += strlen(COMMIT_FIRST);
	st = db_select(w->db, sql, commit_first, w->cols, w->ncols, &w->rows,
	    &committed);
	if (commit_first && !committed) {
		worker_db_failed(w, st, "commit");
		worker_discard(w);
		return -1;
	}
	if (commit_first)
		worker_committed(w);
	if (st != DB_OK) {
		worker_db_failed(w, st, "claim");
		return -1;
	}
	(void)clock_gettime(CLOCK_MONOTONIC, &t1);
	int64_t us = (t1.tv_sec - t0.tv_sec) * 1000000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000;
	if (w->args->stats)
		histogram_add(&w->args->stats->claim, us);
	worker_claim_time(w, us, commit_first);
	if (worker_hot_loop(w))
		return -1;
	return (int)w->rows.nrows;
}

/* Commit, and only then count the rows it finished. */
static int
worker_commit(struct worker *w)
{
	enum db_status st = db_commit(w->db);

	if (st != DB_OK) {
		worker_db_failed(w, st, "commit");
		worker_discard(w);
		return -1;
	}
	worker_committed(w);
	return 0;
}

/* Send the COMMIT a turn left for the next claim, when no claim follows. */
static void
worker_flush(struct worker *w)
{
	if (w->uncommitted && w->db != NULL)
		(void)worker_commit(w);
}

/*
 * A turn that claimed rows but could handle none of them (NULL keys) would
 * claim the same rows at once: pause, with growing delays.
 */
static void
worker_no_progress(struct worker *w)
{
	int64_t delay = backoff_capped_ms(HOT_LOOP_BACKOFF_MIN_MS,
	    HOT_LOOP_BACKOFF_MAX_MS, ++w->hot_loops);

	worker_set_state(w, WORKER_BACKOFF, NULL);
	stopper_sleep(&w->stopper, delay);
	w->last_hot_ms = now_ms();
}

/* Transaction mode: claim, handle, finish, commit, all in one transaction. */
static int
worker_turn_transaction(struct worker *w)
{
	enum db_status st;
	bool aborted = false;
	int n = worker_claim(w), handled = 0;

	if (n <= 0)
		return n < 0 ? -1 : (worker_commit(w) == 0 ? 0 : -1);
	w->skipped = 0;
	w->noks = 0;
	w->finished_alone = false;
	for (int i = 0; i < n && !aborted && handled < w->q->batch; i++) {
		if (!worker_key_ok(w, &w->rows.rows[i]) ||
		    worker_key_repeated(w, (size_t)i)) {
			w->skipped++;
			continue;
		}
		st = worker_row(w, &w->rows.rows[i], &aborted);
		if (st != DB_OK) {
			worker_db_failed(w, st, w->failing);
			worker_discard(w);
			return -1;
		}
		handled++;
		/* Stopping: the rest of the batch goes back untouched. */
		if (w->stopper.stop)
			break;
	}
	if (aborted) {
		(void)db_rollback(w->db);
		worker_discard(w);
		return -1;
	}
	if ((st = worker_finish_oks(w)) != DB_OK) {
		worker_db_failed(w, st, w->failing);
		worker_discard(w);
		return -1;
	}
	/* Only unfinishable rows, even with the wider claim: pause. */
	if (handled == 0 && w->used_wide) {
		if (worker_commit(w) != 0)
			return -1;
		worker_no_progress(w);
		return n;
	}
	/* The COMMIT goes with the next claim, or worker_run sends it. */
	w->uncommitted = true;
	return n;
}

/*
 * Lease mode: claim and lease the batch in a short transaction, then
 * handle each row with no transaction open and no lock held, renewing its
 * lease, and finish each in a transaction of its own.
 */
static int
worker_turn_lease(struct worker *w)
{
	char tokens[BATCH_MAX][33];
	bool leased[BATCH_MAX];
	unsigned long long affected;
	enum db_status st;
	int n = worker_claim(w), nleased = 0;

	if (n <= 0)
		return n < 0 ? -1 : (worker_commit(w) == 0 ? 0 : -1);
	for (int i = 0; i < n; i++) {
		leased[i] = false;
		if (!worker_key_ok(w, &w->rows.rows[i]) ||
		    worker_key_repeated(w, (size_t)i))
			continue;
		worker_new_token(w);
		memcpy(tokens[i], w->token, sizeof(w->token));
		st = worker_exec(w, &w->lease, &w->rows.rows[i], 0, 0, &affected);
		if (st != DB_OK) {
			worker_db_failed(w, st, "lease.claim");
			return -1;
		}
		if (affected == 0)
			log_error("%s changed no row for key %s: not leased, "
			    "skipped", w->q->lease.claim.where,
			    w->rows.rows[i].value[w->key_index]);
		leased[i] = affected > 0;
		nleased += leased[i];
	}
	if (worker_commit(w) != 0)
		return -1;
	if (nleased == 0) {
		worker_no_progress(w);
		return n;
	}
	for (int i = 0; i < n; i++) {
		bool aborted = false;
		if (!leased[i] || w->stopper.stop)
			continue;
		memcpy(w->token, tokens[i], sizeof(w->token));
		st = worker_row(w, &w->rows.rows[i], &aborted);
		if (st == DB_OK && !aborted && worker_commit(w) != 0)
			return -1;
		if (aborted) {
			if (w->db != NULL)
				(void)db_rollback(w->db);
			worker_discard(w);
		} else if (st != DB_OK) {
			worker_db_failed(w, st, w->failing);
			worker_discard(w);
		}
		if (w->db == NULL)
			return -1;
	}
	return n;
}

/* Sleep between polls, logging a pipe handler's stderr as it comes. */
static void
worker_idle(struct worker *w, int64_t ms)
{
	int64_t end = now_ms() + ms;

	while (!w->stopper.stop) {
		int64_t left = end - now_ms();
		struct pollfd p[2] = {
			{ .fd = w->stopper.fd, .events = POLLIN },
			{ .fd = w->pipe.child.pid > 0 ? w->pipe.child.err : -1,
			  .events = POLLIN },
		};
		if (left <= 0)
			break;
		if (poll(p, 2, (int)(left > 1000 ? 1000 : left)) > 0) {
			stopper_read(&w->stopper);
			pipe_drain(&w->pipe);
		}
	}
}

static void
worker_free(struct worker *w)
{
	int64_t grace = w->args->cfg->stop_timeout_ms;

	if (w->q->handler == HANDLER_PIPE)
		pipe_stop(&w->pipe, grace < 5000 ? grace : 5000);
	worker_disconnect(w);
	rowset_clear(&w->rows, w->ncols);
	free(w->rows.rows);
	recent_free(w->recent);
	free(w->path);
	handler_env_free(w->pipe.envp);
	handler_env_free(w->base_env);
	handler_result_free(&w->result);
}

static void
worker_pipe_init(struct worker *w)
{
	char worker_s[32];
	struct buf qenv = { 0 };

	buf_printf(&qenv, "ROWQ_QUEUE=%s", w->q->name);
	snprintf(worker_s, sizeof(worker_s), "ROWQ_WORKER=%d", w->args->number);
	const char *extra[] = { qenv.data, worker_s, NULL };
	w->pipe.path = w->path;
	w->pipe.argv = w->q->argv;
	w->pipe.envp = handler_env(w->base_env, extra);
	w->pipe.queue = w->q->name;
	w->pipe.child = (struct child){ .in = -1, .out = -1, .err = -1,
	    .pidfd = -1 };
	buf_free(&qenv);
}

/*
 * The worker's loop.  Each turn: stop if asked to or after max_jobs rows;
 * make sure the connection (and a pipe handler) is up; claim and handle a
 * batch; when nothing was claimed, exit in drain mode or sleep `idle`
 * (with jitter, so that workers started together do not poll together).
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
	if (args->stats)
		child_pgid_slot = &args->stats->handler_pgid;
	worker_set_state(&w, WORKER_STARTING, NULL);
	if (handler_resolve(w.q->argv[0], &w.path) == -1) {
		log_error("%s: cannot run %s: %s", w.q->argv_where,
		    w.q->argv[0], strerror(errno));
		return ROWQ_EXIT_CONFIG;
	}
	w.base_env = handler_base_env();
	if (w.q->handler == HANDLER_PIPE)
		worker_pipe_init(&w);
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
		/* No claim without a handler to give the rows to. */
		if (w.q->handler == HANDLER_PIPE && !pipe_ready(&w.pipe)) {
			/* Starting it again may wait: commit before that. */
			worker_flush(&w);
			if (pipe_ensure(&w.pipe, &w.stopper) == -1)
				break;
		}
		/* The first start is not a restart. */
		if (args->stats && w.pipe.restarts > 1)
			args->stats->handler_restarts = w.pipe.restarts - 1;
		int n = w.q->lease.enabled ? worker_turn_lease(&w) :
		    worker_turn_transaction(&w);
		if (n == 0) {
			if (args->drain)
				break;
			worker_set_state(&w, WORKER_IDLE, NULL);
			proc_title("rowq: %s worker %d (idle)", w.q->name,
			    args->number);
			int64_t idle = w.q->idle_ms;
			idle += (int64_t)(backoff_random() % (uint64_t)(idle / 10 + 1));
			worker_idle(&w, idle);
		}
	}
	worker_flush(&w);
	worker_set_state(&w, WORKER_STOPPING, NULL);
	worker_free(&w);
	return rc;
}
