/*
 * status_group_done.c: the DONE of `rowq status QUEUE --by` and of the
 * console's group view: per group, the done runs among the queue's last
 * STATUS_GROUP_RUNS runs in its run log (runs:), which keeps each run's
 * group (grp, runs.c) when the queue has group_by:.
 *
 * A done row leaves the select, so only the run log still knows it.  The
 * count is bounded by the number of runs, not by time: the newest runs
 * of the queue come off the by_time index (queue, finished) backwards,
 * at most STATUS_GROUP_RUNS of them, and are grouped, so the read costs
 * the same however large the log or its keep: --- and the log needs no
 * index on grp, which would cost every run's INSERT.  What the window
 * covered (how many runs, how old the oldest) is said beside the counts.
 *
 * The groups shown are the ones counted.  When --limit leaves room,
 * the groups that had only done runs in the window follow the others,
 * the most done first: a batch that has finished is still seen.
 *
 * A plain read, no lock, as status_group.c's.  Runs written before the
 * queue had group_by: (or before its run log had grp) have no group,
 * and count as the NULL group's.  Values are compared as bytes, cut to
 * RUNS_GROUP_MAX, as the workers wrote them.
 */
#include "rowq.h"
#include "db.h"
#include "commands.h"
#include "runs.h"

#include <stdlib.h>
#include <string.h>

/*
 * The counting statement: the window's runs grouped by grp, the done
 * ones summed, with the window's size and the oldest run's age; the
 * groups shown first (nvals values bound, has_null for the null group),
 * then the most done, at most limit groups.
 */
static void
status_group_done_sql(const struct queue *q, size_t nvals, bool has_null,
    size_t limit, struct buf *sql)
{
	buf_printf(sql, "SELECT r.grp, SUM(r.outcome = 'done'), "
	    "SUM(COUNT(*)) OVER (), TIMESTAMPDIFF(SECOND, "
	    "MIN(MIN(r.finished)) OVER (), UTC_TIMESTAMP(6))\n"
	    "FROM (SELECT grp, outcome, finished FROM %s WHERE queue = '%s' "
	    "ORDER BY finished DESC LIMIT %d) r\nGROUP BY r.grp ORDER BY ",
	    runs_table(q), q->name, STATUS_GROUP_RUNS);
	if (nvals > 0 || has_null) {
		/* COALESCE: a null group's IN is null, which sorts last. */
		buf_puts(sql, "COALESCE(");
		for (size_t i = 0; i < nvals; i++)
			buf_puts(sql, i == 0 ? "r.grp IN (?" : ", ?");
		if (nvals > 0)
			buf_puts(sql, ")");
		if (has_null)
			buf_printf(sql, "%sr.grp IS NULL", nvals ? " OR " : "");
		buf_puts(sql, ", 0) DESC, ");
	}
	buf_printf(sql, "2 DESC, r.grp LIMIT %zu", limit);
}

/* Whether a run's grp (cut) is the group's value, cut the same way. */
static bool
status_group_done_same(const struct status_group *g, const struct row *row)
{
	size_t len;

	if (g->value == NULL || row->value[0] == NULL)
		return g->value == NULL && row->value[0] == NULL;
	len = runs_group_len(strlen(g->value));
	return len == row->len[0] && memcmp(g->value, row->value[0], len) == 0;
}

/* The counts into the groups shown, and done-only groups where room is. */
static void
status_group_done_fill(struct status_groups *gs, const struct rowset *rs,
    size_t shown)
{
	gs->done_known = true;
	gs->done_oldest_s = -1;
	for (size_t i = 0; i < shown; i++)
		gs->g[i].done = 0;
	if (rs->nrows > 0) {
		const struct row *first = &rs->rows[0];
		gs->done_runs = first->value[2] ? atol(first->value[2]) : 0;
		if (first->value[3] != NULL)
			gs->done_oldest_s = atoll(first->value[3]);
	}
	for (size_t i = 0; i < rs->nrows; i++) {
		const struct row *row = &rs->rows[i];
		long done = row->value[1] ? atol(row->value[1]) : 0;
		bool matched = false;
		struct status_group *g;
		for (size_t k = 0; k < shown; k++)
			if (status_group_done_same(&gs->g[k], row)) {
				gs->g[k].done = done;
				matched = true;
			}
		if (matched || done == 0 || gs->n >= (size_t)gs->limit)
			continue;
		g = &gs->g[gs->n++];
		*g = (struct status_group){ .run = gs->run_known ? 0 : -1,
		    .failed = gs->failed_known ? 0 : -1, .oldest_age_s = -1,
		    .done = done };
		g->value = row->value[0] ? xstrdup(row->value[0]) : NULL;
		gs->total++;
	}
}

/*
 * The DONE of the groups of gs (status_group_read's), and the groups with
 * only done runs where gs->limit leaves room.  Without a run log, or when
 * it cannot be read, DONE stays unknown (-1) and gs->done_why says why;
 * that is no failure of the rest.  A run log not made yet has no run.
 */
void
status_group_done(struct db *db, const struct queue *q,
    struct status_groups *gs)
{
	size_t shown = gs->n, nvals = 0, ncols = 0;
	struct value *vals = xcalloc(shown + 1, sizeof(*vals));
	struct rowset rs = { 0 };
	struct buf sql = { 0 };
	struct db_stmt *s;
	enum db_status st;
	bool has_null = false;

	for (size_t i = 0; i < shown; i++)
		gs->g[i].done = -1;
	gs->done_oldest_s = -1;
	if (!q->runs.enabled)
		goto done;
	for (size_t i = 0; i < shown; i++) {
		const char *v = gs->g[i].value;
		size_t len = v != NULL ? strlen(v) : 0;
		if (v == NULL) {
			has_null = true;
			continue;
		}
		memset(&vals[nvals], 0, sizeof(vals[nvals]));
		vals[nvals].type = VALUE_BLOB;
		vals[nvals].s = v;
		vals[nvals++].len = runs_group_len(len);
	}
	/* Room for the groups shown and for done-only ones up to limit. */
	gs->g = xrealloc(gs->g, ((size_t)gs->limit + 1) * sizeof(*gs->g));
	status_group_done_sql(q, nvals, has_null, (size_t)gs->limit + shown,
	    &sql);
	if ((s = db_prepare(db, sql.data, &st)) == NULL ||
	    db_stmt_fetch_all(s, vals, nvals, &rs) != DB_OK) {
		if (db_no_such_table(db))
			status_group_done_fill(gs, &rs, shown);
		else if (db_no_such_column(db))
			gs->done_why = "the run log has no column grp yet (a "
			    "daemon of this version adds it)";
		else {
			log_warnx("the run log %s: status --by's DONE: %s",
			    runs_table(q), db_error(db));
			gs->done_why = "the run log cannot be read";
		}
	} else
		status_group_done_fill(gs, &rs, shown);
	if (s != NULL)
		(void)db_stmt_columns(s, &ncols);
	rowset_free(&rs, ncols);
	db_stmt_free(s);
done:
	(void)db_rollback(db);	/* a read: nothing to keep */
	buf_free(&sql);
	free(vals);
}

/* What DONE counted, as words to follow "DONE: ": the window, or why not. */
void
status_group_done_note(struct buf *b, const struct queue *q,
    const struct status_groups *gs)
{
	char age[32];

	if (!q->runs.enabled) {
		buf_puts(b, "unknown, the queue keeps no run log (runs:)");
		return;
	}
	if (!gs->done_known) {
		buf_printf(b, "unknown, %s", gs->done_why ? gs->done_why :
		    "the run log was not read");
		return;
	}
	if (gs->done_runs >= STATUS_GROUP_RUNS)
		buf_printf(b, "done runs among the queue's last %d runs "
		    "in the run log %s", STATUS_GROUP_RUNS, runs_table(q));
	else
		buf_printf(b, "done runs among all %ld runs of the queue "
		    "in the run log %s", gs->done_runs, runs_table(q));
	if (gs->done_oldest_s >= 0) {
		duration_format(gs->done_oldest_s * 1000, age, sizeof(age));
		buf_printf(b, ", the oldest %s ago", age);
	}
}
