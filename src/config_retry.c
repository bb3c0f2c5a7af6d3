/*
 * config_retry.c: a queue's retry: (what to do after a failed try): its
 * backoff, its statement, the tries each row has (max_attempts, a number
 * or a column of the select, bounded by max_attempts_ceiling) and
 * gave_up:, the query that says whether retry.update gave the row up.
 */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void
config_field_backoff(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	static const char *const names[] = {
		[BACKOFF_FIXED] = "fixed",
		[BACKOFF_LINEAR] = "linear",
		[BACKOFF_EXPONENTIAL] = "exponential",
	};
	const char *s = config_scalar(ld, it, "fixed, linear or exponential");
	char shown[CONFIG_SHOW_MAX + 8];
	size_t i;

	(void)f;
	if (s == NULL)
		return;
	for (i = 0; i < NELEMS(names); i++)
		if (strcmp(s, names[i]) == 0) {
			*(enum backoff_kind *)dst = (enum backoff_kind)i;
			return;
		}
	config_error(ld, it->value->line, it->path,
	    "expected fixed, linear or exponential, not %s",
	    config_show(s, shown, sizeof(shown)));
}

/*
 * retry.gave_up: a SELECT with :name parameters, run after retry.update
 * in the row's transaction; its first column of its first row says
 * whether the update gave the row up (worker_finish.c).
 */
static void
config_field_query(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a SELECT statement");
	struct sql *q = dst;
	struct sql_token *t = NULL;
	size_t n = 0;
	char err[CONFIG_MSG_MAX];

	(void)f;
	if (s == NULL)
		return;
	q->where = config_where(ld, it->key->line, it->path);
	if (sql_tokenize(s, &t, &n, err, sizeof(err)) == -1 ||
	    sql_compile(q, s, err, sizeof(err)) == -1)
		config_error(ld, it->value->line, it->path, "%s", err);
	else if (n == 0 || !sql_token_is(s, &t[0], "SELECT"))
		config_error(ld, it->value->line, it->path, "expected a "
		    "SELECT whose first column says whether the row was given "
		    "up, as SELECT status = 'failed' FROM job WHERE id = :id");
	free(t);
}


/* A bare name (a letter or '_', then letters, digits, '_' or '$'). */
static bool
config_is_column_name(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (; *s != '\0'; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '$'))
			return false;
	return true;
}

/*
 * max_attempts: a whole number, the same for every row, or a column's
 * name (bare, or as "column NAME"):
 * each row's own, read from that column of the select (an expression is
 * one too: COALESCE(max_tries, 5) AS max_tries), and bounded by
 * max_attempts_ceiling, so that no row's value retries it for ever.  The
 * column is checked against the select once connected
 * (config_columns.c).
 */
static void
config_field_max_attempts(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	struct retry_policy *r = dst;
	const char *s = config_scalar(ld, it, "a whole number or "
	    "\"column NAME\"");
	char shown[CONFIG_SHOW_MAX + 8];
	size_t n;

	if (s == NULL)
		return;
	if (strncmp(s, "column", 6) == 0 && (s[6] == ' ' || s[6] == '\0')) {
		for (s += 6; *s == ' '; s++)
			;
	} else if (!config_is_column_name(s)) {
		config_field_int(ld, it, &r->max_attempts, f);
		return;
	}
	for (n = strlen(s); n > 0 && s[n - 1] == ' '; n--)
		;
	if (n == 0 || memchr(s, ' ', n) != NULL) {
		config_error(ld, it->value->line, it->path, "expected "
		    "\"column NAME\", one column of the select, not %s",
		    config_show(it->value->value, shown, sizeof(shown)));
		return;
	}
	r->max_attempts_column = xstrndup(s, n);
	r->max_attempts_where = config_where(ld, it->key->line, it->path);
}

static const struct config_field retry_fields[] = {
	{ "max_attempts", config_field_max_attempts, 0, 1, INT_MAX, false },
	FIELD(struct retry_policy, "max_attempts_ceiling", int,
	    max_attempts_ceiling, 1, RETRY_CEILING_MAX),
	FIELD(struct retry_policy, "gave_up", query, gave_up, 0, 0),
	FIELD(struct retry_policy, "attempts_column", string, attempts_column,
	    0, 0),
	FIELD(struct retry_policy, "backoff", backoff, backoff, 0, 0),
	FIELD(struct retry_policy, "delay", duration, delay_ms, 0, 0),
	FIELD(struct retry_policy, "max_delay", duration, max_delay_ms, 0, 0),
	FIELD(struct retry_policy, "jitter", bool, jitter, 0, 0),
	FIELD(struct retry_policy, "update", statements, update, 0, 0),
};

/*
 * max_attempts stays 0 here when absent: the queue's checks, which know
 * whether there is a failed: statement and an attempts_column, turn that
 * into the default or into "unlimited".  Without attempts_column no try
 * is counted: every try is try 1, retried without a limit (a job table
 * that keeps no count, as Drupal's queue).
 */
void
config_field_retry(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	static const char *const required[] = { "update", NULL };
	const struct node *seen[NELEMS(retry_fields)] = { 0 };
	struct retry_policy *r = dst;
	const struct node *k;
	char path[CONFIG_PATH_MAX], d[32], md[32];

	(void)f;
	if (config_walk(ld, it, retry_fields, NELEMS(retry_fields), r,
	    seen) == -1)
		return;
	r->enabled = true;
	config_require(ld, it, retry_fields, NELEMS(retry_fields), seen,
	    required);
	if ((k = SEEN(retry_fields, seen, "attempts_column")) != NULL) {
		config_path(path, sizeof(path), it->path, "attempts_column");
		r->attempts_where = config_where(ld, k->line, path);
	}
	if ((k = SEEN(retry_fields, seen, "max_attempts")) != NULL &&
	    config_lookup(it->parent, "failed") == NULL) {
		config_path(path, sizeof(path), it->path, "max_attempts");
		config_error(ld, k->line, path, "max_attempts needs a failed "
		    "statement to run after the last attempt");
	} else if (k != NULL &&
	    SEEN(retry_fields, seen, "attempts_column") == NULL) {
		config_path(path, sizeof(path), it->path, "max_attempts");
		config_error(ld, k->line, path, "max_attempts counts tries in "
		    "retry.attempts_column: name one, or leave max_attempts "
		    "out to retry without a limit");
	}
	if ((k = SEEN(retry_fields, seen, "max_attempts_ceiling")) != NULL &&
	    r->max_attempts_column == NULL) {
		config_path(path, sizeof(path), it->path,
		    "max_attempts_ceiling");
		config_error(ld, k->line, path, "max_attempts_ceiling bounds "
		    "each row's own max_attempts: it goes with max_attempts: "
		    "column NAME");
	}
	r->where = config_where(ld, it->key->line, it->path);
	/* A long delay: alone is no mistake; max_delay follows it up. */
	if (SEEN(retry_fields, seen, "max_delay") == NULL) {
		if (r->max_delay_ms < r->delay_ms)
			r->max_delay_ms = r->delay_ms;
	} else if (r->max_delay_ms < r->delay_ms) {
		k = SEEN(retry_fields, seen, "max_delay");
		config_path(path, sizeof(path), it->path, "max_delay");
		duration_format(r->delay_ms, d, sizeof(d));
		duration_format(r->max_delay_ms, md, sizeof(md));
		config_error(ld, k->line, path, "%s is shorter than delay (%s)",
		    md, d);
	}
}

