/*
 * handler.c: running a handler program for a row.
 *
 * As a mail server runs a delivery: pipes, vfork, and in the child setsid,
 * default signals, dup2 onto 0-2, close the rest, exec; never a shell.  The
 * parent feeds the row to stdin and collects stdout and stderr, bounded,
 * while it waits with a deadline.  The handler is a process group of its
 * own, so that a timeout kills everything it started.
 */
#include "rowq.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* After a timeout's SIGTERM, how long the group has before SIGKILL. */
#define HANDLER_KILL_GRACE_MS	2000

/*
 * Find prog as execvp would, once per worker rather than per row: a name
 * without a slash is looked up in PATH.  Returns 0 with *path allocated,
 * or -1 with errno set.
 */
int
handler_resolve(const char *prog, char **path)
{
	const char *p = getenv("PATH");
	struct buf b = { 0 };

	if (strchr(prog, '/') != NULL) {
		if (access(prog, X_OK) == -1)
			return -1;
		*path = xstrdup(prog);
		return 0;
	}
	if (p == NULL || *p == '\0')
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p != '\0') {
		size_t n = strcspn(p, ":");
		struct stat st;

		buf_reset(&b);
		if (n == 0)
			buf_puts(&b, ".");
		else
			buf_append(&b, p, n);
		buf_printf(&b, "/%s", prog);
		if (stat(b.data, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(b.data, X_OK) == 0) {
			*path = buf_steal(&b);
			return 0;
		}
		p += n;
		if (*p == ':')
			p++;
	}
	buf_free(&b);
	errno = ENOENT;
	return -1;
}

/*
 * The daemon's environment as handlers see it: without NOTIFY_SOCKET, so
 * that only the supervisor talks to systemd, and without any ROWQ_ variable
 * of our own, which handler_env sets per row.
 */
char **
handler_base_env(void)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = xcalloc(n + 1, sizeof(*env));
	for (size_t i = 0; i < n; i++) {
		if (strncmp(environ[i], "NOTIFY_SOCKET=", 14) == 0 ||
		    strncmp(environ[i], "WATCHDOG_", 9) == 0 ||
		    strncmp(environ[i], "LISTEN_", 7) == 0 ||
		    strncmp(environ[i], "ROWQ_", 5) == 0)
			continue;
		env[k++] = xstrdup(environ[i]);
	}
	return env;
}

char **
handler_env(char **base, const char *queue, const char *key, int attempt)
{
	size_t n = 0;
	char **env;
	struct buf b = { 0 };

	while (base[n] != NULL)
		n++;
	env = xcalloc(n + 4, sizeof(*env));
	for (size_t i = 0; i < n; i++)
		env[i] = xstrdup(base[i]);
	buf_printf(&b, "ROWQ_QUEUE=%s", queue);
	env[n++] = buf_steal(&b);
	buf_printf(&b, "ROWQ_KEY=%s", key);
	env[n++] = buf_steal(&b);
	buf_printf(&b, "ROWQ_ATTEMPT=%d", attempt);
	env[n++] = buf_steal(&b);
	return env;
}

void
handler_env_free(char **env)
{
	if (env == NULL)
		return;
	for (size_t i = 0; env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

static int
handler_column_index(const struct column *cols, size_t ncols,
    const char *name, size_t len)
{
	for (size_t i = 0; i < ncols; i++)
		if (strlen(cols[i].name) == len &&
		    memcmp(cols[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

/*
 * Each argument of the template with {column} replaced by the row's value
 * (NULL as empty); {{ and }} stand for braces.  One argument stays one
 * argument whatever the value holds: there is no shell to split it.  A NUL
 * inside a value would cut the argument short, so it ends there, visibly.
 */
char **
handler_argv(char *const *tmpl, const struct column *cols, size_t ncols,
    const struct row *row)
{
	size_t n = 0;
	char **argv;

	while (tmpl[n] != NULL)
		n++;
	argv = xcalloc(n + 1, sizeof(*argv));
	for (size_t a = 0; a < n; a++) {
		const char *t = tmpl[a];
		struct buf b = { 0 };

		while (*t != '\0') {
			if ((t[0] == '{' && t[1] == '{') ||
			    (t[0] == '}' && t[1] == '}')) {
				buf_putc(&b, t[0]);
				t += 2;
				continue;
			}
			const char *end = t[0] == '{' ? strchr(t, '}') : NULL;
			int col = end ? handler_column_index(cols, ncols,
			    t + 1, (size_t)(end - t - 1)) : -1;
			if (col < 0) {
				buf_putc(&b, *t++);
				continue;
			}
			if (row->value[col] != NULL)
				buf_puts(&b, row->value[col]);
			t = end + 1;
		}
		argv[a] = buf_steal(&b);
	}
	return argv;
}

void
handler_argv_free(char **argv)
{
	handler_env_free(argv);
}

void
handler_result_free(struct handler_result *r)
{
	buf_free(&r->output);
	buf_free(&r->error);
}

static void
handler_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl != -1)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* State of one running handler process, while the parent waits for it. */
struct run {
	pid_t		 pid;
	int		 pidfd;
	int		 in, out, err;	/* our ends; -1 once closed */
	const char	*input;
	size_t		 input_left;
	bool		 output_truncated;
	struct buf	 errline;	/* the stderr line being assembled */
	int		 lines_logged;
	size_t		 lines_dropped;
	struct buf	*output;
	struct buf	*errtail;
};

static void
run_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * Spawn argv with stdin, stdout and stderr connected to pipes whose other
 * ends are returned in fds (write, read, read).  Returns the pid or -1.
 */
static pid_t
handler_spawn(const char *path, char **argv, char **envp, int fds[3],
    int *exec_errno)
{
	int in[2], out[2], err[2];
	volatile int child_errno = 0;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) == -1)
		return -1;
	if (pipe2(out, O_CLOEXEC) == -1) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	if (pipe2(err, O_CLOEXEC) == -1) {
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		return -1;
	}
	pid = vfork();
	if (pid == 0) {
		/* The child shares our memory until exec: syscalls only. */
		(void)setsid();
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		proc_child_signals();
		if (dup2(in[0], 0) == -1 || dup2(out[1], 1) == -1 ||
		    dup2(err[1], 2) == -1) {
			child_errno = errno;
			_exit(127);
		}
		(void)syscall(SYS_close_range, 3U, ~0U, 0);
		execve(path, argv, envp);
		child_errno = errno;
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (pid == -1) {
		close(in[1]);
		close(out[0]);
		close(err[0]);
		return -1;
	}
	*exec_errno = child_errno;
	fds[0] = in[1];
	fds[1] = out[0];
	fds[2] = err[0];
	return pid;
}

/* Log a complete stderr line, within the per-row budget. */
static void
run_log_line(struct run *r, const char *line, size_t n)
{
	if (r->lines_logged >= HANDLER_LOG_LINES_MAX) {
		r->lines_dropped++;
		return;
	}
	r->lines_logged++;
	log_warnx("stderr: %.*s", (int)n, line);
}

static void
run_stderr(struct run *r, const char *data, size_t n)
{
	/* Keep the tail for :error, trimmed in bulk to stay cheap. */
	buf_append(r->errtail, data, n);
	if (r->errtail->len > 2 * HANDLER_ERROR_MAX) {
		size_t cut = r->errtail->len - HANDLER_ERROR_MAX;
		memmove(r->errtail->data, r->errtail->data + cut,
		    r->errtail->len - cut + 1);
		r->errtail->len -= cut;
	}
	for (size_t i = 0; i < n; i++) {
		if (data[i] == '\n') {
			run_log_line(r, r->errline.data ? r->errline.data : "",
			    r->errline.len);
			buf_reset(&r->errline);
		} else if (r->errline.len >= HANDLER_LOG_LINE_MAX) {
			run_log_line(r, r->errline.data, r->errline.len);
			buf_reset(&r->errline);
			buf_putc(&r->errline, data[i]);
		} else
			buf_putc(&r->errline, data[i]);
	}
}

static void
run_stdout(struct run *r, const char *data, size_t n)
{
	size_t room = HANDLER_OUTPUT_MAX - r->output->len;

	if (n > room) {
		n = room;
		r->output_truncated = true;
	}
	buf_append(r->output, data, n);
}

/* Read what is there on fd; close it at EOF.  Never blocks. */
static void
run_read(struct run *r, int *fd, bool is_stderr)
{
	char chunk[16384];

	for (int i = 0; i < 64 && *fd >= 0; i++) {
		ssize_t n = read(*fd, chunk, sizeof(chunk));
		if (n > 0) {
			if (is_stderr)
				run_stderr(r, chunk, (size_t)n);
			else
				run_stdout(r, chunk, (size_t)n);
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			run_close(fd);
		else
			break;
	}
}

static void
run_write(struct run *r)
{
	while (r->in >= 0 && r->input_left > 0) {
		ssize_t n = write(r->in, r->input, r->input_left);
		if (n > 0) {
			r->input += n;
			r->input_left -= (size_t)n;
		} else if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		else
			break;	/* EPIPE: it did not want its input; fine. */
	}
	run_close(&r->in);
}

static void
run_describe_exit(struct handler_result *res, int status)
{
	if (WIFEXITED(status)) {
		int code = WEXITSTATUS(status);
		res->outcome = code == 0 ? OUTCOME_DONE :
		    code == ROWQ_EXIT_DATAERR ? OUTCOME_FAILED : OUTCOME_RETRY;
		if (code != 0)
			buf_printf(&res->error, "exit status %d", code);
	} else if (WIFSIGNALED(status)) {
		res->outcome = OUTCOME_RETRY;
		buf_printf(&res->error, "killed by signal %d (%s)",
		    WTERMSIG(status), strsignal(WTERMSIG(status)));
	}
}

/* Append the last line(s) of stderr to the :error message. */
static void
run_error_tail(struct run *r, struct handler_result *res)
{
	const char *t = r->errtail->data;
	size_t n = r->errtail->len;

	while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r'))
		n--;
	if (n == 0)
		return;
	if (n > HANDLER_ERROR_MAX) {
		t += n - HANDLER_ERROR_MAX;
		n = HANDLER_ERROR_MAX;
	}
	buf_puts(&res->error, ": ");
	buf_append(&res->error, t, n);
}

/*
 * Wait for the handler: feed stdin, drain stdout/stderr, and enforce the
 * timeout and the stop deadline.  Returns the wait status, or -1 with
 * res->outcome set when rowq killed it.
 */
static int
run_wait(struct run *r, const struct handler_job *job, struct stopper *st,
    struct handler_result *res, int64_t start)
{
	int64_t deadline = start + job->timeout_ms;
	int kills = 0;	/* 0 none, 1 SIGTERM sent, 2 SIGKILL sent */
	bool timed_out = false, stopped = false;
	siginfo_t si;

	for (;;) {
		struct pollfd p[5];
		int np = 0;

		p[np++] = (struct pollfd){ .fd = r->pidfd, .events = POLLIN };
		p[np++] = (struct pollfd){ .fd = st->fd, .events = POLLIN };
		if (r->out >= 0)
			p[np++] = (struct pollfd){ .fd = r->out, .events = POLLIN };
		if (r->err >= 0)
			p[np++] = (struct pollfd){ .fd = r->err, .events = POLLIN };
		if (r->in >= 0)
			p[np++] = (struct pollfd){ .fd = r->in, .events = POLLOUT };

		int64_t limit = deadline;
		if (st->stop && st->stop_deadline_ms < limit && kills == 0)
			limit = st->stop_deadline_ms;
		int64_t left = limit - now_ms();
		if (left <= 0) {
			if (kills == 0 && limit == deadline && !st->stop)
				timed_out = true;
			else if (kills == 0)
				stopped = true;
			/* A stop or a second deadline does not wait for TERM. */
			if (kills == 0 && timed_out) {
				kill(-r->pid, SIGTERM);
				kills = 1;
				deadline = now_ms() + HANDLER_KILL_GRACE_MS;
			} else {
				kill(-r->pid, SIGKILL);
				kills = 2;
				deadline = now_ms() + 60000;
			}
			continue;
		}
		if (poll(p, (nfds_t)np, (int)(left > 1000 ? 1000 : left)) < 0 &&
		    errno != EINTR)
			fatal("poll");
		stopper_read(st);
		if (st->abort && kills < 2) {
			stopped = true;
			kill(-r->pid, SIGKILL);
			kills = 2;
		}
		if (r->in >= 0)
			run_write(r);
		run_read(r, &r->out, false);
		run_read(r, &r->err, true);
		/* Exited?  Peek without reaping, so its pgid cannot be reused. */
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOHANG | WNOWAIT)
		    == 0 && si.si_pid == r->pid)
			break;
	}
	/* What it wrote just before exiting, then the rest of its group. */
	run_read(r, &r->out, false);
	run_read(r, &r->err, true);
	kill(-r->pid, SIGKILL);

	int status = 0;
	while (waitpid(r->pid, &status, 0) == -1 && errno == EINTR)
		;
	if (stopped) {
		res->outcome = OUTCOME_ABORTED;
		buf_printf(&res->error, "stopped: rowq is shutting down");
		return -1;
	}
	if (timed_out) {
		char d[32];
		duration_format(job->timeout_ms, d, sizeof(d));
		res->outcome = OUTCOME_RETRY;
		buf_printf(&res->error, "timed out after %s", d);
		return -1;
	}
	return status;
}

int
handler_exec(const char *path, const struct handler_job *job,
    struct stopper *st, struct handler_result *res)
{
	struct run r = { .in = -1, .out = -1, .err = -1, .pidfd = -1 };
	int fds[3], exec_errno = 0, status;
	int64_t start = now_ms();

	buf_reset(&res->output);
	buf_reset(&res->error);
	res->outcome = OUTCOME_RETRY;
	r.pid = handler_spawn(path, job->argv, job->envp, fds, &exec_errno);
	if (r.pid == -1) {
		buf_printf(&res->error, "cannot start %s: %s", path,
		    strerror(errno));
		return -1;
	}
	r.in = fds[0];
	r.out = fds[1];
	r.err = fds[2];
	r.input = job->input;
	r.input_left = job->input_len;
	r.output = &res->output;
	r.errtail = &res->error;
	r.pidfd = (int)syscall(SYS_pidfd_open, r.pid, 0);
	if (r.pidfd == -1)
		fatal("pidfd_open");
	(void)fcntl(r.pidfd, F_SETFD, FD_CLOEXEC);
	handler_nonblock(r.in);
	handler_nonblock(r.out);
	handler_nonblock(r.err);

	/* The stderr tail is collected in res->error, then turned into a message. */
	struct buf tail = { 0 };
	r.errtail = &tail;
	status = run_wait(&r, job, st, res, start);
	if (r.errline.len > 0)
		run_log_line(&r, r.errline.data, r.errline.len);
	if (r.lines_dropped > 0)
		log_warnx("stderr: %zu more lines not logged", r.lines_dropped);
	if (r.output_truncated)
		log_warnx("stdout over %d bytes: the rest was discarded",
		    HANDLER_OUTPUT_MAX);
	if (status != -1) {
		if (exec_errno != 0) {
			res->outcome = OUTCOME_RETRY;
			buf_printf(&res->error, "cannot execute %s: %s", path,
			    strerror(exec_errno));
		} else
			run_describe_exit(res, status);
	}
	if (res->outcome != OUTCOME_DONE && res->outcome != OUTCOME_ABORTED)
		run_error_tail(&r, res);
	buf_free(&tail);
	buf_free(&r.errline);
	run_close(&r.in);
	run_close(&r.out);
	run_close(&r.err);
	close(r.pidfd);
	res->duration_ms = now_ms() - start;
	return 0;
}
