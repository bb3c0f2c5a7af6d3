/*
 * sql_update.c: what an UPDATE writes, read from its tokens (sql.c's
 * tokenizer, the one every reader uses), for `rowq check`'s warnings
 * about workflow statements (check_flow.c):
 *
 * - the tables it writes, so that a counter kept in another
 *   table (a batch's pending children) is recognised in each finishing
 *   list that touches it;
 * - whether it counts: an assignment that reads the column it assigns
 *   (pending = pending - 1), where one that does not (finished_at =
 *   NOW()) records a fact that no other list has to balance;
 * - a SET list that reads a column it assigned earlier: MySQL, and
 *   MariaDB unless sql_mode has SIMULTANEOUS_ASSIGNMENT, assign left to
 *   right, so `SET pending = pending - 1, status = IF(pending = 1, ...)`
 *   reads the new pending, not the row's, and is one row early.
 *
 * Pure functions of the text: nothing here talks to a server.
 */
#include "rowq.h"
#include "check_flow.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Words between UPDATE and its first table. */
static const char *const sql_update_modifiers[] = { "LOW_PRIORITY",
    "IGNORE", NULL };

/* The statement taken apart; false when it is not an UPDATE. */
static bool
sql_update_parse(const char *text, struct sql_parse *p)
{
	char err[128];

	p->text = text;
	p->t = NULL;
	p->n = 0;
	if (sql_tokenize(text, &p->t, &p->n, err, sizeof(err)) != 0)
		return false;
	if (!sql_parse_is(p, 0, "UPDATE")) {
		free(p->t);
		p->t = NULL;
		return false;
	}
	return true;
}

/* The index of the top-level SET, or p->n. */
static size_t
sql_update_set(const struct sql_parse *p)
{
	for (size_t i = 1; i < p->n; i++)
		if (p->t[i].depth == 0 && sql_parse_is(p, i, "SET"))
			return i;
	return p->n;
}

/* A word that ends the SET list. */
static bool
sql_update_set_end(const struct sql_parse *p, size_t i)
{
	return p->t[i].depth == 0 && (sql_parse_is(p, i, "WHERE") ||
	    sql_parse_is(p, i, "ORDER") || sql_parse_is(p, i, "LIMIT") ||
	    sql_parse_is(p, i, ";"));
}

/*
 * The name token at i, or of a qualified name that starts at i (db.t,
 * t.col): its last part.  *next is the token after the name.
 */
static size_t
sql_update_name(const struct sql_parse *p, size_t i, size_t *next)
{
	while (i + 2 < p->n && sql_parse_is(p, i + 1, ".") &&
	    sql_parse_is_name(p, i + 2))
		i += 2;
	*next = i + 1;
	return i;
}

static void
sql_update_add(char ***names, size_t *n, char *name)
{
	assert(name != NULL);	/* sql_parse_unquote never returns NULL */
	for (size_t k = 0; k < *n; k++)
		if (strcasecmp((*names)[k], name) == 0) {
			free(name);
			return;
		}
	*names = xrealloc(*names, (*n + 1) * sizeof(**names));
	(*names)[(*n)++] = name;
}

/* A table the UPDATE names, and the alias it goes by (or NULL). */
struct sql_update_ref {
	char	*table;
	char	*alias;
};

/*
 * The table references between UPDATE and SET: each table and its
 * alias.  Returns how many, with *refs (the caller frees each field).
 */
static size_t
sql_update_refs(const struct sql_parse *p, size_t set,
    struct sql_update_ref **refs)
{
	size_t i = 1, next, n = 0;
	bool expect = true;	/* a table reference may start here */

	*refs = NULL;
	for (size_t k = 0; sql_update_modifiers[k] != NULL; k++)
		if (sql_parse_is(p, i, sql_update_modifiers[k]))
			i++;
	while (i < set) {
		if (p->t[i].depth > 0) {
			i++;
			continue;
		}
		if (expect && sql_parse_is_name(p, i) &&
		    !sql_parse_clause_word(p, i)) {
			size_t at = sql_update_name(p, i, &next);
			*refs = xrealloc(*refs, (n + 1) * sizeof(**refs));
			(*refs)[n].table = sql_parse_unquote(p, at);
			(*refs)[n].alias = NULL;
			i = next;
			if (sql_parse_is(p, i, "AS"))
				i++;
			if (sql_parse_is_name(p, i) &&
			    !sql_parse_clause_word(p, i))
				(*refs)[n].alias = sql_parse_unquote(p, i++);
			n++;
			expect = false;
			continue;
		}
		if (sql_parse_is(p, i, ",") || sql_parse_is(p, i, "JOIN") ||
		    sql_parse_is(p, i, "STRAIGHT_JOIN"))
			expect = true;
		else if (sql_parse_is(p, i, "ON") ||
		    sql_parse_is(p, i, "USING") || sql_parse_is(p, i, "("))
			expect = false;	/* a condition, or a derived table */
		i++;
	}
	return n;
}

/* The table a SET target's qualifier names (a table or an alias). */
static const char *
sql_update_qualified(const struct sql_update_ref *refs, size_t n,
    const char *qualifier)
{
	for (size_t k = 0; k < n; k++)
		if ((refs[k].alias != NULL &&
		    strcasecmp(refs[k].alias, qualifier) == 0) ||
		    (refs[k].alias == NULL &&
		    strcasecmp(refs[k].table, qualifier) == 0))
			return refs[k].table;
	return NULL;
}

int
sql_update_tables(const char *text, char ***tables, size_t *ntables)
{
	struct sql_parse p;
	struct sql_update_ref *refs;
	size_t set, nrefs, i, next;
	bool all = false;

	*tables = NULL;
	*ntables = 0;
	if (!sql_update_parse(text, &p))
		return 0;
	set = sql_update_set(&p);
	nrefs = sql_update_refs(&p, set, &refs);
	/*
	 * The tables written: of one table, that one; of several, those
	 * that a SET target's qualifier names, and all of them when a
	 * target has none (the server knows which, this reader does not).
	 */
	for (i = set + 1; nrefs > 1 && i < p.n && !sql_update_set_end(&p, i);
	    i++) {
		if (p.t[i].depth != 0 || !(i == set + 1 ||
		    sql_parse_is(&p, i - 1, ",")) || !sql_parse_is_name(&p, i))
			continue;
		sql_update_name(&p, i, &next);
		if (next == i + 1) {
			all = true;
			continue;
		}
		char *q = sql_parse_unquote(&p, next - 3);
		const char *t = sql_update_qualified(refs, nrefs, q);
		free(q);
		if (t != NULL)
			sql_update_add(tables, ntables, xstrdup(t));
		else
			all = true;
	}
	for (size_t k = 0; k < nrefs; k++) {
		if (nrefs == 1 || all)
			sql_update_add(tables, ntables, refs[k].table);
		else
			free(refs[k].table);
		free(refs[k].alias);
	}
	free(refs);
	free(p.t);
	return 1;
}

void
sql_update_tables_free(char **tables, size_t n)
{
	for (size_t k = 0; k < n; k++)
		free(tables[k]);
	free(tables);
}

/* A name right after a colon is a statement parameter (:attempt). */
static bool
sql_update_is_param(const struct sql_parse *p, size_t i)
{
	return i > 0 && sql_parse_is(p, i - 1, ":") &&
	    p->t[i - 1].start + p->t[i - 1].len == p->t[i].start;
}

/*
 * Whether the expression [from, to) reads the column name: a name token
 * (or the last part of a qualified one) that is not a function's name
 * or a parameter of the statement's.
 */
static bool
sql_update_reads(const struct sql_parse *p, size_t from, size_t to,
    const char *name)
{
	size_t next;

	for (size_t i = from; i < to; i = next) {
		if (!sql_parse_is_name(p, i) || sql_update_is_param(p, i)) {
			next = i + 1;
			continue;
		}
		size_t at = sql_update_name(p, i, &next);
		if (sql_parse_is(p, next, "("))
			continue;
		char *s = sql_parse_unquote(p, at);
		bool same = strcasecmp(s, name) == 0;
		free(s);
		if (same)
			return true;
	}
	return false;
}

/* An assignment of a SET list: its first token, column, expression. */
struct sql_update_assign {
	size_t	start, col, from, to;	/* the expression is [from, to) */
};

/* The SET list's assignments: how many, with *a (the caller frees it). */
static size_t
sql_update_assignments(const struct sql_parse *p,
    struct sql_update_assign **a)
{
	size_t set = sql_update_set(p), i, end, cap = 0, n = 0;

	*a = NULL;
	for (i = set + 1; i < p->n && !sql_update_set_end(p, i); i = end + 1) {
		size_t eq = i, next;
		for (end = i; end < p->n && !sql_update_set_end(p, end) &&
		    !(p->t[end].depth == 0 && sql_parse_is(p, end, ","));
		    end++)
			;
		while (eq < end && !(p->t[eq].depth == 0 &&
		    sql_parse_is(p, eq, "=")))
			eq++;
		if (eq == end || !sql_parse_is_name(p, i))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			*a = xrealloc(*a, cap * sizeof(**a));
		}
		(*a)[n].start = i;
		(*a)[n].col = sql_update_name(p, i, &next);
		(*a)[n].from = eq + 1;
		(*a)[n].to = end;
		n++;
		if (end >= p->n || sql_update_set_end(p, end))
			break;
	}
	return n;
}

int
sql_update_reread(const char *text, struct buf *column,
    struct buf *assignment)
{
	struct sql_parse p;
	struct sql_update_assign *a;
	size_t n;
	int found = 0;

	if (!sql_update_parse(text, &p))
		return 0;
	n = sql_update_assignments(&p, &a);
	for (size_t k = 1; k < n && !found; k++)
		for (size_t j = 0; j < k && !found; j++) {
			char *name = sql_parse_unquote(&p, a[j].col);
			if (sql_update_reads(&p, a[k].from, a[k].to, name)) {
				found = 1;
				buf_reset(column);
				buf_puts(column, name);
				buf_reset(assignment);
				sql_tokens_text(assignment, text, p.t,
				    a[k].start, a[k].to);
			}
			free(name);
		}
	free(a);
	free(p.t);
	return found;
}

int
sql_update_counts(const char *text)
{
	struct sql_parse p;
	struct sql_update_assign *a;
	size_t n;
	int found = 0;

	if (!sql_update_parse(text, &p))
		return 0;
	n = sql_update_assignments(&p, &a);
	for (size_t k = 0; k < n && !found; k++) {
		char *name = sql_parse_unquote(&p, a[k].col);
		found = sql_update_reads(&p, a[k].from, a[k].to, name);
		free(name);
	}
	free(a);
	free(p.t);
	return found;
}

char *
sql_select_table(const char *select)
{
	struct sql_parse p;
	char err[128], *table = NULL;
	size_t next;

	p.text = select;
	if (sql_tokenize(select, &p.t, &p.n, err, sizeof(err)) != 0)
		return NULL;
	for (size_t i = 0; i + 1 < p.n; i++)
		if (p.t[i].depth == 0 && sql_parse_is(&p, i, "FROM") &&
		    sql_parse_is_name(&p, i + 1) &&
		    !sql_parse_clause_word(&p, i + 1)) {
			table = sql_parse_unquote(&p,
			    sql_update_name(&p, i + 1, &next));
			break;
		}
	free(p.t);
	return table;
}
