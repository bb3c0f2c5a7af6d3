/*
 * config_limit.c: the keys of flow control: a queue's limit: (how many
 * of its handlers run at once and how often they start, on every daemon
 * together, and the same per value of a column), and workers: as a range
 * {min: N, max: M} that the daemon scales within (scale.c).
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A rate's period: at least a millisecond, at most a day. */
#define LIMIT_PERIOD_MAX_MS	(24LL * 3600 * 1000)

/*
 * COUNT/DURATION: starts per period, as "100/1m", "50/1s", "3/250ms" or
 * "10/60" (seconds).
 */
void
config_field_rate(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a rate such as 100/1m");
	struct limit_rate *r = dst;
	char shown[CONFIG_SHOW_MAX + 8], *end;
	const char *slash;
	long long count;
	int64_t ms;

	(void)f;
	if (s == NULL)
		return;
	slash = strchr(s, '/');
	count = strtoll(s, &end, 10);
	if (slash == NULL || end != slash || s[0] < '0' || s[0] > '9' ||
	    duration_parse(slash + 1, &ms) == -1) {
		config_error(ld, it->value->line, it->path, "not a rate: %s: "
		    "write COUNT/DURATION, such as 100/1m",
		    config_show(s, shown, sizeof(shown)));
		return;
	}
	if (count < 1 || count > LIMIT_RATE_COUNT_MAX) {
		config_error(ld, it->value->line, it->path, "the count must be "
		    "from 1 to %d, not %s", LIMIT_RATE_COUNT_MAX,
		    config_show(s, shown, sizeof(shown)));
		return;
	}
	if (ms < 1 || ms > LIMIT_PERIOD_MAX_MS) {
		config_error(ld, it->value->line, it->path, "the period must be "
		    "from 1ms to 1d, not %s",
		    config_show(slash + 1, shown, sizeof(shown)));
		return;
	}
	r->count = (int)count;
	r->period_ms = ms;
}

static const struct config_field per_key_fields[] = {
	FIELD(struct limit_policy, "column", string, key_column, 0, 0),
	FIELD(struct limit_policy, "concurrency", int, key_concurrency, 1,
	    LIMIT_CONCURRENCY_MAX),
	FIELD(struct limit_policy, "rate", rate, key_rate, 0, 0),
};

/* per_key: the limits of the queue, per value of a column of the select. */
static void
config_field_per_key(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	static const char *const required[] = { "column", NULL };
	const struct node *seen[NELEMS(per_key_fields)] = { 0 };
	struct limit_policy *l = dst;
	const struct node *k;
	char path[CONFIG_PATH_MAX];

	(void)f;
	if (config_walk(ld, it, per_key_fields, NELEMS(per_key_fields), l,
	    seen) == -1)
		return;
	config_require(ld, it, per_key_fields, NELEMS(per_key_fields), seen,
	    required);
	if ((k = SEEN(per_key_fields, seen, "column")) != NULL) {
		config_path(path, sizeof(path), it->path, "column");
		l->key_where = config_where(ld, k->line, path);
		if (l->key_column != NULL && l->key_column[0] == '\0') {
			config_error(ld, k->line, path, "an empty column name");
			free(l->key_column);
			l->key_column = NULL;
		}
	}
}

static const struct config_field limit_fields[] = {
	FIELD(struct limit_policy, "concurrency", int, concurrency, 1,
	    LIMIT_CONCURRENCY_MAX),
	FIELD(struct limit_policy, "rate", rate, rate, 0, 0),
	FIELD(struct limit_policy, "burst", int, burst, 1, LIMIT_BURST_MAX),
	FIELD(struct limit_policy, "max_throttle", duration, max_throttle_ms,
	    1000, 0),
	WHOLE("per_key", per_key),
};

/* limit: may be empty ({}): only the handlers' throttles then. */
void
config_field_limit(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const struct node *seen[NELEMS(limit_fields)] = { 0 };
	struct limit_policy *l = dst;
	const struct node *k;
	char path[CONFIG_PATH_MAX];

	(void)f;
	l->enabled = true;
	l->where = config_where(ld, it->key->line, it->path);
	if (config_node_null(it->value))
		return;
	if (config_walk(ld, it, limit_fields, NELEMS(limit_fields), l,
	    seen) == -1)
		return;
	/* burst: 1 is the default, and a burst refused is said already. */
	k = SEEN(limit_fields, seen, "burst");
	if (k != NULL && l->burst != 1 && l->rate.count == 0 &&
	    l->key_rate.count == 0) {
		config_path(path, sizeof(path), it->path, "burst");
		config_error(ld, k->line, path, "burst needs rate (or "
		    "per_key.rate): it is how many starts a rate lets through "
		    "at once after a quiet spell");
	}
}

void
config_limit_defaults(struct limit_policy *l)
{
	memset(l, 0, sizeof(*l));
	l->burst = 1;
	l->max_throttle_ms = 3600 * 1000;
}

void
config_limit_free(struct limit_policy *l)
{
	free(l->where);
	free(l->key_column);
	free(l->key_where);
}

/* ---- workers: N, or {min: N, max: M} ---- */

static const struct config_field workers_fields[] = {
	FIELD(struct queue, "min", int, workers_min, 1, WORKERS_MAX),
	FIELD(struct queue, "max", int, workers, 1, WORKERS_MAX),
};

void
config_field_workers(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	static const char *const required[] = { "min", "max", NULL };
	static const struct config_field fixed =
	    FIELD(struct queue, "workers", int, workers, 1, WORKERS_MAX);
	const struct node *seen[NELEMS(workers_fields)] = { 0 };
	struct queue *q = dst;

	(void)f;
	if (it->value->kind != NODE_MAPPING) {
		config_field_int(ld, it, &q->workers, &fixed);
		q->workers_min = q->workers;
		return;
	}
	if (config_walk(ld, it, workers_fields, NELEMS(workers_fields), q,
	    seen) == -1)
		return;
	config_require(ld, it, workers_fields, NELEMS(workers_fields), seen,
	    required);
	if (q->workers_min > q->workers)
		config_error(ld, SEEN(workers_fields, seen, "min") ?
		    SEEN(workers_fields, seen, "min")->line : it->key->line,
		    it->path, "min (%d) is more than max (%d)", q->workers_min,
		    q->workers);
}
