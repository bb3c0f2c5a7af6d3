/*
 * helper_child.c: the supervisor's side of a helper child that reports
 * on a pipe (the wake watcher, the binlog follower): polling
 * its pipe, noticing its death and when it may start again, replacing it
 * after a reload, and stopping it.  What it reads and what its reports
 * mean stay with each (wake_watch.c, wake_binlog.c).
 */
#include "rowq.h"
#include "supervisor.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

void
helper_child_poll_fd(const struct helper_child *h, struct pollfd *p,
    nfds_t *np)
{
	if (h->fd != -1)
		p[(*np)++] = (struct pollfd){ .fd = h->fd, .events = POLLIN };
}

/* Whether pid was this child; if so it may start again after restart_ms. */
bool
helper_child_reaped(struct helper_child *h, pid_t pid, int64_t restart_ms)
{
	if (pid == 0 || pid != h->pid)
		return false;
	h->pid = 0;
	h->next_start_ms = now_ms() + restart_ms;
	return true;
}

/*
 * After a reload: a child serving an older generation's queues is
 * killed, and started again for this one once it is reaped.
 */
void
helper_child_retire(struct helper_child *h, int generation)
{
	if (h->pid != 0 && h->generation != generation) {
		(void)kill(h->pid, SIGKILL);
		h->generation = generation;
	}
}

/* Whether none runs and one may start now; else when it may, in *next. */
bool
helper_child_due(const struct helper_child *h, int64_t now, int64_t *next)
{
	if (h->pid != 0)
		return false;
	if (now >= h->next_start_ms)
		return true;
	if (h->next_start_ms < *next)
		*next = h->next_start_ms;
	return false;
}

/* Stop it at once and wait for it: it holds nothing worth a grace. */
void
helper_child_kill(struct helper_child *h)
{
	if (h->pid > 0) {
		(void)kill(h->pid, SIGKILL);
		(void)waitpid(h->pid, NULL, 0);
		h->pid = 0;
	}
}

/*
 * Stop it with SIGTERM, wait up to grace_ms for it to finish its last act
 * (the console's last heartbeat), then stop it at once all the same.
 */
void
helper_child_stop(struct helper_child *h, int64_t grace_ms)
{
	struct timespec tick = { 0, 10 * 1000000L };
	int64_t end = now_ms() + grace_ms;
	pid_t r;

	if (h->pid <= 0)
		return;
	(void)kill(h->pid, SIGTERM);
	while (now_ms() < end) {
		r = waitpid(h->pid, NULL, WNOHANG);
		if (r == h->pid || (r == -1 && errno != EINTR)) {
			h->pid = 0;
			return;
		}
		(void)nanosleep(&tick, NULL);
	}
	helper_child_kill(h);
}
