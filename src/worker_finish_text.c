/*
 * worker_finish_text.c: at batch 1, the row's `done` sent in front of the
 * COMMIT and the next claim, all three in one round trip.  In lease mode
 * the same, and on MySQL a batch's `done` statements, in one round
 * trip; and a turn's leases with the COMMIT that must follow them
 * before a handler starts, in one round trip (finish_text_leases).
 *
 * A batch-1 turn costs a round trip for its claim (which carries the last
 * turn's COMMIT) and one for its `done`.  Held until the next claim, the
 * `done` goes at the head of the same multi-statement:
 *
 *	EXECUTE rowq_done USING 712;
 *	COMMIT;
 *	SELECT ... LIMIT 1 FOR UPDATE SKIP LOCKED
 *
 * where rowq_done is the same statement, prepared once per connection by
 * SQL (PREPARE rowq_done FROM X'<its text>'): the server parses it once,
 * as it does the prepared `done`, and puts the values where it put the
 * '?' itself.  Measured on MariaDB 10.11 (callgrind, server instructions
 * per row): the prepared `done` in a round trip of its own 311,700; the
 * `done` as plain text in front of the COMMIT 361,500 (the parse of the
 * UPDATE each time); EXECUTE in front of the COMMIT 324,100.  MySQL's
 * EXECUTE takes user variables only: there the `done` goes as its text
 * with the values in it (dialect.h), which still saves the round trip.
 *
 * The server runs nothing after a statement that fails, so the COMMIT
 * still follows only a `done` that succeeded; a `done` that failed leaves
 * the transaction open with the row locked, as the prepared one did, and
 * is settled the same way (finish_settle: the row marked failed instead,
 * or the turn rolled back), before the COMMIT and the claim are sent
 * again.  Where no claim follows (stopping, a pipe handler to restart, an
 * empty fallback), worker_commit runs it prepared, as before.
 *
 * A `done` of several statements (a list) goes the same way, each
 * prepared by SQL under a name of its own, and keeps a list's rules: the
 * others run only when the first changed a row, and what the list did is
 * undone when one of them fails for this row.  So it is sent as
 *
 *	SAVEPOINT rowq_row;
 *	EXECUTE rowq_done USING 712;
 *	SET @rowq_changed = (... two rows WHERE ROW_COUNT() < 1);
 *	EXECUTE rowq_done_2 USING 712;
 *	COMMIT;
 *	SELECT ...
 *
 * where the SET fails (a subquery of two rows, 1242) when the first
 * changed no row, and the server runs nothing after it; the row is
 * then counted as a `done` that changed nothing, as a prepared list's
 * is, and the COMMIT and the claim go again.  A fan-in's counter (a
 * batch's row counted down in each child's `done`) thus costs no round
 * trip, and its row is locked only until the COMMIT right behind it.
 *
 * Only values that can be written exactly are written: integers as
 * digits, NULL, and the bytes of a binary column as a binary string in
 * every context (dialect_bytes), as the same bytes bound as a BLOB are
 * (in a numeric one too: X'313233' + 0 is 123 on MariaDB).  A row
 * with a text value (a VARCHAR key; :error and :output are refused at
 * once) runs its `done` prepared, at once: as a literal, its character
 * set and collation would be the literal's, not the binding's.  A
 * lease's token (:lease) is hex digits, which read the same either way.
 */
#include "worker.h"

#include <stdlib.h>
#include <string.h>

/* Longer bytes than this go bound, not as hex in the claim's text. */
#define FINISH_TEXT_BYTES_MAX	1024
/* The session's name for the `done` prepared by SQL (a list's others: _2, ...). */
#define FINISH_TEXT_NAME	"rowq_done"
/* The session's name for lease.claim. */
#define FINISH_TEXT_LEASE	"rowq_lease"
/*
 * Behind a list's first statement: an error (1242) when it changed no
 * row, which stops the server before the list's others.
 */
#define FINISH_TEXT_CHANGED	"SET @rowq_changed = (SELECT 1 FROM " \
	"(SELECT 1 AS x UNION ALL SELECT 2) AS rowq_t WHERE ROW_COUNT() < 1)"
#define ER_SUBQUERY_NO_1_ROW	1242

/* The statements that return no rows and run as one result. */
static const char *const finish_text_verbs[] = { "UPDATE", "DELETE",
    "INSERT", "REPLACE", NULL };

static bool
finish_text_verb(const char *text)
{
	struct sql_token *t = NULL;
	size_t n = 0;
	char err[128];
	bool verb = false;

	if (sql_tokenize(text, &t, &n, err, sizeof(err)) != 0)
		return false;
	for (size_t k = 0; n > 0 && finish_text_verbs[k] != NULL; k++)
		verb = verb || sql_token_is(text, &t[0], finish_text_verbs[k]);
	free(t);
	return verb;
}

/* Whether a statement of `done` can go as text (see above). */
static bool
finish_text_fits(const struct bound *x)
{
	if (x->stmt == NULL || !finish_text_verb(x->sql->positional))
		return false;
	for (size_t i = 0; i < x->sql->nparams; i++)
		if (x->source[i] == PARAM_ERROR ||
		    x->source[i] == PARAM_OUTPUT)
			return false;
	return true;
}

/* Make x the session's statement called name; false when it cannot be. */
static bool
finish_text_prepare(struct worker *w, struct bound *x, const char *name)
{
	x->text = worker_session_stmt(w, name, x->sql->positional);
	if (x->text == NULL)
		log_debug("%s: runs in a round trip of its own: %s",
		    x->sql->where, db_error(w->db));
	return x->text != NULL;
}

/* A list where one statement cannot go as text goes prepared, whole. */
static void
finish_text_unbind(struct bound *b)
{
	for (struct bound *x = b; x != NULL; x = x->next)
		worker_session_stmt_free(&x->text);
}

/*
 * After finish_bind: whether the statement (each of a list) can go in
 * front of the claim, and if so, make it the session's
 * (dialect_stmt_init: prepared by SQL where the server can).  When it
 * cannot, or the server refuses, the prepared `done` runs as before.  In
 * lease mode at any batch (on MySQL a batch's `done` goes as text,
 * finish_text_oks; a list only at batch 1); not with limit:, whose
 * slot's lease goes with each row's statements in lease mode.
 */
void
finish_text_bind(struct worker *w, struct bound *b)
{
	char name[32];
	int k = 1;

	if ((!w->q->lease.enabled && w->q->batch != 1) ||
	    (w->q->lease.enabled && w->q->limit.enabled) ||
	    (b->next != NULL && w->q->batch != 1))
		return;
	for (const struct bound *x = b; x != NULL; x = x->next)
		if (!finish_text_fits(x))
			return;
	for (struct bound *x = b; x != NULL; x = x->next, k++) {
		if (k == 1)
			snprintf(name, sizeof(name), "%s", FINISH_TEXT_NAME);
		else
			snprintf(name, sizeof(name), "%s_%d",
			    FINISH_TEXT_NAME, k);
		if (!finish_text_prepare(w, x, name)) {
			finish_text_unbind(b);
			return;
		}
	}
}

/*
 * Whether a value can be written exactly (see above): a text value's
 * character set and collation would be the literal's, not the binding's.
 */
static bool
finish_text_value(const struct value *v)
{
	return (v->type != VALUE_TEXT || v->plain) &&
	    (v->type != VALUE_BLOB || v->len <= FINISH_TEXT_BYTES_MAX);
}

/*
 * A row's statement b as text, appended to out: EXECUTE with the row's
 * values, or its text with them.  Returns false, appending nothing, when
 * it cannot be (see above): the caller runs it prepared.
 */
static bool
finish_text_append(struct worker *w, struct bound *b, const struct row *row,
    int attempt, struct buf *out)
{
	if (b->text == NULL)
		return false;
	finish_values(w, b, row, attempt, 0, b->values);
	for (size_t i = 0; i < b->sql->nparams; i++)
		if (!finish_text_value(&b->values[i]))
			return false;
	return dialect_stmt_execute(b->text, out, b->values, b->sql->nparams);
}

/*
 * A row's `done` as text, appended to out (see above): one statement, or
 * a list with its SAVEPOINT, its check and its others, separated by
 * ";\n".  *rest: how many statements follow the first.  Returns false
 * when it cannot be: the caller runs it prepared (out is then to be
 * reset).
 */
static bool
finish_text_list(struct worker *w, struct bound *b, const struct row *row,
    int attempt, struct buf *out, int *rest)
{
	*rest = 0;
	if (b->next != NULL)
		buf_puts(out, "SAVEPOINT " LIST_SAVEPOINT ";\n");
	if (!finish_text_append(w, b, row, attempt, out))
		return false;
	for (struct bound *x = b->next; x != NULL; x = x->next) {
		if (*rest == 0) {
			buf_puts(out, ";\n" FINISH_TEXT_CHANGED);
			++*rest;
		}
		buf_puts(out, ";\n");
		if (!finish_text_append(w, x, row, attempt, out))
			return false;
		++*rest;
	}
	return true;
}

/*
 * Lease mode: lease.claim (one statement) made the session's rowq_lease,
 * so that a turn's leases and their COMMIT go in one round trip
 * (finish_text_leases).  Not a list, nor with limit:, whose slot's lease
 * goes in the same transaction.
 */
void
finish_text_bind_lease(struct worker *w)
{
	if (!w->q->lease.enabled || w->q->limit.enabled ||
	    w->lease.next != NULL || !finish_text_fits(&w->lease))
		return;
	(void)finish_text_prepare(w, &w->lease, FINISH_TEXT_LEASE);
}

/*
 * The rows of leased[] (the turn's first n) leased, each with its own
 * token, and committed, in one round trip:
 *
 *	EXECUTE rowq_lease USING 'token1', 712;
 *	EXECUTE rowq_lease USING 'token2', 713;
 *	COMMIT
 *
 * where the prepared leases (one by one, or MariaDB's bulk) and the
 * COMMIT took two or more.  Returns false, having sent nothing, when
 * they cannot go so (a value that cannot be written exactly, or
 * something else waits for the COMMIT): the caller leases them prepared.
 * Else *st is what the server said, and affected[i] what row i's lease
 * changed; the COMMIT ran when *st is DB_OK.  The server runs nothing
 * after a statement that fails, and leaves the transaction open.
 */
bool
finish_text_leases(struct worker *w, const bool *leased, int n,
    enum db_status *st, unsigned long long *affected)
{
	struct db_ahead_result res[CLAIM_MAX + 1];
	struct lease_token keep = w->token;
	struct buf sql = { 0 };
	bool ok = !w->turn.holding && w->turn.nruns == 0;
	int k = 0;

	for (int i = 0; i < n && ok; i++) {
		const struct row *row = &w->turn.rows.rows[i];
		if (!leased[i])
			continue;
		w->token = w->lease_tokens[i];
		if (k++ > 0)
			buf_puts(&sql, ";\n");
		ok = finish_text_append(w, &w->lease, row, row_attempt(w, row),
		    &sql);
	}
	w->token = keep;
	if (!ok || k == 0) {
		buf_free(&sql);
		return false;
	}
	buf_puts(&sql, ";\nCOMMIT");
	memset(res, 0, sizeof(res));
	*st = db_run_results(w->db, sql.data, k + 1, res);
	for (int i = 0, j = 0; i < n; i++)
		affected[i] = leased[i] ? res[j++].affected : 0;
	buf_free(&sql);
	return true;
}

/*
 * Batch 1, a row whose handler said ok: write its `done` (EXECUTE with
 * the row's values, or its text with them) into the turn's held_sql.  In
 * lease mode too: its :lease is hex digits, the same as a literal.
 * Returns false when it cannot be (see above): the caller runs it
 * prepared, at once.
 */
bool
finish_text_hold(struct worker *w, const struct row *row, int attempt)
{
	buf_reset(&w->turn.held_sql);
	return finish_text_list(w, &w->done, row, attempt, &w->turn.held_sql,
	    &w->turn.held_rest);
}

/*
 * Lease mode, a batch's ok rows where no bulk execute can take them
 * (MySQL): each row's `done` as text, all in one round trip, each row's
 * rows changed read apart, so that a row whose lease was lost is said
 * and left, the others counted.  *all is false when they did not go so
 * (a value that cannot be text, or the server refused one: what ran is
 * rolled back, the batch's `done` being alone in its transaction): the
 * caller runs them one by one, which finds the row.
 */
enum db_status
finish_text_oks(struct worker *w, bool *all)
{
	struct db_ahead_result res[CLAIM_MAX];
	struct turn *t = &w->turn;
	struct buf sql = { 0 }, key = { 0 };
	enum db_status st = DB_OK;

	*all = false;
	if (t->noks < 1 || w->done.next != NULL)
		return DB_OK;	/* nothing to send, or a list: one by one */
	for (int i = 0; i < t->noks; i++) {
		w->token = t->ok_token[i];
		if (!finish_text_append(w, &w->done,
		    &t->rows.rows[t->ok_row[i]], t->ok_attempt[i], &sql)) {
			buf_free(&sql);
			return DB_OK;
		}
		buf_puts(&sql, ";\n");
	}
	sql.data[--sql.len] = '\0';	/* no empty statement last */
	sql.data[--sql.len] = '\0';
	if (db_run_results(w->db, sql.data, t->noks, res) != DB_OK) {
		log_info("%s for %d rows at once: %s; finishing them one by "
		    "one", w->done.sql->where, t->noks, db_error(w->db));
		buf_free(&sql);
		return db_rollback(w->db);
	}
	buf_free(&sql);
	*all = true;
	for (int i = 0; i < t->noks && st == DB_OK; i++) {
		const struct row *row = &t->rows.rows[t->ok_row[i]];
		row_key_text(w, row, &key);
		log_set_row(key.data);
		w->token = t->ok_token[i];
		st = finish_settle(w, &w->done, row, t->ok_attempt[i], DB_OK,
		    res[i].affected);
		log_set_row(NULL);
	}
	buf_free(&key);
	return st;
}

/*
 * How far the held `done` got (ahead), as a prepared one would say it:
 * DB_OK when it ran, or when a list stopped at its check because its
 * first statement changed no row; else st, the error, with the statement
 * of the list that failed in done's failed_at.
 */
static enum db_status
finish_held_status(struct worker *w, const struct db_ahead *ahead,
    enum db_status st)
{
	struct bound *x = &w->done;

	w->done.failed_at = NULL;
	if (ahead->finished)
		return DB_OK;
	if (ahead->first_ran && ahead->finish_rest > 0 &&
	    ahead->rest_ran == 0 && db_errno(w->db) == ER_SUBQUERY_NO_1_ROW)
		return DB_OK;
	/*
	 * The rest are the check, then the list's second, third...: with r
	 * of them run, the (r + 1)th of the list failed (the check's own
	 * failure, the link lost, is the first's).
	 */
	for (int r = 0; ahead->first_ran && r < ahead->rest_ran &&
	    x->next != NULL; r++)
		x = x->next;
	w->done.failed_at = x->sql->where;
	return st;
}

/*
 * The claim that carried the held row's `done` came back (ahead, st):
 * when the `done` ran, it is counted and the row let go; when it failed
 * (nothing after it ran), it is settled as a prepared one would be.
 * Returns DB_OK, or the status that ends the turn.
 */
enum db_status
finish_held(struct worker *w, const struct db_ahead *ahead, enum db_status st)
{
	struct turn *t = &w->turn;
	struct buf key = { 0 };

	/* Its lines name the row, as every line about a row does. */
	row_key_text(w, &t->held, &key);
	log_set_row(key.data);
	w->token = t->held_token;
	st = finish_held_status(w, ahead, st);
	st = finish_settle(w, &w->done, &t->held, t->held_attempt, st,
	    ahead->affected);
	log_set_row(NULL);
	buf_free(&key);
	turn_release_held(w);
	return st;
}

/*
 * What goes in front of a COMMIT for the held row (ahead says): its
 * `done` as text, then its run (runs_front), each ended for more to
 * follow.
 */
void
finish_held_text(const struct worker *w, const struct db_ahead *ahead,
    struct buf *b)
{
	if (ahead->finish) {
		buf_append(b, w->turn.held_sql.data, w->turn.held_sql.len);
		buf_puts(b, ";\n");
	}
	if (ahead->runs) {
		buf_append(b, w->turn.runs_front.data, w->turn.runs_front.len);
		buf_puts(b, ";\n");
	}
}

/* No claim follows (worker_commit): the held row's `done`, prepared. */
enum db_status
finish_held_now(struct worker *w)
{
	struct turn *t = &w->turn;
	struct buf key = { 0 };
	enum db_status st;

	row_key_text(w, &t->held, &key);
	log_set_row(key.data);
	w->token = t->held_token;
	st = finish_row(w, &w->done, &t->held, t->held_attempt, 0);
	log_set_row(NULL);
	buf_free(&key);

	turn_release_held(w);
	return st;
}
