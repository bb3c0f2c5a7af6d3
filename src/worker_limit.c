/*
 * worker_limit.c: a queue's limit:, the worker's side.  Before a claim
 * may start handlers, it takes what the limit gives (limit.c): a token of
 * the rate, a concurrency slot, and neither while the queue is throttled.
 *
 * Transaction mode, where the claim's transaction lasts as long as its
 * handlers: the take rides in the claim's round trip, after the last
 * turn's COMMIT and before the claim,
 *
 *	DO RELEASE_LOCK('rowq:H:2');		the last turn's slot
 *	UPDATE rowq_limit SET took = ...;	the token, refilled first
 *	COMMIT;					the token, apart from the rows
 *	SELECT CASE WHEN <throttled> THEN -1 WHEN took = 0 THEN 0
 *	    WHEN GET_LOCK('rowq:H:2', 0) THEN 2 WHEN ... ELSE 0 END, took;
 *	<the claim>
 *
 * so that the token is committed before its handler starts (a start is
 * never given back: a crash after it costs the rate, never exceeds it),
 * and the slot is the session's from the transaction that holds the
 * rows until the COMMIT that finishes them; whatever ends the session
 * frees both.  The bucket's row is locked only for its UPDATE and COMMIT.
 * With no token there, the take reserves the next one when it is due
 * within LIMIT_AHEAD_MS (the bucket goes into debt; the UPDATE's
 * LAST_INSERT_ID says when it is due), and the worker sleeps until then
 * with the rows it claimed before their handler starts
 * (limit_await_due): each waiting worker waits for a token of its own,
 * and none falls due with nobody there to take it.
 * A take that fails has the rows just claimed rolled back at once (a
 * turn that did not get a slot claims nothing), and the worker then
 * waits: it polls the take alone, with no claim, until it succeeds
 *
 *	<the take as above>; COMMIT; START TRANSACTION; <the gate>
 *
 * (the slot is taken inside a transaction: a host that freezes then has
 * its session ended by the server's idle transaction limit, db_limits.c),
 * and claims in the next round trip.  Without a rate, that poll's gate
 * waits in the server for one slot's lock (LIMIT_GATE_WAIT), and a worker
 * that has held its slot for its turn gives it up behind its next claim's
 * COMMIT and takes one again in the same round trip
 * (limit_slot_turn_over): the waiter gets it first, so that daemons that
 * all have work share the slots.  A token the turn did not use (no
 * row found, a slot not got) goes back with the next take.
 *
 * Lease mode, where no transaction is open while a handler runs: the
 * token and a slot's lease are taken in the claim's transaction (short,
 * committed with the rows' leases), the slot's lease is renewed with the
 * row's (lease_renew) and given up with its finishing statement, handed
 * over after a turn where another daemon waits (worker_limit_lease.c); a
 * take that fails rolls the claim back with it.
 *
 * A handler's "throttle N" stops the turn: its row goes back untouched
 * (no try counted), and the queue's throttle is written, in a
 * transaction of its own, once the turn is committed; every daemon's next
 * take sees it.
 */
#include "worker.h"

#include <stdlib.h>
#include <string.h>

const char *const limit_reason_names[LIMIT_REASONS] = {
	[LIMIT_CONCURRENCY] = "concurrency",
	[LIMIT_RATE] = "rate",
	[LIMIT_THROTTLE] = "throttle",
	[LIMIT_KEY_CONCURRENCY] = "key_concurrency",
	[LIMIT_KEY_RATE] = "key_rate",
	[LIMIT_KEY_THROTTLE] = "key_throttle",
};

/* The most values a take's statement takes. */
#define LIMIT_VALUES_MAX	5
/*
 * Transaction mode: a worker that has held a slot this long gives it up
 * at its next claim, and takes one again in the same round trip; a
 * worker waiting for that slot's lock in the server gets it first.
 */

static bool
limit_on(const struct worker *w)
{
	return w->q->limit.enabled;
}

static bool
limit_has_rate(const struct worker *w)
{
	return w->q->limit.rate.count > 0;
}

/* ---- the connection ---- */

/* The queue's rows of the limit table, where they are not (committed). */
static enum db_status
limit_rows(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	struct buf sql = { 0 };
	enum db_status st;

	limit_sql_rows(&sql, &l->ctx, &l->scope, w->q->lease.enabled ?
	    w->q->limit.concurrency : 0);
	if ((st = db_run(w->db, sql.data)) == DB_OK)
		st = db_commit(w->db);
	buf_free(&sql);
	l->rows_missing = false;
	return st;
}

/*
 * The statement in b made the session's as which (dialect_stmt_init:
 * PREPAREd where the server can, parsed once per connection).
 */
static enum db_status
limit_prepare_one(struct worker *w, enum limit_stmt which, const char *name,
    struct buf *b)
{
	struct buf sql = { 0 };
	enum db_status st = DB_OK;

	/* rowq's own text: one it cannot read apart is a bug of rowq's. */
	if (dialect_stmt_init(&w->limit.stmt[which], db_dialect(w->db), name,
	    b->data, &sql) != 0)
		fatalx("limit: cannot read statement %s apart", name);
	if (sql.len > 0)
		st = db_run(w->db, sql.data);
	buf_free(&sql);
	buf_reset(b);
	return st;
}

/* The statements of the last connection, gone with it. */
static void
limit_stmts_free(struct worker_limit *l)
{
	for (int i = 0; i < LIMIT_STMTS; i++)
		dialect_stmt_free(&l->stmt[i]);
}

/*
 * Append statement which with these integer values and a ";\n" (as
 * limit_take_sql sends it).
 */
static void
limit_execute(struct worker *w, struct buf *b, enum limit_stmt which,
    const long long *v, size_t n)
{
	struct value values[LIMIT_VALUES_MAX];

	for (size_t i = 0; i < n && i < LIMIT_VALUES_MAX; i++)
		values[i] = (struct value){ .type = VALUE_INT, .i = v[i] };
	if (!dialect_stmt_execute(&w->limit.stmt[which], b, values, n))
		fatalx("limit: statement %d takes %zu values", (int)which, n);
	buf_puts(b, ";\n");
}

/* The slot a worker tries first when it has none to go back to. */
static int
limit_first_slot(const struct worker *w)
{
	int n = w->q->limit.concurrency;

	return (w->args->number - 1) % (n > 0 ? n : 1) + 1;
}

/*
 * The take's statements, prepared on the connection where the server
 * can, so that the claim's round trip carries only their EXECUTEs: the
 * server parses them once (as for the done in front of it,
 * worker_finish_text.c).
 */
static enum db_status
limit_prepare(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	const struct limit_policy *p = &w->q->limit;
	bool lease = w->q->lease.enabled;
	struct buf b = { 0 };
	enum db_status st = DB_OK;

	limit_stmts_free(l);
	if (p->rate.count > 0) {
		limit_sql_rate_take(&b, &l->ctx, &l->scope, &p->rate, false);
		st = limit_prepare_one(w, LIMIT_TAKE, "rowq_limit_take", &b);
	}
	if (st == DB_OK && p->rate.count > 0 && !lease) {
		limit_sql_rate_take(&b, &l->ctx, &l->scope, &p->rate, true);
		st = limit_prepare_one(w, LIMIT_TAKE_IF, "rowq_limit_take_if",
		    &b);
	}
	if (st == DB_OK && !lease && p->concurrency > 0) {
		/* The gate without the slot, for a worker that holds one. */
		limit_sql_gate(&b, &l->ctx, &l->scope, 0, 1,
		    p->rate.count > 0 ? &p->rate : NULL, false);
		st = limit_prepare_one(w, LIMIT_CHECK, "rowq_limit_check", &b);
	}
	if (st == DB_OK) {
		limit_sql_gate(&b, &l->ctx, &l->scope, lease ? 0 :
		    p->concurrency, limit_first_slot(w),
		    p->rate.count > 0 ? &p->rate : NULL, false);
		st = limit_prepare_one(w, LIMIT_GATE, "rowq_limit_gate", &b);
	}
	/*
	 * A waiting worker's poll waits for a slot in the server; with a
	 * rate, alone first (limit_poll_slot): the rate's take keeps the
	 * bucket's row locked until the poll's COMMIT, so it comes only
	 * once the slot is held.
	 */
	l->gate_waits = st == DB_OK && !lease && p->concurrency > 0;
	if (l->gate_waits) {
		limit_sql_gate(&b, &l->ctx, &l->scope, p->concurrency,
		    limit_first_slot(w), NULL, true);
		st = limit_prepare_one(w, LIMIT_GATE_WAIT,
		    "rowq_limit_gate_wait", &b);
	}
	if (st == DB_OK && lease && p->concurrency > 0) {
		limit_sql_lease_take(&b, &l->ctx, &l->scope, p->concurrency,
		    limit_daemon_id(w));
		st = limit_prepare_one(w, LIMIT_LEASE, "rowq_limit_lease", &b);
	}
	buf_free(&b);
	return st;
}

/*
 * A new connection: the names of its locks (the session's database), the
 * limit table, and the queue's rows in it.  Nothing is held on it yet.
 */
enum connect_status
limit_connect(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };
	enum db_status st;
	enum connect_status r = CONNECT_OK;

	l->slot = 0;
	l->lease_held = false;
	l->polled = false;
	if (!limit_on(w))
		return CONNECT_OK;
	st = db_query(w->db, "SELECT DATABASE()", &rs, &cols, &ncols);
	if (st != DB_OK || rs.nrows != 1) {
		log_error("%s: %s", w->q->limit.where, db_error(w->db));
		r = st == DB_RECONNECT || st == DB_OK ? CONNECT_AWAY :
		    CONNECT_CONFIG;
		goto out;
	}
	limit_ctx_init(&l->ctx, w->args->cfg, w->q, rs.rows[0].value[0]);
	limit_scope(&l->scope, &l->ctx, NULL, 0, false);
	if (limit_table_ensure(w->db, &l->ctx, &st) == -1) {
		r = st == DB_RECONNECT ? CONNECT_AWAY : CONNECT_CONFIG;
		goto out;
	}
	if ((st = limit_rows(w)) == DB_OK)
		st = limit_prepare(w);
	if (st != DB_OK) {
		log_error("%s: limit_table: %s: %s", w->q->limit.where,
		    l->ctx.table, db_error(w->db));
		r = st == DB_RECONNECT ? CONNECT_AWAY : CONNECT_CONFIG;
	}
	if (r == CONNECT_OK)
		r = limit_keys_connect(w);
out:
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	buf_free(&sql);
	return r;
}

/* The connection is gone, and what its session held with it. */
void
limit_disconnect(struct worker *w)
{
	limit_keys_disconnect(w);
	limit_stmts_free(&w->limit);
	w->limit.slot = 0;
	w->limit.lease_held = false;
	w->limit.polled = false;
	if (w->args->stats)
		w->args->stats->limit_held = 0;
}

/* ---- the take's text ---- */

/*
 * Whether the worker needs a concurrency slot for the claim: in
 * transaction mode a slot is the worker's while it claims rows one turn
 * after another, and it takes one only when it holds none.
 */
static bool
limit_needs_slot(const struct worker *w)
{
	return !w->q->lease.enabled && w->q->limit.concurrency > 0 &&
	    w->limit.slot == 0;
}

/*
 * Whether the gate (or, with a slot held, the look at the throttle) is
 * to run with this take: to take a slot; in lease mode, always; and for
 * a queue without a rate (whose take looks at the throttle anyway) every
 * LIMIT_CHECK_MS at most.
 */
static bool
limit_gate_due(const struct worker *w, int64_t now)
{
	return w->q->lease.enabled || limit_needs_slot(w) ||
	    (!limit_has_rate(w) && now - w->limit.checked_ms >= LIMIT_CHECK_MS);
}

/*
 * Whether the claim may start its handler on a token the last take
 * reserved (limit_reserve_size): at batch 1 in transaction mode, with no
 * slot to take, within LIMIT_RESERVE_MS of that take.  The take after
 * gives back what is left, as for any token not used.
 */
static bool
limit_reserved(const struct worker *w)
{
	const struct worker_limit *l = &w->limit;

	return limit_has_rate(w) && w->q->batch == 1 && l->refund > 0 &&
	    now_ms() < l->reserve_until_ms;
}

/*
 * The gate that waits in the server for a slot (LIMIT_GATE_WAIT): the
 * worker's last slot first, then a slot of the others', picked at random
 * so that waiters wait on each in turn.
 */
static void
limit_gate_wait(struct worker *w, struct buf *b)
{
	struct worker_limit *l = &w->limit;
	long long any = (long long)(backoff_random() %
	    (uint64_t)w->q->limit.concurrency) + 1;

	limit_execute(w, b, LIMIT_GATE_WAIT, (long long[]){ l->last_slot,
	    l->last_slot, l->last_slot, any, any }, 5);
}

/*
 * The take's statements, each a result of its own, their places kept in
 * l->at_* (counted across before and after, as the results come).  For a
 * claim's front (poll false), before goes ahead of the claim's COMMIT and
 * after behind it: in transaction mode the rate's UPDATE is then
 * committed with the last turn's rows, in the same COMMIT, before the
 * handler it pays for starts, and the bucket's row is locked for that
 * moment only.  For a poll, all goes into before, with a COMMIT of its
 * own.  want is how many tokens to take.  Returns how many statements
 * went into before.
 */
static int
limit_take_sql(struct worker *w, struct buf *before, struct buf *after,
    bool poll, int want)
{
	struct worker_limit *l = &w->limit;
	const struct limit_policy *p = &w->q->limit;
	bool lease = w->q->lease.enabled, slot = limit_needs_slot(w);
	bool gate = poll || limit_gate_due(w, now_ms());
	bool reserved = !lease && !poll && !slot && limit_reserved(w);
	struct buf *b = lease && !poll ? after : before;
	int nbefore;

	l->nfront = 0;
	l->at_rate = l->at_iff = l->at_gate = l->at_lease = -1;
	l->at_commit = l->at_yield = -1;
	if (poll && lease && p->concurrency > 0)
		limit_lease_want_front(w, b);
	if (reserved) {
		/* A token of the last take's, not yet used: no take. */
	} else if (limit_has_rate(w) && !lease && !poll && !slot) {
		/* Some tokens or none, as the rows it changes say; the
		 * refund each time the statement reads the bucket. */
		long long refunds[LIMIT_VALUES_MAX];

		for (int i = 0; i < LIMIT_VALUES_MAX; i++)
			refunds[i] = l->refund;
		limit_execute(w, b, LIMIT_TAKE_IF, refunds,
		    l->stmt[LIMIT_TAKE_IF].nholes);
		l->at_iff = l->nfront++;
	} else if (limit_has_rate(w)) {
		long long back = lease ? 0 : l->refund;
		limit_execute(w, b, LIMIT_TAKE, (long long[]){ back, want,
		    back, back }, 4);
	}
	if (limit_has_rate(w) && !reserved) {
		if (l->at_iff < 0)
			l->at_rate = l->nfront++;
		l->refund_sent = lease ? 0 : l->refund;
		l->refund = 0;
	}
	nbefore = b == before ? l->nfront : 0;
	if (!poll)
		b = after;
	if (l->yield_slot > 0 && !poll) {
		/* Its turn is over: the lock goes (to a waiter first). */
		buf_puts(b, "DO RELEASE_LOCK(");
		limit_lock_name(b, &l->scope, l->yield_slot);
		buf_puts(b, ");\n");
		l->at_yield = l->nfront++;
	}
	if (gate && slot && poll && l->gate_waits)
		limit_gate_wait(w, b);
	else if (gate && slot)
		limit_execute(w, b, LIMIT_GATE, (long long[]){ l->last_slot,
		    l->last_slot, l->last_slot }, 3);
	else if (gate && !lease && p->concurrency > 0)
		limit_execute(w, b, LIMIT_CHECK, NULL, 0);
	else if (gate)
		limit_execute(w, b, LIMIT_GATE, NULL, 0);
	if (gate)
		l->at_gate = l->nfront++;
	if (poll && !lease) {
		/* The token's COMMIT, and the slot's transaction. */
		buf_puts(b, "COMMIT;\nSTART TRANSACTION;\n");
		l->at_commit = l->nfront;
		l->nfront += 2;
	}
	if (lease && p->concurrency > 0)
		limit_lease_front(w, b);
	return poll ? l->nfront : nbefore;
}

/* ---- what the take gave ---- */

/* Microseconds of a value that may be NULL or negative, as ms from now. */
static int64_t
limit_us_to_ms(const struct db_ahead_result *r, int i)
{
	if (!r->row || r->null[i] || r->value[i] <= 0)
		return -1;
	return (r->value[i] + 999) / 1000;
}

/*
 * How late a handler may start after its token was due (limit_late):
 * half a token's time, at least LIMIT_RESERVE_MS; a start within it adds
 * at most one to a window of the rate's starts.
 */
static int64_t
limit_late_ms(const struct worker *w)
{
	const struct limit_rate *r = &w->q->limit.rate;
	int64_t half = r->count > 0 ? r->period_ms / r->count / 2 : 0;

	return half > LIMIT_RESERVE_MS ? half : LIMIT_RESERVE_MS;
}

/*
 * The rate's part of the results: *tokens taken, counted to go back
 * until handlers start (in transaction mode only once the COMMIT after
 * the take ran; if it did not, the take was rolled back, and what it
 * carried back goes with the next one), and when the first of them is
 * due (l->due_ms; a reserved token's is later than now).
 */
static void
limit_tokens(struct worker *w, const struct db_ahead_result *res, int ran,
    bool committed, int *tokens)
{
	struct worker_limit *l = &w->limit;
	const struct db_ahead_result *gate = l->at_gate >= 0 &&
	    l->at_gate < ran && res[l->at_gate].row ? &res[l->at_gate] : NULL;
	long long due_us = 0;

	if (l->at_iff >= 0) {
		if (l->at_iff < ran && res[l->at_iff].affected > 0) {
			due_us = (long long)res[l->at_iff].insert_id;
			*tokens = limit_take_took(&l->ctx, &w->q->limit.rate,
			    due_us);
		} else
			*tokens = 0;
	} else if (gate != NULL && !gate->null[2]) {
		*tokens = (int)gate->value[2];
		if (*tokens > 0 && !gate->null[3])
			due_us = gate->value[3];
	} else
		*tokens = 0;
	l->due_ms = 0;
	if (w->q->lease.enabled)
		return;
	if (committed && *tokens > 0 && due_us > 0)
		l->due_ms = now_ms() + (due_us + 999) / 1000;
	if (committed && *tokens > 0)
		l->start_by_ms = (l->due_ms > 0 ? l->due_ms : now_ms()) +
		    limit_late_ms(w);
	if (!committed) {
		l->refund += l->refund_sent;
		*tokens = 0;
		return;
	}
	/* A take that changed no row gave nothing back either. */
	if (l->at_iff >= 0 && *tokens == 0)
		l->refund += l->refund_sent;
	l->refund += *tokens;
	if (l->at_iff >= 0 && *tokens > 1)
		l->reserve_until_ms = (l->due_ms > 0 ? l->due_ms : now_ms()) +
		    LIMIT_RESERVE_MS;
}

/*
 * What the take's results say (ran: how many of its statements ran;
 * committed: whether the COMMIT after the rate's take did): true when the
 * turn may start handlers, *tokens those it took; otherwise the reason
 * and the wait are kept.
 */
static bool
limit_took(struct worker *w, const struct db_ahead_result *res, int ran,
    bool committed, int *tokens)
{
	struct worker_limit *l = &w->limit;
	const struct db_ahead_result *gate = l->at_gate >= 0 &&
	    l->at_gate < ran ? &res[l->at_gate] : NULL;
	long long g = gate && gate->row && !gate->null[0] ? gate->value[0] : 1;

	/* A slot whose release did not run is the session's still. */
	if (l->yield_slot > 0 && (l->at_yield < 0 || l->at_yield >= ran))
		l->slot = l->yield_slot;
	l->yield_slot = 0;
	*tokens = w->q->batch;
	if (l->at_iff >= 0 || l->at_rate >= 0)
		limit_tokens(w, res, ran, committed, tokens);
	if (l->at_gate >= 0 && gate == NULL)
		return false;		/* it did not run: an error follows */
	if (gate != NULL) {
		l->checked_ms = now_ms();
		if (!gate->row) {
			if (!l->rows_missing)
				log_warnx("%s: the queue's row of %s is gone; "
				    "making it again", w->q->limit.where,
				    l->ctx.table);
			l->rows_missing = true;
			limit_wait_begins(w, LIMIT_CONCURRENCY, -1);
			return false;
		}
	}
	if (g < 0) {
		limit_wait_begins(w, LIMIT_THROTTLE, limit_us_to_ms(gate, 1));
		return false;
	}
	if ((l->at_iff >= 0 || l->at_rate >= 0) && *tokens <= 0) {
		/* Until a take can reserve a token; without the gate, the
		 * poll that follows at once says why, and until when. */
		limit_wait_begins(w, LIMIT_RATE, gate != NULL ?
		    limit_us_to_ms(gate, 3) : 0);
		return false;
	}
	if (gate != NULL && !w->q->lease.enabled &&
	    w->q->limit.concurrency > 0 && l->slot == 0 && g > 0) {
		l->slot = l->last_slot = (int)g;
		l->slot_since_ms = now_ms();
	}
	if (l->at_lease >= 0 && l->at_lease < ran)
		limit_lease_took(w, res[l->at_lease].affected > 0);
	if (g == 0 || (l->at_lease >= 0 && (l->at_lease >= ran ||
	    res[l->at_lease].affected == 0))) {
		limit_wait_begins(w, LIMIT_CONCURRENCY, -1);
		return false;
	}
	l->lease_held = l->at_lease >= 0;
	if (w->args->stats)
		w->args->stats->limit_held = l->slot > 0 || l->lease_held;
	if (l->waiting)
		log_debug("the limit lets the worker claim again");
	l->waiting = false;
	l->misses = 0;
	return true;
}

/* ---- around the claim ---- */

/*
 * Before a claim: whether to poll the take alone first (the last take
 * failed, or the claim's LIMIT must wait for the tokens it gets).
 */
static bool
limit_must_poll(const struct worker *w)
{
	return w->limit.waiting || (limit_has_rate(w) && w->q->batch > 1 &&
	    !w->q->lease.enabled);
}

/*
 * A poll of a queue with a rate and a concurrency, by a worker with no
 * slot: it first waits in the server for a slot alone (LIMIT_GATE_WAIT,
 * up to LIMIT_SLOT_WAIT_S, a round trip of the poll's own), so that the
 * poll's rate take, which locks the bucket's row until its COMMIT, comes
 * only with the slot held; and so a worker that waits shares the slots
 * with those that hold them (limit_slot_turn_over), as without a rate.
 * Returns 1 with the slot held, 0 when none came or the scope is
 * throttled (the wait begun), -1 after a database error.
 */
static int
limit_poll_slot(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	struct db_ahead_result res[1];
	struct buf sql = { 0 };
	long long g;
	enum db_status st;

	limit_gate_wait(w, &sql);
	st = db_run_results(w->db, sql.data, 1, res);
	buf_free(&sql);
	if (st != DB_OK) {
		worker_db_failed(w, st, "limit");
		return -1;
	}
	if (!res[0].row) {
		/* The queue's row is gone: the poll that follows says so. */
		return 1;
	}
	g = res[0].null[0] ? 0 : res[0].value[0];
	if (g < 0) {
		limit_wait_begins(w, LIMIT_THROTTLE, limit_us_to_ms(&res[0], 1));
		return 0;
	}
	if (g == 0) {
		limit_wait_begins(w, LIMIT_CONCURRENCY, -1);
		return 0;
	}
	l->slot = l->last_slot = (int)g;
	l->slot_since_ms = now_ms();
	return 1;
}

/*
 * The take alone, in a round trip of its own, before the claim.  Returns
 * 1 when the claim may go (what it needs is held, in a transaction), 0
 * when the limit holds the worker back (nothing held, no transaction
 * open; the caller waits), -1 after a database error.
 */
static int
limit_poll(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	struct db_ahead_result res[DB_AHEAD_EXTRA_MAX];
	struct buf sql = { 0 };
	enum db_status st;
	int tokens = 0, late;
	bool ok;

	if (l->rows_missing && (st = limit_rows(w)) != DB_OK) {
		worker_db_failed(w, st, "limit");
		return -1;
	}
	if (w->q->lease.enabled)
		lease_new_token(&w->limit.token);
	l->polled_ms = now_ms();
	if (limit_has_rate(w) && limit_needs_slot(w) && l->gate_waits &&
	    (late = limit_poll_slot(w)) <= 0) {
		l->polled_ms = now_ms() - l->polled_ms;
		return late;
	}
	limit_take_sql(w, &sql, NULL, true, w->q->batch);
	st = db_run_results(w->db, sql.data, l->nfront, res);
	l->polled_ms = now_ms() - l->polled_ms;
	buf_free(&sql);
	if (st != DB_OK) {
		worker_db_failed(w, st, "limit");
		return -1;
	}
	ok = limit_took(w, res, l->nfront, l->at_commit >= 0, &tokens);
	if (ok && (late = limit_await_due(w)) != 0) {
		/* Stopping: what the poll took goes back with
		 * limit_release; too late: the worker takes again. */
		ok = false;
		l->waiting = late > 0;
	}
	if (!ok) {
		(void)db_rollback(w->db);
		return 0;
	}
	l->polled = true;
	l->allow = tokens;
	return 1;
}

/*
 * Before a claim.  Returns 1 when it may go: with the take in its front
 * (limit_front says what), or with what it needs already held; 0 when
 * the worker must wait (limit_wait); -1 after a database error.
 */
int
limit_before_claim(struct worker *w)
{
	struct worker_limit *l = &w->limit;

	l->started = 0;
	l->allow = w->q->batch;
	if (!limit_on(w))
		return 1;
	limit_keys_before_claim(w);
	if (limit_must_poll(w) && !l->polled) {
		/* What the last turn left uncommitted goes first. */
		if (w->turn.uncommitted && worker_commit(w) != 0)
			return -1;
		return limit_poll(w);
	}
	if (w->q->lease.enabled && !l->polled)
		lease_new_token(&w->limit.token);
	return 1;
}

/*
 * Whether the worker's slot has been its own for its turn
 * (LIMIT_SLOT_TURN_MS): it then gives it up in this claim's front and
 * takes one again in the same round trip, which a worker that waits
 * for that slot's lock in the server (LIMIT_GATE_WAIT) gets first.  So
 * daemons that all have work share the slots over time, and the claims
 * of a worker nobody waits for go on as before, with no round trip
 * more.
 */
static bool
limit_slot_turn_over(const struct worker *w)
{
	const struct worker_limit *l = &w->limit;

	return l->gate_waits && l->slot > 0 &&
	    now_ms() - l->slot_since_ms >= LIMIT_SLOT_TURN_MS;
}

/*
 * The take to send in the claim's front: into before, ahead of its
 * COMMIT, and after, behind it; the counts in ahead (which then has a
 * COMMIT, whatever the last turn left).  Nothing when a poll took what
 * the claim needs already.
 */
void
limit_front(struct worker *w, struct buf *before, struct buf *after,
    struct db_ahead *ahead)
{
	struct worker_limit *l = &w->limit;

	ahead->nextra = ahead->nbefore = 0;
	l->nfront = 0;
	l->at_rate = l->at_iff = l->at_gate = l->at_lease = -1;
	l->at_commit = l->at_keys = -1;
	if (!limit_on(w))
		return;
	if (!l->polled && limit_slot_turn_over(w)) {
		l->yield_slot = l->slot;
		l->slot = 0;
	}
	if (!l->polled)
		ahead->nbefore = limit_take_sql(w, before, after, false, 1);
	/* The last turn's keys' slots, once its COMMIT is through. */
	if (limit_keys_front(w, after) > 0)
		l->at_keys = l->nfront++;
	ahead->nextra = l->nfront;
	if (ahead->nbefore > 0)
		ahead->commit = true;
}

/*
 * After the claim: whether its rows may be worked.  A take that failed
 * has them rolled back (so that no worker is kept from them) and makes
 * the turn end with nothing: the caller waits (limit_wait).  Returns 1:
 * work them; 0: the limit holds the worker back; the claim's own result
 * decides otherwise.
 */
int
limit_claimed(struct worker *w, const struct db_ahead *ahead,
    enum db_status st)
{
	struct worker_limit *l = &w->limit;
	int tokens;

	if (!limit_on(w))
		return 1;
	if (l->at_keys >= 0 && ahead->extra_ran > l->at_keys)
		limit_keys_released(w);
	if (l->polled) {
		l->polled = false;
		/* The claim after the poll's sleep came too late. */
		if (st == DB_OK && limit_late(w)) {
			(void)db_rollback(w->db);
			turn_rolled_back(w);
			return 0;
		}
		l->start_by_ms = 0;
		return 1;
	}
	if (l->at_gate < 0 && l->at_iff < 0 && l->at_rate < 0)
		return 1;
	if (st != DB_OK) {
		/* Whatever was taken is released by the error's path. */
		(void)limit_took(w, ahead->extra, ahead->extra_ran,
		    ahead->committed, &tokens);
		return 1;
	}
	if (limit_took(w, ahead->extra, ahead->extra_ran, ahead->committed,
	    &tokens) && limit_await_due(w) == 0) {
		l->allow = tokens < w->q->batch ? tokens : w->q->batch;
		l->start_by_ms = 0;
		return 1;
	}
	(void)db_rollback(w->db);
	turn_rolled_back(w);
	return 0;
}

/* A handler of the turn starts: its token is spent. */
void
limit_started(struct worker *w)
{
	struct worker_limit *l = &w->limit;

	l->started++;
	if (l->refund > 0 && !w->q->lease.enabled)
		l->refund--;
}

/* Whether the turn may start one more handler. */
bool
limit_allows(const struct worker *w)
{
	return w->limit.started < w->limit.allow;
}

/*
 * Transaction mode, with no transaction open and no claim to follow (the
 * worker is to idle, wait or stop): the slot's lock goes, and tokens not
 * used go back.  Errors are only logged: the session's end frees them.
 */
void
limit_release(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	struct buf sql = { 0 };

	if (!limit_on(w) || w->db == NULL || w->q->lease.enabled)
		return;
	limit_keys_release(w);
	if (l->slot > 0) {
		buf_puts(&sql, "DO RELEASE_LOCK(");
		limit_lock_name(&sql, &l->scope, l->slot);
		buf_puts(&sql, ")");
	}
	if (l->refund > 0) {
		if (sql.len > 0)
			buf_puts(&sql, ";\n");
		limit_sql_refund(&sql, &l->ctx, &l->scope, l->refund);
		buf_puts(&sql, ";\nCOMMIT");
	}
	if (sql.len > 0 && db_run_count(w->db, sql.data,
	    &(unsigned long long){ 0 }) != DB_OK)
		log_debug("limit: %s", db_error(w->db));
	l->slot = 0;
	l->refund = 0;
	l->polled = false;
	if (w->args->stats)
		w->args->stats->limit_held = 0;
	buf_free(&sql);
}

void
limit_free(struct worker *w)
{
	buf_free(&w->limit.throttle_reason);
	limit_keys_free(w);
}
