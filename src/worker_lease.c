/*
 * worker_lease.c: lease mode.  Claim and lease the batch in one short
 * transaction, then handle each row with no transaction open and no lock
 * held, renewing its lease while the handler runs, and finish each in a
 * transaction of its own, only while the lease is still this worker's.
 */
#include "worker.h"

#include <string.h>

/*
 * A token unique to this claim, for :lease and :lease_int (and for the
 * lease of a limit's slot, worker_limit.c).
 */
void
lease_new_token(struct lease_token *token)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t a = backoff_random(), b = backoff_random();

	for (int i = 0; i < 16; i++) {
		token->hex[i] = hex[(a >> (i * 4)) & 15];
		token->hex[16 + i] = hex[(b >> (i * 4)) & 15];
	}
	token->hex[32] = '\0';
	/* 1 to 2^63 - 1: positive in a signed BIGINT and an unsigned one. */
	token->n = (long long)(a >> 1);
	if (token->n == 0)
		token->n = 1;
}

/*
 * Reconnect for a renewal after the link was lost.  The statements are
 * bound for the new connection's columns: when an ALTER TABLE during the
 * outage changed them, the leased row (read with the old ones) cannot be
 * renewed with them.
 */
static enum db_status
lease_reconnect(struct worker *w)
{
	if (w->db != NULL && w->claim != NULL)
		return DB_OK;
	worker_disconnect(w);
	if (worker_connect(w) != CONNECT_OK) {
		worker_disconnect(w);
		return DB_RECONNECT;
	}
	return turn_layout_current(w) ? DB_OK : DB_FATAL;
}

/*
 * Lease renewal, called while the handler runs: run lease.renew (or
 * lease.claim again) in a short transaction of its own.  A renewal that
 * changes no row means the lease is lost, and a lease that could not be
 * renewed for two thirds of its duration is about to run out: either way
 * another worker may take the row, so this handler is stopped.
 */
int
lease_renew(void *ctx, struct handler_result *res)
{
	struct worker *w = ctx;
	const struct row *row = w->leased_row;
	int64_t duration = w->q->lease.duration_ms;
	unsigned long long affected = 0;
	bool slot_kept = true;
	enum db_status st = lease_reconnect(w);

	if (st == DB_FATAL) {
		log_error("%s: the select's columns changed while the database "
		    "was away; stopping the handler, the row comes back when "
		    "its lease runs out", w->q->select.where);
		buf_puts(&res->error, "the select's columns changed");
		return 1;
	}
	if (st == DB_OK) {
		st = finish_exec(w, w->renew.stmt ? &w->renew : &w->lease, row,
		    w->leased_attempt, 0, &affected);
		if (st == DB_OK && affected > 0)
			st = limit_lease_keep(w, true, &slot_kept);
		if (st == DB_OK)
			st = db_commit(w->db);
	}
	if (st == DB_OK && !slot_kept) {
		log_error("%s: the concurrency slot's lease was lost on "
		    "renewal (another worker holds the slot); stopping the "
		    "handler", w->q->limit.where);
		buf_puts(&res->error, "concurrency slot's lease lost");
		return 1;
	}
	if (st == DB_OK && affected == 0) {
		log_error("%s changed no row on renewal: the lease was lost; "
		    "stopping the handler", w->renew.stmt ?
		    w->q->lease.renew.where : w->q->lease.claim.where);
		buf_puts(&res->error, "lease lost");
		return 1;
	}
	if (st == DB_OK) {
		w->lease_renewed_ms = now_ms();
		worker_db_ok(w);
		return 0;
	}
	worker_db_trouble(w, "renewing the lease");
	if (st == DB_RECONNECT)
		worker_disconnect(w);
	else
		(void)db_rollback(w->db);
	if (now_ms() - w->lease_renewed_ms >= duration * 2 / 3) {
		log_error("the lease could not be renewed for %llds; stopping "
		    "the handler before it runs out",
		    (long long)(now_ms() - w->lease_renewed_ms) / 1000);
		buf_puts(&res->error, "lease could not be renewed");
		return 1;
	}
	return 0;
}

/*
 * Lease the turn's workable rows, up to a batch, in the claim's
 * transaction.  Returns how many were leased, or -1 after a database
 * error (rolled back).
 */
static int
lease_rows(struct worker *w, struct lease_token *tokens, bool *leased)
{
	unsigned long long affected;
	enum db_status st;
	int n = (int)w->turn.rows.nrows, nleased = 0;

	for (int i = 0; i < n; i++) {
		const struct row *row = &w->turn.rows.rows[i];
		leased[i] = false;
		if (nleased >= w->q->batch || !turn_row_workable(w, (size_t)i))
			continue;
		lease_new_token(&w->token);
		tokens[i] = w->token;
		st = finish_exec(w, &w->lease, row, row_attempt(w, row), 0,
		    &affected);
		if (st != DB_OK) {
			worker_db_failed(w, st, "lease.claim");
			turn_rolled_back(w);
			return -1;
		}
		if (affected == 0) {
			turn_skip(w, row, "lease.claim changed no row, so it "
			    "was not leased");
			continue;
		}
		leased[i] = true;
		nleased++;
	}
	return nleased;
}

/*
 * A row not finished (stopped, lost, throttled): its slot's lease goes
 * now, in a transaction of its own, where the database answers; where it
 * does not, the lease runs out with the row's.
 */
static void
lease_give_up_slot(struct worker *w)
{
	bool kept;

	if (!w->limit.lease_held || w->db == NULL)
		return;
	if (limit_lease_keep(w, false, &kept) == DB_OK)
		(void)db_commit(w->db);
	else
		(void)db_rollback(w->db);
	w->limit.lease_held = false;
	if (w->args->stats)
		w->args->stats->limit_held = 0;
}

/*
 * Handle and finish one leased row, in a transaction of its own.  Returns
 * -1 when the connection is gone and the turn must end.
 */
static int
lease_work_row(struct worker *w, const struct row *row)
{
	bool aborted = false;
	enum db_status st;

	/* A renewal reconnected with other columns: leave the rest. */
	if (!turn_layout_current(w)) {
		log_warnx("the select's columns changed while the database was "
		    "away: the rest of the batch comes back when its leases "
		    "run out");
		return -1;
	}
	st = worker_row(w, row, &aborted);
	/* The slot's lease goes with the row's finishing statement. */
	if (st == DB_OK && !aborted && w->limit.lease_held)
		st = limit_lease_keep(w, false, &(bool){ true });
	if (st == DB_OK && !aborted && worker_commit(w) != 0)
		return -1;
	if (aborted) {
		if (w->db != NULL)
			(void)db_rollback(w->db);
		turn_rolled_back(w);
		lease_give_up_slot(w);
		limit_throttle_now(w);
	} else if (st != DB_OK) {
		worker_db_failed(w, st, w->failing);
		turn_rolled_back(w);
		lease_give_up_slot(w);
	}
	return w->db == NULL ? -1 : 0;
}

int
lease_turn(struct worker *w)
{
	struct lease_token tokens[CLAIM_MAX];
	/*
	 * lease_rows sets one for each of the n rows claimed; zeroed all the
	 * same for scan-build, which cannot tell that worker_turn_end returns
	 * no more rows than that.
	 */
	bool leased[CLAIM_MAX] = { false };
	int n = limit_before_claim(w), nleased;

	if (n <= 0)
		return n;
	n = claim_batch(w);
	if (n <= 0 && w->limit.waiting)
		return 0;	/* rolled back already */
	if (n <= 0)
		return n < 0 ? -1 : (worker_commit(w) == 0 ? 0 : -1);
	if ((nleased = lease_rows(w, tokens, leased)) < 0)
		return -1;
	if (worker_commit(w) != 0)
		return -1;
	n = worker_turn_end(w, nleased, n);
	if (nleased == 0)
		return n;
	for (int i = 0; i < n; i++) {
		if (!leased[i] || w->stopper.stop)
			continue;
		w->token = tokens[i];
		if (lease_work_row(w, &w->turn.rows.rows[i]) != 0)
			return -1;
	}
	/*
	 * The turn's rows are finished: their keys' slots (per_key) go now.
	 * After an error they go with the next claim's round trip instead,
	 * never while a handler of theirs may still run.
	 */
	limit_keys_release(w);
	return n;
}
