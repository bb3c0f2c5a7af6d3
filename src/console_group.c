/*
 * console_group.c: a queue's groups on its console page, and
 * /api/queue/NAME/groups: what `rowq status QUEUE --by` shows
 * (status_group.c), read the same way (a plain read, no lock, at most
 * STATUS_GROUP_SCAN rows grouped, STATUS_GROUP_LIMIT groups shown), with
 * the running rows of this console's daemon and those the other daemons'
 * rows of the daemons table name (status_others.c), at most every
 * CONSOLE_DB_MS.
 * Every value escaped.
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

/* The other daemons RUN counts, and how fresh their figures are. */
static void
console_group_others(struct buf *b, const struct status_groups *gs)
{
	const struct status_others *o = &gs->others;

	if (!o->known) {
		buf_puts(b, " (the daemons table cannot be read: ");
		console_html(b, o->error);
		buf_puts(b, ")");
	} else if (o->counted > 0)
		buf_printf(b, ", and those of %ld other daemon%s, as of %s "
		    "last heartbeat, %llds ago at most", o->counted,
		    o->counted == 1 ? "" : "s", o->counted == 1 ? "its" :
		    "their", o->oldest_s);
	if (o->blind > 0)
		buf_printf(b, "; %ld other daemon%s without running groups in "
		    "the daemons table not counted", o->blind,
		    o->blind == 1 ? "" : "s");
}

/* What Done counted (status_group_done.c), where the queue keeps runs. */
static void
console_group_done(struct buf *b, const struct queue *q,
    const struct status_groups *gs)
{
	struct buf note = { 0 };

	if (!q->runs.enabled)
		return;
	status_group_done_note(&note, q, gs);
	buf_puts(b, "<p class=\"muted\" id=\"groups-done\">Done: ");
	console_html(b, note.data);
	buf_puts(b, ".</p>");
	buf_free(&note);
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
	    "locks.  Run: the rows this daemon's workers are on");
	console_group_others(b, gs);
	buf_puts(b, ".</p>");
	buf_printf(b, "<table id=\"groups\"><tr><th>Group</th><th class=\"n\">"
	    "Wait</th><th class=\"n\">Run</th><th class=\"n\">Failed</th>"
	    "<th class=\"n\">Oldest</th>%s</tr>\n", q->runs.enabled ?
	    "<th class=\"n\">Done</th>" : "");
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
		buf_puts(b, "</td>");
		if (q->runs.enabled)
			console_group_num(b, g->done);
		buf_puts(b, "</tr>\n");
	}
	buf_puts(b, "</table>");
	console_group_done(b, q, gs);
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
 * The last read of each queue's groups, kept CONSOLE_DB_MS as the
 * console's other figures are: pages that reload themselves, however
 * many, cost the database one grouping read per queue that often.
 */
struct console_groups_cache {
	struct status_groups	*gs;		/* one per queue of the config */
	int64_t			*read_ms;	/* now_ms; 0: never */
	bool			*ok;
};

/* q's groups (q in c's configuration), or NULL: they cannot be read. */
static const struct status_groups *
console_groups_get(struct console *c, const struct queue *q)
{
	struct console_groups_cache *g = c->groups;
	size_t k = (size_t)(q - c->cfg->queues);
	int64_t now = now_ms();
	struct db *db;

	if (g == NULL) {
		g = c->groups = xcalloc(1, sizeof(*g));
		g->gs = xcalloc(c->cfg->nqueues, sizeof(*g->gs));
		g->read_ms = xcalloc(c->cfg->nqueues, sizeof(*g->read_ms));
		g->ok = xcalloc(c->cfg->nqueues, sizeof(*g->ok));
	}
	if (g->read_ms[k] != 0 && now - g->read_ms[k] < CONSOLE_DB_MS)
		return g->ok[k] ? &g->gs[k] : NULL;
	status_group_free(&g->gs[k]);
	g->ok[k] = (db = console_db(c)) != NULL &&
	    status_group_read(db, c->cfg, q, &console_live_view(c)->live,
	    STATUS_GROUP_LIMIT, &g->gs[k]) == 0;
	g->read_ms[k] = now;
	return g->ok[k] ? &g->gs[k] : NULL;
}

/*
 * The queue's groups, as a section of its page: nothing without
 * group_by:, a line that says so when they cannot be read.
 */
void
console_groups(struct console *c, struct buf *b, const struct queue *q)
{
	const struct status_groups *gs;

	if (q->group_by.name == NULL)
		return;
	buf_puts(b, "<h2 id=\"groups-heading\">Groups by ");
	console_html(b, q->group_by.name);
	buf_puts(b, "</h2>");
	if ((gs = console_groups_get(c, q)) == NULL)
		buf_puts(b, "<p class=\"bad\">The groups cannot be read: the "
		    "database does not answer, or the daemon's log says why."
		    "</p>");
	else
		console_group_rows(b, q, gs);
}

/* /api/queue/NAME/groups: status --by --json. */
void
console_groups_api(struct console_request *r, struct console_reply *rep,
    const struct queue *q)
{
	const struct status_groups *gs;

	if (q->group_by.name == NULL) {
		console_reply_text(rep, 404, "this queue has no group_by");
		return;
	}
	if ((gs = console_groups_get(r->c, q)) == NULL) {
		console_reply_text(rep, 503, "the groups cannot be read");
		return;
	}
	status_group_json(&rep->body, q, gs);
	rep->type = "application/json";
}
