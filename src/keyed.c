/*
 * keyed.c: the claim that locks only the rows it claims, for a select
 * whose own claim locks more.
 *
 * The select's own claim, `<select> LIMIT n FOR UPDATE SKIP LOCKED`,
 * locks every row it reads, of every table it reads, until the worker
 * commits, that is while the handler runs.  Two shapes make those every
 * row the other workers need (measured on MariaDB 10.11, 2 workers and a
 * pipe handler, in bench/README.md):
 *
 * - a join with a row that every claim reads, such as Magento's
 *   `JOIN queue ON ... WHERE queue.name = ?` (EXPLAIN: type const): each
 *   claim locks that row, SKIP LOCKED skips every row joined to it while
 *   one worker holds it, and the workers take turns;
 * - a sort that no index serves, such as Action Scheduler's ORDER BY
 *   priority, attempts, scheduled_date_gmt, action_id (Using filesort):
 *   every matching row is read and locked before the first is returned,
 *   and one worker holds the whole queue.
 *
 * When `done` changes one table of such a select (the claimed table,
 * whose primary key is one integer column), a worker claims in steps:
 *
 *	list:  SELECT t.pk FROM <the select's FROM, WHERE, ORDER BY>
 *	       LIMIT <window × KEYED_LIST_CLAIMS>            (no lock taken)
 *	lock:  SELECT <columns> FROM t FORCE INDEX (PRIMARY)
 *	       WHERE t.pk IN (<the next window of keys>) AND (<where>)
 *	       ORDER BY t.pk LIMIT n FOR UPDATE SKIP LOCKED
 *
 * The lock reads by key only rows of the claimed table that the list
 * named, and takes the first that are free and still match.  For a join,
 * whose other tables' rows are what it must not lock, the claimed table
 * in the select's FROM becomes a derived table that locks (MariaDB takes
 * FOR UPDATE SKIP LOCKED there, and the statement around it locks
 * nothing), under the same name:
 *
 *	lock:  <columns> FROM ... JOIN (SELECT * FROM t FORCE INDEX (PRIMARY)
 *	       WHERE pk IN (<keys>) ORDER BY pk LIMIT n
 *	       FOR UPDATE SKIP LOCKED) AS t ON ... WHERE ... ORDER BY ...
 *
 * so that the claimed rows are read as locked (their latest version),
 * and every condition of the select is checked on them; a row that
 * another worker finished meanwhile is locked for nothing, and not
 * returned.
 *
 * The list sorts what the select matches, so it is read once for many
 * claims (KEYED_LIST_CLAIMS): each claim locks the next batch of keys of
 * this worker's share of it (every Nth key of N workers, so that workers
 * that read the same list do not meet on the same rows), and it is read
 * again when that is used up, or after KEYED_LIST_MS.  A row the list
 * missed (one that came, came due or was rolled back since) waits for the
 * next read: rows are claimed in the select's order to within a list,
 * not exactly.
 *
 * Keys go into the statements' text as decimal integers that
 * cursor_key_valid accepted, as the cursor claim's do, so that the last
 * turn's COMMIT rides in front of them in the same round trip.
 */
#include "rowq.h"
#include "db.h"
#include "dialect.h"
#include "claim.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int
keyed_refuse(struct keyed_claim *k, const char *fmt, const char *arg)
{
	struct buf b = { 0 };

	buf_printf(&b, fmt, arg);
	free(k->reason);
	k->reason = buf_steal(&b);
	return -1;
}

/* [schema.]name at *i; *i becomes the token after it.  0, or -1. */
static int
keyed_name(const struct sql_parse *p, size_t *i, char **schema, char **name)
{
	size_t k = *i;

	if (!sql_parse_is_name(p, k) || sql_parse_clause_word(p, k))
		return -1;
	*schema = NULL;
	if (sql_parse_is(p, k + 1, ".") && sql_parse_is_name(p, k + 2)) {
		*schema = sql_parse_unquote(p, k);
		k += 2;
	}
	*name = sql_parse_unquote(p, k);
	*i = k + 1;
	return 0;
}

/*
 * The table the first finishing statement changes: UPDATE [LOW_PRIORITY]
 * [IGNORE] t, or DELETE [LOW_PRIORITY] [QUICK] [IGNORE] FROM t.
 */
static int
keyed_target(struct keyed_claim *k, const char *done)
{
	struct sql_parse p = { .text = done };
	char err[128];
	size_t i = 1;
	int rc = 0;

	if (sql_tokenize(done, &p.t, &p.n, err, sizeof(err)) == -1)
		return keyed_refuse(k, "cannot be read: %s", err);
	if (sql_parse_is(&p, 0, "UPDATE") || sql_parse_is(&p, 0, "DELETE")) {
		while (sql_parse_is(&p, i, "LOW_PRIORITY") ||
		    sql_parse_is(&p, i, "QUICK") || sql_parse_is(&p, i, "IGNORE"))
			i++;
		if (sql_parse_is(&p, 0, "DELETE") && sql_parse_is(&p, i, "FROM"))
			i++;
		if (keyed_name(&p, &i, &k->schema, &k->table) == -1)
			rc = keyed_refuse(k, "is finished by a done whose table "
			    "cannot be read", NULL);
	} else
		rc = keyed_refuse(k, "is finished by a done that is not an "
		    "UPDATE or a DELETE (a CALL, say): which table's rows it "
		    "takes out of the select is not known", NULL);
	free(p.t);
	return rc;
}

/* Whether the table reference schema.table is the claimed table. */
static bool
keyed_is_target(const struct keyed_claim *k, const char *schema,
    const char *table)
{
	if (strcmp(table, k->table) != 0)
		return false;
	return schema == NULL || k->schema == NULL ||
	    strcmp(schema, k->schema) == 0;
}

/*
 * One table reference at *i: [schema.]table [[AS] alias] [hints].  When
 * it is the claimed table, its alias and text are kept; *i becomes the
 * token after it.  Returns 1 for the claimed table, 0 for another, -1
 * after refusing.
 */
static int
keyed_table(struct keyed_claim *k, const struct sql_parse *p, size_t *i)
{
	size_t ref = *i;
	char *schema, *table, *alias = NULL;
	int target;

	if (sql_parse_is(p, ref, "("))
		return keyed_refuse(k, "joins a subquery or a parenthesised "
		    "join", NULL);
	if (keyed_name(p, i, &schema, &table) == -1)
		return keyed_refuse(k, "has a table reference that cannot be "
		    "read", NULL);
	if (sql_parse_is(p, *i, "AS"))
		(*i)++;
	if (sql_parse_is_name(p, *i) && !sql_parse_clause_word(p, *i))
		alias = sql_parse_unquote(p, (*i)++);
	target = keyed_is_target(k, schema, table);
	if (target && k->alias != NULL)
		target = keyed_refuse(k, "reads the table its done changes "
		    "twice", NULL);
	else if (target) {
		k->alias = alias ? alias : xstrdup(table);
		alias = NULL;
		k->table_ref = sql_parse_text(p, ref, *i);
		k->ref_start = ref;
	}
	*i = sql_parse_skip_hints(p, *i);
	if (target == 1)
		k->ref_end = *i;
	free(schema);
	free(table);
	free(alias);
	return target;
}

static bool
keyed_clause_end(const struct sql_parse *p, size_t i)
{
	static const char *const ends[] = { "WHERE", "ORDER", "GROUP",
	    "HAVING", "WINDOW", "LIMIT", "FOR", "LOCK", "UNION", "EXCEPT",
	    "INTERSECT", "INTO", "PROCEDURE", NULL };

	if (p->t[i].depth != 0)
		return false;
	for (size_t k = 0; ends[k] != NULL; k++)
		if (sql_parse_is(p, i, ends[k]))
			return true;
	return false;
}

/*
 * FROM's table references, up to *end: a reference starts after FROM,
 * after a comma and after JOIN (STRAIGHT_JOIN); ON and USING conditions
 * are read past.  Returns 0 with the claimed table found, or -1.
 */
static int
keyed_from(struct keyed_claim *k, const struct sql_parse *p, size_t from,
    size_t *end)
{
	size_t i = from + 1;
	int tables = 0, found = 0, r;

	for (;;) {
		if ((r = keyed_table(k, p, &i)) < 0)
			return -1;
		found += r;
		tables++;
		while (i < p->n && !keyed_clause_end(p, i) &&
		    !(p->t[i].depth == 0 && (sql_parse_is(p, i, ",") ||
		    sql_parse_is(p, i, "JOIN") ||
		    sql_parse_is(p, i, "STRAIGHT_JOIN"))))
			i++;
		if (i >= p->n || keyed_clause_end(p, i))
			break;
		i++;
	}
	*end = i;
	k->join = tables > 1;
	if (found == 0)
		return keyed_refuse(k, "does not read %s, the table its done "
		    "changes", k->table);
	return 0;
}

/*
 * Whether the conjunct [from, to) reads the claimed table alone, so that
 * the lock can check it: every qualified name is the claimed table's,
 * and every bare word is one of the few words of a condition (a bare
 * column might be another table's).
 */
static bool
keyed_own(const struct keyed_claim *k, const struct sql_parse *p, size_t from,
    size_t to)
{
	static const char *const words[] = { "AND", "OR", "NOT", "IN", "IS",
	    "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE", "INTERVAL", "SECOND",
	    "MINUTE", "HOUR", "DAY", "ESCAPE", "DIV", "MOD", "XOR", NULL };
	bool qualified = false;

	for (size_t i = from; i < to; i++) {
		if (!sql_parse_is_name(p, i) || sql_parse_is(p, i + 1, "(") ||
		    (i > from && sql_parse_is(p, i - 1, ".")))
			continue;
		if (sql_parse_is(p, i + 1, ".")) {
			char *q = sql_parse_unquote(p, i);
			bool own = strcmp(q, k->alias) == 0;
			free(q);
			if (!own)
				return false;
			qualified = true;
			continue;
		}
		size_t w = 0;
		while (words[w] != NULL && !sql_parse_is(p, i, words[w]))
			w++;
		if (words[w] == NULL || p->t[i].kind != SQL_TOKEN_WORD)
			return false;
	}
	return qualified;
}

/*
 * The WHERE's conjuncts that read the claimed table alone, for a join's
 * lock to check (k->own_where): with them, a row another worker finished
 * is not locked for nothing.  None when an OR joins the conjuncts.
 */
static void
keyed_own_where(struct keyed_claim *k, const struct sql_parse *p,
    size_t from, size_t to)
{
	struct buf b = { 0 };
	size_t start = from;
	bool between = false;

	for (size_t i = from; i < to; i++)
		if (p->t[i].depth == 0 && (sql_parse_is(p, i, "OR") ||
		    sql_parse_is(p, i, "XOR") || sql_parse_is(p, i, "||")))
			return;
	for (size_t i = from; i <= to; i++) {
		bool end = i == to;
		if (!end && p->t[i].depth == 0 && sql_parse_is(p, i, "BETWEEN"))
			between = true;
		if (!end && !(p->t[i].depth == 0 && (sql_parse_is(p, i, "AND") ||
		    sql_parse_is(p, i, "&&"))))
			continue;
		if (!end && between) {
			between = false;
			continue;
		}
		if (i > start && keyed_own(k, p, start, i)) {
			char *c = sql_parse_text(p, start, i);
			buf_printf(&b, "%s(%s)", b.len ? " AND " : "", c);
			free(c);
		}
		start = i + 1;
	}
	if (b.len > 0)
		k->own_where = buf_steal(&b);
}

int
keyed_derive(struct keyed_claim *k, const char *select, const char *done)
{
	struct sql_parse p = { .text = select };
	char err[128];
	size_t i, from = 0, end, where = 0, order = 0;

	memset(k, 0, sizeof(*k));
	if (done == NULL || keyed_target(k, done) == -1)
		return -1;
	if (sql_tokenize(select, &p.t, &p.n, err, sizeof(err)) == -1)
		return keyed_refuse(k, "cannot be read: %s", err);
	for (i = 0; i < p.n; i++) {
		if (p.t[i].kind == SQL_TOKEN_EXEC_COMMENT) {
			keyed_refuse(k, "has an executable comment or an "
			    "optimizer hint", NULL);
			goto out;
		}
		if (p.t[i].depth == 0 && from == 0 && sql_parse_is(&p, i, "FROM"))
			from = i;
	}
	if (!sql_parse_is(&p, 0, "SELECT") || from == 0 ||
	    sql_parse_is(&p, 1, "DISTINCT")) {
		keyed_refuse(k, "is not a plain SELECT ... FROM", NULL);
		goto out;
	}
	if (keyed_from(k, &p, from, &end) == -1)
		goto out;
	for (i = end; i < p.n; i++) {
		if (p.t[i].depth != 0 || !keyed_clause_end(&p, i))
			continue;
		if (sql_parse_is(&p, i, "WHERE") && where == 0 && order == 0)
			where = i;
		else if (sql_parse_is(&p, i, "ORDER") &&
		    sql_parse_is(&p, i + 1, "BY") && order == 0)
			order = i;
		else {
			char *word = sql_parse_text(&p, i, i + 1);
			keyed_refuse(k, "has %s", word);
			free(word);
			goto out;
		}
	}
	k->columns = sql_parse_text(&p, 0, from);
	k->from = sql_parse_text(&p, from + 1, end);
	k->from_head = sql_parse_text(&p, from + 1, k->ref_start);
	k->from_tail = sql_parse_text(&p, k->ref_end, end);
	k->target = sql_parse_text(&p, k->ref_start, k->ref_start +
	    (k->schema ? 3 : 1));
	if (where != 0) {
		k->where = sql_parse_text(&p, where + 1, order ? order : p.n);
		keyed_own_where(k, &p, where + 1, order ? order : p.n);
	}
	if (order != 0)
		k->order = sql_parse_text(&p, order + 2, p.n);
out:
	free(p.t);
	k->derived = k->reason == NULL;
	return k->reason ? -1 : 0;
}

void
keyed_free(struct keyed_claim *k)
{
	free(k->reason);
	free(k->why);
	free(k->schema);
	free(k->table);
	free(k->alias);
	free(k->table_ref);
	free(k->columns);
	free(k->from);
	free(k->from_head);
	free(k->from_tail);
	free(k->target);
	free(k->where);
	free(k->own_where);
	free(k->order);
	free(k->pk);
	memset(k, 0, sizeof(*k));
}

/* ---- what the table and the plan say ---- */

/* The claimed table's primary key: one integer column, or a refusal. */
static int
keyed_primary_key(struct db *db, struct keyed_claim *k)
{
	static const char sql[] =
	    "SELECT GROUP_CONCAT(s.COLUMN_NAME), COUNT(*), "
	    "MAX(c.DATA_TYPE IN ('tinyint', 'smallint', 'mediumint', 'int', "
	    "'bigint')) FROM information_schema.STATISTICS s "
	    "JOIN information_schema.COLUMNS c USING (TABLE_SCHEMA, "
	    "TABLE_NAME, COLUMN_NAME) "
	    "WHERE s.TABLE_SCHEMA = COALESCE(?, DATABASE()) "
	    "AND s.TABLE_NAME = ? AND s.INDEX_NAME = 'PRIMARY'";
	struct value v[2] = {
		{ .type = k->schema ? VALUE_TEXT : VALUE_NULL, .s = k->schema,
		  .len = k->schema ? strlen(k->schema) : 0 },
		{ .type = VALUE_TEXT, .s = k->table, .len = strlen(k->table) },
	};
	struct rowset rs = { 0 };
	struct db_stmt *s;
	enum db_status st;
	char **r;

	if ((s = db_prepare(db, sql, &st)) == NULL)
		return keyed_refuse(k, "cannot be checked against its table's "
		    "primary key: %s", db_error(db));
	st = db_stmt_fetch_all(s, v, 2, &rs);
	db_stmt_free(s);
	r = st == DB_OK && rs.nrows == 1 ? rs.rows[0].value : NULL;
	if (r == NULL)
		keyed_refuse(k, "cannot be checked against its table's primary "
		    "key: %s", db_error(db));
	else if (r[1] == NULL || strcmp(r[1], "0") == 0)
		keyed_refuse(k, "is finished in %s, which has no primary key "
		    "(or is a view)", k->table);
	else if (strcmp(r[1], "1") != 0 || r[2] == NULL ||
	    strcmp(r[2], "1") != 0)
		keyed_refuse(k, "is finished in %s, whose primary key is not "
		    "one integer column", k->table);
	else
		k->pk = xstrdup(r[0]);
	rowset_free(&rs, 3);
	return k->reason ? -1 : 0;
}

static const char *
keyed_field(const struct row *r, const int *at, int f)
{
	return at[f] >= 0 && r->value[at[f]] ? r->value[at[f]] : "";
}

/*
 * What one table of the plan makes every claim lock, appended to why:
 * the claimed table sorted, or another table's rows that every claim
 * reads (by constants alone, or all of them).  A table joined by a column
 * of the claimed table, row by row (eq_ref, ref), is left alone: its lock
 * is the row's own, and may be wanted (one row per customer at a time).
 */
static void
keyed_judge(const struct keyed_claim *k, const char *table, const char *type,
    const char *ref, const char *extra, struct buf *why)
{
	bool claimed = strcmp(table, k->alias) == 0;
	const char *sep = why->len ? "; " : "";

	if (claimed && (strstr(extra, "Using filesort") != NULL ||
	    strstr(extra, "Using temporary") != NULL))
		buf_printf(why, "%sit sorts %s (EXPLAIN: %s): every row the "
		    "select matches is read and locked before the first is "
		    "returned, so that one worker holds the whole queue", sep,
		    k->table, extra);
	else if (!claimed && table[0] != '<' && (strcmp(type, "const") == 0 ||
	    strcmp(type, "system") == 0 || ((strcmp(type, "ref") == 0 ||
	    strcmp(type, "eq_ref") == 0) && strspn(ref, "const,") ==
	    strlen(ref))))
		buf_printf(why, "%severy claim reads and locks the same row%s "
		    "of %s (EXPLAIN: type %s, ref %s), so that the workers "
		    "take turns: while one holds it, SKIP LOCKED skips every "
		    "row joined to it", sep, strcmp(type, "ref") == 0 ? "s" : "",
		    table, type, ref);
	else if (!claimed && table[0] != '<' && (strcmp(type, "ALL") == 0 ||
	    strcmp(type, "index") == 0 || strcmp(type, "range") == 0))
		buf_printf(why, "%severy claim reads and locks the rows of %s "
		    "it scans (EXPLAIN: type %s), so that the workers take "
		    "turns", sep, table, type);
}

/*
 * EXPLAIN the select's own claim: what it locks that it does not claim,
 * in k->why; "" when nothing.  Without its locking clause, which is not
 * what chooses the plan: EXPLAIN reads a const table's row, and with the
 * clause it would lock it, or skip it when another worker holds it (and
 * then see no plan at all: "Impossible WHERE").
 */
static int
keyed_explain(struct db *db, struct keyed_claim *k, const char *select,
    int batch)
{
	static const char *const names[] = { "table", "type", "ref", "Extra" };
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 }, why = { 0 };
	int at[4];
	enum db_status st;

	buf_printf(&sql, "%s%s\nLIMIT %d", db_dialect(db)->explain, select,
	    batch);
	st = db_query(db, sql.data, &rs, &cols, &ncols);
	buf_free(&sql);
	if (st != DB_OK) {
		keyed_refuse(k, "cannot be EXPLAINed: %s", db_error(db));
		goto out;
	}
	for (int f = 0; f < 4; f++) {
		at[f] = -1;
		for (size_t c = 0; c < ncols; c++)
			if (strcasecmp(cols[c].name, names[f]) == 0)
				at[f] = (int)c;
	}
	for (size_t r = 0; r < rs.nrows; r++)
		keyed_judge(k, keyed_field(&rs.rows[r], at, 0),
		    keyed_field(&rs.rows[r], at, 1),
		    keyed_field(&rs.rows[r], at, 2),
		    keyed_field(&rs.rows[r], at, 3), &why);
	if (why.len == 0)
		buf_puts(&why, "");
	k->why = buf_steal(&why);
out:
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	return k->reason ? -1 : 0;
}

/*
 * Whether the claim by key applies on this connection: the claimed
 * table's primary key is one integer column, and the select's own claim
 * of batch rows locks rows it does not claim, which k->why then says.
 * Returns 0, or -1 with k->reason.
 */
int
keyed_confirm(struct db *db, struct keyed_claim *k, const char *select,
    int batch)
{
	if (!k->derived)
		return -1;
	free(k->pk);
	free(k->why);
	free(k->reason);
	k->pk = k->why = k->reason = NULL;
	if (keyed_primary_key(db, k) == -1 ||
	    keyed_explain(db, k, select, batch) == -1)
		return -1;
	if (k->why[0] == '\0')
		return keyed_refuse(k, "has a claim that locks only the rows "
		    "it claims", NULL);
	return 0;
}

/* ---- the statements ---- */

/*
 * The keys one list reads: enough for KEYED_LIST_CLAIMS claims of every
 * worker of the queue, KEYED_LIST_MAX at most; the workers' and check's.
 */
int
keyed_list_rows(int claim_rows, int workers)
{
	long long rows = (long long)claim_rows * workers * KEYED_LIST_CLAIMS;

	return rows < KEYED_LIST_MAX ? (int)rows : KEYED_LIST_MAX;
}

void
keyed_list_sql(struct buf *b, const struct keyed_claim *k, int limit)
{
	buf_printf(b, "SELECT `%s`.`%s` FROM %s", k->alias, k->pk, k->from);
	if (k->where != NULL)
		buf_printf(b, "\nWHERE %s", k->where);
	if (k->order != NULL)
		buf_printf(b, "\nORDER BY %s", k->order);
	buf_printf(b, "\nLIMIT %d", limit);
}

/* "IN (1, 2, 3)" for keys[0..n), or IN (?) for messages (keys NULL). */
static void
keyed_in(struct buf *b, const struct keyed_claim *k, const char *const *keys,
    size_t n)
{
	buf_printf(b, "`%s`.`%s` IN (", k->alias, k->pk);
	for (size_t i = 0; i < n || (keys == NULL && i == 0); i++)
		buf_printf(b, "%s%s", i ? ", " : "", keys ? keys[i] : "?");
	buf_putc(b, ')');
}

/*
 * The lock for up to limit rows among keys (each cursor_key_valid; NULL
 * writes `?`, for messages): of one table, the select's columns with its
 * WHERE checked again; of a join, the select with the claimed table a
 * derived table that locks.
 */
void
keyed_lock_sql(struct buf *b, const struct keyed_claim *k,
    const char *const *keys, size_t n, int limit)
{
	if (!k->join) {
		buf_printf(b, "%s FROM %s FORCE INDEX (PRIMARY)\nWHERE ",
		    k->columns, k->table_ref);
		keyed_in(b, k, keys, n);
		if (k->where != NULL)
			buf_printf(b, " AND (%s)", k->where);
		buf_printf(b, "\nORDER BY `%s`.`%s`\nLIMIT %d FOR UPDATE "
		    "SKIP LOCKED", k->alias, k->pk, limit);
		return;
	}
	buf_printf(b, "%s FROM %s%s(SELECT * FROM %s AS `%s` FORCE INDEX "
	    "(PRIMARY) WHERE ", k->columns, k->from_head,
	    k->from_head[0] ? " " : "", k->target, k->alias);
	keyed_in(b, k, keys, n);
	if (k->own_where != NULL)
		buf_printf(b, " AND %s", k->own_where);
	buf_printf(b, " ORDER BY `%s`.`%s` LIMIT %d FOR UPDATE SKIP LOCKED) "
	    "AS `%s`%s%s", k->alias, k->pk, limit, k->alias,
	    k->from_tail[0] ? " " : "", k->from_tail);
	if (k->where != NULL)
		buf_printf(b, "\nWHERE %s", k->where);
	if (k->order != NULL)
		buf_printf(b, "\nORDER BY %s", k->order);
}
