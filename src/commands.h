/*
 * commands.h: what the commands that read and act on a queue share ---
 * `rowq status`, `pause` and `resume`, `wake`, `failed`, `requeue`,
 * `discard`, `runs` and `show` --- with the daemon and the console, which show and do the
 * same things.
 */
#ifndef ROWQ_COMMANDS_H
#define ROWQ_COMMANDS_H

#include "rowq.h"

/* ---- status_db.c: what the database says of a queue ---- */

#define STATUS_CAP		1000	/* rows counted at most, per count */

/* What the database says of a queue, read without taking any lock. */
struct queue_db_status {
	long		 waiting;	/* the select finds; STATUS_CAP: or more */
	long long	 oldest_age_s;	/* -1: no age: column, or no row */
	long long	 failed;	/* -1: no failed_count: */
};

int	 status_query(struct db *, const struct queue *,
	    struct queue_db_status *);
void	 status_split(const struct queue *, const struct queue_db_status *,
	    long busy, long *ready, long *in_progress);
int	 status_select_finds(struct db *, const struct queue *);

/* ---- pause.c: the pause table, rowq pause and rowq resume ---- */

#define PAUSE_TABLE_DEFAULT	"rowq_pause"
#define PAUSE_REASON_MAX	1000
#define PAUSE_FOR_MAX_MS	(366LL * 24 * 3600 * 1000)
/* A timed pause: live while resume_at (UTC) is ahead, or it is NULL. */
#define PAUSE_LIVE	"(resume_at IS NULL OR resume_at > UTC_TIMESTAMP(6))"

struct pause_entry {
	char		*queue;
	char		*since;		/* as the server shows a TIMESTAMP */
	long long	 for_s;		/* how long ago */
	char		*reason;	/* "" when none was given */
	long long	 resume_in_s;	/* --for: until it resumes; -1: never */
};

struct pause_list {
	struct pause_entry *entry;
	size_t		 n;
};

const char	*pause_table(const struct config *);
int		 pause_read(struct db *, const char *table,
		    struct pause_list *);
const struct pause_entry *pause_find(const struct pause_list *,
		    const char *queue);
void		 pause_list_free(struct pause_list *);
int		 pause_change(struct db *, const struct config *,
		    const char *queue, const char *reason);
int		 pause_command(const char *path, const char *queue,
		    const char *reason, int64_t for_ms);
int		 resume_command(const char *path, const char *queue);
struct db	*pause_connect(const char *path, const char *queue,
		    struct config **, int *rc);
int		 pause_row_add(struct db *, const struct config *,
		    const char *key, const char *reason,
		    unsigned long long *affected);
int		 pause_row_remove(struct db *, const struct config *,
		    const char *key, unsigned long long *affected);

/* ---- status_socket.c: the daemon's status socket ---- */

char	*status_socket_path(const struct config *);	/* caller frees */

/* ---- wake_socket.c: `rowq wake` ---- */

char	*wake_socket_path(const struct config *);	/* caller frees */
void	 wake_send(const struct config *, const char *queue);
int	 wake_command(const char *config_path, const char *queue);

/* ---- status.c: `rowq status` ---- */

/* The running daemon's answer on its status socket, split in lines. */
struct line {
	char	**field;
	size_t	  n;
};

struct live {
	char		*text;		/* the daemon's answer, split in place */
	struct line	*lines;
	size_t		 nlines;
	char		 error[256];	/* why there is no answer */
};

/* One queue as `rowq status` shows it. */
struct status_queue {
	const struct queue	*q;
	struct queue_db_status	 db;
	bool			 db_ok;
	bool			 alert;		/* older than alert_age */
	bool			 alert_failed;	/* more failed than alert_failed */
	const struct line	*alert_running;	/* a worker past alert_running */
	long			 ready;
	long			 in_progress;	/* -1: no daemon answered */
	const struct pause_entry *pause; /* NULL: not paused */
	struct limit_status	 limit;	/* q->limit.enabled: as read */
	bool			 limit_ok;
};

/* The server status read from, and the TLS cipher: "" when none. */
struct status_link {
	char	where[300];
	char	cipher[128];
};

void	 status_live_load(struct live *, const struct config *);
void	 status_live_free(struct live *);
const struct line *status_live_find(const struct live *, const char *kind,
	    const char *queue, size_t *i);
const char *status_live_value(const struct line *, const char *key);
bool	 status_live_split(const struct live *, struct status_queue *,
	    size_t n);
int	 status_read_db(struct db *, const struct config *,
	    struct status_queue *, size_t n, struct pause_list *,
	    struct status_link *);
struct schedule_list;
void	 status_json(struct buf *, const struct status_queue *, size_t n,
	    const struct live *, const struct status_link *,
	    const struct schedule_list *);
int	 status_command(const char *config_path, char **queues, size_t n,
	    bool json);

/* ---- status_group.c: `rowq status QUEUE --by` ---- */

#define STATUS_GROUP_SCAN	100000	/* rows grouped at most, per select */
#define STATUS_GROUP_LIMIT	20	/* groups shown unless --limit says */
#define STATUS_GROUP_LIMIT_MAX	1000
#define STATUS_GROUP_RUNS	100000	/* the queue's last runs DONE counts */

/* One group of a queue's rows, as status --by shows it. */
struct status_group {
	char		*value;		/* NULL: the group_by: column is NULL */
	long		 wait;		/* the select finds, less run (no lease) */
	long		 run;		/* the daemons' workers handle now; -1 */
	long		 failed;	/* failed_select finds; -1: no such key */
	long long	 oldest_age_s;	/* -1: no age:, or no waiting row */
	long		 done;		/* done runs among the last; -1: unknown */
};

/*
 * The other daemons (daemons table) whose running rows RUN counts: those
 * seen within HEARTBEAT_EVERY_MS * HEARTBEAT_GONE_INTERVALS, but for the
 * one that answered on the status socket.
 */
struct status_others {
	bool		 known;		/* the daemons table could be read */
	long		 counted;	/* live, with their running groups */
	long		 blind;		/* live, without (an older daemon) */
	long long	 oldest_s;	/* the oldest heartbeat counted; -1 */
	char		 error[200];	/* !known: why */
};

struct status_groups {
	struct status_group *g;		/* the most rows first, at most limit */
	size_t		 n;
	int		 limit;
	long		 total;		/* groups seen: the scans and the workers */
	long		 waiting;	/* rows the select scan grouped */
	long		 failed;	/* rows the failed_select scan grouped */
	bool		 failed_known;	/* failed_select: given */
	bool		 answered;	/* the daemon on the status socket */
	bool		 run_known;	/* it answered, or others told */
	struct status_others others;	/* the other daemons counted in run */
	/* DONE (status_group_done.c): the run log's last runs of q. */
	bool		 done_known;
	const char	*done_why;	/* why not known; NULL: no runs: */
	long		 done_runs;	/* runs looked at, at most the window */
	long long	 done_oldest_s;	/* the oldest's age; -1: none */
};

/* The groups the busy workers of a queue are on: value and count. */
struct run_group {
	char		*value;		/* NULL: null */
	long		 n;
	bool		 cut;		/* value is the start of a longer one */
	bool		 matched;	/* found among the database's groups */
};

struct run_groups {
	struct run_group *g;
	size_t		 n;
};

int	 status_group_read(struct db *, const struct config *,
	    const struct queue *, const struct live *, int limit,
	    struct status_groups *);
void	 run_groups_add(struct run_groups *, const char *value, bool cut,
	    long n);
void	 run_groups_free(struct run_groups *);
void	 status_group_running(const struct live *, const struct queue *,
	    struct run_groups *);
int	 status_group_check(struct db *, const struct queue *);
void	 status_group_free(struct status_groups *);
void	 status_group_json(struct buf *, const struct queue *,
	    const struct status_groups *);
int	 status_group_command(const char *config_path, const char *queue,
	    bool json, int limit);

/* ---- status_others.c: the other daemons' running groups ---- */

#define STATUS_OTHERS_JSON_MAX	16384	/* bytes of a daemon's running */

void	 status_others_json(struct buf *, const struct config *,
	    const struct live *);
void	 status_others_read(struct db *, const struct config *,
	    const struct queue *, const struct live *, struct run_groups *,
	    struct status_others *);

/* ---- status_group_done.c: status --by's DONE, from the run log ---- */

void	 status_group_done(struct db *, const struct queue *,
	    struct status_groups *);
void	 status_group_done_note(struct buf *, const struct queue *,
	    const struct status_groups *);

/* ---- failed.c and requeue.c: `rowq failed`, `rowq requeue`, `rowq discard` ---- */

/* What both commands work with: failed_open fills it, failed_close frees. */
struct failed_ctx {
	struct config		*cfg;
	const struct queue	*q;
	struct db		*db;
};

/*
 * What is done to rows by key: failed ones requeue: or discard:, and in
 * lease mode any row, running too, cancel:.
 */
struct failed_action {
	const char	*name;		/* the command, and the queue's key */
	const char	*done;		/* "requeued", for messages */
	size_t		 offset;	/* of its struct sql in struct queue */
};

int	 failed_command(const char *config_path, int argc, char **argv);
int	 failed_open(const char *config_path, const char *queue,
	    const char *cmd, bool need_select, const struct failed_action *need,
	    struct failed_ctx *);
void	 failed_close(struct failed_ctx *);
struct db_stmt;
struct db_stmt *failed_prepare(struct db *, const char *sql,
	    const char *where, int *exit_status);
void	 failed_quote(struct buf *, const char *identifier);
char	*failed_key_column(struct db *, const struct queue *);
/* rowq check: failed_select, requeue and discard against the queue's key. */
int	 failed_check(struct db *, const struct queue *, const char *key);

/* One run of an action over keys (requeue.c). */
struct requeue_run {
	const struct failed_ctx	*what;
	const struct failed_action *action;
	/* The action's statements, a list's in order (SQL_LIST_MAX). */
	struct db_stmt		*stmt[SQL_LIST_MAX];
	size_t			 nstmts;
	char			*key_column;	/* the queue's key (requeue, discard) */
	/*
	 * requeue and discard: each statement's parameters, -1 for the key,
	 * else a column of failed_select's row, which row_stmt reads by key
	 * (NULL: every parameter is the key, and nothing is read).
	 */
	int			*source[SQL_LIST_MAX];
	struct db_stmt		*row_stmt;
	bool			 quiet;		/* no line per key (the console) */
	const char		*by;		/* cancel: who, for its run; NULL: rowq cancel */
	unsigned long long	 done;		/* rows requeued or discarded */
	unsigned long long	 missed;	/* keys that changed no row */
};

extern const struct failed_action requeue_action, discard_action;
extern const struct failed_action cancel_action;
const struct failed_action *failed_action_named(const char *);
const struct sql *failed_action_sql(const struct queue *,
	    const struct failed_action *);
int	 requeue_command(const char *config_path, int argc, char **argv);
int	 requeue_begin(struct requeue_run *, const struct failed_ctx *,
	    const struct failed_action *);
int	 requeue_keys(struct requeue_run *, char **keys, size_t n);
struct value;
int	 requeue_values(struct requeue_run *, const struct value *keys,
	    size_t n);
int	 requeue_all(struct requeue_run *, const char *where_error);
void	 requeue_end(struct requeue_run *);
const char *requeue_error_column(const struct column *, size_t n);
void	 requeue_like(struct buf *, const char *text);

/* ---- runs_cmd.c: `rowq runs` and `rowq show` ---- */

int	 runs_command(const char *config_path, int argc, char **argv);
int	 show_command(const char *config_path, int argc, char **argv);

#endif /* ROWQ_COMMANDS_H */
