/*
 * report.c: what the running supervisor tells others.  The status socket
 * answers each connection with the daemon's live state, one line per
 * daemon, queue and worker (read by `rowq status`); the metrics are served
 * over HTTP or written to a textfile.  Numbers only the database knows
 * (ready rows, the oldest age) come from a short-lived probe process, so
 * that a slow database never stalls the supervisor's loop.
 */
#include "rowq.h"
#include "supervisor.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How often the probe asks the database, and how long it may take. */
#define PROBE_EVERY_MS		15000
#define PROBE_MAX_MS		60000
#define TEXTFILE_EVERY_MS	15000
/* A client of the status socket gets this long to take its answer. */
#define STATUS_CLIENT_TIMEOUT_MS	2000
/* Out of descriptors: no accept for this long. */
#define ACCEPT_PAUSE_MS			1000

static const char *const state_names[] = {
	[WORKER_STARTING] = "starting",
	[WORKER_IDLE] = "idle",
	[WORKER_BUSY] = "busy",
	[WORKER_DB_DOWN] = "database-down",
	[WORKER_STOPPING] = "stopping",
	[WORKER_BACKOFF] = "paused",
};

static void
report_num(struct buf *b, const char *key, unsigned long long v)
{
	char n[32];

	snprintf(n, sizeof(n), "%llu", v);
	status_field(b, key, n);
}

static int
report_workers_up(const struct supervisor *s, const struct queue *q)
{
	int up = 0;

	for (int i = 0; i < s->nslots; i++)
		if (s->slots[i].state == SLOT_RUNNING &&
		    s->slots[i].queue == q)
			up++;
	return up;
}

/* Workers of the queue busy with a row: each holds that row. */
static long
report_busy(const struct supervisor *s, const char *queue)
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

static void
report_worker_line(struct buf *b, const struct slot *sl, int64_t wall)
{
	const struct worker_stats *w = sl->stats;
	int st = w->state;
	char key[sizeof(w->key)];

	buf_puts(b, "worker");
	status_field(b, "queue", sl->queue->name);
	report_num(b, "number", (unsigned long long)sl->number);
	report_num(b, "pid", (unsigned long long)sl->pid);
	report_num(b, "generation", (unsigned long long)sl->gen->number);
	if (sl->pid == 0)
		status_field(b, "state", "restarting");
	else
		status_field(b, "state", st >= 0 && st <= WORKER_BACKOFF ?
		    state_names[st] : "unknown");
	memcpy(key, (const char *)w->key, sizeof(key));
	key[sizeof(key) - 1] = '\0';
	status_field(b, "key", sl->pid != 0 && st == WORKER_BUSY ? key : "");
	report_num(b, "for", sl->pid != 0 && w->since_ms > 0 &&
	    wall > w->since_ms ? (unsigned long long)(wall - w->since_ms) /
	    1000 : 0);
	report_num(b, "retiring", sl->state == SLOT_RETIRING ? 1 : 0);
	report_num(b, "done", w->done);
	status_field(b, "last_death", sl->last_death);
	buf_putc(b, '\n');
}

/* The lines the status socket answers with. */
static void
report_status_text(struct supervisor *s, struct buf *b)
{
	const struct config *cfg = s->current->cfg;
	int64_t wall = wall_ms();
	char reload[320];

	if (s->last_reload.wall_ms == 0)
		reload[0] = '\0';
	else if (s->last_reload.ok)
		snprintf(reload, sizeof(reload), "ok (generation %d)",
		    s->last_reload.generation);
	else
		snprintf(reload, sizeof(reload), "failed, old workers kept: %s",
		    s->last_reload.message);
	buf_puts(b, "daemon");
	report_num(b, "pid", (unsigned long long)getpid());
	report_num(b, "generation", (unsigned long long)s->current->number);
	report_num(b, "uptime", (unsigned long long)(now_ms() -
	    s->started_ms) / 1000);
	status_field(b, "reload", reload);
	status_field(b, "stopping", s->stopping ? "1" : "0");
	buf_putc(b, '\n');
	for (size_t i = 0; i < cfg->nqueues; i++) {
		const struct queue *q = &cfg->queues[i];
		struct totals t = supervisor_count(s, q->name);
		uint64_t rate = 0;
		for (int k = 0; k < s->nslots; k++)
			if (s->slots[k].pid != 0 &&
			    strcmp(s->slots[k].queue->name, q->name) == 0)
				rate += rate_sum(&s->slots[k].stats->rate,
				    wall / 1000);
		buf_puts(b, "queue");
		status_field(b, "queue", q->name);
		report_num(b, "workers", (unsigned long long)
		    report_workers_up(s, q));
		report_num(b, "busy", (unsigned long long)
		    report_busy(s, q->name));
		report_num(b, "done", t.done);
		report_num(b, "retried", t.retried);
		report_num(b, "failed", t.failed);
		report_num(b, "errors", t.errors);
		report_num(b, "rate", rate);
		report_num(b, "restarts", t.restarts);
		report_num(b, "handler_restarts", t.handler_restarts);
		report_num(b, "reconnects", t.reconnects);
		report_num(b, "db_retries", t.db_retries);
		status_field(b, "last_error", t.last_error);
		buf_putc(b, '\n');
	}
	for (int k = 0; k < s->nslots; k++)
		if (s->slots[k].state != SLOT_FREE)
			report_worker_line(b, &s->slots[k], wall);
}

/*
 * The status socket never blocks the loop (bgpd's control.c): clients are
 * accepted non-blocking, each gets its answer written at once as far as
 * the socket takes it, the rest when poll says it is writable.  At most
 * STATUS_CLIENTS_MAX are served at a time: a new one takes the place of
 * the oldest, so that clients that never read cannot keep others out.
 * One that does not take its answer within STATUS_CLIENT_TIMEOUT_MS is
 * cut off.  A client that never reads costs the memory of one answer,
 * for that long at most.
 */
static void
report_client_close(struct status_client *c)
{
	(void)close(c->fd);
	buf_free(&c->out);
	memset(c, 0, sizeof(*c));
}

/* Write what the socket takes.  True when done: all written, or failed. */
static bool
report_client_write(struct status_client *c)
{
	while (c->off < c->out.len) {
		ssize_t n = send(c->fd, c->out.data + c->off,
		    c->out.len - c->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0)
			c->off += (size_t)n;
		else if (n == -1 && errno == EINTR)
			continue;
		else
			return n == 0 || (errno != EAGAIN &&
			    errno != EWOULDBLOCK);
	}
	return true;
}

/* A free entry, or the oldest client's, cut off. */
static struct status_client *
report_client_entry(struct supervisor *s)
{
	struct status_client *oldest = &s->status_clients[0];

	for (int i = 0; i < STATUS_CLIENTS_MAX; i++) {
		struct status_client *c = &s->status_clients[i];
		if (!c->busy)
			return c;
		if (c->deadline_ms < oldest->deadline_ms)
			oldest = c;
	}
	log_debug("status socket: %d clients not reading; cutting off the "
	    "oldest", STATUS_CLIENTS_MAX);
	report_client_close(oldest);
	return oldest;
}

/* Accept the clients waiting. */
static void
report_status_accept(struct supervisor *s)
{
	for (;;) {
		struct status_client *c;
		int fd = accept4(s->status_fd, NULL, NULL,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				log_warn("status socket: accept; pausing");
				s->accept_paused_until_ms = now_ms() +
				    ACCEPT_PAUSE_MS;
			}
			return;	/* EAGAIN: no more; the rest: next time */
		}
		c = report_client_entry(s);
		c->busy = true;
		c->fd = fd;
		c->deadline_ms = now_ms() + STATUS_CLIENT_TIMEOUT_MS;
		report_status_text(s, &c->out);
		if (report_client_write(c))
			report_client_close(c);
	}
}

/* Clients past their deadline are cut off; *next: the earliest other. */
static void
report_clients_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	for (int i = 0; i < STATUS_CLIENTS_MAX; i++) {
		struct status_client *c = &s->status_clients[i];
		if (!c->busy)
			continue;
		if (now >= c->deadline_ms) {
			log_debug("status socket: a client took %zu of %zu "
			    "bytes in %ds; cut off", c->off, c->out.len,
			    STATUS_CLIENT_TIMEOUT_MS / 1000);
			report_client_close(c);
		} else if (c->deadline_ms < *next)
			*next = c->deadline_ms;
	}
	if (s->accept_paused_until_ms > now &&
	    s->accept_paused_until_ms < *next)
		*next = s->accept_paused_until_ms;
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
		m[i].workers_up = report_workers_up(s, q);
		m[i].claim = t.claim;
		m[i].handler = t.handler;
		m[i].ready = m[i].in_progress = -1;
		m[i].oldest_age_s = m[i].failed_rows = -1;
		if (fresh && i < p->nqueues && p->ok[i]) {
			long ready, in_progress;
			status_split(q, &p->queue[i], report_busy(s, q->name),
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
	free(m);
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
	for (size_t i = 0; i < cfg->nqueues && i < QUEUES_MAX; i++)
		p->ok[i] = status_query(db, &cfg->queues[i], &p->queue[i]) == 0;
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
		proc_close_inherited();
		proc_child_signals();
		/* A database that hangs up is a failed probe, not a death. */
		signal(SIGPIPE, SIG_IGN);
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		report_probe_child(s);
	}
	s->probe_pid = pid;
	s->probe_started_ms = now_ms();
}

bool
report_reaped(struct supervisor *s, pid_t pid, int status)
{
	if (pid != s->probe_pid || pid == 0)
		return false;
	s->probe_pid = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		log_debug("metrics probe: the database did not answer");
	return true;
}

/* Make /run/rowq (or wherever) if it is missing: only its last part. */
static void
report_socket_dir(const char *path)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');

	if (slash != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0750) == -1 && errno != EEXIST)
			log_debug("mkdir %s: %s", dir, strerror(errno));
	}
	free(dir);
}

void
report_start(struct supervisor *s)
{
	const struct config *cfg = s->current->cfg;

	s->status_path = status_socket_path(cfg);
	report_socket_dir(s->status_path);
	s->status_fd = status_listen(s->status_path);
	if (s->status_fd == -1)
		log_warnx("no status socket: `rowq status` will show the "
		    "database's numbers only");
	if (cfg->metrics == NULL && cfg->metrics_textfile == NULL)
		return;
	s->probe = mmap(NULL, sizeof(*s->probe), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s->probe == MAP_FAILED)
		fatal("mmap");
	memset(s->probe, 0, sizeof(*s->probe));
	if (cfg->metrics != NULL)
		s->metrics = metrics_start(cfg->metrics, report_metrics, s);
}

void
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
	for (int i = 0; i < STATUS_CLIENTS_MAX; i++)
		if (s->status_clients[i].busy)
			report_client_close(&s->status_clients[i]);
	if (s->status_fd >= 0) {
		close(s->status_fd);
		(void)unlink(s->status_path);
	}
	s->status_fd = -1;
	free(s->status_path);
	s->status_path = NULL;
}

void
report_poll_fds(struct supervisor *s, struct pollfd *p, nfds_t *np)
{
	if (s->status_fd >= 0 && now_ms() >= s->accept_paused_until_ms)
		p[(*np)++] = (struct pollfd){ .fd = s->status_fd,
		    .events = POLLIN };
	for (int i = 0; i < STATUS_CLIENTS_MAX; i++)
		if (s->status_clients[i].busy)
			p[(*np)++] = (struct pollfd){
			    .fd = s->status_clients[i].fd, .events = POLLOUT };
	if (s->metrics != NULL)
		p[(*np)++] = (struct pollfd){ .fd = metrics_fd(s->metrics),
		    .events = POLLIN };
}

/* A client's socket is writable (or failed): write more, or close. */
static void
report_client_ready(struct supervisor *s, int fd)
{
	for (int i = 0; i < STATUS_CLIENTS_MAX; i++) {
		struct status_client *c = &s->status_clients[i];
		if (c->busy && c->fd == fd) {
			if (report_client_write(c))
				report_client_close(c);
			return;
		}
	}
}

void
report_handle(struct supervisor *s, const struct pollfd *p, nfds_t np)
{
	for (nfds_t i = 1; i < np; i++) {
		if (p[i].revents == 0)
			continue;
		if (p[i].fd == s->status_fd)
			report_status_accept(s);
		else if (s->metrics != NULL && p[i].fd == metrics_fd(s->metrics))
			metrics_run(s->metrics);
		else
			report_client_ready(s, p[i].fd);
	}
}

/*
 * Timers: start a probe when one is due (and kill one that hangs), and
 * write the textfile.  The metrics are only as fresh as the last probe,
 * which is said in the probe's own timestamp.
 */
void
report_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	const struct config *cfg = s->current->cfg;

	report_clients_tick(s, now, next);
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
