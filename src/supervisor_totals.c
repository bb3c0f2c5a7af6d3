/*
 * supervisor_totals.c: what a queue's workers did, added up --- those
 * that exited (their last counts, kept in the supervisor's totals) and
 * those that run (their shared worker_stats) --- and what its workers do
 * now, for report.c, status_socket.c and the metrics.
 */
#include "rowq.h"
#include "supervisor.h"

#include <stdlib.h>
#include <string.h>

static struct totals *
supervisor_totals(struct supervisor *s, const char *queue)
{
	for (size_t i = 0; i < s->ntotals; i++)
		if (strcmp(s->totals[i].queue, queue) == 0)
			return &s->totals[i];
	s->totals = xrealloc(s->totals, (s->ntotals + 1) * sizeof(*s->totals));
	memset(&s->totals[s->ntotals], 0, sizeof(*s->totals));
	s->totals[s->ntotals].queue = xstrdup(queue);
	return &s->totals[s->ntotals++];
}

/* What a worker did, added to t. */
static void
totals_add(struct totals *t, const struct worker_stats *w)
{
	t->done += w->done;
	t->retried += w->retried;
	t->failed += w->failed;
	t->errors += w->errors;
	t->reconnects += w->reconnects;
	t->db_retries += w->db_retries;
	t->handler_restarts += w->handler_restarts;
	t->on_failed_dropped += w->on_failed_dropped;
	for (int r = 0; r < LIMIT_REASONS; r++)
		t->limit_waits[r] += w->limit_waits[r];
	histogram_merge(&t->claim, &w->claim);
	for (int i = 0; i < HANDLER_OUTCOMES; i++)
		histogram_merge(&t->handler[i], &w->handler[i]);
	histogram_merge(&t->pickup, &w->pickup);
	if (w->last_error_ms > t->last_error_ms) {
		t->last_error_ms = w->last_error_ms;
		memcpy(t->last_error, (const char *)w->last_error,
		    sizeof(t->last_error));
		t->last_error[sizeof(t->last_error) - 1] = '\0';
	}
}

/*
 * What a worker did goes into its queue's totals when it exits; returns
 * them, for the restart to be counted.
 */
struct totals *
supervisor_add_exited(struct supervisor *s, const char *queue,
    const struct worker_stats *w)
{
	struct totals *t = supervisor_totals(s, queue);

	totals_add(t, w);
	return t;
}

/*
 * Counts of a queue: what exited workers did plus what live ones report.
 * The copy's queue name is borrowed.
 */
struct totals
supervisor_count(struct supervisor *s, const char *queue)
{
	struct totals t = *supervisor_totals(s, queue);

	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->pid == 0 || strcmp(sl->queue->name, queue) != 0)
			continue;
		totals_add(&t, sl->stats);
	}
	return t;
}

/* Workers of the queue that run. */
int
supervisor_workers_up(const struct supervisor *s, const struct queue *q)
{
	int up = 0;

	for (int i = 0; i < s->nslots; i++)
		if (s->slots[i].state == SLOT_RUNNING &&
		    s->slots[i].queue == q)
			up++;
	return up;
}

/*
 * How long the queue's longest-running handler on this daemon has run,
 * in seconds; 0 when none runs (a hung handler shows here long before
 * its timeout, and alert_running says so).
 */
long long
supervisor_running_oldest_s(const struct supervisor *s, const struct queue *q)
{
	int64_t now = wall_ms(), oldest = 0;

	for (int i = 0; i < s->nslots; i++) {
		const struct slot *sl = &s->slots[i];
		if (sl->pid != 0 && sl->stats->state == WORKER_BUSY &&
		    strcmp(sl->queue->name, q->name) == 0 &&
		    sl->stats->since_ms > 0 && now - sl->stats->since_ms > oldest)
			oldest = now - sl->stats->since_ms;
	}
	return oldest / 1000;
}

/* Workers of the queue busy with a row: each holds that row. */
long
supervisor_busy(const struct supervisor *s, const char *queue)
{
	long busy = 0;

	for (int i = 0; i < s->nslots; i++) {
		const struct slot *sl = &s->slots[i];
		if (sl->pid != 0 && sl->stats->state == WORKER_BUSY &&
		    strcmp(sl->queue->name, queue) == 0)
			busy++;
	}
	return busy;
}

bool
supervisor_wants(const struct supervisor *s, const struct queue *q)
{
	if (!s->opts->drain || s->opts->nqueues == 0)
		return true;
	for (size_t i = 0; i < s->opts->nqueues; i++)
		if (strcmp(s->opts->queues[i], q->name) == 0)
			return true;
	return false;
}
