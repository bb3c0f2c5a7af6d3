/*
 * handler_pipe.c: a long-running handler per worker, fed one row per line.
 *
 * rowq writes the row's JSON object as one line and reads one line back:
 * "ok [output]", "retry [message]", "retry-in N [message]", "throttle N
 * [message]" (handler_retry_in.c)
 * or "fail [message]".  Anything else, a
 * handler that dies, hangs past the timeout or writes a line longer than
 * PIPE_LINE_MAX, costs the row a failed try, and the handler is killed
 * and started afresh, later and later if it keeps failing, so that a
 * handler that cannot start never becomes a fork bomb or a hot loop.
 */
#include "handler.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PIPE_LINE_MAX		(HANDLER_OUTPUT_MAX + 64)
/* A handler that lived this long without trouble is trusted again. */
#define PIPE_TRUST_MS		10000
#define PIPE_RESTART_MIN_MS	1000
#define PIPE_RESTART_MAX_MS	60000
/*
 * stderr written between rows is logged up to HANDLER_LOG_LINES_MAX lines
 * per window of this length, and the lines dropped are counted in a note
 * at the window's end: a handler that chatters megabytes while idle costs
 * the log a hundred lines a minute.
 */
#define PIPE_CHATTER_WINDOW_MS	60000

/* Kill and reap the handler; the next row will need a new one. */
static int
pipe_kill(struct pipe_handler *p, bool counts)
{
	int64_t lived = now_ms() - p->child.started_ms;
	int status = child_reap(&p->child);

	buf_reset(&p->answer);
	if (counts) {
		p->quick_deaths = lived < PIPE_TRUST_MS ? p->quick_deaths + 1 : 1;
		p->next_start_ms = now_ms() + backoff_capped_ms(
		    PIPE_RESTART_MIN_MS, PIPE_RESTART_MAX_MS, p->quick_deaths);
	}
	return status;
}

/*
 * Output nobody asked for: a second line after an answer, or chatter
 * between rows.  Taken as the next row's answer it would finish the wrong
 * row, so it is out of protocol: returns -1 after logging it, with what
 * follows ("restarting it" between rows, "at its stop" after the last).
 */
static int
pipe_unasked(struct pipe_handler *p, const char *then)
{
	char chunk[256];
	ssize_t n = p->child.out >= 0 ? read(p->child.out, chunk,
	    sizeof(chunk)) : 0;
	struct buf what = { 0 };

	if (n <= 0)
		return 0;
	json_string(&what, chunk, (size_t)n);
	log_error("pipe handler wrote %s when no row was waiting for an "
	    "answer: out of protocol (one line per row); %s", what.data,
	    then);
	buf_free(&what);
	return -1;
}

/*
 * Between rows: has the handler exited, or written something?  With a
 * pidfd one poll answers both; this runs before every row.
 */
static bool
pipe_stirred(const struct pipe_handler *p, bool *exited)
{
	struct pollfd fds[2] = {
		{ .fd = p->child.pidfd, .events = POLLIN },
		{ .fd = p->child.out, .events = POLLIN },
	};

	if (p->child.pidfd < 0) {
		*exited = child_exited(&p->child);
		return true;	/* no pidfd: read to see */
	}
	if (poll(fds, 2, 0) <= 0)
		return (*exited = false);
	*exited = fds[0].revents != 0;
	return true;
}

/*
 * The handler runs and wrote nothing out of turn: the next row can go.
 * One that wrote out of turn is killed (and counts as a quick death).
 */
bool
pipe_ready(struct pipe_handler *p)
{
	bool exited;

	if (p->child.pid <= 0)
		return false;
	if (!pipe_stirred(p, &exited))
		return true;
	if (exited)
		return false;
	if (pipe_unasked(p, "restarting it") == 0)
		return true;
	(void)pipe_kill(p, true);
	return false;
}

/*
 * Make sure a handler runs, waiting out its restart delay first.  Returns
 * 0 when one runs, -1 when rowq is stopping.
 */
int
pipe_ensure(struct pipe_handler *p, struct stopper *st)
{
	while (!st->stop) {
		if (pipe_ready(p))
			return 0;
		if (p->child.pid > 0) {
			struct buf why = { 0 };
			int status = pipe_kill(p, true);
			describe_wait_status(status, &why);
			errsink_error_tail(&p->child.errs, &why);
			errsink_row_done(&p->child.errs);
			log_error("pipe handler exited between rows (%s)",
			    why.data);
			buf_free(&why);
		}
		int64_t wait = p->next_start_ms - now_ms();
		if (wait > 0) {
			char d[32];
			duration_format(wait, d, sizeof(d));
			log_warnx("pipe handler failed %d time%s in a row; "
			    "starting it again in %s", p->quick_deaths,
			    p->quick_deaths == 1 ? "" : "s", d);
			if (stopper_sleep(st, wait))
				return -1;
		}
		p->child = (struct child){ .in = -1, .out = -1, .err = -1,
		    .pidfd = -1, .errs = p->child.errs };
		if (child_spawn(&p->child, p->path, p->argv, p->envp) == -1) {
			log_warn("cannot start pipe handler %s", p->path);
			p->quick_deaths++;
			p->next_start_ms = now_ms() + backoff_capped_ms(
			    PIPE_RESTART_MIN_MS, PIPE_RESTART_MAX_MS,
			    p->quick_deaths);
			continue;
		}
		p->restarts++;
		if (p->child.exec_errno != 0) {
			log_error("cannot execute pipe handler %s: %s", p->path,
			    strerror(p->child.exec_errno));
			(void)pipe_kill(p, true);
			continue;
		}
		log_debug("pipe handler started, pid %ld", (long)p->child.pid);
		return 0;
	}
	return -1;
}

static void
pipe_stdout(void *ctx, const char *data, size_t n)
{
	struct pipe_handler *p = ctx;

	/* Past the limit the answer is refused anyway: stop storing it. */
	if (p->answer.len <= PIPE_LINE_MAX)
		buf_append(&p->answer, data, n);
}

static bool
pipe_answered(void *ctx)
{
	struct pipe_handler *p = ctx;

	return p->answer.len > PIPE_LINE_MAX ||
	    memchr(p->answer.data ? p->answer.data : "", '\n',
	    p->answer.len) != NULL;
}

/* "word" or "word text": the text, or NULL if the line is not that word. */
static const char *
pipe_word(const char *line, const char *word)
{
	size_t n = strlen(word);

	if (strncmp(line, word, n) != 0)
		return NULL;
	if (line[n] == '\0')
		return line + n;
	return line[n] == ' ' ? line + n + 1 : NULL;
}

/* Sort the answer line into the result.  Returns -1 if out of protocol. */
static int
pipe_parse(struct pipe_handler *p, struct handler_result *res)
{
	char *nl = memchr(p->answer.data, '\n', p->answer.len);
	const char *text;
	size_t len;
	int r;

	if (nl == NULL || (size_t)(nl - p->answer.data) + 1 != p->answer.len)
		return -1;	/* too long, or more than one line */
	*nl = '\0';
	len = (size_t)(nl - p->answer.data);
	if (len > 0 && p->answer.data[len - 1] == '\r')
		p->answer.data[--len] = '\0';
	if (strlen(p->answer.data) != len)
		return -1;	/* a NUL inside */
	if ((r = handler_word_parse(p->answer.data, THROTTLE_WORD,
	    &res->throttle_ms, &text)) != 1) {
		if (r == -1) {
			res->throttle_ms = -1;
			return -1;
		}
		res->outcome = OUTCOME_THROTTLED;
		buf_puts(&res->error, *text ? text : THROTTLE_WORD);
	} else if ((r = retry_in_parse(p->answer.data, &res->retry_in_ms,
	    &text)) != 1) {
		if (r == -1) {
			res->retry_in_ms = -1;
			return -1;
		}
		res->outcome = OUTCOME_RETRY;
		buf_puts(&res->error, *text ? text : "retry-in");
	} else if ((text = pipe_word(p->answer.data, "ok")) != NULL) {
		res->outcome = OUTCOME_DONE;
		buf_puts(&res->output, text);
	} else if ((text = pipe_word(p->answer.data, "retry")) != NULL) {
		res->outcome = OUTCOME_RETRY;
		buf_puts(&res->error, *text ? text : "retry");
	} else if ((text = pipe_word(p->answer.data, "fail")) != NULL) {
		res->outcome = OUTCOME_FAILED;
		buf_puts(&res->error, *text ? text : "fail");
	} else
		return -1;
	if (res->outcome == OUTCOME_RETRY || res->outcome == OUTCOME_FAILED)
		(void)reason_parse(res->error.data, res->reason);
	return 0;
}

/* Say what was wrong with an answer, without flooding the log. */
static void
pipe_bad_answer(struct pipe_handler *p, struct handler_result *res)
{
	size_t n = p->answer.len;

	if (n > PIPE_LINE_MAX) {
		buf_printf(&res->error, "answer longer than %d bytes",
		    PIPE_LINE_MAX);
		return;
	}
	/* pipe_parse may have turned the newline into a NUL already. */
	if (n > 0 && (p->answer.data[n - 1] == '\n' ||
	    p->answer.data[n - 1] == '\0'))
		n--;
	buf_puts(&res->error, "answer out of protocol: ");
	json_string(&res->error, p->answer.data, n > 200 ? 200 : n);
}

/*
 * A row starts: its stderr is logged within a bound of its own, and its
 * :error tail holds only what it wrote; what the window between rows has
 * used is kept for after the row.
 */
static void
pipe_chatter_pause(struct pipe_handler *p)
{
	struct errsink *e = &p->child.errs;

	p->chatter_logged = e->logged;
	p->chatter_dropped = e->dropped;
	e->logged = 0;
	e->dropped = 0;
	buf_reset(&e->tail);
}

/* The row is done and its lines flushed: back to the window's counts. */
static void
pipe_chatter_resume(struct pipe_handler *p)
{
	p->child.errs.logged = p->chatter_logged;
	p->child.errs.dropped = p->chatter_dropped;
}

void
pipe_handle(struct pipe_handler *p, const struct handler_job *job,
    struct stopper *st, struct handler_result *res)
{
	struct wait_io io = {
		.child = &p->child, .input = job->input,
		.input_left = job->input_len, .on_stdout = pipe_stdout,
		.answered = pipe_answered, .ctx = p,
	};
	int64_t start = now_ms();
	enum wait_end end;
	int status = 0;

	handler_result_begin(res);
	buf_reset(&p->answer);
	if (p->child.pid <= 0) {
		buf_puts(&res->error, "pipe handler is not running");
		return;
	}
	pipe_chatter_pause(p);
	end = handler_wait(&io, job, st, res);
	switch (end) {
	case WAIT_ANSWERED:
		if (pipe_parse(p, res) == 0) {
			p->quick_deaths = 0;	/* it works */
			buf_reset(&p->answer);
			break;
		}
		res->outcome = OUTCOME_RETRY;
		pipe_bad_answer(p, res);
		(void)pipe_kill(p, true);
		break;
	case WAIT_EXITED:
		status = pipe_kill(p, true);
		break;
	case WAIT_TIMEOUT:
		(void)pipe_kill(p, true);
		break;
	case WAIT_STOPPED:
	case WAIT_TICK:
		(void)pipe_kill(p, false);
		break;
	}
	handler_outcome(job, HANDLER_PIPE, end, status, res);
	/* A death or a hang is explained by what it said on stderr. */
	if (end == WAIT_EXITED || end == WAIT_TIMEOUT)
		errsink_error_tail(&p->child.errs, &res->error);
	errsink_row_done(&p->child.errs);
	pipe_chatter_resume(p);
	res->duration_ms = now_ms() - start;
}

/*
 * Log what the handler wrote to stderr while no row was being handled,
 * within the window's bound (PIPE_CHATTER_WINDOW_MS); a window that has
 * passed is closed first, with its note of the lines it dropped.
 */
void
pipe_drain(struct pipe_handler *p)
{
	if (p->child.pid <= 0)
		return;
	if (now_ms() - p->chatter_since_ms >= PIPE_CHATTER_WINDOW_MS) {
		errsink_row_done(&p->child.errs);
		p->chatter_since_ms = now_ms();
	}
	child_read_stderr(&p->child);
}

/*
 * End of the worker: EOF on the handler's stdin is its cue to exit; it
 * gets grace_ms to do so before its group is killed.  An answer it wrote
 * after the last row's (one answer too many, caught nowhere else when no
 * row followed) is said, like one caught between rows.
 */
void
pipe_stop(struct pipe_handler *p, int64_t grace_ms)
{
	int64_t end = now_ms() + grace_ms;

	if (p->child.pid > 0) {
		if (p->child.in >= 0) {
			close(p->child.in);
			p->child.in = -1;
		}
		while (!child_exited(&p->child) && now_ms() < end) {
			struct pollfd pfd = { .fd = p->child.pidfd,
			    .events = POLLIN };
			(void)poll(&pfd, 1, 100);
			child_read_stderr(&p->child);
		}
		if (!child_exited(&p->child))
			log_warnx("pipe handler did not exit within %llds of "
			    "EOF: killed", (long long)grace_ms / 1000);
		(void)pipe_unasked(p, "at its stop");
		(void)child_reap(&p->child);
		errsink_row_done(&p->child.errs);
	}
	errsink_free(&p->child.errs);
	buf_free(&p->answer);
}
