/*
 * on_failed.h: what a worker tells the runner of on_failed: hooks
 * (on_failed.c) of a row that failed for good, and what the runner tells
 * the supervisor back.
 */
#ifndef ROWQ_ON_FAILED_H
#define ROWQ_ON_FAILED_H

#include "rowq.h"

/* ---- on_failed.c: a program for each row that failed for good ---- */

/* How the last try of a row that failed for good ended. */
enum on_failed_outcome {
	ON_FAILED_FAILED,	/* exit 65, "fail", or tries used up */
	ON_FAILED_TIMEOUT,	/* the last try timed out */
	ON_FAILED_KILLED,	/* the last try died of a signal */
};

#define ON_FAILED_ROW_MAX	(60 * 1024)	/* the row's JSON, at most */
#define ON_FAILED_MSG_MAX	(64 * 1024 + 2 * 4096)

/*
 * One datagram from a worker to the runner, followed by the key, the
 * error and the row's JSON (a row over ON_FAILED_ROW_MAX: "{}").
 */
struct on_failed_msg {
	char		 queue[96];
	int		 attempt;
	int		 outcome;	/* enum on_failed_outcome */
	uint32_t	 key_len, error_len, row_len;
};

/* What the runner did, per queue, in memory shared with the supervisor. */
struct on_failed_counts {
	char		 queue[96];	/* "": a free entry */
	volatile uint64_t runs, failures, dropped;
};

#endif /* ROWQ_ON_FAILED_H */
