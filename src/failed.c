/*
 * failed.c: the rows that failed for good.  `rowq failed QUEUE` lists
 * them through the queue's failed_select: the newest --limit of them,
 * newest last, and how many there are in all; `rowq check` makes sure
 * failed_select and requeue fit the queue's key (requeue.c runs requeue).
 * Every read here is a plain one, which locks nothing.
 */
#include "rowq.h"
#include "db.h"
#include "claim.h"
#include "commands.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FAILED_LIMIT_DEFAULT	50
#define FAILED_LIMIT_MAX	10000
#define FAILED_SHOW_MAX		60	/* bytes of a value in the table */

/* ---- shared with requeue.c ---- */

/*
 * The configuration, the queue and a connection for `rowq failed` and
 * `rowq requeue`; returns an exit status, and on ROWQ_EXIT_OK fills what.
 * need_select and need (requeue or discard, or NULL) name the keys the
 * command needs: a queue without one is a usage error (2), like a queue
 * that does not exist.
 */
int
failed_open(const char *path, const char *name, const char *cmd,
    bool need_select, const struct failed_action *need,
    struct failed_ctx *what)
{
	enum db_status st;
	bool no_action;

	memset(what, 0, sizeof(*what));
	if ((what->cfg = config_load(path)) == NULL)
		return ROWQ_EXIT_CONFIG;
	if ((what->q = config_queue(what->cfg, name)) == NULL) {
		log_error("%s: no queue named %s", path, name);
		failed_close(what);
		return ROWQ_EXIT_USAGE;
	}
	no_action = need != NULL &&
	    failed_action_sql(what->q, need)->text == NULL;
	if ((need_select && what->q->failed_select.text == NULL) ||
	    no_action) {
		log_error("%s: queues.%s has no %s: key, which %s needs",
		    path, name, no_action ? need->name : "failed_select", cmd);
		failed_close(what);
		return ROWQ_EXIT_USAGE;
	}
	what->db = db_open(&what->cfg->db, &st);
	if (st != DB_OK) {
		log_error("%s: database: cannot connect: %s", path,
		    db_error(what->db));
		failed_close(what);
		return st == DB_CONFIG ? ROWQ_EXIT_CONFIG : ROWQ_EXIT_FAILURE;
	}
	return ROWQ_EXIT_OK;
}

void
failed_close(struct failed_ctx *what)
{
	if (what->db != NULL) {
		(void)db_rollback(what->db);
		db_close(what->db);
	}
	config_free(what->cfg);
	memset(what, 0, sizeof(*what));
}

/* A statement the server refuses is the configuration's fault: 78. */
struct db_stmt *
failed_prepare(struct db *db, const char *sql, const char *where, int *rc)
{
	enum db_status st;
	struct db_stmt *s = db_prepare(db, sql, &st);

	if (s == NULL) {
		log_error("%s: %s", where, db_error(db));
		*rc = st == DB_FATAL || st == DB_CONFIG ? ROWQ_EXIT_CONFIG :
		    ROWQ_EXIT_FAILURE;
	}
	return s;
}

/* An identifier quoted for MariaDB: `name`, a ` inside doubled. */
void
failed_quote(struct buf *b, const char *name)
{
	buf_putc(b, '`');
	for (const char *p = name; *p != '\0'; p++) {
		if (*p == '`')
			buf_putc(b, '`');
		buf_putc(b, *p);
	}
	buf_putc(b, '`');
}

/*
 * The queue's key column: key:, or else the select's first column, as the
 * server names it.  NULL after an error (logged); the caller frees it.
 */
char *
failed_key_column(struct db *db, const struct queue *q)
{
	const struct column *cols;
	struct db_stmt *s;
	size_t ncols;
	char *name = NULL;
	int rc;

	if (q->key_column != NULL)
		return xstrdup(q->key_column);
	if ((s = failed_prepare(db, q->select.positional, q->select.where,
	    &rc)) == NULL)
		return NULL;
	cols = db_stmt_columns(s, &ncols);
	if (ncols > 0)
		name = xstrdup(cols[0].name);
	db_stmt_free(s);
	return name;
}

/* ---- rowq check ---- */

static bool
failed_has_column(const struct column *cols, size_t n, const char *name)
{
	/* As the server compares column names: whatever their case. */
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(cols[i].name, name) == 0)
			return true;
	return false;
}

/*
 * requeue: and discard: take the queue's key, and any column of
 * failed_select's row of that key (cols, ncols); cancel: the key alone
 * (its row is running, not in the failed set).  Returns the problems
 * logged.
 */
static int
failed_check_action(struct db *db, const struct sql *sql, const char *name,
    const char *key, const struct column *cols, size_t ncols)
{
	struct db_stmt *s;
	int problems = 0, rc;

	if (sql->text == NULL)
		return 0;
	if ((s = failed_prepare(db, sql->positional, sql->where, &rc)) == NULL)
		return 1;
	db_stmt_free(s);
	if (sql->nparams == 0) {
		log_error("%s: takes no parameter: give it the queue's key, :%s, "
		    "to %s one row", sql->where, key, name);
		problems++;
	}
	for (size_t i = 0; i < sql->nparams; i++) {
		if (strcasecmp(sql->params[i], key) == 0 ||
		    failed_has_column(cols, ncols, sql->params[i]))
			continue;
		if (cols != NULL)
			log_error("%s: :%s: %s takes the queue's key, :%s, and "
			    "the columns of failed_select's row, and this is "
			    "neither", sql->where, sql->params[i], name, key);
		else
			log_error("%s: :%s: %s takes the queue's key, :%s, "
			    "and no other parameter", sql->where,
			    sql->params[i], name, key);
		problems++;
	}
	return problems;
}

/*
 * failed_select must return the queue's key (requeue --all reads it from
 * there), and requeue, discard and cancel must take that key and nothing
 * else.
 * Logs each problem; returns how many.
 */
int
failed_check(struct db *db, const struct queue *q, const char *key)
{
	const struct column *cols = NULL;
	struct db_stmt *s = NULL;
	size_t ncols = 0;
	int problems = 0, rc;

	if (q->failed_select.text != NULL) {
		s = failed_prepare(db, q->failed_select.positional,
		    q->failed_select.where, &rc);
		if (s == NULL)
			problems++;
		else {
			cols = db_stmt_columns(s, &ncols);
			if (!failed_has_column(cols, ncols, key)) {
				log_error("%s: returns no column %s, the "
				    "queue's key, which requeue --all needs",
				    q->failed_select.where, key);
				problems++;
			}
		}
	}
	for (const struct sql *a = &q->requeue; a != NULL; a = a->next)
		problems += failed_check_action(db, a, "requeue", key, cols,
		    ncols);
	for (const struct sql *a = &q->discard; a != NULL; a = a->next)
		problems += failed_check_action(db, a, "discard", key, cols,
		    ncols);
	for (const struct sql *a = &q->cancel; a != NULL; a = a->next)
		problems += failed_check_action(db, a, "cancel", key, NULL,
		    0);
	db_stmt_free(s);
	return problems;
}

/* ---- rowq failed ---- */

/*
 * A value as the table shows it: on one line, at most FAILED_SHOW_MAX
 * bytes (cut between characters, "..." after), "-" for NULL.
 */
static void
failed_cell(struct buf *b, const struct column *col, const char *v, size_t n)
{
	size_t i, cut = n;

	buf_reset(b);
	if (v == NULL) {
		buf_puts(b, "-");
		return;
	}
	if (col->kind == COLUMN_BINARY) {
		buf_printf(b, "(%zu bytes)", n);
		return;
	}
	if (n > FAILED_SHOW_MAX) {
		cut = FAILED_SHOW_MAX;
		while (cut > 0 && ((unsigned char)v[cut] & 0xc0) == 0x80)
			cut--;
	}
	for (i = 0; i < cut; i++)
		buf_putc(b, (unsigned char)v[i] < ' ' ? ' ' : v[i]);
	if (cut < n)
		buf_puts(b, "...");
	utf8_sanitize(b);
}

/* Display width of a cell: UTF-8 characters, not bytes. */
static size_t
failed_width(const char *s)
{
	size_t w = 0;

	for (; *s != '\0'; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void
failed_table(const struct column *cols, size_t ncols, const struct rowset *rs,
    long long total)
{
	size_t *width = xcalloc(ncols, sizeof(*width));
	struct buf cell = { 0 };

	for (size_t c = 0; c < ncols; c++) {
		width[c] = failed_width(cols[c].name);
		for (size_t r = 0; r < rs->nrows; r++) {
			failed_cell(&cell, &cols[c], rs->rows[r].value[c],
			    rs->rows[r].len[c]);
			if (failed_width(cell.data) > width[c])
				width[c] = failed_width(cell.data);
		}
	}
	for (size_t c = 0; c < ncols; c++)
		printf("%s%-*s", c ? "  " : "", c + 1 < ncols ? (int)width[c] :
		    0, cols[c].name);
	putchar('\n');
	/* The select gives the newest first; the newest is shown last. */
	for (size_t r = rs->nrows; r-- > 0;) {
		for (size_t c = 0; c < ncols; c++) {
			failed_cell(&cell, &cols[c], rs->rows[r].value[c],
			    rs->rows[r].len[c]);
			printf("%s%s", c ? "  " : "", cell.data);
			if (c + 1 < ncols)
				for (size_t w = failed_width(cell.data);
				    w < width[c]; w++)
					putchar(' ');
		}
		putchar('\n');
	}
	printf("\n%zu shown of %lld failed row%s\n", rs->nrows, total,
	    total == 1 ? "" : "s");
	buf_free(&cell);
	free(width);
}

static void
failed_json(const char *queue, const struct column *cols, size_t ncols,
    const struct rowset *rs, long long total)
{
	struct buf b = { 0 };

	buf_puts(&b, "{\"queue\":");
	json_string(&b, queue, strlen(queue));
	buf_printf(&b, ",\"total\":%lld,\"rows\":[", total);
	for (size_t r = rs->nrows; r-- > 0;) {
		json_row(&b, cols, ncols, &rs->rows[r]);
		if (r > 0)
			buf_putc(&b, ',');
	}
	buf_puts(&b, "]}\n");
	fputs(b.data, stdout);
	buf_free(&b);
}

/* How many rows failed_select returns in all, counted by the server. */
static int
failed_total(struct db *db, const struct queue *q, long long *total)
{
	struct rowset rs = { 0 };
	struct buf sql = { 0 };
	struct db_stmt *s;
	int rc = ROWQ_EXIT_OK;

	buf_printf(&sql, "SELECT COUNT(*) FROM (\n%s\n) AS rowq_failed",
	    q->failed_select.positional);
	s = failed_prepare(db, sql.data, q->failed_select.where, &rc);
	if (s != NULL && db_stmt_fetch_all(s, NULL, 0, &rs) != DB_OK) {
		log_error("%s: %s", q->failed_select.where, db_error(db));
		rc = ROWQ_EXIT_FAILURE;
	}
	if (rc == ROWQ_EXIT_OK)
		*total = rs.nrows > 0 && rs.rows[0].value[0] != NULL ?
		    atoll(rs.rows[0].value[0]) : 0;
	rowset_free(&rs, 1);
	db_stmt_free(s);
	buf_free(&sql);
	return rc;
}

static int
failed_list(const struct failed_ctx *what, long limit, bool json)
{
	const struct queue *q = what->q;
	struct rowset rs = { 0 };
	const struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };
	struct db_stmt *s;
	long long total = 0;
	int rc = ROWQ_EXIT_OK;

	buf_printf(&sql, "%s\nLIMIT %ld", q->failed_select.positional, limit);
	s = failed_prepare(what->db, sql.data, q->failed_select.where, &rc);
	if (s != NULL) {
		cols = db_stmt_columns(s, &ncols);
		if (db_stmt_fetch_all(s, NULL, 0, &rs) != DB_OK) {
			log_error("%s: %s", q->failed_select.where,
			    db_error(what->db));
			rc = ROWQ_EXIT_FAILURE;
		}
	}
	if (rc == ROWQ_EXIT_OK)
		rc = failed_total(what->db, q, &total);
	if (rc == ROWQ_EXIT_OK && json)
		failed_json(q->name, cols, ncols, &rs, total);
	else if (rc == ROWQ_EXIT_OK)
		failed_table(cols, ncols, &rs, total);
	rowset_free(&rs, ncols);
	db_stmt_free(s);
	buf_free(&sql);
	return rc;
}

static int
failed_parse_limit(const char *arg, long *limit)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(arg, &end, 10);
	if (*arg == '\0' || *end != '\0' || errno != 0 || n < 1 ||
	    n > FAILED_LIMIT_MAX) {
		fprintf(stderr, "rowq: failed: --limit takes a number from 1 "
		    "to %d\n", FAILED_LIMIT_MAX);
		return -1;
	}
	*limit = n;
	return 0;
}

/* `rowq failed QUEUE [--json] [--limit N]`; argv[0] is "failed". */
int
failed_command(const char *path, int argc, char **argv)
{
	struct failed_ctx what;
	const char *name = NULL;
	long limit = FAILED_LIMIT_DEFAULT;
	bool json = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--limit") == 0) {
			if (i + 1 >= argc ||
			    failed_parse_limit(argv[++i], &limit) == -1)
				return ROWQ_EXIT_USAGE;
		} else if (strncmp(argv[i], "--limit=", 8) == 0) {
			if (failed_parse_limit(argv[i] + 8, &limit) == -1)
				return ROWQ_EXIT_USAGE;
		} else if (argv[i][0] == '-' || name != NULL) {
			fprintf(stderr, "rowq: failed: %s %s\n", argv[i][0] ==
			    '-' ? "unknown option" : "one queue only, not also",
			    argv[i]);
			return ROWQ_EXIT_USAGE;
		} else
			name = argv[i];
	}
	if (name == NULL) {
		fprintf(stderr, "rowq: failed: name a queue\n");
		return ROWQ_EXIT_USAGE;
	}
	if ((rc = failed_open(path, name, "rowq failed", true, NULL,
	    &what)) != ROWQ_EXIT_OK)
		return rc;
	rc = failed_list(&what, limit, json);
	fflush(stdout);
	failed_close(&what);
	return rc;
}
