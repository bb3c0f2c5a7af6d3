/*
 * console_bulk.c: a requeue or discard of every failed row that matches
 * (console_failed.c's "every one of the rows"), run by a child of the
 * console with a connection of its own.  Run in the console's one
 * thread it stopped every page for its whole length (chunks of 1000 keys
 * and a pause between, seconds for tens of thousands of rows); here the
 * console serves on meanwhile.  The operator's request waits, suspended
 * (console_http_suspend), for the child's count, and is answered as it
 * was when the action ran in place, or after CONSOLE_BULK_WAIT_MS with a
 * page that says the action goes on.  The action is logged, and kept for
 * the Actions page, when the child is done.
 *
 * One runs at a time: a second is refused (409) meanwhile.  The child
 * dies with the console (PR_SET_PDEATHSIG): its chunk's transaction is
 * rolled back by the server, the chunks before it stay.
 */
#include "rowq.h"
#include "console.h"
#include "db.h"
#include "claim.h"
#include "commands.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The operator's request waits this long for the count, at most. */
#define CONSOLE_BULK_WAIT_MS	30000

/* What the child says when it is done, in one write. */
struct console_bulk_result {
	unsigned long long	 done;
	unsigned long long	 missed;
	int			 rc;	/* an exit status: ROWQ_EXIT_OK ... */
};

struct console_bulk {
	pid_t			 pid;
	int			 fd;		/* the child's pipe */
	const struct failed_action *action;
	char			 queue[HISTORY_NAME_MAX + 1];
	char			*error;		/* the filter; NULL: none */
	struct buf		 back;		/* the failed page, for did= */
	/* Who asked, for the log. */
	char			 user[CONSOLE_NAME_MAX + 1];
	enum console_role	 role;
	char			 client[64];
	/* The request that waits for the count; NULL: answered. */
	void			*conn;
	void			*upload;
	int64_t			 answer_by_ms;
};

/* The child: the action on every row that matches, its count on fd. */
static _Noreturn void
console_bulk_child(const struct config *cfg, const struct queue *q,
    const struct failed_action *a, const char *error, int fd)
{
	struct console_bulk_result res = { .rc = ROWQ_EXIT_FAILURE };
	struct failed_ctx what = { .cfg = (struct config *)cfg, .q = q };
	struct requeue_run run;
	enum db_status st;
	ssize_t w;

	/* Nothing of the console's: its listener, clients, connection. */
	proc_close_inherited_but(fd);
	fd = PROC_KEPT_FD;
	proc_child_signals();
	signal(SIGPIPE, SIG_IGN);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	log_procinit("console: %s", a->name);
	what.db = db_open(&cfg->db, &st);
	if (st != DB_OK)
		log_error("cannot connect: %s", db_error(what.db));
	else {
		res.rc = requeue_begin(&run, &what, a);
		run.quiet = true;
		if (res.rc == ROWQ_EXIT_OK)
			res.rc = requeue_all(&run, error);
		requeue_end(&run);
		(void)db_rollback(what.db);
		res.done = run.done;
		res.missed = run.missed;
	}
	do
		w = write(fd, &res, sizeof(res));
	while (w == -1 && errno == EINTR);
	_exit(0);
}

/*
 * Start the action a on every failed row of q whose error holds error
 * (NULL: every one), back being the failed page to send the operator to;
 * r's request waits for its count.  false, with rep filled, when it
 * cannot start: one is running (409), or no pipe or fork (503).
 */
bool
console_bulk_start(struct console_request *r, struct console_reply *rep,
    const struct queue *q, const struct failed_action *a, const char *error,
    const char *back)
{
	struct console *c = r->c;
	struct console_bulk *b;
	int p[2];
	pid_t pid;

	if (c->bulk != NULL) {
		console_reply_text(rep, 409, "a requeue or discard of every "
		    "row is running: wait for it, then try again");
		return false;
	}
	if (pipe2(p, O_CLOEXEC) == -1) {
		log_warn("pipe for a %s", a->name);
		console_reply_text(rep, 503, "no pipe for the action");
		return false;
	}
	if ((pid = fork()) == -1) {
		log_warn("fork for a %s", a->name);
		close(p[0]);
		close(p[1]);
		console_reply_text(rep, 503, "no process for the action");
		return false;
	}
	if (pid == 0)
		console_bulk_child(c->cfg, q, a, error, p[1]);
	close(p[1]);
	b = xcalloc(1, sizeof(*b));
	b->pid = pid;
	b->fd = p[0];
	b->action = a;
	snprintf(b->queue, sizeof(b->queue), "%s", q->name);
	b->error = error != NULL ? xstrdup(error) : NULL;
	buf_puts(&b->back, back);
	snprintf(b->user, sizeof(b->user), "%s", r->user);
	b->role = r->role;
	snprintf(b->client, sizeof(b->client), "%s", r->client);
	b->conn = r->conn;
	b->upload = r->upload;
	b->answer_by_ms = now_ms() + CONSOLE_BULK_WAIT_MS;
	console_http_suspend(r);
	rep->suspended = true;
	c->bulk = b;
	return true;
}

/* The child's pipe, for the console's poll; -1: none running. */
int
console_bulk_fd(const struct console *c)
{
	return c->bulk != NULL ? c->bulk->fd : -1;
}

/* The waiting request answered: sent to the failed page, with did=. */
static void
console_bulk_answer(struct console_bulk *b, const char *did,
    unsigned long long n)
{
	struct buf to = { 0 };

	if (b->conn == NULL)
		return;
	buf_printf(&to, "%s%sdid=%s&n=%llu", b->back.data,
	    strchr(b->back.data, '?') ? "&" : "?", did, n);
	console_http_resume(b->conn, b->upload, to.data);
	b->conn = b->upload = NULL;
	buf_free(&to);
}

/*
 * The child is done (its pipe readable, or closed when it died): the
 * action logged with its count, the waiting request answered, the child
 * reaped.
 */
void
console_bulk_handle(struct console *c)
{
	struct console_bulk *b = c->bulk;
	struct console_bulk_result res = { .rc = ROWQ_EXIT_FAILURE };
	struct console_request r = { .c = c, .role = b->role };
	struct buf detail = { 0 };
	ssize_t n;

	do
		n = read(b->fd, &res, sizeof(res));
	while (n == -1 && errno == EINTR);
	if (n != (ssize_t)sizeof(res))
		res = (struct console_bulk_result){ .rc = ROWQ_EXIT_FAILURE };
	snprintf(r.user, sizeof(r.user), "%s", b->user);
	snprintf(r.client, sizeof(r.client), "%s", b->client);
	buf_printf(&detail, "all%s%s", b->error ? " whose error contains " :
	    "", b->error ? b->error : "");
	if (res.missed > 0)
		buf_printf(&detail, "; %llu matched no failed row", res.missed);
	if (res.rc != ROWQ_EXIT_OK)
		buf_puts(&detail, "; stopped by an error (logged)");
	console_log_action(&r, b->action->done, b->queue, (long long)res.done,
	    detail.data);
	console_view_stale(c);
	console_bulk_answer(b, b->action->done, res.done);
	close(b->fd);
	while (waitpid(b->pid, NULL, 0) == -1 && errno == EINTR)
		;
	buf_free(&detail);
	buf_free(&b->back);
	free(b->error);
	free(b);
	c->bulk = NULL;
}

/*
 * A request that has waited CONSOLE_BULK_WAIT_MS is answered: the action
 * goes on (did=running); *next lowered to when one is due.
 */
void
console_bulk_timers(struct console *c, int64_t now, int64_t *next)
{
	struct console_bulk *b = c->bulk;

	if (b == NULL || b->conn == NULL)
		return;
	if (now >= b->answer_by_ms)
		console_bulk_answer(b, "running", 0);
	else if (b->answer_by_ms < *next)
		*next = b->answer_by_ms;
}
