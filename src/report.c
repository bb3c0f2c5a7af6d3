/*
 * report.c: what the running supervisor tells others: systemd's STATUS=,
 * a drain's progress and summary, the status socket (status_socket.c),
 * and the metrics, served over HTTP or written to a
 * textfile.  Numbers only the database knows (ready rows, the oldest age)
 * come from a short-lived probe process, so that a slow database never
 * stalls the supervisor's loop.
 */
#include "rowq.h"
#include "db.h"
#include "supervisor.h"
#include "claim.h"
#include "commands.h"
#include "metrics.h"
#include "on_failed.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How often the probe asks the database, and how long it may take. */
#define PROBE_EVERY_MS		15000
#define PROBE_MAX_MS		60000
#define TEXTFILE_EVERY_MS	15000
/* /readyz: the database answered within this long. */
#define READY_DB_MS		10000

/*
 * The limit's numbers: waits counted by the workers, the slots they hold
 * now, and a throttle, as a worker waits on it or the probe read it.
 */
static void
report_limit(struct supervisor *s, const struct queue *q, size_t i,
    const struct totals *t, struct metrics_queue *m)
{
	const struct probe *p = s->probe;

	m->limited = q->limit.enabled;
	memcpy(m->limit_waits, t->limit_waits, sizeof(m->limit_waits));
	for (int k = 0; k < s->nslots; k++) {
		const struct slot *sl = &s->slots[k];
		if (sl->pid == 0 || strcmp(sl->queue->name, q->name) != 0)
			continue;
		m->limit_in_use += sl->stats->limit_held != 0;
		if (sl->stats->state == WORKER_LIMITED &&
		    sl->stats->limit_reason == LIMIT_THROTTLE)
			m->throttled = 1;
	}
	if (p != NULL && p->wall_ms != 0 && p->generation ==
	    s->current->number && i < p->nqueues && p->throttled_ms[i] > 0 &&
	    p->wall_ms + p->throttled_ms[i] > wall_ms())
		m->throttled = 1;
}

/* The queue's workers held back by a finishing statement that fails. */
static int
report_failing(const struct supervisor *s, const struct queue *q)
{
	int n = 0;

	for (int k = 0; k < s->nslots; k++)
		n += s->slots[k].pid != 0 &&
		    strcmp(s->slots[k].queue->name, q->name) == 0 &&
		    s->slots[k].stats->state == WORKER_FAILING;
	return n;
}

/* Everything the metrics show, for the current generation's queues. */
static void
report_metrics(void *ctx, struct buf *b)
{
	struct supervisor *s = ctx;
	const struct config *cfg = s->current->cfg;
	struct metrics_queue *m = xcalloc(cfg->nqueues, sizeof(*m));
	const struct probe *p = s->probe;
	bool fresh = p != NULL && p->wall_ms != 0 &&
	    p->generation == s->current->number;

	for (size_t i = 0; i < cfg->nqueues; i++) {
		const struct queue *q = &cfg->queues[i];
		struct totals t = supervisor_count(s, q->name);
		m[i].name = q->name;
		m[i].done = t.done;
		m[i].retried = t.retried;
		m[i].failed = t.failed;
		m[i].errors = t.errors;
		m[i].restarts = t.restarts;
		m[i].reconnects = t.reconnects;
		m[i].db_retries = t.db_retries;
		m[i].handler_restarts = t.handler_restarts;
		m[i].workers_up = supervisor_workers_up(s, q);
		m[i].paused = pause_watch_paused(s, q->name);
		m[i].wake = wake_binlog_mode(s, q, &m[i].binlog_lag_s);
		m[i].claim = t.claim;
		memcpy(m[i].handler, t.handler, sizeof(m[i].handler));
		m[i].pickup = t.pickup;
		m[i].has_pickup = q->ready_at.name != NULL;
		m[i].running_oldest_s = supervisor_running_oldest_s(s, q);
		m[i].pruned_rows = prune_daemon_total(s, q->name);
		struct on_failed_counts of = on_failed_count(s, q->name);
		m[i].on_failed_runs = of.runs;
		m[i].on_failed_failures = of.failures;
		m[i].on_failed_dropped = of.dropped + t.on_failed_dropped;
		report_limit(s, q, i, &t, &m[i]);
		m[i].failing = report_failing(s, q);
		m[i].ready = m[i].in_progress = -1;
		m[i].oldest_age_s = m[i].failed_rows = -1;
		if (fresh && i < p->nqueues && p->ok[i]) {
			long ready, in_progress;
			status_split(q, &p->queue[i], supervisor_busy(s, q->name),
			    &ready, &in_progress);
			m[i].ready = ready;
			m[i].in_progress = in_progress;
			m[i].oldest_age_s = p->queue[i].oldest_age_s;
			/* The row was this old when the probe looked. */
			if (m[i].oldest_age_s >= 0)
				m[i].oldest_age_s += (wall_ms() - p->wall_ms) /
				    1000;
			m[i].failed_rows = p->queue[i].failed;
		}
	}
	metrics_render(b, m, cfg->nqueues);
	metrics_render_reloads(b, s->reloads_ok, s->reloads_failed);
	schedule_daemon_metrics(s, b);
	free(m);
}

/* POST /wake/QUEUE on the metrics listener: as `rowq wake QUEUE`. */
static int
report_wake(void *ctx, const char *queue)
{
	struct supervisor *s = ctx;

	log_debug("wake for %s (POST /wake)", queue);
	return s->stopping ? 0 : wake_watch_queue(s, queue);
}

/*
 * GET /healthz: the supervisor's loop answered, so it turns: 200.
 * GET /readyz: the database answered the wake watcher within
 * READY_DB_MS (it reads at least once a second), and every queue that
 * is not paused has all its workers; else 503 with each reason a line.
 */
static bool
report_health(void *ctx, bool ready, struct buf *why)
{
	struct supervisor *s = ctx;
	const struct config *cfg = s->current->cfg;
	int64_t seen = s->wake.db_seen_ms;
	size_t len = why->len;

	if (!ready) {
		buf_puts(why, "ok\n");
		return true;
	}
	if (s->stopping) {
		buf_puts(why, "stopping\n");
		return false;
	}
	if (seen == 0 || now_ms() - seen > READY_DB_MS)
		buf_printf(why, "database: no answer for %llds\n", seen == 0 ?
		    (long long)((now_ms() - s->started_ms) / 1000) :
		    (long long)((now_ms() - seen) / 1000));
	for (size_t i = 0; i < cfg->nqueues; i++) {
		const struct queue *q = &cfg->queues[i];
		int up = supervisor_workers_up(s, q);
		if (!pause_watch_paused(s, q->name) && up < q->workers)
			buf_printf(why, "%s: %d of %d workers running\n",
			    q->name, up, q->workers);
	}
	if (why->len == len) {
		buf_puts(why, "ready\n");
		return true;
	}
	return false;
}

/* The probe child: ask the database, write the answers, exit. */
static _Noreturn void
report_probe_child(struct supervisor *s)
{
	const struct config *cfg = s->current->cfg;
	struct probe *p = s->probe;
	enum db_status st;
	struct db *db;

	log_procinit("probe");
	db = db_open(&cfg->db, &st);
	if (st != DB_OK)
		_exit(ROWQ_EXIT_TEMPFAIL);
	for (size_t i = 0; i < cfg->nqueues && i < QUEUES_MAX; i++) {
		struct limit_status l;
		p->ok[i] = status_query(db, &cfg->queues[i], &p->queue[i]) == 0;
		p->throttled_ms[i] = cfg->queues[i].limit.enabled &&
		    limit_status_read(db, cfg, &cfg->queues[i], &l) == 0 ?
		    l.throttled_ms : -1;
	}
	p->nqueues = cfg->nqueues;
	p->generation = s->current->number;
	p->wall_ms = wall_ms();
	db_close(db);
	_exit(0);
}

static void
report_probe(struct supervisor *s)
{
	pid_t pid, parent = getpid();

	pid = fork();
	if (pid == -1) {
		log_warn("fork for the metrics probe");
		return;
	}
	if (pid == 0) {
		proc_helper_child(parent);
		report_probe_child(s);
	}
	s->probe_pid = pid;
	s->probe_started_ms = now_ms();
}

static bool
report_reaped(struct supervisor *s, pid_t pid, int status)
{
	if (pid != s->probe_pid || pid == 0)
		return false;
	s->probe_pid = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		log_debug("metrics probe: the database did not answer");
	return true;
}

static void
report_start(struct supervisor *s)
{
	const struct config *cfg = s->current->cfg;

	/* The console's charts show the probe's ages too (history.c). */
	if (cfg->metrics == NULL && cfg->metrics_textfile == NULL &&
	    !cfg->console.on)
		return;
	s->probe = mmap(NULL, sizeof(*s->probe), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s->probe == MAP_FAILED)
		fatal("mmap");
	memset(s->probe, 0, sizeof(*s->probe));
	if (cfg->metrics != NULL)
		s->metrics = metrics_start(cfg->metrics, report_metrics,
		    report_wake, report_health, s);
}

static void
report_stop(struct supervisor *s)
{
	metrics_stop(s->metrics);
	s->metrics = NULL;
	if (s->probe_pid > 0) {
		kill(s->probe_pid, SIGKILL);
		(void)waitpid(s->probe_pid, NULL, 0);
		s->probe_pid = 0;
	}
	if (s->probe != NULL)
		munmap(s->probe, sizeof(*s->probe));
	s->probe = NULL;
}

static void
report_poll_fds(struct supervisor *s, struct pollfd *p, nfds_t *np)
{
	if (s->metrics != NULL)
		p[(*np)++] = (struct pollfd){ .fd = metrics_fd(s->metrics),
		    .events = POLLIN };
}

static void
report_handle(struct supervisor *s, const struct pollfd *p, nfds_t np)
{
	if (np > 0 && p[0].revents != 0 && s->metrics != NULL)
		metrics_run(s->metrics);
}

/*
 * Timers: start a probe when one is due (and kill one that hangs), and
 * write the textfile.  The metrics are only as fresh as the last probe,
 * which is said in the probe's own timestamp.
 */
static void
report_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	const struct config *cfg = s->current->cfg;

	if (s->metrics != NULL)
		metrics_timers(s->metrics, now, next);
	if (s->probe == NULL || s->stopping)
		return;
	if (s->probe_pid > 0 && now - s->probe_started_ms > PROBE_MAX_MS) {
		log_warnx("metrics probe: no answer from the database in %ds; "
		    "killed", PROBE_MAX_MS / 1000);
		kill(s->probe_pid, SIGKILL);
	}
	if (s->probe_pid == 0 && now >= s->next_probe_ms) {
		report_probe(s);
		s->next_probe_ms = now + PROBE_EVERY_MS;
	}
	if (cfg->metrics_textfile != NULL && now >= s->next_textfile_ms) {
		struct buf b = { 0 };
		report_metrics(s, &b);
		(void)metrics_write_textfile(cfg->metrics_textfile, &b);
		buf_free(&b);
		s->next_textfile_ms = now + TEXTFILE_EVERY_MS;
	}
	if (s->next_probe_ms < *next)
		*next = s->next_probe_ms;
	if (cfg->metrics_textfile != NULL && s->next_textfile_ms < *next)
		*next = s->next_textfile_ms;
}

/*
 * One line for systemd's STATUS=: per queue the workers up, retiring and
 * waiting to restart (with why the last one died), rows done and failed
 * since the start; then the last reload's outcome.
 */
void
report_status(struct supervisor *s)
{
	struct config *cfg = s->current->cfg;
	struct buf b = { 0 };
	bool pending;

	if (s->stopping)
		buf_printf(&b, "stopping: %d worker(s) finishing; ",
		    supervisor_running(s, &pending));
	else if (s->check_pid != 0)
		buf_puts(&b, "reloading; ");
	for (size_t i = 0; i < cfg->nqueues; i++) {
		const char *name = cfg->queues[i].name;
		struct totals t = supervisor_count(s, name);
		int up = 0, retiring = 0, waiting = 0;
		const char *death = NULL;
		for (int k = 0; k < s->nslots; k++) {
			struct slot *sl = &s->slots[k];
			if (sl->state == SLOT_FREE ||
			    strcmp(sl->queue->name, name) != 0)
				continue;
			if (sl->state == SLOT_RETIRING)
				retiring++;
			else if (sl->state == SLOT_RUNNING)
				up++;
			else {
				waiting++;
				death = sl->last_death;
			}
		}
		buf_printf(&b, "%s%s: %s%d/%d up", i ? "; " : "", name,
		    pause_watch_paused(s, name) ? "PAUSED, " : "", up,
		    scale_workers(s, &cfg->queues[i]));
		if (retiring > 0)
			buf_printf(&b, ", %d retiring", retiring);
		if (waiting > 0)
			buf_printf(&b, ", %d restarting (%s)", waiting,
			    death && death[0] ? death : "exited");
		buf_printf(&b, ", %llu done, %llu failed",
		    (unsigned long long)t.done, (unsigned long long)t.failed);
	}
	if (s->last_reload.wall_ms != 0) {
		char when[16];
		time_t secs = (time_t)(s->last_reload.wall_ms / 1000);
		struct tm tm;
		localtime_r(&secs, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		if (s->last_reload.ok)
			buf_printf(&b, "; last reload %s ok (generation %d)",
			    when, s->last_reload.generation);
		else
			buf_printf(&b, "; last reload %s FAILED, old workers "
			    "kept: %s", when, s->last_reload.message);
	}
	notify_status("%s", b.data ? b.data : "");
	buf_free(&b);
	s->status_dirty = false;
}

void
report_progress(struct supervisor *s, bool final)
{
	struct config *cfg = s->current->cfg;
	struct buf b = { 0 };

	for (size_t i = 0; i < cfg->nqueues; i++) {
		if (!supervisor_wants(s, &cfg->queues[i]))
			continue;
		struct totals t = supervisor_count(s, cfg->queues[i].name);
		buf_printf(&b, "%s%s: %llu done, %llu retried, %llu failed",
		    b.len ? "  " : "", cfg->queues[i].name,
		    (unsigned long long)t.done, (unsigned long long)t.retried,
		    (unsigned long long)t.failed);
	}
	printf("\r%s\033[K%s", b.data ? b.data : "", final ? "\n" : "");
	fflush(stdout);
	buf_free(&b);
}

/* The summary `rowq drain` prints: one line per queue. */
void
report_summary(struct supervisor *s)
{
	struct config *cfg = s->current->cfg;
	double secs = (double)(now_ms() - s->started_ms) / 1000.0;

	for (size_t i = 0; i < cfg->nqueues; i++) {
		if (!supervisor_wants(s, &cfg->queues[i]))
			continue;
		struct totals t = supervisor_count(s, cfg->queues[i].name);
		uint64_t rows = t.done + t.retried + t.failed;
		printf("%s: %llu done, %llu retried, %llu failed, %llu errors, "
		    "%llu deadlocks retried, %llu restarts in %.2fs "
		    "(%.0f rows/s)\n",
		    cfg->queues[i].name, (unsigned long long)t.done,
		    (unsigned long long)t.retried, (unsigned long long)t.failed,
		    (unsigned long long)t.errors,
		    (unsigned long long)t.db_retries,
		    (unsigned long long)t.restarts, secs,
		    secs > 0 ? (double)rows / secs : 0.0);
		if (t.errors > 0 && s->exit_code == ROWQ_EXIT_OK)
			s->exit_code = ROWQ_EXIT_FAILURE;
	}
	fflush(stdout);
}

const struct supervisor_part report_part = {
	.name = "report",
	.poll_max = 1,
	.start = report_start,
	.stop = report_stop,
	.tick = report_tick,
	.poll_fds = report_poll_fds,
	.handle = report_handle,
	.reaped = report_reaped,
};
