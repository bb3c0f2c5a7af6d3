/*
 * console_group.c: a queue's groups on its console page, and
 * /api/queue/NAME/groups: what `rowq status QUEUE --by` shows
 * (status_group.c), read the same way (a plain read, no lock, at most
 * STATUS_GROUP_SCAN rows grouped, STATUS_GROUP_LIMIT groups shown), with
 * the running rows of this console's daemon.  Every value escaped.
 */
#include "console.h"
#include "db.h"
#include "commands.h"

#include <string.h>

static void
console_group_num(struct buf *b, long n)
{
	buf_puts(b, "<td class=\"n\">");
	if (n < 0)
		buf_puts(b, "-");
	else
		buf_printf(b, "%ld", n);
	buf_puts(b, "</td>");
}

static void
console_group_rows(struct buf *b, const struct queue *q,
    const struct status_groups *gs)
{
	char age[32];

	buf_printf(b, "<p class=\"muted\" id=\"groups-summary\">%zu of %ld "
	    "group%s by ", gs->n, gs->total, gs->total == 1 ? "" : "s");
	console_html(b, q->group_by.name);
	buf_puts(b, ", running ones first, then the most rows; read without "
	    "locks.  Run: the rows this daemon's workers are on.</p>");
	buf_puts(b, "<table id=\"groups\"><tr><th>Group</th><th class=\"n\">"
	    "Wait</th><th class=\"n\">Run</th><th class=\"n\">Failed</th>"
	    "<th class=\"n\">Oldest</th></tr>\n");
	for (size_t i = 0; i < gs->n; i++) {
		const struct status_group *g = &gs->g[i];
		buf_puts(b, "<tr><td class=\"v\">");
		if (g->value != NULL)
			console_html(b, g->value);
		else
			buf_puts(b, "<span class=\"muted\">NULL</span>");
		buf_puts(b, "</td>");
		console_group_num(b, g->wait);
		console_group_num(b, g->run);
		console_group_num(b, g->failed);
		buf_puts(b, "<td class=\"n\">");
		if (g->oldest_age_s < 0)
			buf_puts(b, "-");
		else {
			duration_format(g->oldest_age_s * 1000, age,
			    sizeof(age));
			buf_puts(b, age);
		}
		buf_puts(b, "</td></tr>\n");
	}
	buf_puts(b, "</table>");
	if ((long)gs->n < gs->total) {
		buf_printf(b, "<p class=\"note\" id=\"groups-left-out\">%ld "
		    "group%s left out (<code>rowq status ", gs->total -
		    (long)gs->n, gs->total - (long)gs->n == 1 ? "" : "s");
		console_html(b, q->name);
		buf_puts(b, " --by --limit N</code> shows more).</p>");
	}
	if (gs->waiting >= STATUS_GROUP_SCAN || gs->failed >= STATUS_GROUP_SCAN)
		buf_printf(b, "<p class=\"note\">Counted over the first %d rows "
		    "of the select and of failed_select.</p>",
		    STATUS_GROUP_SCAN);
}

/*
 * The queue's groups, as a section of its page: nothing without
 * group_by:, the database's error when it cannot be read.
 */
void
console_groups(struct console *c, struct buf *b, const struct queue *q)
{
	const struct console_view *v = console_view(c);
	struct status_groups gs;
	struct db *db;

	if (q->group_by.name == NULL)
		return;
	buf_puts(b, "<h2 id=\"groups-heading\">Groups by ");
	console_html(b, q->group_by.name);
	buf_puts(b, "</h2>");
	if ((db = console_db(c)) == NULL) {
		buf_puts(b, "<p class=\"bad\">The database does not answer."
		    "</p>");
		return;
	}
	if (status_group_read(db, q, &v->live, STATUS_GROUP_LIMIT, &gs) == -1)
		buf_puts(b, "<p class=\"bad\">The groups cannot be read: the "
		    "daemon's log says why.</p>");
	else
		console_group_rows(b, q, &gs);
	status_group_free(&gs);
}

/* /api/queue/NAME/groups: status --by --json. */
void
console_groups_api(struct console_request *r, struct console_reply *rep,
    const struct queue *q)
{
	const struct console_view *v = console_view(r->c);
	struct status_groups gs;
	struct db *db;

	if (q->group_by.name == NULL) {
		console_reply_text(rep, 404, "this queue has no group_by");
		return;
	}
	if ((db = console_db(r->c)) == NULL ||
	    status_group_read(db, q, &v->live, STATUS_GROUP_LIMIT, &gs) == -1) {
		console_reply_text(rep, 503, "the groups cannot be read");
		return;
	}
	status_group_json(&rep->body, q, &gs);
	status_group_free(&gs);
	rep->type = "application/json";
}
