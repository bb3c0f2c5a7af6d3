/*
 * runs.h: the run log (runs:) --- its table, its rows as text, its prune,
 * its read --- for the workers that write it (worker_runs.c), the pruner,
 * `rowq runs` and `rowq show`; and one row's story (row_story.c), for
 * `rowq show` and the console's row page.
 */
#ifndef ROWQ_RUNS_H
#define ROWQ_RUNS_H

#include "rowq.h"
#include "db.h"
#include "commands.h"

/* ---- runs.c: the run log's table, its rows as text, its prune ---- */

#define RUNS_KEY_MAX		1024	/* bytes of a key kept */
#define RUNS_KEY_MAX_S		"1024"
#define RUNS_ERROR_MAX		512	/* bytes of stderr or :error kept */
#define RUNS_ERROR_MAX_S	"512"
/* Bytes of a row's group_by: value kept (grp), compared cut the same. */
#define RUNS_GROUP_MAX		255
#define RUNS_GROUP_MAX_S	"255"

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
	 * The row's group_by: value, with the column grp only when grouped
	 * (runs_grouped: the queue has group_by:, and its runs_ensure made
	 * sure of the column); group NULL: null, or not known.
	 */
	bool		 grouped;
	const char	*group;
	size_t		 group_len;
	/*
	 * Written behind its `done`, whose effect it cannot know: outcome
	 * and reason as the server finds it, "none" and "no_row" when the
	 * statement before changed no row (ROW_COUNT()).
	 */
	bool		 if_changed;
};

/* runs_held_text's values, and the text they point to. */
#define RUNS_NVALUES		15	/* at most: grp only when grouped */
#define RUNS_WORD_LEN		72	/* a queue's name, a trace id, ... */
#define RUNS_TIME_LEN		40
struct run_values {
	struct value	 v[RUNS_NVALUES];
	size_t		 n;		/* of them */
	char		 queue[RUNS_WORD_LEN], outcome[RUNS_WORD_LEN];
	char		 reason[RUNS_WORD_LEN], trace[RUNS_WORD_LEN];
	char		 started[RUNS_TIME_LEN], finished[RUNS_TIME_LEN];
};

#define RUNS_LIMIT_DEFAULT	1000	/* runs read unless told */
#define RUNS_LIMIT_MAX		100000

/* The columns runs_read reads, in this order. */
enum { R_KEY, R_TRY, R_OUTCOME, R_REASON, R_EXIT, R_STARTED, R_DURATION,
    R_HOST, R_WORKER, R_PID, R_ERROR, R_TRACE, R_FINISHED, R_ID, R_NCOLS };

/* Which runs runs_read reads. */
struct runs_filter {
	const char	*key;		/* its bytes; NULL: every key */
	size_t		 key_len;
	int64_t		 since_ms;	/* 0: all */
	const char	*outcome;	/* NULL: all */
	long		 limit;
};

const char *runs_table(const struct queue *);
bool	 runs_grouped(const struct queue *);
size_t	 runs_group_len(size_t len);
void	 runs_held_text(struct buf *, const struct queue *);
void	 runs_held_values(struct run_values *, const struct run_rec *);
int	 runs_ensure(struct db *, const struct queue *);
void	 runs_values(struct buf *, const struct run_rec *);
void	 runs_insert_head(struct buf *, const struct queue *, bool grouped);
int	 runs_prune(struct db *, const struct queue *, struct stopper *,
	    unsigned long long *rows, char *err, size_t errlen);
int	 runs_read(struct db *, const struct queue *,
	    const struct runs_filter *, struct rowset *);
const char *runs_v(const struct row *, int column);
void	 runs_json_text(struct buf *, const char *name, const char *,
	    size_t);
void	 runs_json_list(struct buf *, const struct rowset *);

/* ---- row_story.c: one row's story, for `rowq show` and the console ---- */

/* One select's view of the row: its columns, and the row if it is there. */
struct row_view {
	const struct column	*cols;
	size_t			 ncols;
	struct rowset		 rs;
	struct db_stmt		*stmt;
	bool			 read;		/* the select could be read */
	char			 why[300];	/* why not */
};

struct row_story {
	const struct queue	*q;
	struct row_view		 sel;		/* the queue's select */
	struct row_view		 failed;	/* failed_select:; read: false */
	struct rowset		 runs;		/* R_NCOLS columns, oldest first */
	bool			 runs_ok;	/* false: the log failed (logged) */
	const struct line	*running;	/* the live line; NULL: not here */
	const char		*state;		/* running, waiting, failed, ... */
	long long		 lost;		/* tries without a run; -1 */
};

void	 row_story_read(struct row_story *, struct db *, const struct queue *,
	    const char *key, size_t key_len, bool hex, const struct live *);
void	 row_story_free(struct row_story *);
bool	 row_story_printable(const char *, size_t);
void	 row_story_json(struct buf *, const char *queue, const char *key,
	    size_t key_len, const struct row_story *, const struct live *);

#endif /* ROWQ_RUNS_H */
