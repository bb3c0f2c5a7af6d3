/*
 * check_shape.c: a queue's select, read for the index it needs.
 *
 * check_plan.c judges a claim's plan from two sources; this is the first:
 * the select itself, read with sql.c's tokenizer as the server reads it,
 * says which index would serve it --- the columns the WHERE fixes
 * (col = constant, col IS NULL), then the ORDER BY columns.  Pure: no
 * database, so the unit tests read selects with it too
 * (check_plan_describe).
 */
#include "rowq.h"
#include "check_shape.h"
#include "claim.h"
#include "dialect.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum plan_tok_kind {
	PT_WORD,		/* keyword or bare identifier */
	PT_IDENT,		/* `quoted identifier`, quotes stripped */
	PT_STRING,		/* 'literal' or "literal" */
	PT_NUMBER,
	PT_PUNCT,		/* one operator or punctuation mark */
};

struct plan_tok {
	enum plan_tok_kind kind;
	const char	*s;
	size_t		 len;
	int		 depth;	/* parentheses around it */
};

/*
 * The select's tokens (sql.c's tokenizer), read as this server reads
 * them: the contents of an executable comment it runs are tokens like the
 * rest.  Quoted names lose their quotes (doubled ones are rare in names);
 * an optimizer hint is dropped.  Returns the number of tokens, 0 when the
 * select cannot be read; *t is the caller's to free.
 */
static size_t
plan_tokens(const char *s, const struct dialect *d, unsigned long version,
    struct plan_tok **out)
{
	static const enum plan_tok_kind kinds[] = {
		[SQL_TOKEN_WORD] = PT_WORD, [SQL_TOKEN_NAME] = PT_IDENT,
		[SQL_TOKEN_STRING] = PT_STRING, [SQL_TOKEN_NUMBER] = PT_NUMBER,
		[SQL_TOKEN_PUNCT] = PT_PUNCT,
	};
	struct sql_token *t = NULL;
	struct plan_tok *p;
	size_t n = 0, np = 0;
	char err[128];

	*out = NULL;
	if (sql_tokenize_server(s, version, d->m_comments, &t, &n, err,
	    sizeof(err)) != 0)
		return 0;
	p = xcalloc(n + 1, sizeof(*p));
	for (size_t i = 0; i < n; i++) {
		const struct sql_token *k = &t[i];
		bool quoted = k->kind == SQL_TOKEN_NAME;
		if (k->kind == SQL_TOKEN_EXEC_COMMENT)
			continue;
		p[np++] = (struct plan_tok){ kinds[k->kind],
		    s + k->start + (quoted ? 1 : 0),
		    quoted && k->len >= 2 ? k->len - 2 : k->len, k->depth };
	}
	free(t);
	*out = p;
	return np;
}

static bool
plan_is(const struct plan_tok *t, const char *word)
{
	return (t->kind == PT_WORD || t->kind == PT_PUNCT) &&
	    strlen(word) == t->len && strncasecmp(t->s, word, t->len) == 0;
}

static bool
plan_is_name(const struct plan_tok *t)
{
	return t->kind == PT_WORD || t->kind == PT_IDENT;
}

static void
plan_copy(char *dst, const struct plan_tok *t)
{
	size_t n = t->len < PLAN_NAME_MAX - 1 ? t->len : PLAN_NAME_MAX - 1;

	memcpy(dst, t->s, n);
	dst[n] = '\0';
}

static bool
plan_tok_eq(const struct plan_tok *t, const char *name)
{
	return strlen(name) == t->len && strncasecmp(t->s, name, t->len) == 0;
}

/* Words that end a table reference: what follows is not an alias. */
static bool
plan_clause_word(const struct plan_tok *t)
{
	static const char *const words[] = { "WHERE", "JOIN", "INNER", "LEFT",
	    "RIGHT", "CROSS", "NATURAL", "STRAIGHT_JOIN", "ORDER", "GROUP",
	    "HAVING", "WINDOW", "FORCE", "USE", "IGNORE", "PARTITION", "LIMIT",
	    "FOR", "UNION", "EXCEPT", "INTERSECT", "ON", "USING", "LOCK",
	    "PROCEDURE", "INTO", NULL };

	if (t->kind != PT_WORD)
		return false;
	for (int i = 0; words[i] != NULL; i++)
		if (plan_is(t, words[i]))
			return true;
	return false;
}

/*
 * A column reference at t: name, table.name or schema.table.name, where
 * the qualifier must be the queue's table.  Returns tokens used, 0 if none.
 */
static size_t
plan_column(const struct plan_shape *sh, const struct plan_tok *t, size_t n,
    char *out)
{
	size_t k = 0;

	if (n == 0 || !plan_is_name(&t[0]) || plan_clause_word(&t[0]))
		return 0;
	while (k + 2 < n && plan_is(&t[k + 1], ".") && plan_is_name(&t[k + 2]))
		k += 2;
	if (k > 0 && !plan_tok_eq(&t[k - 2], sh->alias) &&
	    !plan_tok_eq(&t[k - 2], sh->table))
		return 0;
	plan_copy(out, &t[k]);
	return k + 1;
}

static bool
plan_literal(const struct plan_tok *t, size_t n)
{
	if (n == 1)
		return t[0].kind == PT_STRING || t[0].kind == PT_NUMBER ||
		    plan_is(&t[0], "TRUE") || plan_is(&t[0], "FALSE");
	/* -1, or a charset introducer: _utf8mb4'x' */
	if (n == 2)
		return (plan_is(&t[0], "-") && t[1].kind == PT_NUMBER) ||
		    (t[0].kind == PT_WORD && t[0].s[0] == '_' &&
		    t[1].kind == PT_STRING);
	return false;
}

static void
plan_add_eq(struct plan_shape *sh, const char *col)
{
	for (size_t i = 0; i < sh->neq; i++)
		if (strcasecmp(sh->eq[i], col) == 0)
			return;
	if (sh->neq < PLAN_COLUMNS_MAX)
		snprintf(sh->eq[sh->neq++], PLAN_NAME_MAX, "%s", col);
}

/*
 * One conjunct of the WHERE: col = constant (either side), col <=> constant,
 * col IS NULL, col IN (one constant).  Anything else narrows nothing that
 * an index could seek to, and is left to the filter.
 */
static void
plan_conjunct(struct plan_shape *sh, const struct plan_tok *t, size_t n)
{
	char col[PLAN_NAME_MAX];
	size_t k;

	if ((k = plan_column(sh, t, n, col)) > 0 && k < n) {
		const struct plan_tok *op = &t[k];
		if ((plan_is(op, "=") || plan_is(op, "<=>")) &&
		    plan_literal(t + k + 1, n - k - 1)) {
			plan_add_eq(sh, col);
			return;
		}
		if (plan_is(op, "IS") && n - k == 2 && plan_is(&t[k + 1], "NULL")) {
			plan_add_eq(sh, col);
			return;
		}
		if (plan_is(op, "IN") && n - k >= 4 && plan_is(&t[k + 1], "(") &&
		    plan_is(&t[n - 1], ")") &&
		    plan_literal(t + k + 2, n - k - 3)) {
			plan_add_eq(sh, col);
			return;
		}
	}
	/* constant = col */
	for (k = 1; k + 1 < n; k++) {
		if (plan_is(&t[k], "=") && plan_literal(t, k) &&
		    plan_column(sh, t + k + 1, n - k - 1, col) == n - k - 1) {
			plan_add_eq(sh, col);
			return;
		}
	}
}

/* Find the depth-0 word at or after i; n if none. */
static size_t
plan_find(const struct plan_tok *t, size_t i, size_t n, const char *word)
{
	for (; i < n; i++)
		if (t[i].depth == 0 && plan_is(&t[i], word))
			return i;
	return n;
}

static bool
plan_clause_end(const struct plan_tok *t)
{
	static const char *const words[] = { "GROUP", "HAVING", "ORDER",
	    "WINDOW", "LIMIT", "FOR", "UNION", "EXCEPT", "INTERSECT", "LOCK",
	    NULL };

	if (t->depth != 0)
		return false;
	for (int i = 0; words[i] != NULL; i++)
		if (plan_is(t, words[i]))
			return true;
	return false;
}

/* Read the parts of the select that choose an index (check_shape.h). */
void
plan_shape(const char *select, const struct dialect *d,
    unsigned long version, const struct keyed_claim *keyed,
    struct plan_shape *sh)
{
	struct plan_tok *t;
	size_t n = plan_tokens(select, d, version, &t);
	size_t i, j, start;

	memset(sh, 0, sizeof(*sh));
	if (n == 0 || !plan_is(&t[0], "SELECT"))
		goto out;

	/* FROM [schema.]table [[AS] alias], then a join or not. */
	i = plan_find(t, 0, n, "FROM");
	if (i + 1 < n && plan_is_name(&t[i + 1]) && !plan_clause_word(&t[i + 1])) {
		i++;
		if (i + 2 < n && plan_is(&t[i + 1], ".") && plan_is_name(&t[i + 2])) {
			plan_copy(sh->schema, &t[i]);
			i += 2;
		}
		plan_copy(sh->table, &t[i]);
		snprintf(sh->alias, sizeof(sh->alias), "%s", sh->table);
		i++;
		if (i < n && plan_is(&t[i], "AS"))
			i++;
		if (i < n && plan_is_name(&t[i]) && !plan_clause_word(&t[i]))
			plan_copy(sh->alias, &t[i++]);
		for (; i < n && !(t[i].depth == 0 && (plan_is(&t[i], "WHERE") ||
		    plan_clause_end(&t[i]))); i++)
			if (t[i].depth == 0 && (plan_is(&t[i], ",") ||
			    plan_is(&t[i], "JOIN") ||
			    plan_is(&t[i], "STRAIGHT_JOIN")))
				sh->join = true;
	}
	/* Claimed by key: the table that matters is the one done changes. */
	if (keyed != NULL && sh->table[0] != '\0') {
		snprintf(sh->schema, sizeof(sh->schema), "%s",
		    keyed->schema ? keyed->schema : "");
		snprintf(sh->table, sizeof(sh->table), "%s", keyed->table);
		snprintf(sh->alias, sizeof(sh->alias), "%s", keyed->alias);
	}
	if (sh->table[0] == '\0')
		goto out;

	/* WHERE: its depth-0 conjuncts, unless an OR joins them. */
	i = plan_find(t, 0, n, "WHERE");
	sh->where_known = true;
	if (i < n) {
		sh->has_where = true;
		for (j = i + 1; j < n && !plan_clause_end(&t[j]); j++)
			if (t[j].depth == 0 && (plan_is(&t[j], "OR") ||
			    plan_is(&t[j], "XOR") || plan_is(&t[j], "||")))
				sh->where_known = false;
		if (sh->where_known) {
			bool between = false;
			start = i + 1;
			for (j = i + 1; ; j++) {
				bool end = j >= n || plan_clause_end(&t[j]);
				if (!end && t[j].depth == 0 &&
				    plan_is(&t[j], "BETWEEN"))
					between = true;
				else if (end || (t[j].depth == 0 &&
				    (plan_is(&t[j], "AND") || plan_is(&t[j], "&&")))) {
					if (!end && between) {
						between = false;
						continue;
					}
					plan_conjunct(sh, t + start, j - start);
					start = j + 1;
				}
				if (end)
					break;
			}
		}
	}

	/* ORDER BY: plain columns, each ASC or DESC. */
	i = plan_find(t, 0, n, "ORDER");
	sh->order_known = true;
	if (i + 1 < n && plan_is(&t[i + 1], "BY")) {
		sh->has_order = true;
		for (j = i + 2; j < n && sh->order_known; ) {
			char col[PLAN_NAME_MAX];
			size_t k = plan_column(sh, t + j, n - j, col);
			if (k == 0 || sh->norder == PLAN_COLUMNS_MAX) {
				sh->order_known = false;
				break;
			}
			j += k;
			bool desc = false;
			if (j < n && (plan_is(&t[j], "ASC") || plan_is(&t[j], "DESC")))
				desc = plan_is(&t[j++], "DESC");
			snprintf(sh->order[sh->norder], PLAN_NAME_MAX, "%s", col);
			sh->desc[sh->norder++] = desc;
			if (j >= n || plan_clause_end(&t[j]))
				break;
			if (!plan_is(&t[j], ",")) {
				sh->order_known = false;
				break;
			}
			j++;
		}
	}
out:
	free(t);
}

/*
 * The select as plan_shape reads it, in words: "table email, fixed
 * status, order id"; for `rowq -d check` and the unit tests.
 */
void
check_plan_describe(const char *select, const struct dialect *d,
    unsigned long version, struct buf *b)
{
	struct plan_shape sh;

	plan_shape(select, d, version, NULL, &sh);
	buf_printf(b, "table %s", sh.table[0] ? sh.table : "?");
	if (strcmp(sh.alias, sh.table) != 0)
		buf_printf(b, " as %s", sh.alias);
	if (sh.join)
		buf_puts(b, ", joined");
	buf_puts(b, ", fixed");
	for (size_t i = 0; i < sh.neq; i++)
		buf_printf(b, " %s", sh.eq[i]);
	buf_puts(b, ", order");
	for (size_t i = 0; i < sh.norder; i++)
		buf_printf(b, " %s%s", sh.order[i], sh.desc[i] ? " DESC" : "");
}
