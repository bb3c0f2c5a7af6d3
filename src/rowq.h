/*
 * rowq.h: shared types and prototypes, grouped by the file that owns them.
 *
 * Each library is behind the files of its own (<yaml.h> config_yaml.c,
 * <mysql.h> the db*.c files, <systemd/sd-daemon.h> notify.c,
 * <microhttpd.h> mhd.h, <crypt.h> console_auth.c): what they expose to
 * the rest of the program is declared in plain C types, here or in a
 * header of its own (console.h: the web console).
 *
 * What belongs to one part of the program has a header of its own: db.h
 * (the database layer), config.h (loading the configuration),
 * supervisor.h (the supervisor and its parts), worker.h (one worker),
 * handler.h (a handler process), claim.h (the claims built in place of a
 * select's own), commands.h (what the commands on a queue share with the
 * daemon and the console), metrics.h (the Prometheus exposition) and
 * on_failed.h (the on_failed: runner's messages).  Each prototype sits under the section
 * of the file that defines it (`make lint` checks that); src/README says
 * which file holds what.
 */
#ifndef ROWQ_H
#define ROWQ_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define ROWQ_VERSION		"0.1.0"
#define ROWQ_DEFAULT_CONFIG	"/etc/rowq/rowq.yaml"

/* Exit statuses (sysexits.h values, spelled out so that tests can rely on them). */
#define ROWQ_EXIT_OK		0
#define ROWQ_EXIT_FAILURE	1
#define ROWQ_EXIT_USAGE		2
#define ROWQ_EXIT_DATAERR	65	/* handler: permanent failure */
#define ROWQ_EXIT_TEMPFAIL	75	/* worker: restart me soon */
#define ROWQ_EXIT_CONFIG	78	/* configuration error: do not restart quickly */

/* Bounds on everything that comes from outside. */
#define CONFIG_FILE_MAX		(1024 * 1024)	/* bytes of YAML per file */
#define CONFIG_FILES_MAX	256		/* files per configuration, includes too */
#define CONFIG_DEPTH_MAX	16		/* nesting of mappings/sequences */
#define CONFIG_SCALAR_MAX	(64 * 1024)	/* bytes of one scalar */
#define QUEUES_MAX		256
#define WORKERS_MAX		256		/* per queue */
#define BATCH_MAX		1000
#define ARGV_MAX		256
#define PASSWORD_MAX		4096
#define DB_HOSTS_MAX		16		/* database.host: entries */
#define HANDLER_OUTPUT_MAX	(64 * 1024)	/* stdout kept for :output */
#define HANDLER_ERROR_MAX	(4 * 1024)	/* stderr tail kept for :error */
#define HANDLER_LOG_LINE_MAX	1024		/* longer stderr lines are split */
#define HANDLER_LOG_LINES_MAX	100		/* stderr lines logged per row */
#define ROW_BYTES_MAX		(64 * 1024 * 1024) /* one claimed row, all columns */
/* The graces, one per purpose; a queue's stop_grace is before a stop's end. */
#define HANDLER_KILL_GRACE_MS	2000	/* timeout: SIGTERM, then SIGKILL */
#define STOP_KILL_GRACE_MS	3000	/* a stop: SIGQUIT, then SIGKILL */
#define PIPE_EOF_GRACE_MS	5000	/* EOF, SIGKILL (not past a stop) */
#define STATUS_GROUP_VALUE_MAX	128	/* bytes of a group_by: value compared */

/* ---- buf.c: growable byte buffers ---- */

struct buf {
	char	*data;		/* always NUL-terminated when not NULL */
	size_t	 len;
	size_t	 cap;
};

void	 buf_reset(struct buf *);
void	 buf_free(struct buf *);
void	 buf_append(struct buf *, const void *, size_t);
void	 buf_puts(struct buf *, const char *);
void	 buf_putc(struct buf *, char);
void	 buf_put_hex(struct buf *, const void *, size_t);
void	 buf_printf(struct buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
char	*buf_steal(struct buf *);	/* caller frees; buffer is reset */

/* Allocation that cannot fail quietly: aborts with a message on ENOMEM. */
void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xrealloc(void *, size_t);
char	*xstrdup(const char *);
char	*xstrdup_or_empty(const char *);
char	*xstrndup(const char *, size_t);

/* ---- log.c: all output ---- */

void	 log_init(const char *procname);	/* journal detection */
void	 log_procinit(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2)));
void	 log_set_timestamps(bool);
void	 log_set_debug(bool);
void	 log_set_json(bool);			/* log_format: json */
void	 log_set_row(const char *key);		/* NULL: not about a row */
void	 log_set_attempt(int attempt);		/* 0: none */
void	 log_set_generation(int generation);
void	 log_set_host(const char *host);
void	 log_set_trace(const char *trace_id);	/* NULL: none */
void	 log_set_outcome(const char *outcome, int64_t duration_us);
size_t	 log_escape(char *out, size_t len, const char *s);
/* A line's structured fields (log.c): for the journal and log_format: json. */
#define LOG_FIELDS_MAX	16
struct log_field {
	const char	*name;
	const char	*value;
};
size_t	 log_line_fields(struct log_field *, size_t max, const char *prio,
	    const char *message);
/* The supervisor's lines about a worker: QUEUE=, WORKER= (NULL: none). */
void	 log_set_about(const char *queue, int worker);
/*
 * Keep the first error message logged from now on in buf (without the
 * process name), until log_capture(NULL, 0): a reload's first reason.
 */
void	 log_capture(char *buf, size_t len);
void	 log_error(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
unsigned long log_warning_count(void);
_Noreturn void fatal(const char *, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fatalx(const char *, ...) __attribute__((format(printf, 1, 2)));

/* ---- duration.c: "250ms", "5s", "10m", "1h", "2d" or bare seconds ---- */

int	 duration_parse(const char *, int64_t *ms);	/* 0, or -1 if not one */
void	 duration_format(int64_t ms, char *, size_t);	/* "3m12s", "250ms" */

/* ---- sql.c: named parameters, the claim clause ---- */

/* A statement from the configuration, compiled to positional form. */
struct sql {
	char	*text;		/* as configured; NULL when the key is absent */
	char	*positional;	/* :name replaced by ? */
	char   **params;	/* parameter names in order, without the ':' */
	size_t	 nparams;
	char	*where;		/* "FILE:LINE: queues.email.done", for messages */
	/*
	 * The next statement of a list (done:, failed:, retry.update: may be
	 * one): each runs after this one, in the same transaction, with the
	 * same parameters.  NULL: the last, or the only one.
	 */
	struct sql *next;
};

/* Statements in a finishing statement's list, at most. */
#define SQL_LIST_MAX		16

int	 sql_compile(struct sql *, const char *text, char *err, size_t errlen);
int	 sql_check_select(const char *text, char *err, size_t errlen);
int	 sql_check_no_rows(const char *text, char *err, size_t errlen);
char	*sql_claim(const char *select, int batch);	/* caller frees */
void	 sql_hex(struct buf *, const void *, size_t);	/* X'..' */
void	 sql_ident(struct buf *, const char *name);	/* `..` if need be */
void	 sql_free(struct sql *);

/* A statement as tokens, for code that reads its structure. */
#define SQL_TOKENS_MAX		65536

enum sql_token_kind {
	SQL_TOKEN_WORD,		/* keyword or bare identifier */
	SQL_TOKEN_NAME,		/* `quoted identifier`, quotes included */
	SQL_TOKEN_STRING,	/* 'literal' or "literal", quotes included */
	SQL_TOKEN_NUMBER,
	SQL_TOKEN_PUNCT,	/* one operator or punctuation mark */
	SQL_TOKEN_EXEC_COMMENT,	/* a comment the server reads: !, M!, + */
};

struct sql_token {
	enum sql_token_kind kind;
	size_t		 start;		/* offset in the text */
	size_t		 len;
	int		 depth;		/* parentheses around it */
};

/* 0 and *out (caller frees), or -1 with err for an unterminated literal. */
int	 sql_tokenize(const char *text, struct sql_token **out, size_t *n,
	    char *err, size_t errlen);
/*
 * The same, read as a server of that version reads it (101100 for
 * 10.11.0; 0 for any): the contents of executable comments that it runs
 * are tokens like the rest, those it skips are dropped.
 */
int	 sql_tokenize_server(const char *text, unsigned long server_version,
	    bool m_comments, struct sql_token **out, size_t *n, char *err,
	    size_t errlen);
bool	 sql_token_is(const char *text, const struct sql_token *,
	    const char *word);
void	 sql_tokens_text(struct buf *, const char *text,
	    const struct sql_token *, size_t from, size_t to);

/* A statement taken apart: its text and its tokens (sql_tokenize). */
struct sql_parse {
	const char		*text;
	struct sql_token	*t;
	size_t			 n;
};

bool	 sql_parse_is(const struct sql_parse *, size_t i, const char *word);
bool	 sql_parse_is_name(const struct sql_parse *, size_t i);
/* A word that ends a table reference (WHERE, JOIN, ...): no alias. */
bool	 sql_parse_clause_word(const struct sql_parse *, size_t i);
char	*sql_parse_unquote(const struct sql_parse *, size_t i);
char	*sql_parse_text(const struct sql_parse *, size_t from, size_t to);
size_t	 sql_parse_skip_hints(const struct sql_parse *, size_t i);

/* ---- prune_sql.c: a prune: statement, bounded and counted ---- */

#define PRUNE_CHUNK_MAX		100000

struct prune_policy;
int	 prune_compile(struct prune_policy *, char *err, size_t errlen);
void	 prune_policy_free(struct prune_policy *);

/* ---- config.c and the config_*.c files: the configuration ---- */

enum handler_kind {
	HANDLER_EXEC,
	HANDLER_PIPE,
	HANDLER_NONE,		/* handler: none: done: is the work */
};

/* What a handler runs with: read through struct handler_job, never copied. */
struct handler_settings {
	int64_t		 timeout_ms;
	int		 stop_signal;	/* 0: none, the handler is not told */
	int64_t		 stop_grace_ms;	/* 0: the signal as the stop begins */
};

enum backoff_kind {
	BACKOFF_FIXED,
	BACKOFF_LINEAR,
	BACKOFF_EXPONENTIAL,
};

/* retry.max_attempts_ceiling's default, and its largest value. */
#define RETRY_CEILING_DEFAULT	100
#define RETRY_CEILING_MAX	100000

struct retry_policy {
	bool		 enabled;	/* the retry: key is present */
	int		 max_attempts;	/* tries in all, the first included */
	/* max_attempts: column NAME: each row's own, at most ceiling. */
	char		*max_attempts_column;
	char		*max_attempts_where; /* "FILE:LINE: queues.email.retry.max_attempts" */
	int		 max_attempts_ceiling;
	struct sql	 gave_up;	/* after update: was the row given up? */
	char		*attempts_column;
	char		*attempts_where; /* "FILE:LINE: queues.email.retry.attempts_column" */
	char		*where;		/* "FILE:LINE: queues.email.retry" */
	enum backoff_kind backoff;
	int64_t		 delay_ms;
	int64_t		 max_delay_ms;
	bool		 jitter;
	struct sql	 update;
};

struct lease_policy {
	bool		 enabled;
	/*
	 * Takes the row out of the select; a list runs in the claim's
	 * transaction, and its first statement's changed rows say whether
	 * the row was leased.
	 */
	struct sql	 claim;
	struct sql	 renew;		/* text NULL: claim renews too */
	/*
	 * Gives back a row leased but not yet handled when a stop or a
	 * reload comes (lease.ahead's, a batch's); text NULL: none, the
	 * row waits for its lease to run out.
	 */
	struct sql	 release;
	int64_t		 duration_ms;
	/*
	 * Batch 1: rows leased at a claim (1, the default: the row alone),
	 * then handled one at a time, each finished in its own transaction.
	 */
	int		 ahead;
	int		 ahead_line;	/* where ahead: was said, for errors */
	char		*where;		/* "FILE:LINE: queues.email.lease" */
};

/* env: one variable for handlers; value NULL: rowq's own, when it has it. */
struct env_var {
	char		*name;
	char		*value;
};

struct env_list {
	struct env_var	*vars;
	size_t		 n;
};

/* user: and group: for handlers, looked up when the config is loaded. */
struct handler_user {
	char		*name;		/* NULL: handlers run as rowq does */
	char		*group;		/* group:, or NULL for the user's own */
	char		*home;		/* HOME of its handlers */
	uid_t		 uid;
	gid_t		 gid;
	gid_t		*groups;	/* supplementary groups */
	int		 ngroups;
};

/*
 * prune: a statement that removes (or archives) finished rows, run in
 * chunks of its own short transaction each (prune.c).
 */
struct prune_policy {
	bool		 enabled;
	char		*text;		/* delete: as configured */
	char		*where;		/* "FILE:LINE: queues.email.prune.delete" */
	bool		 is_call;	/* CALL proc(:chunk), not a DELETE */
	char		*chunk_sql;	/* one chunk: the DELETE with LIMIT n */
	char		*count_sql;	/* --dry-run's count; NULL for a CALL */
	int		 chunk;		/* rows per chunk, at most */
	int64_t		 pause_ms;	/* between chunks, at least */
	int64_t		 every_ms;	/* the daemon: a run this often */
	/*
	 * The next statement of a delete: list, bounded as this one is and
	 * run after it in each chunk's transaction (text, where, is_call,
	 * chunk_sql and count_sql only); NULL: the last, or the only one.
	 */
	struct prune_policy *next;
};

/*
 * runs: the run log, a table rowq owns (runs.c): one row for each try of
 * each row, written in the transaction of its outcome.
 */
#define RUNS_TABLE_DEFAULT	"rowq_runs"
#define RUNS_KEEP_DEFAULT_MS	(7 * 24 * 3600 * (int64_t)1000)

struct run_policy {
	bool		 enabled;	/* runs: is there */
	char		*table;		/* NULL: RUNS_TABLE_DEFAULT */
	int64_t		 keep_ms;	/* pruned when older; 0: kept for ever */
	char		*where;		/* "FILE:LINE: queues.email.runs" */
};

/*
 * limit: how many of a queue's handlers run at once and how often they
 * start, on every daemon together, and the same per value of a column
 * (config_limit.c parses it; limit.c and worker_limit.c enforce it).
 */
#define LIMIT_CONCURRENCY_MAX	1000
#define LIMIT_RATE_COUNT_MAX	1000000
#define LIMIT_BURST_MAX		1000000

struct limit_rate {
	int		 count;		/* starts per period; 0: no rate */
	int64_t		 period_ms;
};

struct limit_policy {
	bool		 enabled;	/* limit: is there */
	char		*where;		/* "FILE:LINE: queues.email.limit" */
	int		 concurrency;	/* 0: none */
	struct limit_rate rate;
	int		 burst;		/* tokens a quiet spell saves up */
	int64_t		 max_throttle_ms; /* a handler's throttle, at most */
	char		*key_column;	/* per_key.column; NULL: no per_key */
	char		*key_where;	/* "FILE:LINE: queues.email.limit.per_key.column" */
	int		 key_concurrency;
	struct limit_rate key_rate;
};

/* What status and the metrics show of a queue's limit; -1: unknown. */
struct limit_status {
	long		 in_use;	/* concurrency slots taken, every daemon */
	long long	 next_start_ms;	/* until a rate's next token; 0: now */
	long long	 throttled_ms;	/* the throttle's time left */
	char		 reason[256];	/* the throttle's */
	long		 keys_throttled; /* per_key: keys throttled now */
};

/* A program rowq runs as configured, without a shell (on_failed:). */
struct program {
	char	       **argv;		/* NULL-terminated; NULL: none */
	char		*where;		/* "FILE:LINE: queues.email.on_failed" */
};

/* A key that names a column of the select, and where it was named. */
struct column_ref {
	char		*name;		/* NULL: the key is absent */
	char		*where;		/* "FILE:LINE: queues.email.age" */
};

struct queue {
	char		*name;
	char		*where;		/* "FILE:LINE" of the queue's name */
	int		 workers;	/* {min, max}: the max */
	int		 workers_min;	/* = workers unless it scales */
	int64_t		 scale_cooldown_ms; /* an idle worker retires after */
	struct sql	 select;	/* as configured, without LIMIT */
	char		*key_column;	/* NULL: the select's first column */
	char		*key_where;	/* "FILE:LINE: queues.email.key" */
	int		 batch;
	enum handler_kind handler;
	char	       **argv;		/* NULL-terminated, as configured */
	char		*argv_where;	/* "FILE:LINE: queues.email.exec" */
	struct handler_settings handling;
	struct sql	 done;
	struct retry_policy retry;
	struct sql	 failed;	/* text NULL when absent */
	int64_t		 idle_ms;
	bool		 wake_binlog;	/* wake: binlog (wake_binlog.c) */
	char		*wake_where;	/* "FILE:LINE: queues.email.wake" */
	long		 max_jobs;	/* 0: never replace the worker */
	struct lease_policy lease;
	struct column_ref age;		/* status: since when a row waits */
	struct column_ref ready_at;	/* since when a row is ready: pickup delay */
	bool		 times_utc;	/* time_zone: UTC: age:, ready_at: in UTC */
	struct column_ref traceparent;	/* a W3C traceparent for the handler */
	struct column_ref group_by;	/* status --by: what groups its rows */
	struct sql	 failed_count;	/* status: SELECT COUNT(*) ... */
	int64_t		 alert_age_ms;	/* status exits 1 past this; 0: off */
	int64_t		 alert_running_ms; /* a handler running longer; 0: off */
	long		 alert_failed;	/* status exits 1 over this; -1: off */
	struct sql	 failed_select;	/* `rowq failed`, `requeue --all` */
	struct sql	 requeue;	/* one failed row waiting again, by key */
	struct sql	 discard;	/* one failed row given up, by key */
	struct sql	 cancel;	/* lease mode: one row cancelled, by key */
	struct env_list	 env;		/* added to the top level's */
	struct handler_user user;	/* name NULL: the top level's */
	struct prune_policy prune;
	struct run_policy runs;
	struct program	 on_failed;	/* argv NULL: the top level's */
	int64_t		 on_failed_timeout_ms;
	int		 on_failed_rate; /* runs a minute, at most */
	struct limit_policy limit;
};

/* One server of database.host: (config_hosts.c). */
struct db_host {
	char		*name;		/* a name or an address, no brackets */
	unsigned	 port;
};

/* How database.tls: checks the server (config_tls.c). */
enum tls_verify {
	TLS_VERIFY_FULL,	/* the chain to ca: and the server's name */
	TLS_VERIFY_CA,		/* the chain only: any name */
	TLS_VERIFY_OFF,		/* encrypted, but anyone may answer */
};

struct db_tls {
	bool		 on;		/* tls: given: never plain text */
	char		*ca;
	char		*cert;
	char		*key;
	enum tls_verify	 verify;
};

struct db_options {
	char		*socket;
	struct db_host	*hosts;		/* tried in order: the first writable */
	size_t		 nhosts;
	unsigned	 port;		/* for hosts without their own */
	struct db_tls	 tls;
	char		*user;
	char		*password;	/* read from password_file or credential */
	char		*password_file;
	/* "FILE:LINE: database.password_file: the password from PATH" */
	char		*password_source;
	char		*credential;
	char		*name;
	char		*option_file;
	char		*option_group;
};

/* console: the web console (console.c), off unless the key is given. */
struct console_options {
	bool		 on;
	char		*listen;	/* "HOST:PORT"; CONSOLE_LISTEN_DEFAULT */
	char		*users_file;
	char		*tls_cert;	/* both or neither: HTTPS */
	char		*tls_key;
	int		 tls_min_version; /* 12: TLS 1.2 and 1.3; 13: 1.3 */
	bool		 insecure_listen; /* plain HTTP beyond loopback, meant */
};

#define CONSOLE_LISTEN_DEFAULT	"127.0.0.1:9465"

struct config {
	char		*path;
	struct db_options db;
	int64_t		 stop_timeout_ms;
	char		*status_socket;	/* NULL: /run/rowq/NAME.sock */
	char		*metrics;	/* "HOST:PORT" to serve, or NULL */
	char		*metrics_textfile; /* node_exporter textfile, or NULL */
	char		*pause_table;	/* NULL: PAUSE_TABLE_DEFAULT */
	char		*daemons_table;	/* NULL: HEARTBEAT_TABLE_DEFAULT */
	struct console_options console;
	bool		 log_json;	/* log_format: json */
	char		*limit_table;	/* NULL: LIMIT_TABLE_DEFAULT */
	struct env_list	 env;		/* for every queue's handlers */
	struct handler_user user;	/* for queues without their own */
	struct program	 on_failed;	/* for queues without their own */
	struct queue	*queues;
	size_t		 nqueues;
	struct schedule	*schedules;	/* schedule.h */
	size_t		 nschedules;
	char		*schedule_table; /* NULL: SCHEDULE_TABLE_DEFAULT */
};

/*
 * What a load does with the files only the console reads (its users_file,
 * its tls: certificate and key): the commands that do not serve the
 * console leave them alone, so that they may stay readable by rowq's own
 * user while a producer's user runs `rowq wake` or `rowq status`.
 */
enum config_private {
	CONFIG_PRIVATE_SKIP,	/* not opened: every command but these */
	CONFIG_PRIVATE_WARN,	/* rowq check: read, or else a warning */
	CONFIG_PRIVATE_READ,	/* rowq run, a reload: read, or an error */
};

/*
 * Load and validate a configuration file and its includes.  Every error is
 * logged as "FILE:LINE: KEY: what is wrong"; on any error NULL is returned
 * and nothing is kept.  config_load leaves the console's files alone
 * (CONFIG_PRIVATE_SKIP).
 */
struct config	*config_load(const char *path);
struct config	*config_load_private(const char *path, enum config_private);
struct config	*config_load_any(const char *path, bool *broken);
void		 config_free(struct config *);
struct queue	*config_queue(const struct config *, const char *name);
/* Rows a claim asks for: the batch, or at batch 1 lease.ahead's. */
int		 queue_claim_rows(const struct queue *);
/* The queue's on_failed: program, its own or the top level's, or NULL. */
const struct program *config_on_failed(const struct config *,
		    const struct queue *);
void		 config_program_free(struct program *);
/* Who the queue's handlers run as: its user:, the top level's, or NULL. */
const struct handler_user *config_handler_user(const struct config *,
		    const struct queue *);

/*
 * config_columns.c: check a queue's statements, key, attempts column and
 * {column} arguments against the columns its select returns (known once
 * it is prepared).
 * Logs each problem; returns the number of problems.
 */
int		 config_check_columns(const struct queue *,
		    char *const *columns, size_t ncolumns);
struct column;
/* max_attempts: column NAME must be an integer column.  Problems found. */
int		 config_check_column_kinds(const struct queue *,
		    const struct column *, size_t ncols);
/* Warn of {column} arguments that can begin with '-' (rowq check). */
void		 config_warn_option_args(const struct queue *,
		    const struct column *, size_t ncols);

/* Built-in parameters, available to every statement. */
extern const char *const config_builtin_params[];

/* ---- trace.c: W3C trace context for handlers ---- */

#define TRACEPARENT_LEN		55	/* version 00 */
#define TRACEPARENT_MAX		512	/* a later version's, at most */

bool	 trace_parse(const char *, size_t, char *trace_id);	/* 33 bytes */

/* ---- backoff.c: pure functions of counts, for tests ---- */

int64_t	 backoff_retry_delay_ms(const struct retry_policy *, int attempt,
	    uint64_t random);
int64_t	 backoff_capped_ms(int64_t base_ms, int64_t max_ms, int failures);
uint64_t backoff_random(void);

/* ---- json.c: the row as one JSON object ---- */

enum column_kind {
	COLUMN_INTEGER,		/* a JSON number up to 2^53 - 1 */
	COLUMN_NUMBER,		/* FLOAT, DOUBLE: a number; DECIMAL */
	COLUMN_TEXT,		/* a string; bad UTF-8 becomes U+FFFD */
	COLUMN_BINARY,		/* binary charset: a base64 string */
};

struct column {
	char		*name;
	enum column_kind kind;
	bool		 is_unsigned;
	bool		 is_decimal;	/* COLUMN_NUMBER, exact: JSON string */
	bool		 nullable;	/* as the server describes it */
};

struct row {
	char	       **value;		/* NULL for SQL NULL; NUL-terminated */
	size_t		*len;
};

void	 json_string(struct buf *, const char *, size_t);
void	 utf8_sanitize(struct buf *);
void	 json_row(struct buf *, const struct column *, size_t ncolumns,
	    const struct row *);

/* ---- proc.c: time, signals, process titles ---- */

/*
 * A process's view of the signals that stop it, read from a signalfd so
 * that poll() wakes for them.  SIGTERM/SIGINT: finish the current row;
 * the supervisor's brings the stop's deadline (slot.c), kept to warn the
 * handler (stop_grace), not to give up at: SIGQUIT, at the deadline or
 * when the supervisor dies, says that.  With term_aborts (a helper child)
 * any SIGTERM is a SIGQUIT.
 */
struct stopper {
	int		 fd;
	bool		 stop;
	bool		 abort;
	bool		 hup;
	bool		 wake;		/* SIGUSR1: the queue has rows (wake_watch.c) */
	bool		 term_aborts;
	int64_t		 stop_deadline_ms; /* INT64_MAX: none told */
};

int64_t	 now_ms(void);			/* CLOCK_MONOTONIC */
int64_t	 now_us(void);			/* the same, in microseconds */
int64_t	 wall_ms(void);			/* CLOCK_REALTIME */
int	 proc_signalfd(const int *signals, size_t n);
void	 proc_child_signals(void);	/* undo the parent's signal setup */
void	 proc_close_inherited(void);	/* a forked child: fds 3 and up */
/* The one descriptor a worker keeps of the supervisor's (on_failed's). */
#define PROC_KEPT_FD	3
void	 proc_close_inherited_but(int keep);
void	 proc_helper_child(pid_t parent); /* see proc.c */
void	 proc_std_fds(void);		/* /dev/null on a closed 0, 1 or 2 */
void	 stopper_init(struct stopper *, bool term_aborts);
void	 stopper_read(struct stopper *);
int	 stopper_sleep(struct stopper *, int64_t ms);
#define PROC_DEADLINE_SPAN_MS	((int64_t)1 << 29) /* a deadline as an int */
int	 proc_deadline_encode(int64_t deadline_ms, int64_t now);
int64_t	 proc_deadline_decode(int value, int64_t now);
void	 proc_title_init(int argc, char **argv);
void	 proc_title(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	 describe_wait_status(int status, struct buf *);

/* ---- handler*.c, for the rest ---- */

/*
 * The handler's own types and functions are in handler.h, for the
 * worker's and the handler's files; these few serve the supervisor
 * (where the running handler's process group is published), config_env.c
 * (a user: switch tried at load) and check.c (a handler's program).
 */
extern volatile pid_t *child_pgid_slot;
int	 identity_try(const struct handler_user *, char *why, size_t len);
int	 handler_resolve(const char *prog, char **path);
#define STOP_SIGNAL_NAMES	"TERM, INT, HUP, QUIT, USR1 or USR2"
int	 handler_stop_signal_parse(const char *name);
const char *handler_stop_signal_name(int sig);

/* ---- db.c: the database layer, declared in db.h ---- */

/* Only a pointer here: the files that use the database include db.h. */
struct db;

/* ---- stats.c: counters shared by workers and the supervisor ---- */

#define HISTOGRAM_BUCKETS	21
extern const double histogram_bounds_s[HISTOGRAM_BUCKETS];

/* How a handler's row ended, for its duration histogram. */
enum handler_outcome {
	HANDLER_OUTCOME_DONE,
	HANDLER_OUTCOME_RETRY,
	HANDLER_OUTCOME_FAILED,
	HANDLER_OUTCOME_TIMEOUT,	/* whichever statement followed */
	HANDLER_OUTCOMES,
};
extern const char *const handler_outcome_names[HANDLER_OUTCOMES];

/* A Prometheus-style histogram: counts per upper bound, plus +Inf. */
struct histogram {
	volatile uint64_t	 count[HISTOGRAM_BUCKETS + 1];
	volatile uint64_t	 sum_us;
};

/* Rows per second over the last minute: a ring of per-second counts. */
#define RATE_SECONDS		60
struct rate {
	volatile uint32_t	 count[RATE_SECONDS];
	volatile int64_t	 second[RATE_SECONDS];
};

void	 histogram_add(struct histogram *, int64_t us);
void	 histogram_merge(struct histogram *into, const struct histogram *);
void	 rate_add(struct rate *, int64_t now_s);
uint64_t rate_sum(const struct rate *, int64_t now_s);

/* ---- worker_recent.c: rows a worker finished lately ---- */

struct recent;

uint64_t	 recent_hash(const char *, size_t, uint64_t seed);
struct recent	*recent_new(void);
void		 recent_free(struct recent *);
void		 recent_add(struct recent *, uint64_t key, uint64_t row,
		    const char *where, int64_t now_ms);
const char	*recent_match(struct recent *, uint64_t key, uint64_t row,
		    int64_t now_ms, int64_t window_ms);
void		 recent_forget(struct recent *, uint64_t key);
void		 recent_commit(struct recent *);
void		 recent_rollback(struct recent *);

/* ---- worker_pickup.c: a ready_at: value as a moment, for tests too ---- */

int64_t	 pickup_ready_us(const char *, size_t, int64_t tz_offset_s);

/* ---- worker.c: one worker's loop (and worker.h's files) ---- */

enum worker_state {
	WORKER_STARTING,
	WORKER_IDLE,
	WORKER_BUSY,
	WORKER_DB_DOWN,
	WORKER_STOPPING,
	WORKER_BACKOFF,		/* a row came straight back round */
	WORKER_LIMITED,		/* waits for the queue's limit: (worker_limit.c) */
	WORKER_FAILING,		/* a finishing statement fails whatever the row */
};

/* Why a worker waits for its queue's limit: (metrics' reason label). */
enum limit_reason {
	LIMIT_CONCURRENCY,
	LIMIT_RATE,
	LIMIT_THROTTLE,
	LIMIT_KEY_CONCURRENCY,
	LIMIT_KEY_RATE,
	LIMIT_KEY_THROTTLE,
	LIMIT_REASONS
};
extern const char *const limit_reason_names[LIMIT_REASONS];

/*
 * What a worker tells the supervisor while it runs, in memory shared
 * between them: one writer (the worker), read by the supervisor for
 * status, notify STATUS= and the drain summary.
 */
struct worker_stats {
	volatile uint64_t	 done;
	volatile uint64_t	 retried;
	volatile uint64_t	 failed;
	volatile uint64_t	 errors;	/* statements that went wrong */
	volatile uint64_t	 reconnects;
	volatile uint64_t	 db_retries;	/* deadlocks and lock waits */
	volatile uint64_t	 handler_restarts;
	volatile uint64_t	 on_failed_dropped; /* its socket was full */
	volatile pid_t		 handler_pgid;	/* running handler, or 0 */
	volatile int		 state;		/* enum worker_state */
	volatile int64_t	 since_ms;	/* wall clock of the state change */
	volatile int64_t	 worked_ms;	/* wall clock: its start, its last row */
	char			 key[64];	/* the row being handled, as text */
	/* And its group_by: value (status --by), cut to fit; NULL: null. */
	char			 group[STATUS_GROUP_VALUE_MAX];
	volatile bool		 group_null;
	volatile int		 attempt;	/* and its try, from 1 */
	char			 last_error[192];
	volatile int64_t	 last_error_ms;	/* wall clock */
	/*
	 * When the supervisor last had a reading of the queue from its wake
	 * watcher (now_ms; 0: never): while it is recent, an idle worker
	 * waits to be woken instead of claiming (wake_watch.c).
	 */
	volatile int64_t	 watched_ms;
	/*
	 * Drain: when this worker's last COMMIT of finished rows came back,
	 * and when its last look that found nothing (no row claimed, and
	 * the select, read without locking, empty) began; drained_us is 0
	 * from a claim that returned rows on.  The drain ends when
	 * every worker's look began after every such commit.  In
	 * microseconds (now_us): a look and a commit are often less than a
	 * millisecond apart.
	 */
	volatile int64_t	 finished_us;
	volatile int64_t	 drained_us;
	/* The queue's limit: waits begun, by reason; a slot held now. */
	volatile uint64_t	 limit_waits[LIMIT_REASONS];
	volatile int		 limit_held;
	volatile int		 limit_reason;	/* WORKER_LIMITED: the reason */
	struct rate		 rate;		/* rows finished, per second */
	struct histogram	 claim;		/* seconds a claim took */
	/* seconds a handler ran, by how its row ended */
	struct histogram	 handler[HANDLER_OUTCOMES];
	struct histogram	 pickup;	/* ready_at: to the claim */
};

/*
 * An idle worker waits for a wake while the watcher's last reading of its
 * queue is at most WAKE_VOUCH_FACTOR × idle + WAKE_VOUCH_SLACK_MS old;
 * and claims every WAKE_FLOOR_FACTOR × idle all the same.
 */
#define WAKE_VOUCH_FACTOR	3
#define WAKE_VOUCH_SLACK_MS	1000
#define WAKE_FLOOR_FACTOR	150

struct worker_args {
	const struct config	*cfg;
	const struct queue	*queue;
	int			 number;	/* from 1, within the queue */
	int			 generation;	/* the supervisor's, for the log */
	int			 on_failed_fd;	/* its datagrams; -1: none */
	int			 of;		/* the queue's workers, this one too */
	bool			 drain;		/* exit when the select is empty */
	struct worker_stats	*stats;
	int			 close_fd;	/* the supervisor's, or -1 */
};

int	 worker_run(const struct worker_args *);

/* ---- worker_limit_lease.c: this daemon's name among the slots' holders ---- */

void	 limit_daemon_init(void);

/* ---- check.c: the configuration against the live database ---- */

/* How a check of the configuration against the database came out. */
enum check_verdict {
	CHECK_PASSED,		/* every queue fits the database */
	CHECK_PROBLEMS,		/* problems found, each logged */
	CHECK_UNREACHABLE,	/* the database could not be reached: try again */
	CHECK_DIED,		/* check_child.c: the child was killed, or exited oddly */
};

enum check_verdict check_config(const struct config *, bool explain);

/* ---- wake_binlog.c: wake: binlog, for check.c ---- */

/* What the server lacks to follow its binary log, in words; -1: unknown. */
int	 wake_binlog_missing(struct db *, struct buf *why);
/* Warn (never refuse) when a binlog queue would fall back to polling. */
void	 wake_binlog_check(struct db *, const struct queue *);

/* ---- check_plan.c: the claim's plan, for check.c ---- */

/* Warns of a claim that reads rows it will not return; returns 0. */
struct keyed_claim;
int	 check_plan(struct db *, const struct queue *, bool verbose,
	    const struct keyed_claim *, bool cursor);

/* ---- check_galera.c: a Galera node, for check.c ---- */

bool	 check_galera_node(struct db *, char *node, size_t len);
void	 check_galera_queue(const struct queue *, const char *node);

/* ---- check_child.c: check_config in a short-lived child ---- */

struct checker {
	const char	*name;		/* the child's log name; NULL: ours */
	int		 close_fd;	/* ours, not for the child; -1: none */
	char		*error;		/* shared memory for the first error */
	size_t		 errlen;	/* or NULL, 0 */
};

pid_t	 checker_start(const struct config *, const struct checker *);
enum check_verdict checker_verdict(int status);
enum check_verdict checker_run(const struct config *, const struct checker *);

/* ---- mhd.c: libmicrohttpd, loaded when HTTP is served (mhd.h) ---- */

struct sockaddr_storage;
/* "HOST:PORT" (IPv4 or [IPv6]) into a socket address; 0, or -1. */
int		 mhd_address(const char *addr, struct sockaddr_storage *);
/* ---- supervisor.c and reload.c: the worker table, restarts, reload ---- */

struct run_options {
	const char	*config_path;
	bool		 drain;		/* `rowq drain`: stop when queues are empty */
	char	       **queues;	/* drain: the named queues */
	size_t		 nqueues;
	int		 workers;	/* drain -w N; 0: as configured */
};

int	 supervisor_run(struct config *, const struct run_options *);

/* ---- notify.c: the only includer of <systemd/sd-daemon.h> ---- */

void	 notify_init(void);		/* takes NOTIFY_SOCKET out of environ */
void	 notify_ready(void);
void	 notify_reloading(void);
void	 notify_stopping(void);
void	 notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	 notify_extend_timeout(int64_t ms);
int64_t	 notify_watchdog_ms(void);	/* 0 when not asked for */
void	 notify_watchdog(void);

#endif /* ROWQ_H */
