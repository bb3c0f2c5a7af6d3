/*
 * console.h: the web console's files (console.c, the supervisor's part
 * and the child; console_http.c, requests; console_page.c and
 * console_html.c, the pages; console_row.c, a row's page; console_bulk.c,
 * an action on every failed row; console_chart.c, the charts;
 * console_auth.c, users and passwords; console_session.c, sessions;
 * console_throttle.c, failed logins), and the per-minute history the
 * supervisor keeps for it (history.c) and the daemons table
 * (heartbeat.c).
 */
#ifndef CONSOLE_H
#define CONSOLE_H

#include "rowq.h"
#include "commands.h"

#define CONSOLE_USERS_MAX	256
#define CONSOLE_NAME_MAX	64	/* bytes of a user's name */
#define CONSOLE_USERS_FILE_MAX	(256 * 1024)
#define CONSOLE_TOKEN_BYTES	32	/* random bytes of a session or CSRF token */
#define CONSOLE_TOKEN_LEN	(2 * CONSOLE_TOKEN_BYTES)	/* as hex */
/* A hash's digest: SHA-256 in crypt's base 64 (console_session_current). */
#define CONSOLE_TAG_LEN		43
#define CONSOLE_SESSIONS_MAX	256
#define CONSOLE_SESSIONS_PER_USER 16	/* a user's own, at most */
#define CONSOLE_SESSION_IDLE_MS	(30 * 60 * 1000)	/* unused this long: gone */
#define CONSOLE_SESSION_MAX_MS	(12 * 3600 * 1000)	/* and at most this old */
#define CONSOLE_THROTTLE_MAX	1024	/* (address, name)s and names kept */
#define CONSOLE_THROTTLE_CAP_MS	60000	/* the longest wait after failures */
#define CONSOLE_THROTTLE_CAP_FAILURES 64	/* counted at most */
/* Failures this far apart are forgotten. */
#define CONSOLE_THROTTLE_FORGET_MS (15 * CONSOLE_THROTTLE_CAP_MS)
/* A name's failures from everywhere that cost no wait of the name's own. */
#define CONSOLE_THROTTLE_NAME_FREE 10
/* An address where the name logged in this lately skips the name's wait. */
#define CONSOLE_THROTTLE_TRUST_MS CONSOLE_SESSION_MAX_MS

enum console_role {
	CONSOLE_VIEWER,		/* sees everything, changes nothing */
	CONSOLE_OPERATOR,	/* and acts: pause, resume, wake, requeue, discard */
};

/* ---- console_auth.c: the users file, passwords, rowq console-user ---- */

struct console_user {
	char		 name[CONSOLE_NAME_MAX + 1];
	char		*hash;		/* crypt(3)'s, with its $id$ and salt */
	char		 tag[CONSOLE_TAG_LEN + 1];	/* the hash's digest */
	enum console_role role;
	size_t		 cost;		/* its hash's, in console_users.cost */
};

struct console_users {
	struct console_user *user;
	size_t		 n;
	/*
	 * The hashes' costs (method and parameters) in the file, each once:
	 * cost[k] is the user whose hash stands for it.  Every login hashes
	 * the password once for each (console_login).
	 */
	size_t		*cost;
	size_t		 ncost;
};

const char	*console_role_name(enum console_role);
int		 console_users_parse(const char *text, size_t len,
		    const char *file, struct console_users *, struct buf *why);
int		 console_users_load(const char *path, struct console_users *,
		    struct buf *why);
void		 console_users_free(struct console_users *);
bool		 console_user_known(const struct console_users *,
		    const char *name);
const struct console_user *console_login(const struct console_users *,
		    const char *name, const char *password);
bool		 console_equal(const char *a, size_t alen, const char *b,
		    size_t blen);
int		 console_hash(const char *password, struct buf *out);
int		 console_user_command(int argc, char **argv);

/* ---- console_session.c: sessions and CSRF tokens ---- */

struct console_session {
	bool		 used;
	char		 token[CONSOLE_TOKEN_LEN + 1];	/* the cookie */
	char		 csrf[CONSOLE_TOKEN_LEN + 1];	/* in every form */
	char		 user[CONSOLE_NAME_MAX + 1];
	char		 tag[CONSOLE_TAG_LEN + 1];	/* of the user's hash */
	enum console_role role;
	int64_t		 created_ms;	/* wall clock */
	int64_t		 used_ms;
};

/*
 * The sessions, in memory the supervisor maps before it forks the
 * console, so that they outlive a console that is restarted (a crash,
 * a reload).  Only the console writes them.
 */
struct console_sessions {
	struct console_session s[CONSOLE_SESSIONS_MAX];
};

/*
 * Failed logins of a name from an address, or of a name from everywhere
 * (addr ""): each doubles the wait before the next (console_throttle.c).
 */
struct console_throttle_entry {
	bool		 used;
	char		 addr[64];
	char		 user[CONSOLE_NAME_MAX + 1];	/* the name tried */
	int		 failures;
	int64_t		 until_ms;	/* no try before (now_ms) */
	int64_t		 last_ms;	/* the last failure */
	int64_t		 passed_ms;	/* the last login that passed; 0 */
};

struct console_throttle {
	struct console_throttle_entry e[CONSOLE_THROTTLE_MAX];
};

int		 console_random_hex(char *out, size_t nbytes);
struct console_session *console_session_new(struct console_sessions *,
		    const struct console_user *, int64_t now);
struct console_session *console_session_find(struct console_sessions *,
		    const char *token, int64_t now);
void		 console_session_end(struct console_session *);
bool		 console_session_current(const struct console_session *,
		    const struct console_users *);
void		 console_sessions_recheck(struct console_sessions *,
		    const struct console_users *);
bool		 console_csrf_ok(const struct console_session *,
		    const char *token);

/* ---- console_throttle.c: the wait after failed logins ---- */

int64_t		 console_throttle_wait(const struct console_throttle *,
		    const char *addr, const char *user, int64_t now);
void		 console_throttle_failed(struct console_throttle *,
		    const char *addr, const char *user, int64_t now);
void		 console_throttle_passed(struct console_throttle *,
		    const char *addr, const char *user, int64_t now);

/* ---- heartbeat.c: the daemons table ---- */

#define HEARTBEAT_TABLE_DEFAULT	"rowq_daemons"
#define HEARTBEAT_EVERY_MS	10000	/* a row written this often */
#define HEARTBEAT_GONE_INTERVALS 3	/* unseen this many: shown as gone */

struct heartbeat {
	char		 host[256];
	long		 pid;		/* the supervisor's */
	int64_t		 due_ms;
	int64_t		 prune_due_ms;	/* rows of daemons gone a day */
	bool		 failing;	/* said so in the log */
	bool		 no_running;	/* the table lacks it, cannot get it */
	bool		 running_told;	/* said so in the log */
	int64_t		 running_retry_ms;	/* try it again then */
	bool		 stopping;	/* the last row: nothing runs */
};

/* One daemon as its row says. */
struct heartbeat_row {
	char		*host;
	long		 pid;
	char		*version;
	char		*started;
	long		 busy, workers;
	char		*console;	/* its console's address, "" */
	char		*seen;
	long long	 seen_ago_s;
};

struct heartbeat_rows {
	struct heartbeat_row *row;
	size_t		 n;
};

struct console;
const char	*heartbeat_table(const struct config *);
void		 heartbeat_init(struct heartbeat *);
void		 heartbeat_tick(struct heartbeat *, struct console *,
		    int64_t now, int64_t *next);
void		 heartbeat_last(struct heartbeat *, struct console *);
int		 heartbeat_read(struct db *, const struct config *,
		    struct heartbeat_rows *);
void		 heartbeat_rows_free(struct heartbeat_rows *);

/* ---- history.c: a queue's last hour, minute by minute ---- */

#define HISTORY_MINUTES		60
#define HISTORY_NAME_MAX	64	/* a queue's name, as config.h bounds it */

struct history_minute {
	uint32_t	 done, retried, failed;
	int32_t		 oldest_age_s;	/* the most seen in it; -1: unknown */
};

struct history_queue {
	char		 name[HISTORY_NAME_MAX + 1];	/* "": a free entry */
	int64_t		 minute;	/* the newest, in minutes of the epoch */
	struct history_minute m[HISTORY_MINUTES];	/* [minute % 60] */
	/* The supervisor's: the totals counted so far. */
	uint64_t	 seen_done, seen_retried, seen_failed;
};

/*
 * Shared by the supervisor, which writes it, and the console, which
 * reads it: seq is odd while a write is under way.
 */
struct history {
	volatile uint32_t seq;
	struct history_queue q[QUEUES_MAX];
};

bool	 history_read(const struct history *, const char *queue,
	    struct history_queue *out);
void	 history_add(struct history_queue *, int64_t minute, uint64_t done,
	    uint64_t retried, uint64_t failed, long long oldest_age_s);
const struct history_minute *history_at(const struct history_queue *,
	    int64_t minute);

/* ---- console.c: the console child ---- */

#define CONSOLE_DB_MS		2000	/* the database's figures, read this often */
#define CONSOLE_LIVE_MS		1000	/* the daemon's, from its status socket */
#define CONSOLE_ACTIONS_MAX	100	/* the actions page's, kept */

/* The queues as `rowq status` shows them, as last read. */
struct console_view {
	struct status_queue	*q;
	size_t			 n;
	struct live		 live;
	struct pause_list	 paused;
	struct status_link	 link;
	int64_t			 db_ms;		/* when read: now_ms; 0: never */
	int64_t			 live_ms;
};

/* One action done through the console, for its actions page. */
struct console_action {
	int64_t		 wall_ms;
	char		 user[CONSOLE_NAME_MAX + 1];
	char		 what[16];
	char		 queue[HISTORY_NAME_MAX + 1];
	long long	 rows;		/* -1: not an action on rows */
	char		 detail[200];
};

struct console_http;
struct console_bulk;

struct console {
	const struct config	*cfg;
	int			 generation;
	int64_t			 started_wall_ms;	/* the supervisor's start */
	struct console_sessions	*sessions;	/* shared with the supervisor */
	const struct history	*history;	/* NULL: none yet */
	struct console_users	 users;
	struct console_throttle	*throttle;	/* failed logins */
	struct console_http	*http;
	struct db		*db;		/* NULL: not connected */
	bool			 db_used;	/* by this request: end its transaction */
	int64_t			 db_retry_ms;
	struct console_view	 view;
	struct heartbeat	 heartbeat;
	struct console_action	 actions[CONSOLE_ACTIONS_MAX];	/* a ring */
	size_t			 nactions;	/* ever done */
	struct console_bulk	*bulk;		/* running; NULL: none */
	struct console_groups_cache *groups;	/* console_group.c's; NULL */
};

struct db	*console_db(struct console *);
const struct console_view *console_view(struct console *);
const struct console_view *console_live_view(struct console *);
void		 console_view_stale(struct console *);

/* ---- console_http.c: requests, bounded, and who makes them ---- */

#define CONSOLE_URL_MAX		1024	/* bytes of a path */
#define CONSOLE_QUERY_MAX	16	/* arguments of a query */
#define CONSOLE_VALUE_MAX	4096	/* bytes of an argument or a field */
#define CONSOLE_FIELDS_MAX	1100	/* of a form: 1000 keys, and the rest */
#define CONSOLE_BODY_MAX	(256 * 1024)

/* A form's fields, decoded. */
struct console_form {
	char		**name;
	char		**value;
	size_t		  n;
};

struct console_request {
	struct console		*c;
	void			*conn;		/* the library's connection */
	void			*upload;	/* console_http.c's: its body */
	const char		*method;	/* GET, HEAD or POST */
	const char		*path;		/* the URL without its query */
	char			 client[64];	/* the client's address */
	bool			 authed;
	bool			 throttled;	/* too many failed logins */
	char			 tried[CONSOLE_NAME_MAX + 1]; /* Basic's name */
	struct console_session	*session;	/* NULL: HTTP Basic, or none */
	char			 user[CONSOLE_NAME_MAX + 1];
	enum console_role	 role;
	struct console_form	 form;		/* a POST's body */
};

struct console_reply {
	unsigned	 status;
	const char	*type;		/* NULL: HTML */
	struct buf	 body;
	char		 location[CONSOLE_URL_MAX + 64];	/* a redirect */
	char		 cookie[256];
	const char	*allow;
	bool		 challenge;	/* WWW-Authenticate: Basic */
	bool		 cacheable;	/* the static files */
	long		 retry_after_s;
	bool		 suspended;	/* answered by console_http_resume */
};

int		 console_form_parse(const char *, size_t,
		    struct console_form *, const char **why);
const char	*console_form_get(const struct console_form *,
		    const char *name);
void		 console_form_free(struct console_form *);
int		 console_basic_parse(const char *header, char **user,
		    char **password);
const char	*console_query(const struct console_request *,
		    const char *name);
void		 console_reply_cookie(struct console_reply *,
		    const struct console *, const struct console_session *);
void		 console_reply_text(struct console_reply *, unsigned status,
		    const char *text);
struct console_http *console_http_start(struct console *);
int		 console_http_fd(const struct console_http *);
void		 console_http_run(struct console_http *);
void		 console_http_timers(struct console_http *, int64_t now,
		    int64_t *next);
void		 console_http_suspend(struct console_request *);
void		 console_http_resume(void *conn, void *upload,
		    const char *location);

/* ---- console_page.c: the pages, and the actions they post ---- */

void		 console_route(struct console_request *,
		    struct console_reply *);

/* ---- console_html.c: escaping, and what every page shares ---- */

extern const char console_css[];
extern const char console_js[];

void		 console_html(struct buf *, const char *);
void		 console_html_n(struct buf *, const char *, size_t);
void		 console_url_part(struct buf *, const char *);
void		 console_queue_href(struct buf *, const char *queue,
		    const char *then);
void		 console_queue_link(struct buf *, const char *queue);
int		 console_key_decode(const char *hex, struct buf *);
void		 console_page_begin(struct buf *, const struct console_request *,
		    const char *title, bool refresh);
void		 console_page_end(struct buf *);

/* console_page.c, for console_failed.c */
void		 console_csrf_field(struct buf *, const struct console_request *);
void		 console_log_action(struct console_request *, const char *what,
		    const char *queue, long long rows, const char *detail);
void		 console_redirect(struct console_reply *, const char *location);
void		 console_not_found(struct console_request *,
		    struct console_reply *, const char *what);
struct rowset;
void		 console_rows_table(struct buf *, const struct column *,
		    size_t ncols, const struct rowset *, const char *key_column,
		    const char *id, const char *link_queue,
		    const char *link_column);

/* ---- console_failed.c: a queue's failed rows, requeue and discard ---- */

void		 console_failed_page(struct console_request *,
		    struct console_reply *, const struct queue *);
void		 console_failed_post(struct console_request *,
		    struct console_reply *, const struct queue *);
void		 console_failed_api(struct console_request *,
		    struct console_reply *, const struct queue *);

/* ---- console_row.c: one row's page, what rowq show says ---- */

void		 console_row_page(struct console_request *,
		    struct console_reply *, const struct queue *);
void		 console_row_api(struct console_request *,
		    struct console_reply *, const struct queue *);
void		 console_row_href(struct buf *, const char *queue,
		    const char *key, size_t len);
void		 console_row_link(struct buf *, const char *queue,
		    const char *key, size_t len, const char *text,
		    size_t text_len);
bool		 console_key_binary(struct db *, const char *sql,
		    const char *key_column);
void		 console_row_status_link(struct console *, struct buf *,
		    const struct queue *, const char *key, int *binary);
void		 console_row_find(struct buf *, const struct queue *,
		    const char *value);

/* ---- console_schedule.c: the Schedules page ---- */

void		 console_schedules_page(struct console_request *,
		    struct console_reply *);

/* ---- console_search.c: a queue's rows by a column's value ---- */

void		 console_search_page(struct console_request *,
		    struct console_reply *, const struct queue *);

/* ---- console_group.c: a queue's groups (group_by:) ---- */

void		 console_groups(struct console *, struct buf *,
		    const struct queue *);
void		 console_groups_api(struct console_request *,
		    struct console_reply *, const struct queue *);

/* ---- console_bulk.c: an action on every failed row, in a child ---- */

bool		 console_bulk_start(struct console_request *,
		    struct console_reply *, const struct queue *,
		    const struct failed_action *, const char *error,
		    const char *back);
int		 console_bulk_fd(const struct console *);
void		 console_bulk_handle(struct console *);
void		 console_bulk_timers(struct console *, int64_t now,
		    int64_t *next);

/* ---- console_chart.c: SVG charts of a queue's hour ---- */

void		 console_chart(struct buf *, const struct history_queue *,
		    int64_t now_minute, bool small);

#endif /* CONSOLE_H */
