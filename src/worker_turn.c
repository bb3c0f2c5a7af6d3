/*
 * worker_turn.c: one turn of a worker, as one object.
 *
 * A turn is the rows one claim returned, the column layout they were read
 * with, and what the transaction that claimed them has finished but not
 * yet committed.  Four things end that state, and each has its function
 * here, the only places that reset it: the claim of the next turn
 * (turn_begin), a COMMIT (turn_committed), a ROLLBACK (turn_rolled_back),
 * and a connection lost with the transaction on it (turn_abandon).
 */
#include "worker.h"
#include "claim.h"

#include <stdlib.h>
#include <string.h>

static struct column *
turn_copy_columns(const struct column *cols, size_t n)
{
	struct column *copy = xcalloc(n ? n : 1, sizeof(*copy));

	for (size_t i = 0; i < n; i++) {
		copy[i] = cols[i];
		copy[i].name = xstrdup(cols[i].name);
	}
	return copy;
}

/* The rows go, each freed with the layout it was read with. */
static void
turn_clear_rows(struct turn *t)
{
	rowset_clear(&t->rows, t->ncols);
	columns_free(t->cols, t->ncols);
	t->cols = NULL;
	t->ncols = 0;
}

/* What the transaction finished counts for nothing. */
static void
turn_forget_pending(struct worker *w)
{
	struct turn *t = &w->turn;

	t->pending_done = t->pending_retried = t->pending_failed = 0;
	t->uncommitted = false;
	runs_forget(w);
	on_failed_forget(w);
	/* A held `done` goes with the transaction: its row is waiting again. */
	turn_release_held(w);
	if (w->recent != NULL)
		recent_rollback(w->recent);
	/* The rows it claimed are waiting again, behind the cursor. */
	cursor_rewind(&w->cursor_at);
}

/*
 * A claim is about to read rows with the connection's layout.  What the
 * last turn finished is still pending: its COMMIT may ride on this claim.
 */
void
turn_begin(struct worker *w)
{
	struct turn *t = &w->turn;

	rowset_clear(&t->rows, t->ncols);
	if (!turn_layout_current(w)) {
		turn_clear_rows(t);
		t->cols = turn_copy_columns(w->cols, w->ncols);
		t->ncols = w->ncols;
	}
	t->key_index = w->key_index;
	t->attempts_index = w->attempts_index;
	t->max_attempts_index = w->max_attempts_index;
	t->trace_index = w->trace_index;
	t->group_index = w->group_index;
	t->ready_index = w->ready_index;
	t->skipped = t->handled = t->noks = 0;
	t->finished_alone = false;
	t->link_lost = false;
}

/* The transaction committed: only now count the rows it finished. */
void
turn_committed(struct worker *w)
{
	struct turn *t = &w->turn;
	struct worker_stats *stats = w->args->stats;
	uint64_t n = t->pending_done + t->pending_retried + t->pending_failed;

	if (w->recent != NULL)
		recent_commit(w->recent);
	if (stats && n > 0)
		stats->finished_us = now_us();
	if (stats) {
		stats->done += t->pending_done;
		stats->retried += t->pending_retried;
		stats->failed += t->pending_failed;
		for (uint64_t i = 0; i < n; i++)
			rate_add(&stats->rate, wall_ms() / 1000);
	}
	t->pending_done = t->pending_retried = t->pending_failed = 0;
	t->uncommitted = false;
	runs_forget(w);
	on_failed_send(w);
}

/* The transaction rolled back: it finished nothing. */
void
turn_rolled_back(struct worker *w)
{
	turn_forget_pending(w);
	w->turn.noks = 0;
}

/*
 * The connection went with the transaction on it: the server rolls it
 * back, and the rows' locks are gone, so nothing more of this turn may
 * run.  Its rows are kept (they are freed with their own layout), but no
 * handler starts for them.
 */
void
turn_abandon(struct worker *w)
{
	turn_forget_pending(w);
	w->turn.noks = 0;
	w->turn.link_lost = true;
}

/*
 * Batch 1: the i-th row's `done` (written in held_sql) rides on the next
 * claim.  The row is taken out of the turn's rows, whose next claim frees
 * them, and kept until the `done` is settled (turn_release_held).
 */
void
turn_hold(struct worker *w, size_t i, int attempt)
{
	struct turn *t = &w->turn;

	t->held = t->rows.rows[i];
	t->rows.rows[i] = (struct row){ NULL, NULL };
	t->held_attempt = attempt;
	t->held_token = w->token;
	t->holding = true;
	runs_hold(w, i);
}

void
turn_release_held(struct worker *w)
{
	struct turn *t = &w->turn;

	if (!t->holding)
		return;
	row_free(&t->held, t->ncols);
	t->holding = false;
}

void
turn_free(struct turn *t)
{
	if (t->holding)
		row_free(&t->held, t->ncols);
	buf_free(&t->held_sql);
	runs_free(t);
	turn_clear_rows(t);
	free(t->rows.rows);
	memset(t, 0, sizeof(*t));
}

/*
 * Whether the connection's statements were bound for the turn's layout:
 * after a reconnect that brought other columns (an ALTER TABLE during the
 * outage), the turn's rows cannot be finished with them.
 */
bool
turn_layout_current(const struct worker *w)
{
	const struct turn *t = &w->turn;

	if (w->cols == NULL || t->ncols != w->ncols)
		return false;
	for (size_t i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i].name, w->cols[i].name) != 0 ||
		    t->cols[i].kind != w->cols[i].kind ||
		    t->cols[i].is_unsigned != w->cols[i].is_unsigned)
			return false;
	return true;
}

/*
 * A row that cannot be worked is skipped: it is said once (a hash of its
 * values is kept, so the same row is not said again at every claim), and
 * the next claim asks for more rows to find the ones behind it.
 */
void
turn_skip(struct worker *w, const struct row *row, const char *why)
{
	uint64_t h = recent_row_hash(w->turn.ncols, row);
	struct buf key = { 0 };

	uint64_t *slot = &w->skip_said[h % SKIP_SAID_SLOTS];

	w->turn.skipped++;
	if (w->args->stats)
		w->args->stats->errors++;
	if (*slot == h)
		return;
	*slot = h;	/* a collision only says a row once more */
	row_key_text(w, row, &key);
	log_set_row(key.data);
	log_set_outcome("skipped", -1);
	log_error("%s: %s; skipped, and the queue goes on behind it (said "
	    "once)", w->q->select.where, why);
	log_set_row(NULL);
	buf_free(&key);
}

/* Whether this row, with these values, was skipped before (turn_skip). */
bool
turn_skipped_before(const struct worker *w, const struct row *row)
{
	uint64_t h = recent_row_hash(w->turn.ncols, row);

	return w->skip_said[h % SKIP_SAID_SLOTS] == h;
}

/*
 * Whether the i-th row of the turn can be worked: a NULL key cannot be
 * finished by key, and a key the select returned twice in one claim (a
 * join) would be handled and finished twice.  Rows that cannot are
 * skipped.
 */
bool
turn_row_workable(struct worker *w, size_t i)
{
	const struct row *row = &w->turn.rows.rows[i];
	size_t len, olen;
	const char *key = row_key(w, row, &len);

	if (key == NULL) {
		turn_skip(w, row, "the key column is NULL in a claimed row, "
		    "so it cannot be finished by key");
		return false;
	}
	for (size_t k = 0; k < i; k++) {
		const char *other = row_key(w, &w->turn.rows.rows[k], &olen);
		if (other != NULL && olen == len && memcmp(other, key, len) == 0) {
			turn_skip(w, row, "the select returned this key twice "
			    "in one claim (a join?); handled once");
			return false;
		}
	}
	return true;
}

/*
 * The LIMIT of the next claim: the batch (lease.ahead's rows), and as
 * many more as the last turns skipped (see worker_widen), so that rows
 * that cannot be worked at the head of the queue never hide the ones
 * behind them.
 */
int
turn_next_limit(const struct worker *w)
{
	return queue_claim_rows(w->q) + (w->widen < SKIP_WIDEN_MAX ? w->widen :
	    SKIP_WIDEN_MAX);
}
