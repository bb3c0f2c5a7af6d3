/*
 * on_failed.c: on_failed:, a program run once for each row that failed
 * for good, after its failed statement committed: to page someone, post
 * to a chat, report to an error tracker.
 *
 * It must never hold up a queue, so workers do not run it: after the
 * commit each sends one datagram (the queue, the key, the try, the error,
 * the row as JSON) on a socket the supervisor made, without waiting
 * (worker_on_failed.c); a full socket drops it, counted.  A runner child
 * of the supervisor reads the datagrams and runs each hook in a child of
 * its own, as a handler is run (no shell, the handlers' environment
 * allowlist and user:, the row on standard input), ON_FAILED_RUNNING_MAX
 * at a time, each for on_failed_timeout at most, and at most
 * on_failed_rate a minute per queue: the rest are counted and said in one
 * line a minute.  A hook that fails is logged and counted; nothing is
 * retried.  A hook still running when its runner is replaced (a reload)
 * or stops goes on until it ends or its timeout.
 */
#include "handler.h"
#include "supervisor.h"
#include "on_failed.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define ON_FAILED_RESTART_MS	1000
#define ON_FAILED_RUNNING_MAX	4
#define ON_FAILED_WINDOW_MS	60000
/* Room for a few whole datagrams while the runner is busy. */
#define ON_FAILED_SOCKET_BUF	(1024 * 1024)

/* The datagram's parts, checked against its length. */
struct on_failed_job {
	const struct on_failed_msg *m;
	const char	*key, *error, *row;
};

static bool
on_failed_wanted(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->nqueues; i++)
		if (config_on_failed(cfg, &cfg->queues[i]) != NULL)
			return true;
	return false;
}

/* The datagram, if it is one of ours and whole. */
static bool
on_failed_parse(const char *d, size_t n, struct on_failed_job *j)
{
	const struct on_failed_msg *m = (const void *)d;

	if (n < sizeof(*m) || memchr(m->queue, '\0', sizeof(m->queue)) == NULL)
		return false;
	if ((size_t)m->key_len + m->error_len + m->row_len !=
	    n - sizeof(*m) || m->attempt < 0)
		return false;
	j->m = m;
	j->key = d + sizeof(*m);
	j->error = j->key + m->key_len;
	j->row = j->error + m->error_len;
	return true;
}

static const char *
on_failed_outcome(int outcome)
{
	return outcome == ON_FAILED_TIMEOUT ? "timeout" :
	    outcome == ON_FAILED_KILLED ? "killed" : "failed";
}

/* "NAME=" and the value, at most len bytes of it, with no NUL inside. */
static char *
on_failed_env(const char *name, const char *v, size_t len)
{
	struct buf b = { 0 };

	buf_printf(&b, "%s=", name);
	for (size_t i = 0; i < len; i++)
		buf_putc(&b, v[i] != '\0' ? v[i] : ' ');
	return buf_steal(&b);
}

/* The hook child: run the program once, as a handler is run, and end. */
static _Noreturn void
on_failed_hook(const struct config *cfg, const struct queue *q,
    const struct on_failed_job *j)
{
	const struct program *p = config_on_failed(cfg, q);
	struct handler_result res = { 0 };
	struct handler_job job = { 0 };
	struct handler_settings set = { .timeout_ms = q->on_failed_timeout_ms };
	struct stopper stopper;
	char attempt[32], *path = NULL, *vars[6];
	char **base;

	char *key = xstrndup(j->key, j->m->key_len);

	log_procinit("on_failed %s", q->name);
	log_set_row(key);
	stopper_init(&stopper, true);
	identity_worker_init(config_handler_user(cfg, q));
	if (handler_resolve(p->argv[0], &path) == -1) {
		log_error("%s: cannot run %s: %s", p->where, p->argv[0],
		    strerror(errno));
		_exit(1);
	}
	vars[0] = on_failed_env("ROWQ_QUEUE", q->name, strlen(q->name));
	vars[1] = on_failed_env("ROWQ_KEY", j->key, j->m->key_len);
	snprintf(attempt, sizeof(attempt), "%d", j->m->attempt);
	vars[2] = on_failed_env("ROWQ_ATTEMPT", attempt, strlen(attempt));
	vars[3] = on_failed_env("ROWQ_ERROR", j->error, j->m->error_len);
	vars[4] = on_failed_env("ROWQ_OUTCOME", on_failed_outcome(j->m->outcome),
	    strlen(on_failed_outcome(j->m->outcome)));
	vars[5] = NULL;
	base = handler_base_env(cfg, q);
	job.argv = p->argv;
	job.envp = handler_env(base, (const char *const *)vars);
	job.input = j->row;
	job.input_len = j->m->row_len;
	job.set = &set;
	handler_exec(path, &job, &stopper, &res);
	if (res.outcome == OUTCOME_DONE)
		log_info("ran %s for the failed row", p->argv[0]);
	else
		log_warnx("%s for the failed row: %s (not run again)",
		    p->argv[0], res.error.data ? res.error.data : "");
	_exit(res.outcome == OUTCOME_DONE ? 0 : 1);
}

/* The runner's count of one queue's hooks in this minute. */
struct on_failed_window {
	char		 queue[sizeof(((struct on_failed_msg *)0)->queue)];
	int64_t		 start_ms;
	int		 runs;
	uint64_t	 dropped;
};

static struct on_failed_counts *
on_failed_counts_of(struct on_failed_counts *c, const char *queue)
{
	for (size_t i = 0; i < QUEUES_MAX; i++) {
		if (c[i].queue[0] == '\0')
			snprintf(c[i].queue, sizeof(c[i].queue), "%s", queue);
		if (strcmp(c[i].queue, queue) == 0)
			return &c[i];
	}
	return NULL;
}

/*
 * Whether the queue's rate lets one more run this minute; a window that
 * ends says what it dropped, once.
 */
static bool
on_failed_rate_ok(struct on_failed_window *w, size_t nw,
    const struct queue *q, int64_t now)
{
	struct on_failed_window *win = NULL;

	for (size_t i = 0; i < nw && win == NULL; i++)
		if (strcmp(w[i].queue, q->name) == 0 || w[i].queue[0] == '\0')
			win = &w[i];
	if (win == NULL)
		return false;
	if (win->queue[0] == '\0' || now - win->start_ms >= ON_FAILED_WINDOW_MS) {
		if (win->dropped > 0)
			log_warnx("%s: on_failed: %llu runs dropped in the last "
			    "minute, over on_failed_rate %d", q->name,
			    (unsigned long long)win->dropped, q->on_failed_rate);
		snprintf(win->queue, sizeof(win->queue), "%s", q->name);
		win->start_ms = now;
		win->runs = 0;
		win->dropped = 0;
	}
	if (win->runs >= q->on_failed_rate) {
		if (win->dropped++ == 0)
			log_warnx("%s: on_failed_rate %d reached: the next "
			    "runs this minute are dropped, counted in "
			    "rowq_on_failed_dropped_total", q->name,
			    q->on_failed_rate);
		return false;
	}
	win->runs++;
	return true;
}

/* A hook child that runs, and whose queue it counts for. */
struct on_failed_running {
	pid_t		 pid;		/* 0: a free place */
	char		 queue[sizeof(((struct on_failed_msg *)0)->queue)];
};

/* One datagram: a hook child for it (its pid), or a count of why not (0). */
static pid_t
on_failed_take(const struct config *cfg, struct on_failed_counts *counts,
    struct on_failed_window *w, const char *d, size_t n)
{
	struct on_failed_job j;
	const struct queue *q;
	struct on_failed_counts *c;
	pid_t pid;

	if (!on_failed_parse(d, n, &j))
		return 0;
	q = config_queue(cfg, j.m->queue);
	c = on_failed_counts_of(counts, j.m->queue);
	if (q == NULL || config_on_failed(cfg, q) == NULL) {
		log_warnx("on_failed for a row of %s, a queue without "
		    "on_failed now: dropped", j.m->queue);
		return 0;
	}
	if (!on_failed_rate_ok(w, QUEUES_MAX, q, now_ms())) {
		if (c != NULL)
			c->dropped++;
		return 0;
	}
	pid = fork();
	if (pid == -1) {
		log_warn("fork for on_failed");
		if (c != NULL)
			c->failures++;
		return 0;
	}
	if (pid == 0) {
		proc_child_signals();
		signal(SIGPIPE, SIG_IGN);
		on_failed_hook(cfg, q, &j);
	}
	if (c != NULL)
		c->runs++;
	return pid;
}

/* Hook children that ended: counted; how many still run. */
static int
on_failed_reap(struct on_failed_counts *counts, struct on_failed_running *r)
{
	int n = 0, status;

	for (int i = 0; i < ON_FAILED_RUNNING_MAX; i++) {
		if (r[i].pid == 0)
			continue;
		if (waitpid(r[i].pid, &status, WNOHANG) == r[i].pid) {
			struct on_failed_counts *c = on_failed_counts_of(counts,
			    r[i].queue);
			if (c != NULL && !(WIFEXITED(status) &&
			    WEXITSTATUS(status) == 0))
				c->failures++;
			r[i].pid = 0;
		} else
			n++;
	}
	return n;
}

/*
 * The runner: read a datagram whenever a hook child may start, look every
 * 100 ms at those that run.  It exits with the supervisor (a helper child
 * dies with it).
 */
static _Noreturn void
on_failed_runner(const struct config *cfg, struct on_failed_counts *counts,
    int fd)
{
	static struct on_failed_window windows[QUEUES_MAX];
	struct on_failed_running running[ON_FAILED_RUNNING_MAX] = { 0 };
	char *d = xmalloc(ON_FAILED_MSG_MAX);

	log_procinit("on_failed");
	proc_title("rowq: on_failed");
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int i = 0, busy = on_failed_reap(counts, running);

		if (busy >= ON_FAILED_RUNNING_MAX) {
			(void)poll(NULL, 0, 100);
			continue;
		}
		/* Idle, it sleeps until a datagram comes. */
		if (poll(&p, 1, busy > 0 ? 100 : -1) <= 0 ||
		    !(p.revents & POLLIN))
			continue;
		ssize_t n = recv(fd, d, ON_FAILED_MSG_MAX, MSG_DONTWAIT);
		if (n <= 0)
			continue;
		while (running[i].pid != 0)
			i++;
		running[i].pid = on_failed_take(cfg, counts, windows, d,
		    (size_t)n);
		if (running[i].pid != 0)
			snprintf(running[i].queue, sizeof(running[i].queue),
			    "%s", ((const struct on_failed_msg *)d)->queue);
	}
}

static void
on_failed_fork(struct supervisor *s)
{
	struct on_failed_state *o = &s->on_failed;
	pid_t pid, parent = getpid();

	pid = fork();
	if (pid == -1) {
		log_warn("fork for the on_failed runner");
		o->child.next_start_ms = now_ms() + ON_FAILED_RESTART_MS;
		return;
	}
	if (pid == 0) {
		/* Its socket goes to descriptor 0, below those closed next. */
		if (dup2(o->recv_fd, 0) == -1)
			_exit(1);
		proc_helper_child(parent);
		on_failed_runner(s->current->cfg, o->counts, 0);
	}
	o->child.pid = pid;
	o->child.generation = s->current->number;
}

/*
 * The socket, before any worker: workers get its sending end
 * (supervisor.c), the runner its other end.  The supervisor keeps both,
 * so that datagrams wait for a runner that starts again.
 */
static void
on_failed_start(struct supervisor *s)
{
	struct on_failed_state *o = &s->on_failed;
	int fds[2], size = ON_FAILED_SOCKET_BUF;

	o->send_fd = o->recv_fd = -1;
	o->child.fd = -1;
	o->counts = mmap(NULL, QUEUES_MAX * sizeof(*o->counts),
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (o->counts == MAP_FAILED)
		fatal("mmap");
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
	    fds) == -1) {
		log_warn("on_failed: socketpair; no on_failed runs");
		return;
	}
	(void)setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	(void)setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	o->send_fd = fds[0];
	o->recv_fd = fds[1];
}

/* Start the runner when there are hooks to run and it is due. */
static void
on_failed_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	struct on_failed_state *o = &s->on_failed;

	if (o->recv_fd == -1 || s->stopping)
		return;
	helper_child_retire(&o->child, s->current->number);
	if (on_failed_wanted(s->current->cfg) &&
	    helper_child_due(&o->child, now, next))
		on_failed_fork(s);
}

static bool
on_failed_reaped(struct supervisor *s, pid_t pid, int status)
{
	(void)status;
	return helper_child_reaped(&s->on_failed.child, pid,
	    ON_FAILED_RESTART_MS);
}

static void
on_failed_stop(struct supervisor *s)
{
	struct on_failed_state *o = &s->on_failed;

	helper_child_kill(&o->child);
	if (o->send_fd != -1)
		close(o->send_fd);
	if (o->recv_fd != -1)
		close(o->recv_fd);
	o->send_fd = o->recv_fd = -1;
	if (o->counts != NULL && o->counts != MAP_FAILED)
		munmap(o->counts, QUEUES_MAX * sizeof(*o->counts));
	o->counts = NULL;
}

/* What the runner did for a queue, for the metrics. */
struct on_failed_counts
on_failed_count(const struct supervisor *s, const char *queue)
{
	struct on_failed_counts none = { 0 };
	const struct on_failed_counts *c = s->on_failed.counts;

	for (size_t i = 0; c != NULL && i < QUEUES_MAX && c[i].queue[0]; i++)
		if (strcmp(c[i].queue, queue) == 0)
			return c[i];
	return none;
}

const struct supervisor_part on_failed_part = {
	.name = "on_failed",
	.start = on_failed_start,
	.stop = on_failed_stop,
	.tick = on_failed_tick,
	.reaped = on_failed_reaped,
};
