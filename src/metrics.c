/*
 * metrics.c: the numbers in Prometheus' text format, served over HTTP by
 * libmicrohttpd (loaded by mhd.c when metrics: is set) or written to a
 * node_exporter textfile.  The HTTP server runs inside the supervisor's
 * own poll loop (epoll mode, no threads: the supervisor forks, and a
 * forked thread is trouble).
 */
#include "rowq.h"
#include "mhd.h"
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct metrics {
	struct MHD_Daemon	*mhd;
	struct mhd_guard	 guard;
	metrics_render_fn	 render;
	metrics_wake_fn		 wake;
	metrics_health_fn	 health;
	void			*ctx;
};

#define WAKE_PREFIX	"/wake/"

/*
 * Clients served at once, and how long one may stay idle or take to send
 * its request: a scrape takes milliseconds, and a client that connects
 * and sends nothing (a crashed scraper, a port scanner) or trickles its
 * request must not hold a slot for longer.  One address holds
 * METRICS_CLIENTS_PER_ADDR slots at most (mhd_guard.c).  Past the limit,
 * connections wait in the listen backlog until a slot frees.  The
 * timeouts run only when MHD_run is called at the time MHD_get_timeout
 * names (metrics_timers), not only when the listener is readable.
 */
#define METRICS_CLIENTS_MAX		16
#define METRICS_CLIENTS_PER_ADDR	8
#define METRICS_CLIENT_TIMEOUT_S	5
#define METRICS_REQUEST_MS		5000

/* Label values escape \, " and newline. */
static void
metrics_label(struct buf *b, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			buf_putc(b, '\\');
		if (*v == '\n') {
			buf_puts(b, "\\n");
			continue;
		}
		buf_putc(b, *v);
	}
}

static void
metrics_head(struct buf *b, const char *name, const char *type,
    const char *help)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
metrics_sample(struct buf *b, const char *name, const char *queue,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
metrics_sample(struct buf *b, const char *name, const char *queue,
    const char *fmt, ...)
{
	va_list ap;
	char v[64];

	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	buf_printf(b, "%s{queue=\"", name);
	metrics_label(b, queue);
	buf_printf(b, "\"} %s\n", v);
}

#define COUNTER(field, metric, help)					\
	do {								\
		metrics_head(b, metric, "counter", help);		\
		for (size_t i = 0; i < n; i++)				\
			metrics_sample(b, metric, q[i].name, "%llu",	\
			    (unsigned long long)q[i].field);		\
	} while (0)

#define GAUGE(field, metric, help)					\
	do {								\
		metrics_head(b, metric, "gauge", help);			\
		for (size_t i = 0; i < n; i++)				\
			if (q[i].field >= 0)				\
				metrics_sample(b, metric, q[i].name,	\
				    "%lld", (long long)q[i].field);	\
	} while (0)

/* One histogram's series, with the labels that tell it apart. */
static void
metrics_histogram_series(struct buf *b, const char *name,
    const char *queue, const char *outcome, const struct histogram *h)
{
	uint64_t cum = 0;

	for (int k = 0; k <= HISTOGRAM_BUCKETS; k++) {
		cum += h->count[k];
		buf_printf(b, "%s_bucket{queue=\"", name);
		metrics_label(b, queue);
		if (outcome != NULL)
			buf_printf(b, "\",outcome=\"%s", outcome);
		if (k < HISTOGRAM_BUCKETS)
			buf_printf(b, "\",le=\"%g\"} %llu\n",
			    histogram_bounds_s[k], (unsigned long long)cum);
		else
			buf_printf(b, "\",le=\"+Inf\"} %llu\n",
			    (unsigned long long)cum);
	}
	buf_printf(b, "%s_sum{queue=\"", name);
	metrics_label(b, queue);
	if (outcome != NULL)
		buf_printf(b, "\",outcome=\"%s", outcome);
	buf_printf(b, "\"} %.6f\n", (double)h->sum_us / 1e6);
	buf_printf(b, "%s_count{queue=\"", name);
	metrics_label(b, queue);
	if (outcome != NULL)
		buf_printf(b, "\",outcome=\"%s", outcome);
	buf_printf(b, "\"} %llu\n", (unsigned long long)cum);
}

/* The limit's, for the queues that have limit:. */
static void
metrics_limit(struct buf *b, const struct metrics_queue *q, size_t n)
{
	metrics_head(b, "rowq_limit_waits_total", "counter",
	    "Waits of this daemon's workers for the queue's limit:, begun, "
	    "by what held them back.");
	for (size_t i = 0; i < n; i++)
		for (int r = 0; q[i].limited && r < LIMIT_REASONS; r++) {
			buf_puts(b, "rowq_limit_waits_total{queue=\"");
			metrics_label(b, q[i].name);
			buf_printf(b, "\",reason=\"%s\"} %llu\n",
			    limit_reason_names[r],
			    (unsigned long long)q[i].limit_waits[r]);
		}
	/* Each metric's samples together, after its own head. */
	metrics_head(b, "rowq_limit_in_use", "gauge",
	    "Concurrency slots of limit: that this daemon's workers hold "
	    "(summed over the daemons: the queue's).");
	for (size_t i = 0; i < n; i++)
		if (q[i].limited)
			metrics_sample(b, "rowq_limit_in_use", q[i].name, "%ld",
			    q[i].limit_in_use);
	metrics_head(b, "rowq_throttled", "gauge",
	    "1 while the queue is throttled (a handler's throttle, every "
	    "daemon's), else 0.");
	for (size_t i = 0; i < n; i++)
		if (q[i].limited)
			metrics_sample(b, "rowq_throttled", q[i].name, "%d",
			    q[i].throttled);
}

/* Which wake-up each queue uses now: 1 for it, 0 for the others. */
static void
metrics_wake(struct buf *b, const struct metrics_queue *q, size_t n)
{
	static const char *const modes[] = { "poll", "binlog",
	    "binlog-fallback" };

	metrics_head(b, "rowq_wake_mode", "gauge",
	    "How idle workers learn of rows: poll, binlog, or "
	    "binlog-fallback (wake: binlog, polled until it can follow).");
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
			buf_puts(b, "rowq_wake_mode{queue=\"");
			metrics_label(b, q[i].name);
			buf_printf(b, "\",mode=\"%s\"} %d\n", modes[k],
			    q[i].wake != NULL && strcmp(q[i].wake,
			    modes[k]) == 0);
		}
}

void
metrics_render(struct buf *b, const struct metrics_queue *q, size_t n)
{
	GAUGE(ready, "rowq_ready_rows",
	    "Rows the select finds and no worker holds (counted up to 1000).");
	GAUGE(in_progress, "rowq_in_progress_rows",
	    "Rows the select finds that a worker holds.");
	GAUGE(oldest_age_s, "rowq_oldest_age_seconds",
	    "Age of the oldest waiting row, from the queue's age: column.");
	GAUGE(failed_rows, "rowq_failed_rows",
	    "Rows in the failed state, from the queue's failed_count: select.");
	GAUGE(workers_up, "rowq_workers",
	    "Worker processes running.");
	GAUGE(paused, "rowq_paused",
	    "1 while the queue is paused (rowq pause), else 0.");
	GAUGE(failing, "rowq_statement_failing_workers",
	    "Workers that wait because a finishing statement of the queue "
	    "fails whatever the row (its syntax, a name, a JSON path): no row "
	    "is marked until the statement is fixed.");
	GAUGE(binlog_lag_s, "rowq_wake_binlog_lag_seconds",
	    "How far the binary log follower is behind the server (wake: "
	    "binlog, while it follows).");
	metrics_wake(b, q, n);
	metrics_limit(b, q, n);
	COUNTER(done, "rowq_rows_done_total",
	    "Rows finished with the done statement.");
	COUNTER(retried, "rowq_rows_retried_total",
	    "Rows finished with the retry statement.");
	COUNTER(failed, "rowq_rows_failed_total",
	    "Rows finished with the failed statement.");
	COUNTER(errors, "rowq_errors_total",
	    "Statements that failed or changed no row.");
	COUNTER(restarts, "rowq_worker_restarts_total",
	    "Workers restarted after they exited or died.");
	COUNTER(handler_restarts, "rowq_handler_restarts_total",
	    "Pipe handlers started again after they died or misbehaved.");
	COUNTER(reconnects, "rowq_db_reconnects_total",
	    "Database connections made again after a failure.");
	COUNTER(db_retries, "rowq_db_retries_total",
	    "Transactions rolled back and retried after a deadlock or lock "
	    "wait timeout.");
	COUNTER(pruned_rows, "rowq_pruned_rows_total",
	    "Rows removed by the queue's prune: runs of this daemon.");
	COUNTER(on_failed_runs, "rowq_on_failed_runs_total",
	    "on_failed: programs started for rows that failed for good.");
	COUNTER(on_failed_failures, "rowq_on_failed_failures_total",
	    "on_failed: programs that failed or timed out (not run again).");
	COUNTER(on_failed_dropped, "rowq_on_failed_dropped_total",
	    "on_failed: runs dropped, over on_failed_rate or with no room.");
	GAUGE(running_oldest_s, "rowq_in_progress_oldest_seconds",
	    "How long this daemon's longest-running handler of the queue has "
	    "run (0: none runs).");
	metrics_head(b, "rowq_claim_duration_seconds", "histogram",
	    "Time a claim query took.");
	for (size_t i = 0; i < n; i++)
		metrics_histogram_series(b, "rowq_claim_duration_seconds",
		    q[i].name, NULL, &q[i].claim);
	metrics_head(b, "rowq_handler_duration_seconds", "histogram",
	    "Time a handler took for a row, by how the row ended: done, "
	    "retry, failed, or timeout (whichever statement followed).");
	for (size_t i = 0; i < n; i++)
		for (int o = 0; o < HANDLER_OUTCOMES; o++)
			metrics_histogram_series(b,
			    "rowq_handler_duration_seconds", q[i].name,
			    handler_outcome_names[o], &q[i].handler[o]);
	metrics_head(b, "rowq_pickup_delay_seconds", "histogram",
	    "From the moment a row became ready (the queue's ready_at: "
	    "column) to its claim.");
	for (size_t i = 0; i < n; i++)
		if (q[i].has_pickup)
			metrics_histogram_series(b, "rowq_pickup_delay_seconds",
			    q[i].name, NULL, &q[i].pickup);
}

/* The daemon's, not a queue's: labelled by result instead. */
void
metrics_render_reloads(struct buf *b, uint64_t ok, uint64_t failed)
{
	metrics_head(b, "rowq_reloads_total", "counter",
	    "Reloads (SIGHUP) by result: ok, a new generation of workers "
	    "runs; failed, the old one was kept.");
	buf_printf(b, "rowq_reloads_total{result=\"ok\"} %llu\n",
	    (unsigned long long)ok);
	buf_printf(b, "rowq_reloads_total{result=\"failed\"} %llu\n",
	    (unsigned long long)failed);
}

/* A schedule's sample: "name{schedule=\"NAME\"} value". */
static void
metrics_schedule_sample(struct buf *b, const char *name, const char *schedule,
    long long v)
{
	buf_printf(b, "%s{schedule=\"", name);
	metrics_label(b, schedule);
	buf_printf(b, "\"} %lld\n", v);
}

/*
 * The schedules this daemon runs: the last slot inserted (by any
 * daemon, as this one last read the schedule table), and the slots this
 * daemon inserted and skipped: summed over the daemons they count each
 * slot once.
 */
void
metrics_render_schedules(struct buf *b, const struct metrics_schedule *s,
    size_t n)
{
	metrics_head(b, "rowq_schedule_last_slot_timestamp", "gauge",
	    "The last slot of the schedule inserted, by any daemon, in "
	    "seconds since 1970.");
	for (size_t i = 0; i < n; i++)
		if (s[i].last_slot >= 0)
			metrics_schedule_sample(b,
			    "rowq_schedule_last_slot_timestamp", s[i].name,
			    s[i].last_slot);
	metrics_head(b, "rowq_schedule_inserted_total", "counter",
	    "Slots of the schedule this daemon inserted.");
	for (size_t i = 0; i < n; i++)
		metrics_schedule_sample(b, "rowq_schedule_inserted_total",
		    s[i].name, (long long)s[i].inserted);
	metrics_head(b, "rowq_schedule_skipped_total", "counter",
	    "Slots of the schedule this daemon skipped: later than catch_up, "
	    "or while paused.");
	for (size_t i = 0; i < n; i++)
		metrics_schedule_sample(b, "rowq_schedule_skipped_total",
		    s[i].name, (long long)s[i].skipped);
	metrics_head(b, "rowq_schedule_paused", "gauge",
	    "1 while the schedule is paused (rowq pause --schedule).");
	for (size_t i = 0; i < n; i++)
		metrics_schedule_sample(b, "rowq_schedule_paused", s[i].name,
		    s[i].paused);
}

/*
 * POST /wake/QUEUE: what `rowq wake QUEUE` does (a hint: 202, the read
 * comes after the answer).  A body is read and dropped; the answer comes
 * once it is all in.
 */
static unsigned
metrics_wake_answer(struct metrics *m, const char *queue, const char *method,
    struct buf *b)
{
	if (strcmp(method, "POST") != 0) {
		buf_puts(b, "POST /wake/QUEUE\n");
		return MHD_HTTP_METHOD_NOT_ALLOWED;
	}
	if (m->wake(m->ctx, queue) == -1) {
		buf_printf(b, "no queue named %s here\n", queue);
		return MHD_HTTP_NOT_FOUND;
	}
	return MHD_HTTP_ACCEPTED;
}

static enum MHD_Result
metrics_answer(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_size, void **con_cls)
{
	static int begun;
	struct metrics *m = cls;
	struct MHD_Response *resp;
	struct buf b = { 0 };
	unsigned status = MHD_HTTP_OK;
	enum MHD_Result r;

	(void)version;
	(void)upload_data;
	if (strncmp(url, WAKE_PREFIX, strlen(WAKE_PREFIX)) == 0 &&
	    strcmp(method, "POST") == 0 && (*con_cls == NULL ||
	    *upload_size != 0)) {
		*con_cls = &begun;
		*upload_size = 0;
		return MHD_YES;
	}
	if (strncmp(url, WAKE_PREFIX, strlen(WAKE_PREFIX)) == 0)
		status = metrics_wake_answer(m, url + strlen(WAKE_PREFIX),
		    method, &b);
	else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		buf_puts(&b, "GET /metrics\n");
	} else if (strcmp(url, "/healthz") == 0 ||
	    strcmp(url, "/readyz") == 0) {
		/* The answer itself says the supervisor's loop turns. */
		if (!m->health(m->ctx, url[1] == 'r', &b))
			status = MHD_HTTP_SERVICE_UNAVAILABLE;
	} else if (strcmp(url, "/metrics") != 0) {
		status = MHD_HTTP_NOT_FOUND;
		buf_puts(&b, "rowq serves /metrics, /healthz, /readyz and "
		    "POST /wake/QUEUE\n");
	} else
		m->render(m->ctx, &b);
	mhd_guard_answering(conn);
	resp = mhd.create_response_from_buffer(b.len, b.data ? b.data : "",
	    MHD_RESPMEM_MUST_COPY);
	buf_free(&b);
	if (resp == NULL)
		return MHD_NO;
	mhd.add_response_header(resp, "Content-Type", status == MHD_HTTP_OK &&
	    strcmp(url, "/metrics") == 0 ?
	    "text/plain; version=0.0.4; charset=utf-8" : "text/plain");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		mhd.add_response_header(resp, "Allow", strncmp(url,
		    WAKE_PREFIX, strlen(WAKE_PREFIX)) == 0 ? "POST" :
		    "GET, HEAD");
	r = mhd.queue_response(conn, status, resp);
	mhd.destroy_response(resp);
	return r;
}

/* A request answered: the next on its connection has its own deadline. */
static void
metrics_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode why)
{
	(void)cls;
	(void)con_cls;
	(void)why;
	mhd_guard_completed(conn);
}

struct metrics *
metrics_start(const char *addr, metrics_render_fn render,
    metrics_wake_fn wake, metrics_health_fn health, void *ctx)
{
	struct sockaddr_storage ss;
	struct metrics *m;

	if (mhd_address(addr, &ss) == -1) {
		log_error("metrics: not an address HOST:PORT: %s", addr);
		return NULL;
	}
	if (mhd_load("metrics") == -1)
		return NULL;
	m = xcalloc(1, sizeof(*m));
	m->render = render;
	m->wake = wake;
	m->health = health;
	m->ctx = ctx;
	mhd_guard_init(&m->guard, "metrics", METRICS_CLIENTS_MAX,
	    METRICS_CLIENTS_PER_ADDR, METRICS_REQUEST_MS);
	m->mhd = mhd.start_daemon(MHD_USE_EPOLL |
	    (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL,
	    metrics_answer, m,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_CLIENTS_MAX,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_CLIENT_TIMEOUT_S,
	    MHD_OPTION_NOTIFY_CONNECTION, mhd_guard_notify, &m->guard,
	    MHD_OPTION_NOTIFY_COMPLETED, metrics_completed, m,
	    MHD_OPTION_END);
	if (m->mhd == NULL) {
		log_error("metrics: cannot listen on %s: %s", addr,
		    strerror(errno));
		mhd_guard_free(&m->guard);
		free(m);
		return NULL;
	}
	(void)fcntl(metrics_fd(m), F_SETFD, FD_CLOEXEC);
	log_info("metrics: serving http://%s/metrics", addr);
	return m;
}

int
metrics_fd(const struct metrics *m)
{
	return mhd_epoll_fd(m->mhd);
}

void
metrics_run(struct metrics *m)
{
	(void)mhd.run(m->mhd);
}

/*
 * The clients' timeouts, driven from the supervisor's timers whatever
 * the listener's descriptor says: an idle client, or one whose request
 * is too long in coming, is cut on time.
 */
void
metrics_timers(struct metrics *m, int64_t now, int64_t *next)
{
	mhd_guard_timers(&m->guard, now, next);
	mhd_timers(m->mhd, now, next);
}

void
metrics_stop(struct metrics *m)
{
	if (m == NULL)
		return;
	mhd.stop_daemon(m->mhd);
	mhd_guard_free(&m->guard);
	free(m);
}

/*
 * Atomically, as node_exporter may read it at any moment: a temporary file
 * beside it, renamed over it.  The temporary file is made afresh
 * (O_EXCL|O_NOFOLLOW: a file or symlink left at its name is removed, never
 * written through) and given mode 0640 with fchmod, which the umask does
 * not touch: under the units' UMask=0077 it would otherwise be 0600, and
 * a node_exporter in rowq's group could not read it.
 */
static int
metrics_open_temp(const char *tmp)
{
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = open(tmp, flags, 0640);

	if (fd == -1 && errno == EEXIST && unlink(tmp) == 0)
		fd = open(tmp, flags, 0640);
	if (fd != -1 && fchmod(fd, 0640) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

int
metrics_write_textfile(const char *path, const struct buf *b)
{
	struct buf tmp = { 0 };
	int fd, rc = -1;

	buf_printf(&tmp, "%s.%ld.tmp", path, (long)getpid());
	fd = metrics_open_temp(tmp.data);
	if (fd != -1 && write(fd, b->data ? b->data : "", b->len) ==
	    (ssize_t)b->len && close(fd) == 0) {
		fd = -1;
		if (rename(tmp.data, path) == 0)
			rc = 0;
	}
	if (fd != -1)
		close(fd);
	if (rc == -1) {
		log_warn("metrics_textfile %s", path);
		(void)unlink(tmp.data);
	}
	buf_free(&tmp);
	return rc;
}
