/*
 * config_columns.c: a queue's configuration against the columns its
 * select returns, known once the select is prepared: `rowq check` and
 * every start and reload (check.c), and a worker when it connects
 * (worker_claim.c).  The statements' parameters, key:, age:, the attempts
 * column and the handler's {column} arguments must each name a column or
 * a built-in parameter.
 */
#include "config.h"

#include <string.h>

/* Built-in parameters, available to every statement. */
const char *const config_builtin_params[] = {
	"attempt",	/* this try, from 1 */
	"delay",	/* seconds until the next try */
	"error",	/* the handler's message */
	"output",	/* the handler's standard output */
	"lease",	/* this claim's token: queues with lease: only */
	"lease_int",	/* the same as a positive BIGINT: lease only */
	"duration",	/* the lease's duration in seconds: lease only */
	"reason",	/* why the row failed (reason.c) */
	NULL,
};

/*
 * The next {column} in an argument, from *pos on: 1 with the name, 0 at
 * the end, or -1 with *what set when the braces are malformed.  {{ and }}
 * stand for literal braces.
 */
int
config_placeholder(const char *s, size_t *pos, const char **name,
    size_t *len, const char **what)
{
	size_t i = *pos, j;

	for (; s[i] != '\0'; i++) {
		if ((s[i] == '{' && s[i + 1] == '{') ||
		    (s[i] == '}' && s[i + 1] == '}')) {
			i++;
			continue;
		}
		if (s[i] == '}') {
			*what = "a lone } (write }} for a literal brace)";
			return -1;
		}
		if (s[i] != '{')
			continue;
		for (j = i + 1; s[j] != '\0' && s[j] != '}' && s[j] != '{'; j++)
			;
		if (s[j] != '}') {
			*what = "an unclosed { (write {{ for a literal brace)";
			return -1;
		}
		if (j == i + 1) {
			*what = "an empty {}";
			return -1;
		}
		*name = s + i + 1;
		*len = j - i - 1;
		*pos = j + 1;
		return 1;
	}
	*pos = i;
	return 0;
}

/* ---- checks against the select's columns ---- */

static bool
config_in(const char *name, size_t len, char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strlen(list[i]) == len && strncmp(list[i], name, len) == 0)
			return true;
	return false;
}

static bool
config_builtin(const struct queue *q, const char *name)
{
	size_t i;

	for (i = 0; config_builtin_params[i] != NULL; i++)
		if (strcmp(config_builtin_params[i], name) == 0)
			return (strcmp(name, "lease") != 0 &&
			    strcmp(name, "lease_int") != 0 &&
			    strcmp(name, "duration") != 0) || q->lease.enabled;
	return false;
}

/*
 * The built-ins that carry a try's outcome.  The lease statements run
 * before the handler answers, while another row's handler runs (renew, at
 * a batch above 1) or for rows never handled (release): no answer there
 * is the row's own, they would bind nothing, or another row's.
 */
static bool
config_answer_param(const char *name)
{
	return strcmp(name, "output") == 0 || strcmp(name, "error") == 0 ||
	    strcmp(name, "reason") == 0;
}

static int
config_check_statement(const struct queue *q, const struct sql *s,
    bool answered, char *const *columns, size_t ncolumns, const char *cols,
    const char *builtins)
{
	size_t i, j;
	int problems = 0;

	for (i = 0; i < s->nparams; i++) {
		const char *p = s->params[i];
		for (j = 0; j < i; j++)
			if (strcmp(s->params[j], p) == 0)
				break;
		if (j < i)
			continue;	/* said already */
		bool column = config_in(p, strlen(p), columns, ncolumns);
		if (column && config_builtin(q, p)) {
			/*
			 * The column would be bound in the built-in's place:
			 * with SELECT * on a lease table, every renewal would
			 * look for the lease the row held when claimed.
			 */
			log_error("%s: :%s is both a column of the select and "
			    "a built-in parameter, which the column would "
			    "hide: alias the column in the select (%s AS "
			    "row_%s)", s->where != NULL ? s->where : q->name,
			    p, p, p);
			problems++;
			continue;
		}
		if (!column && !answered && config_answer_param(p)) {
			log_error("%s: :%s is part of a try's outcome, and "
			    "this statement runs when no row has one (a "
			    "lease's claim, renewal or release)",
			    s->where != NULL ? s->where : q->name, p);
			problems++;
			continue;
		}
		if (column || config_builtin(q, p))
			continue;
		log_error("%s: :%s is not a column of the select (columns: %s) "
		    "nor a built-in (%s)", s->where != NULL ? s->where :
		    q->name, p, cols, builtins);
		problems++;
	}
	return problems;
}

static int
config_check_column(const struct queue *q, const char *where,
    const char *name, char *const *columns, size_t ncolumns,
    const char *cols)
{
	if (name == NULL || config_in(name, strlen(name), columns, ncolumns))
		return 0;
	log_error("%s: %s is not a column of the select (columns: %s)",
	    where != NULL ? where : q->name, name, cols);
	return 1;
}

static int
config_check_argv(const struct queue *q, char *const *columns,
    size_t ncolumns, const char *cols)
{
	const char *name, *what;
	size_t i, pos, len;
	int r, problems = 0;
	const char *where = q->argv_where != NULL ? q->argv_where : q->name;

	for (i = 0; q->argv != NULL && q->argv[i] != NULL; i++) {
		pos = 0;
		while ((r = config_placeholder(q->argv[i], &pos, &name, &len,
		    &what)) == 1)
			if (q->handler == HANDLER_PIPE) {
				/* One process serves many rows: no row to fill in. */
				log_error("%s[%zu]: {%.*s}: a pipe handler's "
				    "arguments are fixed for its life; the row "
				    "comes on stdin", where, i, (int)len, name);
				problems++;
			} else if (!config_in(name, len, columns, ncolumns)) {
				log_error("%s[%zu]: {%.*s} is not a column of "
				    "the select (columns: %s)", where, i,
				    (int)len, name, cols);
				problems++;
			}
		if (r == -1) {
			log_error("%s[%zu]: %s", where, i, what);
			problems++;
		}
	}
	return problems;
}

int
config_check_columns(const struct queue *q, char *const *columns,
    size_t ncolumns)
{
	struct buf cols = { 0 }, builtins = { 0 };
	const struct sql *stmts[7];
	size_t i, n = 0, answered;
	int problems = 0;

	for (i = 0; i < ncolumns; i++)
		buf_printf(&cols, "%s%s", i > 0 ? ", " : "", columns[i]);
	if (ncolumns == 0)
		buf_puts(&cols, "none");
	for (i = 0; config_builtin_params[i] != NULL; i++)
		if (config_builtin(q, config_builtin_params[i]))
			buf_printf(&builtins, "%s:%s", i > 0 ? " " : "",
			    config_builtin_params[i]);
	stmts[n++] = &q->done;
	stmts[n++] = &q->failed;
	if (q->retry.enabled) {
		stmts[n++] = &q->retry.update;
		stmts[n++] = &q->retry.gave_up;
	}
	answered = n;	/* the statements above run after an answer */
	if (q->lease.enabled) {
		stmts[n++] = &q->lease.claim;
		stmts[n++] = &q->lease.renew;
		stmts[n++] = &q->lease.release;
	}
	for (i = 0; i < n; i++)
		for (const struct sql *s = stmts[i]; s != NULL; s = s->next)
			problems += config_check_statement(q, s, i < answered,
			    columns, ncolumns, cols.data, builtins.data);
	problems += config_check_column(q, q->key_where, q->key_column,
	    columns, ncolumns, cols.data);
	problems += config_check_column(q, q->age.where, q->age.name,
	    columns, ncolumns, cols.data);
	problems += config_check_column(q, q->ready_at.where, q->ready_at.name,
	    columns, ncolumns, cols.data);
	problems += config_check_column(q, q->traceparent.where,
	    q->traceparent.name, columns, ncolumns, cols.data);
	problems += config_check_column(q, q->group_by.where,
	    q->group_by.name, columns, ncolumns, cols.data);
	problems += config_check_column(q, q->limit.key_where,
	    q->limit.key_column, columns, ncolumns, cols.data);
	if (q->retry.enabled) {
		problems += config_check_column(q, q->retry.attempts_where,
		    q->retry.attempts_column, columns, ncolumns, cols.data);
		problems += config_check_column(q, q->retry.max_attempts_where,
		    q->retry.max_attempts_column, columns, ncolumns,
		    cols.data);
	}
	problems += config_check_argv(q, columns, ncolumns, cols.data);
	buf_free(&cols);
	buf_free(&builtins);
	return problems;
}

/*
 * A column that says how many tries a row has (max_attempts: column NAME)
 * must hold whole numbers: a text or DECIMAL column would be read as 1
 * try for every row.  Returns the problems found; the column's presence
 * is config_check_columns' to check.
 */
int
config_check_column_kinds(const struct queue *q, const struct column *cols,
    size_t ncols)
{
	const char *name = q->retry.max_attempts_column;

	if (!q->retry.enabled || name == NULL)
		return 0;
	for (size_t c = 0; c < ncols; c++)
		if (strcmp(cols[c].name, name) == 0 &&
		    cols[c].kind != COLUMN_INTEGER) {
			log_error("%s: column %s: the server describes it as "
			    "%s, not as an integer: max_attempts needs whole "
			    "numbers (CAST(%s AS UNSIGNED) AS %s in the select "
			    "would do)", q->retry.max_attempts_where, name,
			    cols[c].kind == COLUMN_NUMBER ? "a number" :
			    cols[c].kind == COLUMN_TEXT ? "text" : "bytes",
			    name, name);
			return 1;
		}
	return 0;
}

/*
 * A {column} that begins an argument hands the row's value to the
 * handler's option parser: a recipient "-oProxyCommand=..." is an option,
 * not an address.  Only a "--" before it makes it an operand.  Unsigned
 * integers cannot begin with '-'; every other value can.  A warning, not
 * a refusal: the handler may parse no options at all.
 */
void
config_warn_option_args(const struct queue *q, const struct column *cols,
    size_t ncols)
{
	const char *where = q->argv_where != NULL ? q->argv_where : q->name;

	if (q->handler != HANDLER_EXEC || q->argv == NULL)
		return;
	for (size_t i = 1; q->argv[i] != NULL; i++) {
		const char *a = q->argv[i], *end;

		if (strcmp(a, "--") == 0)
			return;
		if (a[0] != '{' || a[1] == '{' || (end = strchr(a, '}')) == NULL)
			continue;
		size_t len = (size_t)(end - a - 1);
		for (size_t c = 0; c < ncols; c++)
			if (strlen(cols[c].name) == len &&
			    memcmp(cols[c].name, a + 1, len) == 0 &&
			    !(cols[c].kind == COLUMN_INTEGER &&
			    cols[c].is_unsigned))
				log_warnx("%s[%zu]: {%.*s} can begin with '-', "
				    "and the handler would take the value for "
				    "an option: put \"--\" before it (if the "
				    "program accepts one), or text before the "
				    "value in the same argument", where, i,
				    (int)len, a + 1);
	}
}
