/*
 * worker_limit_lease.c: a queue's concurrency in lease mode, where no
 * transaction is open while a handler runs, so a slot is a row of the
 * limit table with a lease of its own (limit.c): taken in the claim's
 * transaction, renewed with the row's lease (lease_renew) and given up
 * with the row's finishing statement.
 *
 * Daemons that all have work share the slots over time: a worker that
 * finished a row takes a slot again in its next claim, a few
 * milliseconds later, which a daemon whose workers poll for one would
 * seldom see free (test 612 saw one daemon run all 90 rows).  So a
 * daemon whose worker polls marks the scope's row as wanted, and a
 * worker that has held slots for its turn (LIMIT_SLOT_TURN_MS, as a
 * transaction-mode slot's) gives its slot up handed over to the other
 * daemons while one wants it: no claim of its own daemon takes it for
 * LIMIT_HANDOVER_MS, and a waiter polls within that.  Nobody waiting,
 * nothing changes: the mark is written only by a waiter's poll, and the
 * handover is the give-up's own statement.
 */
#include "worker.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Slots taken this far apart are not one worker's turn. */
#define LIMIT_SLOT_GAP_MS	100

/*
 * Drawn by the supervisor before its first fork (limit_daemon_init), so
 * that the workers of one daemon share it and two daemons do not, even
 * two containers of one host name whose supervisors are both pid 1.
 */
static uint64_t limit_daemon_nonce;

void
limit_daemon_init(void)
{
	struct timespec ts;

	if (getrandom(&limit_daemon_nonce, sizeof(limit_daemon_nonce),
	    GRND_NONBLOCK) != (ssize_t)sizeof(limit_daemon_nonce)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		limit_daemon_nonce = (uint64_t)ts.tv_nsec ^
		    ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
	}
}

/*
 * The daemon's id, as hex digits: the supervisor's nonce; without one,
 * its host's and its process's.
 */
const char *
limit_daemon_id(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	char host[256] = "";

	if (l->daemon[0] != '\0')
		return l->daemon;
	if (limit_daemon_nonce != 0) {
		snprintf(l->daemon, sizeof(l->daemon), "%016llx",
		    (unsigned long long)limit_daemon_nonce);
		return l->daemon;
	}
	(void)gethostname(host, sizeof(host) - 1);
	snprintf(l->daemon, sizeof(l->daemon), "%08x%08x",
	    (unsigned)limit_crc32(host, strlen(host)), (unsigned)getppid());
	return l->daemon;
}

/*
 * A poll's first statements, into b, where its worker got no slot: the
 * mark that its daemon wants one, committed alone, before the rate's
 * take and the slot's, so that a poll that gets no slot leaves the mark
 * and commits no token.
 */
void
limit_lease_want_front(struct worker *w, struct buf *b)
{
	struct worker_limit *l = &w->limit;

	if (!l->lease_wanted)
		return;
	limit_sql_lease_want(b, &l->ctx, &l->scope, limit_daemon_id(w));
	buf_puts(b, ";\nCOMMIT;\n");
	l->nfront += 2;
}

/* The slot's lease, into b: the lease-mode part of the take. */
void
limit_lease_front(struct worker *w, struct buf *b)
{
	struct worker_limit *l = &w->limit;
	struct value token = { .type = VALUE_BLOB, .s = l->token.hex,
	    .len = strlen(l->token.hex) };

	if (!dialect_stmt_execute(&l->stmt[LIMIT_LEASE], b, &token, 1))
		fatalx("limit: the lease statement takes no token");
	buf_puts(b, ";\n");
	l->at_lease = l->nfront++;
}

/*
 * What the lease's take gave: a slot, held since the worker's first of
 * those it took row after row (LIMIT_SLOT_GAP_MS apart at most), or
 * none, which the daemon then wants.
 */
void
limit_lease_took(struct worker *w, bool got)
{
	struct worker_limit *l = &w->limit;
	int64_t now = now_ms();

	l->lease_wanted = !got;
	if (!got)
		l->lease_since_ms = 0;
	else if (l->lease_since_ms == 0 ||
	    now - l->lease_left_ms > LIMIT_SLOT_GAP_MS)
		l->lease_since_ms = now;
}

/*
 * In the renewal's transaction: renew the slot's lease too (renew) or
 * give it up, handed over after the worker's turn.  Returns DB_OK with
 * *kept false when the slot's lease was lost (another worker holds the
 * slot now: the handler must stop).
 */
enum db_status
limit_lease_keep(struct worker *w, bool renew, bool *kept)
{
	struct worker_limit *l = &w->limit;
	bool turn_over = !renew && l->lease_since_ms > 0 &&
	    now_ms() - l->lease_since_ms >= LIMIT_SLOT_TURN_MS;
	struct buf sql = { 0 };
	unsigned long long affected = 0;
	enum db_status st;

	*kept = true;
	if (!l->lease_held)
		return DB_OK;
	limit_sql_lease_keep(&sql, &l->ctx, &l->scope,
	    w->q->limit.concurrency, l->token.hex, renew,
	    turn_over ? limit_daemon_id(w) : NULL);
	st = db_run_count(w->db, sql.data, &affected);
	buf_free(&sql);
	if (st == DB_OK && !renew) {
		l->lease_held = false;
		l->lease_left_ms = now_ms();
		if (turn_over)
			l->lease_since_ms = 0;
		if (w->args->stats)
			w->args->stats->limit_held = 0;
	}
	if (st == DB_OK && affected == 0)
		*kept = false;
	return st;
}
