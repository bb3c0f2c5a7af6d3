/*
 * db_bulk.c: one statement run for many rows in one round trip (array
 * binding, COM_STMT_BULK_EXECUTE), for a batch's `done`.
 */
#include "rowq.h"
#include "db.h"
#include "db_private.h"

#include <mysqld_error.h>
#include <stdlib.h>
#include <string.h>

/*
 * The type one parameter has in every row of a bulk execute, NULLs aside,
 * or false when rows disagree (a column that is an integer in one row and
 * text in another): such a batch runs row by row.
 */
static bool
db_bulk_column_type(const struct value *v, size_t nrows, size_t nparams,
    size_t col, struct value *type)
{
	bool seen = false;

	memset(type, 0, sizeof(*type));
	type->type = VALUE_NULL;
	for (size_t r = 0; r < nrows; r++) {
		const struct value *x = &v[r * nparams + col];
		if (x->type == VALUE_NULL)
			continue;
		if (x->type == VALUE_SQL)
			return false;	/* text only */
		if (seen && (x->type != type->type ||
		    x->is_unsigned != type->is_unsigned))
			return false;
		seen = true;
		type->type = x->type;
		type->is_unsigned = x->is_unsigned;
	}
	return true;
}

bool
db_stmt_bulk_possible(const struct db_stmt *s, const struct value *v,
    size_t nrows)
{
	struct value type;

	if (!s->db->bulk || s->no_bulk || s->ncols > 0 ||
	    s->nparams == 0)
		return false;
	for (size_t c = 0; c < s->nparams; c++)
		if (!db_bulk_column_type(v, nrows, s->nparams, c, &type))
			return false;
	return true;
}

/* One parameter's column of values, laid out as array binding wants it. */
struct db_bulk_column {
	long long	*ints;
	const char	**ptrs;
	unsigned long	*lens;
	char		*nulls;
};

static void
db_bulk_bind(MYSQL_BIND *b, struct db_bulk_column *c, const struct value *v,
    size_t nrows, size_t nparams, size_t col)
{
	struct value type;

	(void)db_bulk_column_type(v, nrows, nparams, col, &type);
	c->ints = xcalloc(nrows, sizeof(*c->ints));
	c->ptrs = xcalloc(nrows, sizeof(*c->ptrs));
	c->lens = xcalloc(nrows, sizeof(*c->lens));
	c->nulls = xcalloc(nrows, sizeof(*c->nulls));
	for (size_t r = 0; r < nrows; r++) {
		const struct value *x = &v[r * nparams + col];
		c->nulls[r] = x->type == VALUE_NULL ? STMT_INDICATOR_NULL :
		    STMT_INDICATOR_NONE;
		c->ints[r] = x->i;
		c->ptrs[r] = x->s ? x->s : "";
		c->lens[r] = (unsigned long)x->len;
	}
	memset(b, 0, sizeof(*b));
	b->u.indicator = c->nulls;
	switch (type.type) {
	case VALUE_INT:
		b->buffer_type = MYSQL_TYPE_LONGLONG;
		b->buffer = c->ints;
		b->is_unsigned = type.is_unsigned;
		break;
	case VALUE_NULL:
	case VALUE_TEXT:
	case VALUE_BLOB:
	case VALUE_SQL:	/* never: db_bulk_column_type refuses it */
		/* Variable length: an array of pointers and one of lengths. */
		b->buffer_type = type.type == VALUE_BLOB ? MYSQL_TYPE_BLOB :
		    MYSQL_TYPE_STRING;
		b->buffer = (void *)c->ptrs;
		b->length = c->lens;
		break;
	}
}

static void
db_bulk_free(struct db_bulk_column *cols, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(cols[i].ints);
		free(cols[i].ptrs);
		free(cols[i].lens);
		free(cols[i].nulls);
	}
	free(cols);
}

/*
 * Execute a statement for nrows rows of values (row after row, nparams
 * each) in one round trip: array binding, sent as COM_STMT_BULK_EXECUTE.
 * Check db_stmt_bulk_possible first.  *affected is the total over all
 * rows.  On an error, the rows before the failing one have run and the
 * rest have not, and which one failed is not told: the caller rolls back
 * to a savepoint taken before.
 */
enum db_status
db_stmt_exec_bulk(struct db_stmt *s, const struct value *v, size_t nrows,
    unsigned long long *affected)
{
	struct db_bulk_column *cols = xcalloc(s->nparams, sizeof(*cols));
	unsigned int size = (unsigned int)nrows, none = 0;
	enum db_status st = DB_OK;

	*affected = 0;
	memset(s->params, 0, s->nparams * sizeof(*s->params));
	for (size_t c = 0; c < s->nparams; c++)
		db_bulk_bind(&s->params[c], &cols[c], v, nrows, s->nparams, c);
	if (mysql_stmt_attr_set(s->stmt, STMT_ATTR_ARRAY_SIZE, &size) != 0 ||
	    mysql_stmt_bind_param(s->stmt, s->params) != 0 ||
	    mysql_stmt_execute(s->stmt) != 0) {
		st = db_fail_stmt(s);
		/* CALL, for one: it runs row by row from now on. */
		if (s->db->errnum == ER_UNSUPPORTED_PS)
			s->no_bulk = true;
	} else
		*affected = (unsigned long long)mysql_stmt_affected_rows(s->stmt);
	/* Back to one row per execute for the statement's other uses. */
	(void)mysql_stmt_attr_set(s->stmt, STMT_ATTR_ARRAY_SIZE, &none);
	db_bulk_free(cols, s->nparams);
	return st;
}
