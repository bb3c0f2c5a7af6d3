/*
 * worker_db.c: a worker's connection --- connected and its statements
 * bound (worker_connect), lost and given up (worker_disconnect), regained
 * with a growing, jittered wait (worker_ensure_db) --- and how a database
 * problem is logged: once, then at most once a minute while it lasts.
 */
#include "worker.h"
#include "runs.h"

#include <stdlib.h>
#include <string.h>

/*
 * A wait of ms, give or take a quarter: workers that lost the database
 * together must not all come back in the same millisecond.
 */
int64_t
worker_jitter(int64_t ms)
{
	int64_t spread = ms / 2;

	if (spread <= 0)
		return ms;
	return ms - ms / 4 + (int64_t)(backoff_random() % (uint64_t)(spread + 1));
}

/* Log a database problem once, then at most once a minute while it lasts. */
void
worker_db_trouble(struct worker *w, const char *what)
{
	int64_t now = now_ms();

	if (w->db_failures++ == 0) {
		w->db_failing_since = now;
		w->db_last_log = now;
		log_warnx("%s: %s", what, w->db ? db_error(w->db) : "");
	} else if (now - w->db_last_log >= 60000) {
		w->db_last_log = now;
		log_warnx("%s, still (%d tries in %llds): %s", what,
		    w->db_failures,
		    (long long)(now - w->db_failing_since) / 1000,
		    w->db ? db_error(w->db) : "");
	}
}

void
worker_db_ok(struct worker *w)
{
	if (w->db_failures > 0)
		log_info("database back after %llds",
		    (long long)(now_ms() - w->db_failing_since) / 1000);
	w->db_failures = 0;
}

/*
 * A statement of rowq's own made the session's, called name: prepared by
 * SQL where the server can (dialect_stmt_init), so that its EXECUTE in
 * front of a claim is parsed once per connection, not for every row.
 * NULL when the server refuses it (the caller says so, and sends the
 * statement as before).
 */
struct dialect_stmt *
worker_session_stmt(struct worker *w, const char *name, const char *text)
{
	struct dialect_stmt *s = xcalloc(1, sizeof(*s));
	struct buf prepare = { 0 };
	bool ok = dialect_stmt_init(s, db_dialect(w->db), name, text,
	    &prepare) == 0 &&
	    (prepare.len == 0 || db_run(w->db, prepare.data) == DB_OK);

	buf_free(&prepare);
	if (!ok)
		worker_session_stmt_free(&s);
	return s;
}

/* A session's statement, gone with its connection: *s is NULL after. */
void
worker_session_stmt_free(struct dialect_stmt **s)
{
	if (*s == NULL)
		return;
	dialect_stmt_free(*s);
	free(*s);
	*s = NULL;
}

void
worker_disconnect(struct worker *w)
{
	finish_unbind(&w->done);
	finish_unbind(&w->retry);
	finish_unbind(&w->failed);
	finish_unbind(&w->lease);
	finish_unbind(&w->renew);
	finish_unbind(&w->release);
	finish_unbind(&w->gave_up);
	runs_unprepare(w);
	limit_disconnect(w);
	db_stmt_free(w->claim);
	w->claim = NULL;
	free(w->claim_sql);
	w->claim_sql = NULL;
	w->claim_limit = 0;	/* written again by the next claim */
	db_stmt_free(w->cursor_start);
	w->cursor_start = NULL;
	w->cursor_on = false;
	cursor_rewind(&w->cursor_at);
	db_stmt_free(w->keyed_list_stmt);
	w->keyed_list_stmt = NULL;
	w->keyed_on = false;
	rowset_clear(&w->keyed_list, 1);
	w->keyed_next = 0;
	/* A transaction on the link goes with it. */
	if (w->turn.uncommitted)
		turn_rolled_back(w);
	db_close(w->db);
	w->db = NULL;
	w->cols = NULL;
	w->ncols = 0;
}

/* The connection's column of that name, or -1. */
int
worker_column(const struct worker *w, const char *name)
{
	for (size_t i = 0; i < w->ncols; i++)
		if (strcmp(w->cols[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Connect and prepare everything. */
enum connect_status
worker_connect(struct worker *w)
{
	enum db_status st;
	enum connect_status r;

	w->db = db_open(&w->args->cfg->db, &st);
	if (st == DB_CONFIG)
		log_error("database refuses this configuration: %s",
		    db_error(w->db));
	if (st != DB_OK)
		return st == DB_CONFIG ? CONNECT_CONFIG : CONNECT_AWAY;
	if (db_session_limits(w->db, w->q) != DB_OK)
		return CONNECT_AWAY;
	if ((r = claim_prepare(w)) != CONNECT_OK ||
	    (r = finish_bind(w, &w->done, &w->q->done)) != CONNECT_OK ||
	    (r = finish_bind(w, &w->retry, &w->q->retry.update)) != CONNECT_OK ||
	    (r = finish_bind(w, &w->failed, &w->q->failed)) != CONNECT_OK ||
	    (r = finish_bind(w, &w->lease, &w->q->lease.claim)) != CONNECT_OK ||
	    (r = finish_bind(w, &w->renew, &w->q->lease.renew)) != CONNECT_OK ||
	    (r = finish_bind(w, &w->release, &w->q->lease.release)) !=
	    CONNECT_OK ||
	    (r = finish_bind(w, &w->gave_up, &w->q->retry.gave_up)) !=
	    CONNECT_OK || (r = limit_connect(w)) != CONNECT_OK)
		return r;
	if (w->q->runs.enabled && runs_ensure(w->db, w->q) == -1)
		return db_denied(w->db) ? CONNECT_CONFIG : CONNECT_AWAY;
	w->bulk_done = finish_batches_done(w);
	finish_text_bind(w, &w->done);
	finish_text_bind_lease(w);
	lease_ride_bind(w);
	runs_prepare(w);
	pickup_clock_read(w);
	return CONNECT_OK;
}

/* Connect, waiting with capped backoff while the database is away. */
enum connect_status
worker_ensure_db(struct worker *w)
{
	while (w->db == NULL || w->claim == NULL) {
		worker_disconnect(w);
		enum connect_status r = worker_connect(w);
		if (r == CONNECT_OK) {
			if (w->db_failures > 0 && w->args->stats)
				w->args->stats->reconnects++;
			worker_db_ok(w);
			return CONNECT_OK;
		}
		if (r == CONNECT_CONFIG)
			return CONNECT_CONFIG;
		worker_set_state(w, WORKER_DB_DOWN, NULL);
		worker_db_trouble(w, "cannot connect to the database");
		/* Half prepared is not connected: all of it again next time. */
		worker_disconnect(w);
		if (stopper_sleep(&w->stopper, worker_jitter(
		    backoff_capped_ms(500, 30000, w->db_failures))))
			return CONNECT_AWAY;
	}
	return CONNECT_OK;
}

/*
 * After a failed statement: roll back, and wait before the next turn so
 * that a broken database or statement never turns into a hot loop.  The
 * caller ends the turn (turn_rolled_back).
 */
void
worker_db_failed(struct worker *w, enum db_status st, const char *what)
{
	/* A deadlock rolled back and retried is InnoDB's way, not an error. */
	if (w->args->stats && st != DB_RETRY)
		w->args->stats->errors++;
	worker_note_error(w, what, db_error(w->db));
	switch (st) {
	case DB_RETRY:
		if (w->args->stats)
			w->args->stats->db_retries++;
		/* A deadlock or lock wait: common, cheap, retried quietly. */
		log_info("%s: %s; rolled back, will retry", what,
		    db_error(w->db));
		(void)db_rollback(w->db);
		limit_release(w);
		stopper_sleep(&w->stopper, 10 + (int64_t)(backoff_random() % 200));
		return;
	case DB_RECONNECT:
		worker_db_trouble(w, what);
		worker_disconnect(w);
		/* A link that drops at every turn must not spin either. */
		stopper_sleep(&w->stopper, worker_jitter(
		    backoff_capped_ms(100, 30000, w->db_failures)));
		return;
	default:
		/* Bad SQL or data: it will likely fail again, so wait longer. */
		log_error("%s: %s", what, db_error(w->db));
		(void)db_rollback(w->db);
		limit_release(w);
		if (w->db_failures++ == 0)
			w->db_failing_since = now_ms();
		stopper_sleep(&w->stopper,
		    backoff_capped_ms(1000, 60000, w->db_failures));
		return;
	}
}
