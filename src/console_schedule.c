/*
 * console_schedule.c: the Schedules page, what `rowq schedules` and
 * `rowq schedule runs` say: each schedule's expression, zone, last and
 * next slot and pause, and for one that names its queue (queue:) its
 * latest slots, each with the row it inserted (a link to the row's page)
 * and what became of it (schedule_runs.c).  Plain reads, which lock
 * nothing; every value escaped.
 */
#include "rowq.h"
#include "console.h"
#include "db.h"
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

/* A schedule's slots shown. */
#define CONSOLE_SLOTS	10

static void
console_schedule_cell(struct buf *b, const char *text, const char *cls)
{
	buf_printf(b, "<td%s%s%s>", cls ? " class=\"" : "", cls ? cls : "",
	    cls ? "\"" : "");
	console_html(b, text);
	buf_puts(b, "</td>");
}

/* One schedule's latest slots, as a table. */
static void
console_schedule_slots(struct buf *b, const struct schedule_slots *l)
{
	char shown[sizeof(((struct schedule_slot_text *)0)->shown)];
	char late[32], dur[32];

	buf_puts(b, "<table class=\"slots\"><tr><th>Slot</th><th class=\"n\">"
	    "Late</th><th>Row</th><th>State</th><th class=\"n\">Tries</th>"
	    "<th>First try</th><th>Outcome</th><th class=\"n\">Duration</th>"
	    "</tr>\n");
	for (size_t i = 0; i < l->n; i++) {
		const struct slot_story *ss = &l->slot[i];
		const char *state = schedule_slot_state(ss);
		schedule_shown(l->s, schedule_slot_unix(ss), shown,
		    sizeof(shown));
		duration_format(atoll(runs_v(ss->slot, S_LATE)), late,
		    sizeof(late));
		buf_puts(b, "<tr>");
		console_schedule_cell(b, shown, NULL);
		console_schedule_cell(b, late, "n");
		buf_puts(b, "<td>");
		if (ss->read)
			console_row_link(b, l->q->name,
			    ss->slot->value[S_KEY], ss->slot->len[S_KEY],
			    ss->slot->value[S_KEY], ss->slot->len[S_KEY]);
		else
			buf_puts(b, "-");
		/* The colours of the row page's state: done green, failed red. */
		buf_printf(b, "</td><td><span class=\"tag%s\">",
		    strcmp(state, "done") == 0 ? " live" : strcmp(state,
		    "failed") == 0 || strcmp(state, "cancelled") == 0 ||
		    strcmp(state, "gone") == 0 ? " gone" : "");
		console_html(b, state);
		buf_printf(b, "</span></td><td class=\"n\">%zu</td>", ss->tries);
		console_schedule_cell(b, ss->first ? runs_v(ss->first,
		    R_STARTED) : "-", NULL);
		if (ss->last != NULL)
			duration_format(atoll(runs_v(ss->last, R_DURATION)), dur,
			    sizeof(dur));
		console_schedule_cell(b, ss->last ? runs_v(ss->last,
		    R_OUTCOME) : "-", NULL);
		console_schedule_cell(b, ss->last ? dur : "-", "n");
		buf_puts(b, "</tr>\n");
	}
	buf_puts(b, "</table>");
}

/* The heading of one schedule: its times, and its pause. */
static void
console_schedule_head(struct buf *b, const struct schedule_row *r)
{
	char last[sizeof(((struct schedule_slot_text *)0)->shown)];
	char next[sizeof(last)];

	schedule_shown(r->s, r->last_inserted, last, sizeof(last));
	schedule_shown(r->s, r->next, next, sizeof(next));
	buf_puts(b, "<h2 id=\"schedule-");
	console_html(b, r->s->name);
	buf_puts(b, "\">");
	console_html(b, r->s->name);
	buf_puts(b, "</h2><p>");
	console_html(b, r->s->every_s > 0 ? "every " : "cron ");
	console_html(b, r->s->expr);
	buf_puts(b, ", ");
	console_html(b, r->s->timezone);
	buf_puts(b, "; last slot ");
	console_html(b, last);
	if (r->pause != NULL) {
		buf_puts(b, "; <span class=\"tag paused\">paused</span> since ");
		console_html(b, r->pause->since);
		if (*r->pause->reason) {
			buf_puts(b, ": ");
			console_html(b, r->pause->reason);
		}
	} else {
		buf_puts(b, "; next slot ");
		console_html(b, next);
	}
	buf_puts(b, "</p>");
}

/* GET /schedules */
void
console_schedules_page(struct console_request *r, struct console_reply *rep)
{
	const struct config *cfg = r->c->cfg;
	const struct console_view *v = console_live_view(r->c);
	struct buf *b = &rep->body;
	struct db *db = console_db(r->c);
	struct schedule_list l = { 0 };

	console_page_begin(b, r, "Schedules", true);
	buf_puts(b, "<h1>Schedules</h1>");
	if (cfg->nschedules == 0)
		buf_puts(b, "<p class=\"muted\">No schedules.</p>");
	if (cfg->nschedules > 0 && (db == NULL ||
	    schedule_list_read(db, cfg, &l, NULL) == -1)) {
		buf_puts(b, "<p class=\"bad\">The schedules cannot be read: ");
		console_html(b, db != NULL ? db_error(db) : "no database");
		buf_puts(b, "</p>");
	}
	for (size_t i = 0; i < l.n; i++) {
		struct schedule_slots slots;
		console_schedule_head(b, &l.row[i]);
		if (l.row[i].s->queue == NULL) {
			buf_puts(b, "<p class=\"muted\">Its slots' rows are not "
			    "followed: it names no queue (queue:).</p>");
			continue;
		}
		if (schedule_slots_read(&slots, db, cfg, &l.row[i],
		    CONSOLE_SLOTS, &v->live) == -1) {
			buf_puts(b, "<p class=\"bad\">Its queue's run log cannot "
			    "be read: ");
			console_html(b, db_error(db));
			buf_puts(b, "</p>");
		} else if (slots.n == 0)
			buf_puts(b, "<p class=\"muted\">No slot in the run log "
			    "yet.</p>");
		else
			console_schedule_slots(b, &slots);
		schedule_slots_free(&slots);
	}
	buf_puts(b, "<p class=\"muted\">Times in each schedule's zone; a "
	    "slot's row and its tries from the run log of the queue it feeds; "
	    "running: on this daemon.</p>");
	console_page_end(b);
	schedule_list_free(&l);
}
