/*
 * console_failed.c: a queue's failed rows in the console, through its
 * failed_select: paged, filtered by error text (the first column whose
 * name holds "error", as `rowq requeue --where-error` reads it), and
 * requeued or discarded, the rows selected or every row matching, by
 * requeue.c as the commands do it (chunks of 1000 keys, a pause between;
 * every row in a child, console_bulk.c, the console serving meanwhile).
 * More than one row, or all, asks for a confirmation first.
 */
#include "rowq.h"
#include "console.h"
#include "db.h"
#include "claim.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>

#define CONSOLE_FAILED_PAGE	50	/* rows a page */
#define CONSOLE_FAILED_PAGES	10000	/* pages reached at most */

/* What a failed rows page reads. */
struct console_failed {
	const struct queue	*q;
	const char		*key;		/* the key column */
	const char		*error;		/* the filter; NULL: none */
	char			*errcol;	/* its column; NULL: none */
	long			 page;		/* from 0 */
	struct db_stmt		*stmt;
	const struct column	*cols;
	size_t			 ncols;
	struct rowset		 rs;
	long long		 total;
	char			 why[300];	/* "": read */
};

/* The key's column name: what requeue:, discard: and cancel: take. */
static const char *
console_failed_key(const struct queue *q)
{
	if (q->requeue.text != NULL && q->requeue.nparams > 0)
		return q->requeue.params[0];
	if (q->discard.text != NULL && q->discard.nparams > 0)
		return q->discard.params[0];
	if (q->cancel.text != NULL && q->cancel.nparams > 0)
		return q->cancel.params[0];
	return q->key_column;
}

/*
 * SELECT what FROM (failed_select) [WHERE errcol LIKE ?] [tail]: the
 * same derived table as `rowq requeue --all` reads.  The server keeps
 * the order of a derived table only when it has a LIMIT: one that
 * limits nothing keeps failed_select's ORDER BY.
 */
static void
console_failed_sql(struct buf *b, const struct console_failed *f,
    const char *what, const char *tail)
{
	buf_printf(b, "SELECT %s FROM (\n%s\nLIMIT 18446744073709551615\n) "
	    "AS rowq_failed", what, f->q->failed_select.positional);
	if (f->errcol != NULL) {
		buf_puts(b, " WHERE rowq_failed.");
		failed_quote(b, f->errcol);
		buf_puts(b, " LIKE ?");
	}
	buf_puts(b, tail);
}

static int
console_failed_fetch(struct db *db, struct console_failed *f, const char *sql,
    struct db_stmt **stmt, struct rowset *rs)
{
	struct buf like = { 0 };
	struct value v = { .type = VALUE_TEXT };
	enum db_status st;
	int rc = 0;

	if ((*stmt = db_prepare(db, sql, &st)) == NULL)
		return -1;
	if (f->errcol != NULL) {
		requeue_like(&like, f->error);
		v.s = like.data;
		v.len = like.len;
	}
	if (db_stmt_fetch_all(*stmt, &v, f->errcol != NULL, rs) != DB_OK)
		rc = -1;
	buf_free(&like);
	return rc;
}

/* Read the page: its rows, and how many match in all.  -1: f->why says. */
static int
console_failed_read(struct console *c, struct console_failed *f)
{
	struct db *db = console_db(c);
	struct buf sql = { 0 };
	struct db_stmt *count = NULL, *probe;
	struct rowset crs = { 0 };
	const struct column *cols;
	size_t ncols;
	enum db_status st;
	int rc = -1;

	if (db == NULL) {
		snprintf(f->why, sizeof(f->why), "the database does not answer");
		return -1;
	}
	if (f->error != NULL && *f->error != '\0') {
		probe = db_prepare(db, f->q->failed_select.positional, &st);
		if (probe == NULL)
			goto out;
		cols = db_stmt_columns(probe, &ncols);
		if (requeue_error_column(cols, ncols) != NULL)
			f->errcol = xstrdup(requeue_error_column(cols, ncols));
		db_stmt_free(probe);
		if (f->errcol == NULL) {
			snprintf(f->why, sizeof(f->why), "failed_select has no "
			    "column whose name holds \"error\" to filter by");
			return -1;
		}
	}
	buf_printf(&sql, "%s", "");
	console_failed_sql(&sql, f, "*", "");
	buf_printf(&sql, " LIMIT %d OFFSET %ld", CONSOLE_FAILED_PAGE,
	    f->page * CONSOLE_FAILED_PAGE);
	if (console_failed_fetch(db, f, sql.data, &f->stmt, &f->rs) == -1)
		goto out;
	f->cols = db_stmt_columns(f->stmt, &f->ncols);
	buf_reset(&sql);
	console_failed_sql(&sql, f, "COUNT(*)", "");
	if (console_failed_fetch(db, f, sql.data, &count, &crs) == -1)
		goto out;
	f->total = crs.nrows > 0 && crs.rows[0].value[0] != NULL ?
	    atoll(crs.rows[0].value[0]) : 0;
	rc = 0;
out:
	if (rc == -1 && f->why[0] == '\0')
		snprintf(f->why, sizeof(f->why), "%s", db_error(db));
	rowset_free(&crs, 1);
	db_stmt_free(count);
	buf_free(&sql);
	return rc;
}

static void
console_failed_free(struct console_failed *f)
{
	rowset_clear(&f->rs, f->ncols);
	free(f->rs.rows);
	db_stmt_free(f->stmt);
	free(f->errcol);
}

/* The href of the page of queue's failed rows, with the filter. */
static void
console_failed_href(struct buf *b, const char *queue, const char *error,
    long page)
{
	console_queue_href(b, queue, "/failed");
	if (error != NULL && *error != '\0') {
		buf_puts(b, "?error=");
		console_url_part(b, error);
	}
	if (page > 0)
		buf_printf(b, "%spage=%ld", error && *error ? "&" : "?",
		    page + 1);
}

static void
console_failed_buttons(struct buf *b, const struct console_failed *f)
{
	buf_puts(b, "<div class=\"bar\">");
	if (f->q->requeue.text != NULL)
		buf_puts(b, "<button type=\"submit\" name=\"action\" "
		    "value=\"requeue\" id=\"requeue\">Requeue</button>");
	if (f->q->discard.text != NULL)
		buf_puts(b, "<button type=\"submit\" name=\"action\" "
		    "value=\"discard\" id=\"discard\" class=\"danger\">Discard"
		    "</button>");
	buf_printf(b, "<label><input type=\"checkbox\" name=\"all\" "
	    "value=\"1\" id=\"every\"> every one of the %lld rows that match, "
	    "not only those selected</label></div>", f->total);
}

/* GET /queue/NAME/failed[?error=TEXT][&page=N] */
void
console_failed_page(struct console_request *r, struct console_reply *rep,
    const struct queue *q)
{
	struct console_failed f = { .q = q, .key = console_failed_key(q) };
	const char *page = console_query(r, "page");
	const char *did = console_query(r, "did");
	struct buf *b = &rep->body;
	bool act = r->role == CONSOLE_OPERATOR && r->session != NULL &&
	    f.key != NULL && (q->requeue.text != NULL || q->discard.text != NULL);

	if (q->failed_select.text == NULL) {
		console_not_found(r, rep, "This queue has no failed_select.");
		return;
	}
	f.error = console_query(r, "error");
	f.page = page != NULL ? atol(page) - 1 : 0;
	if (f.page < 0 || f.page >= CONSOLE_FAILED_PAGES)
		f.page = 0;
	console_page_begin(b, r, "Failed rows", false);
	buf_puts(b, "<h1>Failed rows of ");
	console_queue_link(b, q->name);
	buf_puts(b, "</h1>");
	if (did != NULL && (strcmp(did, "requeued") == 0 ||
	    strcmp(did, "discarded") == 0)) {
		const char *n = console_query(r, "n");
		buf_printf(b, "<p class=\"note\" id=\"did\">%s %lld row%s.</p>",
		    did, n ? atoll(n) : 0LL, n && atoll(n) == 1 ? "" : "s");
	} else if (did != NULL && strcmp(did, "running") == 0)
		buf_puts(b, "<p class=\"note\" id=\"did\">The action on every "
		    "row goes on; the Actions page says when it is done.</p>");
	buf_puts(b, "<form method=\"get\" class=\"bar\" action=\"/queue/");
	console_url_part(b, q->name);
	buf_puts(b, "/failed\"><input type=\"text\" name=\"error\" "
	    "placeholder=\"error contains\" value=\"");
	console_html(b, f.error);
	buf_puts(b, "\"> <button type=\"submit\">Filter</button></form>");
	if (console_failed_read(r->c, &f) == -1) {
		buf_puts(b, "<p class=\"bad\">");
		console_html(b, f.why);
		buf_puts(b, "</p>");
		console_page_end(b);
		console_failed_free(&f);
		return;
	}
	buf_printf(b, "<p id=\"count\">%lld failed row%s%s, page %ld of %lld."
	    "</p>", f.total, f.total == 1 ? "" : "s", f.error && *f.error ?
	    " match" : "", f.page + 1, f.total > 0 ? (f.total - 1) /
	    CONSOLE_FAILED_PAGE + 1 : 1);
	if (act) {
		buf_puts(b, "<form method=\"post\" action=\"/queue/");
		console_url_part(b, q->name);
		buf_puts(b, "/failed\">");
		console_csrf_field(b, r);
		buf_puts(b, "<input type=\"hidden\" name=\"error\" value=\"");
		console_html(b, f.error);
		buf_puts(b, "\">");
		console_failed_buttons(b, &f);
	}
	console_rows_table(b, f.cols, f.ncols, &f.rs, act ? f.key : NULL,
	    "failed", q->name, NULL);
	if (act)
		buf_puts(b, "</form>");
	buf_puts(b, "<div class=\"bar\">");
	if (f.page > 0) {
		buf_puts(b, "<a href=\"");
		console_failed_href(b, q->name, f.error, f.page - 1);
		buf_puts(b, "\">newer</a>");
	}
	if ((f.page + 1) * CONSOLE_FAILED_PAGE < f.total) {
		buf_puts(b, "<a href=\"");
		console_failed_href(b, q->name, f.error, f.page + 1);
		buf_puts(b, "\">older</a>");
	}
	buf_puts(b, "</div>");
	console_page_end(b);
	console_failed_free(&f);
}

/* Whether a form field is a key: key_hex from the page, key from a script. */
static bool
console_failed_is_key(const char *name)
{
	return strcmp(name, "key_hex") == 0 || strcmp(name, "key") == 0;
}

/*
 * The keys of the form as values to bind, their bytes in bytes[i]: a
 * box of the page posts key_hex, the key's bytes in hex, which are bound
 * as they are (a blob for a binary key column); a script may post key,
 * a text bound as text as `rowq requeue` binds it.  -1 when a key_hex is
 * not hex.
 */
static int
console_failed_keys(const struct console_form *f, bool binary,
    struct buf *bytes, struct value *v, size_t *n)
{
	for (size_t i = 0; i < f->n; i++) {
		bool hex = strcmp(f->name[i], "key_hex") == 0;
		struct buf *b = &bytes[*n];
		if (!console_failed_is_key(f->name[i]))
			continue;
		if (hex && console_key_decode(f->value[i], b) == -1)
			return -1;
		if (!hex)
			buf_puts(b, f->value[i]);
		v[(*n)++] = (struct value){ .type = hex && binary ?
		    VALUE_BLOB : VALUE_TEXT, .s = b->data, .len = b->len };
	}
	return 0;
}

/*
 * The keys for the log and the Actions page: a binary key in hex, as
 * ROWQ_KEY has it; a text key as it is (the log escapes what it must).
 */
static void
console_failed_detail(struct buf *b, const struct value *v, size_t n)
{
	for (size_t i = 0; i < n && b->len < 150; i++) {
		buf_puts(b, i ? ", key " : "key ");
		if (v[i].type == VALUE_BLOB)
			buf_put_hex(b, v[i].s, v[i].len);
		else
			for (size_t k = 0; k < v[i].len; k++)
				buf_putc(b, v[i].s[k] != '\0' ? v[i].s[k] :
				    '?');
	}
}

/* The confirmation of a bulk action: the same form again, confirmed. */
static void
console_failed_confirm(struct console_request *r, struct console_reply *rep,
    const struct queue *q, const struct failed_action *a, bool all,
    const char *error, size_t nkeys)
{
	struct buf *b = &rep->body;

	console_page_begin(b, r, "Confirm", false);
	buf_puts(b, "<h1>Confirm</h1><form method=\"post\" action=\"/queue/");
	console_url_part(b, q->name);
	buf_puts(b, "/failed\">");
	console_csrf_field(b, r);
	buf_printf(b, "<input type=\"hidden\" name=\"action\" value=\"%s\">"
	    "<input type=\"hidden\" name=\"confirm\" value=\"1\">", a->name);
	buf_puts(b, "<input type=\"hidden\" name=\"error\" value=\"");
	console_html(b, error);
	buf_puts(b, "\">");
	if (all)
		buf_puts(b, "<input type=\"hidden\" name=\"all\" value=\"1\">");
	for (size_t i = 0; i < r->form.n; i++)
		if (console_failed_is_key(r->form.name[i]) && !all) {
			buf_printf(b, "<input type=\"hidden\" name=\"%s\" "
			    "value=\"", r->form.name[i]);
			console_html(b, r->form.value[i]);
			buf_puts(b, "\">");
		}
	buf_printf(b, "<p class=\"note\">%s ", a->name);
	if (all) {
		buf_puts(b, "<strong>every</strong> failed row of ");
		console_html(b, q->name);
		if (error != NULL && *error != '\0') {
			buf_puts(b, " whose error contains &quot;");
			console_html(b, error);
			buf_puts(b, "&quot;");
		}
	} else {
		buf_printf(b, "the %zu selected rows of ", nkeys);
		console_html(b, q->name);
	}
	buf_printf(b, "?</p><p><button type=\"submit\" id=\"confirm\"%s>Yes, "
	    "%s</button> <a href=\"/queue/", a == &discard_action ?
	    " class=\"danger\"" : "", a->name);
	console_url_part(b, q->name);
	buf_puts(b, "/failed\">No, back</a></p></form>");
	console_page_end(b);
}

/*
 * POST /queue/NAME/failed: action=requeue|discard, key_hex=HEX... (the
 * page's boxes) or key=TEXT... (a script's), or all=1 (with error=TEXT),
 * confirm=1 for more than one row; back=row: one row's page posted it
 * (console_row.c), and its page is where the answer goes.  And
 * action=cancel, keys only (a row page's, a waiting or running row's), in
 * lease mode: failed_select is not needed, the select says whether the
 * key is binary.
 */
void
console_failed_post(struct console_request *r, struct console_reply *rep,
    const struct queue *q)
{
	const char *action = console_form_get(&r->form, "action");
	const char *error = console_form_get(&r->form, "error");
	bool all = console_form_get(&r->form, "all") != NULL;
	bool confirmed = console_form_get(&r->form, "confirm") != NULL;
	const char *back_to = console_form_get(&r->form, "back");
	bool from_row = back_to != NULL && strcmp(back_to, "row") == 0;
	const struct failed_action *a = NULL;
	struct failed_ctx what = { .cfg = (struct config *)r->c->cfg, .q = q };
	struct requeue_run run;
	struct buf back = { 0 }, detail = { 0 }, who = { 0 };
	struct buf *bytes = xcalloc(r->form.n + 1, sizeof(*bytes));
	struct value *values = xcalloc(r->form.n + 1, sizeof(*values));
	size_t nkeys = 0;
	int rc;

	const struct sql *rows_of;

	a = failed_action_named(action);
	rows_of = a == &cancel_action ? &q->select : &q->failed_select;
	for (size_t i = 0; i < r->form.n; i++)
		nkeys += console_failed_is_key(r->form.name[i]);
	if (error != NULL && *error == '\0')
		error = NULL;
	if (a == NULL || failed_action_sql(q, a)->text == NULL ||
	    rows_of->text == NULL || (all && a == &cancel_action)) {
		console_reply_text(rep, 400, "requeue or discard of failed "
		    "rows, or cancel of rows by key, as the queue has them");
		goto out;
	}
	if (!all && nkeys == 0) {
		console_reply_text(rep, 400, "select rows, or every one");
		goto out;
	}
	if ((all || nkeys > 1) && !confirmed) {
		console_failed_confirm(r, rep, q, a, all, error, nkeys);
		goto out;
	}
	/* Every row that matches: in a child, the console serving on. */
	if (all) {
		console_failed_href(&back, q->name, error, 0);
		(void)console_bulk_start(r, rep, q, a, error, back.data);
		goto out;
	}
	if ((what.db = console_db(r->c)) == NULL) {
		console_reply_text(rep, 503, "the database does not answer");
		goto out;
	}
	nkeys = 0;
	/* A binary key is bound as a blob, a text key as text. */
	if (console_failed_keys(&r->form, console_failed_key(q) != NULL &&
	    console_key_binary(what.db, rows_of->positional,
	    console_failed_key(q)), bytes, values, &nkeys) == -1) {
		console_reply_text(rep, 400, "a key is not as the page gave "
		    "it: reload the page");
		goto out;
	}
	rc = requeue_begin(&run, &what, a);
	run.quiet = true;
	buf_printf(&who, "%s (console)", r->user);
	run.by = who.data;
	if (rc == ROWQ_EXIT_OK)
		rc = requeue_values(&run, values, nkeys);
	requeue_end(&run);
	(void)db_rollback(what.db);
	console_failed_detail(&detail, values, nkeys);
	if (run.missed > 0)
		buf_printf(&detail, "; %llu matched no %srow", run.missed,
		    a == &cancel_action ? "" : "failed ");
	if (rc != ROWQ_EXIT_OK)
		buf_puts(&detail, "; stopped by an error (logged)");
	console_log_action(r, a->done, q->name, (long long)run.done,
	    detail.data ?
	    detail.data : "");
	console_view_stale(r->c);
	/* From a row's page (one key_hex, back=row): back to it. */
	if (from_row && nkeys == 1 && values[0].len > 0 &&
	    console_form_get(&r->form, "key_hex") != NULL)
		console_row_href(&back, q->name, values[0].s, values[0].len);
	else
		console_failed_href(&back, q->name, error, 0);
	buf_printf(&back, "%sdid=%s&n=%llu", strchr(back.data, '?') ? "&" : "?",
	    a->done, run.done);
	console_redirect(rep, back.data);
out:
	buf_free(&back);
	buf_free(&detail);
	buf_free(&who);
	for (size_t i = 0; i < r->form.n; i++)
		buf_free(&bytes[i]);
	free(bytes);
	free(values);
}

/* GET /api/queue/NAME/failed[?error=TEXT][&page=N]: `rowq failed --json`'s shape. */
void
console_failed_api(struct console_request *r, struct console_reply *rep,
    const struct queue *q)
{
	struct console_failed f = { .q = q };
	const char *page = console_query(r, "page");
	struct buf *b = &rep->body;

	if (q->failed_select.text == NULL) {
		console_reply_text(rep, 404, "this queue has no failed_select");
		return;
	}
	f.error = console_query(r, "error");
	f.page = page != NULL ? atol(page) - 1 : 0;
	if (f.page < 0 || f.page >= CONSOLE_FAILED_PAGES)
		f.page = 0;
	if (console_failed_read(r->c, &f) == -1) {
		console_reply_text(rep, 503, f.why);
		console_failed_free(&f);
		return;
	}
	buf_puts(b, "{\"queue\":");
	json_string(b, q->name, strlen(q->name));
	buf_printf(b, ",\"total\":%lld,\"page\":%ld,\"rows\":[", f.total,
	    f.page + 1);
	for (size_t i = 0; i < f.rs.nrows; i++) {
		if (i > 0)
			buf_putc(b, ',');
		json_row(b, f.cols, f.ncols, &f.rs.rows[i]);
	}
	buf_puts(b, "]}\n");
	rep->type = "application/json";
	console_failed_free(&f);
}
