/*
 * prune.h: one prune run (prune.c), for the daemon's pruner child
 * (prune_daemon.c), `rowq prune` and `rowq check`.
 */
#ifndef ROWQ_PRUNE_H
#define ROWQ_PRUNE_H

#include "rowq.h"

/* ---- prune.c: one prune run, `rowq prune`, and its check ---- */

enum prune_end {
	PRUNE_NONE,		/* no run yet */
	PRUNE_RUNNING,
	PRUNE_DONE,		/* a chunk removed fewer than chunk: rows */
	PRUNE_SKIPPED,		/* another rowq holds the queue's prune lock */
	PRUNE_FAILED,		/* a statement failed: stopped, tried next round */
	PRUNE_STOPPED,		/* asked to stop between chunks */
};

/* What a run did; written as it goes (the daemon shares it). */
struct prune_result {
	volatile int		 end;		/* enum prune_end */
	volatile uint64_t	 rows;
	volatile uint64_t	 chunks;
	volatile int64_t	 ms;		/* from the lock to the end */
	char			 error[192];
};

/* Called after each chunk, with the run so far. */
typedef void	(*prune_progress_fn)(void *ctx, const struct prune_result *);

void	 prune_run(struct db *, const struct queue *, struct stopper *,
	    prune_progress_fn, void *ctx, struct prune_result *);
const char *prune_end_name(int end);
int	 prune_command(const char *config_path, int argc, char **argv);
int	 prune_check(struct db *, const struct queue *);

#endif /* ROWQ_PRUNE_H */
