/*
 * db_limits.c: how long a worker's session may sit idle, told to the
 * server for each session and compared with its global limits, so that a
 * frozen host's rows come back within what the queue needs and a short
 * global limit does not kill a transaction while its handler runs.
 */
#include "rowq.h"
#include "db.h"
#include "dialect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The longest single wait of a turn, with a margin: in transaction mode a
 * handler runs while the transaction sits idle, up to its timeout and the
 * kill grace after it; when a batch's ok rows run `done` together at the
 * end of the turn (batch > 1, no :output or :error in it), nothing is
 * sent between its handlers, so the whole batch's are one wait.  In lease
 * mode no transaction is open while a handler runs, but the connection
 * waits as long for the finishing statement.  Between claims the session
 * sits idle for `idle`, outside any transaction.
 */
void
db_idle_need(const struct queue *q, struct idle_need *need)
{
	int64_t handler_ms = q->handling.timeout_ms + HANDLER_KILL_GRACE_MS;
	bool bulk_done = q->batch > 1 && !q->lease.enabled &&
	    q->done.text != NULL && q->done.next == NULL;

	for (size_t i = 0; bulk_done && i < q->done.nparams; i++)
		if (strcmp(q->done.params[i], "output") == 0 ||
		    strcmp(q->done.params[i], "error") == 0)
			bulk_done = false;
	if (bulk_done)
		handler_ms *= q->batch;
	need->transaction_s = (unsigned)((handler_ms + 999) / 1000) +
	    DB_IDLE_MARGIN_S;
	need->session_s = (unsigned)((q->idle_ms + 999) / 1000) +
	    DB_IDLE_MARGIN_S;
	if (need->session_s < need->transaction_s)
		need->session_s = need->transaction_s;
	/*
	 * Lease mode with per-key slots: the session is busy at least every
	 * third of the lease (renewals) and every idle; a frozen or cut-off
	 * host's session, and its keys' locks, end a margin after its rows'
	 * leases do, once its handlers have stopped (two thirds of the
	 * lease without a renewal stop them).
	 */
	need->keys_session_s = 0;
	if (q->lease.enabled && q->limit.key_column != NULL &&
	    q->limit.key_concurrency > 0) {
		int64_t ms = q->lease.duration_ms > q->idle_ms ?
		    q->lease.duration_ms : q->idle_ms;
		need->keys_session_s = (unsigned)((ms + 999) / 1000) +
		    DB_IDLE_MARGIN_S;
	}
}


/*
 * Bound this session's idleness to what the queue needs (db_idle_need).
 * MariaDB: the idle transaction timeouts, so that the rows of a host that
 * froze or vanished come back within that bound rather than the server's
 * wait_timeout (8 hours by default), and so that a shorter global value
 * does not kill a transaction while its handler runs; wait_timeout is
 * only raised to the need, never lowered, since an idle session outside a
 * transaction holds no rows, but for a lease-mode session that holds
 * per-key slots (keys_session_s): it is set to that.  A server without
 * idle transaction limits (MySQL, dialect.h) has wait_timeout only: it is
 * set to the need, so that it bounds a frozen host's rows as well.  A
 * refused SET (a proxy, a server too old to know the variables) is
 * logged and the session goes on with the server's limits; only a lost
 * link is returned.
 */
enum db_status
db_session_limits(struct db *db, const struct queue *q)
{
	const struct dialect *d = db_dialect(db);
	struct idle_need need;
	struct buf sql = { 0 };
	char wait[64];
	enum db_status st;

	db_idle_need(q, &need);
	if (need.keys_session_s > 0 || d->idle_transaction[0] == NULL)
		snprintf(wait, sizeof(wait), "%u", need.keys_session_s > 0 ?
		    need.keys_session_s : need.session_s);
	else
		snprintf(wait, sizeof(wait), "GREATEST(@@SESSION.wait_timeout, "
		    "%u)", need.session_s);
	dialect_session_idle(d, &sql, wait, need.transaction_s);
	st = db_run(db, sql.data);
	buf_free(&sql);
	if (st == DB_OK || st == DB_RECONNECT)
		return st;
	log_warnx("%s: queues.%s: cannot set the session's idle limits "
	    "(%s): the server's own apply", q->where, q->name, db_error(db));
	return DB_OK;
}

/*
 * The server's global idle limits that apply to a session like a
 * worker's: into limits[DB_IDLE_LIMITS_MAX].  Returns how many, or -1
 * after a database error.
 */
int
db_global_idle_limits(struct db *db, struct db_idle_limit *limits)
{
	const char *const *more = db_dialect(db)->idle_transaction;
	const char *names[DB_IDLE_LIMITS_MAX] = { "wait_timeout" };
	int n = 1;
	struct buf sql = { 0 };
	struct rowset rs = { 0 };
	struct column *cols;
	size_t ncols;
	enum db_status st;

	while (*more != NULL && n < DB_IDLE_LIMITS_MAX)
		names[n++] = *more++;
	buf_puts(&sql, "SELECT ");
	for (int i = 0; i < n; i++)
		buf_printf(&sql, "%s@@GLOBAL.%s", i ? ", " : "", names[i]);
	st = db_query(db, sql.data, &rs, &cols, &ncols);
	buf_free(&sql);
	if (st != DB_OK || rs.nrows != 1 || ncols != (size_t)n) {
		n = -1;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		const char *v = rs.rows[0].value[i];
		limits[i].name = names[i];
		limits[i].value_s = v ? strtoull(v, NULL, 10) : 0;
		limits[i].transaction = i > 0;
	}
out:
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	return n;
}
