/*
 * handler_child.c: a handler process, as a mail server runs a delivery: pipes,
 * vfork, and in the child setsid, default signals, dup2 onto 0-2, close
 * everything else, exec; never a shell.  The child leads a process group
 * of its own, so that killing the group kills everything it started, and
 * it dies with its worker (PR_SET_PDEATHSIG).  With user:, it becomes
 * that user before exec (handler_identity.c).
 */
#include "handler.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The supervisor kills this group if the worker dies without doing it
 * itself (SIGKILL, a crash): PR_SET_PDEATHSIG reaches only the handler,
 * not what the handler started.
 */
volatile pid_t *child_pgid_slot;

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl != -1)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void
close_pair(int p[2])
{
	close_fd(&p[0]);
	close_fd(&p[1]);
}

/*
 * Start path with argv and envp, stdin/stdout/stderr on pipes.  Returns 0,
 * or -1 with errno set when no process could be made.  A failed exec is
 * not an error here: the child exits 127 and c->exec_errno says why.
 */
int
child_spawn(struct child *c, const char *path, char **argv, char **envp)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	volatile int child_errno = 0;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1 ||
	    pipe2(err, O_CLOEXEC) == -1) {
		int saved = errno;
		close_pair(in);
		close_pair(out);
		close_pair(err);
		errno = saved;
		return -1;
	}
	pid_t worker = getpid();
	pid = vfork();
	if (pid == 0) {
		/* The child shares our memory until exec: syscalls only. */
		const char *step;
		(void)setsid();
		/*
		 * Published by the child itself, before anything it starts
		 * exists: a worker killed at any moment from here on leaves
		 * a group the supervisor knows of and kills.
		 */
		if (child_pgid_slot != NULL)
			*child_pgid_slot = getpid();
		proc_child_signals();
		if (dup2(in[0], 0) == -1 || dup2(out[1], 1) == -1 ||
		    dup2(err[1], 2) == -1) {
			child_errno = errno;
			_exit(127);
		}
		if (child_user != NULL && identity_switch(child_user, &step)) {
			child_errno = errno;
			_exit(127);
		}
		/*
		 * After the switch, which clears it.  A worker that died
		 * before this line sends no signal: see that it is gone.
		 */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != worker)
			_exit(127);
		/* All our descriptors are CLOEXEC; this is for the libraries'. */
		if (syscall(SYS_close_range, 3U, ~0U, 0) == -1)
			for (int fd = 3; fd < 4096; fd++)
				(void)close(fd);
		execve(path, argv, envp);
		child_errno = errno;
		_exit(127);
	}
	int saved = errno;
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&err[1]);
	if (pid == -1) {
		close_pair(in);
		close_pair(out);
		close_pair(err);
		errno = saved;
		return -1;
	}
	c->pid = pid;
	c->exec_errno = child_errno;
	c->started_ms = now_ms();
	c->in = in[1];
	c->out = out[0];
	c->err = err[0];
	/*
	 * A pidfd lets poll() wake at the exit.  Without one (kernels before
	 * 5.3, valgrind) the waits poll the exit every few milliseconds.
	 */
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (c->pidfd != -1)
		(void)fcntl(c->pidfd, F_SETFD, FD_CLOEXEC);
	set_nonblock(c->in);
	set_nonblock(c->out);
	set_nonblock(c->err);
	return 0;
}

/* Exited (or killed), without reaping it: its pgid cannot be reused yet. */
bool
child_exited(const struct child *c)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT)
	    == 0 && si.si_pid == c->pid;
}

void
child_kill(const struct child *c, int sig)
{
	if (c->pid > 0)
		(void)kill(-c->pid, sig);
}

/*
 * Kill what is left of the group (a handler's stray grandchildren do not
 * outlive its row), reap the handler, close the pipes.  Returns the wait
 * status.
 */
int
child_reap(struct child *c)
{
	int status = 0;

	if (c->pid <= 0)
		return 0;
	child_read_stderr(c);
	child_kill(c, SIGKILL);
	while (waitpid(c->pid, &status, 0) == -1 && errno == EINTR)
		;
	if (child_pgid_slot != NULL && *child_pgid_slot == c->pid)
		*child_pgid_slot = 0;
	c->pid = 0;
	close_fd(&c->in);
	close_fd(&c->out);
	close_fd(&c->err);
	close_fd(&c->pidfd);
	return status;
}

static void
errsink_log(struct errsink *e, const char *line, size_t n)
{
	if (e->logged >= HANDLER_LOG_LINES_MAX) {
		e->dropped++;
		return;
	}
	e->logged++;
	log_warnx("stderr: %.*s", (int)n, line);
}

static void
errsink_feed(struct errsink *e, const char *data, size_t n)
{
	/* Keep the tail for :error, trimmed in bulk to stay cheap. */
	buf_append(&e->tail, data, n);
	if (e->tail.len > 2 * HANDLER_ERROR_MAX) {
		size_t cut = e->tail.len - HANDLER_ERROR_MAX;
		memmove(e->tail.data, e->tail.data + cut, e->tail.len - cut + 1);
		e->tail.len -= cut;
	}
	/*
	 * Line by line, not byte by byte: a handler may write hundreds of
	 * megabytes.  A line longer than HANDLER_LOG_LINE_MAX is logged in
	 * pieces of that size.
	 */
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t len = nl != NULL ? (size_t)(nl - data) : n;

		while (len > 0) {
			if (e->line.len >= HANDLER_LOG_LINE_MAX) {
				errsink_log(e, e->line.data, e->line.len);
				buf_reset(&e->line);
			}
			size_t take = HANDLER_LOG_LINE_MAX - e->line.len;
			if (take > len)
				take = len;
			buf_append(&e->line, data, take);
			data += take;
			n -= take;
			len -= take;
		}
		if (nl != NULL) {
			errsink_log(e, e->line.data ? e->line.data : "",
			    e->line.len);
			buf_reset(&e->line);
			data++;
			n--;
		}
	}
}

void
errsink_row_done(struct errsink *e)
{
	if (e->line.len > 0)
		errsink_log(e, e->line.data, e->line.len);
	if (e->dropped > 0)
		log_warnx("stderr: %zu more lines not logged", e->dropped);
	buf_reset(&e->line);
	buf_reset(&e->tail);
	e->logged = 0;
	e->dropped = 0;
}

/* ": last lines of stderr", for :error. */
void
errsink_error_tail(const struct errsink *e, struct buf *out)
{
	const char *t = e->tail.data;
	size_t n = e->tail.len;

	while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r'))
		n--;
	if (n == 0)
		return;
	if (n > HANDLER_ERROR_MAX) {
		t += n - HANDLER_ERROR_MAX;
		n = HANDLER_ERROR_MAX;
	}
	buf_puts(out, ": ");
	buf_append(out, t, n);
}

void
errsink_free(struct errsink *e)
{
	buf_free(&e->line);
	buf_free(&e->tail);
}

/* Read what stderr has now, without blocking; close it at EOF. */
void
child_read_stderr(struct child *c)
{
	char chunk[16384];

	for (int i = 0; i < 64 && c->err >= 0; i++) {
		ssize_t n = read(c->err, chunk, sizeof(chunk));
		if (n > 0)
			errsink_feed(&c->errs, chunk, (size_t)n);
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			close_fd(&c->err);
		else
			break;
	}
}

