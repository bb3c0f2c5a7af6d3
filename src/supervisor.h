/*
 * supervisor.h: the supervisor's state, shared by supervisor.c (which
 * drives it) and report.c (which reads it for the status socket and the
 * metrics).  Nothing else includes it.
 */
#ifndef SUPERVISOR_H
#define SUPERVISOR_H

#include "rowq.h"

#include <poll.h>

#define SLOTS_MAX		4096
#define GENERATIONS_MAX		64

enum stage {
	STAGE_RUNNING,
	STAGE_FINISHING,	/* SIGTERM sent: finish the row, then exit */
	STAGE_ABORTING,		/* SIGQUIT sent: roll back and exit now */
	STAGE_KILLED,		/* SIGKILL sent */
};

struct generation {
	struct config	*cfg;
	int		 number;
	int		 live;		/* slots still using cfg */
};

struct slot {
	bool			 used;
	pid_t			 pid;		/* 0: not running */
	struct generation	*gen;
	const struct queue	*queue;
	int			 number;
	bool			 retiring;	/* finish the row, then go */
	bool			 finished;	/* drain: exited for good */
	int64_t			 started_ms;
	int			 quick_deaths;
	int64_t			 restart_at_ms;	/* 0: no restart pending */
	char			 last_death[128]; /* why it last died, for STATUS */
	enum stage		 stage;
	int64_t			 stage_deadline_ms; /* when to go to the next */
	struct worker_stats	*stats;
};

/* What workers that have exited did, per queue name. */
struct totals {
	char		*queue;
	uint64_t	 done, retried, failed, errors, restarts;
	uint64_t	 reconnects, db_retries, handler_restarts;
	struct histogram claim, handler;
	char		 last_error[192];
	int64_t		 last_error_ms;
};

/*
 * The outcome of the last reload, for STATUS= now and `rowq status` later.
 * wall_ms 0: there was none since the start.
 */
struct reload_result {
	int64_t		 wall_ms;
	bool		 ok;
	int		 generation;	/* the one running after it */
	char		 message[256];	/* the first reason, when it failed */
};

/* Written by the reload check child: why the check failed. */
struct shared {
	char		 check_error[256];
};

struct supervisor {
	const struct run_options *opts;
	int			 sigfd;
	struct slot		*slots;
	int			 nslots;	/* past the last slot ever used */
	struct worker_stats	*stats;	/* SLOTS_MAX, shared with workers */
	struct shared		*shared;
	struct generation	*gens[GENERATIONS_MAX];	/* oldest first */
	int			 ngens;
	struct generation	*current;
	int			 generation;	/* the newest number */
	struct totals		*totals;
	size_t			 ntotals;
	bool			 stopping;
	int			 exit_code;
	int64_t			 started_ms;
	/* Reload: a SIGHUP sets wanted; one check runs at a time. */
	bool			 reload_wanted;
	pid_t			 check_pid;	/* 0: no check running */
	struct config		*check_cfg;	/* what it is checking */
	int64_t			 check_started_ms;
	struct reload_result	 last_reload;
	/* Health, for the watchdog. */
	int64_t			 fork_failing_since; /* 0: fork works */
	int			 signalfd_errors;
	bool			 status_dirty;
	/* What the daemon tells others: report.c. */
	int			 status_fd;	/* -1: no status socket */
	char			*status_path;
	struct metrics		*metrics;
	pid_t			 probe_pid;	/* 0: no database probe running */
	int64_t			 probe_started_ms;
	int64_t			 next_probe_ms;
	int64_t			 next_textfile_ms;
	struct probe		*probe;		/* shared with the probe child */
};

/*
 * What the database says of each queue of the current generation, as
 * the probe child last found it (for the metrics; `rowq status` asks the
 * database itself).
 */
struct probe {
	int64_t			 wall_ms;	/* 0: never */
	int			 generation;
	size_t			 nqueues;
	struct queue_db_status	 queue[QUEUES_MAX];
	bool			 ok[QUEUES_MAX];
};

struct totals	 supervisor_count(struct supervisor *, const char *queue);

/* report.c */
void	 report_start(struct supervisor *);
void	 report_stop(struct supervisor *);
void	 report_poll_fds(struct supervisor *, struct pollfd *, nfds_t *);
void	 report_handle(struct supervisor *, const struct pollfd *, nfds_t);
bool	 report_reaped(struct supervisor *, pid_t, int status);
void	 report_tick(struct supervisor *, int64_t now, int64_t *next);

#endif /* SUPERVISOR_H */


