/*
 * history.c: what each queue did in the last hour, minute by minute
 * (rows done, retried and failed, and the oldest waiting row's age), for
 * the console's charts.  The supervisor keeps it in memory it shares
 * with the console child, mapped once console: is set: HISTORY_MINUTES
 * minutes of QUEUES_MAX queues, about 270 KiB whatever the
 * configuration, and nothing grows.
 *
 * Every HISTORY_EVERY_MS the counters the supervisor adds up anyway
 * (supervisor_count) are compared with those seen last time, and the
 * difference goes to the current minute; the age comes from the metrics
 * probe (report.c), the most it saw in the minute.  Queues are kept by
 * name, so that a reload does not lose the hour; an entry a queue no
 * longer uses is taken by the next new one.
 */
#include "rowq.h"
#include "console.h"
#include "supervisor.h"

#include <string.h>
#include <sys/mman.h>

#define HISTORY_EVERY_MS	5000

/* Minute's entry, if the history reaches back to it; else NULL. */
const struct history_minute *
history_at(const struct history_queue *h, int64_t minute)
{
	if (h->minute == 0 || minute > h->minute ||
	    minute <= h->minute - HISTORY_MINUTES)
		return NULL;
	return &h->m[minute % HISTORY_MINUTES];
}

/*
 * The totals so far at minute: what is new since the last call goes to
 * that minute; the minutes skipped since (none counted) are zeroes.  A
 * total smaller than the one seen (a fresh start) counts from zero.
 */
void
history_add(struct history_queue *h, int64_t minute, uint64_t done,
    uint64_t retried, uint64_t failed, long long oldest_age_s)
{
	struct history_minute *m;

	if (h->minute == 0 || minute - h->minute >= HISTORY_MINUTES) {
		memset(h->m, 0, sizeof(h->m));
		for (int i = 0; i < HISTORY_MINUTES; i++)
			h->m[i].oldest_age_s = -1;
		if (h->minute == 0) {
			h->seen_done = done;
			h->seen_retried = retried;
			h->seen_failed = failed;
		}
		h->minute = minute;
	}
	for (; h->minute < minute; ) {
		h->minute++;
		m = &h->m[h->minute % HISTORY_MINUTES];
		memset(m, 0, sizeof(*m));
		m->oldest_age_s = -1;
	}
	if (minute < h->minute)
		return;		/* the clock went back: wait for it */
	m = &h->m[minute % HISTORY_MINUTES];
	m->done += (uint32_t)(done >= h->seen_done ? done - h->seen_done : done);
	m->retried += (uint32_t)(retried >= h->seen_retried ?
	    retried - h->seen_retried : retried);
	m->failed += (uint32_t)(failed >= h->seen_failed ?
	    failed - h->seen_failed : failed);
	if (oldest_age_s >= 0 && oldest_age_s > m->oldest_age_s)
		m->oldest_age_s = oldest_age_s > INT32_MAX ? INT32_MAX :
		    (int32_t)oldest_age_s;
	h->seen_done = done;
	h->seen_retried = retried;
	h->seen_failed = failed;
}

/* A copy of queue's history, consistent; false when it has none. */
bool
history_read(const struct history *hs, const char *queue,
    struct history_queue *out)
{
	for (int tries = 0; tries < 100; tries++) {
		uint32_t seq = __atomic_load_n(&hs->seq, __ATOMIC_ACQUIRE);
		bool found = false;
		if (seq & 1)
			continue;
		for (size_t i = 0; i < QUEUES_MAX && !found; i++)
			if (strncmp(hs->q[i].name, queue,
			    sizeof(hs->q[i].name)) == 0) {
				memcpy(out, &hs->q[i], sizeof(*out));
				found = true;
			}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&hs->seq, __ATOMIC_RELAXED) == seq)
			return found && out->name[0] != '\0';
	}
	return false;
}

/* The entry of queue, or a free one, or one no queue of cfg uses. */
static struct history_queue *
history_entry(struct history *hs, const struct config *cfg, const char *queue)
{
	struct history_queue *spare = NULL;

	for (size_t i = 0; i < QUEUES_MAX; i++) {
		struct history_queue *h = &hs->q[i];
		if (strcmp(h->name, queue) == 0)
			return h;
		if (spare == NULL && (h->name[0] == '\0' ||
		    config_queue(cfg, h->name) == NULL))
			spare = h;
	}
	if (spare != NULL) {
		memset(spare, 0, sizeof(*spare));
		snprintf(spare->name, sizeof(spare->name), "%s", queue);
	}
	return spare;
}

static int64_t history_due_ms;

/* Mapped before the console is forked, so that it shares the memory. */
static void
history_map(struct supervisor *s)
{
	if (s->history != NULL || !s->current->cfg->console.on)
		return;
	s->history = mmap(NULL, sizeof(*s->history), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s->history == MAP_FAILED) {
		log_warn("mmap for the console's history");
		s->history = NULL;
	}
}

static void
history_start(struct supervisor *s)
{
	history_map(s);
	history_due_ms = 0;
}


static void
history_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	const struct config *cfg = s->current->cfg;
	const struct probe *p = s->probe;
	int64_t minute = wall_ms() / 60000;

	/* console: added by a reload: its console starts after this. */
	history_map(s);
	if (s->history == NULL || now < history_due_ms) {
		if (s->history != NULL && history_due_ms < *next)
			*next = history_due_ms;
		return;
	}
	history_due_ms = now + HISTORY_EVERY_MS;
	__atomic_add_fetch(&s->history->seq, 1, __ATOMIC_ACQ_REL);
	for (size_t i = 0; i < cfg->nqueues; i++) {
		const struct queue *q = &cfg->queues[i];
		struct history_queue *h = history_entry(s->history, cfg, q->name);
		struct totals t = supervisor_count(s, q->name);
		long long age = -1;
		if (h == NULL)
			continue;
		if (p != NULL && p->wall_ms != 0 &&
		    p->generation == s->current->number && i < p->nqueues &&
		    p->ok[i] && p->queue[i].oldest_age_s >= 0 &&
		    wall_ms() - p->wall_ms < 60000)
			age = p->queue[i].oldest_age_s +
			    (wall_ms() - p->wall_ms) / 1000;
		history_add(h, minute, t.done, t.retried, t.failed, age);
	}
	__atomic_add_fetch(&s->history->seq, 1, __ATOMIC_ACQ_REL);
	if (history_due_ms < *next)
		*next = history_due_ms;
}

static void
history_stop(struct supervisor *s)
{
	if (s->history != NULL)
		munmap(s->history, sizeof(*s->history));
	s->history = NULL;
}

const struct supervisor_part history_part = {
	.name = "history",
	.start = history_start,
	.stop = history_stop,
	.tick = history_tick,
};
