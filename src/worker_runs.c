/*
 * worker_runs.c: a worker's side of the run log (runs:, runs.c).
 *
 * When a row's handler ends, what the try was is noted beside the row
 * (runs_note): its try, when and how long, the exit status, the reason,
 * the first bytes of :error, the trace id.  When the row's finishing
 * statement has changed the row (done, retry or failed, whichever ran in
 * the end), the note becomes a run, kept as the VALUES of an INSERT with
 * the transaction's other runs (runs_settled).  The INSERT goes in the
 * same transaction, just before its COMMIT: in front of the COMMIT that
 * rides on the next claim (runs_front, one round trip as before), or
 * alone before worker_commit's.  A transaction that rolls back takes its
 * runs with it: turn_rolled_back forgets them, as the row's outcome.
 *
 * At batch 1, a row's `done` rides in front of the next claim, its
 * effect unknown until the claim answers (worker_finish_text.c); its run
 * follows it there, its outcome written as IF(ROW_COUNT() > 0, 'done',
 * 'none'): a `done` that changed no row leaves a run of outcome none
 * (reason no_row), a try with no outcome, which it is.  (INSERT ...
 * SELECT ... WHERE ROW_COUNT() > 0 would write nothing then, but cost the
 * server about twice the plain INSERT, measured.)  A `done` that failed
 * stops the server before the INSERT (finish_held settles it).  That
 * INSERT is prepared once per connection where the server prepares by
 * SQL (MariaDB: EXECUTE rowq_run USING the values; runs_prepare), as the
 * `done` in front of it is.
 */
#include "worker.h"
#include "runs.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char runs_host[256];

/* The session's name for the held row's INSERT, prepared by SQL. */
#define RUNS_STMT_NAME	"rowq_run"

/* The note of the turn's row, by where it is kept; NULL: none. */
static struct run_note *
runs_note_of(struct worker *w, const struct row *row)
{
	struct turn *t = &w->turn;
	ptrdiff_t i;

	if (t->run_notes == NULL)
		return NULL;
	if (t->holding && row == &t->held)
		return &t->held_note;
	i = row - t->rows.rows;
	if (i < 0 || (size_t)i >= t->rows.nrows || i >= CLAIM_MAX)
		return NULL;
	return &t->run_notes[i];
}

/* The try's reason, as the run log says it: a word, "" when done. */
static const char *
runs_reason(const struct worker *w, const struct bound *b)
{
	const struct handler_result *r = &w->result;

	if (b == &w->done)
		return "";
	if (r->timed_out)
		return "timeout";
	if (r->killed)
		return "signal";
	if (r->outcome == OUTCOME_FAILED)
		return "permanent";
	if (b == &w->failed)
		return "max_attempts";
	if (r->retry_in_ms >= 0)
		return "retry_in";
	return r->exit_status > 0 ? "exit" : "error";
}

/*
 * The row's handler has ended and b is the statement it leads to: note
 * the try, to be a run once that statement (or the one that runs in its
 * stead) has changed the row.
 */
void
runs_note(struct worker *w, const struct row *row, int attempt,
    const struct bound *b)
{
	struct run_note *n;
	int64_t now = wall_ms() * 1000;
	char id[33];

	if (!w->q->runs.enabled)
		return;
	if (w->turn.run_notes == NULL)
		w->turn.run_notes = xcalloc(CLAIM_MAX,
		    sizeof(*w->turn.run_notes));
	if ((n = runs_note_of(w, row)) == NULL)
		return;
	n->set = true;
	n->attempt = attempt;
	n->duration_ms = w->result.duration_ms;
	n->finished_us = now;
	n->started_us = now - w->result.duration_ms * 1000;
	n->exit_status = w->result.exit_status;
	n->decided = b;
	snprintf(n->reason, sizeof(n->reason), "%s", runs_reason(w, b));
	buf_reset(&n->error);
	if (b != &w->done && w->result.error.data != NULL)
		buf_append(&n->error, w->result.error.data,
		    w->result.error.len < RUNS_ERROR_MAX ?
		    w->result.error.len : RUNS_ERROR_MAX);
	n->trace[0] = '\0';
	if (row_traceparent(w, row, id) != NULL)
		snprintf(n->trace, sizeof(n->trace), "%s", id);
}

/*
 * retry.gave_up says that retry.update gave the row up: its try is a
 * failed run, with the reason rowq gives a failed try that had none left
 * (max_attempts, or timeout, signal as the handler ended), not a retry.
 * Called before the retry is settled, with the row's result still in w.
 */
void
runs_gave_up(struct worker *w, const struct row *row)
{
	struct run_note *n = runs_note_of(w, row);

	if (n == NULL || !n->set)
		return;
	n->decided = &w->failed;
	snprintf(n->reason, sizeof(n->reason), "%s",
	    runs_reason(w, &w->failed));
}

/* The held row's note goes with it (turn_hold). */
void
runs_hold(struct worker *w, size_t i)
{
	struct turn *t = &w->turn;
	struct buf keep;

	if (t->run_notes == NULL || i >= CLAIM_MAX)
		return;
	keep = t->held_note.error;
	t->held_note = t->run_notes[i];
	t->run_notes[i].error = keep;
	t->run_notes[i].set = false;
	t->held_run_in = false;
}

/*
 * The row's group_by: value, for the run's grp (status --by's DONE),
 * where the queue has group_by:; NULL when it is null, or not among the
 * columns the row was read with.  runs_values cuts it.
 */
static void
runs_rec_group(const struct worker *w, const struct row *row,
    struct run_rec *r)
{
	int i = w->turn.group_index;

	r->grouped = runs_grouped(w->q);
	if (!r->grouped || i < 0 || row->value[i] == NULL)
		return;
	r->group = row->value[i];
	r->group_len = row->len[i];
}

/* A run from the note, finished by b, in r (which points into n). */
static void
runs_rec(struct worker *w, const struct row *row, const struct run_note *n,
    const struct bound *b, bool if_changed, struct run_rec *r)
{
	*r = (struct run_rec){ .if_changed = if_changed };

	if (runs_host[0] == '\0' &&
	    gethostname(runs_host, sizeof(runs_host) - 1) == -1)
		snprintf(runs_host, sizeof(runs_host), "?");
	r->queue = w->q->name;
	r->key = row_key(w, row, &r->key_len);
	if (r->key == NULL)
		r->key = "";
	r->attempt = n->attempt;
	r->outcome = b == &w->done ? "done" : b == &w->retry ? "retry" :
	    "failed";
	/* Failed instead of what was decided: the database refused that. */
	r->reason = b != n->decided ? "statement" : n->reason;
	r->exit_status = n->exit_status;
	r->started_us = n->started_us;
	r->finished_us = n->finished_us;
	r->duration_ms = n->duration_ms;
	r->host = runs_host;
	r->worker = w->args->number;
	r->pid = (long)getpid();
	r->error = n->error.data != NULL ? n->error.data : "";
	r->error_len = n->error.len;
	if (b != n->decided && w->result.error.data != NULL) {
		r->error = w->result.error.data;
		r->error_len = w->result.error.len;
	}
	r->trace_id = n->trace;
	runs_rec_group(w, row, r);
}

/* A run's values from the note, finished by b. */
static void
runs_render(struct worker *w, const struct row *row,
    const struct run_note *n, const struct bound *b, bool if_changed,
    struct buf *out)
{
	struct run_rec r;

	runs_rec(w, row, n, b, if_changed, &r);
	runs_values(out, &r);
}

/*
 * The row's finishing statement b changed it: its try is a run of the
 * transaction.  The held row's, written already with its `done`, is not
 * written twice.
 */
void
runs_settled(struct worker *w, const struct row *row, const struct bound *b)
{
	struct turn *t = &w->turn;
	struct run_note *n = runs_note_of(w, row);

	if (n == NULL || !n->set)
		return;
	n->set = false;
	if (n == &t->held_note && t->held_run_in)
		return;
	buf_puts(&t->runs_pending, t->nruns == 0 ? "(" : ",\n(");
	runs_render(w, row, n, b, false, &t->runs_pending);
	buf_puts(&t->runs_pending, ")");
	t->nruns++;
}

/* The transaction's runs as one INSERT, in sql. */
static void
runs_insert(struct worker *w, struct buf *sql)
{
	runs_insert_head(sql, w->q, runs_grouped(w->q));
	buf_puts(sql, "VALUES ");
	buf_append(sql, w->turn.runs_pending.data, w->turn.runs_pending.len);
}

/*
 * The held row's run, behind its `done`, into out: EXECUTE of the
 * session's prepared INSERT where there is one (runs_prepare), or the
 * INSERT's text.
 */
static void
runs_held(struct worker *w, const struct run_note *n, struct buf *out)
{
	struct run_rec r;
	struct run_values v;

	runs_rec(w, &w->turn.held, n, &w->done, true, &r);
	if (w->runs_stmt != NULL) {
		runs_held_values(&v, &r);
		if (dialect_stmt_execute(w->runs_stmt, out, v.v, v.n))
			return;
	}
	runs_insert_head(out, w->q, r.grouped);
	buf_puts(out, "VALUES (");
	runs_values(out, &r);
	buf_puts(out, ")");
}

/*
 * On connecting: the held row's INSERT (runs_held_text) made the
 * session's, prepared by SQL where the server can (dialect_stmt_init),
 * so that the server does not parse it for every row at batch 1:
 * measured on MariaDB 10.11 (perf, the server's samples a row), the
 * parse of the INSERT's text was 0.3 of what the run cost.  When the
 * server refuses, the text goes as before.
 */
void
runs_prepare(struct worker *w)
{
	struct buf text = { 0 };

	if (!w->q->runs.enabled || w->done.text == NULL)
		return;		/* no `done` is held */
	runs_held_text(&text, w->q);
	if ((w->runs_stmt = worker_session_stmt(w, RUNS_STMT_NAME,
	    text.data)) == NULL)
		log_debug("the run log's INSERT goes as text: %s",
		    db_error(w->db));
	buf_free(&text);
}

/* The connection is closing: its prepared INSERT goes with it. */
void
runs_unprepare(struct worker *w)
{
	worker_session_stmt_free(&w->runs_stmt);
}

/*
 * Before a COMMIT that rides on a claim (claim_batch): what goes in
 * front of it, in t->runs_front, and ahead->runs set when there is
 * something.  The held row's run is written behind its `done`, if the
 * `done` changed it; the transaction's other runs, rare then (a batch
 * of 1 that claimed more to skip rows), go first in a round trip of their
 * own.  Returns DB_OK, or the status of that round trip.
 */
enum db_status
runs_front(struct worker *w, struct db_ahead *ahead)
{
	struct turn *t = &w->turn;
	struct run_note *n = &t->held_note;
	enum db_status st;

	buf_reset(&t->runs_front);
	t->runs_front_held = false;
	ahead->runs = ahead->runs_ran = false;
	if (!w->q->runs.enabled)
		return DB_OK;
	if (ahead->finish && t->holding && n->set) {
		if ((st = runs_flush(w)) != DB_OK)
			return st;
		runs_held(w, n, &t->runs_front);
		t->runs_front_held = true;
		ahead->runs = true;
	} else if (ahead->commit && t->nruns > 0) {
		runs_insert(w, &t->runs_front);
		ahead->runs = true;
	}
	return DB_OK;
}

/*
 * The claim came back: a run that went in front with the held row's
 * `done` is not written again when finish_held settles it.
 */
void
runs_front_done(struct worker *w, const struct db_ahead *ahead)
{
	struct turn *t = &w->turn;

	if (ahead->runs_ran && t->runs_front_held)
		t->held_run_in = true;
	else if (ahead->runs_ran) {
		buf_reset(&t->runs_pending);
		t->nruns = 0;
	}
}

/* The transaction's runs, now, before a COMMIT of its own. */
enum db_status
runs_flush(struct worker *w)
{
	struct turn *t = &w->turn;
	struct buf sql = { 0 };
	enum db_status st;

	if (t->nruns == 0)
		return DB_OK;
	runs_insert(w, &sql);
	st = db_run(w->db, sql.data);
	if (st == DB_OK) {
		buf_reset(&t->runs_pending);
		t->nruns = 0;
	} else
		snprintf(w->failing, sizeof(w->failing), "the run log %s: %s",
		    runs_table(w->q), db_error(w->db));
	buf_free(&sql);
	return st;
}

/* The transaction ended, committed or not: its runs are gone from here. */
void
runs_forget(struct worker *w)
{
	struct turn *t = &w->turn;

	buf_reset(&t->runs_pending);
	t->nruns = 0;
	t->held_run_in = false;
	t->runs_front_held = false;
	t->held_note.set = false;
}

void
runs_free(struct turn *t)
{
	if (t->run_notes != NULL)
		for (size_t i = 0; i < CLAIM_MAX; i++)
			buf_free(&t->run_notes[i].error);
	free(t->run_notes);
	t->run_notes = NULL;
	buf_free(&t->held_note.error);
	buf_free(&t->runs_pending);
	buf_free(&t->runs_front);
}
