/*
 * cursor.c: the claim that scans the primary key from a cursor.
 *
 * The claim rowq builds from any select, `<select> LIMIT n FOR UPDATE SKIP
 * LOCKED`, reads through the index that serves the select's WHERE, in
 * practice a secondary one such as (status, id).  At READ COMMITTED that
 * costs twice (measured on MariaDB 10.11):
 *
 * - a locking read through a secondary index keeps every row it read and
 *   rejected locked until the transaction ends: a row in retry backoff that
 *   lies before the claimed one stays locked for the whole handler run, and
 *   the application's UPDATE of it waits (error 1205 after the lock wait
 *   timeout); only a scan of the clustered index releases such rows;
 * - every `done` that changes the indexed status delete-marks the row's old
 *   entry, and until purge removes it, each claim looks up the clustered
 *   record of each such entry (MDEV-14589): 2 page reads per entry,
 *   thousands per claim when purge lags or a long read view holds it back.
 *
 * For a select of the common shape (one table, ORDER BY its primary key
 * ascending, the key a single integer column) a claim can instead scan the
 * primary key from the last key this worker claimed, which reads only the
 * rows it returns and the rows that lie between (finished ones, released at
 * once):
 *
 *	fast:     <columns> FROM t FORCE INDEX (PRIMARY)
 *		  WHERE pk > <last key> AND (<where>)
 *		  ORDER BY pk LIMIT n FOR UPDATE SKIP LOCKED
 *
 * and, when that finds nothing, every CURSOR_FALLBACK_CLAIMS claims and at
 * least every CURSOR_FALLBACK_MS, a fallback that starts the range at the
 * first waiting row, so that rows that became due behind the cursor
 * (retries, rolled-back claims, late commits of lower keys) are not left:
 *
 *	start:    SELECT pk FROM t [the select's index hints]
 *		  WHERE (<where>) ORDER BY pk LIMIT 1        (no lock taken)
 *	fallback: the fast claim with pk >= <the start's key>
 *
 * The start is a statement of its own rather than a subquery of the claim:
 * measured on 10.11, both read the same pages (58 against today's claim's
 * 6,028 with 3,000 delete-marked entries), but MariaDB bounds the claim's
 * range by a subquery only when it runs it while optimizing, which it does
 * only when `expensive_subquery_limit` exceeds the subquery's estimated
 * rows (the waiting rows, so in practice: set to its maximum); at the
 * default it scans the primary key from the start of the table, reading
 * every finished row.  A session setting that silently decides between
 * the best and the worst plan, and that would also apply to subqueries of
 * the user's own WHERE, costs more than the round trip it saves once a
 * second.
 *
 * The key goes into the claim's text as a decimal integer that
 * cursor_key_valid accepted: the claim runs as text so that the previous
 * turn's COMMIT rides in the same round trip (worker.c), and an integer of
 * digits cannot be anything but a number.
 */
#include "rowq.h"
#include "db.h"
#include "claim.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Clauses that may not follow the table, and what the select then is. */
static const struct {
	const char	*word;
	const char	*reason;
} cursor_refused[] = {
	{ "GROUP", "groups rows (GROUP BY)" },
	{ "HAVING", "has HAVING" },
	{ "WINDOW", "has a WINDOW clause" },
	{ "UNION", "is a UNION" },
	{ "EXCEPT", "is an EXCEPT" },
	{ "INTERSECT", "is an INTERSECT" },
	{ "INTO", "has INTO" },
	{ "PROCEDURE", "has PROCEDURE" },
	{ "LIMIT", "has LIMIT" },
	{ "FOR", "has a locking clause" },
	{ "LOCK", "has a locking clause" },
	{ NULL, NULL },
};

static bool
cursor_name_eq(const struct sql_parse *p, size_t i, const char *name)
{
	char *s = sql_parse_unquote(p, i);
	bool eq = strcmp(s, name) == 0;

	free(s);
	return eq;
}

static int
cursor_refuse(struct cursor_claim *c, const char *fmt, const char *arg)
{
	struct buf b = { 0 };

	buf_printf(&b, fmt, arg);
	free(c->reason);
	c->reason = buf_steal(&b);
	return -1;
}

/* The first depth-0 token from i on that is one of the refused clauses. */
static int
cursor_no_clause(struct cursor_claim *c, const struct sql_parse *p,
    size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		if (p->t[i].depth != 0)
			continue;
		for (size_t k = 0; cursor_refused[k].word != NULL; k++)
			if (sql_parse_is(p, i, cursor_refused[k].word))
				return cursor_refuse(c, "%s",
				    cursor_refused[k].reason);
	}
	return 0;
}

/*
 * FROM [schema.]table [[AS] alias] [index hints], and nothing joined.
 * *i is the token after FROM, and becomes the one after the hints.
 * Returns 0, or -1 after refusing.
 */
static int
cursor_table(struct cursor_claim *c, const struct sql_parse *p, size_t *i,
    char **alias)
{
	size_t k = *i, ref = *i, hints;

	if (sql_parse_is(p, k, "("))
		return cursor_refuse(c, "reads from a subquery, not a table",
		    NULL);
	if (!sql_parse_is_name(p, k) || sql_parse_clause_word(p, k))
		return cursor_refuse(c, "has no table after FROM", NULL);
	if (sql_parse_is(p, k + 1, ".") && sql_parse_is_name(p, k + 2)) {
		c->schema = sql_parse_unquote(p, k);
		k += 2;
	}
	c->table = sql_parse_unquote(p, k);
	k++;
	if (sql_parse_is(p, k, "AS") && sql_parse_is_name(p, k + 1))
		k++;
	if (sql_parse_is_name(p, k) && !sql_parse_clause_word(p, k))
		*alias = sql_parse_unquote(p, k++);
	else
		*alias = xstrdup(c->table);
	c->table_ref = sql_parse_text(p, ref, k);
	hints = k;
	k = sql_parse_skip_hints(p, k);
	c->hints = sql_parse_text(p, hints, k);
	*i = k;
	if (sql_parse_is(p, k, "PARTITION"))
		return cursor_refuse(c, "names partitions", NULL);
	if (sql_parse_is(p, k, ",") || sql_parse_is(p, k, "JOIN") ||
	    sql_parse_is(p, k, "INNER") || sql_parse_is(p, k, "LEFT") ||
	    sql_parse_is(p, k, "RIGHT") || sql_parse_is(p, k, "CROSS") ||
	    sql_parse_is(p, k, "NATURAL") || sql_parse_is(p, k, "STRAIGHT_JOIN") ||
	    sql_parse_is(p, k, "FULL"))
		return cursor_refuse(c, "joins tables", NULL);
	if (k < p->n && !sql_parse_is(p, k, "WHERE") && !sql_parse_is(p, k, "ORDER")) {
		char *word = sql_parse_text(p, k, k + 1);
		if (cursor_no_clause(c, p, k, k + 1) == 0)
			cursor_refuse(c, "has %s after its table", word);
		free(word);
		return -1;
	}
	return 0;
}

/*
 * ORDER BY one column of the table, ascending, and nothing after it; i is
 * the token after ORDER.  Returns 0, or -1 after refusing.
 */
static int
cursor_order(struct cursor_claim *c, const struct sql_parse *p, size_t i,
    const char *alias)
{
	size_t start, col, end;

	if (!sql_parse_is(p, i, "BY"))
		return cursor_refuse(c, "has ORDER without BY", NULL);
	start = col = i + 1;
	while (sql_parse_is_name(p, col) && sql_parse_is(p, col + 1, ".") &&
	    sql_parse_is_name(p, col + 2))
		col += 2;
	if (!sql_parse_is_name(p, col) || sql_parse_clause_word(p, col))
		return cursor_refuse(c, "orders by something other than a "
		    "column", NULL);
	/* A qualifier must name this table: t.id, alias.id or s.t.id. */
	if (col > start && !cursor_name_eq(p, col - 2, alias) &&
	    !cursor_name_eq(p, col - 2, c->table))
		return cursor_refuse(c, "orders by a column of another table",
		    NULL);
	end = col + 1;
	if (sql_parse_is(p, end, "ASC"))
		end++;
	if (sql_parse_is(p, end, "DESC")) {
		char *name = sql_parse_unquote(p, col);
		cursor_refuse(c, "orders by %s DESC, not ascending", name);
		free(name);
		return -1;
	}
	if (sql_parse_is(p, end, ","))
		return cursor_refuse(c, "orders by more than one column", NULL);
	if (end < p->n) {
		if (cursor_no_clause(c, p, end, p->n) == -1)
			return -1;
		return cursor_refuse(c, "orders by something other than a "
		    "column", NULL);
	}
	c->key_column = sql_parse_unquote(p, col);
	c->key_ref = sql_parse_text(p, start, col + 1);
	return 0;
}

int
cursor_derive(struct cursor_claim *c, const char *select)
{
	struct sql_parse p = { .text = select };
	char err[128], *alias = NULL;
	size_t i, from = 0, where = 0, order = 0;

	memset(c, 0, sizeof(*c));
	if (sql_tokenize(select, &p.t, &p.n, err, sizeof(err)) == -1)
		return cursor_refuse(c, "cannot be read: %s", err);
	for (i = 0; i < p.n; i++)
		if (p.t[i].kind == SQL_TOKEN_EXEC_COMMENT) {
			cursor_refuse(c, "has an executable comment or an "
			    "optimizer hint", NULL);
			goto out;
		}
	if (!sql_parse_is(&p, 0, "SELECT")) {
		cursor_refuse(c, "does not start with SELECT", NULL);
		goto out;
	}
	for (i = 1; i < p.n; i++) {
		if (p.t[i].depth != 0)
			continue;
		if (from == 0 && (sql_parse_is(&p, i, "DISTINCT") ||
		    sql_parse_is(&p, i, "DISTINCTROW"))) {
			cursor_refuse(c, "has DISTINCT", NULL);
			goto out;
		}
		if (sql_parse_is(&p, i, "UNION") || sql_parse_is(&p, i, "EXCEPT") ||
		    sql_parse_is(&p, i, "INTERSECT")) {
			cursor_no_clause(c, &p, i, i + 1);
			goto out;
		}
		if (from == 0 && sql_parse_is(&p, i, "FROM"))
			from = i;
		else if (from != 0 && sql_parse_is(&p, i, "FROM")) {
			cursor_refuse(c, "has two FROMs", NULL);
			goto out;
		}
	}
	if (from == 0) {
		cursor_refuse(c, "has no FROM", NULL);
		goto out;
	}
	c->columns = sql_parse_text(&p, 0, from);
	i = from + 1;
	if (cursor_table(c, &p, &i, &alias) == -1)
		goto out;
	if (sql_parse_is(&p, i, "WHERE")) {
		where = i;
		for (i = where + 1; i < p.n && !(p.t[i].depth == 0 &&
		    sql_parse_is(&p, i, "ORDER")); i++)
			;
		if (cursor_no_clause(c, &p, where + 1, i) == -1)
			goto out;
		if (i == where + 1) {
			cursor_refuse(c, "has an empty WHERE", NULL);
			goto out;
		}
		c->where = sql_parse_text(&p, where + 1, i);
	}
	if (!sql_parse_is(&p, i, "ORDER")) {
		cursor_refuse(c, "has no ORDER BY", NULL);
		goto out;
	}
	order = i;
	(void)cursor_order(c, &p, order + 1, alias);
out:
	free(alias);
	free(p.t);
	return c->reason ? -1 : 0;
}

void
cursor_free(struct cursor_claim *c)
{
	free(c->reason);
	free(c->schema);
	free(c->table);
	free(c->key_column);
	free(c->key_ref);
	free(c->columns);
	free(c->table_ref);
	free(c->hints);
	free(c->where);
	memset(c, 0, sizeof(*c));
}

/*
 * A key that may go into the claim's text: a decimal integer, as the
 * server sends an integer column, of at most 20 digits.
 */
bool
cursor_key_valid(const char *key, size_t len)
{
	size_t i = 0;

	if (key == NULL)
		return false;
	if (len > 0 && key[0] == '-')
		i = 1;
	if (len == i || len - i > 20)
		return false;
	for (; i < len; i++)
		if (!isdigit((unsigned char)key[i]))
			return false;
	return true;
}

/*
 * The fast claim (CURSOR_AFTER) or the fallback claim (CURSOR_AT) for up
 * to limit rows, from key; key NULL writes a `?` in its place, for
 * messages.  The caller has checked key with cursor_key_valid.
 */
void
cursor_claim_sql(struct buf *b, const struct cursor_claim *c,
    enum cursor_from from, const char *key, int limit, const char *more)
{
	char n[16];

	/* Written piece by piece: a format costs more here, at every claim. */
	buf_puts(b, c->columns);
	if (more != NULL)
		buf_puts(b, more);
	buf_puts(b, " FROM ");
	buf_puts(b, c->table_ref);
	buf_puts(b, " FORCE INDEX (PRIMARY)\nWHERE ");
	buf_puts(b, c->key_ref);
	buf_puts(b, from == CURSOR_AFTER ? " > " : " >= ");
	buf_puts(b, key ? key : "?");
	if (c->where != NULL) {
		buf_puts(b, " AND (");
		buf_puts(b, c->where);
		buf_putc(b, ')');
	}
	if (c->also != NULL) {
		buf_puts(b, " AND ");
		buf_puts(b, c->also);
	}
	/* Last: evaluated for the rows the rest keeps. */
	if (c->take != NULL) {
		buf_puts(b, " AND ");
		buf_puts(b, c->take);
	}
	buf_puts(b, "\nORDER BY ");
	buf_puts(b, c->key_ref);
	snprintf(n, sizeof(n), "%d", limit);
	buf_puts(b, "\nLIMIT ");
	buf_puts(b, n);
	buf_puts(b, " FOR UPDATE SKIP LOCKED");
}

/*
 * The fallback's start: the first key the select would return, read
 * without locking anything, through the index the select's own hints (or
 * the optimizer) choose, which is the one that serves its WHERE.
 */
void
cursor_start_sql(struct buf *b, const struct cursor_claim *c)
{
	buf_printf(b, "SELECT %s FROM %s%s%s", c->key_ref, c->table_ref,
	    c->hints[0] ? " " : "", c->hints);
	if (c->where != NULL && c->also != NULL)
		buf_printf(b, "\nWHERE (%s) AND %s", c->where, c->also);
	else if (c->where != NULL)
		buf_printf(b, "\nWHERE %s", c->where);
	else if (c->also != NULL)
		buf_printf(b, "\nWHERE %s", c->also);
	buf_printf(b, "\nORDER BY %s\nLIMIT 1", c->key_ref);
}

/* ---- the primary key, as the database defines it ---- */

static bool
cursor_integer_type(const char *type)
{
	static const char *const types[] = { "tinyint", "smallint",
	    "mediumint", "int", "bigint", NULL };

	for (size_t i = 0; types[i] != NULL; i++)
		if (strcasecmp(type, types[i]) == 0)
			return true;
	return false;
}

/*
 * Confirm what the select alone cannot say: that the ORDER BY column is
 * the table's whole primary key, an integer, and among the columns the
 * claim returns (cols, from the prepared claim), where the worker reads
 * the last key.  Returns 0 with c->key_index set; -1 with c->reason set
 * when the cursor claim does not apply, or when the question could not be
 * asked (the reason then says so: today's claim is kept, which works).
 */
int
cursor_confirm(struct db *db, struct cursor_claim *c,
    const struct column *cols, size_t ncols)
{
	static const char pk_sql[] =
	    "SELECT s.COLUMN_NAME, c.DATA_TYPE "
	    "FROM information_schema.STATISTICS s "
	    "JOIN information_schema.COLUMNS c "
	    "ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME "
	    "AND c.COLUMN_NAME = s.COLUMN_NAME "
	    "WHERE s.TABLE_SCHEMA = COALESCE(?, DATABASE()) "
	    "AND s.TABLE_NAME = ? AND s.INDEX_NAME = 'PRIMARY' "
	    "ORDER BY s.SEQ_IN_INDEX";
	struct value v[2] = {
		{ .type = c->schema ? VALUE_TEXT : VALUE_NULL, .s = c->schema,
		  .len = c->schema ? strlen(c->schema) : 0 },
		{ .type = VALUE_TEXT, .s = c->table, .len = strlen(c->table) },
	};
	struct rowset rs = { 0 };
	struct db_stmt *s;
	enum db_status st;
	char **pk;

	if (c->reason != NULL)
		return -1;
	if ((s = db_prepare(db, pk_sql, &st)) == NULL)
		return cursor_refuse(c, "cannot be checked against the table's "
		    "primary key: %s", db_error(db));
	st = db_stmt_fetch_all(s, v, 2, &rs);
	db_stmt_free(s);
	if (st != DB_OK) {
		rowset_free(&rs, 2);
		return cursor_refuse(c, "cannot be checked against the table's "
		    "primary key: %s", db_error(db));
	}
	pk = rs.nrows > 0 ? rs.rows[0].value : NULL;
	if (rs.nrows == 0)
		cursor_refuse(c, "reads %s, which has no primary key (or is a "
		    "view)", c->table);
	else if (rs.nrows > 1)
		cursor_refuse(c, "reads %s, whose primary key has more than "
		    "one column", c->table);
	else if (pk[0] == NULL || strcasecmp(pk[0], c->key_column) != 0)
		cursor_refuse(c, "orders by %s, which is not the table's "
		    "primary key", c->key_column);
	else if (pk[1] == NULL || !cursor_integer_type(pk[1]))
		cursor_refuse(c, "orders by a primary key that is not an "
		    "integer column (%s)", pk[1] ? pk[1] : "?");
	rowset_free(&rs, 2);
	if (c->reason != NULL)
		return -1;
	for (c->key_index = 0; c->key_index < ncols; c->key_index++)
		if (strcasecmp(cols[c->key_index].name, c->key_column) == 0)
			return 0;
	return cursor_refuse(c, "does not return its primary key %s among "
	    "its columns", c->key_column);
}

/* ---- one worker's cursor ---- */

void
cursor_rewind(struct cursor_state *cs)
{
	cs->last[0] = '\0';
}

/* Whether the next claim is the fallback: see CURSOR_FALLBACK_*. */
bool
cursor_fallback_due(const struct cursor_state *cs, int64_t now)
{
	return cs->last[0] == '\0' || cs->claims >= CURSOR_FALLBACK_CLAIMS ||
	    now - cs->fallback_ms >= CURSOR_FALLBACK_MS;
}

/*
 * After a claim: key is the last claimed row's key (the greatest: rows
 * come in key order), NULL when the claim returned no row.  An empty fast
 * claim rewinds, so that the fallback runs next; an empty fallback too,
 * so that an idle worker only runs the start statement.  Returns -1 when
 * the key cannot be used (the cursor is rewound).
 */
int
cursor_claimed(struct cursor_state *cs, enum cursor_from from,
    const char *key, size_t len, int64_t now)
{
	if (from == CURSOR_AT) {
		cs->claims = 0;
		cs->fallback_ms = now;
	} else
		cs->claims++;
	if (key == NULL) {
		cursor_rewind(cs);
		return 0;
	}
	if (!cursor_key_valid(key, len) || len >= sizeof(cs->last)) {
		cursor_rewind(cs);
		return -1;
	}
	memcpy(cs->last, key, len);
	cs->last[len] = '\0';
	return 0;
}
