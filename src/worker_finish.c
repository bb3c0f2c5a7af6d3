/*
 * worker_finish.c: a row's outcome.  Which statement a handler's result leads
 * to (done, retry or failed), the values bound to it, running it for one
 * row or, for a batch's ok rows, for all of them in one execute.
 */
#include "worker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void
finish_unbind(struct bound *b)
{
	if (b->next != NULL) {
		finish_unbind(b->next);
		free(b->next);
	}
	db_stmt_free(b->stmt);
	free(b->source);
	free(b->column);
	free(b->values);
	worker_session_stmt_free(&b->text);
	memset(b, 0, sizeof(*b));
}

/*
 * Where a built-in parameter's value comes from (config_builtin_params
 * names them): true with *source, or false for a name that is none.
 */
bool
finish_param_source(const char *name, enum param_source *source)
{
	static const struct {
		const char *name;
		enum param_source source;
	} builtins[] = {
		{ "attempt", PARAM_ATTEMPT }, { "delay", PARAM_DELAY },
		{ "error", PARAM_ERROR }, { "output", PARAM_OUTPUT },
		{ "lease", PARAM_LEASE }, { "lease_int", PARAM_LEASE_INT },
		{ "duration", PARAM_DURATION }, { "reason", PARAM_REASON },
	};

	for (size_t k = 0; k < sizeof(builtins) / sizeof(builtins[0]); k++)
		if (strcmp(builtins[k].name, name) == 0) {
			*source = builtins[k].source;
			return true;
		}
	return false;
}

/*
 * Prepare a finishing statement (each of a list) and work out where its
 * values come from.
 */
enum connect_status
finish_bind(struct worker *w, struct bound *b, const struct sql *sql)
{
	enum db_status st;

	if (sql->text == NULL)
		return CONNECT_OK;
	b->sql = sql;
	b->stmt = db_prepare(w->db, sql->positional, &st);
	if (b->stmt == NULL) {
		log_error("%s: %s", sql->where, db_error(w->db));
		return st == DB_RECONNECT ? CONNECT_AWAY : CONNECT_CONFIG;
	}
	b->source = xcalloc(sql->nparams, sizeof(*b->source));
	b->column = xcalloc(sql->nparams, sizeof(*b->column));
	b->values = xcalloc(sql->nparams, sizeof(*b->values));
	for (size_t i = 0; i < sql->nparams; i++) {
		b->column[i] = worker_column(w, sql->params[i]);
		b->source[i] = PARAM_COLUMN;
		if (b->column[i] >= 0)
			continue;
		if (!finish_param_source(sql->params[i], &b->source[i])) {
			log_error("%s: :%s is not a column of the select",
			    sql->where, sql->params[i]);
			return CONNECT_CONFIG;
		}
	}
	if (sql->next == NULL)
		return CONNECT_OK;
	b->next = xcalloc(1, sizeof(*b->next));
	return finish_bind(w, b->next, sql->next);
}

/*
 * Whether `done` can run for a batch's ok rows at once: a batch, and a
 * statement whose values are the row's own (:output differs from row to
 * row and would have to be kept for each).  In lease mode too (each row's
 * :lease is kept), unless limit: is set, whose slot's lease goes with
 * each row's finishing statement.  After finish_bind, which says where
 * each value comes from.
 */
bool
finish_batches_done(const struct worker *w)
{
	if (w->q->batch < 2 || w->done.stmt == NULL || w->done.next != NULL ||
	    (w->q->lease.enabled && w->q->limit.enabled))
		return false;
	for (size_t i = 0; i < w->done.sql->nparams; i++)
		if (w->done.source[i] == PARAM_OUTPUT ||
		    w->done.source[i] == PARAM_ERROR)
			return false;
	return true;
}

/*
 * The value of a statement's i-th parameter for a row of the turn.  The
 * caller has made sure the turn's layout is the connection's
 * (turn_layout_current), which the column numbers were bound for; row
 * may be NULL for a parameter that names no column.
 */
void
finish_value(struct worker *w, const struct bound *b, size_t i,
    const struct row *row, int attempt, int64_t delay_ms, struct value *v)
{
	memset(v, 0, sizeof(*v));
	switch (b->source[i]) {
	case PARAM_COLUMN:
		db_value_of_column(v, &w->turn.cols[b->column[i]],
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
		v->s = w->token.hex;
		v->len = strlen(w->token.hex);
		v->plain = true;	/* hex digits */
		break;
	case PARAM_LEASE_INT:
		v->type = VALUE_INT;
		v->i = w->token.n;
		break;
	case PARAM_DURATION:
		v->type = VALUE_INT;
		v->i = (w->q->lease.duration_ms + 999) / 1000;
		break;
	case PARAM_REASON:
		/* A batch's ok rows run done after the others. */
		v->type = VALUE_TEXT;
		v->s = b == &w->done || w->reason == NULL ? "" : w->reason;
		v->len = strlen(v->s);
		break;
	}
}

/* The values of all of a statement's parameters for a row of the turn. */
void
finish_values(struct worker *w, const struct bound *b, const struct row *row,
    int attempt, int64_t delay_ms, struct value *values)
{
	for (size_t i = 0; i < b->sql->nparams; i++)
		finish_value(w, b, i, row, attempt, delay_ms, &values[i]);
}

/*
 * Values kept for a bulk execute, row after row: a row's :lease must be
 * its own token, not w->token, which the next row's values overwrite.
 */
void
finish_values_token(const struct bound *b, struct value *values,
    const struct lease_token *token)
{
	for (size_t i = 0; i < b->sql->nparams; i++)
		if (b->source[i] == PARAM_LEASE)
			values[i].s = token->hex;
}

/*
 * Run a statement for a row; a database error is returned to roll back.
 * *affected says how many rows it changed.  A list runs in order behind
 * a savepoint, so that its statements take effect together or, once
 * finish_undo has gone back to it, not at all; its first statement is
 * the row's own (it takes the row out of the select, and tests a lease):
 * when that changes no row, the others do not run, and *affected is 0.
 * b->failed_at says which statement failed.
 */
enum db_status
finish_exec(struct worker *w, struct bound *b, const struct row *row,
    int attempt, int64_t delay_ms, unsigned long long *affected)
{
	unsigned long long more;
	enum db_status st;

	*affected = 0;
	b->failed_at = b->sql->where;
	if (b->next != NULL &&
	    (st = db_run(w->db, "SAVEPOINT " LIST_SAVEPOINT)) != DB_OK)
		return st;
	finish_values(w, b, row, attempt, delay_ms, b->values);
	st = db_stmt_exec(b->stmt, b->values, b->sql->nparams, affected);
	for (struct bound *x = b->next; x != NULL && st == DB_OK &&
	    *affected > 0; x = x->next) {
		b->failed_at = x->sql->where;
		finish_values(w, x, row, attempt, delay_ms, x->values);
		st = db_stmt_exec(x->stmt, x->values, x->sql->nparams, &more);
	}
	if (st == DB_OK)
		b->failed_at = NULL;
	return st;
}

/*
 * A list failed for this row alone (the transaction still open): what
 * its first statements did is undone with the rest.
 */
static enum db_status
finish_undo(struct worker *w, const struct bound *b)
{
	if (b->next == NULL)
		return DB_OK;
	return db_run(w->db, "ROLLBACK TO SAVEPOINT " LIST_SAVEPOINT);
}

/* The statement of b that failed, for messages. */
static const char *
finish_where(const struct bound *b)
{
	return b->failed_at != NULL ? b->failed_at : b->sql->where;
}

/* The next line says how the row ended, and how long its handler ran. */
static void
finish_log_outcome(struct worker *w, const char *outcome)
{
	log_set_outcome(outcome, w->result.duration_ms * 1000);
}

/*
 * A failed try whose handler asked for its next try's time ("retry-in"):
 * that delay, without jitter, but never past retry.max_delay, so that a
 * handler's mistake cannot park a row for a year.
 */
static struct bound *
finish_retry_in(struct worker *w, int attempt, int64_t *delay_ms)
{
	const char *err = w->result.error.data ? w->result.error.data : "";
	int64_t max_ms = w->q->retry.max_delay_ms;
	char d[32], asked[32];

	*delay_ms = w->result.retry_in_ms;
	duration_format(*delay_ms, asked, sizeof(asked));
	finish_log_outcome(w, "retry");
	if (*delay_ms > max_ms) {
		*delay_ms = max_ms;
		duration_format(*delay_ms, d, sizeof(d));
		log_warnx("try %d failed: %s; the handler asked for the next "
		    "try in %s, capped at retry.max_delay: next try in %s",
		    attempt, err, asked, d);
	} else
		log_warnx("try %d failed: %s; next try in %s, as the handler "
		    "asked", attempt, err, asked);
	return &w->retry;
}

/*
 * Which statement a handler's outcome leads to, and log it; w->reason
 * says why, for :reason.  The row's own max_attempts (row_max_attempts)
 * says whether a failed try was its last.
 */
struct bound *
finish_decide(struct worker *w, const struct row *row, int attempt,
    int64_t *delay_ms)
{
	const struct queue *q = w->q;
	const char *err = w->result.error.data ? w->result.error.data : "";
	int max = row_max_attempts(w, row);
	bool can_retry = q->retry.enabled && (max == 0 || attempt < max);
	char d[32];

	*delay_ms = 0;
	if (w->result.outcome == OUTCOME_DONE) {
		w->reason = reason_of(REASON_STEP_DONE, &w->result);
		return &w->done;
	}
	if (w->result.outcome == OUTCOME_FAILED && w->failed.stmt != NULL) {
		w->reason = reason_of(REASON_STEP_FAILED_NEVER, &w->result);
		finish_log_outcome(w, "failed");
		if (strcmp(w->reason, REASON_LEASE_LOST) == 0)
			log_error("failed, with no try left: %s", err);
		else
			log_error("failed permanently on try %d: %s", attempt,
			    err);
		return &w->failed;
	}
	if ((can_retry && w->result.outcome == OUTCOME_RETRY) ||
	    w->failed.stmt == NULL) {
		w->reason = reason_of(REASON_STEP_RETRY, &w->result);
		if (w->result.outcome == OUTCOME_RETRY &&
		    w->result.retry_in_ms >= 0)
			return finish_retry_in(w, attempt, delay_ms);
		*delay_ms = backoff_retry_delay_ms(&q->retry, attempt,
		    backoff_random());
		duration_format(*delay_ms, d, sizeof(d));
		finish_log_outcome(w, "retry");
		log_warnx("try %d failed: %s; next try in %s", attempt, err, d);
		return &w->retry;
	}
	w->reason = reason_of(REASON_STEP_FAILED_LAST, &w->result);
	finish_log_outcome(w, "failed");
	log_error("failed after %d tries: %s", attempt, err);
	return &w->failed;
}

/* Count n rows finished by b, for when the transaction commits. */
static void
finish_count(struct worker *w, const struct bound *b, uint64_t n)
{
	if (b == &w->done)
		w->turn.pending_done += n;
	else if (b == &w->retry)
		w->turn.pending_retried += n;
	else
		w->turn.pending_failed += n;
}

/* The row was finished by where, for claim_came_back to recognise it. */
static void
finish_remember(struct worker *w, const struct row *row, const char *where)
{
	size_t len;
	const char *key = row_key(w, row, &len);

	if (w->recent == NULL)
		w->recent = recent_new();
	recent_add(w->recent, recent_key_hash(key, len),
	    recent_row_hash(w->turn.ncols, row), where,
	    now_ms());
}

/*
 * A finishing statement b ran: the row counts as what it came to, as (b,
 * or failed when retry.gave_up says that retry.update gave it up), in
 * the counters and the run log; one that changed no row is an error to
 * see, and the row is not counted as finished.
 */
static void
finish_counted(struct worker *w, struct bound *b, const struct bound *as,
    const struct row *row, unsigned long long affected, const char *key)
{
	if (w->statement_failing) {
		log_info("%s runs again", b->sql->where);
		w->statement_failing = false;
	}
	if (affected > 0) {
		finish_count(w, as, 1);
		runs_settled(w, row, as);
		return;
	}
	if (w->q->lease.enabled)
		log_error("%s changed no row for key %s: the lease was lost, "
		    "so this worker's result is not recorded", b->sql->where,
		    key);
	else
		log_error("%s changed no row for key %s: the row stays as it "
		    "was", b->sql->where, key);
	if (w->args->stats)
		w->args->stats->errors++;
}

static enum db_status
finish_one(struct worker *w, struct bound *b, const struct row *row,
    int attempt, int64_t delay_ms, const char *key)
{
	unsigned long long affected;
	enum db_status st;

	st = finish_exec(w, b, row, attempt, delay_ms, &affected);
	if (st == DB_OK)
		finish_counted(w, b, b, row, affected, key);
	return st;
}

/*
 * The finishing statement failed for this row alone (data too long for a
 * column, a constraint): InnoDB rolled back just that statement and the
 * transaction keeps its locks.  Rather than roll everything back and meet
 * the row again at the next claim, for ever, mark it failed with the
 * database's reason as :error.  Returns the failed statement's status.
 */
static enum db_status
finish_failed_instead(struct worker *w, struct bound *b,
    const struct row *row, int attempt, const char *key)
{
	enum db_status st;

	buf_reset(&w->result.error);
	buf_printf(&w->result.error, "%s for key %s: %s", finish_where(b),
	    key, db_error(w->db));
	w->reason = REASON_REFUSED;
	utf8_sanitize(&w->result.error);
	log_error("%s; marking the row failed instead", w->result.error.data);
	worker_note_error(w, key, w->result.error.data);
	if ((st = finish_undo(w, b)) != DB_OK)
		return st;
	return finish_one(w, &w->failed, row, attempt, 0, key);
}

/*
 * The finishing statement failed for a reason that is its own, not the
 * row's (db_error_in_statement: its syntax, a name, a JSON path): it
 * would fail for every row, so none is marked, failed or otherwise.  The
 * turn is rolled back (its rows go back as they were; in lease mode they
 * keep their lease until it runs out), the worker waits longer each time
 * (worker_db_failed) in state WORKER_FAILING, which `rowq status` and
 * the metrics show, and a drain ends, unsuccessful.  Said in full once
 * per episode, with the statement; finish_counted ends it.  A lease
 * claim's list that fails so comes here too (worker_lease.c), before its
 * rows are leased.
 */
void
finish_stalled(struct worker *w, const struct bound *b, const char *key)
{
	const char *where = finish_where(b);
	const struct sql *sql = b->sql;

	for (const struct bound *x = b; x != NULL; x = x->next)
		if (x->sql->where == where)
			sql = x->sql;
	if (!w->statement_failing)
		log_error("%s for key %s: %s: the statement fails whatever the "
		    "row, so no row is marked: the rows go back as they were "
		    "and %s; fix the statement and reload.  The statement: %s",
		    where, key, db_error(w->db), w->args->drain ?
		    "the drain ends" : "this worker tries again later, after "
		    "longer each time (up to a minute)", sql->text);
	w->statement_failing = true;
	worker_set_state(w, WORKER_FAILING, where);
	if (w->args->drain)
		w->drain_failed = true;
}

/*
 * retry.gave_up, after retry.update changed the row, in its transaction
 * and with its parameters: whether the update gave the row up (a job
 * table whose retry statement marks the last try's row failed itself).
 * The first column of the first row says so: a number other than 0.
 */
static enum db_status
finish_gave_up(struct worker *w, const struct row *row, int attempt,
    int64_t delay_ms, bool *gave_up)
{
	struct bound *g = &w->gave_up;
	struct rowset rs = { 0 };
	size_t ncols;
	enum db_status st;
	const char *v;
	char *end;

	*gave_up = false;
	g->failed_at = g->sql->where;
	finish_values(w, g, row, attempt, delay_ms, g->values);
	st = db_stmt_fetch_all(g->stmt, g->values, g->sql->nparams, &rs);
	(void)db_stmt_columns(g->stmt, &ncols);
	if (st == DB_OK && rs.nrows > 0 && ncols > 0 &&
	    (v = rs.rows[0].value[0]) != NULL)
		*gave_up = strtod(v, &end) != 0 && end != v;
	rowset_free(&rs, ncols);
	if (*gave_up)
		log_error("%s: retry.update gave the row up: counted as failed",
		    g->sql->where);
	return st;
}

static enum db_status finish_settle_as(struct worker *, struct bound *,
    const struct row *, int, enum db_status, unsigned long long, bool);

/*
 * Run a row's finishing statement, and settle what it came to.  *counted
 * (when not NULL) says what the row counts as: b, or failed when
 * retry.gave_up says that retry.update gave it up.
 */
enum db_status
finish_row_as(struct worker *w, struct bound *b, const struct row *row,
    int attempt, int64_t delay_ms, const struct bound **counted)
{
	unsigned long long affected = 0;
	enum db_status st = finish_exec(w, b, row, attempt, delay_ms,
	    &affected);
	bool gave_up = false;

	if (st == DB_OK && b == &w->retry && affected > 0 &&
	    w->gave_up.stmt != NULL &&
	    (st = finish_gave_up(w, row, attempt, delay_ms, &gave_up)) !=
	    DB_OK)
		b = &w->gave_up;	/* the messages name it */
	if (counted != NULL)
		*counted = gave_up ? &w->failed : b;
	return finish_settle_as(w, b, row, attempt, st, affected, gave_up);
}

enum db_status
finish_row(struct worker *w, struct bound *b, const struct row *row,
    int attempt, int64_t delay_ms)
{
	return finish_row_as(w, b, row, attempt, delay_ms, NULL);
}

/*
 * What a row's finishing statement came to (st, and the rows it changed,
 * whether it ran prepared or as text in front of a claim): the row is
 * counted; or, when the database refused the statement for this row
 * alone, the row is marked failed instead.  Some errors roll back the
 * whole transaction, not the statement (a full lock table, 1206): then
 * the turn's locks are gone and nothing more of it may run, so the status
 * ends the turn.  Returns DB_OK, or the status that ends the turn.
 */
enum db_status
finish_settle(struct worker *w, struct bound *b, const struct row *row,
    int attempt, enum db_status st, unsigned long long affected)
{
	return finish_settle_as(w, b, row, attempt, st, affected, false);
}

/* The same, for a row that retry.gave_up says was given up: failed. */
static enum db_status
finish_settle_as(struct worker *w, struct bound *b, const struct row *row,
    int attempt, enum db_status st, unsigned long long affected,
    bool gave_up)
{
	struct buf key = { 0 };
	struct bound *used = b;

	row_key_text(w, row, &key);
	if (st == DB_OK && gave_up)
		/* retry.update ran (affected > 0), and failed the row. */
		runs_gave_up(w, row);
	if (st == DB_OK)
		finish_counted(w, b, gave_up ? &w->failed : b, row, affected,
		    key.data);
	else if (st == DB_FATAL && !w->q->lease.enabled &&
	    !db_in_transaction(w->db)) {
		log_error("%s for key %s: %s; the server rolled back the whole "
		    "transaction, so the turn's other rows go back to the "
		    "queue", finish_where(b), key.data, db_error(w->db));
		st = DB_RETRY;
	} else if (st == DB_FATAL && db_error_in_statement(w->db)) {
		finish_stalled(w, b, key.data);
	} else if (st == DB_FATAL && b != &w->failed && w->failed.stmt != NULL) {
		used = &w->failed;
		st = finish_failed_instead(w, b, row, attempt, key.data);
	}
	if (st == DB_OK)
		finish_remember(w, row, used->sql->where);
	if (st == DB_OK && (used == &w->failed || gave_up))
		on_failed_note(w, row, key.data, attempt);
	else
		snprintf(w->failing, sizeof(w->failing), "%s for key %s",
		    finish_where(used), key.data);
	buf_free(&key);
	return st;
}

/* Say which keys a bulk `done` may not have finished. */
static void
finish_oks_unmatched(struct worker *w, unsigned long long affected)
{
	struct buf keys = { 0 }, key = { 0 };

	for (int i = 0; i < w->turn.noks && keys.len < 512; i++) {
		row_key_text(w, &w->turn.rows.rows[w->turn.ok_row[i]], &key);
		buf_printf(&keys, "%s%s", i ? ", " : "", key.data);
	}
	log_error("%s changed %llu of %d rows (keys %s%s): the others stay "
	    "as they were", w->done.sql->where, affected, w->turn.noks,
	    keys.data, keys.len >= 512 ? ", ..." : "");
	buf_free(&keys);
	buf_free(&key);
	if (w->args->stats)
		w->args->stats->errors++;
}


/* `done` for the turn's ok rows in one execute, when the server can. */
static enum db_status
finish_oks_bulk(struct worker *w, struct value *values, bool *fell_back)
{
	size_t n = (size_t)w->turn.noks;
	unsigned long long affected;
	enum db_status st;
	bool lease = w->q->lease.enabled;

	*fell_back = false;
	/*
	 * Rows finished on their own (retry, failed) since the claim's
	 * savepoint would be undone with the bulk: move it here.  In lease
	 * mode the bulk runs alone in its transaction (the others commit as
	 * they finish), which the fallback rolls back whole.
	 */
	if (w->turn.finished_alone && !lease && (st = db_run(w->db, "SAVEPOINT "
	    CLAIMED_SAVEPOINT)) != DB_OK) {
		snprintf(w->failing, sizeof(w->failing), "a savepoint before "
		    "%s", w->done.sql->where);
		return st;
	}
	st = db_stmt_exec_bulk(w->done.stmt, values, n, &affected);
	/*
	 * A lease lost changes no row, and which one is not told: one by
	 * one, that row alone is said and left, the others finished.
	 */
	if (st == DB_OK && lease && affected < n) {
		log_info("%s changed %llu of %zu rows: a lease was lost; "
		    "finishing them one by one", w->done.sql->where, affected,
		    n);
		*fell_back = true;
		return db_rollback(w->db);
	}
	if (st == DB_OK) {
		if (affected < n)
			finish_oks_unmatched(w, affected);
		finish_count(w, &w->done, affected < n ? affected : n);
		for (size_t i = 0; i < n; i++) {
			const struct row *row =
			    &w->turn.rows.rows[w->turn.ok_row[i]];
			finish_remember(w, row, w->done.sql->where);
			runs_settled(w, row, &w->done);
		}
		return DB_OK;
	}
	snprintf(w->failing, sizeof(w->failing), "%s for %zu rows",
	    w->done.sql->where, n);
	if (st != DB_FATAL || !db_in_transaction(w->db))
		return st == DB_FATAL ? DB_RETRY : st;
	log_info("%s for %zu rows at once: %s; finishing them one by one",
	    w->done.sql->where, n, db_error(w->db));
	*fell_back = true;
	if (lease)
		return db_rollback(w->db);
	return db_run(w->db, "ROLLBACK TO SAVEPOINT " CLAIMED_SAVEPOINT);
}

/*
 * Run `done` for the turn's ok rows in one execute, one round trip
 * instead of one per row.  When the database refuses it (data too long
 * for a column, a constraint), the rows before the failing one have run
 * and the others not, and which one failed is not told: go back to the
 * savepoint the claim took and finish them one by one, which finds it.
 */
enum db_status
finish_oks(struct worker *w)
{
	size_t n = (size_t)w->turn.noks, np;
	struct value *values;
	enum db_status st = DB_OK;
	bool one_by_one = true;

	if (n == 0)
		return DB_OK;
	np = w->done.sql->nparams;
	values = xcalloc(n * np, sizeof(*values));
	for (size_t i = 0; i < n; i++) {
		w->token = w->turn.ok_token[i];
		finish_values(w, &w->done,
		    &w->turn.rows.rows[w->turn.ok_row[i]],
		    w->turn.ok_attempt[i], 0, values + i * np);
		finish_values_token(&w->done, values + i * np,
		    &w->turn.ok_token[i]);
	}
	if (n > 1 && db_stmt_bulk_possible(w->done.stmt, values, n)) {
		st = finish_oks_bulk(w, values, &one_by_one);
		if (st != DB_OK)
			one_by_one = false;
	}
	/* Lease mode without a bulk execute: as text, in one round trip. */
	if (one_by_one && st == DB_OK && n > 1 && w->q->lease.enabled) {
		bool all;
		st = finish_text_oks(w, &all);
		one_by_one = !all;
	}
	/* Another row's :output must not reach a failed statement. */
	buf_reset(&w->result.output);
	for (size_t i = 0; one_by_one && i < n && st == DB_OK; i++) {
		const struct row *row = &w->turn.rows.rows[w->turn.ok_row[i]];
		struct buf key = { 0 };
		row_key_text(w, row, &key);
		log_set_row(key.data);
		w->token = w->turn.ok_token[i];
		st = finish_row(w, &w->done, row, w->turn.ok_attempt[i], 0);
		log_set_row(NULL);
		buf_free(&key);
	}
	w->turn.noks = 0;
	free(values);
	return st;
}
