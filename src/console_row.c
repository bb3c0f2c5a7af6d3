/*
 * console_row.c: one row's page, /queue/NAME/row, what `rowq show` says
 * of it, read by the same code (row_story.c): the row as the queue's
 * select sees it, or that it returns it no more; whether a worker of
 * this daemon runs it (worker, pid, since when, from the status socket
 * the console reads); whether failed_select: returns it; its runs.  Every
 * read is a plain one, which locks no row.
 *
 * The page is reached by a link from every table that shows a row's key,
 * key_hex=HEX, the key's bytes in hex, so that a binary key or one with
 * control characters is the very row linked and never another whose
 * text looks the same; or by the key typed into the queue's page, key=TEXT
 * (with hex=1, hex digits of its bytes, as the log shows a binary key).
 *
 * A failed row's page has requeue and discard: a form posted to the
 * failed rows' action (console_failed_post), with its CSRF token, for
 * an operator only, logged as any action is, which comes back here.
 */
#include "rowq.h"
#include "console.h"
#include "db.h"
#include "runs.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The href of q's row of key (its bytes): /queue/Q/row?key_hex=HEX. */
void
console_row_href(struct buf *b, const char *queue, const char *key,
    size_t len)
{
	console_queue_href(b, queue, "/row?key_hex=");
	buf_put_hex(b, key, len);
}

/* A link to q's row of key, its text as the cell would show it. */
void
console_row_link(struct buf *b, const char *queue, const char *key,
    size_t len, const char *text, size_t text_len)
{
	buf_puts(b, "<a class=\"row\" href=\"");
	console_row_href(b, queue, key, len);
	buf_puts(b, "\">");
	console_html_n(b, text, text_len);
	buf_puts(b, "</a>");
}

/*
 * Whether the key column of sql's result (NULL: its first column) is
 * binary, as the server describes it, by preparing it, which reads no
 * row.  False when it cannot be prepared.
 */
bool
console_key_binary(struct db *db, const char *sql, const char *key_column)
{
	struct db_stmt *s;
	const struct column *cols;
	size_t ncols;
	enum db_status st;
	bool binary = false;

	if ((s = db_prepare(db, sql, &st)) == NULL)
		return false;
	cols = db_stmt_columns(s, &ncols);
	for (size_t i = 0; i < ncols; i++)
		if (key_column == NULL ? i == 0 :
		    strcmp(cols[i].name, key_column) == 0)
			binary = cols[i].kind == COLUMN_BINARY;
	db_stmt_free(s);
	return binary;
}

/*
 * A worker's row, a link to its page: key as the status socket says it,
 * which is in hex for a binary key column, and cut at 63 bytes (such a
 * key is shown, not linked).  *binary: -1 unknown yet, then asked of
 * the server (once a page, only when a worker is on a row), 0 or 1.
 */
void
console_row_status_link(struct console *c, struct buf *b,
    const struct queue *q, const char *key, int *binary)
{
	struct buf bytes = { 0 };
	struct db *db;

	if (*key == '\0')
		return;
	/* A key as long as the status keeps may be cut: not linked. */
	if (strlen(key) >= sizeof(((struct worker_stats *)0)->key) - 1) {
		console_html(b, key);
		return;
	}
	if (*binary == -1)
		*binary = (db = console_db(c)) != NULL &&
		    console_key_binary(db, q->select.positional, q->key_column);
	if (*binary == 1 && console_key_decode(key, &bytes) == 0)
		console_row_link(b, q->name, bytes.data, bytes.len, key,
		    strlen(key));
	else
		console_row_link(b, q->name, key, strlen(key), key,
		    strlen(key));
	buf_free(&bytes);
}

/* A key for the page: its text, and its bytes in hex when not text. */
static void
console_row_key(struct buf *b, const char *key, size_t len)
{
	buf_puts(b, "<code id=\"key\">");
	console_html_n(b, key, len);
	buf_puts(b, "</code>");
	if (!row_story_printable(key, len)) {
		buf_puts(b, " <span class=\"muted\">bytes <code id=\"key-hex\">"
		    "x'");
		buf_put_hex(b, key, len);
		buf_puts(b, "'</code></span>");
	}
}

/* A UTC time, as the run log's times are written. */
static void
console_row_utc(struct buf *b, int64_t wall)
{
	char t[32];
	time_t secs = (time_t)(wall / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
	buf_puts(b, t);
}

static void
console_row_running(struct buf *b, const struct row_story *s,
    const struct live *lv)
{
	const struct line *w = s->running;
	char d[32];

	buf_puts(b, "<p id=\"running\">");
	if (w == NULL && *lv->error) {
		buf_puts(b, "Running: unknown, no daemon status (");
		console_html(b, lv->error);
		buf_puts(b, ").</p>");
		return;
	}
	if (w == NULL) {
		buf_puts(b, "Running: not on this daemon.</p>");
		return;
	}
	duration_format(atoll(status_live_value(w, "for")) * 1000, d,
	    sizeof(d));
	buf_puts(b, "Running on this daemon: worker ");
	console_html(b, s->q->name);
	buf_putc(b, '/');
	console_html(b, status_live_value(w, "number"));
	buf_puts(b, ", pid ");
	console_html(b, status_live_value(w, "pid"));
	buf_puts(b, ", try ");
	console_html(b, status_live_value(w, "attempt"));
	buf_puts(b, ", since ");
	console_row_utc(b, wall_ms() - atoll(status_live_value(w, "for")) *
	    1000);
	buf_printf(b, " (%s).</p>", d);
}

/* One select's view of the row: its columns, one a line. */
static void
console_row_view(struct buf *b, const char *name, const struct row_view *v,
    const char *id)
{
	buf_printf(b, "<h2>%s</h2>", name);
	if (!v->read) {
		buf_puts(b, "<p class=\"bad\">It cannot be read: ");
		console_html(b, v->why);
		buf_puts(b, "</p>");
		return;
	}
	if (v->rs.nrows == 0) {
		buf_printf(b, "<p id=\"%s\" class=\"muted\">It does not return "
		    "this row.</p>", id);
		return;
	}
	buf_printf(b, "<table id=\"%s\" class=\"row\">", id);
	for (size_t c = 0; c < v->ncols; c++) {
		const struct row *r = &v->rs.rows[0];
		buf_puts(b, "<tr><th>");
		console_html(b, v->cols[c].name);
		buf_puts(b, "</th><td class=\"v\">");
		if (r->value[c] == NULL)
			buf_puts(b, "<span class=\"muted\">NULL</span>");
		else if (v->cols[c].kind == COLUMN_BINARY) {
			buf_puts(b, "x'");
			buf_put_hex(b, r->value[c], r->len[c]);
			buf_puts(b, "'");
		} else
			console_html_n(b, r->value[c], r->len[c]);
		buf_puts(b, "</td></tr>\n");
	}
	buf_puts(b, "</table>");
}

static void
console_row_runs(struct buf *b, const struct row_story *s)
{
	static const char *const head[] = { "Try", "Outcome", "Reason",
	    "Exit", "Started (UTC)", "Duration", "Host", "Worker", "Error" };
	char d[32];

	buf_printf(b, "<h2>Runs (%zu)</h2>", s->runs.nrows);
	if (!s->q->runs.enabled) {
		buf_puts(b, "<p class=\"muted\">This queue keeps no run log "
		    "(runs:).</p>");
		return;
	}
	if (!s->runs_ok)
		buf_puts(b, "<p class=\"bad\">The run log cannot be read: the "
		    "daemon's log says why.</p>");
	if (s->lost > 0)
		buf_printf(b, "<p class=\"note\" id=\"lost\">%lld tr%s without "
		    "a run: their transaction rolled back (a worker or the "
		    "database died, or the link was lost).</p>", s->lost,
		    s->lost == 1 ? "y" : "ies");
	buf_puts(b, "<table id=\"runs\"><tr>");
	for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		buf_printf(b, "<th>%s</th>", head[i]);
	buf_puts(b, "</tr>\n");
	for (size_t i = 0; i < s->runs.nrows; i++) {
		const struct row *r = &s->runs.rows[i];
		const char *o = runs_v(r, R_OUTCOME);
		duration_format(atoll(runs_v(r, R_DURATION)), d, sizeof(d));
		buf_puts(b, "<tr><td class=\"n\">");
		console_html(b, runs_v(r, R_TRY));
		buf_printf(b, "</td><td><span class=\"tag%s\">",
		    strcmp(o, "done") == 0 ? " live" : strcmp(o, "failed") ==
		    0 ? " gone" : "");
		console_html(b, o);
		buf_puts(b, "</span></td><td>");
		console_html(b, runs_v(r, R_REASON));
		buf_puts(b, "</td><td class=\"n\">");
		console_html(b, r->value[R_EXIT] ? r->value[R_EXIT] : "-");
		buf_puts(b, "</td><td>");
		console_html(b, runs_v(r, R_STARTED));
		buf_printf(b, "</td><td class=\"n\">%s</td><td>", d);
		console_html_n(b, runs_v(r, R_HOST), r->len[R_HOST]);
		buf_puts(b, "</td><td class=\"n\">");
		console_html(b, runs_v(r, R_WORKER));
		buf_puts(b, "</td><td class=\"v\">");
		console_html_n(b, runs_v(r, R_ERROR), r->len[R_ERROR]);
		buf_puts(b, "</td></tr>\n");
	}
	buf_puts(b, "</table>");
}

/*
 * Requeue and discard of a failed row, cancel of a waiting or running
 * one (lease mode, cancel:; "claimed", "retrying" and "gone" too, as a
 * row that another daemon runs may look from here): the failed rows'
 * own form, for this key alone (key_hex, compared byte for byte),
 * back=row to come back here.
 * An operator's, with a session (a CSRF token) only.
 */
static void
console_row_actions(struct buf *b, const struct console_request *r,
    const struct row_story *s, const char *key, size_t len)
{
	const struct queue *q = s->q;
	bool failed = s->failed.read && s->failed.rs.nrows > 0 &&
	    (q->requeue.text != NULL || q->discard.text != NULL);
	bool cancel = q->cancel.text != NULL && s->state != NULL &&
	    (strcmp(s->state, "waiting") == 0 ||
	    strcmp(s->state, "running") == 0 ||
	    strcmp(s->state, "claimed") == 0 ||
	    strcmp(s->state, "retrying") == 0 ||
	    strcmp(s->state, "gone") == 0);

	if (r->role != CONSOLE_OPERATOR || r->session == NULL ||
	    (!failed && !cancel))
		return;
	buf_puts(b, "<form method=\"post\" class=\"bar\" action=\"/queue/");
	console_url_part(b, q->name);
	buf_puts(b, "/failed\">");
	console_csrf_field(b, r);
	buf_puts(b, "<input type=\"hidden\" name=\"back\" value=\"row\">"
	    "<input type=\"hidden\" name=\"key_hex\" value=\"");
	buf_put_hex(b, key, len);
	buf_puts(b, "\">");
	if (failed && q->requeue.text != NULL)
		buf_puts(b, "<button type=\"submit\" name=\"action\" "
		    "value=\"requeue\" id=\"requeue\">Requeue</button>");
	if (failed && q->discard.text != NULL)
		buf_puts(b, "<button type=\"submit\" name=\"action\" "
		    "value=\"discard\" id=\"discard\" class=\"danger\">Discard"
		    "</button>");
	if (cancel)
		buf_puts(b, "<button type=\"submit\" name=\"action\" "
		    "value=\"cancel\" id=\"cancel\" class=\"danger\">Cancel"
		    "</button>");
	buf_puts(b, "</form>");
}

/*
 * The key asked for: key_hex=HEX (a link's, or key=HEX&hex=1, typed as
 * the log and ROWQ_KEY give a binary key), or key=TEXT (typed).
 */
static int
console_row_asked(const struct console_request *r, struct buf *key)
{
	const char *hex = console_query(r, "key_hex");
	const char *text = console_query(r, "key");

	if (hex == NULL && text != NULL && console_query(r, "hex") != NULL)
		hex = text;
	if (hex != NULL)
		return console_key_decode(hex, key);
	if (text == NULL || *text == '\0')
		return -1;
	buf_reset(key);
	buf_puts(key, text);
	return 0;
}

/* The box that finds a row by its key, on a queue's page and here. */
void
console_row_find(struct buf *b, const struct queue *q, const char *value)
{
	buf_puts(b, "<form method=\"get\" class=\"bar\" id=\"find\" "
	    "action=\"/queue/");
	console_url_part(b, q->name);
	buf_puts(b, "/row\"><input type=\"text\" name=\"key\" id=\"find-key\" "
	    "placeholder=\"a row's key\" value=\"");
	console_html(b, value);
	buf_puts(b, "\"> <label><input type=\"checkbox\" name=\"hex\" "
	    "value=\"1\" id=\"find-hex\"> in hex</label> <button "
	    "type=\"submit\">Find the row</button> <a id=\"search-link\" "
	    "href=\"/queue/");
	console_url_part(b, q->name);
	buf_puts(b, "/search\">or search by any column</a></form>");
}

/*
 * The story of the row whose key is key, read on the console's own
 * connection, for the page and the API: 0; -1 with a 503 reply when the
 * database does not answer.
 */
static int
console_row_read(struct console_request *r, struct console_reply *rep,
    const struct queue *q, const struct buf *key, struct row_story *s,
    const struct live **lv)
{
	struct db *db = console_db(r->c);

	if (db == NULL) {
		console_reply_text(rep, 503, "the database does not answer");
		return -1;
	}
	*lv = &console_live_view(r->c)->live;
	row_story_read(s, db, q, key->data, key->len, false, *lv);
	return 0;
}

/* GET /queue/NAME/row?key_hex=HEX | ?key=TEXT[&hex=1] [&did=WHAT&n=N] */
void
console_row_page(struct console_request *r, struct console_reply *rep,
    const struct queue *q)
{
	struct buf *b = &rep->body, key = { 0 };
	const char *did = console_query(r, "did");
	struct row_story s;
	const struct live *lv;

	if (console_row_asked(r, &key) == -1) {
		rep->status = 400;
		console_page_begin(b, r, "Find a row", false);
		buf_puts(b, "<h1>Find a row of ");
		console_html(b, q->name);
		buf_puts(b, "</h1><p class=\"bad\">Give a key: key=TEXT, or "
		    "key_hex=HEX (its bytes).</p>");
		console_row_find(b, q, NULL);
		console_page_end(b);
		buf_free(&key);
		return;
	}
	if (console_row_read(r, rep, q, &key, &s, &lv) == -1) {
		buf_free(&key);
		return;
	}
	console_page_begin(b, r, "Row", s.running != NULL);
	buf_puts(b, "<h1>Row ");
	console_row_key(b, key.data, key.len);
	buf_puts(b, " of ");
	console_queue_link(b, q->name);
	buf_printf(b, " <span class=\"tag%s\" id=\"state\">%s</span></h1>",
	    strcmp(s.state, "failed") == 0 || strcmp(s.state, "gone") == 0 ||
	    strcmp(s.state, "cancelled") == 0 ?
	    " gone" : " live", s.state);
	if (did != NULL && (strcmp(did, "requeued") == 0 ||
	    strcmp(did, "discarded") == 0 || strcmp(did, "cancelled") == 0)) {
		const char *n = console_query(r, "n");
		buf_printf(b, "<p class=\"note\" id=\"did\">%s %lld row%s.</p>",
		    did, n ? atoll(n) : 0LL, n && atoll(n) == 1 ? "" : "s");
	}
	console_row_actions(b, r, &s, key.data, key.len);
	console_row_running(b, &s, lv);
	console_row_view(b, "The select", &s.sel, "select");
	if (s.running != NULL && s.sel.read && s.sel.rs.nrows > 0)
		buf_puts(b, "<p class=\"muted\">As before the claim: a plain "
		    "read locks nothing.</p>");
	if (q->failed_select.text != NULL)
		console_row_view(b, "failed_select", &s.failed, "failed");
	console_row_runs(b, &s);
	console_row_find(b, q, NULL);
	console_page_end(b);
	row_story_free(&s);
	buf_free(&key);
}

/*
 * GET /api/queue/NAME/row?key_hex=HEX | ?key=TEXT[&hex=1]: the story as
 * `rowq show --json` gives it (row_story_json).
 */
void
console_row_api(struct console_request *r, struct console_reply *rep,
    const struct queue *q)
{
	struct buf key = { 0 };
	struct row_story s;
	const struct live *lv;

	if (console_row_asked(r, &key) == -1) {
		console_reply_text(rep, 400, "give a key: key=TEXT, or "
		    "key_hex=HEX (its bytes)");
		buf_free(&key);
		return;
	}
	if (console_row_read(r, rep, q, &key, &s, &lv) == -1) {
		buf_free(&key);
		return;
	}
	row_story_json(&rep->body, q->name, key.data, key.len, &s, lv);
	buf_putc(&rep->body, '\n');
	rep->type = "application/json";
	row_story_free(&s);
	buf_free(&key);
}
