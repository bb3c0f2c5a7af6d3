/*
 * worker.h: what the files of one worker share.
 *
 *   worker.c	the loop: hand rows on, commit, idle
 *   worker_db.c	the connection: connect, bind, lose, come back
 *   worker_claim.c	the claim: the select's, or by the primary key from a cursor
 *   worker_turn.c	one turn's rows and the transaction's pending outcomes
 *   worker_finish.c	a row's outcome: bind, values, decide, finish, bulk done
 *   worker_finish_text.c	batch 1: the row's done sent with the next claim
 *   worker_lease.c	lease mode: lease, renew, finish in short transactions
 *   worker_limit.c	the queue's limit: taken before a claim, waited for
 *   worker_recent.c	rows finished lately, to notice one coming straight back
 *   worker_runs.c	the run log: a try noted, written before the COMMIT
 */
#ifndef ROWQ_WORKER_H
#define ROWQ_WORKER_H

#include "rowq.h"
#include "db.h"
#include "dialect.h"
#include "handler.h"
#include "claim.h"

/* Where a statement parameter's value comes from. */
enum param_source {
	PARAM_COLUMN,
	PARAM_ATTEMPT,
	PARAM_DELAY,
	PARAM_ERROR,
	PARAM_OUTPUT,
	PARAM_LEASE,
	PARAM_LEASE_INT,
	PARAM_DURATION,
	PARAM_REASON,
};

/*
 * A lease's token, new at each claim: :lease, 32 hex digits, and
 * :lease_int, a positive BIGINT for an integer claim column, made of
 * the first 63 of the same 128 random bits.
 */
struct lease_token {
	char		 hex[33];
	long long	 n;
};

/* A finishing statement, prepared, and where each of its values comes from. */
struct bound {
	const struct sql	*sql;
	struct db_stmt		*stmt;
	enum param_source	*source;
	int			*column;	/* in the connection's layout */
	struct value		*values;
	/*
	 * The statement as the session runs it in front of a claim
	 * (worker_finish_text.c); NULL when it cannot go there.
	 */
	struct dialect_stmt	*text;
	/* The next statement of a list (struct sql's next), or NULL. */
	struct bound		*next;
	/* Where the statement of the list that failed last was said. */
	const char		*failed_at;
};

/* A row claimed again this soon after it was finished never left. */
#define HOT_LOOP_WINDOW_MS	10000
#define HOT_LOOP_BACKOFF_MIN_MS	1000
#define HOT_LOOP_BACKOFF_MAX_MS	300000
/* The pauses grow until none was needed for this long. */
#define HOT_LOOP_CALM_MS	60000

/* Claims timed apart, since each kind takes its own time. */
enum claim_kind {
	CLAIM_PLAIN,
	CLAIM_WITH_COMMIT,	/* the last turn's COMMIT in front */
	CLAIM_FALLBACK,		/* a cursor's: the first key, then the claim */
	CLAIM_KINDS
};

/* What preparing or connecting came to. */
enum connect_status {
	CONNECT_OK,
	CONNECT_AWAY,		/* the database is away: try again later */
	CONNECT_CONFIG,		/* the configuration does not fit the schema */
};

/*
 * After a turn that had to skip rows it cannot work (NULL keys, a key
 * returned twice, a lease.claim that changed no row), the next claim asks
 * for as many more, so that such rows at the head of the queue do not
 * block the ones behind them: up to SKIP_WIDEN_MAX more.
 */
#define SKIP_WIDEN_MAX		BATCH_MAX
#define CLAIM_MAX		(BATCH_MAX + SKIP_WIDEN_MAX)
/* Skipped rows said once each: a hash set of this many. */
#define SKIP_SAID_SLOTS		1024

/*
 * A turn that finished rows leaves its COMMIT to go in front of the next
 * claim, in the same round trip; the claim texts start with it, and skip
 * it when there is nothing to commit.
 */
#define COMMIT_FIRST		"COMMIT;\n"
/* Taken by a batch's claim, for finish_oks to go back to. */
#define CLAIMED_SAVEPOINT	"rowq_claimed"
/* Taken before a list of finishing statements, to undo it as a whole. */
#define LIST_SAVEPOINT		"rowq_row"

/*
 * One turn: the rows one claim returned, read with the column layout kept
 * beside them (a reconnect may bring another), and the outcomes of the
 * transaction that claimed them, counted only once it commits.  Only
 * worker_turn.c's begin, commit, rollback and abandon reset it.
 */
/* Rows whose on_failed: goes out with one commit, at most (more: dropped). */
#define ON_FAILED_NOTES_MAX	16

/*
 * A row's try, noted when its handler ended, for the run log
 * (worker_runs.c) once its finishing statement has changed the row.
 */
struct run_note {
	bool			 set;
	int			 attempt;
	int64_t			 started_us, finished_us;	/* wall clock */
	int64_t			 duration_ms;
	int			 exit_status;
	const struct bound	*decided;	/* done, retry or failed */
	char			 reason[32];
	struct buf		 error;
	char			 trace[33];
};

struct turn {
	struct rowset	 rows;
	struct column	*cols;		/* the layout rows were read with */
	size_t		 ncols;
	int		 key_index;	/* in cols */
	int		 attempts_index; /* in cols, or -1 */
	int		 max_attempts_index; /* retry.max_attempts' column, or -1 */
	int		 trace_index;	/* traceparent_column: in cols, or -1 */
	int		 group_index;	/* group_by: in cols, or -1 */
	/* Rows failed for good in the transaction, for on_failed: */
	struct buf	 failed_notes[ON_FAILED_NOTES_MAX];
	size_t		 nfailed_notes;
	uint64_t	 failed_notes_dropped;
	int		 ready_index;	/* ready_at: in cols, or -1 */
	int		 limit;		/* the LIMIT the claim asked for */
	int		 skipped;	/* rows it could not work */
	int		 handled;	/* rows whose handler ran */
	/* With batch > 1, the ok rows whose `done` runs at the end at once. */
	int		 noks;
	int		 ok_row[CLAIM_MAX];
	int		 ok_attempt[CLAIM_MAX];
	struct lease_token ok_token[CLAIM_MAX];	/* lease mode: each one's */
	bool		 finished_alone; /* a row finished on its own */
	bool		 uncommitted;	/* rows finished, COMMIT not sent */
	bool		 link_lost;	/* the connection went during it */
	/*
	 * Batch 1: the ok row whose `done` rides, as text, in front of the
	 * COMMIT and the next claim (worker_finish_text.c); taken out of rows, so
	 * that the next claim's turn_begin keeps it.
	 */
	bool		 holding;
	struct row	 held;
	int		 held_attempt;
	struct lease_token held_token;	/* lease mode: its lease */
	struct buf	 held_sql;	/* its `done`, as text */
	int		 held_rest;	/* a list: statements after its first */
	/* Counted when the transaction that finished them commits. */
	uint64_t	 pending_done, pending_retried, pending_failed;
	/*
	 * The run log (worker_runs.c): each row's try by its index in rows
	 * (CLAIM_MAX of them, made at the first; NULL without runs:), the
	 * held row's, and the transaction's runs, to be written before its
	 * COMMIT.
	 */
	struct run_note	*run_notes;
	struct run_note	 held_note;
	struct buf	 runs_pending;	/* "(values),\n(values)" */
	int		 nruns;
	struct buf	 runs_front;	/* the INSERT in front of the COMMIT */
	bool		 runs_front_held; /* it is the held row's */
	bool		 held_run_in;	/* the held row's run is written */
};

/* limit.per_key, this worker's side (worker_limit_key.c). */
#define LIMIT_KEYS_OUT_MAX	256		/* keys left out of a claim */
#define LIMIT_KEYS_HELD_MAX	CLAIM_MAX

struct limit_key {
	char			*value;		/* its bytes; NULL with null */
	size_t			 len;
	bool			 null;
	int64_t			 until_ms;	/* left out until then */
};

struct limit_keys {
	int			 column;	/* in the connection's layout */
	enum column_kind	 kind;
	struct buf		 ref;		/* the column, quoted */
	struct buf		 cond;		/* the claim's condition */
	struct limit_key	 out[LIMIT_KEYS_OUT_MAX];
	int			 nout;
	struct {
		long long	 crc;		/* of the key's value; -1: NULL */
	}			 held[LIMIT_KEYS_HELD_MAX];	/* rows' keys */
	int			 nheld;
	struct buf		 take;		/* the claim's take of a key's slot */
	bool			*ok;		/* the turn's rows that may go */
	size_t			 cap, nrows;
	int			 retries;	/* claims again at once, in a row */
	int64_t			 throttles_ms;	/* the throttled keys last read */
	int64_t			 said_ms;
	struct db		*aside;		/* per_key.rate's tokens */
};

/*
 * The queue's limit:, this worker's side (worker_limit.c): what it holds
 * on its connection, and why it waits.
 */
/* The take's statements, made the session's on each connection. */
enum limit_stmt {
	LIMIT_TAKE,		/* the rate's, up to a number of tokens */
	LIMIT_TAKE_IF,		/* the rate's, some tokens or none */
	LIMIT_GATE,		/* the throttle, what the take took, a slot */
	LIMIT_CHECK,		/* the same without the slot */
	LIMIT_GATE_WAIT,	/* the gate, waiting for a slot's lock */
	LIMIT_LEASE,		/* lease mode: a slot's lease */
	LIMIT_STMTS
};

struct worker_limit {
	struct limit_ctx	 ctx;		/* this connection's database */
	struct limit_scope	 scope;		/* the queue's */
	int			 slot;		/* transaction mode: its lock; 0 none */
	int			 last_slot;	/* tried first: most often free */
	int64_t			 slot_since_ms;	/* when it took it */
	int			 yield_slot;	/* released in this front: its turn is over */
	bool			 gate_waits;	/* the poll's gate waits for a slot */
	int64_t			 polled_ms;	/* how long the last poll took */
	bool			 lease_held;	/* lease mode: a slot has token's lease */
	struct lease_token	 token;		/* lease mode: the slot's lease */
	int64_t			 lease_since_ms; /* slots held, row after row, since */
	int64_t			 lease_left_ms;	/* the last given up */
	bool			 lease_wanted;	/* none got: the poll says its daemon wants one */
	char			 daemon[LIMIT_DAEMON_ID_MAX]; /* limit_daemon_id */
	int			 refund;	/* tokens taken, not used: back next take */
	int			 refund_sent;	/* carried by the take in flight */
	int64_t			 reserve_until_ms; /* refund's tokens start claims till */
	int64_t			 due_ms;	/* a reserved token's start; 0 now */
	int64_t			 start_by_ms;	/* and the latest it may start; 0 any */
	bool			 rows_missing;	/* the queue's row: make it again */
	bool			 polled;	/* a poll took what the next claim needs */
	bool			 waiting;	/* the last take failed: poll first */
	int			 allow;		/* handlers this turn may start */
	int			 started;	/* and has started */
	/* The take's statements, as results of its text; -1: not in it. */
	int			 nfront;
	int			 at_rate, at_iff, at_gate, at_lease, at_commit;
	int			 at_keys;	/* the keys' release, behind the COMMIT */
	int			 at_yield;	/* the slot's release, behind it too */
	int64_t			 checked_ms;	/* the throttle last looked at */
	enum limit_reason	 reason;	/* why the last take failed */
	int64_t			 wait_ms;	/* what it said of when; -1 unknown */
	int			 misses;	/* takes failed in a row */
	/* A handler's throttle, written once its turn is over. */
	int64_t			 throttle_ms;	/* -1: none */
	struct buf		 throttle_reason;
	struct limit_scope	 throttle_scope;	/* the queue's, or a key's */
	bool			 warned_local;
	bool			 key_retry;	/* claim again at once: keys left out */
	struct limit_keys	 keys;
	struct dialect_stmt	 stmt[LIMIT_STMTS];	/* limit_prepare */
};

/* The server's clock as this worker last read it (worker_pickup.c). */
struct server_clock {
	bool		 known;
	int64_t		 skew_us;	/* the server's Unix time less ours */
	int64_t		 tz_offset_s;	/* its session's zone, east of UTC */
	int64_t		 read_ms;	/* now_ms() of the reading */
};

struct worker {
	const struct worker_args *args;
	const struct queue	*q;
	struct stopper		 stopper;
	struct db		*db;
	struct db_stmt		*claim;		/* prepared for its columns */
	/* The claim as text, behind "COMMIT;\n", and its LIMIT. */
	char			*claim_sql;
	int			 claim_limit;
	bool			 bulk_done;	/* see finish_batches_done */
	struct dialect_stmt	*runs_stmt;	/* see runs_prepare */
	/*
	 * The claim that scans the primary key from this worker's last key
	 * (cursor.c), when the select has the shape: derived once, confirmed
	 * for each connection.
	 */
	struct cursor_claim	 cursor;
	bool			 cursor_derived;
	bool			 cursor_on;	/* confirmed on this connection */
	struct db_stmt		*cursor_start;	/* the fallback's first key */
	struct cursor_state	 cursor_at;
	/*
	 * The claim by key (keyed.c), when the select's own claim locks
	 * rows it does not claim: derived once, confirmed for each
	 * connection; the list of keys it locks from, and where it is.
	 */
	struct keyed_claim	 keyed;
	bool			 keyed_derived;
	bool			 keyed_on;	/* confirmed on this connection */
	struct db_stmt		*keyed_list_stmt; /* prepared for its layout */
	struct rowset		 keyed_list;
	size_t			 keyed_next;
	int64_t			 keyed_read_ms;
	struct buf		 claim_text;	/* as sent, with what rides on it */
	struct bound		 done, retry, failed, lease, renew, release;
	struct bound		 gave_up;	/* retry.gave_up: */
	/* The connection's layout: the prepared claim's columns. */
	const struct column	*cols;
	size_t			 ncols;
	int			 key_index;
	int			 attempts_index;
	int			 max_attempts_index;
	int			 trace_index;
	int			 group_index;	/* group_by: in cols, or -1 */
	int			 ready_index;
	struct server_clock	 clock;		/* for ready_at: */
	int			 widen;		/* extra rows for the next claim */
	bool			 only_unworkable; /* drain: nothing else left */
	bool			 drain_failed;	/* drain: a row came straight back */
	/* A finishing statement failed whatever the row (finish_stalled). */
	bool			 statement_failing;
	struct turn		 turn;
	char			*path;
	char		       **base_env;
	struct pipe_handler	 pipe;
	struct lease_token	 token;		/* of the current row */
	const struct row	*leased_row;	/* being renewed, or NULL */
	int			 leased_attempt;
	int64_t			 lease_renewed_ms;
	/*
	 * Lease mode: the turn's rows whose lease this worker keeps (leased,
	 * not yet finished), each with its token; renewed together.
	 */
	bool			 lease_live[CLAIM_MAX];
	struct lease_token	 lease_tokens[CLAIM_MAX];
	int			 lease_rows;
	bool			 lease_one_by_one; /* the next turn: no bulk */
	/* At batch 1, the lease in the claim's text (worker_lease_ride.c). */
	bool			 ride_ok;	/* this connection's claims can */
	bool			 riding;	/* this turn's claim does */
	int			 ride_columns;	/* the select's own, behind */
	unsigned long long	 ride_number;	/* of the claim */
	bool			 ride_direct;	/* in the cursor claim's own list */
	struct buf		 ride_vars;	/* the list's columns, as bound */
	struct buf		 ride_list, ride_front, ride_back;
	unsigned long long	 ride_leased;	/* what the lease changed */
	bool			 ride_committed; /* its COMMIT went through */
	bool			 ride_refused;	/* the server refused the lease */
	bool			 ride_held_off;	/* until one by one leases a row */
	struct recent		*recent;	/* rows finished lately */
	int			 hot_loops;	/* in a row, for backoff */
	int64_t			 last_hot_ms;
	char			 failing[256];	/* the statement that failed */
	/* Rows skipped lately, by hash, so that each is said once. */
	uint64_t		 skip_said[SKIP_SAID_SLOTS];
	/* The usual claim of each kind, to notice slow ones. */
	int64_t			 claim_mean_us[CLAIM_KINDS];
	int			 claims[CLAIM_KINDS];
	int64_t			 slow_logged_ms;
	struct handler_result	 result;
	const char		*reason;	/* :reason of the row's statement */
	long			 jobs;
	int			 db_failures;	/* in a row, for backoff */
	int64_t			 db_failing_since;
	int64_t			 db_last_log;
	struct worker_limit	 limit;
};

/* worker_db.c: the worker's connection */
void	 worker_db_trouble(struct worker *, const char *what);
void	 worker_db_ok(struct worker *);
void	 worker_db_failed(struct worker *, enum db_status, const char *what);
struct dialect_stmt *worker_session_stmt(struct worker *, const char *name,
	    const char *text);
void	 worker_session_stmt_free(struct dialect_stmt **);
int	 worker_column(const struct worker *, const char *name);
enum connect_status worker_connect(struct worker *);
enum connect_status worker_ensure_db(struct worker *);
void	 worker_disconnect(struct worker *);
int64_t	 worker_jitter(int64_t ms);

/* worker.c */
void	 worker_set_state(struct worker *, enum worker_state, const char *key);
void	 worker_note_error(struct worker *, const char *what, const char *msg);
void	 worker_committed(struct worker *);
int	 worker_commit(struct worker *);
int	 worker_turn_end(struct worker *, int worked, int n);
bool	 worker_row_fits(struct worker *, const struct row *);
void	 worker_handle(struct worker *, const struct row *, const char *key,
	    int attempt);
enum db_status worker_row(struct worker *, const struct row *, bool *aborted);

/* worker_claim.c */
enum connect_status claim_prepare(struct worker *);
int	 claim_batch(struct worker *);

/* worker_turn.c */
void	 turn_begin(struct worker *);
void	 turn_committed(struct worker *);
void	 turn_rolled_back(struct worker *);
void	 turn_abandon(struct worker *);
void	 turn_free(struct turn *);
void	 turn_hold(struct worker *, size_t i, int attempt);
void	 turn_release_held(struct worker *);
bool	 turn_layout_current(const struct worker *);
bool	 turn_row_workable(struct worker *, size_t i);
void	 turn_skip(struct worker *, const struct row *, const char *why);
bool	 turn_skipped_before(const struct worker *, const struct row *);
int	 turn_next_limit(const struct worker *);

/* worker_finish.c */
enum connect_status finish_bind(struct worker *, struct bound *,
	    const struct sql *);
void	 finish_unbind(struct bound *);
bool	 finish_batches_done(const struct worker *);
bool	 finish_param_source(const char *name, enum param_source *);
struct bound *finish_decide(struct worker *, const struct row *, int attempt,
	    int64_t *delay_ms);
enum db_status finish_exec(struct worker *, struct bound *,
	    const struct row *, int attempt, int64_t delay_ms,
	    unsigned long long *affected);
enum db_status finish_row(struct worker *, struct bound *,
	    const struct row *, int attempt, int64_t delay_ms);
enum db_status finish_row_as(struct worker *, struct bound *,
	    const struct row *, int attempt, int64_t delay_ms,
	    const struct bound **counted);
void	 finish_stalled(struct worker *, const struct bound *,
	    const char *key);
enum db_status finish_settle(struct worker *, struct bound *,
	    const struct row *, int attempt, enum db_status,
	    unsigned long long affected);
void	 finish_value(struct worker *, const struct bound *, size_t,
	    const struct row *, int attempt, int64_t delay_ms, struct value *);
void	 finish_values(struct worker *, const struct bound *,
	    const struct row *, int attempt, int64_t delay_ms, struct value *);
void	 finish_values_token(const struct bound *, struct value *,
	    const struct lease_token *);
enum db_status finish_oks(struct worker *);

/* worker_finish_text.c */
void	 finish_text_bind(struct worker *, struct bound *);
void	 finish_text_bind_lease(struct worker *);
bool	 finish_text_leases(struct worker *, const bool *leased, int n,
	    enum db_status *, unsigned long long *affected);
bool	 finish_text_hold(struct worker *, const struct row *, int attempt);
enum db_status finish_text_oks(struct worker *, bool *all);
enum db_status finish_held(struct worker *, const struct db_ahead *,
	    enum db_status);
enum db_status finish_held_now(struct worker *);
void	 finish_held_text(const struct worker *, const struct db_ahead *,
	    struct buf *);

/* worker_lease.c */
void	 lease_new_token(struct lease_token *);
int	 lease_turn(struct worker *);

int	 lease_renew(void *ctx, struct handler_result *);

/* worker_lease_ride.c */
void	 lease_ride_bind(struct worker *);
bool	 lease_ride_arm(struct worker *);
void	 lease_ride_open(const struct worker *, struct buf *);
const char *lease_ride_columns(const struct worker *);
void	 lease_ride_close(const struct worker *, struct buf *);
void	 lease_ride_ahead(const struct worker *, struct db_ahead *);
void	 lease_ride_sent(struct worker *, const struct db_ahead *,
	    enum db_status);
bool	 lease_ride_failed(struct worker *, enum db_status);
int	 lease_ride_leased(struct worker *, bool *leased);

/* worker_runs.c */
void	 runs_note(struct worker *, const struct row *, int attempt,
	    const struct bound *);
void	 runs_gave_up(struct worker *, const struct row *);
void	 runs_hold(struct worker *, size_t i);
void	 runs_prepare(struct worker *);
void	 runs_unprepare(struct worker *);
void	 runs_settled(struct worker *, const struct row *,
	    const struct bound *);
enum db_status runs_front(struct worker *, struct db_ahead *);
void	 runs_front_done(struct worker *, const struct db_ahead *);
enum db_status runs_flush(struct worker *);
void	 runs_forget(struct worker *);
void	 runs_free(struct turn *);

/* worker_on_failed.c */
void	 on_failed_note(struct worker *, const struct row *, const char *key,
	    int attempt);
void	 on_failed_send(struct worker *);
void	 on_failed_forget(struct worker *);
void	 on_failed_free(struct worker *);

/* worker_row.c */
const char *row_key(const struct worker *, const struct row *, size_t *len);
void	 row_key_text(const struct worker *, const struct row *,
	    struct buf *);
int	 row_attempt(const struct worker *, const struct row *);
int	 row_max_attempts(const struct worker *, const struct row *);
size_t	 row_bytes(const struct worker *, const struct row *);
void	 row_json(const struct worker *, const struct row *, struct buf *);
void	 row_group_note(const struct worker *, const struct row *,
	    struct worker_stats *);
const char *row_traceparent(const struct worker *, const struct row *,
	    char *trace_id);

/* worker_pickup.c */
void	 pickup_clock_read(struct worker *);
void	 pickup_note(struct worker *);
/* worker_limit.c: the take's statements, the session's on each connection */
/* With a slot held and no rate, the throttle is looked at this often. */
#define LIMIT_CHECK_MS		250
/* A slot held this long is given up where another daemon waits for it. */
#define LIMIT_SLOT_TURN_MS	1000

enum connect_status limit_connect(struct worker *);
void	 limit_disconnect(struct worker *);
int	 limit_before_claim(struct worker *);
void	 limit_front(struct worker *, struct buf *before,
	    struct buf *after, struct db_ahead *);
int	 limit_claimed(struct worker *, const struct db_ahead *,
	    enum db_status);
void	 limit_started(struct worker *);
bool	 limit_allows(const struct worker *);
void	 limit_release(struct worker *);
void	 limit_free(struct worker *);

/* worker_limit_lease.c */
const char *limit_daemon_id(struct worker *);
void	 limit_lease_want_front(struct worker *, struct buf *);
void	 limit_lease_front(struct worker *, struct buf *);
void	 limit_lease_took(struct worker *, bool got);
enum db_status limit_lease_keep(struct worker *, bool renew, bool *kept);

/* worker_limit_wait.c */
void	 limit_wait_begins(struct worker *, enum limit_reason, int64_t ms);
int	 limit_await_due(struct worker *);
bool	 limit_late(struct worker *);
void	 limit_wait(struct worker *);
void	 limit_throttle_asked(struct worker *, const struct row *);
void	 limit_throttle_now(struct worker *);

/* worker_limit_key.c */
bool	 limit_keys_on(const struct worker *);
void	 limit_keys_condition(struct worker *, struct buf *);
int	 limit_keys_front(struct worker *, struct buf *after);
void	 limit_keys_released(struct worker *);
void	 limit_keys_claim_sql(struct worker *);
enum connect_status limit_keys_connect(struct worker *);
void	 limit_keys_disconnect(struct worker *);
void	 limit_keys_before_claim(struct worker *);
void	 limit_keys_release(struct worker *);
int	 limit_keys_claimed(struct worker *);
bool	 limit_key_allows(const struct worker *, size_t i);
void	 limit_key_scope(const struct worker *, const struct row *,
	    struct limit_scope *);
void	 limit_keys_free(struct worker *);

/* worker_recent.c, with a worker's rows */
uint64_t recent_row_hash(size_t ncols, const struct row *);
uint64_t recent_key_hash(const char *key, size_t len);
int	 recent_returned(struct recent *, size_t ncols,
	    int key_index, const struct rowset *, int64_t now_ms,
	    int64_t window_ms, const char **where);

#endif /* ROWQ_WORKER_H */
