/*
 * prune_sql.c: a queue's prune: statement as rowq runs it.  A DELETE of
 * one table gets LIMIT <chunk> appended, and its WHERE becomes the count
 * of --dry-run; a CALL of the user's own procedure passes the chunk as
 * :chunk.  What rowq cannot bound that way is refused when the
 * configuration is loaded, never found out halfway through a prune.
 */
#include "rowq.h"

#include <stdlib.h>
#include <string.h>

/* What a statement is made of, for the checks below. */
struct prune_text {
	const char		*text;
	struct sql_token	*t;
	size_t			 n;
};

static bool
prune_word(const struct prune_text *p, size_t i, const char *word)
{
	return i < p->n && sql_token_is(p->text, &p->t[i], word);
}

static bool
prune_is_name(const struct prune_text *p, size_t i)
{
	return i < p->n && (p->t[i].kind == SQL_TOKEN_WORD ||
	    p->t[i].kind == SQL_TOKEN_NAME);
}

/* One statement, nothing the server reads that rowq cannot: a ; at the end only. */
static int
prune_one_statement(struct prune_text *p, char *err, size_t errlen)
{
	if (p->n > 0 && prune_word(p, p->n - 1, ";"))
		p->n--;
	for (size_t i = 0; i < p->n; i++) {
		if (p->t[i].kind == SQL_TOKEN_EXEC_COMMENT) {
			snprintf(err, errlen, "an executable comment or "
			    "optimizer hint: rowq cannot tell what it adds, "
			    "so it cannot bound the statement");
			return -1;
		}
		if (prune_word(p, i, ";")) {
			snprintf(err, errlen, "one statement only, not several "
			    "separated by ;");
			return -1;
		}
	}
	if (p->n == 0) {
		snprintf(err, errlen, "an empty statement");
		return -1;
	}
	return 0;
}

/*
 * After DELETE FROM and its table, where the clauses a chunk keeps may
 * follow.  Returns the index of the table's first token, and in *order
 * where ORDER BY starts (p->n: none); -1 with err when rowq cannot append
 * LIMIT to it.
 */
static long
prune_delete_shape(const struct prune_text *p, size_t *order, char *err,
    size_t errlen)
{
	size_t i = 1, table, k;
	bool where = false;

	while (prune_word(p, i, "LOW_PRIORITY") || prune_word(p, i, "QUICK") ||
	    prune_word(p, i, "IGNORE"))
		i++;
	if (!prune_word(p, i, "FROM") || !prune_is_name(p, i + 1)) {
		snprintf(err, errlen, "a DELETE of several tables (DELETE t "
		    "FROM ...) cannot take LIMIT: write DELETE FROM one table, "
		    "or CALL a procedure that takes :chunk");
		return -1;
	}
	table = ++i;
	if (prune_word(p, i + 1, ".") && prune_is_name(p, i + 2))
		i += 2;
	i++;
	if (i < p->n && !prune_word(p, i, "WHERE") &&
	    !prune_word(p, i, "ORDER") && !prune_word(p, i, "PARTITION")) {
		snprintf(err, errlen, "a DELETE of one table, with nothing "
		    "but WHERE and ORDER BY after it: rowq cannot append LIMIT "
		    "to a DELETE with USING, a join or an alias");
		return -1;
	}
	*order = p->n;
	for (k = i; k < p->n; k++) {
		if (p->t[k].depth != 0)
			continue;
		if (prune_word(p, k, "WHERE"))
			where = true;
		else if (prune_word(p, k, "ORDER") && *order == p->n)
			*order = k;
		else if (prune_word(p, k, "LIMIT")) {
			snprintf(err, errlen, "has LIMIT: rowq appends LIMIT "
			    "<chunk> itself, one chunk at a time");
			return -1;
		} else if (prune_word(p, k, "RETURNING")) {
			snprintf(err, errlen, "RETURNING: rowq reads no rows "
			    "back from a prune");
			return -1;
		}
	}
	if (!where) {
		snprintf(err, errlen, "a DELETE without WHERE would remove "
		    "the waiting rows too: say which rows are finished");
		return -1;
	}
	return (long)table;
}

static int
prune_compile_delete(struct prune_policy *pp, const struct prune_text *p,
    char *err, size_t errlen)
{
	struct sql q = { 0 };
	struct buf b = { 0 };
	size_t order;
	long table;

	if (sql_compile(&q, pp->text, err, errlen) == -1)
		return -1;
	if (q.nparams > 0) {
		snprintf(err, errlen, ":%s: a prune DELETE takes no parameters "
		    "(only a CALL takes :chunk)", q.params[0]);
		sql_free(&q);
		return -1;
	}
	sql_free(&q);
	if ((table = prune_delete_shape(p, &order, err, errlen)) == -1)
		return -1;
	sql_tokens_text(&b, p->text, p->t, 0, p->n);
	buf_printf(&b, " LIMIT %d", pp->chunk);
	pp->chunk_sql = buf_steal(&b);
	buf_puts(&b, "SELECT COUNT(*) FROM ");
	sql_tokens_text(&b, p->text, p->t, (size_t)table, order);
	pp->count_sql = buf_steal(&b);
	return 0;
}

/* CALL proc(..., :chunk, ...): the chunk is the procedure's to respect. */
static int
prune_compile_call(struct prune_policy *pp, char *err, size_t errlen)
{
	struct sql q = { 0 };
	struct prune_text pos = { 0 };
	struct buf b = { 0 };
	int rc = -1;

	if (sql_compile(&q, pp->text, err, errlen) == -1)
		return -1;
	for (size_t i = 0; i < q.nparams; i++)
		if (strcmp(q.params[i], "chunk") != 0) {
			snprintf(err, errlen, ":%s: a prune CALL takes only "
			    ":chunk", q.params[i]);
			goto out;
		}
	if (q.nparams == 0) {
		snprintf(err, errlen, "a CALL must take :chunk, the rows one "
		    "call removes at most, so that rowq can bound it");
		goto out;
	}
	pos.text = q.positional;
	if (sql_tokenize(pos.text, &pos.t, &pos.n, err, errlen) == -1)
		goto out;
	if (pos.n > 0 && prune_word(&pos, pos.n - 1, ";"))
		pos.n--;
	/* The chunk is rowq's own number, not a value from a row. */
	for (size_t i = 0; i < pos.n; i++) {
		if (i > 0 && pos.t[i - 1].start + pos.t[i - 1].len <
		    pos.t[i].start)
			buf_putc(&b, ' ');
		if (prune_word(&pos, i, "?"))
			buf_printf(&b, "%d", pp->chunk);
		else
			buf_append(&b, pos.text + pos.t[i].start, pos.t[i].len);
	}
	pp->chunk_sql = buf_steal(&b);
	rc = 0;
out:
	free(pos.t);
	sql_free(&q);
	return rc;
}

/*
 * From pp->text and pp->chunk, the statement one chunk runs and, for a
 * DELETE, the count --dry-run shows.  0, or -1 with err saying why rowq
 * cannot bound it.
 */
int
prune_compile(struct prune_policy *pp, char *err, size_t errlen)
{
	struct prune_text p = { .text = pp->text };
	int rc = -1;

	if (sql_tokenize(p.text, &p.t, &p.n, err, errlen) == -1)
		return -1;
	if (prune_one_statement(&p, err, errlen) == -1)
		goto out;
	pp->is_call = prune_word(&p, 0, "CALL");
	if (pp->is_call)
		rc = prune_compile_call(pp, err, errlen);
	else if (prune_word(&p, 0, "DELETE"))
		rc = prune_compile_delete(pp, &p, err, errlen);
	else
		snprintf(err, errlen, "a DELETE or a CALL, which rowq can "
		    "bound, not %.*s", (int)(p.t[0].len > 20 ? 20 :
		    p.t[0].len), p.text + p.t[0].start);
out:
	free(p.t);
	return rc;
}

void
prune_policy_free(struct prune_policy *pp)
{
	if (pp->next != NULL) {
		prune_policy_free(pp->next);
		free(pp->next);
	}
	free(pp->text);
	free(pp->where);
	free(pp->chunk_sql);
	free(pp->count_sql);
}
