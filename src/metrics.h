/*
 * metrics.h: the Prometheus exposition (metrics.c, over mhd.h) and the
 * numbers the supervisor adds up for it.
 */
#ifndef ROWQ_METRICS_H
#define ROWQ_METRICS_H

#include "rowq.h"

/* ---- metrics.c: Prometheus exposition, over mhd.h ---- */

/* One queue's numbers, as the supervisor adds them up. */
struct metrics_queue {
	const char		*name;
	uint64_t		 done, retried, failed, errors;
	uint64_t		 restarts, reconnects, db_retries;
	uint64_t		 handler_restarts;
	uint64_t		 pruned_rows;	/* by this daemon's prune runs */
	uint64_t		 on_failed_runs, on_failed_failures;
	uint64_t		 on_failed_dropped;
	int			 workers_up;
	int			 paused;	/* 1: rowq pause; 0: not */
	const char		*wake;		/* poll, binlog, binlog-fallback */
	long long		 binlog_lag_s;	/* -1: not following */
	long			 ready;		/* -1: unknown */
	long			 in_progress;	/* -1: unknown */
	long long		 oldest_age_s;	/* -1: unknown */
	long long		 failed_rows;	/* -1: unknown */
	struct histogram	 claim;
	struct histogram	 handler[HANDLER_OUTCOMES];
	struct histogram	 pickup;
	bool			 has_pickup;	/* ready_at: is set */
	long long		 running_oldest_s; /* the longest handler now */
	bool			 limited;	/* the queue has limit: */
	uint64_t		 limit_waits[LIMIT_REASONS];
	long			 limit_in_use;	/* slots this daemon's workers hold */
	int			 throttled;	/* 1: throttled now, else 0 */
	int			 failing;	/* workers in WORKER_FAILING */
};

/* One schedule's numbers, for the daemon that runs it. */
struct metrics_schedule {
	const char		*name;
	long long		 last_slot;	/* the last inserted; -1: none */
	uint64_t		 inserted;	/* by this daemon */
	uint64_t		 skipped;
	int			 paused;
};

typedef void	(*metrics_render_fn)(void *ctx, struct buf *);
/* POST /wake/QUEUE: -1 for a queue the daemon does not run. */
typedef int	(*metrics_wake_fn)(void *ctx, const char *queue);
/* GET /healthz (ready false), /readyz (true): whether, and why in buf. */
typedef bool	(*metrics_health_fn)(void *ctx, bool ready, struct buf *);

struct metrics;

void		 metrics_render(struct buf *, const struct metrics_queue *,
		    size_t n);
void		 metrics_render_reloads(struct buf *, uint64_t ok,
		    uint64_t failed);
void		 metrics_render_schedules(struct buf *,
		    const struct metrics_schedule *, size_t n);
struct metrics	*metrics_start(const char *addr, metrics_render_fn,
		    metrics_wake_fn, metrics_health_fn, void *ctx);
int		 metrics_fd(const struct metrics *);
void		 metrics_run(struct metrics *);
void		 metrics_timers(struct metrics *, int64_t now, int64_t *next);
void		 metrics_stop(struct metrics *);
int		 metrics_write_textfile(const char *path, const struct buf *);

#endif /* ROWQ_METRICS_H */
