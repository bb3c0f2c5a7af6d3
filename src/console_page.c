/*
 * console_page.c: the console's pages and what they post: the login,
 * Queues, a queue, Daemons, Actions, the JSON under /api/, and the
 * queue's pause, resume and wake (the failed rows are console_failed.c's,
 * a row's page console_row.c's).
 * Each page is HTML written on the server, every value escaped
 * (console_html), in the words `rowq status` uses.
 *
 * An action is the operator's only: a viewer's POST is refused (403),
 * as is one without the session's CSRF token (console_http.c).  Each is
 * logged to the journal, who did what to which queue, and kept for the
 * Actions page.
 */
#include "rowq.h"
#include "console.h"
#include "db.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* A queue's first rows shown, and its failures. */
#define CONSOLE_NEXT_ROWS	10
#define CONSOLE_LATEST_FAILED	5

/* ---- small pieces ---- */

static void
console_age(struct buf *b, long long s)
{
	char d[32];

	if (s < 0) {
		buf_puts(b, "-");
		return;
	}
	duration_format(s * 1000, d, sizeof(d));
	buf_puts(b, d);
}

static void
console_when(struct buf *b, int64_t wall)
{
	char t[32];
	time_t secs = (time_t)(wall / 1000);
	struct tm tm;

	localtime_r(&secs, &tm);
	strftime(t, sizeof(t), "%Y-%m-%d %H:%M:%S", &tm);
	buf_puts(b, t);
}

/* The hidden field every form carries. */
void
console_csrf_field(struct buf *b, const struct console_request *r)
{
	buf_puts(b, "<input type=\"hidden\" name=\"csrf\" value=\"");
	console_html(b, r->session != NULL ? r->session->csrf : "");
	buf_puts(b, "\">");
}

/*
 * Note an action, who did what to which queue and how many rows (-1: an
 * action on the queue itself): the journal, and the Actions page.
 */
void
console_log_action(struct console_request *r, const char *what,
    const char *queue, long long rows, const char *detail)
{
	struct console *c = r->c;
	struct console_action *a = &c->actions[c->nactions++ %
	    CONSOLE_ACTIONS_MAX];

	if (rows >= 0)
		log_info("%s (%s, from %s) %s %s: %lld row%s%s%s", r->user,
		    console_role_name(r->role), r->client, what, queue, rows,
		    rows == 1 ? "" : "s", *detail ? "; " : "", detail);
	else
		log_info("%s (%s, from %s) %s %s%s%s", r->user,
		    console_role_name(r->role), r->client, what, queue,
		    *detail ? ": " : "", detail);
	memset(a, 0, sizeof(*a));
	a->wall_ms = wall_ms();
	snprintf(a->user, sizeof(a->user), "%s", r->user);
	snprintf(a->what, sizeof(a->what), "%s", what);
	snprintf(a->queue, sizeof(a->queue), "%s", queue);
	a->rows = rows;
	snprintf(a->detail, sizeof(a->detail), "%s", detail);
}

/* 303 to location (built by the caller: escaped parts only). */
void
console_redirect(struct console_reply *rep, const char *location)
{
	rep->status = 303;
	snprintf(rep->location, sizeof(rep->location), "%s", location);
}

void
console_not_found(struct console_request *r, struct console_reply *rep,
    const char *what)
{
	rep->status = 404;
	console_page_begin(&rep->body, r, "Not found", false);
	buf_puts(&rep->body, "<h1>Not found</h1><p>");
	console_html(&rep->body, what);
	buf_puts(&rep->body, "</p>");
	console_page_end(&rep->body);
}

/* The live line of kind for queue (NULL: any), or NULL. */
static const struct line *
console_live(const struct console_view *v, const char *kind,
    const char *queue)
{
	size_t i = 0;

	return status_live_find(&v->live, kind, queue, &i);
}

/* ---- login ---- */

static void
console_login_page(struct console_request *r, struct console_reply *rep,
    const char *message)
{
	struct buf *b = &rep->body;

	console_page_begin(b, r, "Log in", false);
	buf_puts(b, "<form class=\"login\" method=\"post\" action=\"/login\">"
	    "<h1>rowq console</h1>");
	if (message != NULL) {
		buf_puts(b, "<p class=\"bad\">");
		console_html(b, message);
		buf_puts(b, "</p>");
	}
	buf_puts(b, "<label for=\"user\">User</label><input type=\"text\" "
	    "id=\"user\" name=\"user\" autocomplete=\"username\" autofocus>"
	    "<label for=\"password\">Password</label><input type=\"password\" "
	    "id=\"password\" name=\"password\" "
	    "autocomplete=\"current-password\"><p><button type=\"submit\" "
	    "id=\"login\">Log in</button></p></form>");
	console_page_end(b);
}

static void
console_login_post(struct console_request *r, struct console_reply *rep)
{
	struct console *c = r->c;
	const char *name = console_form_get(&r->form, "user");
	const char *password = console_form_get(&r->form, "password");
	const struct console_user *u;
	struct console_session *s;
	int64_t wait;

	if (name == NULL)
		name = "";
	wait = console_throttle_wait(c->throttle, r->client, name, now_ms());
	if (wait > 0) {
		rep->status = 429;
		rep->retry_after_s = (long)(wait + 999) / 1000;
		console_login_page(r, rep, "Too many failed logins of this "
		    "name: wait a little, then try again.");
		return;
	}
	u = password != NULL ? console_login(&c->users, name, password) :
	    NULL;
	if (u == NULL) {
		console_throttle_failed(c->throttle, r->client, name, now_ms());
		log_warnx("login failed for %s from %s",
		    console_user_known(&c->users, name) ? name :
		    "an unknown name", r->client);
		rep->status = 403;
		console_login_page(r, rep, "Wrong user or password.");
		return;
	}
	console_throttle_passed(c->throttle, r->client, name, now_ms());
	if ((s = console_session_new(c->sessions, u, wall_ms())) == NULL) {
		console_reply_text(rep, 503, "no random bytes for a session");
		return;
	}
	log_info("%s (%s) logged in from %s", u->name,
	    console_role_name(u->role), r->client);
	console_reply_cookie(rep, c, s);
	console_redirect(rep, "/");
}

static void
console_logout(struct console_request *r, struct console_reply *rep)
{
	log_info("%s logged out", r->user);
	console_session_end(r->session);
	console_reply_cookie(rep, r->c, NULL);
	console_redirect(rep, "/login");
}

/* ---- Queues ---- */

/* The queue's state in words: paused, or running. */
static void
console_state(struct buf *b, const struct status_queue *sq)
{
	if (sq->pause != NULL) {
		buf_puts(b, "<span class=\"tag\" title=\"");
		console_html(b, sq->pause->reason);
		buf_puts(b, "\">paused</span>");
	} else
		buf_puts(b, "<span class=\"tag live\">running</span>");
	if (sq->alert || sq->alert_failed)
		buf_puts(b, " <span class=\"tag gone\">alert</span>");
}

/*
 * A queue's rows per minute over the last 60 seconds, from its history:
 * this minute's so far, and the part of the last minute's that falls in
 * the window.  False: no history.
 */
static bool
console_per_minute(const struct console *c, const char *queue,
    struct history_queue *h, struct history_minute *m)
{
	const struct history_minute *now, *last;
	int64_t wall = wall_ms(), minute = wall / 60000;
	double rest = 1.0 - (double)(wall % 60000) / 60000.0;

	if (c->history == NULL || !history_read(c->history, queue, h))
		return false;
	now = history_at(h, minute);
	last = history_at(h, minute - 1);
	memset(m, 0, sizeof(*m));
	if (now != NULL) {
		m->done = now->done;
		m->retried = now->retried;
		m->failed = now->failed;
	}
	if (last != NULL) {
		m->done += (uint32_t)(last->done * rest + 0.5);
		m->retried += (uint32_t)(last->retried * rest + 0.5);
		m->failed += (uint32_t)(last->failed * rest + 0.5);
	}
	return true;
}

static void
console_num_cell(struct buf *b, bool ok, long long n, const char *cls)
{
	if (ok && n >= 0)
		buf_printf(b, "<td class=\"n%s%s\">%lld</td>", cls ? " " : "",
		    cls ? cls : "", n);
	else
		buf_puts(b, "<td class=\"n muted\">?</td>");
}

static void
console_queues(struct console_request *r, struct console_reply *rep)
{
	const struct console_view *v = console_view(r->c);
	struct buf *b = &rep->body;
	int64_t minute = wall_ms() / 60000;

	console_page_begin(b, r, "Queues", true);
	buf_puts(b, "<h1>Queues</h1><table id=\"queues\"><tr><th>Queue</th>"
	    "<th>State</th><th class=\"n\">Ready</th><th class=\"n\">In "
	    "progress</th><th class=\"n\">Oldest</th><th class=\"n\">Failed "
	    "rows</th><th class=\"n\">Done/min</th><th class=\"n\">"
	    "Retried/min</th><th class=\"n\">Failed/min</th><th class=\"n\">"
	    "Workers</th><th>Last hour</th></tr>\n");
	for (size_t k = 0; k < v->n; k++) {
		const struct status_queue *sq = &v->q[k];
		const struct line *l = console_live(v, "queue", sq->q->name);
		struct history_queue h;
		struct history_minute m = { 0 };
		bool hist = console_per_minute(r->c, sq->q->name, &h, &m);

		buf_puts(b, "<tr><td><a href=\"");
		console_queue_href(b, sq->q->name, "");
		buf_puts(b, "\">");
		console_html(b, sq->q->name);
		buf_puts(b, "</a></td><td>");
		console_state(b, sq);
		buf_puts(b, "</td>");
		console_num_cell(b, sq->db_ok, sq->ready, NULL);
		console_num_cell(b, sq->db_ok, sq->in_progress, NULL);
		buf_printf(b, "<td class=\"n%s\">", sq->alert ? " bad" : "");
		if (sq->db_ok)
			console_age(b, sq->db.oldest_age_s);
		else
			buf_puts(b, "?");
		buf_puts(b, "</td>");
		console_num_cell(b, sq->db_ok, sq->db.failed,
		    sq->alert_failed ? "bad" : NULL);
		console_num_cell(b, hist, m.done, NULL);
		console_num_cell(b, hist, m.retried, NULL);
		console_num_cell(b, hist, m.failed, m.failed ? "bad" : NULL);
		/* The socket's text like any other: escaped. */
		if (l != NULL) {
			buf_puts(b, "<td class=\"n\">");
			console_html(b, status_live_value(l, "busy"));
			buf_putc(b, '/');
			console_html(b, status_live_value(l, "workers"));
			buf_puts(b, "</td>");
		} else
			buf_puts(b, "<td class=\"n muted\">-</td>");
		buf_puts(b, "<td>");
		if (hist)
			console_chart(b, &h, minute, true);
		buf_puts(b, "</td></tr>\n");
	}
	buf_puts(b, "</table>");
	if (console_live(v, "daemon", NULL) == NULL) {
		buf_puts(b, "<p class=\"note\">The daemon's own figures are "
		    "missing: ");
		console_html(b, v->live.error);
		buf_puts(b, "</p>");
	}
	buf_puts(b, "<p class=\"muted\">Ready, in progress, oldest and failed "
	    "rows: the database now; per minute: the last 60 seconds of "
	    "this daemon; workers: busy/running here.</p>");
	console_page_end(b);
}

/* ---- a queue ---- */

/*
 * Rows of a statement's result as a table, every value escaped; with
 * key_column, a box a row that posts its key; with link_queue, the cell
 * of link_column (NULL: the first column) a link to the row's page.
 */
void
console_rows_table(struct buf *b, const struct column *cols, size_t ncols,
    const struct rowset *rs, const char *key_column, const char *id,
    const char *link_queue, const char *link_column)
{
	buf_printf(b, "<table id=\"%s\"><tr>", id);
	if (key_column != NULL)
		buf_puts(b, "<th><input type=\"checkbox\" id=\"all\" "
		    "title=\"every row shown\"></th>");
	for (size_t c = 0; c < ncols; c++) {
		buf_puts(b, "<th>");
		console_html(b, cols[c].name);
		buf_puts(b, "</th>");
	}
	buf_puts(b, "</tr>\n");
	for (size_t i = 0; i < rs->nrows; i++) {
		const struct row *row = &rs->rows[i];
		buf_puts(b, "<tr>");
		/*
		 * The key's box posts its bytes in hex, never the text shown,
		 * which may look like another key (console_key_decode).
		 */
		for (size_t c = 0; key_column != NULL && c < ncols; c++)
			if (strcmp(cols[c].name, key_column) == 0) {
				buf_puts(b, "<td>");
				if (row->value[c] != NULL && row->len[c] > 0) {
					buf_puts(b, "<input type=\"checkbox\" "
					    "name=\"key_hex\" value=\"");
					buf_put_hex(b, row->value[c],
					    row->len[c]);
					buf_puts(b, "\">");
				}
				buf_puts(b, "</td>");
				break;
			}
		for (size_t c = 0; c < ncols; c++) {
			bool link = link_queue != NULL &&
			    row->value[c] != NULL && (link_column == NULL ?
			    c == 0 : strcasecmp(cols[c].name, link_column) ==
			    0);
			char n[32];
			buf_puts(b, "<td class=\"v\">");
			snprintf(n, sizeof(n), "(%zu bytes)", row->len[c]);
			if (row->value[c] == NULL)
				buf_puts(b, "<span class=\"muted\">NULL</span>");
			else if (link)
				console_row_link(b, link_queue, row->value[c],
				    row->len[c], cols[c].kind == COLUMN_BINARY ?
				    n : row->value[c], cols[c].kind ==
				    COLUMN_BINARY ? strlen(n) : row->len[c]);
			else if (cols[c].kind == COLUMN_BINARY)
				buf_puts(b, n);
			else
				console_html_n(b, row->value[c], row->len[c]);
			buf_puts(b, "</td>");
		}
		buf_puts(b, "</tr>\n");
	}
	buf_puts(b, "</table>");
}

/*
 * A plain read of sql (no parameters) with LIMIT n, shown as a table;
 * the database's error, shown, when it fails.
 */
static void
console_read_table(struct console *c, struct buf *b, const char *sql,
    int n, const char *id, const char *link_queue, const char *link_column)
{
	struct db *db = console_db(c);
	struct buf q = { 0 };
	struct rowset rs = { 0 };
	struct db_stmt *s = NULL;
	const struct column *cols = NULL;
	size_t ncols = 0;
	enum db_status st;

	if (db == NULL) {
		buf_puts(b, "<p class=\"bad\">The database does not answer."
		    "</p>");
		return;
	}
	buf_printf(&q, "%s\nLIMIT %d", sql, n);
	if ((s = db_prepare(db, q.data, &st)) != NULL) {
		cols = db_stmt_columns(s, &ncols);
		st = db_stmt_fetch_all(s, NULL, 0, &rs);
	}
	if (s == NULL || st != DB_OK) {
		buf_puts(b, "<p class=\"bad\">");
		console_html(b, db_error(db));
		buf_puts(b, "</p>");
	} else if (rs.nrows == 0)
		buf_puts(b, "<p class=\"muted\">None.</p>");
	else
		console_rows_table(b, cols, ncols, &rs, NULL, id, link_queue,
		    link_column);
	rowset_free(&rs, ncols);
	db_stmt_free(s);
	buf_free(&q);
}

static void
console_workers(struct console *c, struct buf *b, const struct console_view *v,
    const struct queue *q)
{
	const char *queue = q->name;
	const struct line *w;
	size_t i = 0;
	bool any = false;
	int binary = -1;

	buf_puts(b, "<table id=\"workers\"><tr><th>Worker</th><th>Pid</th>"
	    "<th>State</th><th>Row</th><th class=\"n\">Try</th><th>For</th>"
	    "</tr>\n");
	while ((w = status_live_find(&v->live, "worker", queue, &i)) != NULL) {
		any = true;
		buf_puts(b, "<tr><td>");
		console_html(b, queue);
		buf_putc(b, '/');
		console_html(b, status_live_value(w, "number"));
		buf_puts(b, "</td><td>");
		console_html(b, status_live_value(w, "pid"));
		buf_puts(b, "</td><td>");
		console_html(b, status_live_value(w, "state"));
		if (strcmp(status_live_value(w, "retiring"), "1") == 0)
			buf_puts(b, " (retiring)");
		buf_puts(b, "</td><td class=\"v\">");
		console_row_status_link(c, b, q, status_live_value(w, "key"),
		    &binary);
		buf_puts(b, "</td><td class=\"n\">");
		console_html(b, status_live_value(w, "attempt"));
		buf_puts(b, "</td><td>");
		console_age(b, atoll(status_live_value(w, "for")));
		buf_puts(b, "</td></tr>\n");
	}
	buf_puts(b, "</table>");
	if (!any)
		buf_puts(b, "<p class=\"muted\">No worker of this daemon.</p>");
}

static void
console_statement(struct buf *b, const char *name, const struct sql *sql)
{
	if (sql->text == NULL)
		return;
	buf_puts(b, "<h3>");
	console_html(b, name);
	buf_puts(b, "</h3><pre>");
	console_html(b, sql->text);
	buf_puts(b, "</pre>");
}

static void
console_queue_actions(struct buf *b, const struct console_request *r,
    const struct status_queue *sq)
{
	const char *name = sq->q->name;

	if (r->role != CONSOLE_OPERATOR || r->session == NULL)
		return;
	buf_puts(b, "<div class=\"bar\">");
	buf_puts(b, "<form method=\"post\" action=\"");
	console_queue_href(b, name, sq->pause ? "/resume" : "/pause");
	buf_puts(b, "\">");
	console_csrf_field(b, r);
	if (sq->pause != NULL)
		buf_puts(b, "<button type=\"submit\" id=\"resume\">Resume"
		    "</button>");
	else
		buf_puts(b, "<input type=\"text\" name=\"reason\" "
		    "placeholder=\"reason\" maxlength=\"1000\"> <button "
		    "type=\"submit\" id=\"pause\">Pause</button>");
	buf_puts(b, "</form><form method=\"post\" action=\"");
	console_queue_href(b, name, "/wake");
	buf_puts(b, "\">");
	console_csrf_field(b, r);
	buf_puts(b, "<button type=\"submit\" id=\"wake\">Wake</button></form>"
	    "</div>");
}

static void
console_queue(struct console_request *r, struct console_reply *rep,
    const struct status_queue *sq)
{
	const struct console_view *v = console_view(r->c);
	const struct queue *q = sq->q;
	struct buf *b = &rep->body;
	struct history_queue h;

	console_page_begin(b, r, q->name, true);
	buf_puts(b, "<h1>Queue ");
	console_html(b, q->name);
	buf_puts(b, " ");
	console_state(b, sq);
	buf_puts(b, "</h1>");
	if (sq->pause != NULL) {
		buf_puts(b, "<p class=\"note\">Paused since ");
		console_html(b, sq->pause->since);
		if (*sq->pause->reason) {
			buf_puts(b, ": ");
			console_html(b, sq->pause->reason);
		}
		buf_puts(b, "</p>");
	}
	console_queue_actions(b, r, sq);
	buf_puts(b, "<table id=\"figures\"><tr><th class=\"n\">Ready</th>"
	    "<th class=\"n\">In progress</th><th class=\"n\">Oldest</th>"
	    "<th class=\"n\">Failed rows</th></tr><tr>");
	console_num_cell(b, sq->db_ok, sq->ready, NULL);
	console_num_cell(b, sq->db_ok, sq->in_progress, NULL);
	buf_puts(b, "<td class=\"n\">");
	console_age(b, sq->db_ok ? sq->db.oldest_age_s : -1);
	buf_puts(b, "</td>");
	console_num_cell(b, sq->db_ok, sq->db.failed, NULL);
	buf_puts(b, "</tr></table>");
	console_row_find(b, q, NULL);
	buf_puts(b, "<h2>The last hour</h2>");
	if (r->c->history != NULL && history_read(r->c->history, q->name, &h))
		console_chart(b, &h, wall_ms() / 60000, false);
	else
		buf_puts(b, "<p class=\"muted\">No history yet.</p>");
	buf_puts(b, "<h2>In progress on this daemon</h2>");
	console_workers(r->c, b, v, q);
	console_groups(r->c, b, q);
	buf_printf(b, "<h2>The next rows (the first %d its select finds, read "
	    "without locks)</h2>", CONSOLE_NEXT_ROWS);
	console_read_table(r->c, b, q->select.positional, CONSOLE_NEXT_ROWS,
	    "next", q->name, q->key_column);
	if (q->failed_select.text != NULL) {
		buf_puts(b, "<h2>Latest failures <a href=\"");
		console_queue_href(b, q->name, "/failed");
		buf_puts(b, "\" id=\"failed-link\">(all failed rows)</a></h2>");
		console_read_table(r->c, b, q->failed_select.positional,
		    CONSOLE_LATEST_FAILED, "latest-failed", q->name, NULL);
	}
	buf_puts(b, "<h2>Statements</h2>");
	console_statement(b, "select", &q->select);
	console_statement(b, "done", &q->done);
	console_statement(b, "retry.update", &q->retry.update);
	console_statement(b, "failed", &q->failed);
	console_statement(b, "failed_select", &q->failed_select);
	console_statement(b, "requeue", &q->requeue);
	console_statement(b, "discard", &q->discard);
	console_page_end(b);
}

/* POST /queue/NAME/pause, resume, wake. */
static void
console_queue_post(struct console_request *r, struct console_reply *rep,
    const struct status_queue *sq, const char *what)
{
	const char *name = sq->q->name;
	const char *reason = console_form_get(&r->form, "reason");
	struct buf back = { 0 };
	struct db *db;
	int changed = 0;

	if (strcmp(what, "wake") == 0) {
		wake_send(r->c->cfg, name);
		console_log_action(r, "woke", name, -1, "");
	} else if ((db = console_db(r->c)) == NULL) {
		console_reply_text(rep, 503, "the database does not answer");
		return;
	} else {
		bool pause = strcmp(what, "pause") == 0;
		if (pause && reason != NULL && strlen(reason) > PAUSE_REASON_MAX) {
			console_reply_text(rep, 400, "the reason is longer than "
			    "1000 bytes");
			return;
		}
		changed = pause_change(db, r->c->cfg, name, pause ?
		    (reason != NULL ? reason : "") : NULL);
		if (changed == -1) {
			console_reply_text(rep, 500, db_error(db));
			return;
		}
		console_log_action(r, pause ? "paused" : "resumed", name, -1,
		    changed == 0 ? "it was already" : (pause && reason &&
		    *reason) ? reason : "");
		console_view_stale(r->c);
	}
	console_queue_href(&back, name, "");
	console_redirect(rep, back.data);
	buf_free(&back);
}

/* ---- Daemons, Actions ---- */

static void
console_daemons(struct console_request *r, struct console_reply *rep)
{
	struct buf *b = &rep->body;
	struct heartbeat_rows rows = { 0 };
	struct db *db = console_db(r->c);
	int rc = db != NULL ? heartbeat_read(db, r->c->cfg, &rows) : -1;

	console_page_begin(b, r, "Daemons", true);
	buf_puts(b, "<h1>Daemons</h1>");
	if (rc == -1) {
		buf_puts(b, "<p class=\"bad\">The daemons table cannot be read: ");
		console_html(b, db != NULL ? db_error(db) : "no database");
		buf_puts(b, "</p>");
	}
	buf_puts(b, "<table id=\"daemons\"><tr><th>Host</th><th class=\"n\">"
	    "Pid</th><th>Version</th><th>Started</th><th class=\"n\">"
	    "Busy/workers</th><th>Console</th><th>Last seen</th><th>State"
	    "</th></tr>\n");
	for (size_t i = 0; i < rows.n; i++) {
		const struct heartbeat_row *d = &rows.row[i];
		bool gone = d->seen_ago_s * 1000 > (long long)HEARTBEAT_EVERY_MS *
		    HEARTBEAT_GONE_INTERVALS;
		buf_puts(b, "<tr><td>");
		console_html(b, d->host);
		buf_printf(b, "</td><td class=\"n\">%ld</td><td>", d->pid);
		console_html(b, d->version);
		buf_puts(b, "</td><td>");
		console_html(b, d->started);
		buf_printf(b, "</td><td class=\"n\">%ld/%ld</td><td>", d->busy,
		    d->workers);
		console_html(b, d->console);
		buf_puts(b, "</td><td>");
		console_age(b, d->seen_ago_s);
		buf_printf(b, " ago</td><td><span class=\"tag %s\">%s</span>"
		    "</td></tr>\n", gone ? "gone" : "live", gone ? "gone" :
		    "live");
	}
	buf_puts(b, "</table><p class=\"muted\">Every daemon with console: "
	    "writes its row every 10 s; one unseen for 30 s is gone, and its "
	    "row is removed after a day.</p>");
	console_page_end(b);
	heartbeat_rows_free(&rows);
}

static void
console_actions(struct console_request *r, struct console_reply *rep)
{
	struct console *c = r->c;
	struct buf *b = &rep->body;
	size_t n = c->nactions < CONSOLE_ACTIONS_MAX ? c->nactions :
	    CONSOLE_ACTIONS_MAX;

	console_page_begin(b, r, "Actions", false);
	buf_puts(b, "<h1>Actions</h1>");
	if (r->role == CONSOLE_OPERATOR)
		buf_puts(b, "<p>Pause, resume and wake a queue from its page; "
		    "requeue and discard from its failed rows or a failed "
		    "row's page.</p>");
	else
		buf_puts(b, "<p>A viewer sees; an operator acts.</p>");
	buf_puts(b, "<h2>Done through this console since it started</h2>"
	    "<table id=\"actions\"><tr><th>When</th><th>Who</th><th>What</th>"
	    "<th>Queue</th><th class=\"n\">Rows</th><th>Detail</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct console_action *a = &c->actions[(c->nactions - 1 -
		    i) % CONSOLE_ACTIONS_MAX];
		buf_puts(b, "<tr><td>");
		console_when(b, a->wall_ms);
		buf_puts(b, "</td><td>");
		console_html(b, a->user);
		buf_puts(b, "</td><td>");
		console_html(b, a->what);
		buf_puts(b, "</td><td>");
		console_html(b, a->queue);
		if (a->rows >= 0)
			buf_printf(b, "</td><td class=\"n\">%lld</td>",
			    a->rows);
		else
			buf_puts(b, "</td><td></td>");
		buf_puts(b, "<td class=\"v\">");
		console_html(b, a->detail);
		buf_puts(b, "</td></tr>\n");
	}
	buf_puts(b, "</table><p class=\"muted\">Every action is in the "
	    "journal too.</p>");
	console_page_end(b);
}

/* ---- /api/ ---- */

static void
console_api_daemons(struct console_request *r, struct console_reply *rep)
{
	struct heartbeat_rows rows = { 0 };
	struct db *db = console_db(r->c);
	struct buf *b = &rep->body;

	if (db == NULL || heartbeat_read(db, r->c->cfg, &rows) == -1) {
		console_reply_text(rep, 503, db ? db_error(db) :
		    "the database does not answer");
		return;
	}
	buf_puts(b, "{\"daemons\":[");
	for (size_t i = 0; i < rows.n; i++) {
		const struct heartbeat_row *d = &rows.row[i];
		buf_puts(b, i ? ",{\"host\":" : "{\"host\":");
		json_string(b, d->host, strlen(d->host));
		buf_printf(b, ",\"pid\":%ld,\"version\":", d->pid);
		json_string(b, d->version, strlen(d->version));
		buf_puts(b, ",\"started\":");
		json_string(b, d->started, strlen(d->started));
		buf_printf(b, ",\"busy\":%ld,\"workers\":%ld,\"console\":",
		    d->busy, d->workers);
		json_string(b, d->console, strlen(d->console));
		buf_printf(b, ",\"seen_seconds_ago\":%lld,\"gone\":%s}",
		    d->seen_ago_s, d->seen_ago_s * 1000 >
		    (long long)HEARTBEAT_EVERY_MS * HEARTBEAT_GONE_INTERVALS ?
		    "true" : "false");
	}
	buf_puts(b, "]}\n");
	rep->type = "application/json";
	heartbeat_rows_free(&rows);
}

/* /api/status, and /api/queue/NAME: the shape of `rowq status --json`. */
static void
console_api_status(struct console_request *r, struct console_reply *rep,
    const struct status_queue *one)
{
	const struct console_view *v = console_view(r->c);

	status_json(&rep->body, one != NULL ? one : v->q, one != NULL ? 1 :
	    v->n, &v->live, &v->link, NULL);
	rep->type = "application/json";
}

/* ---- routing ---- */

/* The queue named at path (up to '/' or the end), and what follows. */
static const struct status_queue *
console_path_queue(struct console *c, const char *path, const char **rest)
{
	const struct console_view *v = console_view(c);
	const char *slash = strchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : strlen(path);

	*rest = path + n;
	for (size_t k = 0; k < v->n; k++)
		if (strlen(v->q[k].q->name) == n &&
		    strncmp(v->q[k].q->name, path, n) == 0)
			return &v->q[k];
	return NULL;
}

static bool
console_is(const struct console_request *r, const char *method,
    const char *path)
{
	return strcmp(r->path, path) == 0 && (strcmp(r->method, method) == 0 ||
	    (strcmp(method, "GET") == 0 && strcmp(r->method, "HEAD") == 0));
}

static void
console_static(struct console_reply *rep, const char *text, const char *type)
{
	buf_puts(&rep->body, text);
	rep->type = type;
	rep->cacheable = true;
}

/* The queue's pages: /queue/NAME[/failed|/row|/search|/pause|/resume|/wake]. */
static void
console_route_queue(struct console_request *r, struct console_reply *rep,
    const char *path, bool api)
{
	const char *rest;
	const struct status_queue *sq = console_path_queue(r->c, path, &rest);
	bool post = strcmp(r->method, "POST") == 0;

	if (sq == NULL) {
		console_not_found(r, rep, "No queue of that name here.");
		return;
	}
	if (post && r->role != CONSOLE_OPERATOR) {
		console_reply_text(rep, 403, "a viewer cannot act: an operator "
		    "can");
		return;
	}
	if (api && !post && *rest == '\0')
		console_api_status(r, rep, sq);
	else if (api && !post && strcmp(rest, "/failed") == 0)
		console_failed_api(r, rep, sq->q);
	else if (api && !post && strcmp(rest, "/groups") == 0)
		console_groups_api(r, rep, sq->q);
	else if (api && !post && strcmp(rest, "/row") == 0)
		console_row_api(r, rep, sq->q);
	else if (api)
		console_not_found(r, rep, "No such API.");
	else if (*rest == '\0' && !post)
		console_queue(r, rep, sq);
	else if (strcmp(rest, "/failed") == 0)
		(post ? console_failed_post : console_failed_page)(r, rep, sq->q);
	else if (strcmp(rest, "/row") == 0 && !post)
		console_row_page(r, rep, sq->q);
	else if (strcmp(rest, "/search") == 0 && !post)
		console_search_page(r, rep, sq->q);
	else if (post && (strcmp(rest, "/pause") == 0 ||
	    strcmp(rest, "/resume") == 0 || strcmp(rest, "/wake") == 0))
		console_queue_post(r, rep, sq, rest + 1);
	else
		console_not_found(r, rep, "No such page.");
}

/* Every request that passed console_http.c's checks comes here. */
void
console_route(struct console_request *r, struct console_reply *rep)
{
	bool post = strcmp(r->method, "POST") == 0;

	if (console_is(r, "GET", "/static/console.css"))
		console_static(rep, console_css, "text/css; charset=utf-8");
	else if (console_is(r, "GET", "/static/console.js"))
		console_static(rep, console_js,
		    "text/javascript; charset=utf-8");
	else if (console_is(r, "GET", "/login"))
		console_login_page(r, rep, NULL);
	else if (console_is(r, "POST", "/login"))
		console_login_post(r, rep);
	else if (console_is(r, "POST", "/logout"))
		console_logout(r, rep);
	else if (console_is(r, "GET", "/"))
		console_queues(r, rep);
	else if (console_is(r, "GET", "/daemons"))
		console_daemons(r, rep);
	else if (console_is(r, "GET", "/schedules"))
		console_schedules_page(r, rep);
	else if (console_is(r, "GET", "/actions"))
		console_actions(r, rep);
	else if (console_is(r, "GET", "/api/status"))
		console_api_status(r, rep, NULL);
	else if (console_is(r, "GET", "/api/daemons"))
		console_api_daemons(r, rep);
	else if (strncmp(r->path, "/queue/", 7) == 0)
		console_route_queue(r, rep, r->path + 7, false);
	else if (strncmp(r->path, "/api/queue/", 11) == 0 && !post)
		console_route_queue(r, rep, r->path + 11, true);
	else
		console_not_found(r, rep, "No such page.");
	/*
	 * No transaction, and so no metadata lock, outlives a request; one
	 * that read nothing costs the server nothing.
	 */
	if (r->c->db != NULL && r->c->db_used)
		(void)db_rollback(r->c->db);
	r->c->db_used = false;
}
