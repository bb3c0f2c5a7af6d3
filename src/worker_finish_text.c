/*
 * worker_finish_text.c: at batch 1, the row's `done` sent in front of the
 * COMMIT and the next claim, all three in one round trip.
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
 * UPDATE each time); EXECUTE in front of the COMMIT 324,100.
 *
 * The server runs nothing after a statement that fails, so the COMMIT
 * still follows only a `done` that succeeded; a `done` that failed leaves
 * the transaction open with the row locked, as the prepared one did, and
 * is settled the same way (finish_settle: the row marked failed instead,
 * or the turn rolled back), before the COMMIT and the claim are sent
 * again.  Where no claim follows (stopping, a pipe handler to restart, an
 * empty fallback), worker_commit runs it prepared, as before.
 *
 * Only values that can be written exactly are written: integers as
 * digits, NULL, and the bytes of a binary column as X'hex', which MariaDB
 * reads as a binary string in every context, as it does the same bytes
 * bound as a BLOB (in a numeric one too: X'313233' + 0 is 123).  A row
 * with a text value (a VARCHAR key; :error, :output and :lease are
 * refused at once) runs its `done` prepared, at once: as a literal, its
 * character set and collation would be the literal's, not the binding's.
 */
#include "worker.h"

#include <stdlib.h>
#include <string.h>

/* Longer bytes than this go bound, not as hex in the claim's text. */
#define FINISH_TEXT_BYTES_MAX	1024
/* The session's name for the `done` prepared by SQL. */
#define FINISH_TEXT_NAME	"rowq_done"

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

/*
 * After finish_bind: whether the statement can go in front of the claim,
 * and if so, prepare it by SQL on this connection.  When it cannot, or
 * the server refuses, the prepared `done` runs as before.
 */
void
finish_text_bind(struct worker *w, struct bound *b)
{
	struct buf sql = { 0 };

	if (b->stmt == NULL || b->next != NULL || w->q->lease.enabled ||
	    w->q->batch != 1 || !finish_text_verb(b->sql->positional))
		return;
	for (size_t i = 0; i < b->sql->nparams; i++)
		if (b->source[i] == PARAM_ERROR ||
		    b->source[i] == PARAM_OUTPUT || b->source[i] == PARAM_LEASE)
			return;
	buf_puts(&sql, "PREPARE " FINISH_TEXT_NAME " FROM ");
	sql_hex(&sql, b->sql->positional, strlen(b->sql->positional));
	if (db_run(w->db, sql.data) == DB_OK)
		b->text = xstrdup("EXECUTE " FINISH_TEXT_NAME);
	else
		log_debug("%s: runs in a round trip of its own: %s",
		    b->sql->where, db_error(w->db));
	buf_free(&sql);
}

/* One value as a literal; false when it cannot be written exactly. */
static bool
finish_text_value(struct buf *out, const struct value *v)
{
	switch (v->type) {
	case VALUE_NULL:
		buf_puts(out, "NULL");
		return true;
	case VALUE_INT:
		if (v->is_unsigned)
			buf_printf(out, "%llu", (unsigned long long)v->i);
		else
			buf_printf(out, "%lld", v->i);
		return true;
	case VALUE_BLOB:
		if (v->len > FINISH_TEXT_BYTES_MAX)
			return false;
		sql_hex(out, v->s, v->len);
		return true;
	case VALUE_TEXT:
		break;
	}
	return false;
}

/*
 * Batch 1, in transaction mode, a row whose handler said ok: write its
 * `done` (EXECUTE with the row's values) into the turn's held_sql.
 * Returns false when it cannot be (see above): the caller runs it
 * prepared, at once.
 */
bool
finish_text_hold(struct worker *w, const struct row *row, int attempt)
{
	struct bound *b = &w->done;
	struct buf *out = &w->turn.held_sql;

	if (b->text == NULL)
		return false;
	finish_values(w, b, row, attempt, 0, b->values);
	buf_reset(out);
	buf_puts(out, b->text);
	for (size_t i = 0; i < b->sql->nparams; i++) {
		buf_puts(out, i == 0 ? " USING " : ", ");
		if (!finish_text_value(out, &b->values[i]))
			return false;
	}
	return true;
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

	st = finish_settle(w, &w->done, &t->held, t->held_attempt,
	    ahead->finished ? DB_OK : st, ahead->affected);
	turn_release_held(w);
	return st;
}

/* No claim follows (worker_commit): the held row's `done`, prepared. */
enum db_status
finish_held_now(struct worker *w)
{
	struct turn *t = &w->turn;
	enum db_status st = finish_row(w, &w->done, &t->held,
	    t->held_attempt, 0);

	turn_release_held(w);
	return st;
}
