/*
 * metrics.c: the numbers in Prometheus' text format, served over HTTP by
 * libmicrohttpd (the only includer of <microhttpd.h>) or written to a
 * node_exporter textfile.  The HTTP server runs inside the supervisor's
 * own poll loop (epoll mode, no threads: the supervisor forks, and a
 * forked thread is trouble).
 *
 * libmicrohttpd is loaded with dlopen when metrics: asks for it, not
 * linked: it brings GnuTLS and p11-kit, which initialise themselves as
 * they load, and linked they would do so in every rowq process, most of
 * which never serve HTTP.  The header still gives the types, constants and
 * prototypes, which type the function pointers below.
 */
#include "rowq.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* The soname of libmicrohttpd's stable ABI (0.9.x), as the linker names it. */
#define MHD_LIBRARY	"libmicrohttpd.so.12"

struct metrics {
	struct MHD_Daemon	*mhd;
	metrics_render_fn	 render;
	metrics_wake_fn		 wake;
	void			*ctx;
};

#define WAKE_PREFIX	"/wake/"

/*
 * Clients served at once, and how long one may stay idle or send its
 * request: a scrape takes milliseconds, and a client that connects and
 * sends nothing (a crashed scraper, a port scanner) must not hold a slot
 * for longer.  Past the limit, connections wait in the listen backlog
 * until a slot frees.  The timeouts run only when MHD_run is called at
 * the time MHD_get_timeout names (metrics_timeout_ms), not only when the
 * listener is readable.
 */
#define METRICS_CLIENTS_MAX		16
#define METRICS_CLIENT_TIMEOUT_S	5

/* The functions of libmicrohttpd this file calls, once it is loaded. */
static struct {
	void	*handle;
	__typeof__(MHD_start_daemon)			*start_daemon;
	__typeof__(MHD_stop_daemon)			*stop_daemon;
	__typeof__(MHD_run)				*run;
	__typeof__(MHD_get_timeout)			*get_timeout;
	__typeof__(MHD_get_daemon_info)			*get_daemon_info;
	__typeof__(MHD_create_response_from_buffer)	*create_response_from_buffer;
	__typeof__(MHD_add_response_header)		*add_response_header;
	__typeof__(MHD_queue_response)			*queue_response;
	__typeof__(MHD_destroy_response)		*destroy_response;
} mhd;

static void *
mhd_symbol(void *handle, const char *name, bool *ok)
{
	void *p = dlsym(handle, name);

	if (p == NULL && *ok) {
		log_error("metrics: %s: %s", MHD_LIBRARY, dlerror());
		*ok = false;
	}
	return p;
}

#define MHD_RESOLVE(handle, field, name, ok)				\
	(mhd.field = (__typeof__(mhd.field))mhd_symbol(handle, name, ok))

/*
 * Load libmicrohttpd once, all its symbols bound now (RTLD_NOW: a missing
 * one is an error here, not a crash at the first request) and none of them
 * visible to the libraries loaded after it (RTLD_LOCAL).
 */
static int
mhd_load(void)
{
	void *h;
	bool ok = true;

	if (mhd.handle != NULL)
		return 0;
	h = dlopen(MHD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		log_error("metrics: cannot load %s, which serving metrics "
		    "needs: %s", MHD_LIBRARY, dlerror());
		return -1;
	}
	MHD_RESOLVE(h, start_daemon, "MHD_start_daemon", &ok);
	MHD_RESOLVE(h, stop_daemon, "MHD_stop_daemon", &ok);
	MHD_RESOLVE(h, run, "MHD_run", &ok);
	MHD_RESOLVE(h, get_timeout, "MHD_get_timeout", &ok);
	MHD_RESOLVE(h, get_daemon_info, "MHD_get_daemon_info", &ok);
	MHD_RESOLVE(h, create_response_from_buffer,
	    "MHD_create_response_from_buffer", &ok);
	MHD_RESOLVE(h, add_response_header, "MHD_add_response_header", &ok);
	MHD_RESOLVE(h, queue_response, "MHD_queue_response", &ok);
	MHD_RESOLVE(h, destroy_response, "MHD_destroy_response", &ok);
	if (!ok) {
		(void)dlclose(h);
		return -1;
	}
	mhd.handle = h;
	return 0;
}

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

static void
metrics_histogram(struct buf *b, const char *name, const char *help,
    const struct metrics_queue *q, size_t n, bool handler)
{
	metrics_head(b, name, "histogram", help);
	for (size_t i = 0; i < n; i++) {
		const struct histogram *h = handler ? &q[i].handler : &q[i].claim;
		uint64_t cum = 0;
		for (int k = 0; k <= HISTOGRAM_BUCKETS; k++) {
			cum += h->count[k];
			buf_printf(b, "%s_bucket{queue=\"", name);
			metrics_label(b, q[i].name);
			if (k < HISTOGRAM_BUCKETS)
				buf_printf(b, "\",le=\"%g\"} %llu\n",
				    histogram_bounds_s[k],
				    (unsigned long long)cum);
			else
				buf_printf(b, "\",le=\"+Inf\"} %llu\n",
				    (unsigned long long)cum);
		}
		buf_printf(b, "%s_sum{queue=\"", name);
		metrics_label(b, q[i].name);
		buf_printf(b, "\"} %.6f\n", (double)h->sum_us / 1e6);
		buf_printf(b, "%s_count{queue=\"", name);
		metrics_label(b, q[i].name);
		buf_printf(b, "\"} %llu\n", (unsigned long long)cum);
	}
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
	metrics_histogram(b, "rowq_claim_duration_seconds",
	    "Time a claim query took.", q, n, false);
	metrics_histogram(b, "rowq_handler_duration_seconds",
	    "Time a handler took for a row.", q, n, true);
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
	} else if (strcmp(url, "/metrics") != 0) {
		status = MHD_HTTP_NOT_FOUND;
		buf_puts(&b, "rowq serves /metrics and POST /wake/QUEUE\n");
	} else
		m->render(m->ctx, &b);
	resp = mhd.create_response_from_buffer(b.len, b.data ? b.data : "",
	    MHD_RESPMEM_MUST_COPY);
	buf_free(&b);
	if (resp == NULL)
		return MHD_NO;
	mhd.add_response_header(resp, "Content-Type", status == MHD_HTTP_OK ?
	    "text/plain; version=0.0.4; charset=utf-8" : "text/plain");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		mhd.add_response_header(resp, "Allow", strncmp(url,
		    WAKE_PREFIX, strlen(WAKE_PREFIX)) == 0 ? "POST" :
		    "GET, HEAD");
	r = mhd.queue_response(conn, status, resp);
	mhd.destroy_response(resp);
	return r;
}

/* "HOST:PORT" (IPv4 or [IPv6]) into a socket address. */
static int
metrics_address(const char *addr, struct sockaddr_storage *ss)
{
	const char *colon = strrchr(addr, ':');
	char host[64];
	char *end;
	long port;

	memset(ss, 0, sizeof(*ss));
	if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
		return -1;
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 1 || port > 65535)
		return -1;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		host[strlen(host) - 1] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		return inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1 ? 0 : -1;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &s4->sin_addr) == 1 ? 0 : -1;
}

struct metrics *
metrics_start(const char *addr, metrics_render_fn render,
    metrics_wake_fn wake, void *ctx)
{
	struct sockaddr_storage ss;
	struct metrics *m;

	if (metrics_address(addr, &ss) == -1) {
		log_error("metrics: not an address HOST:PORT: %s", addr);
		return NULL;
	}
	if (mhd_load() == -1)
		return NULL;
	m = xcalloc(1, sizeof(*m));
	m->render = render;
	m->wake = wake;
	m->ctx = ctx;
	m->mhd = mhd.start_daemon(MHD_USE_EPOLL |
	    (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL,
	    metrics_answer, m,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_CLIENTS_MAX,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_CLIENT_TIMEOUT_S,
	    MHD_OPTION_END);
	if (m->mhd == NULL) {
		log_error("metrics: cannot listen on %s: %s", addr,
		    strerror(errno));
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
	const union MHD_DaemonInfo *i = mhd.get_daemon_info(m->mhd,
	    MHD_DAEMON_INFO_EPOLL_FD);

	return i ? i->epoll_fd : -1;
}

void
metrics_run(struct metrics *m)
{
	(void)mhd.run(m->mhd);
}

/*
 * Clients past their timeout: one run closes them, the next frees their
 * slots, and only the one after listens again (the library stops
 * listening at its limit), accepting those that waited in the backlog.
 */
void
metrics_expire(struct metrics *m)
{
	for (int i = 0; i < 3; i++)
		(void)mhd.run(m->mhd);
}

/* In how many ms metrics_expire must run for the clients' timeouts; -1: none. */
int64_t
metrics_timeout_ms(const struct metrics *m)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (mhd.get_timeout(m->mhd, &ms) != MHD_YES)
		return -1;
	return ms > INT32_MAX ? INT32_MAX : (int64_t)ms;
}

void
metrics_stop(struct metrics *m)
{
	if (m == NULL)
		return;
	mhd.stop_daemon(m->mhd);
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
