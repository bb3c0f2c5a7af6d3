/*
 * status_socket.c: the daemon's status socket.  Each connection is
 * answered with the supervisor's live state, one line per daemon, queue
 * and worker, in tab-separated key=value fields, and closed; `rowq
 * status` (status.c) reads it, and so can `socat - UNIX:PATH`.
 *
 * The status socket never blocks the loop (bgpd's control.c): clients are
 * accepted non-blocking, each gets its answer written at once as far as
 * the socket takes it, the rest when poll says it is writable.  At most
 * STATUS_CLIENTS_MAX are served at a time: a new one takes the place of
 * the oldest, so that clients that never read cannot keep others out.
 * One that does not take its answer within STATUS_CLIENT_TIMEOUT_MS is
 * cut off.  A client that never reads costs the memory of one answer,
 * for that long at most.
 */
#include "rowq.h"
#include "supervisor.h"
#include "commands.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A client of the status socket gets this long to take its answer. */
#define STATUS_CLIENT_TIMEOUT_MS	2000
/* Out of descriptors: no accept for this long. */
#define ACCEPT_PAUSE_MS			1000

/* ---- where it listens ---- */

/* /run/rowq/NAME.sock, NAME being the config file's name without .yaml. */
char *
status_socket_path(const struct config *cfg)
{
	const char *base = strrchr(cfg->path, '/');
	struct buf b = { 0 };
	size_t n;

	if (cfg->status_socket != NULL)
		return xstrdup(cfg->status_socket);
	base = base ? base + 1 : cfg->path;
	n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".yaml") == 0)
		n -= 5;
	else if (n > 4 && strcmp(base + n - 4, ".yml") == 0)
		n -= 4;
	buf_puts(&b, "/run/rowq/");
	buf_append(&b, base, n);
	buf_puts(&b, ".sock");
	return buf_steal(&b);
}

/*
 * Listen on a unix socket only the daemon's user (and root) may use: the
 * status names rows and errors.  A stale socket from a dead daemon is
 * replaced; a live one is not stolen.
 */
static int
status_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_error("status_socket: path too long: %s", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd == -1) {
		log_warn("status socket");
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		log_error("status socket %s: another rowq is answering there",
		    path);
		close(fd);
		return -1;
	}
	/* A stale socket of ours may go; anything else is not ours to remove. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_error("status_socket %s: not a socket: not removing "
			    "it; name another path", path);
			close(fd);
			return -1;
		}
		(void)unlink(path);
	}
	old = umask(0117);
	/* The unit's UMask=0077 would leave out the group: say 0660 here. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    chmod(path, 0660) == -1 || listen(fd, 16) == -1) {
		log_warn("status socket %s", path);
		umask(old);
		close(fd);
		return -1;
	}
	umask(old);
	return fd;
}

/* Make /run/rowq (or wherever) if it is missing: only its last part. */
static void
status_socket_dir(const char *path)
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

/* ---- what it answers ---- */

/* "\tkey=value", the value kept on one line and free of tabs. */
static void
status_field(struct buf *b, const char *key, const char *value)
{
	buf_printf(b, "\t%s=", key);
	for (const char *p = value ? value : ""; *p; p++)
		buf_putc(b, (*p == '\t' || *p == '\n' || *p == '\r') ? ' ' : *p);
}

static const char *const state_names[] = {
	[WORKER_STARTING] = "starting",
	[WORKER_IDLE] = "idle",
	[WORKER_BUSY] = "busy",
	[WORKER_DB_DOWN] = "database-down",
	[WORKER_STOPPING] = "stopping",
	[WORKER_BACKOFF] = "paused",
	[WORKER_LIMITED] = "limited",
	[WORKER_FAILING] = "failing",
};

static void
status_num(struct buf *b, const char *key, unsigned long long v)
{
	char n[32];

	snprintf(n, sizeof(n), "%llu", v);
	status_field(b, key, n);
}

static void
status_worker_line(struct buf *b, const struct slot *sl, int64_t wall)
{
	const struct worker_stats *w = sl->stats;
	int st = w->state;
	char key[sizeof(w->key)];

	buf_puts(b, "worker");
	status_field(b, "queue", sl->queue->name);
	status_num(b, "number", (unsigned long long)sl->number);
	status_num(b, "pid", (unsigned long long)sl->pid);
	status_num(b, "generation", (unsigned long long)sl->gen->number);
	if (sl->pid == 0)
		status_field(b, "state", "restarting");
	else
		status_field(b, "state", st >= 0 && st <= WORKER_FAILING ?
		    state_names[st] : "unknown");
	if (sl->pid != 0 && st == WORKER_LIMITED && w->limit_reason >= 0 &&
	    w->limit_reason < LIMIT_REASONS)
		status_field(b, "limited_by",
		    limit_reason_names[w->limit_reason]);
	memcpy(key, (const char *)w->key, sizeof(key));
	key[sizeof(key) - 1] = '\0';
	status_field(b, "key", sl->pid != 0 && st == WORKER_BUSY ? key : "");
	if (sl->pid != 0 && st == WORKER_BUSY)
		status_num(b, "attempt", (unsigned long long)w->attempt);
	if (sl->pid != 0 && st == WORKER_BUSY && sl->queue->group_by.name) {
		char group[sizeof(w->group)];
		memcpy(group, (const char *)w->group, sizeof(group));
		group[sizeof(group) - 1] = '\0';
		if (w->group_null)
			status_num(b, "group_null", 1);
		else
			status_field(b, "group", group);
	}
	status_num(b, "for", sl->pid != 0 && w->since_ms > 0 &&
	    wall > w->since_ms ? (unsigned long long)(wall - w->since_ms) /
	    1000 : 0);
	status_num(b, "retiring", sl->state == SLOT_RETIRING ? 1 : 0);
	status_num(b, "done", w->done);
	status_field(b, "last_death", sl->last_death);
	buf_putc(b, '\n');
}

/* The lines the status socket answers with. */
static void
status_text(struct supervisor *s, struct buf *b)
{
	const struct config *cfg = s->current->cfg;
	int64_t wall = wall_ms();
	char reload[320], host[256] = "";

	if (s->last_reload.wall_ms == 0)
		reload[0] = '\0';
	else if (s->last_reload.ok)
		snprintf(reload, sizeof(reload), "ok (generation %d)",
		    s->last_reload.generation);
	else
		snprintf(reload, sizeof(reload), "failed, old workers kept: %s",
		    s->last_reload.message);
	buf_puts(b, "daemon");
	status_num(b, "pid", (unsigned long long)getpid());
	/* With pid, its row in the daemons table (status_others.c). */
	if (gethostname(host, sizeof(host) - 1) == -1)
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	status_field(b, "host", host);
	status_num(b, "generation", (unsigned long long)s->current->number);
	status_num(b, "uptime", (unsigned long long)(now_ms() -
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
		status_num(b, "workers", (unsigned long long)
		    supervisor_workers_up(s, q));
		status_num(b, "busy", (unsigned long long)
		    supervisor_busy(s, q->name));
		status_num(b, "done", t.done);
		status_num(b, "retried", t.retried);
		status_num(b, "failed", t.failed);
		status_num(b, "errors", t.errors);
		status_num(b, "rate", rate);
		status_num(b, "restarts", t.restarts);
		status_num(b, "handler_restarts", t.handler_restarts);
		status_num(b, "reconnects", t.reconnects);
		status_num(b, "db_retries", t.db_retries);
		status_field(b, "last_error", t.last_error);
		long long lag_s;
		status_field(b, "wake", wake_binlog_mode(s, q, &lag_s));
		if (lag_s >= 0)
			status_num(b, "binlog_lag", (unsigned long long)lag_s);
		prune_daemon_status(s, q->name, b);
		scale_status(s, q, b);
		buf_putc(b, '\n');
	}
	for (int k = 0; k < s->nslots; k++)
		if (s->slots[k].state != SLOT_FREE)
			status_worker_line(b, &s->slots[k], wall);
	schedule_daemon_status(s, b);
}

/* ---- its clients ---- */

static void
status_client_close(struct status_client *c)
{
	(void)close(c->fd);
	buf_free(&c->out);
	memset(c, 0, sizeof(*c));
}

/* Write what the socket takes.  True when done: all written, or failed. */
static bool
status_client_write(struct status_client *c)
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
status_client_entry(struct supervisor *s)
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
	status_client_close(oldest);
	return oldest;
}

/* Accept the clients waiting. */
static void
status_socket_accept(struct supervisor *s)
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
		c = status_client_entry(s);
		c->busy = true;
		c->fd = fd;
		c->deadline_ms = now_ms() + STATUS_CLIENT_TIMEOUT_MS;
		status_text(s, &c->out);
		if (status_client_write(c))
			status_client_close(c);
	}
}

/* Clients past their deadline are cut off; *next: the earliest other. */
static void
status_socket_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	for (int i = 0; i < STATUS_CLIENTS_MAX; i++) {
		struct status_client *c = &s->status_clients[i];
		if (!c->busy)
			continue;
		if (now >= c->deadline_ms) {
			log_debug("status socket: a client took %zu of %zu "
			    "bytes in %ds; cut off", c->off, c->out.len,
			    STATUS_CLIENT_TIMEOUT_MS / 1000);
			status_client_close(c);
		} else if (c->deadline_ms < *next)
			*next = c->deadline_ms;
	}
	if (s->accept_paused_until_ms > now &&
	    s->accept_paused_until_ms < *next)
		*next = s->accept_paused_until_ms;
}

/* A client's socket is writable (or failed): write more, or close. */
static void
status_socket_client_ready(struct supervisor *s, int fd)
{
	for (int i = 0; i < STATUS_CLIENTS_MAX; i++) {
		struct status_client *c = &s->status_clients[i];
		if (c->busy && c->fd == fd) {
			if (status_client_write(c))
				status_client_close(c);
			return;
		}
	}
}

static void
status_socket_start(struct supervisor *s)
{
	s->status_path = status_socket_path(s->current->cfg);
	status_socket_dir(s->status_path);
	s->status_fd = status_listen(s->status_path);
	if (s->status_fd == -1)
		log_warnx("no status socket: `rowq status` will show the "
		    "database's numbers only");
}

static void
status_socket_stop(struct supervisor *s)
{
	for (int i = 0; i < STATUS_CLIENTS_MAX; i++)
		if (s->status_clients[i].busy)
			status_client_close(&s->status_clients[i]);
	if (s->status_fd >= 0) {
		close(s->status_fd);
		(void)unlink(s->status_path);
	}
	s->status_fd = -1;
	free(s->status_path);
	s->status_path = NULL;
}

static void
status_socket_poll_fds(struct supervisor *s, struct pollfd *p, nfds_t *np)
{
	if (s->status_fd >= 0 && now_ms() >= s->accept_paused_until_ms)
		p[(*np)++] = (struct pollfd){ .fd = s->status_fd,
		    .events = POLLIN };
	for (int i = 0; i < STATUS_CLIENTS_MAX; i++)
		if (s->status_clients[i].busy)
			p[(*np)++] = (struct pollfd){
			    .fd = s->status_clients[i].fd, .events = POLLOUT };
}

/* The listener, or a client whose answer waits for room. */
static void
status_socket_handle(struct supervisor *s, const struct pollfd *p, nfds_t np)
{
	for (nfds_t i = 0; i < np; i++) {
		if (p[i].revents == 0)
			continue;
		if (p[i].fd == s->status_fd)
			status_socket_accept(s);
		else
			status_socket_client_ready(s, p[i].fd);
	}
}

const struct supervisor_part status_socket_part = {
	.name = "status socket",
	.poll_max = 1 + STATUS_CLIENTS_MAX,
	.start = status_socket_start,
	.stop = status_socket_stop,
	.tick = status_socket_tick,
	.poll_fds = status_socket_poll_fds,
	.handle = status_socket_handle,
};
