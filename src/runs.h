/*
 * runs.h: the run log (runs:) --- its table, its rows as text, its prune
 * --- for the workers that write it (worker_runs.c), the pruner, and
 * `rowq runs` and `rowq show`.
 */
#ifndef ROWQ_RUNS_H
#define ROWQ_RUNS_H

#include "rowq.h"
#include "db.h"

/* ---- runs.c: the run log's table, its rows as text, its prune ---- */

#define RUNS_KEY_MAX		1024	/* bytes of a key kept */
#define RUNS_KEY_MAX_S		"1024"
#define RUNS_ERROR_MAX		512	/* bytes of stderr or :error kept */
#define RUNS_ERROR_MAX_S	"512"

/* One try of a row, as the run log keeps it. */
struct run_rec {
	const char	*queue;
	const char	*key;
	size_t		 key_len;
	int		 attempt;
	const char	*outcome;	/* done, retry, failed */
	const char	*reason;	/* why it failed or retried; "" */
	int		 exit_status;	/* exec's; -1: none (pipe, a signal) */
	int64_t		 started_us;	/* wall clock, since the epoch */
	int64_t		 finished_us;
	int64_t		 duration_ms;	/* the handler's */
	const char	*host;
	int		 worker;	/* its number in the queue */
	long		 pid;
	const char	*error;		/* stderr's tail or :error */
	size_t		 error_len;
	const char	*trace_id;	/* 32 hex digits, or NULL */
	/*
	 * Written behind its `done`, whose effect it cannot know: outcome
	 * and reason as the server finds it, "none" and "no_row" when the
	 * statement before changed no row (ROW_COUNT()).
	 */
	bool		 if_changed;
};

/* runs_held_text's values, and the text they point to. */
#define RUNS_NVALUES		14
#define RUNS_WORD_LEN		72	/* a queue's name, a trace id, ... */
#define RUNS_TIME_LEN		40
struct run_values {
	struct value	 v[RUNS_NVALUES];
	char		 queue[RUNS_WORD_LEN], outcome[RUNS_WORD_LEN];
	char		 reason[RUNS_WORD_LEN], trace[RUNS_WORD_LEN];
	char		 started[RUNS_TIME_LEN], finished[RUNS_TIME_LEN];
};

struct db;
const char *runs_table(const struct queue *);
void	 runs_held_text(struct buf *, const struct queue *);
void	 runs_held_values(struct run_values *, const struct run_rec *);
int	 runs_ensure(struct db *, const struct queue *);
void	 runs_values(struct buf *, const struct run_rec *);
void	 runs_insert_head(struct buf *, const struct queue *);
int	 runs_prune(struct db *, const struct queue *, struct stopper *,
	    unsigned long long *rows, char *err, size_t errlen);

#endif /* ROWQ_RUNS_H */
