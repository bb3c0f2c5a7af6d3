/*
 * check.c: the configuration against the live database, before any worker
 * starts: connect, prepare every statement (the server parses it and knows
 * every column), check parameters against the select's columns, and make
 * sure every handler program can be run, and EXPLAIN every claim to warn
 * about a plan that reads rows it will not return.  `rowq check`, `rowq
 * run`, `rowq drain` and a reload all go through here, so a configuration
 * that passes check is one the workers can run, and a slow plan is in the
 * log of every start.  The EXPLAIN costs two or three queries per queue,
 * none of which reads the table.  Each schedule's insert is prepared too
 * (schedule_db.c).
 */
#include "rowq.h"
#include "check_flow.h"
#include "db.h"
#include "dialect.h"
#include "schedule.h"
#include "claim.h"
#include "commands.h"
#include "prune.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Prepare a statement (each of a list) just to see the server accept it. */
static int
check_statement(struct db *db, const struct sql *sql)
{
	enum db_status st;
	struct db_stmt *s;
	int problems = 0;

	for (; sql != NULL && sql->text != NULL; sql = sql->next) {
		if ((s = db_prepare(db, sql->positional, &st)) == NULL) {
			log_error("%s: %s", sql->where, db_error(db));
			problems++;
		}
		db_stmt_free(s);
	}
	return problems;
}

/*
 * A row whose key is NULL cannot be finished by key: workers skip it, and
 * it stays in the queue.  Worth a warning, not a refusal: the column may
 * never hold a NULL.
 */
static void
check_key_nullable(const struct queue *q, const struct column *cols,
    size_t ncols)
{
	size_t k = 0;

	if (q->key_column != NULL)
		for (k = 0; k < ncols; k++)
			if (strcmp(cols[k].name, q->key_column) == 0)
				break;
	if (k >= ncols || !cols[k].nullable)
		return;
	log_warnx("%s: the key column %s may be NULL: a claimed row whose key "
	    "is NULL cannot be finished, and workers skip it; declare it NOT "
	    "NULL or choose another key", q->key_where ? q->key_where :
	    q->select.where, cols[k].name);
}

/* ---- the claim from a cursor ---- */

/* A derived statement on one line, for the log. */
static void
check_cursor_line(const struct queue *q, const char *what, struct buf *b)
{
	for (size_t i = 0; i < b->len; i++)
		if (b->data[i] == '\n')
			b->data[i] = ' ';
	log_debug("%s: %s: %s", q->select.where, what, b->data);
	buf_reset(b);
}

/*
 * Whether the claim locks by key (keyed.c), decided as the workers do:
 * said when it does, with -d its statements.  Returns whether it applies,
 * with k filled (the caller frees it in any case).
 */
static bool
check_keyed(struct db *db, const struct queue *q, struct keyed_claim *k)
{
	struct buf b = { 0 };

	if (keyed_derive(k, q->select.positional, q->done.positional) != 0 ||
	    keyed_confirm(db, k, q->select.positional,
	    queue_claim_rows(q)) != 0) {
		log_debug("%s: the claim does not lock by key: the select %s",
		    q->select.where, k->reason);
		return false;
	}
	log_info("%s: claims lock by key: the select's own claim would lock "
	    "more than it claims (%s); instead, a list of the keys it would "
	    "claim is read without locking (every %d claims, at least every "
	    "%d ms), and each claim locks by key only the rows of %s it "
	    "claims", q->select.where, k->why, KEYED_LIST_CLAIMS,
	    KEYED_LIST_MS, k->table);
	keyed_list_sql(&b, k, keyed_list_rows(queue_claim_rows(q),
	    q->workers));
	check_cursor_line(q, "list (locks nothing)", &b);
	keyed_lock_sql(&b, k, NULL, 0, queue_claim_rows(q));
	check_cursor_line(q, "lock", &b);
	buf_free(&b);
	return true;
}

/*
 * Whether the queue's claims can scan the primary key from a cursor
 * (cursor.c).  With -d the derived statements are logged; under `rowq
 * check` a select of another shape gets one note that says what today's
 * claim costs and which shape avoids it, unless it locks by key
 * (check_keyed).  Never a problem: both claims work.  Returns whether it
 * locks by key, with k filled (the caller frees it in any case); *cursor
 * says whether it claims from a cursor.
 */
static bool
check_cursor(struct db *db, const struct queue *q, const struct column *cols,
    size_t ncols, bool explain, struct keyed_claim *k, bool *cursor)
{
	struct cursor_claim c;
	struct buf b = { 0 };
	bool by_key = false;

	*cursor = false;
	if (cursor_derive(&c, q->select.positional) == 0 &&
	    cursor_confirm(db, &c, cols, ncols) == 0) {
		*cursor = true;
		log_debug("%s: the claim scans the primary key of %s from a "
		    "cursor, the last %s this worker claimed (of a batch: its "
		    "last), falling back to the first waiting row when it finds "
		    "nothing, every %d claims and at least every %d ms",
		    q->select.where, c.table, c.key_column,
		    CURSOR_FALLBACK_CLAIMS, CURSOR_FALLBACK_MS);
		cursor_claim_sql(&b, &c, CURSOR_AFTER, NULL,
		    queue_claim_rows(q), NULL);
		check_cursor_line(q, "claim", &b);
		cursor_start_sql(&b, &c);
		check_cursor_line(q, "fallback, first (locks nothing)", &b);
		cursor_claim_sql(&b, &c, CURSOR_AT, NULL,
		    queue_claim_rows(q), NULL);
		check_cursor_line(q, "fallback, then", &b);
	} else if (check_keyed(db, q, k)) {
		by_key = true;
	} else if (explain && q->lease.enabled) {
		/*
		 * In lease mode the claim commits at once: what it read and
		 * rejected is locked for that moment only, and no transaction
		 * holds purge back while handlers run.  A note, not a warning.
		 */
		log_info("%s: the claim does not scan the primary key from a "
		    "cursor (the select %s): it reads through the index that "
		    "serves the WHERE; in lease mode the rows it reads and "
		    "rejects are locked only until the claim commits, at once",
		    q->select.where, c.reason);
	} else if (explain && q->handler == HANDLER_NONE) {
		/* handler: none: the transaction lasts the batch's statements. */
		log_info("%s: the claim does not scan the primary key from a "
		    "cursor (the select %s): it reads through the index that "
		    "serves the WHERE; with handler: none the rows it reads "
		    "and rejects are locked only while the batch's done: "
		    "statements run", q->select.where, c.reason);
	} else if (explain) {
		/*
		 * A warning, measured: Drupal's and Symfony's selects claimed so
		 * do a fifth of the rows a second of the same queues claimed
		 * from a cursor (rowq.yaml(5), FOREIGN TABLES).
		 */
		log_warnx("%s: the claim cannot scan the primary key from a "
		    "cursor: the select %s.  It reads through the index that "
		    "serves the WHERE, and at READ COMMITTED such a claim keeps "
		    "every row it read and rejected (a row waiting for its "
		    "retry, say) locked until the worker commits, that is while "
		    "the handler runs, so the application's UPDATE of such a "
		    "row waits; and each row finished since purge last ran "
		    "leaves a delete-marked index entry that every claim looks "
		    "up in the table, which slows claims down while a long "
		    "transaction holds purge back.  A select of one table "
		    "ordered by its integer primary key ascending (ORDER BY id) "
		    "has neither cost (measured with 2 workers: a fifth of the "
		    "rows a second, see FOREIGN TABLES in rowq.yaml(5))",
		    q->select.where, c.reason);
	} else {
		log_debug("%s: the claim does not scan the primary key from a "
		    "cursor: the select %s", q->select.where, c.reason);
	}
	buf_free(&b);
	cursor_free(&c);
	return by_key;
}


/*
 * Warn about a server-side idle limit below what the queue's sessions
 * need (db_idle_need).  Each worker sets its own session's limits, and
 * the same SET is tried here (db_session_limits warns when it is
 * refused); a global below the need still bites a session that loses
 * its own value (a proxy, a pool that resets sessions): its transaction
 * is killed while its handler runs, and another worker runs the row at
 * the same time.  Only warns.
 */
static void
check_session_limits(struct db *db, const struct queue *q)
{
	struct db_idle_limit limits[DB_IDLE_LIMITS_MAX];
	struct idle_need need;
	char timeout[32], idle[32];
	int n;

	if (db_session_limits(db, q) != DB_OK ||
	    (n = db_global_idle_limits(db, limits)) < 0) {
		log_warnx("%s: queues.%s: cannot read the server's idle "
		    "limits: %s", q->where, q->name, db_error(db));
		return;
	}
	db_idle_need(q, &need);
	duration_format(q->handling.timeout_ms, timeout, sizeof(timeout));
	duration_format(q->idle_ms, idle, sizeof(idle));
	for (int i = 0; i < n; i++) {
		unsigned want = limits[i].transaction ? need.transaction_s :
		    need.keys_session_s > 0 ? need.keys_session_s :
		    need.session_s;
		if (limits[i].value_s == 0 || limits[i].value_s >= want)
			continue;
		log_warnx("%s: queues.%s: the server's global %s is %llus, "
		    "below the %us this queue needs (timeout %s, %ds kill "
		    "grace, idle %s, %ds margin): its workers set their own "
		    "sessions' value, but a session that loses it (a proxy, a "
		    "pool that resets sessions) is cut off mid-handler and its "
		    "row runs twice; raise it: SET GLOBAL %s = %u, and in the "
		    "server's configuration%s", q->where, q->name,
		    limits[i].name, limits[i].value_s, want, timeout,
		    HANDLER_KILL_GRACE_MS / 1000, idle, DB_IDLE_MARGIN_S,
		    limits[i].name, want, limits[i].transaction ?
		    " (0: no limit)" : "");
	}
}

/* An on_failed: program can be run. */
static int
check_program(const struct program *p)
{
	char *path;

	if (p->argv == NULL)
		return 0;
	if (handler_resolve(p->argv[0], &path) == -1) {
		log_error("%s: cannot run %s: %s", p->where, p->argv[0],
		    strerror(errno));
		return 1;
	}
	free(path);
	return 0;
}

/* ---- what a queue's statements mean ---- */

static bool
check_uses(const struct sql *sql, const char *param)
{
	for (; sql != NULL && sql->text != NULL; sql = sql->next)
		for (size_t i = 0; i < sql->nparams; i++)
			if (strcmp(sql->params[i], param) == 0)
				return true;
	return false;
}

static bool
check_uses_token(const struct sql *sql)
{
	return check_uses(sql, "lease") || check_uses(sql, "lease_int");
}

/* A list's first statement alone decides whether the rest run. */
static bool
check_first_uses_token(const struct sql *sql)
{
	struct sql first = *sql;

	first.next = NULL;
	return check_uses_token(&first);
}

/*
 * A lease is a fence only when a statement tests the token: with none, a
 * worker whose lease ran out (a handler that stalled, a link that was
 * down) records its outcome after another worker claimed the row again;
 * and lease.release, run at a stop, gives back another's lease.
 */
static void
check_lease_fenced(const struct queue *q)
{
	if (!q->lease.enabled)
		return;
	if (!check_uses_token(&q->lease.renew) &&
	    !check_uses_token(&q->done) && !check_uses_token(&q->failed) &&
	    !check_uses_token(&q->retry.update))
		log_warnx("%s: neither lease.renew nor done, failed or "
		    "retry.update uses :lease or :lease_int: nothing tells "
		    "this claim from a later one, so a worker whose lease ran "
		    "out (a handler that stalled, a database that was away) "
		    "still renews and records its outcome after another "
		    "worker has claimed the row again, and both run its "
		    "handler; keep the token in a column (lease.claim: ... SET "
		    "claimed_by = :lease) and test it (WHERE id = :id AND "
		    "claimed_by = :lease)", q->lease.where);
	if (q->lease.release.text != NULL &&
	    !check_first_uses_token(&q->lease.release))
		log_warnx("%s: uses neither :lease nor :lease_int: at a stop "
		    "it gives a row back whoever holds it, even a worker that "
		    "claimed it after this one's lease ran out; test the token "
		    "(WHERE id = :id AND lease = :lease)",
		    q->lease.release.where);
}

/* retry: without attempts_column counts no try: say what that means. */
static void
check_retry_unlimited(const struct queue *q)
{
	char d[32];

	if (!q->retry.enabled || q->retry.attempts_column != NULL)
		return;
	duration_format(q->retry.delay_ms, d, sizeof(d));
	log_info("%s: without attempts_column every try is try 1: a failing "
	    "row is retried without a limit, each time after %s%s (backoff "
	    "grows with a count of tries), until its handler fails it for "
	    "good (exit 65, or fail)%s; retry.update must change a column "
	    "of the select, or the row looks as if it came straight back",
	    q->retry.where, d, q->retry.jitter ? " at most" : "",
	    q->failed.text ? "" : ", which without failed: retries too");
}

/* Whether a statement's prepare says its table is not there. */
static bool
check_table_missing(struct db *db, const char *sql)
{
	enum db_status st;
	struct db_stmt *s = db_prepare(db, sql, &st);

	db_stmt_free(s);
	return s == NULL && db_no_such_table(db);
}

/*
 * Prepare one statement of the limit's, as a check, and make it the
 * session's the way a worker does (dialect_stmt_init: by SQL where the
 * server can), so that what the server refuses there is found here:
 * 1 when refused.
 */
static int
check_limit_statement(struct db *db, const struct queue *q, struct buf *b)
{
	enum db_status st;
	struct db_stmt *s = db_prepare(db, b->data, &st);
	struct dialect_stmt ds;
	struct buf prepare = { 0 };
	int rc = 0;

	if (s == NULL) {
		log_error("%s: %s", q->limit.where, db_error(db));
		buf_reset(b);
		return 1;
	}
	db_stmt_free(s);
	if (dialect_stmt_init(&ds, db_dialect(db), "rowq_check", b->data,
	    &prepare) != 0) {
		log_error("%s: rowq cannot read its own statement apart: %s",
		    q->limit.where, b->data);
		rc = 1;
	} else {
		if (prepare.len > 0 && db_run(db, prepare.data) != DB_OK) {
			log_error("%s: %s: %s", q->limit.where,
			    db_dialect(db)->name, db_error(db));
			rc = 1;
		} else if (prepare.len > 0)
			(void)db_run(db, "DEALLOCATE PREPARE rowq_check");
		dialect_stmt_free(&ds);
	}
	buf_free(&prepare);
	buf_reset(b);
	return rc;
}

/*
 * per_key needs a select claimed from a cursor (worker_limit_key.c).
 * 1 when it has none.
 */
static int
check_limit_keys(struct db *db, const struct queue *q,
    const struct column *cols, size_t ncols)
{
	const struct limit_policy *l = &q->limit;
	struct cursor_claim c;
	int rc = 0;

	if (l->key_column == NULL)
		return 0;
	if (cursor_derive(&c, q->select.positional) != 0 ||
	    cursor_confirm(db, &c, cols, ncols) != 0) {
		log_error("%s: per_key needs a select that rowq claims from a "
		    "cursor, of one table ordered by its integer primary key, "
		    "so that the rows of a key at its limit are read past, "
		    "never locked: the select %s", l->key_where, c.reason);
		rc = 1;
	}
	cursor_free(&c);
	return rc;
}

/*
 * A trigger on the limit table hides the LAST_INSERT_ID of a rate's take,
 * which says when its reserved token is due: the workers would start at
 * once, past the rate.  1 when there is one; seen only where the user
 * may see the table's triggers.  table: [DATABASE.]TABLE, of an unquoted
 * identifier's characters (config_field_table).
 */
static int
check_limit_trigger(struct db *db, const struct queue *q, const char *table)
{
	const char *dot = strchr(table, '.');
	struct buf sql = { 0 };
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	int rc = 0;

	buf_puts(&sql, "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS "
	    "WHERE EVENT_OBJECT_SCHEMA = ");
	if (dot != NULL)
		buf_printf(&sql, "'%.*s'", (int)(dot - table), table);
	else
		buf_puts(&sql, "DATABASE()");
	buf_printf(&sql, " AND EVENT_OBJECT_TABLE = '%s'",
	    dot != NULL ? dot + 1 : table);
	if (db_query(db, sql.data, &rs, &cols, &ncols) == DB_OK &&
	    rs.nrows > 0) {
		log_error("%s: the limit table %s has a trigger, %s: a "
		    "trigger's statement hides what a take says of its token "
		    "(LAST_INSERT_ID), and the workers would start past the "
		    "rate; drop it (rowq.yaml(5), LIMIT TABLE)", q->limit.where,
		    table, rs.rows[0].value[0] ? rs.rows[0].value[0] : "");
		rc = 1;
	}
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	buf_free(&sql);
	return rc;
}

/*
 * limit: against the database: the limit table there (or what creating
 * it needs), the take's statements prepared (the server parses them, and
 * runs nothing), and under `rowq check` what the limit costs a claim.
 */
static int
check_limit(struct db *db, const struct config *cfg, const struct queue *q,
    const struct column *cols, size_t ncols, bool explain)
{
	const struct limit_policy *l = &q->limit;
	struct limit_ctx c;
	struct limit_scope s;
	struct buf b = { 0 };
	int problems = 0;

	if (!l->enabled)
		return 0;
	problems += check_limit_keys(db, q, cols, ncols);
	limit_ctx_init(&c, cfg, q, cfg->db.name);
	limit_scope(&s, &c, NULL, 0, false);
	buf_printf(&b, "SELECT queue, scope, slot, tokens, took, tokens_at, "
	    "lease, lease_until, throttled_until, reason FROM %s", c.table);
	if (check_table_missing(db, b.data)) {
		buf_free(&b);
		/* A note: the first worker makes it. */
		log_info("%s: the limit table %s is not there yet: the first "
		    "worker creates it (the CREATE privilege), or an "
		    "administrator does (rowq.yaml(5), LIMIT TABLE)", l->where,
		    c.table);
		return 0;
	}
	problems += check_limit_statement(db, q, &b);
	if (l->rate.count > 0)
		problems += check_limit_trigger(db, q, c.table);
	limit_sql_gate(&b, &c, &s, q->lease.enabled ? 0 : l->concurrency, 1,
	    l->rate.count > 0 ? &l->rate : NULL, false);
	problems += check_limit_statement(db, q, &b);
	if (!q->lease.enabled && l->concurrency > 0 && l->rate.count == 0) {
		limit_sql_gate(&b, &c, &s, l->concurrency, 1, NULL, true);
		problems += check_limit_statement(db, q, &b);
	}
	if (l->rate.count > 0) {
		limit_sql_rate_take(&b, &c, &s, &l->rate, false);
		problems += check_limit_statement(db, q, &b);
		limit_sql_rate_take(&b, &c, &s, &l->rate, true);
		problems += check_limit_statement(db, q, &b);
	}
	if (q->lease.enabled && l->concurrency > 0) {
		limit_sql_lease_take(&b, &c, &s, l->concurrency, "0");
		problems += check_limit_statement(db, q, &b);
	}
	if (explain && problems == 0) {
		buf_printf(&b, "%s: what a claim takes, %s, in %s:", l->where,
		    db_dialect(db)->prepares_by_sql ? "as EXECUTEs of "
		    "statements prepared once per connection" : "as statements "
		    "sent with it", q->lease.enabled ? "its transaction" :
		    "its round trip");
		if (l->rate.count > 0)
			buf_printf(&b, " the rate's token (an UPDATE of one row, "
			    "by its primary key%s);", q->lease.enabled ? "" :
			    ", in front of the last turn's COMMIT");
		if (l->concurrency > 0 && q->lease.enabled)
			buf_puts(&b, " a slot's lease (an UPDATE of one row, "
			    "renewed with the row's);");
		else if (l->concurrency > 0)
			buf_puts(&b, " a concurrency slot (a SELECT of "
			    "GET_LOCK), when the worker holds none: it keeps "
			    "one while its claims find rows;");
		if (l->rate.count == 0)
			buf_printf(&b, " a look at the throttle (a SELECT of "
			    "one row)%s;", q->lease.enabled ? "" :
			    ", every 250 ms at most");
		b.data[b.len - 1] = '.';
		log_info("%s  A claim that gets nothing is rolled back, and the "
		    "worker polls the take alone: every 20ms to 1s for a slot, "
		    "when its next token is due for a rate, when it ends for "
		    "a throttle", b.data);
	}
	buf_free(&b);
	return problems;
}

static int
check_queue(struct db *db, const struct config *cfg, const struct queue *q,
    bool explain)
{
	enum db_status st;
	struct db_stmt *claim;
	const struct column *cols;
	size_t ncols;
	char *sql, *path;
	char **names;
	int problems = 0;

	if (q->handler == HANDLER_NONE)
		;	/* no program: done: is the work */
	else if (handler_resolve(q->argv[0], &path) == -1) {
		log_error("%s: cannot run %s: %s", q->argv_where, q->argv[0],
		    strerror(errno));
		problems++;
	} else
		free(path);
	sql = sql_claim(q->select.positional, queue_claim_rows(q));
	claim = db_prepare(db, sql, &st);
	free(sql);
	if (claim == NULL) {
		log_error("%s: %s", q->select.where, db_error(db));
		return problems + 1;
	}
	cols = db_stmt_columns(claim, &ncols);
	names = xcalloc(ncols + 1, sizeof(*names));
	for (size_t i = 0; i < ncols; i++)
		names[i] = cols[i].name;
	problems += config_check_columns(q, names, ncols);
	problems += config_check_column_kinds(q, cols, ncols);
	free(names);
	if (explain) {
		check_key_nullable(q, cols, ncols);
		check_retry_unlimited(q);
	}
	check_lease_fenced(q);
	check_flow(db, q);
	config_warn_option_args(q, cols, ncols);
	if (ncols > 0)
		problems += failed_check(db, q, q->key_column != NULL ?
		    q->key_column : cols[0].name);
	struct keyed_claim keyed = { 0 };
	bool cursor;
	bool by_key = check_cursor(db, q, cols, ncols, explain, &keyed, &cursor);
	problems += check_limit(db, cfg, q, cols, ncols, explain);
	db_stmt_free(claim);
	problems += check_plan(db, q, explain, by_key ? &keyed : NULL, cursor);
	keyed_free(&keyed);
	problems += check_statement(db, &q->done);
	problems += check_statement(db, &q->failed);
	problems += check_statement(db, &q->retry.update);
	problems += check_statement(db, &q->retry.gave_up);
	problems += check_statement(db, &q->lease.claim);
	problems += check_statement(db, &q->lease.renew);
	problems += check_statement(db, &q->lease.release);
	problems += check_statement(db, &q->failed_count);
	problems += prune_check(db, q);
	problems += status_group_check(db, q);
	check_session_limits(db, q);
	wake_binlog_check(db, q);
	return problems;
}

/* Which server the check reached over TCP, and how: the TLS cipher. */
static void
check_database_link(const struct config *cfg, const struct db *db)
{
	static const char *const verify[] = {
		[TLS_VERIFY_FULL] = "full", [TLS_VERIFY_CA] = "ca",
		[TLS_VERIFY_OFF] = "off",
	};
	const char *cipher = db_cipher(db);

	if (cfg->db.nhosts == 0)
		return;		/* a unix socket stays on this machine */
	if (cipher != NULL)
		log_info("%s: database: %s, TLS cipher %s, verify %s",
		    cfg->path, db_where(db), cipher,
		    cfg->db.tls.on ? verify[cfg->db.tls.verify] : "off");
	else
		log_info("%s: database: %s, not encrypted", cfg->path,
		    db_where(db));
	if (cfg->db.tls.on && cfg->db.tls.verify == TLS_VERIFY_OFF)
		log_warnx("%s: database.tls.verify: off: the session is "
		    "encrypted, but whoever answers at %s is taken for the "
		    "server; give ca: and verify: full", cfg->path,
		    db_where(db));
}

/*
 * CHECK_PROBLEMS when a problem is found (each logged with file, line and
 * key), CHECK_UNREACHABLE when the database cannot be reached at all.
 */
enum check_verdict
check_config(const struct config *cfg, bool explain)
{
	enum db_status st;
	struct db *db;
	char node[128];
	bool galera;
	int problems = 0;

	db = db_open(&cfg->db, &st);
	if (st != DB_OK) {
		log_error("%s: database: cannot connect: %s", cfg->path,
		    db_error(db));
		db_close(db);
		return st == DB_CONFIG ? CHECK_PROBLEMS : CHECK_UNREACHABLE;
	}
	check_database_link(cfg, db);
	galera = check_galera_node(db, node, sizeof(node));
	problems += check_program(&cfg->on_failed);
	for (size_t i = 0; i < cfg->nqueues; i++) {
		problems += check_queue(db, cfg, &cfg->queues[i], explain);
		problems += check_program(&cfg->queues[i].on_failed);
		if (galera)
			check_galera_queue(&cfg->queues[i], node);
	}
	problems += schedule_check(db, cfg, explain);
	(void)db_rollback(db);
	db_close(db);
	return problems > 0 ? CHECK_PROBLEMS : CHECK_PASSED;
}
