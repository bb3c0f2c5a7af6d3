/*
 * worker_lease.c: lease mode.  Claim and lease the batch in one short
 * transaction (a batch's leases in one bulk execute on MariaDB), then handle
 * each row with no transaction open and no lock held, renewing the
 * batch's leases while a handler runs, and finish each row only while the
 * lease is still this worker's: every finishing statement checks the
 * row's own :lease.  As in transaction mode, a row's `done` waits to go
 * with the next claim (batch 1, worker_finish_text.c) or with the batch's
 * others at its end (finish_oks), so that a row costs about what it costs
 * there; a retry or a failure is finished in a transaction of its own.
 * Where a worker dies before its `done` went, the row comes back when its
 * lease runs out (rowq.yaml(5), LEASES).
 */
#include "worker.h"

#include <stdlib.h>
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
 * Renew the leases of the turn's live rows (leased, not yet finished),
 * each with its own token, in the transaction the caller commits: with
 * batch > 1 the rows waiting for their handler and those whose `done`
 * waits for the batch's end are kept too, not only the one being
 * handled.  A row other than cur whose renewal changes no row has lost
 * its lease: it is left (not handled, or not finished), and said.
 * *cur_affected is what cur's renewal changed.
 */
static enum db_status
lease_renew_rows(struct worker *w, int cur, unsigned long long *cur_affected)
{
	struct bound *b = w->renew.stmt ? &w->renew : &w->lease;
	struct lease_token keep = w->token;
	unsigned long long affected;
	enum db_status st = DB_OK;
	struct buf key = { 0 };

	*cur_affected = 0;
	for (int i = 0; i < w->lease_rows && st == DB_OK; i++) {
		const struct row *row = &w->turn.rows.rows[i];
		if (!w->lease_live[i] || row->value == NULL)
			continue;
		w->token = w->lease_tokens[i];
		st = finish_exec(w, b, row, row_attempt(w, row), 0, &affected);
		if (st != DB_OK || i == cur) {
			*cur_affected = affected;
			continue;
		}
		if (affected > 0)
			continue;
		w->lease_live[i] = false;
		row_key_text(w, row, &key);
		log_error("%s changed no row for key %s on renewal: the lease "
		    "was lost; this worker leaves the row", b->sql->where,
		    key.data);
		if (w->args->stats)
			w->args->stats->errors++;
	}
	w->token = keep;
	buf_free(&key);
	return st;
}

/*
 * Lease renewal, called while the handler runs: run lease.renew (or
 * lease.claim again) in a short transaction of its own, for each row of
 * the turn whose lease this worker keeps.  A renewal of the row being
 * handled that changes no row means its lease is lost, and a lease that
 * could not be renewed for two thirds of its duration is about to run
 * out: either way another worker may take the row, so this handler is
 * stopped.
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
	int cur = (int)(row - w->turn.rows.rows);

	if (st == DB_FATAL) {
		log_error("%s: the select's columns changed while the database "
		    "was away; stopping the handler, the row comes back when "
		    "its lease runs out", w->q->select.where);
		buf_puts(&res->error, "the select's columns changed");
		return 1;
	}
	if (st == DB_OK) {
		if (cur >= 0 && cur < w->lease_rows && w->lease_live[cur])
			st = lease_renew_rows(w, cur, &affected);
		else
			st = finish_exec(w, w->renew.stmt ? &w->renew :
			    &w->lease, row, w->leased_attempt, 0, &affected);
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
 * Between two rows of a batch: when a third of the lease has gone since
 * the batch's leases were last set, renew them, in a transaction of its
 * own, before the next handler starts (whose own renewals come a third
 * of the lease after its start).  Returns -1 when the turn must end.
 */
static int
lease_keep_batch(struct worker *w)
{
	unsigned long long affected;
	enum db_status st;

	if (now_ms() - w->lease_renewed_ms < w->q->lease.duration_ms / 3)
		return 0;
	if (lease_reconnect(w) != DB_OK || !turn_layout_current(w))
		return -1;
	st = lease_renew_rows(w, -1, &affected);
	if (st == DB_OK)
		st = db_commit(w->db);
	if (st != DB_OK) {
		worker_db_failed(w, st, "renewing the batch's leases");
		turn_rolled_back(w);
		/*
		 * No handler starts on a lease a third of its duration old
		 * and not renewed: its own first renewal comes a third after
		 * its start, which may be too late.  The rows come back when
		 * their leases run out.
		 */
		return -1;
	}
	w->lease_renewed_ms = now_ms();
	return 0;
}

/*
 * Lease the rows of leased[] (their tokens in w->lease_tokens) in one
 * execute, where the server takes an array of values (MariaDB's bulk):
 * one round trip for the batch.  Returns DB_OK with *all set when each
 * row's lease.claim changed a row.  When one did not, or the server
 * refused the statement for a row (which one is not told), the claim is
 * rolled back whole (*undone): its rows wait as they were, and the next
 * turn leases one by one, which finds the row and says it.
 */
static enum db_status
lease_rows_bulk(struct worker *w, const bool *leased, int n, bool *all,
    bool *undone)
{
	size_t np = w->lease.sql->nparams, k = 0;
	struct value *values;
	unsigned long long affected = 0;
	enum db_status st;

	*all = *undone = false;
	if (n < 2 || w->lease.next != NULL || !w->bulk_done ||
	    w->lease_one_by_one) {
		w->lease_one_by_one = false;
		return DB_OK;
	}
	values = xcalloc((size_t)n * np, sizeof(*values));
	for (int i = 0; i < w->lease_rows; i++) {
		const struct row *row = &w->turn.rows.rows[i];
		if (!leased[i])
			continue;
		w->token = w->lease_tokens[i];
		finish_values(w, &w->lease, row, row_attempt(w, row), 0,
		    values + k * np);
		finish_values_token(&w->lease, values + k++ * np,
		    &w->lease_tokens[i]);
	}
	if (!db_stmt_bulk_possible(w->lease.stmt, values, k)) {
		free(values);
		return DB_OK;
	}
	st = db_stmt_exec_bulk(w->lease.stmt, values, k, &affected);
	free(values);
	if (st == DB_OK && affected == k) {
		*all = true;
		return DB_OK;
	}
	if (st != DB_OK && (st != DB_FATAL || !db_in_transaction(w->db)))
		return st;
	log_info("%s for %zu rows at once: %s; the claim goes back, and the "
	    "next leases them one by one", w->lease.sql->where, k, st != DB_OK ?
	    db_error(w->db) : "a row was not leased");
	*undone = w->lease_one_by_one = true;
	return db_rollback(w->db);
}

/*
 * The leases of leased[] and their COMMIT as text, in one round trip
 * (finish_text_leases).  *sent is false when they cannot go so: nothing
 * was sent.  A row whose lease changed nothing is skipped, as one by one.
 * When the server refused one (which stops it there), the claim is
 * rolled back whole, and the next turn leases one by one, which finds
 * the row and says it.  Returns how many were leased, or -1 after a
 * database error (rolled back).
 */
static int
lease_rows_text(struct worker *w, bool *leased, int nleased, bool *sent)
{
	unsigned long long affected[CLAIM_MAX];
	int n = (int)w->turn.rows.nrows;
	enum db_status st;

	*sent = !w->lease_one_by_one &&
	    finish_text_leases(w, leased, n, &st, affected);
	if (!*sent)
		return 0;
	if (st == DB_FATAL && db_in_transaction(w->db)) {
		log_info("%s for %d row%s as text: %s; the claim goes back, and "
		    "the next leases them one by one", w->lease.sql->where,
		    nleased, nleased == 1 ? "" : "s", db_error(w->db));
		w->lease_one_by_one = true;
		st = db_rollback(w->db);
		turn_rolled_back(w);
		for (int i = 0; i < n; i++)
			leased[i] = false;
		return st == DB_OK ? 0 : -1;
	}
	if (st != DB_OK) {
		worker_db_failed(w, st, "lease.claim");
		turn_rolled_back(w);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (leased[i] && affected[i] == 0) {
			turn_skip(w, &w->turn.rows.rows[i], "lease.claim "
			    "changed no row, so it was not leased");
			leased[i] = false;
			nleased--;
		}
		w->lease_live[i] = leased[i];
	}
	worker_committed(w);
	return nleased;
}

/*
 * Leasing one by one failed, at the row failing (NULL: before any): say
 * so, naming the row, and roll back.
 */
static void
lease_rows_failed(struct worker *w, enum db_status st,
    const struct row *failing)
{
	struct buf key = { 0 };

	if (failing != NULL) {
		row_key_text(w, failing, &key);
		log_set_row(key.data);
	}
	worker_db_failed(w, st, w->lease.sql->where);
	log_set_row(NULL);
	buf_free(&key);
	turn_rolled_back(w);
}

/*
 * Lease the turn's workable rows, up to a batch, in the claim's
 * transaction, and commit: one row, or a batch where the server has no
 * bulk execute, as text with the COMMIT in one round trip where they can
 * go so (lease_rows_text); else all at once where the server can
 * (MariaDB's bulk), else one by one, prepared.  Returns how
 * many were leased, or -1 after a database error (rolled back).
 */
static int
lease_rows(struct worker *w, bool *leased)
{
	unsigned long long affected;
	enum db_status st;
	int n = (int)w->turn.rows.nrows, nleased = 0;
	int want = queue_claim_rows(w->q);
	bool all, undone, sent, workable[CLAIM_MAX];
	const struct row *failing = NULL;

	w->lease_rows = n;
	for (int i = 0; i < n; i++) {
		leased[i] = w->lease_live[i] = false;
		workable[i] = turn_row_workable(w, (size_t)i);
	}
	/*
	 * Up to a batch (lease.ahead's rows), rows skipped before last (a
	 * lease that changed nothing): such a row at the head of the queue,
	 * claimed again with the rows behind it (worker_widen), must not
	 * keep them from theirs.
	 */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n && nleased < want; i++) {
			if (leased[i] || !workable[i] || (pass == 0 &&
			    turn_skipped_before(w, &w->turn.rows.rows[i])))
				continue;
			lease_new_token(&w->lease_tokens[i]);
			leased[i] = true;
			nleased++;
		}
	/*
	 * A batch goes as text only where the server has no bulk execute
	 * (MySQL): on MariaDB ten EXECUTEs cost more than the bulk's one
	 * and its COMMIT's round trip (bench/README.md).
	 */
	if (nleased == 1 || (nleased > 1 && !(w->bulk_done &&
	    db_dialect(w->db)->bulk_execute))) {
		int r = lease_rows_text(w, leased, nleased, &sent);
		if (sent)
			return r;
	}
	st = lease_rows_bulk(w, leased, nleased, &all, &undone);
	if (st == DB_OK && undone) {
		turn_rolled_back(w);
		for (int i = 0; i < n; i++)
			leased[i] = false;
		return 0;
	}
	for (int i = 0; i < n && st == DB_OK && !all; i++) {
		const struct row *row = &w->turn.rows.rows[i];
		if (!leased[i])
			continue;
		w->token = w->lease_tokens[i];
		failing = row;
		st = finish_exec(w, &w->lease, row, row_attempt(w, row), 0,
		    &affected);
		if (st == DB_OK && affected == 0) {
			turn_skip(w, row, "lease.claim changed no row, so it "
			    "was not leased");
			leased[i] = false;
			nleased--;
		}
		/* A claim that fails whatever the row: stop, and say so. */
		if (st == DB_FATAL && db_error_in_statement(w->db)) {
			struct buf key = { 0 };
			row_key_text(w, row, &key);
			finish_stalled(w, &w->lease, key.data);
			buf_free(&key);
		}
	}
	if (st != DB_OK) {
		lease_rows_failed(w, st, failing);
		return -1;
	}
	for (int i = 0; i < n; i++)
		w->lease_live[i] = leased[i];
	if (worker_commit(w) != 0)
		return -1;
	w->ride_held_off = false;
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
 * Handle and finish one leased row.  Its `done` may wait, uncommitted or
 * not yet sent: at batch 1 in front of the next claim, which commits it
 * first (worker_finish_text.c), with batch > 1 for the batch's others, in
 * one execute at the end of the turn; a row that ends otherwise is
 * finished in a transaction of its own.  Returns -1 when the connection
 * is gone and the turn must end.
 */
static int
lease_work_row(struct worker *w, int i)
{
	const struct row *row = &w->turn.rows.rows[i];
	bool aborted = false, waits;
	int noks = w->turn.noks;
	enum db_status st;

	/* A renewal reconnected with other columns: leave the rest. */
	if (!turn_layout_current(w)) {
		log_warnx("the select's columns changed while the database was "
		    "away: the rest of the batch comes back when its leases "
		    "run out");
		return -1;
	}
	w->token = w->lease_tokens[i];
	st = worker_row(w, row, &aborted);
	/* The row moved to held (batch 1), or joined the batch's ok rows. */
	waits = w->turn.holding || w->turn.noks > noks;
	if (!waits)
		w->lease_live[i] = false;
	/* The slot's lease goes with the row's finishing statement. */
	if (st == DB_OK && !aborted && w->limit.lease_held)
		st = limit_lease_keep(w, false, &(bool){ true });
	if (st == DB_OK && !aborted && waits)
		w->turn.uncommitted = w->turn.holding;
	else if (st == DB_OK && !aborted && worker_commit(w) != 0)
		return -1;
	/*
	 * The batch's ok rows before this one have run nothing yet: they
	 * are finished all the same at the end of the turn.
	 */
	if (aborted) {
		if (w->db != NULL)
			(void)db_rollback(w->db);
		turn_rolled_back(w);
		w->turn.noks = noks;
		lease_give_up_slot(w);
		limit_throttle_now(w);
	} else if (st != DB_OK) {
		worker_db_failed(w, st, w->failing);
		turn_rolled_back(w);
		w->turn.noks = noks;
		lease_give_up_slot(w);
	}
	return w->db == NULL ? -1 : 0;
}

/*
 * The batch's ok rows: `done` for all in one execute (finish_oks), its
 * COMMIT left for the next claim's round trip, as in transaction mode.
 * Returns -1 after a database error (rolled back: the rows come back
 * when their leases run out).
 */
static int
lease_finish_oks(struct worker *w)
{
	enum db_status st;

	if (w->turn.noks == 0)
		return 0;
	if (lease_reconnect(w) != DB_OK || !turn_layout_current(w)) {
		log_warnx("the database is away: the batch's rows are not "
		    "finished; they come back when their leases run out");
		w->turn.noks = 0;
		return -1;
	}
	if ((st = finish_oks(w)) != DB_OK) {
		worker_db_failed(w, st, w->failing);
		turn_rolled_back(w);
		return -1;
	}
	w->turn.uncommitted = true;
	return 0;
}

/*
 * After a database error between two rows of a claim (rolled back): the
 * claim's other rows go on while the link is up and the statements can
 * work, rather than wait out their leases; not while a statement fails
 * whatever the row (finish_stalled), whose rows' outcomes could not be
 * recorded either.
 */
static bool
lease_go_on(const struct worker *w)
{
	return w->db != NULL && !w->statement_failing;
}

/* lease_commit_held's error: said, rolled back; 0 when the claim goes on. */
static int
lease_held_failed(struct worker *w, enum db_status st, const char *what)
{
	worker_db_failed(w, st, what);
	turn_rolled_back(w);
	return lease_go_on(w) ? 0 : -1;
}

/*
 * lease.ahead: the row before, whose `done` waits as at batch 1 (its
 * text in held_sql), committed now, before the next row of the claim
 * starts: the `done`, its run and the COMMIT in one round trip, as they
 * would go in front of a claim.  Returns 0, or -1 when the turn must end
 * after a database error (rolled back: the row comes back when its lease
 * runs out).
 */
static int
lease_commit_held(struct worker *w)
{
	struct db_ahead a = { .finish = true,
	    .finish_rest = w->turn.held_rest, .commit = true };
	struct buf sql = { 0 };
	enum db_status st, held;

	if ((st = runs_front(w, &a)) != DB_OK)
		return lease_held_failed(w, st, w->failing);
	finish_held_text(w, &a, &sql);
	buf_puts(&sql, "COMMIT");
	st = db_run_front(w->db, sql.data, &a);
	buf_free(&sql);
	runs_front_done(w, &a);
	held = finish_held(w, &a, st);
	/* A list's check stopped the text before the COMMIT: it goes now. */
	if (held == DB_OK && st != DB_OK && !a.finished)
		return worker_commit(w) == 0 || lease_go_on(w) ? 0 : -1;
	if (held == DB_OK && st == DB_OK) {
		worker_committed(w);
		return 0;
	}
	return lease_held_failed(w, held != DB_OK ? held : st,
	    held != DB_OK ? w->failing : a.runs && !a.runs_ran ?
	    "the run log's INSERT" : "commit");
}

/*
 * A stop or a reload came before rows [from, n) of the claim were handed
 * to the handler: lease.release gives back those still leased, with each
 * row's token, in a transaction of its own, so that another worker takes
 * them now rather than when their leases run out.  Without it, or where
 * the database does not answer, they wait for that (rowq.yaml(5)).
 */
static bool
lease_releasable(const struct worker *w, const bool *leased, int i)
{
	return leased[i] && w->lease_live[i] &&
	    w->turn.rows.rows[i].value != NULL;
}

static void
lease_release_rest(struct worker *w, const bool *leased, int from, int n)
{
	struct lease_token keep = w->token;
	unsigned long long affected;
	enum db_status st = DB_OK;
	int given = 0, rows = 0;

	/* The rows' values are read by the columns of their claim. */
	if (w->release.sql == NULL || w->db == NULL || !turn_layout_current(w))
		return;
	for (int i = from; i < n; i++)
		rows += lease_releasable(w, leased, i);
	for (int i = from; i < n && st == DB_OK; i++) {
		const struct row *row = &w->turn.rows.rows[i];
		if (!lease_releasable(w, leased, i))
			continue;
		w->token = w->lease_tokens[i];
		st = finish_exec(w, &w->release, row, row_attempt(w, row), 0,
		    &affected);
		if (st == DB_OK && affected > 0)
			given++;
	}
	w->token = keep;
	if (rows == 0)
		return;
	if (st == DB_OK)
		st = db_commit(w->db);
	if (st != DB_OK) {
		log_warnx("%s: %s: the %d rows leased and not handled come "
		    "back when their leases run out", w->release.failed_at ?
		    w->release.failed_at : "commit", db_error(w->db), rows);
		(void)db_rollback(w->db);
		if (w->args->stats)
			w->args->stats->errors++;
		return;
	}
	log_info("a stop or a reload: gave back %d of the %d rows leased and "
	    "not handled (lease.release)", given, rows);
}

int
lease_turn(struct worker *w)
{
	/*
	 * lease_rows sets one for each of the n rows claimed; zeroed all the
	 * same for scan-build, which cannot tell that worker_turn_end returns
	 * no more rows than that.
	 */
	bool leased[CLAIM_MAX] = { false };
	int n = limit_before_claim(w), nleased, rest;
	bool ok = true;

	w->lease_rows = 0;
	if (n <= 0)
		return n;
	(void)lease_ride_arm(w);
	n = claim_batch(w);
	if (n <= 0 && w->limit.waiting)
		return 0;	/* rolled back already */
	if (n == 0 && w->riding && w->ride_committed) {
		worker_committed(w);
		return 0;
	}
	if (n <= 0)
		return n < 0 ? -1 : (worker_commit(w) == 0 ? 0 : -1);
	nleased = w->riding ? lease_ride_leased(w, leased) :
	    lease_rows(w, leased);
	if (nleased < 0)
		return -1;
	w->lease_renewed_ms = now_ms();
	n = worker_turn_end(w, nleased, n);
	if (nleased == 0)
		return n;
	rest = n;
	for (int i = 0; i < n && ok; i++) {
		if (w->stopper.stop) {
			rest = i;
			break;
		}
		if (!leased[i])
			continue;
		/*
		 * lease.ahead: the row before, whose `done` waits for the
		 * next claim at batch 1, is committed before this one's
		 * handler starts; the turn's last waits for the claim.
		 */
		if (w->turn.holding && lease_commit_held(w) != 0)
			return -1;
		ok = lease_keep_batch(w) == 0 && (!w->lease_live[i] ||
		    lease_work_row(w, i) == 0);
	}
	/* After an error too: the rows handled ok are finished. */
	if (lease_finish_oks(w) != 0 || !ok)
		return -1;
	if (rest < n) {
		/*
		 * What the handled rows left pending is committed first (the
		 * held row's `done` waits for no claim now), so that a release
		 * that fails rolls back nothing but itself; and the claim's
		 * slot goes, so that another worker can take the rows.
		 */
		if (w->turn.holding && lease_commit_held(w) != 0)
			return -1;
		if (w->turn.uncommitted && worker_commit(w) != 0)
			return -1;
		lease_give_up_slot(w);
		lease_release_rest(w, leased, rest, n);
	}
	/*
	 * The turn's rows are finished: their keys' slots (per_key) go now.
	 * After an error they go with the next claim's round trip instead,
	 * never while a handler of theirs may still run.
	 */
	limit_keys_release(w);
	return n;
}
