/*
 * worker_limit_wait.c: how a worker waits for its queue's limit:
 * (worker_limit.c takes what the limit gives): why the last take failed
 * and until when, the sleep until a reserved token is due, the wait
 * before the next poll, and a handler's throttle, written for every
 * daemon once its turn is over and waited out.
 */
#include "worker.h"

#include <stdlib.h>
#include <string.h>

/* A full slot table: polled at first this often, backing off to the max. */
#define LIMIT_POLL_MIN_MS	20
#define LIMIT_POLL_MAX_MS	1000
/* A long wait (a throttle, a slow rate) looks again at least this often. */
#define LIMIT_WAIT_MAX_MS	5000
/* Key rate waiters spread their polls over this many token intervals. */
#define LIMIT_SPREAD_MAX	8

static bool
limit_on(const struct worker *w)
{
	return w->q->limit.enabled;
}

/* The worker starts waiting for reason (counted once per wait). */
void
limit_wait_begins(struct worker *w, enum limit_reason reason, int64_t ms)
{
	struct worker_limit *l = &w->limit;

	if (!l->waiting || l->reason != reason) {
		if (w->args->stats)
			w->args->stats->limit_waits[reason]++;
		log_debug("waits for the limit: %s, %lldms",
		    limit_reason_names[reason], (long long)ms);
	}
	l->waiting = true;
	l->reason = reason;
	l->wait_ms = ms;
}

/*
 * The take reserved its token (the first, when it took more): wait until
 * it is due before any handler starts, holding what the turn holds (its
 * rows, a slot), which no other worker could have started sooner.
 * Returns 0; 1 when the worker woke too late for it (limit_late); -1
 * when the worker is to stop (the token is counted to go back, with
 * limit_release, as any the turn did not use).
 */
int
limit_await_due(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	int64_t left = l->due_ms - now_ms();

	l->due_ms = 0;
	if (left > 0) {
		if (w->args->stats)
			w->args->stats->limit_reason = LIMIT_RATE;
		worker_set_state(w, WORKER_LIMITED, NULL);
		if (stopper_sleep(&w->stopper, left))
			return -1;
	}
	return limit_late(w) ? 1 : 0;
}

/*
 * Whether the token the turn's first handler would start on is too late
 * for it: the worker woke, or its claim came back, more than
 * limit_late_ms after the token was due (a host that stalled).  Starting
 * then would bunch the starts the rate spread out (the tokens due
 * meanwhile start together, and a window of time t would see more than
 * burst + t x rate), so the token is left (it goes back only where the
 * bucket is not in debt), the turn's rows are rolled back, and the
 * worker takes again at once.  A start so lies within limit_late_ms of
 * its token's time: at most burst + (t + limit_late_ms) x rate in t.
 */
bool
limit_late(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	int64_t by = l->start_by_ms;

	if (by == 0 || now_ms() <= by)
		return false;
	l->start_by_ms = 0;
	log_debug("the rate's token came %lldms late: taking another",
	    (long long)(now_ms() - by));
	limit_wait_begins(w, LIMIT_RATE, 0);
	return true;
}

/*
 * Wait as the limit says, with no transaction open: for a rate, until a
 * take can reserve its next token (at once when the claim's take did
 * not say when); for a key's rate, until its next token, spread over a
 * few token intervals by those who missed it already; for a full slot
 * table, at once where the poll waits in the server, else with growing
 * pauses; for a throttle, until it ends.  At most LIMIT_WAIT_MAX_MS: the
 * take is looked at again.
 */
void
limit_wait(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	const struct limit_rate *r = &w->q->limit.rate;
	int64_t ms = l->wait_ms, spread;

	if (l->slot > 0)
		limit_release(w);
	l->misses++;
	switch (l->reason) {
	case LIMIT_RATE:
		/*
		 * Until a take can reserve the next token (the poll then
		 * sleeps until it is due), or at once to ask when; those who
		 * wake together race for one, so a few ms apart.
		 */
		if (ms < 0)
			ms = 0;
		spread = r->count > 0 ? r->period_ms / r->count / 10 : 10;
		if (spread > LIMIT_POLL_MIN_MS / 2)
			spread = LIMIT_POLL_MIN_MS / 2;
		if (ms > 0)
			ms += (int64_t)(backoff_random() % (uint64_t)(spread +
			    1));
		break;
	case LIMIT_KEY_RATE:
		spread = r->count > 0 ? r->period_ms / r->count : 100;
		spread *= l->misses < LIMIT_SPREAD_MAX ? l->misses :
		    LIMIT_SPREAD_MAX;
		if (ms < 1)
			ms = 1;
		ms += (int64_t)(backoff_random() % (uint64_t)(spread + 1));
		break;
	case LIMIT_THROTTLE:
	case LIMIT_KEY_THROTTLE:
		if (ms < 0)
			ms = LIMIT_POLL_MAX_MS;
		/* Not all at the same millisecond when it ends. */
		ms += (int64_t)(backoff_random() % 50);
		break;
	default:
		/*
		 * Where the poll waits for a slot in the server: at once
		 * after the claim's miss and after a poll that waited.
		 */
		if (l->gate_waits && !l->rows_missing && (l->misses == 1 ||
		    l->polled_ms >= LIMIT_SLOT_WAIT_S * 1000 / 2)) {
			ms = (int64_t)(backoff_random() % (LIMIT_POLL_MIN_MS /
			    2 + 1));
			break;
		}
		/*
		 * In lease mode, a slot handed over to the daemons that
		 * want one waits LIMIT_HANDOVER_MS for their polls
		 * (worker_limit_lease.c).
		 */
		ms = backoff_capped_ms(LIMIT_POLL_MIN_MS, w->q->lease.enabled ?
		    LIMIT_HANDOVER_MS / 2 : LIMIT_POLL_MAX_MS, l->misses);
		ms = ms / 2 + (int64_t)(backoff_random() % (uint64_t)(ms / 2 +
		    1));
		break;
	}
	if (ms > LIMIT_WAIT_MAX_MS)
		ms = LIMIT_WAIT_MAX_MS;
	if (w->args->stats)
		w->args->stats->limit_reason = l->reason;
	worker_set_state(w, WORKER_LIMITED, NULL);
	proc_title("rowq: %s worker %d (limited: %s)", w->q->name,
	    w->args->number, limit_reason_names[l->reason]);
	stopper_sleep(&w->stopper, ms);
}

/* ---- a handler's throttle ---- */

/*
 * The handler answered "throttle N [message]": kept, to be written once
 * the turn is over (limit_throttle_now), capped at limit.max_throttle.
 */
void
limit_throttle_asked(struct worker *w, const struct row *row)
{
	struct worker_limit *l = &w->limit;
	int64_t ms = w->result.throttle_ms;
	int64_t max = w->q->limit.max_throttle_ms;
	const char *msg = w->result.error.data ? w->result.error.data : "";
	char d[32], m[32];

	const char *what = limit_on(w) && limit_keys_on(w) ? "the row's key" :
	    "the queue";

	duration_format(ms, d, sizeof(d));
	if (ms > max) {
		duration_format(max, m, sizeof(m));
		log_warnx("the handler asks to throttle %s for %s, capped at "
		    "limit.max_throttle: %s (%s); the row goes back, no try "
		    "counted", what, d, m, msg);
		ms = max;
	} else
		log_warnx("the handler asks to throttle %s for %s (%s); the "
		    "row goes back, no try counted", what, d, msg);
	if (ms > l->throttle_ms) {
		l->throttle_ms = ms;
		buf_reset(&l->throttle_reason);
		buf_puts(&l->throttle_reason, msg);
		/*
		 * With per_key, only the row's key waits; a key too long to
		 * be left out of the claim by its value throttles the queue.
		 */
		if (limit_on(w) && limit_keys_on(w))
			limit_key_scope(w, row, &l->throttle_scope);
		if (!limit_on(w) || !limit_keys_on(w) ||
		    l->throttle_scope.bytes[0] == 'h')
			l->throttle_scope = l->scope;
	}
}

/*
 * Once the turn that got a throttle is over (no transaction open): the
 * throttle goes into the limit table, for every daemon, and this worker
 * waits it out.  A queue without limit: has no table: only this worker
 * waits, and the log says so once.
 */
void
limit_throttle_now(struct worker *w)
{
	struct worker_limit *l = &w->limit;
	int64_t ms = l->throttle_ms;
	enum db_status st;

	if (ms < 0)
		return;
	l->throttle_ms = -1;
	if (!limit_on(w)) {
		if (!l->warned_local)
			log_warnx("%s: the queue has no limit:, so only this "
			    "worker waits for the handler's throttle; with "
			    "limit: (even limit: {}) every worker of every "
			    "daemon does", w->q->where);
		l->warned_local = true;
		limit_wait_begins(w, LIMIT_THROTTLE, ms);
		return;
	}
	limit_release(w);
	st = limit_throttle(w->db, &l->ctx, &l->throttle_scope, ms,
	    l->throttle_reason.data ? l->throttle_reason.data : "");
	if (st != DB_OK) {
		worker_db_trouble(w, "writing the throttle");
		if (st == DB_RECONNECT)
			worker_disconnect(w);
	}
	/* A key's throttle: its rows are left out, and the rest go on. */
	if (l->throttle_scope.len > 0) {
		l->keys.throttles_ms = 0;
		if (w->args->stats)
			w->args->stats->limit_waits[LIMIT_KEY_THROTTLE]++;
		return;
	}
	limit_wait_begins(w, LIMIT_THROTTLE, ms);
}
