/*
 * schedule.h: schedules, the rows rowq inserts on a timetable: cron
 * expressions (cron.c), time zones (tz.c), a schedule's slots and what a
 * transaction does with them (schedule.c), the table that keeps each
 * schedule's last slot and the transaction itself (schedule_db.c), the
 * supervisor's part that runs them (schedule_daemon.c) and the commands
 * (schedule_cmd.c).  config_schedule.c reads schedules: (config.h).
 */
#ifndef SCHEDULE_H
#define SCHEDULE_H

#include "rowq.h"
#include "commands.h"
#include "runs.h"

#include <time.h>

#define SCHEDULES_MAX		256
#define CRON_TEXT_MAX		256	/* bytes of a cron expression */
#define TZ_NAME_MAX		64	/* the longest IANA names are 32 */
#define TZ_TIME_LEN		19	/* "YYYY-MM-DD HH:MM:SS" */

/*
 * A slot at most this late is on time: inserted whatever catch_up says.
 * Longer than the daemons themselves ever delay a slot while they and
 * the database work (a frozen or killed peer's lock, a crashed scheduler,
 * a reconnect: seconds), and long enough that a restart of every daemon
 * at once, a deploy, loses no slot; rowq.yaml(5) SCHEDULES says why.
 */
#define SCHEDULE_ON_TIME_MS	60000
/* Slots inserted in one transaction, at most; the rest in the next. */
#define SCHEDULE_BATCH_MAX	100
/* Skipped slots logged one by one per transaction; the rest summed up. */
#define SCHEDULE_SKIP_LOG_MAX	10
/* How far back, and how many slots a walk, schedule_slots_upto looks. */
#define SCHEDULE_LOOK_BACK_S	(9 * 366 * 86400)	/* a 29th of February */
#define SCHEDULE_LOOK_STEPS	100000
/* Skipped slots of a cron: counted one by one up to this, then "at least". */
#define SCHEDULE_SKIP_COUNT_MAX	100000

/* ---- cron.c: cron expressions ---- */

/* Bit v of a field set: value v matches. */
struct cron {
	uint64_t	 minute;	/* 0-59 */
	uint32_t	 hour;		/* 0-23 */
	uint32_t	 mday;		/* 1-31 */
	uint16_t	 month;		/* 1-12 */
	uint8_t		 wday;		/* 0-6, Sunday 0 */
	bool		 mday_star;	/* the field began with '*' */
	bool		 wday_star;
};

int	 cron_parse(struct cron *, const char *text, char *err, size_t errlen);
bool	 cron_day_matches(const struct cron *, const struct tm *);
int64_t	 cron_next(const struct cron *, int64_t wall);

/* ---- tz.c: time zones through libc ---- */

int	 tz_check(const char *name, char *err, size_t errlen);
void	 tz_use(const char *zone);
void	 tz_restore(void);
int64_t	 tz_wall(int64_t t);
int64_t	 tz_instant(int64_t wall);
void	 tz_format(int64_t wall, char *out, size_t len);

/* ---- config_schedule.c: schedules: (its parser is in config.h) ---- */

#define SCHEDULE_TABLE_DEFAULT	"rowq_schedule"

struct load;

struct schedule	*config_schedule(const struct config *, const char *name);
void		 config_schedules_link(struct load *);
const char	*config_schedule_table(const struct config *);
void		 config_schedules_free(struct config *);

/* ---- schedule.c: a schedule's slots ---- */

struct schedule {
	char		*name;
	char		*where;		/* "FILE:LINE" of its name */
	char		*expr;		/* cron: or every: as written */
	char		*expr_where;	/* "FILE:LINE: schedules.NAME.cron" */
	struct cron	 cron;
	int64_t		 every_s;	/* every:, in seconds; 0: cron: */
	char		*timezone;	/* an IANA name; "UTC" by default */
	struct sql	 insert;
	int64_t		 catch_up_ms;
	char		*queue;		/* queue: the one that works its rows */
	unsigned long	 queue_line;	/* of queue:, for the check at load */
};

/*
 * What one transaction does with a schedule's slots after its last
 * slot, at a time now (schedule_plan): skip those too late (the first
 * few kept for the log), insert those on time or within catch_up, oldest
 * first, at most SCHEDULE_BATCH_MAX, and move the last slot to the last
 * of them.
 */
struct schedule_plan {
	int64_t		 insert[SCHEDULE_BATCH_MAX];
	size_t		 ninsert;
	uint64_t	 skipped;
	bool		 skipped_more;	/* counting stopped: at least skipped */
	int64_t		 skip_log[SCHEDULE_SKIP_LOG_MAX];
	int64_t		 skipped_last;
	int64_t		 last;		/* the last slot after it */
	int64_t		 next;		/* the slot after last; -1: none */
};

/* A slot as the log and the parameters say it. */
struct schedule_slot_text {
	char		 utc[TZ_TIME_LEN + 1];	/* :slot */
	char		 local[TZ_TIME_LEN + 1];	/* :slot_local */
	char		 shown[TZ_TIME_LEN + TZ_NAME_MAX + 4];
};

int64_t	 schedule_next(const struct schedule *, int64_t after);
int64_t	 schedule_window_ms(const struct schedule *);
void	 schedule_plan(const struct schedule *, int64_t last, int64_t now_ms,
	    struct schedule_plan *);
int64_t	 schedule_due(const struct schedule *, int64_t last, int64_t now_ms);
size_t	 schedule_slots_upto(const struct schedule *, int64_t upto, size_t n,
	    int64_t *out);
void	 schedule_slot_text(const struct schedule *, int64_t slot,
	    struct schedule_slot_text *);
void	 schedule_free(struct schedule *);

/* ---- schedule_db.c: the schedule table and the slot's transaction ---- */

/* A schedule's pause is this and its name in the pause table (pause.c). */
#define SCHEDULE_PAUSE_PREFIX	"schedule:"

struct db;
struct db_stmt;

/* One connection's statements on the schedule table. */
struct schedule_conn {
	const struct config *cfg;
	struct db	*db;
	struct db_stmt	*lock;		/* the row FOR UPDATE, the clock */
	struct db_stmt	*init;		/* a schedule seen the first time */
	struct db_stmt	*advance;	/* the row moved on */
	struct db_stmt	*insert[SCHEDULES_MAX];	/* prepared when first run */
};

/* What one transaction did, and what the schedule table says now. */
struct schedule_outcome {
	int64_t		 now_ms;	/* the server's clock */
	int64_t		 last_slot;
	int64_t		 last_inserted;	/* -1: none yet */
	uint64_t	 skipped_total;	/* by every daemon */
	int64_t		 next;		/* the slot after last_slot; -1: none */
	uint64_t	 inserted, skipped;	/* by this transaction */
	bool		 paused;
	bool		 more;		/* slots due still: again at once */
	bool		 created;	/* its row was made: first seen */
};

enum db_status	 schedule_conn_open(struct schedule_conn *, struct db *,
		    const struct config *);
void		 schedule_conn_close(struct schedule_conn *);
enum db_status	 schedule_insert(struct schedule_conn *, size_t i,
		    int64_t slot);
enum db_status	 schedule_slot_run(struct schedule_conn *, size_t i,
		    int64_t slot, int64_t now_ms, const char *how,
		    unsigned long long *id);
enum db_status	 schedule_txn(struct schedule_conn *, size_t i,
		    struct schedule_outcome *);
int		 schedule_check(struct db *, const struct config *,
		    bool explain);

/* ---- schedule_cmd.c: rowq schedules, schedule run, pause --schedule ---- */

/* A schedule as the schedule table and the pause table say it. */
struct schedule_row {
	const struct schedule	*s;
	bool			 known;		/* the table has its row */
	int64_t			 last_slot;
	int64_t			 last_inserted;	/* -1: none */
	int64_t			 next;		/* -1: none */
	uint64_t		 skipped;
	const struct pause_entry *pause;	/* NULL: not paused */
	/* Its last slot's row (queue:), when read: key, state, tries. */
	bool			 last_row;
	char			 last_key[24];
	char			 last_state[16];
	size_t			 last_tries;
};

struct schedule_list {
	struct schedule_row	*row;
	size_t			 n;
	struct pause_list	 paused;
};

int	 schedule_list_read(struct db *, const struct config *,
	    struct schedule_list *, const struct live *);
void	 schedule_list_table(const struct schedule_list *);
void	 schedule_list_json(const struct schedule_list *, struct buf *);
void	 schedule_list_free(struct schedule_list *);
int	 schedules_command(const char *path, bool json);
int	 schedule_run_command(const char *path, const char *name);
int	 schedule_pause_command(const char *path, const char *name,
	    const char *reason, bool pause);
void	 schedule_shown(const struct schedule *, int64_t slot, char *out,
	    size_t len);

/* ---- schedule_runs.c: a schedule's slots with their runs ---- */

/* The columns of a slot's row in the run log, as they are read. */
enum { S_KEY, S_SLOT, S_INSERTED, S_LATE, S_NCOLS };

/* One slot: its row in the run log, and the story of the row it inserted. */
struct slot_story {
	const struct row	*slot;
	struct row_story	 story;
	bool			 read;		/* story read: the slot has a key */
	const struct row	*first, *last;	/* the row's first and last tries */
	size_t			 tries;
};

/* A schedule's latest slots, newest first. */
struct schedule_slots {
	const struct schedule	*s;
	const struct queue	*q;		/* its queue: */
	struct rowset		 rs;		/* S_NCOLS columns a row */
	struct slot_story	*slot;
	size_t			 n;
	bool			 failed;	/* a row's runs could not be read */
};

int	 schedule_slots_read(struct schedule_slots *, struct db *,
	    const struct config *, const struct schedule_row *, long limit,
	    const struct live *);
void	 schedule_slots_free(struct schedule_slots *);
const char *schedule_slot_state(const struct slot_story *);
int64_t	 schedule_slot_unix(const struct slot_story *);
int	 schedule_runs_command(const char *path, int argc, char **argv);

#endif /* SCHEDULE_H */
