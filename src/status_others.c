/*
 * status_others.c: what the other daemons' workers run, for status --by
 * and the console's group view (status_group.c).  Each daemon that writes
 * its row in the daemons table (heartbeat.c) puts there, in its running
 * column, the groups its busy workers are on, per queue with group_by:,
 * as JSON:
 *
 *	[{"q":"item","g":"b1","n":2,"cut":0},{"q":"item","g":null,...}]
 *
 * (g null: the group_by: column is NULL; cut 1: g is the start of a
 * longer value, as a worker keeps STATUS_GROUP_VALUE_MAX - 1 bytes of
 * it), at most STATUS_OTHERS_JSON_MAX bytes.  Its figures are as of its
 * last heartbeat (HEARTBEAT_EVERY_MS).  A reader adds those of the daemons
 * seen within HEARTBEAT_GONE_INTERVALS heartbeats, but for the one that
 * answered it on the status socket (its own figures are fresher), to RUN.
 * The server reads the JSON (JSON_TABLE), by a plain read without locks:
 * a row that is not JSON, or an entry of the wrong shape, counts nothing.
 */
#include "rowq.h"
#include "console.h"
#include "db.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An entry's n beyond this is not a count of workers: ignored. */
#define STATUS_OTHERS_N_MAX	1000000
/* Entries read at most, of every live daemon's rows. */
#define STATUS_OTHERS_ROWS_MAX	10000

/* A cut value's length, less a UTF-8 sequence the cut split. */
static size_t
status_others_whole(const char *v, size_t len)
{
	size_t p = len, back = 0;
	unsigned char c;

	while (p > 0 && back < 4 && ((unsigned char)v[p - 1] & 0xc0) == 0x80) {
		p--;
		back++;
	}
	if (p == 0)
		return len;
	c = (unsigned char)v[p - 1];
	if (c < 0x80)
		return len;
	if ((c >= 0xf0 && back < 3) || (c >= 0xe0 && c < 0xf0 && back < 2) ||
	    (c >= 0xc0 && c < 0xe0 && back < 1))
		return p - 1;
	return len;
}

static void
status_others_entry(struct buf *e, const char *queue,
    const struct run_group *g)
{
	buf_puts(e, "{\"q\":");
	json_string(e, queue, strlen(queue));
	buf_puts(e, ",\"g\":");
	if (g->value == NULL)
		buf_puts(e, "null");
	else
		json_string(e, g->value, g->cut ? status_others_whole(g->value,
		    strlen(g->value)) : strlen(g->value));
	buf_printf(e, ",\"n\":%ld,\"cut\":%d}", g->n, g->cut ? 1 : 0);
}

/*
 * The running column of this daemon's row: the groups of its busy
 * workers (lv, its status socket's answer) per queue with group_by:.
 * Groups past STATUS_OTHERS_JSON_MAX bytes are left out.
 */
void
status_others_json(struct buf *b, const struct config *cfg,
    const struct live *lv)
{
	struct buf e = { 0 };
	size_t n = 0;

	buf_putc(b, '[');
	for (size_t i = 0; lv->text != NULL && i < cfg->nqueues; i++) {
		const struct queue *q = &cfg->queues[i];
		struct run_groups r = { 0 };
		if (q->group_by.name == NULL)
			continue;
		status_group_running(lv, q, &r);
		for (size_t k = 0; k < r.n; k++) {
			e.len = 0;
			status_others_entry(&e, q->name, &r.g[k]);
			if (b->len + e.len + 2 > STATUS_OTHERS_JSON_MAX)
				break;
			if (n++ > 0)
				buf_putc(b, ',');
			buf_puts(b, e.data);
		}
		run_groups_free(&r);
	}
	buf_putc(b, ']');
	buf_free(&e);
}

/* The daemon that answered on the status socket: its host and pid. */
static void
status_others_self(const struct live *lv, char *host, size_t hostlen,
    long *pid)
{
	const struct line *d = NULL;
	size_t i = 0;

	*pid = 0;
	snprintf(host, hostlen, "%s", "");
	if (lv == NULL || lv->text == NULL ||
	    (d = status_live_find(lv, "daemon", NULL, &i)) == NULL)
		return;
	*pid = atol(status_live_value(d, "pid"));
	snprintf(host, hostlen, "%s", status_live_value(d, "host"));
	/* A daemon that does not say: the socket is local, so is it. */
	if (host[0] == '\0' && gethostname(host, hostlen - 1) == -1)
		host[0] = '\0';
	host[hostlen - 1] = '\0';
}

/* The live rows but the answering daemon's, as a WHERE clause. */
static void
status_others_where(struct buf *sql)
{
	buf_printf(sql, " WHERE d.seen >= NOW() - INTERVAL %d SECOND AND "
	    "NOT (d.host = ? AND d.pid = ?)", HEARTBEAT_EVERY_MS *
	    HEARTBEAT_GONE_INTERVALS / 1000);
}

static enum db_status
status_others_fetch(struct db *db, const char *sql, struct value *vals,
    size_t nvals, struct rowset *rs, size_t *ncols)
{
	struct db_stmt *s;
	enum db_status st;

	*ncols = 0;
	if ((s = db_prepare(db, sql, &st)) == NULL)
		return st;
	st = db_stmt_fetch_all(s, vals, nvals, rs);
	(void)db_stmt_columns(s, ncols);
	db_stmt_free(s);
	return st;
}

/*
 * How many live daemons, other than the answering one, the table has,
 * with and without their running groups, and the oldest heartbeat of
 * those with.  A table without the running column (not upgraded yet) has
 * only daemons without.  -1: the table cannot be read (out->error).
 */
static int
status_others_count(struct db *db, const struct config *cfg,
    struct value *vals, struct status_others *out)
{
	struct rowset rs = { 0 };
	struct buf sql = { 0 };
	enum db_status st = DB_OK;
	size_t ncols = 0;
	bool column = true;	/* running: not there before an upgrade */

	for (int tries = 0; tries < 2; tries++) {
		buf_free(&sql);
		buf_printf(&sql, "SELECT COUNT(*) - %s, %s, MAX(CASE WHEN %s "
		    "THEN TIMESTAMPDIFF(SECOND, d.seen, NOW()) END) FROM %s d",
		    column ? "SUM(d.running IS NULL)" : "COUNT(*)",
		    column ? "SUM(d.running IS NULL)" : "COUNT(*)",
		    column ? "d.running IS NOT NULL" : "FALSE",
		    heartbeat_table(cfg));
		status_others_where(&sql);
		st = status_others_fetch(db, sql.data, vals, 2, &rs, &ncols);
		if (st == DB_OK || !column || !db_no_such_column(db))
			break;
		column = false;
	}
	if (st == DB_OK && rs.nrows == 1 && ncols == 3) {
		char *const *v = rs.rows[0].value;
		out->counted = v[0] ? atol(v[0]) : 0;
		out->blind = v[1] ? atol(v[1]) : 0;
		out->oldest_s = v[2] ? atoll(v[2]) : -1;
	} else if (st != DB_OK && !db_no_such_table(db))
		snprintf(out->error, sizeof(out->error), "%s: %s",
		    heartbeat_table(cfg), db_error(db));
	rowset_free(&rs, ncols);
	buf_free(&sql);
	return out->error[0] != '\0' ? -1 : 0;
}

/* The entries of q, of the live daemons but the answering one, into r. */
static int
status_others_groups(struct db *db, const struct config *cfg,
    const struct queue *q, struct value *vals, struct run_groups *r,
    struct status_others *out)
{
	struct rowset rs = { 0 };
	struct buf sql = { 0 };
	size_t ncols = 0;
	int rc = 0;

	buf_printf(&sql, "SELECT j.q, j.g, j.n, j.cut FROM %s d, JSON_TABLE("
	    "IF(JSON_VALID(d.running), d.running, '[]'), '$[*]' COLUMNS ("
	    "q VARCHAR(%d) PATH '$.q', g VARCHAR(%d) PATH '$.g', "
	    "n INT PATH '$.n', cut INT PATH '$.cut')) AS j",
	    heartbeat_table(cfg), HISTORY_NAME_MAX, STATUS_GROUP_VALUE_MAX);
	status_others_where(&sql);
	buf_printf(&sql, " AND j.q = ? LIMIT %d", STATUS_OTHERS_ROWS_MAX);
	if (status_others_fetch(db, sql.data, vals, 3, &rs, &ncols) != DB_OK) {
		snprintf(out->error, sizeof(out->error), "%s: %s",
		    heartbeat_table(cfg), db_error(db));
		rc = -1;
	}
	for (size_t i = 0; rc == 0 && ncols == 4 && i < rs.nrows; i++) {
		char *const *v = rs.rows[i].value;
		long n = v[2] ? atol(v[2]) : 0;
		/* The server's = ignores case: the queue's name exactly. */
		if (v[0] == NULL || strcmp(v[0], q->name) != 0 || n <= 0 ||
		    n > STATUS_OTHERS_N_MAX || (v[1] != NULL &&
		    strlen(v[1]) >= STATUS_GROUP_VALUE_MAX))
			continue;
		run_groups_add(r, v[1], v[3] != NULL && atol(v[3]) == 1, n);
	}
	rowset_free(&rs, ncols);
	buf_free(&sql);
	return rc;
}

/*
 * The running groups of q that the other live daemons' rows name, added
 * to r; who they are, and how fresh, into out.  lv: the daemon that
 * answered on the status socket, left out (NULL or no answer: none).
 * The table missing is no other daemon; out->known is false when it
 * cannot be read (out->error says why).
 */
void
status_others_read(struct db *db, const struct config *cfg,
    const struct queue *q, const struct live *lv, struct run_groups *r,
    struct status_others *out)
{
	char host[256];
	long pid;

	memset(out, 0, sizeof(*out));
	out->oldest_s = -1;
	status_others_self(lv, host, sizeof(host), &pid);
	struct value vals[] = {
		{ .type = VALUE_TEXT, .s = host, .len = strlen(host) },
		{ .type = VALUE_INT, .i = pid },
		{ .type = VALUE_TEXT, .s = q->name, .len = strlen(q->name) },
	};
	if (status_others_count(db, cfg, vals, out) == 0 &&
	    (out->counted == 0 || status_others_groups(db, cfg, q, vals, r,
	    out) == 0))
		out->known = true;
	else
		out->counted = out->blind = 0;
	(void)db_rollback(db);	/* a read: nothing to keep */
}
