/*
 * stats.c: the numbers a worker keeps for `rowq status` and the metrics,
 * in memory the supervisor can read.  One writer per struct (its worker);
 * readers may see a count a moment old, never a torn one.
 */
#include "rowq.h"

/*
 * Seconds: from a fast claim (1 ms) to lease-mode work of hours; one set
 * for every histogram, so that they can be compared and summed.
 */
const double histogram_bounds_s[HISTOGRAM_BUCKETS] = {
	0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
	60, 120, 300, 600, 1800, 3600, 7200, 14400,
};

/* The outcome label of rowq_handler_duration_seconds. */
const char *const handler_outcome_names[HANDLER_OUTCOMES] = {
	[HANDLER_OUTCOME_DONE] = "done",
	[HANDLER_OUTCOME_RETRY] = "retry",
	[HANDLER_OUTCOME_FAILED] = "failed",
	[HANDLER_OUTCOME_TIMEOUT] = "timeout",
};

void
histogram_add(struct histogram *h, int64_t us)
{
	int i;

	if (us < 0)
		us = 0;
	for (i = 0; i < HISTOGRAM_BUCKETS; i++)
		if ((double)us <= histogram_bounds_s[i] * 1e6)
			break;
	h->count[i]++;
	h->sum_us += (uint64_t)us;
}

void
histogram_merge(struct histogram *into, const struct histogram *h)
{
	for (int i = 0; i <= HISTOGRAM_BUCKETS; i++)
		into->count[i] += h->count[i];
	into->sum_us += h->sum_us;
}

void
rate_add(struct rate *r, int64_t now_s)
{
	int i = (int)(now_s % RATE_SECONDS);

	if (r->second[i] != now_s) {
		r->count[i] = 0;
		r->second[i] = now_s;
	}
	r->count[i]++;
}

/* Rows in the last RATE_SECONDS seconds, the current one included. */
uint64_t
rate_sum(const struct rate *r, int64_t now_s)
{
	uint64_t n = 0;

	for (int i = 0; i < RATE_SECONDS; i++)
		if (r->second[i] > now_s - RATE_SECONDS && r->second[i] <= now_s)
			n += r->count[i];
	return n;
}
