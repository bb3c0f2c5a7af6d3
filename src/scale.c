/*
 * scale.c: workers that follow the work.  A queue with workers: {min: N,
 * max: M} runs between N and M workers on this daemon: it starts at N;
 * the wake watcher's readings (wake_watch.c), which it makes anyway,
 * say how many rows the select finds, and while rows wait that no
 * worker of ours holds and every worker is busy, workers are added (as
 * many as there are workers already, at most, per reading: a burst is
 * met in a few readings); a worker idle for scale_cooldown retires (the
 * highest numbered first), down to N.  Never above what the queue's
 * limit.concurrency could use on its own, and never while its workers
 * wait for their limit: more would only wait too.  Each change is logged
 * with its reason, and `rowq status` shows the count and the last one.
 *
 * As Laravel Horizon's balance: auto, without its max shift: each
 * daemon decides for itself, from what its own watcher reads.
 */
#include "rowq.h"
#include "supervisor.h"

#include <stdio.h>
#include <string.h>

/* How often idle workers are looked at for retiring. */
#define SCALE_LOOK_MS		1000

bool
scale_queue(const struct queue *q)
{
	return q->workers_min < q->workers;
}

/* The most workers worth running: max, and no more than the limit's. */
static int
scale_max(const struct queue *q)
{
	int max = q->workers;

	if (q->limit.concurrency > 0 && q->limit.concurrency < max)
		max = q->limit.concurrency;
	return max < q->workers_min ? q->workers_min : max;
}

/* The current generation's state of queue i, reset after a reload. */
static struct scale_queue_state *
scale_state(struct supervisor *s, size_t i)
{
	struct scale_state *sc = &s->scale;

	if (sc->generation != s->current->number) {
		const struct config *cfg = s->current->cfg;
		memset(sc, 0, sizeof(*sc));
		sc->generation = s->current->number;
		for (size_t k = 0; k < cfg->nqueues && k < QUEUES_MAX; k++)
			sc->q[k].target = cfg->queues[k].workers_min;
	}
	return i < QUEUES_MAX ? &sc->q[i] : NULL;
}

static size_t
scale_index(const struct supervisor *s, const struct queue *q)
{
	return (size_t)(q - s->current->cfg->queues);
}

/*
 * How many workers of q the supervisor runs: the target of a queue that
 * scales, in the current generation; otherwise workers: (or drain -w).
 */
int
scale_workers(struct supervisor *s, const struct queue *q)
{
	struct scale_queue_state *st;

	if (s->opts->workers > 0)
		return s->opts->workers;
	if (!scale_queue(q) || s->opts->drain ||
	    q < s->current->cfg->queues ||
	    q >= s->current->cfg->queues + s->current->cfg->nqueues)
		return q->workers;
	st = scale_state(s, scale_index(s, q));
	return st != NULL ? st->target : q->workers_min;
}

/* The queue's running workers of the current generation: how they are. */
static void
scale_count(const struct supervisor *s, const struct queue *q, int *running,
    int *busy, int *limited)
{
	*running = *busy = *limited = 0;
	for (int i = 0; i < s->nslots; i++) {
		const struct slot *sl = &s->slots[i];
		if (sl->state != SLOT_RUNNING || sl->gen != s->current ||
		    sl->queue != q)
			continue;
		(*running)++;
		/* One just started is about to claim: not busy yet. */
		*busy += sl->stats->state == WORKER_BUSY;
		*limited += sl->stats->state == WORKER_LIMITED;
	}
}

static void
scale_say(struct supervisor *s, const struct queue *q,
    struct scale_queue_state *st, int from, const char *why)
{
	log_info("%s: workers %d -> %d: %s", q->name, from, st->target, why);
	snprintf(st->reason, sizeof(st->reason), "%d -> %d: %s", from,
	    st->target, why);
	st->changed_wall_ms = wall_ms();
	st->changed_ms = now_ms();
	s->status_dirty = true;
}

/* Start the workers numbered up to the target that do not run. */
static void
scale_start(struct supervisor *s, const struct queue *q, int target)
{
	for (int number = 1; number <= target; number++) {
		bool running = false;
		for (int i = 0; i < s->nslots && !running; i++) {
			const struct slot *sl = &s->slots[i];
			running = sl->gen == s->current && sl->queue == q &&
			    sl->number == number && sl->state != SLOT_FREE &&
			    sl->state != SLOT_RETIRING;
		}
		if (!running && !supervisor_start(s, q, number))
			return;
	}
}

/*
 * A reading of queue i from the wake watcher: rows the select finds, up
 * to the probe's LIMIT.  Rows that no worker of ours holds, with every
 * worker busy: more workers.
 */
void
scale_reading(struct supervisor *s, size_t i, int rows)
{
	const struct queue *q;
	struct scale_queue_state *st;
	int running, busy, limited, waiting, add, from, per_worker;
	char why[96];

	if (s->opts->drain || s->stopping || rows <= 0 ||
	    i >= s->current->cfg->nqueues || !pause_watch_known(s))
		return;
	q = &s->current->cfg->queues[i];
	if (!scale_queue(q) || pause_watch_paused(s, q->name) ||
	    (st = scale_state(s, i)) == NULL)
		return;
	scale_count(s, q, &running, &busy, &limited);
	/* The rows a worker takes at a claim. */
	per_worker = queue_claim_rows(q);
	waiting = q->lease.enabled ? rows : rows - busy;
	if (waiting <= 0 || limited > 0 || busy < running ||
	    running < st->target || st->target >= scale_max(q))
		return;
	add = (waiting + per_worker - 1) / per_worker;
	if (add > st->target)
		add = st->target;
	if (st->target + add > scale_max(q))
		add = scale_max(q) - st->target;
	from = st->target;
	st->target += add;
	snprintf(why, sizeof(why), "%d%s rows wait and the %d worker%s busy",
	    waiting, rows >= 2 * q->workers * per_worker ? "+" : "", running,
	    running == 1 ? " is" : "s are");
	scale_say(s, q, st, from, why);
	scale_start(s, q, st->target);
}

/*
 * Every SCALE_LOOK_MS: a worker idle for scale_cooldown retires, one
 * per queue at a time, the highest numbered first, down to min.
 */
static void
scale_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	const struct config *cfg = s->current->cfg;
	struct scale_state *sc = &s->scale;
	int64_t wall = wall_ms();
	char why[96], d[32];

	if (s->stopping || !pause_watch_known(s))
		return;
	if (now < sc->next_look_ms) {
		if (sc->next_look_ms < *next)
			*next = sc->next_look_ms;
		return;
	}
	sc->next_look_ms = now + SCALE_LOOK_MS;
	for (size_t i = 0; i < cfg->nqueues && i < QUEUES_MAX; i++) {
		const struct queue *q = &cfg->queues[i];
		struct scale_queue_state *st;
		struct slot *pick = NULL;
		if (!scale_queue(q) || (st = scale_state(s, i)) == NULL ||
		    st->target <= q->workers_min)
			continue;
		for (int k = 0; k < s->nslots; k++) {
			struct slot *sl = &s->slots[k];
			if (sl->state != SLOT_RUNNING || sl->gen != s->current ||
			    sl->queue != q || sl->stats->state != WORKER_IDLE ||
			    wall - sl->stats->worked_ms < q->scale_cooldown_ms)
				continue;
			if (pick == NULL || sl->number > pick->number)
				pick = sl;
		}
		if (pick == NULL)
			continue;
		duration_format((wall - pick->stats->worked_ms) / 1000 * 1000, d,
		    sizeof(d));
		snprintf(why, sizeof(why), "worker %d idle for %s (cooldown)",
		    pick->number, d);
		st->target--;
		scale_say(s, q, st, st->target + 1, why);
		(void)supervisor_retire_slot(s, pick);
	}
	if (sc->next_look_ms < *next)
		*next = sc->next_look_ms;
}

/* For the status socket: "3" and the last change, or nothing. */
void
scale_status(struct supervisor *s, const struct queue *q, struct buf *b)
{
	struct scale_queue_state *st;
	char n[160];

	if (!scale_queue(q) || s->opts->drain ||
	    (st = scale_state(s, scale_index(s, q))) == NULL)
		return;
	snprintf(n, sizeof(n), "\tscale=%d\tscale_min=%d\tscale_max=%d",
	    st->target, q->workers_min, scale_max(q));
	buf_puts(b, n);
	if (st->changed_wall_ms != 0) {
		snprintf(n, sizeof(n), "\tscale_ago=%lld",
		    (long long)(wall_ms() - st->changed_wall_ms) / 1000);
		buf_puts(b, n);
		buf_puts(b, "\tscale_why=");
		for (const char *p = st->reason; *p; p++)
			buf_putc(b, *p == '\t' || *p == '\n' ? ' ' : *p);
	}
}

const struct supervisor_part scale_part = {
	.name = "scale",
	.tick = scale_tick,
};
