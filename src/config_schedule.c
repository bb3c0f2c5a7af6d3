/*
 * config_schedule.c: schedules: and the keys of each schedule (cron: or
 * every:, timezone:, insert:, catch_up:, queue:), with the checks across
 * keys, and queue:'s against the queues once every file is read.
 * The expression is parsed and the zone looked up here, at load, so that
 * a mistake is a configuration error with its file, line and key.
 */
#include "config.h"
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

/* The parameters an insert: may take (schedule_db.c binds them). */
static const char *const schedule_params[] = {
	"slot", "slot_unix", "slot_local", "schedule", NULL,
};

/* The expression as written, for messages (both keys: the last). */
static void
config_schedule_expr(struct load *ld, const struct config_item *it,
    struct schedule *sc, const char *s)
{
	free(sc->expr);
	free(sc->expr_where);
	sc->expr = xstrdup(s);
	sc->expr_where = config_where(ld, it->key->line, it->path);
}

static void
config_field_cron(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a cron expression");
	struct schedule *sc = dst;
	char err[CONFIG_MSG_MAX];

	(void)f;
	if (s == NULL)
		return;
	if (cron_parse(&sc->cron, s, err, sizeof(err)) == -1) {
		config_error(ld, it->value->line, it->path, "%s", err);
		return;
	}
	config_schedule_expr(ld, it, sc, s);
}

/* every: a whole number of seconds: a slot is a second at the finest. */
static void
config_field_every(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	static const struct config_field second = { .min = 1000 };
	struct schedule *sc = dst;
	char shown[CONFIG_SHOW_MAX + 8];
	int64_t ms = -1;

	(void)f;
	config_field_duration(ld, it, &ms, &second);
	if (ms < 0)
		return;
	if (ms % 1000 != 0) {
		config_error(ld, it->value->line, it->path, "not a whole number "
		    "of seconds: %s", config_show(it->value->value, shown,
		    sizeof(shown)));
		return;
	}
	sc->every_s = ms / 1000;
	config_schedule_expr(ld, it, sc, it->value->value);
}

static void
config_field_timezone(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a time zone name");
	char shown[CONFIG_SHOW_MAX + 8], err[CONFIG_MSG_MAX];

	(void)f;
	if (s == NULL)
		return;
	if (tz_check(s, err, sizeof(err)) == -1) {
		config_error(ld, it->value->line, it->path, "%s: %s",
		    config_show(s, shown, sizeof(shown)), err);
		return;
	}
	free(*(char **)dst);
	*(char **)dst = xstrdup(s);
}

/* The statement, with the parameters of a slot only. */
static void
config_field_insert(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	struct sql *q = dst;

	config_field_statement(ld, it, dst, f);
	for (size_t i = 0; q->positional != NULL && i < q->nparams; i++) {
		size_t k = 0;
		while (schedule_params[k] != NULL &&
		    strcmp(schedule_params[k], q->params[i]) != 0)
			k++;
		if (schedule_params[k] == NULL)
			config_error(ld, it->value->line, it->path, ":%s is not "
			    "a parameter of a schedule's insert (:slot, "
			    ":slot_unix, :slot_local, :schedule)", q->params[i]);
	}
}

/* queue: a queue's name, checked once every file is read. */
static void
config_field_feeds(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	struct schedule *sc = dst;

	config_field_string(ld, it, &sc->queue, f);
	sc->queue_line = it->value->line;
}

/* To add a schedule key: a field here, a member in struct schedule. */
static const struct config_field schedule_fields[] = {
	WHOLE("cron", cron),
	WHOLE("every", every),
	FIELD(struct schedule, "timezone", timezone, timezone, 0, 0),
	FIELD(struct schedule, "insert", insert, insert, 0, 0),
	FIELD(struct schedule, "catch_up", duration, catch_up_ms, 0, 0),
	WHOLE("queue", feeds),
};

static void
config_schedule_checks(struct load *ld, const struct config_item *it,
    const struct node **seen)
{
	static const char *const required[] = { "insert", NULL };
	const struct node *cron = SEEN(schedule_fields, seen, "cron");
	const struct node *every = SEEN(schedule_fields, seen, "every");
	char path[CONFIG_PATH_MAX];

	config_require(ld, it, schedule_fields, NELEMS(schedule_fields), seen,
	    required);
	if (cron == NULL && every == NULL)
		config_error(ld, it->key->line, it->path, "missing cron: or "
		    "every:, the times of its slots");
	if (cron != NULL && every != NULL) {
		const struct node *later = cron->line > every->line ? cron :
		    every;
		config_path(path, sizeof(path), it->path, later->value);
		config_error(ld, later->line, path, "cron and every exclude "
		    "each other");
	}
}

static void
config_schedule_parse(struct load *ld, const struct node *key,
    const struct node *value, const char *parent)
{
	const struct node *seen[NELEMS(schedule_fields)] = { 0 };
	struct config *cfg = ld->cfg;
	char path[CONFIG_PATH_MAX], shown[CONFIG_SHOW_MAX + 8];
	struct schedule *sc;

	ld->schedule_entries++;
	if (key->kind != NODE_SCALAR || !config_queue_name_ok(key->value)) {
		if (key->kind != NODE_INVALID)
			config_error(ld, key->line, parent, "%s is not a "
			    "schedule name: use 1 to %d letters, digits, _ and "
			    "-", key->kind == NODE_SCALAR ? config_show(
			    key->value, shown, sizeof(shown)) :
			    config_node_kind_name(key), QUEUE_NAME_MAX);
		return;
	}
	config_path(path, sizeof(path), parent, key->value);
	if (cfg->nschedules == SCHEDULES_MAX) {
		config_error(ld, key->line, path, "more than %d schedules",
		    SCHEDULES_MAX);
		return;
	}
	cfg->schedules = xrealloc(cfg->schedules,
	    (cfg->nschedules + 1) * sizeof(*cfg->schedules));
	sc = &cfg->schedules[cfg->nschedules++];
	memset(sc, 0, sizeof(*sc));
	sc->name = xstrdup(key->value);
	sc->where = config_where(ld, key->line, NULL);
	sc->timezone = xstrdup("UTC");

	struct config_item it = {
		.key = key, .value = value, .path = path, .parent = NULL,
	};
	if (config_walk(ld, &it, schedule_fields, NELEMS(schedule_fields), sc,
	    seen) == 0)
		config_schedule_checks(ld, &it, seen);
}

void
config_field_schedules(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	const struct node *map = it->value;

	(void)dst;
	(void)f;
	if (config_node_null(map))
		return;
	if (!config_expect_mapping(ld, it))
		return;
	for (size_t i = 0; i + 1 < map->nitems; i += 2)
		config_schedule_parse(ld, map->items[i], map->items[i + 1],
		    it->path);
}

/*
 * Each queue: names a queue of the configuration that keeps a run log
 * (runs:), where a slot's row is written beside the row's tries: once
 * every file is read, since the queue may come from an included one.
 * Schedules are the main file's (ld->file is it).
 */
void
config_schedules_link(struct load *ld)
{
	const struct config *cfg = ld->cfg;
	char path[CONFIG_PATH_MAX], shown[CONFIG_SHOW_MAX + 8];

	for (size_t i = 0; i < cfg->nschedules; i++) {
		const struct schedule *sc = &cfg->schedules[i];
		const struct queue *q;
		if (sc->queue == NULL)
			continue;
		snprintf(path, sizeof(path), "schedules.%s.queue", sc->name);
		if ((q = config_queue(cfg, sc->queue)) == NULL)
			config_error(ld, sc->queue_line, path, "no queue named "
			    "%s", config_show(sc->queue, shown, sizeof(shown)));
		else if (!q->runs.enabled)
			config_error(ld, sc->queue_line, path, "queue %s keeps "
			    "no run log: give it runs:, where each slot's row "
			    "is written beside its tries", q->name);
	}
}

struct schedule *
config_schedule(const struct config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nschedules; i++)
		if (strcmp(cfg->schedules[i].name, name) == 0)
			return &cfg->schedules[i];
	return NULL;
}

const char *
config_schedule_table(const struct config *cfg)
{
	return cfg->schedule_table != NULL ? cfg->schedule_table :
	    SCHEDULE_TABLE_DEFAULT;
}

void
config_schedules_free(struct config *cfg)
{
	for (size_t i = 0; i < cfg->nschedules; i++)
		schedule_free(&cfg->schedules[i]);
	free(cfg->schedules);
	free(cfg->schedule_table);
	cfg->schedules = NULL;
	cfg->nschedules = 0;
	cfg->schedule_table = NULL;
}
