/*
 * worker_claim.c: the claim.  Which rows a turn takes: the select's own claim
 * (the select + LIMIT n FOR UPDATE SKIP LOCKED), or, for a select of one
 * table ordered by its integer primary key, a scan of the primary key
 * from the last key this worker claimed (cursor.c), with the last turn's
 * COMMIT in front, in the same round trip.  Also what a claim says about
 * the queue: a row that came straight back round, a claim much slower
 * than usual.
 */
#include "worker.h"
#include "claim.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The claim as text for LIMIT limit, behind the COMMIT it may carry. */
static void
claim_sql_for(struct worker *w, int limit)
{
	char *claim = sql_claim(w->q->select.positional, limit);
	struct buf b = { 0 };

	buf_printf(&b, "%s%s", COMMIT_FIRST, claim);
	if (w->bulk_done && !w->q->lease.enabled)
		buf_printf(&b, ";\nSAVEPOINT %s", CLAIMED_SAVEPOINT);
	free(claim);
	free(w->claim_sql);
	w->claim_sql = buf_steal(&b);
	w->claim_limit = limit;
}

/* Prepare the claim, for the columns it returns, and check them. */
static enum connect_status
claim_prepare_select(struct worker *w)
{
	enum db_status st;
	char *claim = sql_claim(w->q->select.positional,
	    queue_claim_rows(w->q)), **names;
	int problems;

	w->claim = db_prepare(w->db, claim, &st);
	free(claim);
	if (w->claim == NULL) {
		log_error("%s: %s", w->q->select.where, db_error(w->db));
		return st == DB_RECONNECT ? CONNECT_AWAY : CONNECT_CONFIG;
	}
	w->cols = db_stmt_columns(w->claim, &w->ncols);
	names = xcalloc(w->ncols + 1, sizeof(*names));
	for (size_t i = 0; i < w->ncols; i++)
		names[i] = w->cols[i].name;
	problems = config_check_columns(w->q, names, w->ncols) +
	    config_check_column_kinds(w->q, w->cols, w->ncols);
	free(names);
	if (problems > 0)
		return CONNECT_CONFIG;
	w->key_index = w->q->key_column ? worker_column(w, w->q->key_column) : 0;
	w->attempts_index = w->q->retry.attempts_column ?
	    worker_column(w, w->q->retry.attempts_column) : -1;
	w->max_attempts_index = w->q->retry.max_attempts_column ?
	    worker_column(w, w->q->retry.max_attempts_column) : -1;
	w->trace_index = w->q->traceparent.name ?
	    worker_column(w, w->q->traceparent.name) : -1;
	w->group_index = w->q->group_by.name ?
	    worker_column(w, w->q->group_by.name) : -1;
	w->ready_index = w->q->ready_at.name ?
	    worker_column(w, w->q->ready_at.name) : -1;
	return CONNECT_OK;
}

/*
 * Whether the claim can scan the primary key from a cursor: the select's
 * shape is derived once, the key confirmed for each connection (an ALTER
 * TABLE may have changed it).  When it cannot, the select's own claim is
 * used, which works too; `rowq check` says what that costs.
 */
static enum connect_status
claim_prepare_cursor(struct worker *w)
{
	enum db_status st;
	struct buf b = { 0 };

	if (!w->cursor_derived) {
		w->cursor_derived = true;
		(void)cursor_derive(&w->cursor, w->q->select.positional);
	}
	if (w->cursor.reason != NULL ||
	    cursor_confirm(w->db, &w->cursor, w->cols, w->ncols) != 0) {
		log_debug("%s: claims without a cursor: the select %s",
		    w->q->select.where, w->cursor.reason);
		return CONNECT_OK;
	}
	cursor_start_sql(&b, &w->cursor);
	w->cursor_start = db_prepare(w->db, b.data, &st);
	buf_free(&b);
	if (w->cursor_start == NULL) {
		log_error("%s: the cursor claim's first key: %s",
		    w->q->select.where, db_error(w->db));
		return st == DB_RECONNECT ? CONNECT_AWAY : CONNECT_CONFIG;
	}
	log_debug("%s: claims scan the primary key from a cursor",
	    w->q->select.where);
	w->cursor_on = true;
	return CONNECT_OK;
}

/*
 * Whether the claim locks by key (keyed.c): for a select that is not
 * claimed from a cursor and whose own claim locks rows it does not claim
 * (a row every claim joins, a sort), derived once and confirmed for each
 * connection.  When it does not apply, the select's own claim is used;
 * `rowq check` says what that costs.
 */
static enum connect_status
claim_prepare_keyed(struct worker *w)
{
	enum db_status st;
	struct buf b = { 0 };
	size_t n;

	if (!w->keyed_derived) {
		w->keyed_derived = true;
		(void)keyed_derive(&w->keyed, w->q->select.positional,
		    w->q->done.positional);
	}
	if (w->cursor_on || keyed_confirm(w->db, &w->keyed, w->q->select.positional,
	    queue_claim_rows(w->q)) != 0) {
		if (!w->cursor_on)
			log_debug("%s: claims as written: the select %s",
			    w->q->select.where, w->keyed.reason);
		return CONNECT_OK;
	}
	keyed_list_sql(&b, &w->keyed, 1);
	w->keyed_list_stmt = db_prepare(w->db, b.data, &st);
	buf_free(&b);
	if (w->keyed_list_stmt == NULL) {
		log_error("%s: the claim by key's list: %s",
		    w->q->select.where, db_error(w->db));
		return st == DB_RECONNECT ? CONNECT_AWAY : CONNECT_CONFIG;
	}
	(void)db_stmt_columns(w->keyed_list_stmt, &n);
	if (n != 1) {
		log_error("%s: the claim by key's list returns %zu columns",
		    w->q->select.where, n);
		return CONNECT_CONFIG;
	}
	log_debug("%s: claims lock by key: the select's own claim: %s",
	    w->q->select.where, w->keyed.why);
	w->keyed_on = true;
	return CONNECT_OK;
}

/*
 * The design's one rule: finishing a row must take it out of the select,
 * or at least change it.  A row claimed again, unchanged, right after this
 * worker finished it would come straight back round for ever; say which
 * statement failed to move it, and pause this worker's claims (with
 * growing delays) rather than run its handler again and again.  A drain,
 * which would then never end, ends instead (w->drain_failed), with the
 * same message.  Returns true when the turn must stop.
 */
static bool
claim_came_back(struct worker *w)
{
	struct turn *t = &w->turn;
	int64_t now = now_ms();
	const char *where;
	struct buf key = { 0 };
	char d[32];
	int i;

	if (now - w->last_hot_ms > HOT_LOOP_CALM_MS)
		w->hot_loops = 0;
	i = recent_returned(w->recent, t->ncols, t->key_index, &t->rows, now,
	    HOT_LOOP_WINDOW_MS, &where);
	if (i < 0)
		return false;
	const struct row *row = &t->rows.rows[i];
	int64_t delay = backoff_capped_ms(HOT_LOOP_BACKOFF_MIN_MS,
	    HOT_LOOP_BACKOFF_MAX_MS, ++w->hot_loops);
	duration_format(delay, d, sizeof(d));
	row_key_text(w, row, &key);
	log_set_row(key.data);
	log_error("claimed again, unchanged, right after %s finished it: "
	    "that statement does not take the row out of the select, so it "
	    "would come straight back round; %s%s", where, w->args->drain ?
	    "the drain ends" : "claims paused for ", w->args->drain ? "" : d);
	log_set_row(NULL);
	worker_note_error(w, key.data, "came straight back round: the "
	    "finishing statement does not take it out of the select");
	if (w->args->stats)
		w->args->stats->errors++;
	(void)db_rollback(w->db);
	turn_rolled_back(w);
	if (w->args->drain) {
		w->drain_failed = true;
		buf_free(&key);
		return true;
	}
	worker_set_state(w, WORKER_BACKOFF, key.data);
	proc_title("rowq: %s worker %d (paused: row %s came back)",
	    w->q->name, w->args->number, key.data);
	stopper_sleep(&w->stopper, delay);
	/*
	 * After the pause it may run once more: an application may have
	 * queued the same values again on purpose.  A real loop comes back
	 * here, later each time.
	 */
	recent_forget(w->recent, recent_key_hash(row->value[t->key_index],
	    row->len[t->key_index]));
	w->last_hot_ms = now_ms();
	buf_free(&key);
	return true;
}

/*
 * A claim much slower than this worker's usual (a table that grew, an
 * index dropped, a plan changed) is said once an hour at most, with a
 * pointer to `rowq check`.  The usual is a running mean over 16 claims,
 * fed a slow claim only up to twice the mean, so one stall hides no other;
 * claims that carried a COMMIT (which may wait for the disk), and a
 * cursor's fallbacks (two statements), are compared with their own kind.
 */
static void
claim_time(struct worker *w, int64_t us, enum claim_kind kind)
{
	static const char *const kinds[CLAIM_KINDS] = {
		"", " (that claim had the last rows' COMMIT, and at batch 1 "
		    "the last row's done, in front)",
		" (that claim fell back to the first waiting row)",
	};
	int64_t *mean = &w->claim_mean_us[kind];
	int *n = &w->claims[kind];
	char took[32], usual[32];

	if (*n < 16) {
		*mean += (us - *mean) / ++*n;
		return;
	}
	if (us > 10 * *mean && us > 100000 &&
	    (w->slow_logged_ms == 0 || now_ms() - w->slow_logged_ms > 3600000)) {
		w->slow_logged_ms = now_ms();
		duration_format(us / 1000, took, sizeof(took));
		snprintf(usual, sizeof(usual), "%.1fms", (double)*mean / 1000);
		log_warnx("%s: a claim took %s (usually %s): the select may "
		    "read rows it will not return; see `rowq check`%s",
		    w->q->select.where, took, usual, kinds[kind]);
	}
	if (us > 2 * *mean)
		us = 2 * *mean;
	*mean += (us - *mean) / 16;
}

/*
 * What rides in front of a claim, in the same round trip, until it has
 * been sent once: the held row's `done` as text (worker_finish_text.c), and the
 * last turn's COMMIT; and, in ahead, how far the server got with them.
 */
struct claim_front {
	struct db_ahead	 ahead;
	bool		 sent;
	/* The limit's take, ahead of the COMMIT and behind it. */
	const struct buf *before, *after;
};

/* The front's text, when it is still to go. */
static void
claim_front_text(struct worker *w, const struct claim_front *f,
    struct buf *b)
{
	if (f->sent)
		return;
	finish_held_text(w, &f->ahead, b);
	if (f->before != NULL && f->before->len > 0)
		buf_append(b, f->before->data, f->before->len);
	if (f->ahead.commit)
		buf_puts(b, COMMIT_FIRST);
	if (f->after != NULL && f->after->len > 0)
		buf_append(b, f->after->data, f->after->len);
}

/*
 * Send a claim's text, which carries the front if it has not gone yet;
 * its rows, of that layout, go to rs.
 */
static enum db_status
claim_send_to(struct worker *w, struct claim_front *f, const char *sql,
    const struct column *cols, size_t ncols, struct rowset *rs)
{
	struct db_ahead gone = { 0 }, *a = f->sent ? &gone : &f->ahead;
	enum db_status st;

	lease_ride_ahead(w, a);
	st = db_select(w->db, sql, a, cols, ncols, rs);
	lease_ride_sent(w, a, st);
	f->sent = true;
	return st;
}

/* The same, for the turn's rows. */
static enum db_status
claim_send(struct worker *w, struct claim_front *f, const char *sql)
{
	return claim_send_to(w, f, sql, w->cols, w->ncols, &w->turn.rows);
}

/*
 * The cursor claim from key, after it or at it (cursor.c), written in
 * place behind the front, and followed by the savepoint a bulk done may
 * go back to.
 */
static enum db_status
claim_from(struct worker *w, enum cursor_from from, const char *key,
    int limit, struct claim_front *f)
{
	struct buf *b = &w->claim_text;

	buf_reset(b);
	claim_front_text(w, f, b);
	lease_ride_open(w, b);
	cursor_claim_sql(b, &w->cursor, from, key, limit,
	    lease_ride_columns(w));
	lease_ride_close(w, b);
	if (w->bulk_done && !w->q->lease.enabled)
		buf_printf(b, ";\nSAVEPOINT %s", CLAIMED_SAVEPOINT);
	return claim_send(w, f, b->data);
}

/*
 * The select's own claim, kept as text behind "COMMIT;\n" (claim_sql_for);
 * a held `done` goes in front of that.
 */
static enum db_status
claim_select(struct worker *w, int limit, struct claim_front *f)
{
	const char *sql;

	if (limit != w->claim_limit)
		claim_sql_for(w, limit);
	sql = w->claim_sql + (f->ahead.commit ? 0 : strlen(COMMIT_FIRST));
	if (w->riding || (!f->sent && (f->ahead.finish || f->ahead.runs ||
	    f->ahead.nextra > 0))) {
		buf_reset(&w->claim_text);
		claim_front_text(w, f, &w->claim_text);
		lease_ride_open(w, &w->claim_text);
		buf_puts(&w->claim_text, w->claim_sql + strlen(COMMIT_FIRST));
		lease_ride_close(w, &w->claim_text);
		sql = w->claim_text.data;
	}
	return claim_send(w, f, sql);
}

/*
 * The first waiting key, for the fallback: a plain read through the
 * select's own index, which locks nothing.  *key is "" when no row waits.
 */
static enum db_status
claim_first_key(struct worker *w, char *key, size_t len)
{
	struct rowset rs = { 0 };
	enum db_status st;

	if (w->cursor.also != NULL) {
		/* Keys left out (limit.per_key): the same, as text. */
		struct buf sql = { 0 };
		struct column *cols = NULL;
		size_t ncols = 0;
		cursor_start_sql(&sql, &w->cursor);
		st = db_query(w->db, sql.data, &rs, &cols, &ncols);
		columns_free(cols, ncols);
		buf_free(&sql);
	} else
		st = db_stmt_fetch_all(w->cursor_start, NULL, 0, &rs);

	key[0] = '\0';
	if (st == DB_OK && rs.nrows > 0 && rs.rows[0].value[0] != NULL &&
	    cursor_key_valid(rs.rows[0].value[0], rs.rows[0].len[0]))
		snprintf(key, len, "%s", rs.rows[0].value[0]);
	rowset_free(&rs, 1);
	return st;
}

/* The cursor moves to the last key claimed, or back when there is none. */
static void
claim_cursor_moved(struct worker *w, enum cursor_from from)
{
	const struct rowset *rs = &w->turn.rows;
	const struct row *last = rs->nrows ? &rs->rows[rs->nrows - 1] : NULL;
	size_t k = w->cursor.key_index;
	const char *key = last != NULL ? last->value[k] : NULL;

	/* No key (no row, or a NULL one) is no error: the cursor rewinds. */
	if (cursor_claimed(&w->cursor_at, from, key, last ? last->len[k] : 0,
	    now_ms()) != 0)
		log_warnx("%s: the key %s cannot be a cursor; claiming from "
		    "the first waiting row", w->q->select.where,
		    key != NULL ? key : "NULL");
}

/*
 * The claim that scans the primary key: from the last key this worker
 * claimed, and when that finds nothing (rows behind the cursor: a retry
 * come due, a rolled back claim, a late INSERT), every CURSOR_FALLBACK_*,
 * or at the start, from the first waiting row.  *fallback says which ran.
 */
static enum db_status
claim_by_cursor(struct worker *w, int limit, struct claim_front *f,
    bool *fallback)
{
	char key[CURSOR_KEY_MAX];
	enum db_status st;

	*fallback = false;
	limit_keys_claim_sql(w);
	if (!cursor_fallback_due(&w->cursor_at, now_ms())) {
		st = claim_from(w, CURSOR_AFTER, w->cursor_at.last,
		    limit, f);
		if (st != DB_OK)
			return st;
		claim_cursor_moved(w, CURSOR_AFTER);
		if (w->turn.rows.nrows > 0)
			return DB_OK;
	}
	*fallback = true;
	if ((st = claim_first_key(w, key, sizeof(key))) != DB_OK)
		return st;
	if (key[0] == '\0') {
		cursor_claimed(&w->cursor_at, CURSOR_AT, NULL, 0, now_ms());
		return DB_OK;
	}
	st = claim_from(w, CURSOR_AT, key, limit, f);
	if (st == DB_OK)
		claim_cursor_moved(w, CURSOR_AT);
	return st;
}

/* ---- the claim by key ---- */

/* The list's layout: one column, the key. */
static const struct column *
claim_key_layout(struct worker *w)
{
	size_t n;

	return db_stmt_columns(w->keyed_list_stmt, &n);
}

/* Read the list of keys again: KEYED_LIST_CLAIMS claims of every worker. */
static enum db_status
claim_key_list(struct worker *w, int limit, struct claim_front *f)
{
	struct buf *b = &w->claim_text;

	rowset_clear(&w->keyed_list, 1);
	w->keyed_next = 0;
	w->keyed_read_ms = now_ms();
	buf_reset(b);
	claim_front_text(w, f, b);
	keyed_list_sql(b, &w->keyed, keyed_list_rows(limit, w->args->of));
	return claim_send_to(w, f, b->data, claim_key_layout(w), 1,
	    &w->keyed_list);
}

/*
 * The next keys of the list, up to max, each a valid integer: first this
 * worker's share (the keys that are its number modulo the queue's
 * workers, so that workers that read the list at different times still
 * do not meet on the same rows), then the others' (a worker that is busy
 * or gone leaves them).  keyed_next counts both passes.
 */
static size_t
claim_key_window(struct worker *w, const char **keys, size_t max)
{
	const struct rowset *l = &w->keyed_list;
	unsigned long long of = w->args->of > 0 ? (unsigned)w->args->of : 1;
	unsigned long long mine = (unsigned)(w->args->number - 1) % of;
	size_t n = 0;

	for (; n < max && w->keyed_next < 2 * l->nrows; w->keyed_next++) {
		bool second = w->keyed_next >= l->nrows;
		const struct row *r = &l->rows[w->keyed_next % l->nrows];
		if (!cursor_key_valid(r->value[0], r->len[0]))
			continue;
		unsigned long long k = strtoull(r->value[0] +
		    (r->value[0][0] == '-'), NULL, 10);
		if ((k % of == mine) != second)
			keys[n++] = r->value[0];
	}
	return n;
}

/* Lock what is free of keys, up to limit rows, and read them. */
static enum db_status
claim_key_lock(struct worker *w, const char **keys, size_t n, int limit,
    struct claim_front *f)
{
	struct buf *b = &w->claim_text;

	buf_reset(b);
	claim_front_text(w, f, b);
	keyed_lock_sql(b, &w->keyed, keys, n, limit);
	if (w->bulk_done && !w->q->lease.enabled)
		buf_printf(b, ";\nSAVEPOINT %s", CLAIMED_SAVEPOINT);
	return claim_send(w, f, b->data);
}

/*
 * The claim by key: the next keys of this worker's share of the list
 * (read again when used up or old), then the next, until they yield
 * rows, or the list was read twice and still yields none (its rows are
 * held by others).
 */
static enum db_status
claim_by_key(struct worker *w, int limit, struct claim_front *f)
{
	size_t window = (size_t)limit, n;
	const char **keys = xcalloc(window, sizeof(*keys));
	enum db_status st = DB_OK;
	int lists = 0;

	while (st == DB_OK && w->turn.rows.nrows == 0) {
		if (w->keyed_next >= 2 * w->keyed_list.nrows ||
		    now_ms() - w->keyed_read_ms >= KEYED_LIST_MS) {
			if (lists++ == 2)
				break;
			st = claim_key_list(w, limit, f);
			if (st != DB_OK || w->keyed_list.nrows == 0)
				break;
		}
		if ((n = claim_key_window(w, keys, window)) > 0)
			st = claim_key_lock(w, keys, n, limit, f);
	}
	free(keys);
	return st;
}

/*
 * The claim came back with the held row's `done` in front (f): counted;
 * or refused, and settled (the row marked failed instead, the transaction
 * still open), and then *again is set: the COMMIT and the claim, which the
 * server did not run after it, go once more.  Returns DB_OK, or the
 * status that ends the turn.
 */
static enum db_status
claim_held_done(struct worker *w, const struct claim_front *f,
    enum db_status st, bool *again)
{
	*again = false;
	if (!f->sent || !f->ahead.finish)
		return DB_OK;
	st = finish_held(w, &f->ahead, st);
	*again = !f->ahead.finished && st == DB_OK;
	return st;
}

/*
 * The claim, or what went in front of it, failed before the server ran
 * the held row's `done` (the link was lost while sending): the log names
 * that row too, as every line about a row does.
 */
static void
claim_failed(struct worker *w, const struct claim_front *f,
    enum db_status st, const char *what)
{
	struct buf ctx = { 0 };

	if (f->ahead.finish && w->turn.holding) {
		struct buf key = { 0 };
		row_key_text(w, &w->turn.held, &key);
		buf_printf(&ctx, "%s for key %s, %s", w->done.sql->where,
		    key.data, what);
		buf_free(&key);
	} else
		buf_puts(&ctx, what);
	worker_db_failed(w, st, ctx.data);
	buf_free(&ctx);
	turn_rolled_back(w);
}

/*
 * limit.per_key: each key of the rows claimed takes a slot.  When none
 * got one, the rows go back at once, and the worker claims again (its
 * claims leave those keys out now), a few times in a row, then waits as
 * for any other limit.  Returns 0 when the turn has ended so, else 1.
 */
static int
claim_keys(struct worker *w)
{
	struct limit_keys *ks = &w->limit.keys;
	int allowed;

	if (!limit_keys_on(w) || w->turn.rows.nrows == 0)
		return 1;
	if ((allowed = limit_keys_claimed(w)) < 0) {
		turn_rolled_back(w);
		return 0;
	}
	if (allowed > 0) {
		ks->retries = 0;
		return 1;
	}
	(void)db_rollback(w->db);
	turn_rolled_back(w);
	limit_keys_release(w);
	if (++ks->retries < 8)
		w->limit.key_retry = true;
	else
		ks->retries = 0;
	return 0;
}

/*
 * The statements in front of a claim failed: the turn is given up, its
 * rows wait again.  rollback: roll the open transaction back first (not
 * after claim_held_done, which leaves it as finish_held settled it).
 * Returns -1, claim_batch's database error.
 */
static int
claim_front_failed(struct worker *w, enum db_status st, struct buf *before,
    struct buf *after, bool rollback)
{
	buf_free(before);
	buf_free(after);
	worker_db_failed(w, st, w->failing);
	if (rollback)
		(void)db_rollback(w->db);
	turn_rolled_back(w);
	return -1;
}

/*
 * Claim a batch, committing the last turn's rows in the same round trip
 * when they are still uncommitted, behind the held row's `done` when
 * there is one.  Returns rows claimed, or -1 after a database error.
 */
int
claim_batch(struct worker *w)
{
	int limit = turn_next_limit(w);
	struct buf before = { 0 }, after = { 0 };
	struct claim_front f = { .ahead = { .finish = w->turn.holding,
	    .finish_rest = w->turn.holding ? w->turn.held_rest : 0,
	    .commit = w->turn.uncommitted }, .before = &before,
	    .after = &after };
	bool with_commit = f.ahead.commit, fallback = false, again;
	enum db_status st, held;
	struct timespec t0, t1;

	limit_front(w, &before, &after, &f.ahead);
	if ((held = runs_front(w, &f.ahead)) != DB_OK)
		return claim_front_failed(w, held, &before, &after, true);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		turn_begin(w);
		w->turn.limit = limit;
		if (w->cursor_on)
			st = claim_by_cursor(w, limit, &f, &fallback);
		else if (w->keyed_on)
			st = claim_by_key(w, limit, &f);
		else
			st = claim_select(w, limit, &f);
		runs_front_done(w, &f.ahead);
		if ((held = claim_held_done(w, &f, st, &again)) != DB_OK)
			return claim_front_failed(w, held, &before, &after,
			    false);
		if (again) {
			/* Nothing ran after the done: the take goes again. */
			buf_reset(&before);
			buf_reset(&after);
			f = (struct claim_front){ .ahead = { .commit = true },
			    .before = &before, .after = &after };
			limit_front(w, &before, &after, &f.ahead);
			/* The row marked failed instead: its run goes too. */
			if ((held = runs_front(w, &f.ahead)) != DB_OK)
				return claim_front_failed(w, held, &before,
				    &after, true);
		}
	} while (again);
	buf_free(&before);
	buf_free(&after);
	/*
	 * The last turn's rows count once their COMMIT went through; an
	 * empty fallback leaves it for worker_commit.
	 */
	if (f.ahead.committed)
		turn_committed(w);
	if (limit_claimed(w, &f.ahead, st) == 0)
		return 0;
	if (st == DB_OK && claim_keys(w) == 0)
		return 0;
	if (st != DB_OK && lease_ride_failed(w, st))
		return 0;
	if (st != DB_OK) {
		claim_failed(w, &f, st, with_commit && !f.ahead.committed ?
		    "commit" : "claim");
		return -1;
	}
	(void)clock_gettime(CLOCK_MONOTONIC, &t1);
	int64_t us = (t1.tv_sec - t0.tv_sec) * 1000000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000;
	if (w->args->stats)
		histogram_add(&w->args->stats->claim, us);
	pickup_note(w);
	claim_time(w, us, fallback ? CLAIM_FALLBACK : with_commit ?
	    CLAIM_WITH_COMMIT : CLAIM_PLAIN);
	if (claim_came_back(w))
		return -1;
	if (w->args->stats && w->turn.rows.nrows > 0)
		w->args->stats->drained_us = 0;
	return (int)w->turn.rows.nrows;
}


/* Prepare the claim for the connection: the select's, and the cursor's. */
enum connect_status
claim_prepare(struct worker *w)
{
	enum connect_status r = claim_prepare_select(w);

	if (r == CONNECT_OK)
		r = claim_prepare_cursor(w);
	return r == CONNECT_OK ? claim_prepare_keyed(w) : r;
}
