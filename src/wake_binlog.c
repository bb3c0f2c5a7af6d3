/*
 * wake_binlog.c: wake: binlog.  The daemon follows the server's binary
 * log as a replica does (libmariadb's mariadb_rpl_* API) and, when a
 * transaction that wrote a table a binlog queue's select reads commits,
 * has the wake watcher read that queue at once (wake_watch_index): the
 * same read and the same wake as every `idle`, only sooner.
 *
 * One follower child per daemon, for all its binlog queues, apart from
 * the wake watcher: mariadb_rpl_fetch blocks until the server sends an
 * event, and in the watcher that wait would hold up its reads, which
 * stay the floor (rows due by time, retry_at, write no event) and the
 * fallback.  Apart, a follower that hangs, dies or cannot follow costs
 * the binlog wakes only; the queues are polled as without it.
 *
 * The follower starts at the server's current position (SHOW MASTER
 * STATUS), never reads old events, and after each (re)connection asks
 * for a read of every binlog queue, for what it missed meanwhile.  It
 * tells the supervisor whether it follows, and how far behind it is:
 * the seconds between an event's timestamp and now, 0 at a heartbeat
 * (the server sends one each second while it has nothing else to send).
 */
#include "rowq.h"
#include "db.h"
#include "dialect.h"
#include "db_private.h"
#include "supervisor.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <mariadb_rpl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* A follower that died starts again this long after. */
#define BINLOG_RESTART_MS	1000
/* After a lost or refused connection: wait, doubling up to the max. */
#define BINLOG_RETRY_MS		1000
#define BINLOG_RETRY_MAX_MS	30000
/* A connection that followed this long starts the backoff over. */
#define BINLOG_STEADY_MS	60000
/* The server sends a heartbeat event after this much silence. */
#define BINLOG_HEARTBEAT_NS	"1000000000"
/*
 * The largest event read; a bigger one (a row of huge blobs) ends the
 * connection, and the follower starts again after it.  The server splits
 * row events at binlog_row_event_max_size (8 KiB by default).
 */
#define BINLOG_EVENT_MAX	(16 * 1024 * 1024)
/* Tables watched, in all, and per queue. */
#define BINLOG_TABLES_MAX	64
/* Table ids remembered from TABLE_MAP events. */
#define BINLOG_IDS_MAX		64
/* The follower reports its position at most this often. */
#define BINLOG_REPORT_MS	1000

#define NAME_MAX_LEN		64	/* a schema or table name, in chars */

enum binlog_report_kind {
	BINLOG_STATE,		/* following or not, lag, position */
	BINLOG_WAKE,		/* a table of queue `queue` changed */
};

/* One report, written whole to the pipe (smaller than PIPE_BUF). */
struct binlog_report {
	int		 generation;
	int		 kind;
	int		 queue;			/* BINLOG_WAKE */
	int		 following;		/* BINLOG_STATE: 0 or 1 */
	long long	 lag_s;
	unsigned long	 pos;
	char		 file[64];
	unsigned char	 watched[QUEUES_MAX / 8];	/* queues followed */
};

/* A table some binlog queue reads, and which queues. */
struct binlog_table {
	char		 schema[NAME_MAX_LEN * 4 + 1];
	char		 name[NAME_MAX_LEN * 4 + 1];
	unsigned char	 queues[QUEUES_MAX / 8];
};

struct binlog_follower {
	const struct config *cfg;
	int		 generation;
	int		 out;
	struct binlog_table tables[BINLOG_TABLES_MAX];
	size_t		 ntables;
	struct {
		unsigned long long id;
		int	 table;		/* -1: a table no queue reads */
	}		 ids[BINLOG_IDS_MAX];
	size_t		 nids, next_id;
	unsigned char	 pending[QUEUES_MAX / 8];	/* until the commit */
	unsigned char	 watched[QUEUES_MAX / 8];
	char		 file[64];
	unsigned long	 pos;
	long long	 lag_s;
	int64_t		 reported_ms;
	char		 logged[256];	/* the last fallback reason logged */
};

#define BIT_SET(set, i)		((set)[(i) / 8] |= (unsigned char)(1u << ((i) % 8)))
#define BIT_ISSET(set, i)	(((set)[(i) / 8] >> ((i) % 8)) & 1u)

/* ---- what the server must give: rowq check and the follower ---- */

/* Whether one of the user's global grants (ON *.*) names priv. */
static bool
binlog_granted(const struct rowset *rs, const char *priv)
{
	for (size_t i = 0; i < rs->nrows; i++) {
		const char *g = rs->rows[i].value[0];
		if (g == NULL || strstr(g, " ON *.* ") == NULL)
			continue;
		if (strstr(g, "ALL PRIVILEGES") != NULL ||
		    strstr(g, priv) != NULL)
			return true;
	}
	return false;
}

/*
 * What the server lacks for following its binary log, in words, into
 * why ("" when nothing).  Returns the number of things missing; -1 when
 * the server could not be asked.
 */
int
wake_binlog_missing(struct db *db, struct buf *why)
{
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	int missing = 0;

	buf_reset(why);
	if (db_query(db, "SELECT @@log_bin, @@binlog_format", &rs, &cols,
	    &ncols) != DB_OK || rs.nrows != 1 || ncols != 2) {
		rowset_free(&rs, ncols);
		columns_free(cols, ncols);
		return -1;
	}
	if (rs.rows[0].value[0] == NULL ||
	    strcmp(rs.rows[0].value[0], "1") != 0) {
		buf_puts(why, "the binary log is off (log_bin)");
		missing++;
	} else if (rs.rows[0].value[1] == NULL ||
	    (strcmp(rs.rows[0].value[1], "ROW") != 0 &&
	    strcmp(rs.rows[0].value[1], "MIXED") != 0)) {
		buf_printf(why, "binlog_format is %s, not ROW or MIXED",
		    rs.rows[0].value[1] ? rs.rows[0].value[1] : "NULL");
		missing++;
	}
	rowset_free(&rs, ncols);
	rs = (struct rowset){ 0 };
	columns_free(cols, ncols);
	cols = NULL;
	ncols = 0;
	if (db_query(db, "SHOW GRANTS", &rs, &cols, &ncols) != DB_OK ||
	    ncols < 1) {
		rowset_free(&rs, ncols);
		columns_free(cols, ncols);
		return -1;
	}
	if (!binlog_granted(&rs, "REPLICATION SLAVE")) {
		buf_printf(why, "%sthe user lacks the grant REPLICATION SLAVE ON *.*",
		    missing ? "; " : "");
		missing++;
	}
	if (!binlog_granted(&rs, "BINLOG MONITOR") &&
	    !binlog_granted(&rs, "REPLICATION CLIENT")) {
		buf_printf(why, "%sthe user lacks the grant BINLOG MONITOR "
		    "(or REPLICATION CLIENT) ON *.*", missing ? "; " : "");
		missing++;
	}
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	return missing;
}

/*
 * The tables a queue's select reads, as its prepared statement's columns
 * say (their schema and original table): the tables whose row events
 * wake it.  A column computed from no table names none.  Returns how
 * many were added to tables; -1 when the select cannot be prepared.
 */
static int
binlog_queue_tables(struct db *db, const struct queue *q, size_t qi,
    struct binlog_table *tables, size_t *ntables)
{
	enum db_status st;
	struct db_stmt *s = db_prepare(db, q->select.positional, &st);
	MYSQL_RES *meta;
	int added = 0;

	if (s == NULL)
		return -1;
	if ((meta = mysql_stmt_result_metadata(s->stmt)) == NULL) {
		db_stmt_free(s);
		return 0;
	}
	unsigned n = mysql_num_fields(meta);
	MYSQL_FIELD *f = mysql_fetch_fields(meta);
	for (unsigned i = 0; i < n; i++) {
		size_t k;
		if (f[i].org_table == NULL || f[i].org_table[0] == '\0' ||
		    f[i].db == NULL || f[i].db[0] == '\0' ||
		    strlen(f[i].org_table) >= sizeof(tables[0].name) ||
		    strlen(f[i].db) >= sizeof(tables[0].schema))
			continue;
		for (k = 0; k < *ntables; k++)
			if (strcmp(tables[k].schema, f[i].db) == 0 &&
			    strcmp(tables[k].name, f[i].org_table) == 0)
				break;
		if (k == *ntables) {
			if (*ntables == BINLOG_TABLES_MAX)
				continue;
			memset(&tables[k], 0, sizeof(tables[k]));
			snprintf(tables[k].schema, sizeof(tables[k].schema),
			    "%s", f[i].db);
			snprintf(tables[k].name, sizeof(tables[k].name), "%s",
			    f[i].org_table);
			(*ntables)++;
		}
		if (!BIT_ISSET(tables[k].queues, qi))
			added++;
		BIT_SET(tables[k].queues, qi);
	}
	mysql_free_result(meta);
	db_stmt_free(s);
	return added;
}

/* ---- the follower child ---- */

static void
binlog_report(struct binlog_follower *f, int kind, int queue, bool following)
{
	struct binlog_report r = {
		.generation = f->generation, .kind = kind, .queue = queue,
		.following = following, .lag_s = f->lag_s, .pos = f->pos,
	};

	snprintf(r.file, sizeof(r.file), "%s", f->file);
	memcpy(r.watched, f->watched, sizeof(r.watched));
	if (write(f->out, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(0);	/* the supervisor is gone */
	if (kind == BINLOG_STATE)
		f->reported_ms = now_ms();
}

/* A fallback's reason, logged when it is not the last one logged. */
static void
binlog_fallback(struct binlog_follower *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
binlog_fallback(struct binlog_follower *f, const char *fmt, ...)
{
	char why[sizeof(f->logged)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (strcmp(why, f->logged) != 0)
		log_warnx("wake: binlog: %s; the binlog queues are polled "
		    "until it can follow", why);
	snprintf(f->logged, sizeof(f->logged), "%s", why);
	binlog_report(f, BINLOG_STATE, -1, false);
}

/* The table a TABLE_MAP event names, if a queue reads it, else -1. */
static int
binlog_table_find(const struct binlog_follower *f, const MARIADB_STRING *schema,
    const MARIADB_STRING *name)
{
	for (size_t i = 0; i < f->ntables; i++) {
		const struct binlog_table *t = &f->tables[i];
		if (strlen(t->schema) == schema->length &&
		    memcmp(t->schema, schema->str, schema->length) == 0 &&
		    strlen(t->name) == name->length &&
		    memcmp(t->name, name->str, name->length) == 0)
			return (int)i;
	}
	return -1;
}

/* Remember a table id (the oldest is forgotten when all are in use). */
static void
binlog_table_map(struct binlog_follower *f, const MARIADB_RPL_EVENT *ev)
{
	const struct st_mariadb_rpl_table_map_event *m = &ev->event.table_map;
	size_t i;

	for (i = 0; i < f->nids; i++)
		if (f->ids[i].id == m->table_id)
			break;
	if (i == f->nids) {
		if (f->nids < BINLOG_IDS_MAX)
			i = f->nids++;
		else {
			i = f->next_id;
			f->next_id = (f->next_id + 1) % BINLOG_IDS_MAX;
		}
	}
	f->ids[i].id = m->table_id;
	f->ids[i].table = binlog_table_find(f, &m->database, &m->table);
}

static void
binlog_rows(struct binlog_follower *f, uint64_t table_id)
{
	for (size_t i = 0; i < f->nids; i++) {
		if (f->ids[i].id != table_id || f->ids[i].table < 0)
			continue;
		const struct binlog_table *t = &f->tables[f->ids[i].table];
		for (size_t b = 0; b < sizeof(f->pending); b++)
			f->pending[b] |= t->queues[b];
	}
}

/* A case-insensitive search for a name in a statement of len bytes. */
static bool
binlog_mentions(const char *s, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; n > 0 && i + n <= len; i++)
		if (strncasecmp(s + i, name, n) == 0)
			return true;
	return false;
}

/*
 * A statement logged as text (binlog_format MIXED): a queue whose table
 * it names is woken at the commit.  A name in a string or comment wakes
 * it for nothing, at the cost of one read.
 */
static void
binlog_query(struct binlog_follower *f, const MARIADB_STRING *q)
{
	for (size_t i = 0; i < f->ntables; i++)
		if (binlog_mentions(q->str, q->length, f->tables[i].name))
			for (size_t b = 0; b < sizeof(f->pending); b++)
				f->pending[b] |= f->tables[i].queues[b];
}

/* The transaction committed: wake the queues whose tables it wrote. */
static void
binlog_commit(struct binlog_follower *f)
{
	for (size_t i = 0; i < f->cfg->nqueues && i < QUEUES_MAX; i++)
		if (BIT_ISSET(f->pending, i))
			binlog_report(f, BINLOG_WAKE, (int)i, true);
	memset(f->pending, 0, sizeof(f->pending));
}

static void
binlog_event(struct binlog_follower *f, const MARIADB_RPL_EVENT *ev)
{
	const MARIADB_STRING *q = &ev->event.query.statement;

	if (ev->next_event_pos != 0)
		f->pos = ev->next_event_pos;
	if (ev->timestamp != 0) {
		long long lag = (long long)time(NULL) - ev->timestamp;
		f->lag_s = lag > 0 ? lag : 0;
	}
	switch (ev->event_type) {
	case TABLE_MAP_EVENT:
		binlog_table_map(f, ev);
		break;
	case XID_EVENT:
		binlog_commit(f);
		break;
	case QUERY_EVENT:
		if (q->length == 6 && strncasecmp(q->str, "COMMIT", 6) == 0)
			binlog_commit(f);
		else if (!(q->length == 5 &&
		    strncasecmp(q->str, "BEGIN", 5) == 0))
			binlog_query(f, q);
		break;
	case ROTATE_EVENT:
		snprintf(f->file, sizeof(f->file), "%.*s",
		    (int)ev->event.rotate.filename.length,
		    ev->event.rotate.filename.str);
		f->pos = (unsigned long)ev->event.rotate.position;
		break;
	case HEARTBEAT_LOG_EVENT:
		/* Nothing more to send: the follower is at the end. */
		f->lag_s = 0;
		break;
	default:
		if (IS_ROW_EVENT(ev))
			binlog_rows(f, ev->event.rows.table_id);
		break;
	}
	if (now_ms() - f->reported_ms >= BINLOG_REPORT_MS)
		binlog_report(f, BINLOG_STATE, -1, true);
}

/* Which tables each binlog queue reads; false when none can be followed. */
static bool
binlog_derive_tables(struct binlog_follower *f, struct db *db)
{
	f->ntables = 0;
	memset(f->watched, 0, sizeof(f->watched));
	for (size_t i = 0; i < f->cfg->nqueues && i < QUEUES_MAX; i++) {
		const struct queue *q = &f->cfg->queues[i];
		if (!q->wake_binlog)
			continue;
		int n = binlog_queue_tables(db, q, i, f->tables, &f->ntables);
		if (n > 0)
			BIT_SET(f->watched, i);
		else
			log_warnx("%s: binlog: %s (the queue is polled)",
			    q->wake_where, n < 0 ? db_error(db) :
			    "its select names no table by its columns");
	}
	for (size_t i = 0; i < sizeof(f->watched); i++)
		if (f->watched[i] != 0)
			return true;
	return false;
}

/* The server's current binary log file and position. */
static bool
binlog_position(struct binlog_follower *f, struct db *db)
{
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	bool ok = false;

	if (db_query(db, dialect_binlog_position(db_dialect(db),
	    db_server_version(db)), &rs, &cols, &ncols) == DB_OK &&
	    rs.nrows == 1 && ncols >= 2 && rs.rows[0].value[0] != NULL &&
	    rs.rows[0].value[1] != NULL &&
	    strlen(rs.rows[0].value[0]) < sizeof(f->file)) {
		snprintf(f->file, sizeof(f->file), "%s", rs.rows[0].value[0]);
		f->pos = strtoul(rs.rows[0].value[1], NULL, 10);
		ok = f->pos >= 4;
	}
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	return ok;
}

/*
 * A server_id of our own: high (operators number their servers from 1)
 * and random, so that two daemons do not take each other's dump
 * (a server ends the older of two dumps with the same id).
 */
static uint32_t
binlog_server_id(void)
{
	return 0x80000000u | (uint32_t)((backoff_random() ^
	    (uint64_t)getpid()) & 0x7fffffffu);
}

/*
 * The dump, on a connection of its own: checksums as the server writes
 * them, MariaDB's events (GTID, not rewritten), a heartbeat each second
 * of silence, no event bigger than BINLOG_EVENT_MAX.
 */
static MARIADB_RPL *
binlog_open(struct binlog_follower *f, struct db *dump)
{
	MYSQL *m = dump->mysql;
	MARIADB_RPL *rpl;
	uint32_t id = binlog_server_id();

	if (mysql_query(m, "SET @master_binlog_checksum = "
	    "@@global.binlog_checksum, @mariadb_slave_capability = 4, "
	    "@master_heartbeat_period = " BINLOG_HEARTBEAT_NS) != 0)
		return NULL;
	/* libmariadb reads the limit at connecting; the link is up. */
	m->net.max_packet_size = BINLOG_EVENT_MAX;
	if ((rpl = mariadb_rpl_init(m)) == NULL)
		return NULL;
	if (mariadb_rpl_optionsv(rpl, MARIADB_RPL_FILENAME, f->file,
	    strlen(f->file)) != 0 ||
	    mariadb_rpl_optionsv(rpl, MARIADB_RPL_START, f->pos) != 0 ||
	    mariadb_rpl_optionsv(rpl, MARIADB_RPL_SERVER_ID, id) != 0 ||
	    mariadb_rpl_optionsv(rpl, MARIADB_RPL_FLAGS, 0) != 0 ||
	    mariadb_rpl_open(rpl) != 0) {
		mariadb_rpl_close(rpl);
		return NULL;
	}
	return rpl;
}

/* Read events until the connection ends. */
static void
binlog_follow_events(struct binlog_follower *f, MARIADB_RPL *rpl,
    struct db *dump)
{
	MARIADB_RPL_EVENT *ev = NULL;

	if (f->logged[0] != '\0')
		log_info("wake: binlog: following %s from %lu", f->file,
		    f->pos);
	f->logged[0] = '\0';
	f->lag_s = 0;
	binlog_report(f, BINLOG_STATE, -1, true);
	/* What was written before the dump began: read it all once. */
	for (size_t i = 0; i < f->cfg->nqueues && i < QUEUES_MAX; i++)
		if (BIT_ISSET(f->watched, i))
			binlog_report(f, BINLOG_WAKE, (int)i, true);
	while ((ev = mariadb_rpl_fetch(rpl, ev)) != NULL)
		binlog_event(f, ev);
	binlog_fallback(f, "the binary log connection ended: %s",
	    mysql_errno(dump->mysql) != 0 ? mysql_error(dump->mysql) :
	    mariadb_rpl_error(rpl));
}

/* One connection: check, find the tables and the position, follow. */
static void
binlog_follow(struct binlog_follower *f)
{
	enum db_status st;
	struct db *db = db_open(&f->cfg->db, &st), *dump = NULL;
	struct buf why = { 0 };
	MARIADB_RPL *rpl;

	if (st != DB_OK)
		binlog_fallback(f, "cannot connect: %s", db_error(db));
	else if (wake_binlog_missing(db, &why) != 0)
		binlog_fallback(f, "cannot follow the binary log: %s", why.len ?
		    why.data : "the server does not say what it allows");
	else if (!binlog_derive_tables(f, db))
		binlog_fallback(f, "no binlog queue names a table");
	else if (!binlog_position(f, db))
		binlog_fallback(f, "%s: %s", dialect_binlog_position(
		    db_dialect(db), db_server_version(db)), db_error(db));
	/* db_open returns a handle even when it fails, its error inside. */
	else if ((dump = db_open(&f->cfg->db, &st), st != DB_OK))
		binlog_fallback(f, "cannot connect: %s", db_error(dump));
	else if ((rpl = binlog_open(f, dump)) == NULL)
		binlog_fallback(f, "cannot follow %s from %lu: %s", f->file,
		    f->pos, mysql_error(dump->mysql));
	else {
		db_close(db);
		db = NULL;
		binlog_follow_events(f, rpl, dump);
		mariadb_rpl_close(rpl);
	}
	buf_free(&why);
	db_close(db);
	db_close(dump);
}

static _Noreturn void
binlog_child(const struct config *cfg, int generation, int out)
{
	static struct binlog_follower f;
	int64_t delay = BINLOG_RETRY_MS;

	log_procinit("wake binlog");
	proc_title("rowq: wake binlog");
	f.cfg = cfg;
	f.generation = generation;
	f.out = out;
	f.lag_s = -1;
	snprintf(f.logged, sizeof(f.logged), "starting");
	for (;;) {
		int64_t began = now_ms();
		binlog_follow(&f);
		if (now_ms() - began >= BINLOG_STEADY_MS)
			delay = BINLOG_RETRY_MS;
		/* Jittered, so that daemons do not come back in step. */
		(void)poll(NULL, 0, (int)(delay / 2 +
		    (int64_t)(backoff_random() % (uint64_t)delay)));
		delay = delay * 2 < BINLOG_RETRY_MAX_MS ? delay * 2 :
		    BINLOG_RETRY_MAX_MS;
	}
}

/* ---- the supervisor's side ---- */

static bool
binlog_wanted(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->nqueues; i++)
		if (cfg->queues[i].wake_binlog)
			return true;
	return false;
}

static void
binlog_fork(struct supervisor *s)
{
	struct binlog_state *b = &s->binlog;
	pid_t pid, parent = getpid();
	int up[2];

	b->child.next_start_ms = now_ms() + BINLOG_RESTART_MS;
	if (pipe2(up, O_CLOEXEC) == -1) {
		log_warn("pipe for the binlog follower");
		return;
	}
	if ((pid = fork()) == -1) {
		log_warn("fork for the binlog follower");
		close(up[0]);
		close(up[1]);
		return;
	}
	if (pid == 0) {
		/* Its end goes to 1, below what proc_close_inherited closes. */
		if (dup2(up[1], 1) == -1)
			_exit(1);
		proc_helper_child(parent);
		binlog_child(s->current->cfg, s->current->number, 1);
	}
	close(up[1]);
	(void)fcntl(up[0], F_SETFL, O_NONBLOCK);
	b->child.pid = pid;
	b->child.fd = up[0];
	b->child.generation = s->current->number;
	b->following = false;
	b->lag_s = -1;
}

static void
wake_binlog_start(struct supervisor *s)
{
	s->binlog.child.fd = -1;
	if (!s->opts->drain && binlog_wanted(s->current->cfg))
		binlog_fork(s);
}

static void
binlog_close(struct binlog_state *b)
{
	if (b->child.fd != -1)
		close(b->child.fd);
	b->child.fd = -1;
	b->following = false;
}

static void
wake_binlog_stop(struct supervisor *s)
{
	struct binlog_state *b = &s->binlog;

	helper_child_kill(&b->child);
	binlog_close(b);
}

static bool
wake_binlog_reaped(struct supervisor *s, pid_t pid, int status)
{
	(void)status;
	return helper_child_reaped(&s->binlog.child, pid, BINLOG_RESTART_MS);
}

/*
 * Start the follower when a queue wants it; after a reload, replace the
 * one that follows for the old generation's queues.
 */
static void
wake_binlog_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	struct binlog_state *b = &s->binlog;

	if (s->opts->drain || s->stopping)
		return;
	helper_child_retire(&b->child, s->current->number);
	if (b->child.pid == 0 && b->child.fd != -1)
		binlog_close(b);
	if (binlog_wanted(s->current->cfg) &&
	    helper_child_due(&b->child, now, next))
		binlog_fork(s);
}

static void
wake_binlog_poll_fds(struct supervisor *s, struct pollfd *p, nfds_t *np)
{
	helper_child_poll_fd(&s->binlog.child, p, np);
}

static void
wake_binlog_handle(struct supervisor *s, const struct pollfd *p, nfds_t np)
{
	struct binlog_state *b = &s->binlog;
	struct binlog_report r;
	ssize_t n;

	if (np == 0 || b->child.fd == -1 || p[0].revents == 0)
		return;
	while ((n = read(b->child.fd, &r, sizeof(r))) == (ssize_t)sizeof(r)) {
		if (r.generation != s->current->number || s->stopping)
			continue;
		if (r.kind == BINLOG_WAKE && r.queue >= 0 &&
		    (size_t)r.queue < s->current->cfg->nqueues) {
			log_debug("wake: binlog: %s",
			    s->current->cfg->queues[r.queue].name);
			wake_watch_index(s, (size_t)r.queue, true);
		}
		b->following = r.following != 0;
		b->lag_s = r.lag_s;
		b->pos = r.pos;
		memcpy(b->file, r.file, sizeof(b->file));
		b->file[sizeof(b->file) - 1] = '\0';
		memcpy(b->watched, r.watched, sizeof(b->watched));
	}
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
		binlog_close(b);
}

/*
 * How the queue's idle workers learn of rows: "poll", "binlog", or
 * "binlog-fallback" (wake: binlog, not followed now).  *lag_s: how far
 * behind the follower is, -1 unknown or not followed.
 */
const char *
wake_binlog_mode(const struct supervisor *s, const struct queue *q,
    long long *lag_s)
{
	const struct binlog_state *b = &s->binlog;
	const struct config *cfg = s->current->cfg;
	size_t i = (size_t)(q - cfg->queues);

	*lag_s = -1;
	if (!q->wake_binlog)
		return "poll";
	if (i >= cfg->nqueues || i >= QUEUES_MAX || b->child.pid == 0 ||
	    !b->following || b->child.generation != s->current->number ||
	    !BIT_ISSET(b->watched, i))
		return "binlog-fallback";
	*lag_s = b->lag_s;
	return "binlog";
}

/* rowq check: a binlog queue on a server that cannot give one: warn. */
void
wake_binlog_check(struct db *db, const struct queue *q)
{
	struct buf why = { 0 };
	struct binlog_table t[BINLOG_TABLES_MAX];
	size_t nt = 0;
	int missing;

	if (!q->wake_binlog)
		return;
	missing = wake_binlog_missing(db, &why);
	if (missing < 0)
		log_warnx("%s: binlog: cannot ask the server what it allows "
		    "(%s): the queue may be polled", q->wake_where,
		    db_error(db));
	else if (missing > 0)
		log_warnx("%s: binlog: cannot follow the binary log: %s: the "
		    "queue falls back to polling", q->wake_where, why.data);
	else if (binlog_queue_tables(db, q, 0, t, &nt) == 0)
		log_warnx("%s: binlog: the select names no table by its "
		    "columns: the queue falls back to polling", q->wake_where);
	buf_free(&why);
}

const struct supervisor_part wake_binlog_part = {
	.name = "binlog follower",
	.poll_max = 1,
	.start = wake_binlog_start,
	.stop = wake_binlog_stop,
	.tick = wake_binlog_tick,
	.poll_fds = wake_binlog_poll_fds,
	.handle = wake_binlog_handle,
	.reaped = wake_binlog_reaped,
};
