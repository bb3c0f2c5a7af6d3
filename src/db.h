/*
 * db.h: the database layer, for the files that talk to the database.
 * What it exposes is in plain C types: a connection (struct db),
 * statements, values bound to them, rows read, and what a failure means
 * (enum db_status).  Only db.c, db_connect.c and db_bulk.c (and
 * wake_binlog.c, through db_private.h) include <mysql.h>.
 */
#ifndef DB_H
#define DB_H

#include "rowq.h"

/* What the caller should do about a database error. */
enum db_status {
	DB_OK = 0,
	DB_RETRY,	/* deadlock or lock wait timeout: roll back, try again */
	DB_RECONNECT,	/* the connection is gone: reconnect with backoff */
	DB_CONFIG,	/* access denied, unknown database: fix the config */
	DB_FATAL,	/* bad SQL or data: this statement will not work */
};

/* A value bound to a statement parameter. */
enum value_type {
	VALUE_NULL,
	VALUE_INT,
	VALUE_TEXT,
	VALUE_BLOB,
	/* An expression of rowq's own (s, len), never a value from
	 * outside: written as it is into a statement's text
	 * (dialect_value), never bound. */
	VALUE_SQL,
};

struct value {
	enum value_type	 type;
	bool		 is_unsigned;
	long long	 i;
	const char	*s;
	size_t		 len;
	/* VALUE_TEXT of ASCII letters and digits only (a lease's token),
	 * or ASCII without quotes or backslashes stored in a column of its
	 * own type (the run log's words and times): the same as a literal
	 * as bound, whatever the character set. */
	bool		 plain;
};

struct rowset {
	struct row	*rows;
	size_t		 nrows;
	size_t		 cap;
};

struct db;
struct db_stmt;
struct dialect;

/* ---- db_connect.c: a connection, to the first writable host ---- */

struct db	*db_open(const struct db_options *, enum db_status *);
void		 db_announce_hosts(void);	/* log each host used */
const char	*db_where(const struct db *);	/* "HOST:PORT" */
bool		 db_demoted(struct db *);	/* see db_connect.c */
const char	*db_cipher(const struct db *);	/* NULL: not TLS */

/* ---- db.c: statements, rows, and what an error means ---- */

void		 db_library_init(void);	/* before forking workers */
void		 db_close(struct db *);
const char	*db_error(const struct db *);	/* last error, for messages */
unsigned	 db_errno(const struct db *);
bool		 db_no_such_table(const struct db *);
bool		 db_no_such_column(const struct db *);
bool		 db_denied(const struct db *);
bool		 db_error_in_statement(const struct db *);
enum db_status	 db_commit(struct db *);
enum db_status	 db_rollback(struct db *);
bool		 db_link_closed(const struct db *);
enum db_status	 db_query(struct db *, const char *sql, struct rowset *,
		    struct column **cols, size_t *ncols);
enum db_status	 db_run(struct db *, const char *sql);
enum db_status	 db_run_count(struct db *, const char *sql,
		    unsigned long long *affected);
/*
 * What a claim's text carries in front of its select, in the same round
 * trip (db_select), and how far the server got with it: it runs nothing
 * after a statement that fails.
 */
#define DB_AHEAD_EXTRA_MAX	8	/* statements between COMMIT and the select */
#define DB_AHEAD_VALUES		5	/* of each one's first row, kept */
#define DB_AHEAD_BEHIND_MAX	2	/* statements behind the select */

/* What one of the extra statements gave: its first row, or rows changed. */
struct db_ahead_result {
	bool		 row;		/* it returned a row */
	bool		 null[DB_AHEAD_VALUES];
	long long	 value[DB_AHEAD_VALUES];
	unsigned long long affected;
	unsigned long long insert_id;	/* its answer's, as LAST_INSERT_ID */
};

struct db_ahead {
	bool		 finish;	/* a finishing statement comes first */
	/*
	 * A list (worker_finish_text.c): its SAVEPOINT before the first
	 * statement, and these many after it (the check that it changed a
	 * row, then the list's others).
	 */
	int		 finish_rest;
	bool		 runs;		/* then the run log's INSERT */
	bool		 commit;	/* then COMMIT */
	int		 nextra;	/* a limit's (worker_limit.c): these many, */
	int		 nbefore;	/* the first of them before the COMMIT */
	bool		 finished;	/* set when the finishing statement ran */
	bool		 first_ran;	/* set: a list's first one ran */
	int		 rest_ran;	/* set: how many of finish_rest ran */
	bool		 runs_ran;	/* set when the run log's INSERT ran */
	unsigned long long affected;	/* set: the rows it changed */
	bool		 committed;	/* set when the COMMIT went through */
	int		 extra_ran;	/* set: how many of the extras ran */
	struct db_ahead_result extra[DB_AHEAD_EXTRA_MAX];
	/*
	 * A lease riding on the claim (worker_lease_ride.c): these many
	 * columns of its own after the select's (not kept), and behind the
	 * select these many statements, each one's result kept.
	 */
	int		 ride_columns;
	int		 nbehind;
	bool		 selected;	/* set: the select's rows were read */
	int		 behind_ran;	/* set: how many of those ran */
	struct db_ahead_result behind[DB_AHEAD_BEHIND_MAX];
};
enum db_status	 db_select(struct db *, const char *sql, struct db_ahead *,
		    const struct column *, size_t ncols, struct rowset *);
enum db_status	 db_run_results(struct db *, const char *sql, int n,
		    struct db_ahead_result *);
enum db_status	 db_run_front(struct db *, const char *sql, struct db_ahead *);
void		 rowset_clear(struct rowset *, size_t ncols);
void		 rowset_free(struct rowset *, size_t ncols);
void		 row_free(struct row *, size_t ncols);
/*
 * Whether a transaction is open, as the last statement left it.  After a
 * failed statement: false when the error rolled back the whole
 * transaction (or that could not be found out), so that the rows claimed
 * in it are no longer locked and the turn must stop.
 */
bool		 db_in_transaction(const struct db *);
const struct dialect *db_dialect(const struct db *);	/* dialect.h */
unsigned long	 db_server_version(struct db *);
void		 columns_free(struct column *, size_t);

/* ---- db_stmt.c: prepared statements ---- */

struct db_stmt	*db_prepare(struct db *, const char *sql, enum db_status *);
bool		 db_stmt_column_origin(const struct db_stmt *, size_t,
		    struct buf *);
void		 db_stmt_free(struct db_stmt *);
size_t		 db_stmt_nparams(const struct db_stmt *);
const struct column *db_stmt_columns(const struct db_stmt *, size_t *n);
enum db_status	 db_stmt_exec(struct db_stmt *, const struct value *,
		    size_t nvalues, unsigned long long *affected);
enum db_status	 db_stmt_fetch_all(struct db_stmt *, const struct value *,
		    size_t nvalues, struct rowset *);
unsigned long long db_stmt_insert_id(struct db_stmt *);
/* A value read back (NULL: SQL NULL), bound as its column's type. */
void		 db_value_of_column(struct value *, const struct column *,
		    const char *, size_t len);

/* ---- db_bulk.c: one execute for a batch's rows ---- */

bool		 db_stmt_bulk_possible(const struct db_stmt *,
		    const struct value *, size_t nrows);
enum db_status	 db_stmt_exec_bulk(struct db_stmt *, const struct value *,
		    size_t nrows, unsigned long long *affected);

/* ---- db_limits.c: the server's idle limits, per session ---- */

/*
 * How long a queue's worker sessions may sit idle, in seconds: inside a
 * transaction while its handlers run, and at all (also `idle` between
 * claims).  The server is told so for each session (db_session_limits),
 * so that a frozen host's rows come back within transaction_s, and no
 * shorter server default cuts a handler's transaction short.
 */
struct idle_need {
	unsigned	 transaction_s;
	unsigned	 session_s;
	/*
	 * Lease mode with limit.per_key's concurrency: the session holds
	 * its keys' named locks while the handler runs, with no transaction
	 * open, so its wait_timeout is set to this (lowered too): a frozen
	 * or cut-off host's keys come back with its rows' leases.  0: none.
	 */
	unsigned	 keys_session_s;
};

/* One of the server's global idle limits, for `rowq check`. */
struct db_idle_limit {
	const char	*name;		/* "wait_timeout", ... */
	unsigned long long value_s;	/* 0: none */
	bool		 transaction;	/* applies inside a transaction only */
};

#define DB_IDLE_MARGIN_S	5
#define DB_IDLE_LIMITS_MAX	4

void		 db_idle_need(const struct queue *, struct idle_need *);
enum db_status	 db_session_limits(struct db *, const struct queue *);
int		 db_global_idle_limits(struct db *, struct db_idle_limit *);

/* ---- limit.c: a queue's limit: in the database ---- */

#define LIMIT_TABLE_DEFAULT	"rowq_limit"
#define LIMIT_SCOPE_MAX		256	/* bytes of a scope, as stored */
#define LIMIT_RESERVE_MAX	16	/* tokens one take takes, at most */
#define LIMIT_RESERVE_MS	10	/* and keeps for its next claims */
#define LIMIT_AHEAD_MS		1000	/* a take reserves a token due within */
#define LIMIT_AHEAD_MAX		100000	/* and at most these many ahead */
#define LIMIT_SLOT_WAIT_S	1	/* a waiter waits on a slot's lock */
#define LIMIT_WANT_MS		2000	/* lease mode: a daemon wants a slot */
#define LIMIT_HANDOVER_MS	500	/* and is handed one for */
#define LIMIT_DAEMON_ID_MAX	24	/* hex digits of a daemon's id, and NUL */

/* What every statement of one queue's limit needs. */
struct limit_ctx {
	const struct config	*cfg;
	const struct queue	*q;
	const char		*table;
	uint64_t		 base;	/* hash of the database's and queue's names */
};

/* The queue (len 0), or one value of its per_key.column. */
struct limit_scope {
	char		 bytes[LIMIT_SCOPE_MAX];
	size_t		 len;
	uint64_t	 hash;		/* its locks' names */
};

uint32_t	 limit_crc32(const char *, size_t);
const char	*limit_table(const struct config *);
void		 limit_ctx_init(struct limit_ctx *, const struct config *,
		    const struct queue *, const char *database);
void		 limit_scope(struct limit_scope *, const struct limit_ctx *,
		    const char *key, size_t len, bool is_key);
void		 limit_lock_name(struct buf *, const struct limit_scope *,
		    int slot);
void		 limit_sql_throttled(struct buf *, const struct limit_ctx *,
		    const struct limit_scope *);
void		 limit_sql_slot_take(struct buf *, const struct limit_scope *,
		    int slots, int first, int wait_s);
void		 limit_sql_gate(struct buf *, const struct limit_ctx *,
		    const struct limit_scope *, int concurrency, int first,
		    const struct limit_rate *, bool wait);
int		 limit_reserve_size(const struct limit_rate *);
int		 limit_ahead_tokens(const struct limit_ctx *,
		    const struct limit_rate *);
int		 limit_take_took(const struct limit_ctx *,
		    const struct limit_rate *, long long due_us);
void		 limit_sql_rate_take(struct buf *, const struct limit_ctx *,
		    const struct limit_scope *, const struct limit_rate *,
		    bool iff);
void		 limit_sql_key_take(struct buf *, const struct limit_ctx *,
		    const struct limit_scope *, const struct limit_rate *);
void		 limit_sql_refund(struct buf *, const struct limit_ctx *,
		    const struct limit_scope *, int n);
void		 limit_sql_lease_want(struct buf *, const struct limit_ctx *,
		    const struct limit_scope *, const char *daemon);
void		 limit_sql_lease_take(struct buf *, const struct limit_ctx *,
		    const struct limit_scope *, int slots, const char *daemon);
void		 limit_sql_lease_keep(struct buf *, const struct limit_ctx *,
		    const struct limit_scope *, int slots, const char *token,
		    bool renew, const char *daemon);
void		 limit_sql_rows(struct buf *, const struct limit_ctx *,
		    const struct limit_scope *, int slots);
int		 limit_table_ensure(struct db *, const struct limit_ctx *,
		    enum db_status *);
enum db_status	 limit_throttle(struct db *, const struct limit_ctx *,
		    const struct limit_scope *, int64_t ms, const char *reason);
int		 limit_status_read(struct db *, const struct config *,
		    const struct queue *, struct limit_status *);

#endif /* DB_H */
