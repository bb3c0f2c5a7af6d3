/*
 * pause_watch.c: the daemon's side of a pause (pause.c).  The wake
 * watcher child (wake_watch.c) reads the pause table for the daemon, on
 * the connection it reads the queues with: each time it reads a queue, in
 * the same statement (the queue's probe and the pause table as one
 * UNION), and by itself when no queue was read for PAUSE_EVERY_MS.  So an
 * idle daemon pays no statement of its own for pauses beyond one a second
 * at most, a busy one none per claim, and no database call ever blocks the
 * supervisor: a watcher that hangs only delays the pause.  While the
 * table does not exist, the watcher looks for it by preparing its read
 * (a prepare runs nothing) every PAUSE_EVERY_MS, and tells the
 * supervisor that nothing is paused.
 *
 * A queue that becomes paused has its workers retired as a reload
 * retires old ones: each finishes its current row, commits and exits,
 * and none starts again until the queue is resumed.  At start-up the
 * workers wait for the first reading (at most PAUSE_FIRST_WAIT_MS), so
 * that a daemon started during a pause claims nothing; a database that
 * cannot be read keeps the last reading.
 */
#include "rowq.h"
#include "db.h"
#include "supervisor.h"
#include "claim.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>

#define PAUSE_FIRST_WAIT_MS	3000

/*
 * The pause table's name for the watcher's session, which has moved to
 * information_schema (wake_watch.c): with its database, unless it names
 * one itself or the configuration names none (an option file chooses
 * it, and the session stays there).
 */
static void
pause_probe_table(const struct config *cfg, struct buf *table)
{
	const char *t = pause_table(cfg);

	if (cfg->db.name == NULL || strchr(t, '.') != NULL) {
		buf_puts(table, t);
		return;
	}
	buf_putc(table, '`');
	for (const char *c = cfg->db.name; *c != '\0'; c++) {
		if (*c == '`')
			buf_putc(table, '`');
		buf_putc(table, *c);
	}
	buf_printf(table, "`.%s", t);
}

/* The read: the pauses live now, or every row of a table without --for. */
static void
pause_probe_read(struct pause_probe *pp)
{
	buf_reset(&pp->read);
	buf_printf(&pp->read, "SELECT queue FROM %s%s", pp->table.data,
	    pp->no_resume_at ? "" : " WHERE " PAUSE_LIVE);
}

void
pause_probe_init(struct pause_probe *pp, const struct config *cfg)
{
	memset(pp, 0, sizeof(*pp));
	pp->cfg = cfg;
	pause_probe_table(cfg, &pp->table);
	pause_probe_read(pp);
}

/*
 * On a new connection: prepare the table's own read, which also finds
 * out whether it is there.  -1: the database failed otherwise (logged
 * when it begins), and the connection is suspect.
 */
int
pause_probe_prepare(struct db *db, struct pause_probe *pp)
{
	enum db_status st;

	db_stmt_free(pp->stmt);
	if (pp->no_resume_at) {
		/* Looked for again: pause --for may have added it. */
		pp->no_resume_at = false;
		pause_probe_read(pp);
	}
	pp->stmt = db_prepare(db, pp->read.data, &st);
	if (pp->stmt == NULL && db_no_such_column(db)) {
		pp->no_resume_at = true;
		pause_probe_read(pp);
		pp->stmt = db_prepare(db, pp->read.data, &st);
	}
	if (pp->stmt != NULL || db_no_such_table(db)) {
		if (pp->stmt != NULL && pp->missing)
			log_info("found the pause table %s", pp->table.data);
		pp->missing = pp->stmt == NULL;
		return 0;
	}
	pause_probe_failed(db, pp);
	return -1;
}

/*
 * A queue's probe with the pause table's rows after its own, in out: the
 * probe's rows come as NULL, the paused queues by name (never NULL).
 * Empty when the table is not there: the probe alone, then.
 */
void
pause_probe_fold(const struct pause_probe *pp, const char *probe,
    struct buf *out)
{
	buf_reset(out);
	if (pp->stmt == NULL)
		return;
	buf_printf(out, "SELECT NULL FROM (\n%s\n) AS rowq_probe\n"
	    "UNION ALL %s", probe, pp->read.data);
}

/* A reading from the names among rows (NULLs are a queue's probe's). */
void
pause_probe_names(struct pause_probe *pp, const struct rowset *rs,
    int64_t now, struct watch_reading *r)
{
	const struct config *cfg = pp->cfg;

	r->pause_read = true;
	memset(r->paused, 0, sizeof(r->paused));
	for (size_t k = 0; k < rs->nrows; k++) {
		const char *name = rs->rows[k].value[0];
		for (size_t i = 0; name != NULL && i < cfg->nqueues &&
		    i < QUEUES_MAX; i++)
			if (strcmp(cfg->queues[i].name, name) == 0)
				r->paused[i] = 1;
	}
	if (pp->failing)
		log_info("reading %s again", pp->table.data);
	pp->failing = false;
	pp->due_ms = now + PAUSE_EVERY_MS;
}

/*
 * A read of the table failed: dropped (nothing is paused then, and the
 * watcher looks for it again), or the database failed (logged when it
 * begins; the last reading stays).
 */
void
pause_probe_failed(struct db *db, struct pause_probe *pp)
{
	if (db_no_such_table(db)) {
		if (!pp->missing)
			log_info("the pause table %s is gone: nothing is "
			    "paused", pp->table.data);
		pp->missing = true;
		db_stmt_free(pp->stmt);
		pp->stmt = NULL;
		return;
	}
	if (!pp->failing)
		log_warnx("cannot read the pause table %s: %s; pauses stay "
		    "as last read", pp->table.data, db_error(db));
	pp->failing = true;
}

/*
 * The table's own read, when no queue's probe brought it for
 * PAUSE_EVERY_MS (r->pause_read says whether this did).  While it is
 * missing, a prepare looks for it, which runs nothing.
 */
enum pause_probe_end
pause_probe_run(struct db *db, struct pause_probe *pp, int64_t now,
    struct watch_reading *r)
{
	struct rowset rs = { 0 };
	size_t ncols = 0;
	bool missing = pp->missing;
	enum pause_probe_end end = PAUSE_PROBE_READ;

	r->pause_read = false;
	/* A table from before --for: is resume_at there now? */
	if (pp->stmt != NULL && pp->no_resume_at && now >= pp->recheck_ms) {
		pp->recheck_ms = now + PAUSE_EVERY_MS;
		if (pause_probe_prepare(db, pp) == -1)
			return db_link_closed(db) ? PAUSE_PROBE_LINK :
			    PAUSE_PROBE_READ;
		if (!pp->no_resume_at)
			return PAUSE_PROBE_CHANGED;
	}
	if (now < pp->due_ms)
		return PAUSE_PROBE_READ;
	pp->due_ms = now + PAUSE_EVERY_MS;
	if (pp->stmt == NULL) {
		if (pause_probe_prepare(db, pp) == -1)
			return db_link_closed(db) ? PAUSE_PROBE_LINK :
			    PAUSE_PROBE_READ;
		if (pp->missing) {
			/* Nothing is paused where there is no table. */
			r->pause_read = true;
			memset(r->paused, 0, sizeof(r->paused));
			return PAUSE_PROBE_READ;
		}
	}
	(void)db_stmt_columns(pp->stmt, &ncols);
	if (db_stmt_fetch_all(pp->stmt, NULL, 0, &rs) == DB_OK)
		pause_probe_names(pp, &rs, now, r);
	else {
		pause_probe_failed(db, pp);
		if (db_link_closed(db))
			end = PAUSE_PROBE_LINK;
	}
	rowset_free(&rs, ncols);
	if (end == PAUSE_PROBE_READ && pp->missing != missing)
		end = PAUSE_PROBE_CHANGED;
	return end;
}

void
pause_probe_close(struct pause_probe *pp)
{
	db_stmt_free(pp->stmt);
	pp->stmt = NULL;
}

void
pause_probe_free(struct pause_probe *pp)
{
	pause_probe_close(pp);
	buf_free(&pp->table);
	buf_free(&pp->read);
}

/* ---- the supervisor's side ---- */

static void
pause_watch_start(struct supervisor *s)
{
	s->pause.wait_until_ms = now_ms() + PAUSE_FIRST_WAIT_MS;
}

bool
pause_watch_known(const struct supervisor *s)
{
	return s->opts->drain || s->pause.known;
}

bool
pause_watch_paused(const struct supervisor *s, const char *queue)
{
	for (size_t i = 0; i < s->pause.n; i++)
		if (strcmp(s->pause.paused[i], queue) == 0)
			return true;
	return false;
}

/* A paused queue's workers finish their rows and exit; none restarts. */
static void
pause_retire(struct supervisor *s, const struct queue *q)
{
	int n = 0;

	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state == SLOT_FREE ||
		    strcmp(sl->queue->name, q->name) != 0)
			continue;
		if (supervisor_retire_slot(s, sl))
			n++;
	}
	log_info("%s: paused in %s: %d worker(s) finish their rows and stop",
	    q->name, pause_table(s->current->cfg), n);
}

/*
 * A resumed queue's workers start again, unless the current generation
 * has not reached the queue yet (a full slot table): supervisor_fill
 * starts them then.
 */
static void
pause_resume(struct supervisor *s, size_t index)
{
	struct generation *g = s->current;
	const struct queue *q = &g->cfg->queues[index];

	log_info("%s: resumed: starting its workers", q->name);
	if (index >= g->next_queue)
		return;
	for (int number = 1; number <= scale_workers(s, q); number++) {
		bool running = false;
		for (int i = 0; i < s->nslots && !running; i++) {
			const struct slot *sl = &s->slots[i];
			running = sl->gen == g && sl->queue == q &&
			    sl->number == number &&
			    (sl->state == SLOT_RUNNING ||
			    sl->state == SLOT_RESTARTING);
		}
		if (!running && !supervisor_start(s, q, number))
			break;
	}
}

/*
 * A reading of the current generation: act on what changed, then keep
 * the names it found paused (a queue a reload removed is forgotten).
 */
static void
pause_apply(struct supervisor *s, const struct watch_reading *r)
{
	const struct config *cfg = s->current->cfg;
	struct pause_state *p = &s->pause;
	size_t n = cfg->nqueues < QUEUES_MAX ? cfg->nqueues : QUEUES_MAX;

	p->known = true;
	for (size_t i = 0; i < n; i++) {
		const struct queue *q = &cfg->queues[i];
		bool was = pause_watch_paused(s, q->name);
		if (r->paused[i] && !was)
			pause_retire(s, q);
		if (!r->paused[i] && was)
			pause_resume(s, i);
		s->status_dirty |= r->paused[i] != was;
	}
	for (size_t i = 0; i < p->n; i++)
		free(p->paused[i]);
	p->n = 0;
	for (size_t i = 0; i < n; i++)
		if (r->paused[i])
			p->paused[p->n++] = xstrdup(cfg->queues[i].name);
}

/*
 * A reading of the current generation, from the wake watcher: act on
 * what changed.
 */
void
pause_watch_reading(struct supervisor *s, const struct watch_reading *r)
{
	if (r->pause_read && r->generation == s->current->number &&
	    !s->stopping)
		pause_apply(s, r);
}

/* Stop waiting for a first reading when it is late. */
static void
pause_watch_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	struct pause_state *p = &s->pause;

	if (s->opts->drain || s->stopping || p->known)
		return;
	if (now >= p->wait_until_ms) {
		log_warnx("no reading of the pause table %s within %ds: "
		    "starting the workers", pause_table(s->current->cfg),
		    PAUSE_FIRST_WAIT_MS / 1000);
		p->known = true;
	} else if (p->wait_until_ms < *next)
		*next = p->wait_until_ms;
}

static void
pause_watch_stop(struct supervisor *s)
{
	struct pause_state *p = &s->pause;

	for (size_t i = 0; i < p->n; i++)
		free(p->paused[i]);
	p->n = 0;
}

const struct supervisor_part pause_watch_part = {
	.name = "pause watch",
	.start = pause_watch_start,
	.stop = pause_watch_stop,
	.tick = pause_watch_tick,
};
