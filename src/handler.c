/*
 * handler.c: running a handler program for a row.
 *
 * As a mail server runs a delivery: pipes, vfork, and in the child setsid,
 * default signals, dup2 onto 0-2, close the rest, exec; never a shell.  The
 * parent feeds the row to stdin and collects stdout and stderr, bounded,
 * while it waits with a deadline.  The handler is a process group of its
 * own, so that a timeout kills everything it started.
 */
#include "handler.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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

/* Names handlers get from rowq's environment without asking for them. */
static bool
handler_env_default(const char *entry)
{
	static const char *const names[] = {
		"PATH=", "LANG=", "TZ=", "HOME=", "USER=", "LOGNAME=", NULL,
	};

	if (strncmp(entry, "LC_", 3) == 0)
		return true;
	for (size_t i = 0; names[i] != NULL; i++)
		if (strncmp(entry, names[i], strlen(names[i])) == 0)
			return true;
	return false;
}

/* Set NAME=VALUE in env (room for it made by the caller), replacing. */
static void
handler_env_put(char **env, size_t *n, const char *name, const char *value)
{
	size_t len = strlen(name);
	struct buf b = { 0 };

	buf_printf(&b, "%s=%s", name, value);
	for (size_t i = 0; i < *n; i++)
		if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') {
			free(env[i]);
			env[i] = buf_steal(&b);
			return;
		}
	env[(*n)++] = buf_steal(&b);
}

static void
handler_env_list(char **env, size_t *n, const struct env_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		const char *v = l->vars[i].value != NULL ? l->vars[i].value :
		    getenv(l->vars[i].name);
		if (v != NULL)
			handler_env_put(env, n, l->vars[i].name, v);
	}
}

/*
 * The environment handlers start from, built from an allowlist rather
 * than inherited: PATH, LANG, LC_*, TZ, HOME, USER and LOGNAME from
 * rowq's own (the last three those of user:, when the queue has one),
 * then what the top level's env: and the queue's pass or set, the
 * queue's last.  Nothing else of rowq's reaches a handler: not
 * CREDENTIALS_DIRECTORY, which leads to the database password, nor
 * NOTIFY_SOCKET.  The ROWQ_ variables are added per row by handler_env.
 */
char **
handler_base_env(const struct config *cfg, const struct queue *q)
{
	const struct handler_user *u = config_handler_user(cfg, q);
	size_t n = 0, k = 0;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = xcalloc(n + cfg->env.n + q->env.n + 5, sizeof(*env));
	for (size_t i = 0; i < n; i++)
		if (handler_env_default(environ[i]))
			env[k++] = xstrdup(environ[i]);
	if (getenv("PATH") == NULL)
		handler_env_put(env, &k, "PATH", "/usr/local/bin:/usr/bin:/bin");
	if (u != NULL) {
		handler_env_put(env, &k, "HOME", u->home);
		handler_env_put(env, &k, "USER", u->name);
		handler_env_put(env, &k, "LOGNAME", u->name);
	}
	handler_env_list(env, &k, &cfg->env);
	handler_env_list(env, &k, &q->env);
	return env;
}

/* The base environment plus NAME=VALUE strings for this handler. */
char **
handler_env(char **base, const char *const *extra)
{
	size_t n = 0, k = 0;
	char **env;

	while (base[n] != NULL)
		n++;
	while (extra[k] != NULL)
		k++;
	env = xcalloc(n + k + 1, sizeof(*env));
	for (size_t i = 0; i < n; i++)
		env[i] = xstrdup(base[i]);
	for (size_t i = 0; i < k; i++)
		env[n + i] = xstrdup(extra[i]);
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

/* Write what stdin still owes; close it when done if asked to. */
static void
wait_write(struct wait_io *io)
{
	struct child *c = io->child;

	while (c->in >= 0 && io->input_left > 0) {
		ssize_t n = write(c->in, io->input, io->input_left);
		if (n > 0) {
			io->input += n;
			io->input_left -= (size_t)n;
		} else if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		else {
			/* EPIPE: it closed its stdin; see how it ends. */
			close(c->in);
			c->in = -1;
		}
	}
	if (c->in >= 0 && io->input_left == 0 && io->close_stdin) {
		close(c->in);
		c->in = -1;
	}
}

/* Read what stdout has now; close it at EOF.  Never blocks. */
static void
wait_read_stdout(struct wait_io *io)
{
	struct child *c = io->child;
	char chunk[16384];

	for (int i = 0; i < 64 && c->out >= 0; i++) {
		ssize_t n = read(c->out, chunk, sizeof(chunk));
		if (n > 0) {
			io->on_stdout(io->ctx, chunk, (size_t)n);
			if ((size_t)n < sizeof(chunk))
				return;	/* drained: spare a read for EAGAIN */
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			close(c->out);
			c->out = -1;
		} else
			return;
	}
}

/*
 * A pipe answer counts once the whole row is written.  A handler may
 * answer after reading only the start of a large row: the answer is that
 * row's, and the rest of its line must still go, or the handler would
 * read it as the start of the next row, and the next row's answer would
 * be lost.  A handler that closed its stdin gets no more of it.
 */
static bool
wait_answered(const struct wait_io *io)
{
	return io->answered && io->answered(io->ctx) &&
	    (io->input_left == 0 || io->child->in < 0);
}

/* The handler exited: read what it wrote just before it went. */
static enum wait_end
wait_gone(struct wait_io *io)
{
	wait_read_stdout(io);
	child_read_stderr(io->child);
	if (io->answered && io->answered(io->ctx))
		return WAIT_ANSWERED;
	return WAIT_EXITED;
}

/*
 * A deadline passed: before giving up on the handler, one last look at
 * what it did while the worker was not polling (a slow lease renewal, a
 * busy machine).  An answer already written or an exit already made is
 * its result; otherwise `end` is.
 */
static enum wait_end
wait_late_look(struct wait_io *io, enum wait_end end)
{
	wait_read_stdout(io);
	if (wait_answered(io))
		return WAIT_ANSWERED;
	if (child_exited(io->child))
		return wait_gone(io);
	return end;
}

/*
 * Wait for a handler: feed its stdin, drain stdout and stderr, call the
 * tick, and watch the timeout, the stop deadline and the child's exit.
 * Never blocks for longer than a second between looks at the clock.  The
 * row is written before the first poll, and only the descriptors poll
 * says are ready are read: a pipe handler's row costs a handful of
 * system calls, not a dozen.
 */
enum wait_end
handler_wait(struct wait_io *io, const struct handler_job *job,
    struct stopper *st, struct handler_result *res)
{
	struct child *c = io->child;
	int64_t deadline = now_ms() + job->set->timeout_ms;
	int64_t next_tick = job->tick ? now_ms() + job->tick_ms : INT64_MAX;
	bool exited = false;

	wait_write(io);
	for (;;) {
		int64_t now = now_ms();

		/*
		 * What the handler did comes first: an answer or an exit
		 * is on time even when the worker sees it after a deadline.
		 */
		if (wait_answered(io))
			return WAIT_ANSWERED;
		if (exited || (c->pidfd < 0 && child_exited(c)))
			return wait_gone(io);
		/* Given up only when the supervisor says so (SIGQUIT). */
		if (st->abort)
			return wait_late_look(io, WAIT_STOPPED);
		handler_stop_tell(job, st, c, res, now);
		if (now >= deadline)
			return wait_late_look(io, WAIT_TIMEOUT);
		if (now >= next_tick) {
			/* A lost lease: the result could not be recorded. */
			if (job->tick(job->tick_ctx, res) != 0)
				return WAIT_TICK;
			next_tick = now_ms() + job->tick_ms;
			continue;	/* the tick took time: look again */
		}

		struct pollfd p[5];
		int ipid = -1, iout = -1, ierr = -1, iin = -1;
		nfds_t np = 0;
		if (c->pidfd >= 0) {
			ipid = (int)np;
			p[np++] = (struct pollfd){ .fd = c->pidfd, .events = POLLIN };
		}
		int isig = (int)np;
		p[np++] = (struct pollfd){ .fd = st->fd, .events = POLLIN };
		if (c->out >= 0) {
			iout = (int)np;
			p[np++] = (struct pollfd){ .fd = c->out, .events = POLLIN };
		}
		if (c->err >= 0) {
			ierr = (int)np;
			p[np++] = (struct pollfd){ .fd = c->err, .events = POLLIN };
		}
		if (c->in >= 0 && io->input_left > 0) {
			iin = (int)np;
			p[np++] = (struct pollfd){ .fd = c->in, .events = POLLOUT };
		}
		int64_t limit = deadline < next_tick ? deadline : next_tick;
		if (!res->stop_signalled &&
		    handler_stop_due(job->set, st) < limit)
			limit = handler_stop_due(job->set, st);
		int64_t left = limit - now;
		if (left > (c->pidfd >= 0 ? 1000 : CHILD_EXIT_POLL_MS))
			left = c->pidfd >= 0 ? 1000 : CHILD_EXIT_POLL_MS;
		int r = poll(p, np, (int)(left < 0 ? 0 : left));
		if (r == -1 && errno != EINTR)
			fatal("poll");
		if (r <= 0)
			continue;
		if (p[isig].revents)
			stopper_read(st);
		if (iin >= 0 && p[iin].revents)
			wait_write(io);
		if (iout >= 0 && p[iout].revents)
			wait_read_stdout(io);
		if (ierr >= 0 && p[ierr].revents)
			child_read_stderr(c);
		if (ipid >= 0 && p[ipid].revents)
			exited = true;
	}
}

struct exec_ctx {
	struct buf	*output;
	bool		 truncated;
};

static void
exec_stdout(void *ctx, const char *data, size_t n)
{
	struct exec_ctx *x = ctx;
	size_t room = HANDLER_OUTPUT_MAX - x->output->len;

	if (n > room) {
		n = room;
		x->truncated = true;
	}
	buf_append(x->output, data, n);
}

/* SIGTERM to the group, and a little time to go before the SIGKILL. */
static void
exec_terminate(struct child *c)
{
	int64_t end = now_ms() + HANDLER_KILL_GRACE_MS;

	child_kill(c, SIGTERM);
	while (!child_exited(c) && now_ms() < end) {
		struct pollfd p = { .fd = c->pidfd, .events = POLLIN };
		(void)poll(&p, 1, 100);
		child_read_stderr(c);
	}
}

/*
 * A failed try whose last stderr line is "retry-in N": with exit 75 the
 * handler picks the next try's time; with another exit the line is only
 * text, and the log says why it was not heeded.
 */
static void
exec_retry_in(const struct child *c, int status, struct handler_result *res)
{
	bool tempfail = WIFEXITED(status) &&
	    WEXITSTATUS(status) == RETRY_IN_EXIT;
	char msg[HANDLER_WORD_LINE_MAX];
	int64_t ms;

	if (c->exec_errno != 0)
		return;
	if (handler_stderr_word(&c->errs, THROTTLE_IN_WORD, &ms, msg,
	    sizeof(msg)) == 0) {
		if (!tempfail) {
			log_warnx("the handler's last stderr line asks to "
			    "throttle, but only exit status %d asks for it: a "
			    "failed try", RETRY_IN_EXIT);
			return;
		}
		res->outcome = OUTCOME_THROTTLED;
		res->throttle_ms = ms;
		buf_reset(&res->error);
		buf_puts(&res->error, msg[0] ? msg : "throttle-in");
		return;
	}
	if (handler_stderr_word(&c->errs, RETRY_IN_WORD, &ms, NULL, 0) == -1)
		return;
	if (tempfail)
		res->retry_in_ms = ms;
	else
		log_warnx("the handler's last stderr line asks for retry-in, "
		    "but only exit status %d asks for it; the backoff's delay "
		    "is used", RETRY_IN_EXIT);
}

/*
 * Run one exec handler for a row, to the end.  The result says what to do
 * with the row; nothing here touches the database.
 */
void
handler_exec(const char *path, const struct handler_job *job,
    struct stopper *st, struct handler_result *res)
{
	struct child c = { .in = -1, .out = -1, .err = -1, .pidfd = -1 };
	struct exec_ctx x = { .output = &res->output };
	struct wait_io io = {
		.child = &c, .input = job->input, .input_left = job->input_len,
		.close_stdin = true, .on_stdout = exec_stdout, .ctx = &x,
	};
	int64_t start = now_ms();
	enum wait_end end;
	int status;

	handler_result_begin(res);
	if (child_spawn(&c, path, job->argv, job->envp) == -1) {
		buf_printf(&res->error, "cannot start %s: %s", path,
		    strerror(errno));
		return;
	}
	end = handler_wait(&io, job, st, res);
	if (end == WAIT_TIMEOUT)
		exec_terminate(&c);
	status = child_reap(&c);
	if (end == WAIT_EXITED && c.exec_errno != 0)
		buf_printf(&res->error, "cannot execute %s: %s", path,
		    strerror(c.exec_errno));
	else
		handler_outcome(job, HANDLER_EXEC, end, status, res);
	/* As a shell's $(...) does: "name\n" is the name. */
	while (res->output.len > 0 &&
	    (res->output.data[res->output.len - 1] == '\n' ||
	    res->output.data[res->output.len - 1] == '\r'))
		res->output.data[--res->output.len] = '\0';
	if (res->outcome == OUTCOME_RETRY || res->outcome == OUTCOME_FAILED)
		errsink_error_tail(&c.errs, &res->error);
	if (end == WAIT_EXITED && res->outcome == OUTCOME_RETRY)
		exec_retry_in(&c, status, res);
	if (end == WAIT_EXITED && c.exec_errno == 0 &&
	    (res->outcome == OUTCOME_RETRY || res->outcome == OUTCOME_FAILED))
		(void)reason_from_stderr(&c.errs, res->reason);
	errsink_row_done(&c.errs);
	errsink_free(&c.errs);
	if (x.truncated)
		log_warnx("stdout over %d bytes: the rest was discarded",
		    HANDLER_OUTPUT_MAX);
	res->duration_ms = now_ms() - start;
}
