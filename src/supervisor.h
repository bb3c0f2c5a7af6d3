/*
 * supervisor.h: the supervisor's state, shared by supervisor.c (which
 * drives it), slot.c (a slot's life), reload.c (which swaps generations
 * on SIGHUP) and the supervisor's parts (SUPERVISOR_PARTS).
 */
#ifndef SUPERVISOR_H
#define SUPERVISOR_H

#include "rowq.h"
#include "commands.h"

#include <poll.h>

#define SLOTS_MAX		4096
#define GENERATIONS_MAX		64

/*
 * A worker's stop (a stop, a drain's end, a reload's or a pause's or
 * scale's retiring): one deadline, the supervisor's (stage_deadline_ms),
 * told to the worker with the stop; the SIGQUIT at it is the one thing
 * that makes a worker give up a row.
 *
 *   supervisor (slot.c)      worker (proc.c, handler*.c)   handler's group
 *   deadline = now + the generation's stop_timeout
 *   SIGTERM + deadline ----> stop: no new row; the row's
 *    (sigqueue; an earlier   handler goes on
 *    deadline: told again)   at deadline - stop_grace (at
 *                            once without): stop_signal ---> traps it, or
 *                                                            dies of it
 *                            an answer or an exit <-------- (dead of it:
 *                            counts as usual: committed,     row back,
 *                            exit 0                          no try)
 *   at the deadline:
 *   SIGQUIT: aborting -----> abort: SIGKILL to the group --> killed
 *                            row rolled back, no try; exit 0
 *   deadline + STOP_KILL_GRACE_MS (a worker stuck in a statement):
 *   SIGKILL: killed, then the handler's group
 *
 * A pipe handler between rows is not signalled: its EOF comes when the
 * worker exits, PIPE_EOF_GRACE_MS before its kill, never past the deadline.
 */
enum stage {
	STAGE_RUNNING,
	STAGE_FINISHING,	/* SIGTERM with the deadline: finish, exit */
	STAGE_ABORTING,		/* SIGQUIT sent: roll back and exit now */
	STAGE_KILLED,		/* SIGKILL sent */
};

/*
 * A slot's life.  slot_set_state (slot.c) is the only place that
 * changes it, checked against this diagram, and it keeps each
 * generation's count of slots in use:
 *
 *	free --fork--> running --death--> restarting --due--> running
 *	running --reload--> retiring --exit--> free
 *	running --exit during a stop, a drain's end--> free
 *	restarting --reload, stop, pause--> free
 *
 * A fork that fails leaves the slot restarting.  The stage says how far a
 * running or retiring worker has been asked to stop.
 */
enum slot_state {
	SLOT_FREE = 0,		/* in no use (the table starts zeroed) */
	SLOT_RUNNING,		/* its generation's worker runs */
	SLOT_RESTARTING,	/* its worker died; a new one at restart_at_ms */
	SLOT_RETIRING,		/* an old generation's worker, finishing */
};

struct generation {
	struct config	*cfg;
	int		 number;
	int		 live;		/* its slots not free */
	/*
	 * The next worker to start, by queue index and number: a worker
	 * the slot table had no room for waits here until a slot frees.
	 */
	size_t		 next_queue;
	int		 next_number;
	bool		 short_of_slots; /* said so in the log */
};

struct slot {
	enum slot_state		 state;
	pid_t			 pid;		/* running or retiring: the worker */
	struct generation	*gen;
	const struct queue	*queue;
	int			 number;
	int64_t			 started_ms;
	int			 quick_deaths;
	int64_t			 restart_at_ms;	/* restarting: when */
	char			 last_death[128]; /* why it last died, for STATUS */
	enum stage		 stage;
	int64_t			 stage_deadline_ms; /* when to go to the next */
	struct worker_stats	*stats;
	/* Drain: the last finished_us this slot's idle worker was woken for. */
	int64_t			 drain_woken_us;
};

/* What workers that have exited did, per queue name. */
struct totals {
	char		*queue;
	uint64_t	 done, retried, failed, errors, restarts;
	uint64_t	 reconnects, db_retries, handler_restarts;
	uint64_t	 on_failed_dropped;
	uint64_t	 limit_waits[LIMIT_REASONS];
	struct histogram claim, handler[HANDLER_OUTCOMES], pickup;
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

/*
 * A status client whose answer did not fit the socket at once: the rest
 * is written as the socket takes it, until a deadline (status_socket.c).
 */
#define STATUS_CLIENTS_MAX	8

/*
 * A part of the supervisor beside the worker table: a helper child, a
 * listener, a timer.  Each part's file exports one of these, and
 * supervisor.c drives every part through it, from SUPERVISOR_PARTS:
 * start before the first worker, a tick each turn of the loop (timers;
 * it lowers *next to when it wants the next), up to poll_max entries in
 * the loop's poll() and the handling of what they return, a look at
 * each child reaped, and stop at the end.  Any hook may be NULL.  A part
 * not in_drain is left out of `rowq drain` (but stopped).  Adding a part
 * is one file and its row in SUPERVISOR_PARTS.
 */
struct supervisor;

struct supervisor_part {
	const char	*name;
	bool		 in_drain;
	nfds_t		 poll_max;
	void		(*start)(struct supervisor *);
	void		(*stop)(struct supervisor *);
	void		(*tick)(struct supervisor *, int64_t now, int64_t *next);
	/* Appends at most poll_max entries at p[*np], advancing *np. */
	void		(*poll_fds)(struct supervisor *, struct pollfd *p,
			    nfds_t *np);
	/* The entries it appended, as poll() returned them. */
	void		(*handle)(struct supervisor *, const struct pollfd *,
			    nfds_t);
	/* Whether pid was one of its children. */
	bool		(*reaped)(struct supervisor *, pid_t, int status);
};

/*
 * The parts, in the order they start, tick and stop: X(name) stands for
 * `name_part`, defined in name.c.
 */
#define SUPERVISOR_PARTS(X)						\
	X(report)		/* the probe, metrics: report.c */	\
	X(status_socket)	/* `rowq status` */			\
	X(prune_daemon)		/* prune: runs */			\
	X(pause_watch)		/* pauses, as the wake watcher reads them */ \
	X(wake_watch)		/* the wake watcher child */		\
	X(wake_binlog)		/* the binlog follower child */		\
	X(wake_socket)		/* `rowq wake` */				\
	X(scale)		/* workers: {min, max} */			\
	X(on_failed)		/* the on_failed runner child */	\
	X(schedule_daemon)	/* the scheduler child */		\
	X(history)		/* the console's charts: history.c */	\
	X(console)		/* the web console child */

#define SUPERVISOR_PART_DECLARE(name) \
	extern const struct supervisor_part name##_part;
SUPERVISOR_PARTS(SUPERVISOR_PART_DECLARE)

/*
 * A helper child of the supervisor that reports on a pipe and starts
 * again when it dies (helper_child.c): the wake watcher and the binlog
 * follower.
 */
struct helper_child {
	pid_t		 pid;		/* 0: none */
	int		 fd;		/* its reports; -1: none */
	int		 generation;	/* whose queues it serves */
	int64_t		 next_start_ms;	/* not before, after it died */
};

/*
 * The queues paused in the pause table, as the wake watcher child last
 * read them (pause_watch.c).  Kept by name, so that a reload's new
 * generation knows them too.
 */
struct pause_state {
	bool		 known;		/* a reading came, or we stopped waiting */
	int64_t		 wait_until_ms;	/* workers wait this long for one */
	size_t		 n;
	char		*paused[QUEUES_MAX];
};

/*
 * One reading of the wake watcher, written whole to its pipe (smaller
 * than PIPE_BUF): a queue's rows, the pause table, or both from one
 * statement.
 */
struct watch_reading {
	int		 generation;
	int		 queue;		/* index in the generation's config; -1: none */
	int		 rows;		/* found, up to the probe's LIMIT; -1: failed */
	bool		 pause_read;	/* paused[] is a reading of the pause table */
	unsigned char	 paused[QUEUES_MAX];	/* by queue index */
};

/* The pause table is read this often, at least. */
#define PAUSE_EVERY_MS		1000

/* The wake watcher child's reads of the pause table (pause_watch.c). */
struct pause_probe {
	const struct config *cfg;
	struct buf	 table;		/* its name, with the database */
	struct buf	 read;		/* SELECT queue FROM it */
	struct db_stmt	*stmt;		/* read prepared; NULL: missing or failed */
	bool		 missing;	/* the server says there is no such table */
	bool		 no_resume_at;	/* a table from before pause --for */
	int64_t		 recheck_ms;	/* then: when to look for the column */
	bool		 failing;	/* said so in the log */
	int64_t		 due_ms;	/* the next read of its own */
};

enum pause_probe_end {
	PAUSE_PROBE_READ,	/* read, or nothing was due, or failed (logged) */
	PAUSE_PROBE_CHANGED,	/* it appeared or went: prepare the probes again */
	PAUSE_PROBE_LINK,	/* the link failed: connect again */
};

/* The on_failed runner child and its socket (on_failed.c). */
struct on_failed_state {
	struct helper_child child;
	int		 send_fd;	/* the workers' end; -1: none */
	int		 recv_fd;	/* the runner's */
	struct on_failed_counts *counts;	/* QUEUES_MAX, shared */
};

/*
 * The wake watcher child, which reads every queue's select every `idle`
 * and the pause table, and has the supervisor wake idle workers and
 * retire a paused queue's (wake_watch.c).
 */
struct wake_state {
	struct helper_child child;	/* the watcher and its readings */
	int		 cmd_fd;	/* queues to read at once; -1: none */
	int64_t		 db_seen_ms;	/* its last reading the database answered */
};

/*
 * The binlog follower child, for the queues with wake: binlog, as its
 * last report said (wake_binlog.c).
 */
struct binlog_state {
	struct helper_child child;	/* the follower and its reports */
	bool		 following;	/* it reads the binary log now */
	long long	 lag_s;		/* behind the server; -1: unknown */
	char		 file[64];	/* where it has read to */
	unsigned long	 pos;
	unsigned char	 watched[QUEUES_MAX / 8];	/* queues it follows */
};

/*
 * workers: {min, max}: how many workers each queue of the current
 * generation runs now, and why that last changed (scale.c).
 */
struct scale_queue_state {
	int		 target;
	int64_t		 changed_ms;	/* now_ms of the last change; 0: none */
	int64_t		 changed_wall_ms;
	char		 reason[128];
};

struct scale_state {
	int		 generation;	/* whose queues; reset after a reload */
	int64_t		 next_look_ms;	/* for idle workers to retire */
	struct scale_queue_state q[QUEUES_MAX];
};

struct status_client {
	bool		 busy;		/* false: a free entry */
	int		 fd;
	struct buf	 out;
	size_t		 off;		/* written so far */
	int64_t		 deadline_ms;
};

/* How often a drain's supervisor reads its workers' looks. */
#define DRAIN_LOOK_MS		50

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
	/* Drain: the last finished_us of the workers that exited. */
	int64_t			 drain_finished_us;
	/* Reload: a SIGHUP sets wanted; one check runs at a time. */
	bool			 reload_wanted;
	pid_t			 check_pid;	/* 0: no check running */
	struct config		*check_cfg;	/* what it is checking */
	int64_t			 check_started_ms;
	struct reload_result	 last_reload;
	uint64_t		 reloads_ok, reloads_failed; /* since the start */
	/* Health, for the watchdog. */
	int64_t			 fork_failing_since; /* 0: fork works */
	int			 signalfd_errors;
	bool			 status_dirty;
	/* What the daemon tells others: report.c, status_socket.c. */
	int			 status_fd;	/* -1: no status socket */
	char			*status_path;
	struct status_client	 status_clients[STATUS_CLIENTS_MAX];
	int64_t			 accept_paused_until_ms; /* EMFILE: 0 none */
	struct metrics		*metrics;
	pid_t			 probe_pid;	/* 0: no database probe running */
	int64_t			 probe_started_ms;
	int64_t			 next_probe_ms;
	int64_t			 next_textfile_ms;
	struct probe		*probe;		/* shared with the probe child */
	struct pruner		*pruner;	/* prune_daemon.c */
	struct scheduler	*scheduler;	/* schedule_daemon.c */
	struct pause_state	 pause;
	struct wake_state	 wake;
	struct binlog_state	 binlog;
	struct on_failed_state	 on_failed;
	struct scale_state	 scale;
	int			 wake_fd;	/* `rowq wake`; -1: none */
	/* The loop's poll(): the signalfd, then each part's (supervisor.c). */
	struct pollfd		*poll;
	nfds_t			*poll_from;	/* where each part's begin */
	char			*wake_path;
	struct history		*history;	/* shared with the console */
	struct console_link	*console;	/* console.c */
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
	int64_t			 throttled_ms[QUEUES_MAX]; /* limit:'s; -1 none */
};

/* supervisor_totals.c: what a queue's workers did and do */
struct totals	 supervisor_count(struct supervisor *, const char *queue);
struct totals	*supervisor_add_exited(struct supervisor *, const char *queue,
		    const struct worker_stats *);
int		 supervisor_workers_up(const struct supervisor *,
		    const struct queue *);
long		 supervisor_busy(const struct supervisor *, const char *queue);
long long	 supervisor_running_oldest_s(const struct supervisor *,
		    const struct queue *);
bool		 supervisor_wants(const struct supervisor *, const struct queue *);

/* supervisor_parts.c: the loop's parts in turn */
void		 supervisor_parts_start(struct supervisor *);
void		 supervisor_parts_stop(struct supervisor *);
void		 supervisor_parts_tick(struct supervisor *, int64_t now,
		    int64_t *next);
nfds_t		 supervisor_parts_poll_fds(struct supervisor *);
void		 supervisor_parts_handle(struct supervisor *);
bool		 supervisor_parts_reaped(struct supervisor *, pid_t,
		    int status);

/* supervisor.c: the worker table, for the files below */
void		 supervisor_fill(struct supervisor *);
void		 supervisor_finish_slot(struct slot *, int64_t timeout_ms);
bool		 supervisor_retire_slot(struct supervisor *, struct slot *);
bool		 supervisor_start(struct supervisor *, const struct queue *,
		    int number);
void		 supervisor_describe_death(int status, char *buf, size_t len);
void		 generation_start(struct supervisor *, struct config *);
void		 generation_release(struct supervisor *, struct generation *);

/* slot.c: a slot's life and a worker's stop, checked */
const char	*slot_state_name(enum slot_state);
const char	*slot_stage_name(enum stage);
bool		 slot_move_allowed(enum slot_state from, enum slot_state to);
bool		 slot_stage_allowed(enum stage from, enum stage to);
void		 slot_set_state(struct supervisor *, struct slot *,
		    enum slot_state);
void		 slot_set_stage(struct slot *, enum stage, int64_t deadline_ms);
void		 slot_tell_deadline(const struct slot *);
void		 slot_kill_handler_group(struct slot *);

/* reload.c */
void	 reload_begin(struct supervisor *);
void	 reload_checked(struct supervisor *, int status);
void	 reload_watch(struct supervisor *, int64_t now, int64_t *next);

/* prune_daemon.c, for report.c and status_socket.c */
uint64_t prune_daemon_total(struct supervisor *, const char *queue);
void	 prune_daemon_status(struct supervisor *, const char *queue,
	    struct buf *);
/* supervisor.c, for report.c */
int	 supervisor_running(const struct supervisor *, bool *pending);

/* report.c: systemd's STATUS=, a drain's progress line and summary */
void	 report_status(struct supervisor *);
void	 report_progress(struct supervisor *, bool final);
void	 report_summary(struct supervisor *);

/* helper_child.c */
void	 helper_child_poll_fd(const struct helper_child *, struct pollfd *,
	    nfds_t *);
bool	 helper_child_reaped(struct helper_child *, pid_t, int64_t restart_ms);
void	 helper_child_retire(struct helper_child *, int generation);
bool	 helper_child_due(const struct helper_child *, int64_t now,
	    int64_t *next);
void	 helper_child_kill(struct helper_child *);
void	 helper_child_stop(struct helper_child *, int64_t grace_ms);

/* pause_watch.c: the wake watcher child's reads of the pause table */
struct rowset;
void	 pause_probe_init(struct pause_probe *, const struct config *);
int	 pause_probe_prepare(struct db *, struct pause_probe *);
void	 pause_probe_fold(const struct pause_probe *, const char *probe,
	    struct buf *out);
void	 pause_probe_names(struct pause_probe *, const struct rowset *,
	    int64_t now, struct watch_reading *);
void	 pause_probe_failed(struct db *, struct pause_probe *);
enum pause_probe_end pause_probe_run(struct db *, struct pause_probe *,
	    int64_t now, struct watch_reading *);
void	 pause_probe_close(struct pause_probe *);
void	 pause_probe_free(struct pause_probe *);
/* pause_watch.c: the supervisor's side */
void	 pause_watch_reading(struct supervisor *, const struct watch_reading *);
bool	 pause_watch_known(const struct supervisor *);
bool	 pause_watch_paused(const struct supervisor *, const char *queue);

/* on_failed.c */
struct on_failed_counts on_failed_count(const struct supervisor *,
	    const char *queue);

/* wake_watch.c */
int	 wake_watch_queue(struct supervisor *, const char *queue);
void	 wake_watch_index(struct supervisor *, size_t queue, bool binlog);

/* schedule_daemon.c, for status_socket.c and report.c */
void	 schedule_daemon_status(struct supervisor *, struct buf *);
void	 schedule_daemon_metrics(struct supervisor *, struct buf *);
/* scale.c */
bool	 scale_queue(const struct queue *);
int	 scale_workers(struct supervisor *, const struct queue *);
void	 scale_reading(struct supervisor *, size_t queue, int rows);
void	 scale_status(struct supervisor *, const struct queue *, struct buf *);

/* wake_binlog.c */
const char *wake_binlog_mode(const struct supervisor *, const struct queue *,
	    long long *lag_s);


#endif /* SUPERVISOR_H */


