/*
 * config_queue.c: queues: and the keys of each queue (the select, the
 * handler, done, failed, lease: and the rest; retry: is config_retry.c's),
 * with the checks
 * across keys, which say what a queue lacks or what does not go together.
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- values of a queue's own kinds ---- */

/* One statement with :name parameters, said at line, named path. */
static void
config_statement(struct load *ld, const char *s, int key_line, int line,
    const char *path, struct sql *q)
{
	char err[CONFIG_MSG_MAX];

	q->where = config_where(ld, key_line, path);
	if (sql_check_no_rows(s, err, sizeof(err)) == -1 ||
	    sql_compile(q, s, err, sizeof(err)) == -1)
		config_error(ld, line, path, "%s", err);
}

/* A statement with :name parameters. */
void
config_field_statement(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "an SQL statement");

	(void)f;
	if (s != NULL)
		config_statement(ld, s, it->key->line, it->value->line,
		    it->path, dst);
}

/* A list of statements holds 1 to SQL_LIST_MAX; false after its error. */
static bool
config_list_size_ok(struct load *ld, const struct config_item *it)
{
	const struct node *v = it->value;

	if (v->nitems >= 1 && v->nitems <= SQL_LIST_MAX)
		return true;
	config_error(ld, v->line, it->path, "expected a statement or a list "
	    "of 1 to %d, not %zu", SQL_LIST_MAX, v->nitems);
	return false;
}

/*
 * done:, failed:, retry.update:, lease.claim:, lease.renew:, requeue:,
 * discard:, cancel: a statement, or a list of them, run in order in the row's
 * transaction (struct sql's next), each named by its place:
 * queues.email.done[1].
 */
void
config_field_statements(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	const struct node *v = it->value;
	struct sql *q = dst;
	char path[CONFIG_PATH_MAX];

	if (v->kind != NODE_SEQUENCE) {
		config_field_statement(ld, it, dst, f);
		return;
	}
	if (!config_list_size_ok(ld, it))
		return;
	for (size_t i = 0; i < v->nitems; i++) {
		const struct node *a = v->items[i];
		snprintf(path, sizeof(path), "%s[%zu]", it->path, i);
		if (i > 0)
			q = q->next = xcalloc(1, sizeof(*q));
		if (a->kind != NODE_SCALAR) {
			if (a->kind != NODE_INVALID)
				config_error(ld, a->line, path, "expected an "
				    "SQL statement, not %s",
				    config_node_kind_name(a));
			continue;
		}
		config_statement(ld, a->value, a->line, a->line, path, q);
	}
}

/* The select: no LIMIT, no locking clause, no parameters. */
static void
config_field_select(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a SELECT statement");
	struct sql *q = dst;
	char err[CONFIG_MSG_MAX];

	(void)f;
	if (s == NULL)
		return;
	if (sql_check_select(s, err, sizeof(err)) == -1) {
		config_error(ld, it->value->line, it->path, "%s", err);
		return;
	}
	q->where = config_where(ld, it->key->line, it->path);
	if (sql_compile(q, s, err, sizeof(err)) == -1)
		config_error(ld, it->value->line, it->path, "%s", err);
	else if (q->nparams > 0)
		config_error(ld, it->value->line, it->path, ":%s: the select "
		    "takes no parameters (only done, failed, retry.update, "
		    "lease.claim, lease.renew, lease.release, requeue, "
		    "discard and cancel do)",
		    q->params[0]);
}

/* stop_signal: a signal's name, as kill -l writes it (SIG in front or not). */
static void
config_field_stop_signal(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a signal's name");
	char shown[CONFIG_SHOW_MAX + 8];
	int sig;

	(void)f;
	if (s == NULL)
		return;
	if ((sig = handler_stop_signal_parse(s)) != 0)
		*(int *)dst = sig;
	else
		config_error(ld, it->value->line, it->path, "expected "
		    STOP_SIGNAL_NAMES ", not %s",
		    config_show(s, shown, sizeof(shown)));
}

/* ---- lease: ---- */

static const struct config_field lease_fields[] = {
	FIELD(struct lease_policy, "claim", statements, claim, 0, 0),
	FIELD(struct lease_policy, "renew", statements, renew, 0, 0),
	FIELD(struct lease_policy, "release", statements, release, 0, 0),
	FIELD(struct lease_policy, "duration", duration, duration_ms, 3000, 0),
	FIELD(struct lease_policy, "ahead", int, ahead, 1, BATCH_MAX),
};

static void
config_field_lease(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	static const char *const required[] = { "claim", "duration", NULL };
	const struct node *seen[NELEMS(lease_fields)] = { 0 };
	struct lease_policy *l = dst;

	(void)f;
	if (config_walk(ld, it, lease_fields, NELEMS(lease_fields), l,
	    seen) == -1)
		return;
	l->enabled = true;
	l->where = config_where(ld, it->key->line, it->path);
	if (SEEN(lease_fields, seen, "ahead") != NULL)
		l->ahead_line = SEEN(lease_fields, seen, "ahead")->line;
	config_require(ld, it, lease_fields, NELEMS(lease_fields), seen,
	    required);
	/*
	 * Run again to renew, a list would do all of its work again (insert
	 * a second claimed row, log a second claim): say how to renew.
	 */
	if (l->claim.next != NULL && SEEN(lease_fields, seen, "renew") ==
	    NULL) {
		const struct node *k = SEEN(lease_fields, seen, "claim");
		char path[CONFIG_PATH_MAX];
		config_path(path, sizeof(path), it->path, "claim");
		config_error(ld, k->line, path, "a list of statements cannot "
		    "renew the lease by running again: give lease.renew, "
		    "such as UPDATE ... SET leased_until = ... WHERE id = :id "
		    "AND lease = :lease");
	}
}

/* ---- prune: ---- */

/*
 * prune.delete: a statement, or a list of them, each run in every chunk's
 * transaction in order: the texts here, each with where it was said;
 * bounded once chunk: is known (config_field_prune).
 */
static void
config_field_prune_delete(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	const struct node *v = it->value;
	struct prune_policy *p = dst;
	char path[CONFIG_PATH_MAX];

	(void)f;
	if (v->kind != NODE_SEQUENCE) {
		if (config_scalar(ld, it, "a DELETE or a CALL") == NULL)
			return;
		p->text = xstrdup(v->value);
		p->where = config_where(ld, it->key->line, it->path);
		return;
	}
	if (!config_list_size_ok(ld, it))
		return;
	for (size_t i = 0; i < v->nitems; i++) {
		const struct node *a = v->items[i];
		snprintf(path, sizeof(path), "%s[%zu]", it->path, i);
		if (i > 0)
			p = p->next = xcalloc(1, sizeof(*p));
		p->where = config_where(ld, a->line, path);
		if (a->kind == NODE_SCALAR)
			p->text = xstrdup(a->value);
		else if (a->kind != NODE_INVALID)
			config_error(ld, a->line, path, "expected a DELETE or a "
			    "CALL, not %s", config_node_kind_name(a));
	}
}

static const struct config_field prune_fields[] = {
	WHOLE("delete", prune_delete),
	FIELD(struct prune_policy, "chunk", int, chunk, 1, PRUNE_CHUNK_MAX),
	FIELD(struct prune_policy, "pause", duration, pause_ms, 0, 0),
	FIELD(struct prune_policy, "every", duration, every_ms, 1000, 0),
};

/* The statement is bounded once chunk: is known, wherever it stands. */
static void
config_field_prune(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	static const char *const required[] = { "delete", NULL };
	const struct node *seen[NELEMS(prune_fields)] = { 0 };
	struct prune_policy *p = dst;
	const struct node *k;
	char path[CONFIG_PATH_MAX], err[CONFIG_MSG_MAX];

	(void)f;
	if (config_walk(ld, it, prune_fields, NELEMS(prune_fields), p,
	    seen) == -1)
		return;
	p->enabled = true;
	config_require(ld, it, prune_fields, NELEMS(prune_fields), seen,
	    required);
	if ((k = SEEN(prune_fields, seen, "delete")) == NULL)
		return;
	config_path(path, sizeof(path), it->path, "delete");
	/* A list's statements are said on lines of their own. */
	const struct node *v = config_lookup(it->value, "delete");
	for (size_t n = 0; v != NULL && n + 1 < it->value->nitems; n += 2)
		if (it->value->items[n] == v) {
			v = it->value->items[n + 1];	/* the key's value */
			break;
		}
	size_t i = 0;
	for (struct prune_policy *s = p; s != NULL; s = s->next, i++) {
		unsigned long line = k->line;
		char at[CONFIG_PATH_MAX + 24];
		if (s->text == NULL)
			continue;
		snprintf(at, sizeof(at), "%s", path);
		if (v != NULL && v->kind == NODE_SEQUENCE && i < v->nitems) {
			line = v->items[i]->line;
			snprintf(at, sizeof(at), "%s[%zu]", path, i);
		}
		s->chunk = p->chunk;
		if (prune_compile(s, err, sizeof(err)) == -1)
			config_error(ld, line, at, "%s", err);
	}
}

/* ---- runs: ---- */

static const struct config_field runs_fields[] = {
	FIELD(struct run_policy, "table", table, table, 0, 0),
	FIELD(struct run_policy, "keep", duration, keep_ms, 0, 0),
};

/* runs: {} takes the defaults; runs: true too, false leaves it off. */
static void
config_field_runs(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const struct node *seen[NELEMS(runs_fields)] = { 0 };
	struct run_policy *r = dst;

	if (it->value->kind == NODE_SCALAR) {
		bool on = false;
		config_field_bool(ld, it, &on, f);
		r->enabled = on;
	} else if (config_walk(ld, it, runs_fields, NELEMS(runs_fields), r,
	    seen) == -1)
		return;
	else
		r->enabled = true;
	free(r->where);
	r->where = config_where(ld, it->key->line, it->path);
}

/* ---- a queue ---- */

static void
config_argv(struct load *ld, const struct config_item *it, struct queue *q,
    enum handler_kind kind)
{
	const struct node *v = it->value;
	char path[CONFIG_PATH_MAX], shown[CONFIG_SHOW_MAX + 8];
	const char *name, *what;
	size_t i, pos, len;
	int r;

	if (v->kind != NODE_SEQUENCE || v->nitems == 0) {
		if (v->kind != NODE_INVALID)
			config_error(ld, v->line, it->path, "expected a "
			    "sequence such as [/usr/bin/program, \"{id}\"], "
			    "not %s", v->kind == NODE_SEQUENCE ?
			    "an empty one" : config_node_kind_name(v));
		return;
	}
	if (v->nitems > ARGV_MAX) {
		config_error(ld, v->line, it->path, "more than %d arguments",
		    ARGV_MAX);
		return;
	}
	if (q->argv != NULL) {
		config_error(ld, it->key->line, it->path, "a queue has one "
		    "handler: exec or pipe, not both");
		return;
	}
	q->handler = kind;
	q->argv = xcalloc(v->nitems + 1, sizeof(*q->argv));
	q->argv_where = config_where(ld, it->key->line, it->path);
	for (i = 0; i < v->nitems; i++) {
		const struct node *a = v->items[i];
		snprintf(path, sizeof(path), "%s[%zu]", it->path, i);
		if (a->kind != NODE_SCALAR) {
			if (a->kind != NODE_INVALID)
				config_error(ld, a->line, path, "expected a "
				    "string, not %s", config_node_kind_name(a));
			q->argv[i] = xstrdup("");
			continue;
		}
		q->argv[i] = xstrdup(a->value);
		if (i == 0 && a->value[0] == '\0')
			config_error(ld, a->line, path, "an empty program "
			    "name");
		pos = 0;
		while ((r = config_placeholder(a->value, &pos, &name, &len,
		    &what)) == 1)
			;
		if (r == -1)
			config_error(ld, a->line, path, "%s in %s", what,
			    config_show(a->value, shown, sizeof(shown)));
	}
}

/*
 * A program and its fixed arguments (on_failed:), run without a shell:
 * what it is about comes on its standard input and in its environment,
 * so a {column} in an argument is refused rather than left as it is.
 */
void
config_field_program(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	struct program *p = dst;
	const struct node *v = it->value;
	char path[CONFIG_PATH_MAX];

	(void)f;
	if (v->kind != NODE_SEQUENCE || v->nitems == 0 ||
	    v->nitems > ARGV_MAX) {
		if (v->kind != NODE_INVALID)
			config_error(ld, v->line, it->path, "expected a "
			    "sequence such as [/usr/local/bin/report-failure, "
			    "--team, mail] of at most %d", ARGV_MAX);
		return;
	}
	config_program_free(p);
	p->argv = xcalloc(v->nitems + 1, sizeof(*p->argv));
	p->where = config_where(ld, it->key->line, it->path);
	for (size_t i = 0; i < v->nitems; i++) {
		const struct node *a = v->items[i];
		snprintf(path, sizeof(path), "%s[%zu]", it->path, i);
		p->argv[i] = xstrdup(a->kind == NODE_SCALAR ? a->value : "");
		if (a->kind != NODE_SCALAR) {
			if (a->kind != NODE_INVALID)
				config_error(ld, a->line, path, "expected a "
				    "string, not %s", config_node_kind_name(a));
		} else if (i == 0 && a->value[0] == '\0')
			config_error(ld, a->line, path, "an empty program "
			    "name");
		else if (strchr(a->value, '{') != NULL)
			config_error(ld, a->line, path, "no {column} here: the "
			    "row comes on standard input, ROWQ_KEY and the "
			    "others in the environment");
	}
}

void
config_program_free(struct program *p)
{
	for (size_t i = 0; p->argv != NULL && p->argv[i] != NULL; i++)
		free(p->argv[i]);
	free(p->argv);
	free(p->where);
	p->argv = NULL;
	p->where = NULL;
}

static void
config_field_exec(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	(void)f;
	config_argv(ld, it, dst, HANDLER_EXEC);
}

static void
config_field_pipe(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	(void)f;
	config_argv(ld, it, dst, HANDLER_PIPE);
}

/*
 * handler: none, a queue whose work is its done: statements (moving due
 * rows back to ready, recovering a dead worker's claims): its rows are
 * claimed and finished in one transaction per batch, and no process is
 * started.  Said outright, so that a queue whose exec: was forgotten is
 * refused rather than run as one that marks every row done.
 */
static void
config_field_handler(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "none");
	char shown[CONFIG_SHOW_MAX + 8];

	(void)f;
	if (s == NULL)
		return;
	if (strcmp(s, "none") == 0)
		((struct queue *)dst)->handler = HANDLER_NONE;
	else
		config_error(ld, it->value->line, it->path, "expected none "
		    "(a queue whose done: statements are its work), not %s; a "
		    "program is exec: or pipe:", config_show(s, shown,
		    sizeof(shown)));
}

/* key: is a column name; where it was said is kept for later checks. */
static void
config_field_key(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	struct queue *q = dst;

	(void)f;
	if (config_scalar(ld, it, "a column name") == NULL)
		return;
	q->key_column = xstrdup(it->value->value);
	q->key_where = config_where(ld, it->key->line, it->path);
}

/*
 * A key naming a column of the select (age:, ready_at:,
 * traceparent_column:, group_by:), checked against the select's columns once it is
 * prepared (config_columns.c).
 */
static void
config_field_column(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	struct column_ref *c = dst;

	(void)f;
	if (config_scalar(ld, it, "a column name") == NULL)
		return;
	c->name = xstrdup(it->value->value);
	c->where = config_where(ld, it->key->line, it->path);
}

/*
 * wake: how idle workers learn of new rows: poll (the wake watcher's
 * read every idle, the default) or binlog (that, and the server's binary
 * log followed as a replica does, wake_binlog.c).
 */
static void
config_field_wake(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	struct queue *q = dst;
	const char *v;
	char shown[CONFIG_SHOW_MAX + 8];

	(void)f;
	if ((v = config_scalar(ld, it, "poll or binlog")) == NULL)
		return;
	if (strcmp(v, "binlog") == 0)
		q->wake_binlog = true;
	else if (strcmp(v, "poll") != 0) {
		config_error(ld, it->value->line, it->path, "not poll or "
		    "binlog: %s", config_show(v, shown, sizeof(shown)));
		return;
	}
	q->wake_where = config_where(ld, it->key->line, it->path);
}

/*
 * time_zone: server (the default) or UTC: the zone the select's
 * DATETIME columns of age: and ready_at: are kept in.
 */
static void
config_field_time_zone(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "server or UTC");
	char shown[CONFIG_SHOW_MAX + 8];

	(void)f;
	if (s == NULL)
		return;
	if (strcmp(s, "server") == 0 || strcmp(s, "UTC") == 0)
		*(bool *)dst = strcmp(s, "UTC") == 0;
	else
		config_error(ld, it->value->line, it->path, "expected server "
		    "or UTC, not %s", config_show(s, shown, sizeof(shown)));
}

/* To add a queue key: a field here, a member in struct queue, a default. */
static const struct config_field queue_fields[] = {
	WHOLE("workers", workers),
	FIELD(struct queue, "scale_cooldown", duration, scale_cooldown_ms, 1000,
	    0),
	FIELD(struct queue, "select", select, select, 0, 0),
	WHOLE("key", key),
	FIELD(struct queue, "batch", int, batch, 1, BATCH_MAX),
	WHOLE("exec", exec),
	WHOLE("pipe", pipe),
	WHOLE("handler", handler),
	FIELD(struct queue, "timeout", duration, handling.timeout_ms, 1, 0),
	FIELD(struct queue, "stop_signal", stop_signal, handling.stop_signal,
	    0, 0),
	FIELD(struct queue, "stop_grace", duration, handling.stop_grace_ms, 1,
	    0),
	FIELD(struct queue, "done", statements, done, 0, 0),
	FIELD(struct queue, "retry", retry, retry, 0, 0),
	FIELD(struct queue, "failed", statements, failed, 0, 0),
	FIELD(struct queue, "idle", duration, idle_ms, 0, 0),
	WHOLE("wake", wake),
	FIELD(struct queue, "max_jobs", long, max_jobs, 0, INT64_MAX),
	FIELD(struct queue, "lease", lease, lease, 0, 0),
	FIELD(struct queue, "age", column, age, 0, 0),
	FIELD(struct queue, "ready_at", column, ready_at, 0, 0),
	FIELD(struct queue, "time_zone", time_zone, times_utc, 0, 0),
	FIELD(struct queue, "traceparent_column", column, traceparent, 0, 0),
	FIELD(struct queue, "group_by", column, group_by, 0, 0),
	FIELD(struct queue, "failed_count", select, failed_count, 0, 0),
	FIELD(struct queue, "alert_age", duration, alert_age_ms, 1, 0),
	FIELD(struct queue, "alert_running", duration, alert_running_ms, 1, 0),
	FIELD(struct queue, "alert_failed", long, alert_failed, 0, INT64_MAX),
	FIELD(struct queue, "failed_select", select, failed_select, 0, 0),
	FIELD(struct queue, "requeue", statements, requeue, 0, 0),
	FIELD(struct queue, "discard", statements, discard, 0, 0),
	FIELD(struct queue, "cancel", statements, cancel, 0, 0),
	FIELD(struct queue, "env", env, env, 0, 0),
	FIELD(struct queue, "user", user, user, 0, 0),
	FIELD(struct queue, "group", group, user, 0, 0),
	FIELD(struct queue, "prune", prune, prune, 0, 0),
	FIELD(struct queue, "runs", runs, runs, 0, 0),
	FIELD(struct queue, "on_failed", program, on_failed, 0, 0),
	FIELD(struct queue, "on_failed_timeout", duration,
	    on_failed_timeout_ms, 1, 0),
	FIELD(struct queue, "on_failed_rate", int, on_failed_rate, 1, 100000),
	FIELD(struct queue, "limit", limit, limit, 0, 0),
};

static void
config_queue_defaults(struct queue *q)
{
	memset(q, 0, sizeof(*q));
	q->workers = 1;
	q->workers_min = 1;
	q->scale_cooldown_ms = 30 * 1000;
	q->batch = 1;
	q->handler = HANDLER_EXEC;
	q->handling.timeout_ms = 30 * 1000;
	q->idle_ms = 2 * 1000;
	q->retry.backoff = BACKOFF_EXPONENTIAL;
	q->retry.delay_ms = 10 * 1000;
	q->retry.max_delay_ms = 3600 * 1000;
	q->retry.jitter = true;
	q->retry.max_attempts_ceiling = RETRY_CEILING_DEFAULT;
	q->prune.chunk = 1000;
	q->prune.pause_ms = 100;
	q->prune.every_ms = 10 * 60 * 1000;
	q->runs.keep_ms = RUNS_KEEP_DEFAULT_MS;
	q->alert_failed = -1;
	q->on_failed_timeout_ms = 10 * 1000;
	q->on_failed_rate = 60;
	config_limit_defaults(&q->limit);
}

/*
 * handler: none: keys about a handler or a failed try have nothing to act
 * on, and are refused rather than ignored.  Returns whether the queue has
 * no handler.
 */
static bool
config_queue_no_handler(struct load *ld, const struct config_item *it,
    const struct node **seen)
{
	static const char *const keys[] = { "exec", "pipe", "timeout", "env",
	    "user", "group", "stop_signal", "stop_grace", "retry", "lease",
	    NULL };
	static const char *const why[] = { "the handler is none",
	    "the handler is none", "no handler runs", "no handler runs",
	    "no handler runs", "no handler runs", "no handler runs",
	    "no handler runs", "no handler fails a try (failed: runs when "
	    "the server refuses done: for a row)", "the rows are claimed and "
	    "finished in one transaction" };
	const struct node *k;
	char path[CONFIG_PATH_MAX];

	if (SEEN(queue_fields, seen, "handler") == NULL)
		return false;
	for (size_t i = 0; keys[i] != NULL; i++) {
		if ((k = SEEN(queue_fields, seen, keys[i])) == NULL)
			continue;
		config_path(path, sizeof(path), it->path, keys[i]);
		config_error(ld, k->line, path, "not with handler: none: %s",
		    why[i]);
	}
	return true;
}

/*
 * lease.ahead leases more rows than a batch-1 turn handles; a batch
 * leases its rows already, and limit: takes its slots a row, or a batch,
 * at a time.
 */
static void
config_lease_ahead_check(struct load *ld, const struct config_item *it,
    const struct queue *q)
{
	char path[CONFIG_PATH_MAX];

	if (q->lease.ahead <= 1)
		return;
	config_path(path, sizeof(path), it->path, "lease.ahead");
	if (q->batch > 1)
		config_error(ld, q->lease.ahead_line, path, "lease.ahead is "
		    "for batch 1: with batch: %d the claim leases %d rows "
		    "already; give one of them", q->batch, q->batch);
	else if (q->limit.enabled)
		config_error(ld, q->lease.ahead_line, path, "lease.ahead "
		    "cannot go with limit:, whose slots are taken a row at a "
		    "time as it runs");
}

int
queue_claim_rows(const struct queue *q)
{
	return q->lease.enabled && q->lease.ahead > q->batch ?
	    q->lease.ahead : q->batch;
}

static void
config_queue_checks(struct load *ld, const struct config_item *it,
    struct queue *q, const struct node **seen)
{
	static const char *const required[] = { "select", "done", NULL };
	const struct node *exec = SEEN(queue_fields, seen, "exec");
	const struct node *pipe = SEEN(queue_fields, seen, "pipe");

	config_require(ld, it, queue_fields, NELEMS(queue_fields), seen,
	    required);
	/* handler: none: done: is the work, and failed: is optional. */
	bool none = config_queue_no_handler(ld, it, seen);
	if (!none && exec == NULL && pipe == NULL)
		config_error(ld, it->key->line, it->path, "missing exec: or "
		    "pipe:, the handler (or handler: none, for a queue whose "
		    "done: statements are its work)");
	if (!none && SEEN(queue_fields, seen, "failed") == NULL &&
	    SEEN(queue_fields, seen, "retry") == NULL)
		config_error(ld, it->key->line, it->path, "neither retry nor "
		    "failed: a failing row would be claimed again at once, "
		    "forever");
	/*
	 * With failed:, 5 tries by default.  Without it there is no last
	 * attempt, so max_attempts stays 0: retry for ever.
	 */
	if (q->retry.enabled && q->retry.max_attempts == 0 &&
	    q->retry.max_attempts_column == NULL &&
	    q->retry.attempts_column != NULL &&
	    SEEN(queue_fields, seen, "failed") != NULL)
		q->retry.max_attempts = 5;
	if (SEEN(queue_fields, seen, "alert_failed") != NULL &&
	    SEEN(queue_fields, seen, "failed_count") == NULL) {
		char path[CONFIG_PATH_MAX];
		config_path(path, sizeof(path), it->path, "alert_failed");
		config_error(ld, SEEN(queue_fields, seen, "alert_failed")->line,
		    path, "alert_failed needs failed_count:, the select that "
		    "counts the failed rows");
	}
	if (SEEN(queue_fields, seen, "scale_cooldown") != NULL &&
	    q->workers_min == q->workers) {
		char path[CONFIG_PATH_MAX];
		config_path(path, sizeof(path), it->path, "scale_cooldown");
		config_error(ld, SEEN(queue_fields, seen,
		    "scale_cooldown")->line, path, "scale_cooldown needs "
		    "workers: {min: N, max: M} with min below max");
	}
	if (SEEN(queue_fields, seen, "stop_grace") != NULL &&
	    SEEN(queue_fields, seen, "stop_signal") == NULL) {
		char path[CONFIG_PATH_MAX];
		config_path(path, sizeof(path), it->path, "stop_grace");
		config_error(ld, SEEN(queue_fields, seen, "stop_grace")->line,
		    path, "stop_grace needs stop_signal:, the signal it is "
		    "the grace of");
	}
	if (SEEN(queue_fields, seen, "cancel") != NULL && !q->lease.enabled) {
		char path[CONFIG_PATH_MAX];
		config_path(path, sizeof(path), it->path, "cancel");
		config_error(ld, SEEN(queue_fields, seen, "cancel")->line,
		    path, "cancel needs lease:: in transaction mode a running "
		    "row stays locked by its worker until it is finished");
	}
	config_lease_ahead_check(ld, it, q);
	config_user_resolve(ld, &q->user, SEEN(queue_fields, seen, "user"),
	    SEEN(queue_fields, seen, "group"), it->path);
}

/* A queue's name, and a schedule's (config_schedule.c). */
bool
config_queue_name_ok(const char *s)
{
	size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789_-");

	return n > 0 && n <= QUEUE_NAME_MAX && s[n] == '\0';
}

static void
config_queue_parse(struct load *ld, const struct node *key,
    const struct node *value, const char *parent)
{
	const struct node *seen[NELEMS(queue_fields)] = { 0 };
	struct config *cfg = ld->cfg;
	char path[CONFIG_PATH_MAX], shown[CONFIG_SHOW_MAX + 8];
	struct queue *q;
	size_t i;

	ld->queue_entries++;
	if (key->kind != NODE_SCALAR || !config_queue_name_ok(key->value)) {
		if (key->kind != NODE_INVALID)
			config_error(ld, key->line, parent, "%s is not a queue "
			    "name: use 1 to %d letters, digits, _ and -",
			    key->kind == NODE_SCALAR ? config_show(key->value,
			    shown, sizeof(shown)) : config_node_kind_name(key),
			    QUEUE_NAME_MAX);
		return;
	}
	config_path(path, sizeof(path), parent, key->value);
	for (i = 0; i < cfg->nqueues; i++)
		if (strcmp(cfg->queues[i].name, key->value) == 0) {
			config_error(ld, key->line, path, "queue defined "
			    "twice: first at %s", cfg->queues[i].where);
			return;
		}
	if (cfg->nqueues == QUEUES_MAX) {
		if (!ld->too_many_queues)
			config_error(ld, key->line, path, "more than %d queues",
			    QUEUES_MAX);
		ld->too_many_queues = true;
		return;
	}
	cfg->queues = xrealloc(cfg->queues,
	    (cfg->nqueues + 1) * sizeof(*cfg->queues));
	q = &cfg->queues[cfg->nqueues++];
	config_queue_defaults(q);
	q->name = xstrdup(key->value);
	q->where = config_where(ld, key->line, NULL);

	struct config_item it = {
		.key = key, .value = value, .path = path, .parent = NULL,
	};
	if (config_walk(ld, &it, queue_fields, NELEMS(queue_fields), q,
	    seen) == 0)
		config_queue_checks(ld, &it, q, seen);
}

void
config_field_queues(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const struct node *map = it->value;
	size_t i;

	(void)dst;
	(void)f;
	if (!ld->file->included)
		ld->queues_line = it->key->line;
	if (config_node_null(map))
		return;		/* queues: with none yet is fine */
	if (!config_expect_mapping(ld, it))
		return;
	for (i = 0; i + 1 < map->nitems; i += 2)
		config_queue_parse(ld, map->items[i], map->items[i + 1],
		    it->path);
}

void
config_queue_free(struct queue *q)
{
	char **a;

	free(q->name);
	free(q->where);
	sql_free(&q->select);
	free(q->key_column);
	free(q->key_where);
	if (q->argv != NULL)
		for (a = q->argv; *a != NULL; a++)
			free(*a);
	free(q->argv);
	free(q->argv_where);
	sql_free(&q->done);
	free(q->retry.attempts_column);
	free(q->retry.attempts_where);
	free(q->retry.max_attempts_column);
	free(q->retry.max_attempts_where);
	free(q->retry.where);
	sql_free(&q->retry.update);
	sql_free(&q->retry.gave_up);
	sql_free(&q->failed);
	sql_free(&q->lease.claim);
	sql_free(&q->lease.renew);
	sql_free(&q->lease.release);
	free(q->age.name);
	free(q->age.where);
	free(q->ready_at.name);
	free(q->ready_at.where);
	free(q->traceparent.name);
	free(q->traceparent.where);
	free(q->group_by.name);
	free(q->group_by.where);
	config_program_free(&q->on_failed);
	free(q->lease.where);
	free(q->wake_where);
	sql_free(&q->failed_count);
	sql_free(&q->failed_select);
	sql_free(&q->requeue);
	sql_free(&q->discard);
	sql_free(&q->cancel);
	config_env_free(&q->env);
	config_user_free(&q->user);
	prune_policy_free(&q->prune);
	free(q->runs.table);
	free(q->runs.where);
	config_limit_free(&q->limit);
}
