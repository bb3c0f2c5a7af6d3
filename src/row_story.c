/*
 * row_story.c: one row's story, as `rowq show` prints it and the
 * console's row page shows it: the row as the queue's select sees it
 * now, or that it returns it no more; whether a worker of this daemon
 * runs it now (the status socket's lines, read by the caller); whether
 * failed_select: returns it; and its runs (runs.c).  Both read it here,
 * so that they never disagree.
 *
 * Every read is a plain one, which locks no row (a row a worker holds is
 * read as it was before the claim), and each transaction ends after it.
 */
#include "rowq.h"
#include "commands.h"
#include "db.h"
#include "runs.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * The row of key in a select (the queue's, or failed_select:), read as a
 * derived table with the key's column compared to the key: a plain read,
 * which locks nothing.  The key column is the select's first, or key:.
 */
static void
row_story_view_read(struct db *db, const char *select, const char *key_column,
    const char *key, size_t key_len, struct row_view *v)
{
	struct buf sql = { 0 }, q = { 0 };
	struct value k = { .type = VALUE_BLOB, .s = key, .len = key_len };
	enum db_status st;
	struct db_stmt *probe;
	const struct column *cols;
	size_t ncols;

	memset(v, 0, sizeof(*v));
	if (key_column == NULL) {
		/* The select's first column: ask the server its name. */
		if ((probe = db_prepare(db, select, &st)) == NULL) {
			snprintf(v->why, sizeof(v->why), "%s", db_error(db));
			(void)db_rollback(db);
			return;
		}
		cols = db_stmt_columns(probe, &ncols);
		if (ncols > 0)
			buf_puts(&sql, cols[0].name);
		db_stmt_free(probe);
		key_column = sql.data;
	}
	buf_printf(&q, "SELECT * FROM (\n%s\n) AS rowq_show WHERE rowq_show.",
	    select);
	failed_quote(&q, key_column != NULL ? key_column : "");
	buf_puts(&q, " = ? LIMIT 2");
	if ((v->stmt = db_prepare(db, q.data, &st)) == NULL)
		snprintf(v->why, sizeof(v->why), "%s", db_error(db));
	else {
		v->cols = db_stmt_columns(v->stmt, &v->ncols);
		if (db_stmt_fetch_all(v->stmt, &k, 1, &v->rs) != DB_OK)
			snprintf(v->why, sizeof(v->why), "%s", db_error(db));
		else
			v->read = true;
	}
	(void)db_rollback(db);
	buf_free(&q);
	buf_free(&sql);
}

static void
row_story_view_free(struct row_view *v)
{
	rowset_free(&v->rs, v->ncols);
	db_stmt_free(v->stmt);
	memset(v, 0, sizeof(*v));
}

/*
 * Whether the key's column of the queue's select is binary: then the
 * daemon's status and ROWQ_KEY give the key in hex.
 */
static bool
row_story_key_binary(const struct row_view *v, const struct queue *q)
{
	for (size_t c = 0; v->read && c < v->ncols; c++)
		if (q->key_column == NULL ? c == 0 :
		    strcasecmp(v->cols[c].name, q->key_column) == 0)
			return v->cols[c].kind == COLUMN_BINARY;
	return false;
}

/* The worker of this daemon whose status line runs the row, or NULL. */
static const struct line *
row_story_running(const struct live *lv, const struct queue *q,
    const char *key)
{
	const struct line *l;
	size_t i = 0;

	while ((l = status_live_find(lv, "worker", q->name, &i)) != NULL)
		if (strcmp(status_live_value(l, "state"), "busy") == 0 &&
		    strcmp(status_live_value(l, "key"), key) == 0)
			return l;
	return NULL;
}

/*
 * Tries that ended with no run: the tries the row has had (its attempts
 * column, when a select returns it, or else the highest try of its runs)
 * less its runs.  In lease mode the claim commits, and usually counts
 * the try, before the handler runs: a try whose outcome then rolled back
 * shows here, and as a gap in the runs' try numbers.  -1: unknown.
 */
static long long
row_story_lost_tries(const struct row_view *v, const struct queue *q,
    const struct rowset *runs)
{
	const char *col = q->retry.attempts_column;
	long long tries = 0, n = 0;

	for (size_t i = 0; i < runs->nrows; i++) {
		const char *o = runs_v(&runs->rows[i], R_OUTCOME);
		/* A done that changed nothing, a schedule's insert: no try. */
		if (strcmp(o, "none") == 0 || strcmp(o, "inserted") == 0)
			continue;
		n++;
		if (atoll(runs_v(&runs->rows[i], R_TRY)) > tries)
			tries = atoll(runs_v(&runs->rows[i], R_TRY));
	}
	for (size_t c = 0; col != NULL && v->read && v->rs.nrows > 0 &&
	    c < v->ncols; c++)
		if (strcasecmp(v->cols[c].name, col) == 0 &&
		    v->rs.rows[0].value[c] != NULL &&
		    atoll(v->rs.rows[0].value[c]) > tries)
			tries = atoll(v->rs.rows[0].value[c]);
	if (tries == 0 && n == 0)
		return -1;
	return tries > n ? tries - n : 0;
}

/* What the row is now, in one word. */
static const char *
row_story_state(const struct row_story *s)
{
	const struct rowset *runs = &s->runs;
	const struct row *last = NULL;

	/*
	 * The last try's run (a done that changed nothing is one too): not
	 * a schedule's insert, which hosts' clocks may sort after it.
	 */
	for (size_t i = runs->nrows; last == NULL && i-- > 0;)
		if (strcmp(runs_v(&runs->rows[i], R_OUTCOME), "inserted") != 0)
			last = &runs->rows[i];

	if (s->running != NULL)
		return "running";
	if (s->sel.read && s->sel.rs.nrows > 0)
		return "waiting";
	if (s->failed.read && s->failed.rs.nrows > 0)
		return "failed";
	if (last != NULL && strcmp(runs_v(last, R_OUTCOME), "done") == 0)
		return "done";
	if (last != NULL && strcmp(runs_v(last, R_OUTCOME), "failed") == 0)
		return "failed";
	if (last != NULL && strcmp(runs_v(last, R_OUTCOME), "cancel") == 0)
		return "cancelled";
	if (!s->sel.read)
		return "gone";
	/* Its last try asked for another, which the select does not see yet. */
	if (last != NULL && strcmp(runs_v(last, R_OUTCOME), "retry") == 0)
		return "retrying";
	/*
	 * A schedule inserted it, it has had no try, and the select does not
	 * return it: in lease mode, where a lease hides a row from the
	 * select, a worker holds it (of another daemon, or one that died,
	 * until its lease runs out).
	 */
	if (last == NULL && runs->nrows > 0 && s->q->lease.enabled)
		return "claimed";
	return "gone";
}

/*
 * Read the story of q's row key (key_len bytes; hex: the key was given
 * in hex, as the daemon's status shows a binary key) into s, running
 * from lv, the daemon's status as the caller read it.  s->sel.read
 * false: the select cannot be read (s->sel.why says why); runs_ok false:
 * the run log cannot (logged).  Free it with row_story_free.
 */
void
row_story_read(struct row_story *s, struct db *db, const struct queue *q,
    const char *key, size_t key_len, bool hex, const struct live *lv)
{
	struct runs_filter f = { .key = key, .key_len = key_len,
	    .limit = RUNS_LIMIT_DEFAULT };
	struct buf skey = { 0 };

	memset(s, 0, sizeof(*s));
	s->q = q;
	s->runs_ok = true;
	row_story_view_read(db, q->select.text, q->key_column, key, key_len,
	    &s->sel);
	if (q->failed_select.text != NULL)
		row_story_view_read(db, q->failed_select.positional, NULL, key,
		    key_len, &s->failed);
	if (q->runs.enabled && runs_read(db, q, &f, &s->runs) == -1)
		s->runs_ok = false;
	/* The key as the daemon's status says it: a binary key in hex. */
	buf_append(&skey, "", 0);
	if (row_story_key_binary(&s->sel, q) || hex)
		buf_put_hex(&skey, key, key_len);
	else
		buf_append(&skey, key, key_len);
	s->running = row_story_running(lv, q, skey.data);
	s->state = row_story_state(s);
	s->lost = row_story_lost_tries(s->sel.rs.nrows ? &s->sel : &s->failed,
	    q, &s->runs);
	buf_free(&skey);
}

void
row_story_free(struct row_story *s)
{
	row_story_view_free(&s->sel);
	row_story_view_free(&s->failed);
	rowset_free(&s->runs, R_NCOLS);
	memset(s, 0, sizeof(*s));
}

/* Whether bytes read as text as they are: UTF-8, no control character. */
bool
row_story_printable(const char *s, size_t n)
{
	struct buf b = { 0 };
	bool ok;

	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	buf_append(&b, s, n);
	utf8_sanitize(&b);
	ok = b.len == n && memcmp(b.data ? b.data : "", s, n) == 0;
	buf_free(&b);
	return ok;
}

/*
 * The story as one JSON object, `rowq show --json`'s and the console's
 * /api/queue/NAME/row: the row's key (null when its bytes are not
 * printable UTF-8) and key_hex, state, the select's row, in_failed,
 * running, status_error, tries_without_run, runs.
 */
void
row_story_json(struct buf *b, const char *queue, const char *key,
    size_t key_len, const struct row_story *s, const struct live *lv)
{
	const struct row_view *sel = &s->sel, *failed = &s->failed;
	const struct line *running = s->running;

	buf_puts(b, "{\"queue\":");
	json_string(b, queue, strlen(queue));
	runs_json_text(b, "key", row_story_printable(key, key_len) ?
	    key : NULL, key_len);
	buf_puts(b, ",\"key_hex\":\"");
	buf_put_hex(b, key, key_len);
	buf_printf(b, "\",\"state\":\"%s\",\"in_select\":%s,\"row\":",
	    s->state, sel->read && sel->rs.nrows > 0 ? "true" : "false");
	if (sel->read && sel->rs.nrows > 0)
		json_row(b, sel->cols, sel->ncols, &sel->rs.rows[0]);
	else
		buf_puts(b, "null");
	buf_printf(b, ",\"in_failed\":%s", !failed->read ? "null" :
	    failed->rs.nrows > 0 ? "true" : "false");
	buf_puts(b, ",\"running\":");
	if (running != NULL) {
		const struct line *d;
		size_t i = 0;
		d = status_live_find(lv, "daemon", NULL, &i);
		buf_printf(b, "{\"worker\":%s,\"pid\":%s,\"for_s\":%s,"
		    "\"attempt\":%s,\"daemon_pid\":",
		    status_live_value(running, "number"),
		    status_live_value(running, "pid"),
		    status_live_value(running, "for"),
		    *status_live_value(running, "attempt") ?
		    status_live_value(running, "attempt") : "null");
		json_string(b, status_live_value(d, "pid"),
		    strlen(status_live_value(d, "pid")));
		buf_puts(b, "}");
	} else
		buf_puts(b, "null");
	runs_json_text(b, "status_error", *lv->error ? lv->error : NULL,
	    strlen(lv->error));
	if (s->lost >= 0)
		buf_printf(b, ",\"tries_without_run\":%lld", s->lost);
	buf_puts(b, ",\"runs\":");
	runs_json_list(b, &s->runs);
	buf_puts(b, "}");
}
