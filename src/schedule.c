/*
 * schedule.c: a schedule's slots, and what a transaction does with the
 * slots after the last one.
 *
 * A slot is an instant, in whole seconds since 1970.  An every: schedule
 * has a slot at each multiple of its period since the epoch, in UTC
 * (every: 1h: on the hour; every: 1d: at midnight UTC).  A cron: schedule
 * has one at each wall-clock minute its expression matches in its zone,
 * at that minute's first occurrence (tz.c): a minute that a fall-back
 * repeats is a slot once, in its first pass, and minutes that a
 * spring-forward skips are all the one slot at the end of the gap.  Two
 * matches that are one instant are one slot: slots only go up.
 *
 * A slot is due at its instant.  It is on time while it is at most
 * SCHEDULE_ON_TIME_MS late, and catch_up: widens that: a transaction
 * inserts each slot after the last one that is due and at most the
 * larger of the two late, oldest first, and skips the older ones.
 */
#include "rowq.h"
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

static int64_t
schedule_floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* The first slot after `after`, in the zone in use (tz_use). */
static int64_t
schedule_next_here(const struct schedule *s, int64_t after)
{
	int64_t wall;

	if (s->every_s > 0)
		return (schedule_floor_div(after, s->every_s) + 1) * s->every_s;
	wall = tz_wall(after);
	/*
	 * Past `after` on the wall, but in a repeated hour the first pass
	 * of a wall time may be behind it: such a time was a slot already.
	 * A fall-back repeats a day at most (1440 minutes).
	 */
	for (int i = 0; i < 1500; i++) {
		int64_t slot;
		if ((wall = cron_next(&s->cron, wall)) < 0)
			return -1;
		if ((slot = tz_instant(wall)) > after)
			return slot;
	}
	return -1;
}

/* The first slot after `after` (-1: none within decades). */
int64_t
schedule_next(const struct schedule *s, int64_t after)
{
	int64_t slot;

	if (s->every_s > 0)
		return schedule_next_here(s, after);
	tz_use(s->timezone);
	slot = schedule_next_here(s, after);
	tz_restore();
	return slot;
}

/* How late a slot may be and still be inserted. */
int64_t
schedule_window_ms(const struct schedule *s)
{
	return s->catch_up_ms > SCHEDULE_ON_TIME_MS ? s->catch_up_ms :
	    SCHEDULE_ON_TIME_MS;
}

/* The skipped slots of an every: schedule, counted without a walk. */
static int64_t
schedule_skip_every(const struct schedule *s, int64_t first, int64_t cut,
    struct schedule_plan *p)
{
	int64_t period = s->every_s;

	if (first < 0 || first >= cut)
		return first;
	p->skipped = (uint64_t)((cut - 1 - first) / period + 1);
	for (uint64_t i = 0; i < p->skipped && i < SCHEDULE_SKIP_LOG_MAX; i++)
		p->skip_log[i] = first + (int64_t)i * period;
	p->skipped_last = first + (int64_t)(p->skipped - 1) * period;
	return p->skipped_last + period;
}

/*
 * The slots of a cron: schedule before cut, one by one up to
 * SCHEDULE_SKIP_COUNT_MAX; past that the count says "at least" and the
 * walk jumps to cut.
 */
static int64_t
schedule_skip_cron(const struct schedule *s, int64_t slot, int64_t cut,
    struct schedule_plan *p)
{
	while (slot >= 0 && slot < cut) {
		if (p->skipped < SCHEDULE_SKIP_LOG_MAX)
			p->skip_log[p->skipped] = slot;
		p->skipped_last = slot;
		p->skipped++;
		if (p->skipped == SCHEDULE_SKIP_COUNT_MAX) {
			p->skipped_more = true;
			p->skipped_last = -1;
			return schedule_next_here(s, cut - 1);
		}
		slot = schedule_next_here(s, slot);
	}
	return slot;
}

/* The first slot time that is not too late at now_ms. */
static int64_t
schedule_cut(const struct schedule *s, int64_t now_ms)
{
	int64_t cut_ms = now_ms - schedule_window_ms(s);
	int64_t cut = schedule_floor_div(cut_ms, 1000);

	return cut * 1000 < cut_ms ? cut + 1 : cut;
}

/*
 * What a transaction at now_ms does with the slots after last (see the
 * top): a slot more than schedule_window_ms late is skipped.  With
 * skipped_more the last skipped slot is not known (skipped_last -1):
 * p->last is then the second before the first slot not skipped.
 */
void
schedule_plan(const struct schedule *s, int64_t last, int64_t now_ms,
    struct schedule_plan *p)
{
	/* Slots below cut are too late: now - slot > window. */
	int64_t cut = schedule_cut(s, now_ms), slot;

	memset(p, 0, sizeof(*p));
	p->last = last;
	if (s->every_s == 0)
		tz_use(s->timezone);
	slot = schedule_next_here(s, last);
	if (s->every_s > 0)
		slot = schedule_skip_every(s, slot, cut, p);
	else
		slot = schedule_skip_cron(s, slot, cut, p);
	if (p->skipped > 0)
		p->last = p->skipped_more ? slot - 1 : p->skipped_last;
	while (slot >= 0 && slot * 1000 <= now_ms &&
	    p->ninsert < SCHEDULE_BATCH_MAX) {
		p->insert[p->ninsert++] = slot;
		p->last = slot;
		slot = schedule_next_here(s, slot);
	}
	p->next = slot;
	if (s->every_s == 0)
		tz_restore();
}

/*
 * The slot the schedule will insert next, at now_ms: the first after
 * last that is not too late (it may be due already).  -1: none.
 */
int64_t
schedule_due(const struct schedule *s, int64_t last, int64_t now_ms)
{
	int64_t cut = schedule_cut(s, now_ms) - 1;

	return schedule_next(s, cut > last ? cut : last);
}

/*
 * The slots of s at or before upto, newest first, at most n of them, into
 * out; returns how many.  A cron's gaps vary, so its slots are found by
 * walking forward from further back each time, up to
 * SCHEDULE_LOOK_BACK_S, and at most SCHEDULE_LOOK_STEPS slots a walk.
 */
size_t
schedule_slots_upto(const struct schedule *s, int64_t upto, size_t n,
    int64_t *out)
{
	int64_t span, gap, slot, last;
	size_t seen = 0, steps;

	if (n == 0 || upto < 0)
		return 0;
	if (s->every_s > 0) {
		last = schedule_floor_div(upto, s->every_s) * s->every_s;
		for (size_t k = 0; k < n; k++)
			out[k] = last - (int64_t)k * s->every_s;
		return n;
	}
	tz_use(s->timezone);
	gap = schedule_next_here(s, upto) - upto;
	span = (gap > 60 ? gap : 60) * (int64_t)n;
	for (;;) {
		/* The last n slots in (upto - span, upto], a ring of them. */
		seen = steps = 0;
		slot = schedule_next_here(s, upto - span);
		while (slot >= 0 && slot <= upto && steps++ < SCHEDULE_LOOK_STEPS) {
			out[seen++ % n] = slot;
			slot = schedule_next_here(s, slot);
		}
		if (seen >= n || span >= SCHEDULE_LOOK_BACK_S)
			break;
		span *= 2;
	}
	tz_restore();
	/* Newest first: the ring turned the right way round. */
	size_t got = seen < n ? seen : n;
	int64_t *ring = xcalloc(got + 1, sizeof(*ring));
	for (size_t k = 0; k < got; k++)
		ring[k] = out[(seen - 1 - k) % n];
	memcpy(out, ring, got * sizeof(*out));
	free(ring);
	return got;
}

/* The slot's :slot and :slot_local, and how messages show it. */
void
schedule_slot_text(const struct schedule *s, int64_t slot,
    struct schedule_slot_text *t)
{
	int64_t wall;
	size_t n;

	tz_use(s->timezone);
	wall = tz_wall(slot);
	tz_restore();
	tz_format(slot, t->utc, sizeof(t->utc));
	tz_format(wall, t->local, sizeof(t->local));
	/* Minutes, as cron times are written; seconds where slots have them. */
	n = s->every_s % 60 == 0 ? TZ_TIME_LEN - 3 : TZ_TIME_LEN;
	snprintf(t->shown, sizeof(t->shown), "%.*s %s", (int)n, t->local,
	    s->timezone);
}

void
schedule_free(struct schedule *s)
{
	free(s->name);
	free(s->where);
	free(s->expr);
	free(s->expr_where);
	free(s->timezone);
	free(s->queue);
	sql_free(&s->insert);
	memset(s, 0, sizeof(*s));
}
