/*
 * handler.h: a handler process, what it is given and what it answers,
 * for the handler's files (handler.c, handler_*.c) and the worker's
 * (worker.h).  The few that others need are in rowq.h.
 */
#ifndef HANDLER_H
#define HANDLER_H

#include "rowq.h"

/* ---- handler_child.c: a handler process and its pipes ---- */

/*
 * stderr of a handler: logged line by line (bounded in line length and in
 * lines per row) with the row's key, and its tail kept for :error.
 */
struct errsink {
	struct buf	 line;
	struct buf	 tail;
	int		 logged;
	size_t		 dropped;
};

struct child {
	pid_t		 pid;		/* 0: not running */
	int		 pidfd;
	int		 in, out, err;	/* our ends, non-blocking; -1 closed */
	int		 exec_errno;	/* exec failed in the child */
	int64_t		 started_ms;
	struct errsink	 errs;
};

int	 child_spawn(struct child *, const char *path, char **argv,
	    char **envp);
/* Without a pidfd, how often a wait looks whether the child exited. */
#define CHILD_EXIT_POLL_MS	5

bool	 child_exited(const struct child *);
void	 child_kill(const struct child *, int sig);
int	 child_reap(struct child *);	/* kills the group; wait status */
void	 child_read_stderr(struct child *);
void	 errsink_row_done(struct errsink *);	/* flush, reset counters */
void	 errsink_error_tail(const struct errsink *, struct buf *);
void	 errsink_free(struct errsink *);

/* ---- handler_identity.c: handlers under their own user ---- */

extern const struct handler_user *child_user;
int	 identity_switch(const struct handler_user *, const char **step);
void	 identity_worker_init(const struct handler_user *);

/* ---- handler.c: exec handlers, argv and environment ---- */

/* A handler's own :reason ("reason=NAME"), at most this long. */
#define REASON_NAME_MAX		32

enum outcome {
	OUTCOME_DONE,		/* exit 0, "ok": run done */
	OUTCOME_RETRY,		/* a failed try: retry, or failed at the last */
	OUTCOME_FAILED,		/* exit 65, "fail": failed at once */
	OUTCOME_ABORTED,	/* stopping, or the lease is lost: no verdict */
	OUTCOME_THROTTLED,	/* "throttle N": back untouched, the queue waits */
};

struct handler_result {
	enum outcome	 outcome;
	struct buf	 output;	/* stdout (exec) or the answer's text */
	struct buf	 error;		/* the :error message */
	int64_t		 duration_ms;
	int64_t		 retry_in_ms;	/* the handler's "retry-in"; -1: none */
	bool		 timed_out;	/* killed for its timeout */
	bool		 killed;	/* it died of a signal */
	int		 exit_status;	/* exec: its exit status; -1: none */
	bool		 stop_signalled; /* it was sent its stop_signal */
	int64_t		 throttle_ms;	/* OUTCOME_THROTTLED: for how long */
	char		 reason[REASON_NAME_MAX + 1]; /* its own; "" none */
};

/*
 * Called every tick_ms while a handler runs (lease renewal).  A non-zero
 * return stops the handler: its result is OUTCOME_ABORTED with the error
 * the callback put in the result.
 */
typedef int	(*handler_tick_fn)(void *ctx, struct handler_result *);

/* One run of a handler: the row, and the settings it runs with. */
struct handler_job {
	const struct handler_settings *set; /* the queue's (on_failed's own) */
	char	       **argv;		/* exec: after {column} substitution */
	char	       **envp;
	const char	*input;		/* the row as JSON and a newline */
	size_t		 input_len;
	handler_tick_fn	 tick;
	void		*tick_ctx;
	int64_t		 tick_ms;
};

void	 handler_exec(const char *path, const struct handler_job *,
	    struct stopper *, struct handler_result *);
char   **handler_base_env(const struct config *, const struct queue *);
char   **handler_env(char **base, const char *const *extra);
void	 handler_env_free(char **env);
char   **handler_argv(char *const *tmpl, const struct column *,
	    size_t ncols, const struct row *);
void	 handler_argv_free(char **argv);
void	 handler_result_free(struct handler_result *);

/*
 * The loop both kinds of handler wait in: until done(ctx) says the answer
 * is complete, the child exits, the timeout or the stop deadline passes,
 * or tick asks to stop.  Returns how it ended.
 */
enum wait_end {
	WAIT_ANSWERED,
	WAIT_EXITED,
	WAIT_TIMEOUT,
	WAIT_STOPPED,
	WAIT_TICK,
};

struct wait_io {
	struct child	*child;
	const char	*input;		/* left to write to stdin */
	size_t		 input_left;
	bool		 close_stdin;	/* exec: close stdin once written */
	void		(*on_stdout)(void *ctx, const char *, size_t);
	bool		(*answered)(void *ctx);
	void		*ctx;
};

enum wait_end handler_wait(struct wait_io *, const struct handler_job *,
	    struct stopper *, struct handler_result *);

/* ---- handler_end.c: the stop signal, and a wait's end as an outcome ---- */

void	 handler_result_begin(struct handler_result *);
int64_t	 handler_stop_due(const struct handler_settings *,
	    const struct stopper *);
void	 handler_stop_tell(const struct handler_job *, const struct stopper *,
	    const struct child *, struct handler_result *, int64_t now);
void	 handler_outcome(const struct handler_job *, enum handler_kind,
	    enum wait_end, int status, struct handler_result *);

/* ---- handler_retry_in.c: the handler picks its retry delay ---- */

#define RETRY_IN_EXIT		75	/* EX_TEMPFAIL: exec's "retry-in" line counts */
#define RETRY_IN_WORD		"retry-in"
#define THROTTLE_WORD		"throttle"	/* a pipe handler's answer */
#define THROTTLE_IN_WORD	"throttle-in"	/* an exec handler's last line */
#define HANDLER_WORD_LINE_MAX	1024		/* a throttle reason kept, at most */

int	 handler_word_parse(const char *line, const char *word, int64_t *ms,
	    const char **message);
int	 retry_in_parse(const char *line, int64_t *ms, const char **message);
int	 handler_stderr_word(const struct errsink *, const char *word,
	    int64_t *ms, char *message, size_t len);

/* ---- reason.c: :reason, why a row's try did not succeed ---- */

#define REASON_PERMANENT	"permanent"	/* the handler said never */
#define REASON_EXHAUSTED	"exhausted"	/* no try left */
#define REASON_TIMEOUT		"timeout"	/* ran past timeout: */
#define REASON_ERROR		"error"		/* any other failed try */
#define REASON_LEASE_LOST	"lease_lost"	/* its last try's lease ran out */
#define REASON_REFUSED		"refused"	/* the server refused its statement */

/* Which finishing statement runs, and why. */
enum reason_step {
	REASON_STEP_DONE,
	REASON_STEP_FAILED_NEVER,	/* the handler said never */
	REASON_STEP_FAILED_LAST,	/* a failed try with none left */
	REASON_STEP_RETRY,
};

bool	 reason_is_builtin(const char *name, size_t len);
int	 reason_parse(const char *message, char *name);
int	 reason_from_stderr(const struct errsink *, char *name);
const char *reason_of(enum reason_step, const struct handler_result *);

/* ---- handler_pipe.c: one long-running handler per worker ---- */

struct pipe_handler {
	const char	*path;
	char	       **argv;
	char	       **envp;
	struct child	 child;
	struct buf	 answer;	/* stdout read so far */
	int		 quick_deaths;	/* for the restart delay */
	int64_t		 next_start_ms;
	uint64_t	 restarts;
	const char	*queue;
	/* stderr between rows: since when, and what the window has used */
	int64_t		 chatter_since_ms;
	int		 chatter_logged;
	size_t		 chatter_dropped;
};

int	 pipe_ensure(struct pipe_handler *, struct stopper *);
bool	 pipe_ready(struct pipe_handler *);
void	 pipe_handle(struct pipe_handler *, const struct handler_job *,
	    struct stopper *, struct handler_result *);
void	 pipe_stop(struct pipe_handler *, int64_t grace_ms);
void	 pipe_drain(struct pipe_handler *);

#endif /* HANDLER_H */
