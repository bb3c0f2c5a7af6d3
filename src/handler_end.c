/*
 * handler_end.c: how a handler's wait ends, for both kinds of handler.
 *
 * The stop signal: when a stop begins (its deadline told by the
 * supervisor, proc.c), a queue with stop_signal: sends it to the running
 * handler's process group, at once or stop_grace before the deadline, so
 * that a long handler can finish or hand its row back in time.  A pipe
 * handler is told only while it has a row: between rows it waits for its
 * EOF like any other end of its worker.
 *
 * The outcome: one map from how the wait ended (an answer, an exit, the
 * timeout, the stop, the tick) to the row's outcome, used by handler_exec
 * and pipe_handle alike.
 */
#include "handler.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#define HANDLER_STOPPED_TEXT	"stopped: rowq is shutting down"

/* The signals stop_signal: may name, as kill -l names them. */
static const struct {
	const char	*name;
	int		 sig;
} stop_signals[] = {
	{ "TERM", SIGTERM }, { "INT", SIGINT }, { "HUP", SIGHUP },
	{ "QUIT", SIGQUIT }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 },
};

/* A stop signal's number from its name (TERM or SIGTERM); 0 if none. */
int
handler_stop_signal_parse(const char *name)
{
	if (strncmp(name, "SIG", 3) == 0)
		name += 3;
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]);
	    i++)
		if (strcmp(name, stop_signals[i].name) == 0)
			return stop_signals[i].sig;
	return 0;
}

const char *
handler_stop_signal_name(int sig)
{
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]);
	    i++)
		if (stop_signals[i].sig == sig)
			return stop_signals[i].name;
	return "?";
}

/* A result before the handler runs: a failed try until it says more. */
void
handler_result_begin(struct handler_result *res)
{
	buf_reset(&res->output);
	buf_reset(&res->error);
	res->outcome = OUTCOME_RETRY;
	res->retry_in_ms = -1;
	res->timed_out = res->killed = res->stop_signalled = false;
	res->exit_status = -1;
	res->throttle_ms = -1;
	res->duration_ms = 0;
	res->reason[0] = '\0';
}

/*
 * When the handler gets its stop signal: INT64_MAX for never (no
 * stop_signal, no stop yet); the stop's deadline less stop_grace, or at
 * once without stop_grace or without a deadline told.
 */
int64_t
handler_stop_due(const struct handler_settings *h, const struct stopper *st)
{
	if (h->stop_signal == 0 || !st->stop)
		return INT64_MAX;
	if (h->stop_grace_ms == 0 || st->stop_deadline_ms == INT64_MAX)
		return 0;
	return st->stop_deadline_ms - h->stop_grace_ms;
}

/* Send the stop signal to the handler's group once, when it is due. */
void
handler_stop_tell(const struct handler_job *job, const struct stopper *st,
    const struct child *c, struct handler_result *res, int64_t now)
{
	if (res->stop_signalled || now < handler_stop_due(job->set, st))
		return;
	child_kill(c, job->set->stop_signal);
	res->stop_signalled = true;
	log_info("stopping: sent SIG%s to the handler",
	    handler_stop_signal_name(job->set->stop_signal));
}

/*
 * The row's outcome from how the wait ended.  An answer (pipe) is the
 * caller's to read before; an exit is the verdict of an exec handler
 * (0 done, 65 failed, the rest a failed try) and a death for a pipe
 * handler; a handler that died of the stop signal it was sent gave its
 * row back, as one stopped at the deadline does: no verdict, no try.
 */
void
handler_outcome(const struct handler_job *job, enum handler_kind kind,
    enum wait_end end, int status, struct handler_result *res)
{
	char d[32];

	switch (end) {
	case WAIT_ANSWERED:
		return;
	case WAIT_STOPPED:
		res->outcome = OUTCOME_ABORTED;
		buf_puts(&res->error, HANDLER_STOPPED_TEXT);
		return;
	case WAIT_TICK:
		/* The tick wrote why. */
		res->outcome = OUTCOME_ABORTED;
		return;
	case WAIT_TIMEOUT:
		res->outcome = OUTCOME_RETRY;
		duration_format(job->set->timeout_ms, d, sizeof(d));
		buf_printf(&res->error, "timed out after %s", d);
		res->timed_out = true;
		return;
	case WAIT_EXITED:
		break;
	}
	if (res->stop_signalled && WIFSIGNALED(status) &&
	    WTERMSIG(status) == job->set->stop_signal) {
		res->outcome = OUTCOME_ABORTED;
		buf_puts(&res->error, HANDLER_STOPPED_TEXT);
		return;
	}
	res->killed = WIFSIGNALED(status);
	if (WIFEXITED(status) && kind != HANDLER_PIPE)
		res->exit_status = WEXITSTATUS(status);
	if (kind == HANDLER_PIPE) {
		res->outcome = OUTCOME_RETRY;
		buf_puts(&res->error, "pipe handler died: ");
		describe_wait_status(status, &res->error);
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		res->outcome = OUTCOME_DONE;
		return;
	}
	res->outcome = WIFEXITED(status) &&
	    WEXITSTATUS(status) == ROWQ_EXIT_DATAERR ?
	    OUTCOME_FAILED : OUTCOME_RETRY;
	describe_wait_status(status, &res->error);
}
