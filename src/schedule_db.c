/*
 * schedule_db.c: the schedule table, and the transaction that inserts a
 * schedule's due slots.
 *
 * Each slot is inserted exactly once, by whichever daemon gets there
 * first, without a unique key on the user's table: the schedule table
 * (schedule_table:, default rowq_schedule; one row per schedule) keeps
 * the last slot each schedule is done with, and one transaction reads
 * that row FOR UPDATE, runs the schedule's insert: for each due slot
 * after it and moves it forward, then commits.  A second daemon's
 * transaction waits for the row's lock and then finds the slots done; a
 * daemon that dies or is cut off before its COMMIT leaves nothing, and
 * the next transaction (its own after a restart, or another daemon's)
 * inserts those slots then.  So the insert must go to a transactional
 * table (InnoDB) on the same server, and commit nothing of its own.
 *
 * Whether a slot is due, on time or too late is decided by the server's
 * clock, which the locking read returns, so that daemons on hosts whose
 * clocks differ agree.  A schedule the table has no row for is seen for
 * the first time: its row is created with the server's time as its last
 * slot, so that nothing before that is inserted.
 *
 * A schedule with queue: writes each slot's row into that queue's run
 * log in the same transaction (schedule_slot_run): the slot and the row
 * it inserted, which the row's tries follow under the same key, so that
 * `rowq schedule runs` tells what became of each slot.
 */
#include "rowq.h"
#include "db.h"
#include "schedule.h"
#include "runs.h"
#include "claim.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the daemon creates; rowq.yaml(5) gives the same DDL. */
#define SCHEDULE_DDL \
	"CREATE TABLE IF NOT EXISTS %s (\n" \
	"  name VARCHAR(191) NOT NULL PRIMARY KEY,\n" \
	"  last_slot BIGINT NOT NULL,\n" \
	"  last_inserted BIGINT NULL,\n" \
	"  skipped BIGINT UNSIGNED NOT NULL DEFAULT 0\n" \
	") ENGINE=InnoDB"

/* ---- statements ---- */

static struct db_stmt *
schedule_prepare(struct db *db, const char *fmt, const char *table,
    enum db_status *st)
{
	struct buf sql = { 0 };
	struct db_stmt *s;

	buf_printf(&sql, fmt, table);
	s = db_prepare(db, sql.data, st);
	buf_free(&sql);
	return s;
}

static struct db_stmt *
schedule_prepare_lock(struct db *db, const char *table, enum db_status *st)
{
	return schedule_prepare(db, "SELECT last_slot, last_inserted, "
	    "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), skipped FROM %s "
	    "WHERE name = ? FOR UPDATE", table, st);
}

/* The table is missing: create it, or say which privilege lacks. */
static enum db_status
schedule_create(struct db *db, const struct config *cfg)
{
	const char *table = config_schedule_table(cfg);
	struct buf ddl = { 0 };
	enum db_status st;

	buf_printf(&ddl, SCHEDULE_DDL, table);
	if ((st = db_run(db, ddl.data)) != DB_OK)
		log_error("%s: schedule_table: cannot create %s: %s%s",
		    cfg->path, table, db_error(db), db_denied(db) ?
		    "; the database user needs the CREATE privilege on it, or "
		    "an administrator creates it (rowq.yaml(5), SCHEDULES) and "
		    "grants SELECT, INSERT, UPDATE" : "");
	else
		log_info("created the schedule table %s", table);
	buf_free(&ddl);
	return st;
}

/*
 * On a new connection: the schedule table's statements, the table
 * created when it is missing.  The inserts are prepared when first run.
 */
enum db_status
schedule_conn_open(struct schedule_conn *c, struct db *db,
    const struct config *cfg)
{
	const char *table = config_schedule_table(cfg);
	enum db_status st;

	memset(c, 0, sizeof(*c));
	c->cfg = cfg;
	c->db = db;
	c->lock = schedule_prepare_lock(db, table, &st);
	if (c->lock == NULL && db_no_such_table(db)) {
		if ((st = schedule_create(db, cfg)) != DB_OK)
			return st;
		c->lock = schedule_prepare_lock(db, table, &st);
	}
	if (c->lock != NULL)
		c->init = schedule_prepare(db, "INSERT IGNORE INTO %s (name, "
		    "last_slot) VALUES (?, UNIX_TIMESTAMP())", table, &st);
	if (c->init != NULL)
		c->advance = schedule_prepare(db, "UPDATE %s SET last_slot = ?, "
		    "last_inserted = COALESCE(?, last_inserted), skipped = "
		    "skipped + ? WHERE name = ?", table, &st);
	if (c->advance == NULL)
		return st;
	/* A run log missing: made now (a failure is logged, and the slots'
	 * transactions fail on it until it is there). */
	for (size_t i = 0; i < cfg->nschedules; i++)
		if (cfg->schedules[i].queue != NULL)
			(void)runs_ensure(db, config_queue(cfg,
			    cfg->schedules[i].queue));
	return DB_OK;
}

void
schedule_conn_close(struct schedule_conn *c)
{
	db_stmt_free(c->lock);
	db_stmt_free(c->init);
	db_stmt_free(c->advance);
	for (size_t i = 0; i < SCHEDULES_MAX; i++)
		db_stmt_free(c->insert[i]);
	memset(c, 0, sizeof(*c));
}

/* ---- one slot ---- */

/* Run schedule i's insert: for slot, its parameters bound. */
enum db_status
schedule_insert(struct schedule_conn *c, size_t i, int64_t slot)
{
	const struct schedule *s = &c->cfg->schedules[i];
	struct schedule_slot_text t;
	struct value *v;
	enum db_status st;

	if (c->insert[i] == NULL &&
	    (c->insert[i] = db_prepare(c->db, s->insert.positional, &st)) ==
	    NULL)
		return st;
	schedule_slot_text(s, slot, &t);
	v = xcalloc(s->insert.nparams + 1, sizeof(*v));
	for (size_t k = 0; k < s->insert.nparams; k++) {
		const char *p = s->insert.params[k], *text = NULL;
		if (strcmp(p, "slot") == 0)
			text = t.utc;
		else if (strcmp(p, "slot_local") == 0)
			text = t.local;
		else if (strcmp(p, "schedule") == 0)
			text = s->name;
		else {
			v[k].type = VALUE_INT;
			v[k].i = slot;
			continue;
		}
		v[k].type = VALUE_TEXT;
		v[k].s = text;
		v[k].len = strlen(text);
	}
	st = db_stmt_exec(c->insert[i], v, s->insert.nparams, NULL);
	free(v);
	return st;
}

/*
 * The slot's run in the run log of the queue that works it (queue:), in
 * the slot's transaction: attempt 0, outcome "inserted", started and
 * finished at the slot's instant, so that a slot is found by its instant
 * in the log's index on (queue, finished) (schedule_runs.c), and sorts
 * before its row's tries; duration_ms says how late it was inserted.
 * The schedule's name is its error, and its key is the AUTO_INCREMENT
 * value the insert generated, the row's key when the queue's key is that
 * column (empty: none was).  how: "schedule", or "by_hand" (rowq schedule
 * run).  *id: that value.
 */
enum db_status
schedule_slot_run(struct schedule_conn *c, size_t i, int64_t slot,
    int64_t now_ms, const char *how, unsigned long long *id_out)
{
	const struct schedule *s = &c->cfg->schedules[i];
	const struct queue *q;
	unsigned long long id = db_stmt_insert_id(c->insert[i]);
	char host[256] = "", key[24] = "";
	struct run_rec r = { .outcome = "inserted", .reason = how,
	    .exit_status = -1, .host = host, .pid = (long)getpid(),
	    .error = s->name, .error_len = strlen(s->name) };
	struct buf sql = { 0 };
	enum db_status st;

	if (id_out != NULL)
		*id_out = id;
	if (s->queue == NULL || (q = config_queue(c->cfg, s->queue)) == NULL)
		return DB_OK;
	if (id > 0)
		snprintf(key, sizeof(key), "%llu", id);
	(void)gethostname(host, sizeof(host) - 1);
	r.queue = q->name;
	r.key = key;
	r.key_len = strlen(key);
	r.started_us = r.finished_us = slot * 1000000;
	r.duration_ms = now_ms - slot * 1000;
	runs_insert_head(&sql, q, false);
	buf_puts(&sql, "VALUES (");
	runs_values(&sql, &r);
	buf_putc(&sql, ')');
	st = db_run(c->db, sql.data);
	buf_free(&sql);
	return st;
}

/*
 * Whether the pause table has a row for the schedule (rowq pause
 * --schedule): a plain read, inside the transaction.  No table: not
 * paused.
 */
static enum db_status
schedule_paused(struct schedule_conn *c, const char *name, bool *paused)
{
	struct buf sql = { 0 }, key = { 0 };
	struct rowset rs = { 0 };
	struct value v = { .type = VALUE_TEXT };
	enum db_status st;
	struct db_stmt *s;
	size_t ncols = 0;

	*paused = false;
	buf_printf(&sql, "SELECT 1 FROM %s WHERE queue = ?",
	    pause_table(c->cfg));
	buf_printf(&key, "%s%s", SCHEDULE_PAUSE_PREFIX, name);
	v.s = key.data;
	v.len = key.len;
	s = db_prepare(c->db, sql.data, &st);
	if (s == NULL && db_no_such_table(c->db))
		st = DB_OK;
	else if (s != NULL) {
		(void)db_stmt_columns(s, &ncols);
		if ((st = db_stmt_fetch_all(s, &v, 1, &rs)) == DB_OK)
			*paused = rs.nrows > 0;
		rowset_free(&rs, ncols);
		db_stmt_free(s);
	}
	buf_free(&sql);
	buf_free(&key);
	return st;
}

/* ---- the transaction ---- */

static int64_t
schedule_number(const char *s)
{
	return s != NULL ? strtoll(s, NULL, 10) : -1;
}

/*
 * The schedule's row, locked: its last slot, last inserted slot and the
 * server's clock.  A schedule without a row gets one now, the server's
 * time as its last slot (*created).
 */
static enum db_status
schedule_lock(struct schedule_conn *c, const struct schedule *s,
    struct schedule_outcome *o)
{
	struct value v = { .type = VALUE_TEXT, .s = s->name,
	    .len = strlen(s->name) };
	struct rowset rs = { 0 };
	enum db_status st;
	size_t ncols = 0;

	(void)db_stmt_columns(c->lock, &ncols);
	for (int tries = 0; tries < 2; tries++) {
		unsigned long long affected = 0;
		if ((st = db_stmt_fetch_all(c->lock, &v, 1, &rs)) != DB_OK)
			return st;
		if (rs.nrows > 0 && ncols == 4) {
			char *const *row = rs.rows[0].value;
			o->last_slot = schedule_number(row[0]);
			o->last_inserted = schedule_number(row[1]);
			o->now_ms = schedule_number(row[2]);
			o->skipped_total = (uint64_t)schedule_number(row[3]);
			rowset_free(&rs, ncols);
			return DB_OK;
		}
		rowset_clear(&rs, ncols);
		if ((st = db_stmt_exec(c->init, &v, 1, &affected)) != DB_OK)
			break;
		o->created = affected > 0;
	}
	free(rs.rows);
	return st != DB_OK ? st : DB_FATAL;
}

/* The log lines of a committed transaction. */
static void
schedule_log(const struct schedule *s, const struct schedule_plan *p,
    const struct schedule_outcome *o)
{
	struct schedule_slot_text t;
	char late[32], window[32];
	size_t logged = p->skipped < SCHEDULE_SKIP_LOG_MAX ? p->skipped :
	    SCHEDULE_SKIP_LOG_MAX;

	duration_format(s->catch_up_ms, window, sizeof(window));
	for (size_t k = 0; k < logged; k++) {
		schedule_slot_text(s, p->skip_log[k], &t);
		duration_format(o->now_ms - p->skip_log[k] * 1000, late,
		    sizeof(late));
		log_warnx("%s: slot %s skipped: %s late, catch_up %s", s->name,
		    t.shown, late, window);
	}
	if (p->skipped > logged) {
		if (p->skipped_last >= 0)
			schedule_slot_text(s, p->skipped_last, &t);
		log_warnx("%s: %s%llu more slots skipped%s%s, catch_up %s",
		    s->name, p->skipped_more ? "at least " : "",
		    (unsigned long long)(p->skipped - logged),
		    p->skipped_last >= 0 ? ", the last " : "",
		    p->skipped_last >= 0 ? t.shown : "", window);
	}
	for (size_t k = 0; k < p->ninsert; k++) {
		schedule_slot_text(s, p->insert[k], &t);
		if (o->paused) {
			log_info("%s: slot %s skipped: the schedule is paused",
			    s->name, t.shown);
			continue;
		}
		int64_t ms = o->now_ms - p->insert[k] * 1000;
		duration_format(ms, late, sizeof(late));
		if (ms > SCHEDULE_ON_TIME_MS)
			log_info("%s: slot %s inserted %s late, within catch_up "
			    "%s", s->name, t.shown, late, window);
		else
			log_debug("%s: slot %s inserted", s->name, t.shown);
	}
}

/*
 * One transaction for schedule i: lock its row, insert the due slots
 * after its last slot that are not too late (schedule_plan; skipped
 * instead while it is paused), move the row on, commit.  *o says what
 * was done and what comes next; on a failure the transaction is rolled
 * back and nothing was done.
 */
enum db_status
schedule_txn(struct schedule_conn *c, size_t i, struct schedule_outcome *o)
{
	const struct schedule *s = &c->cfg->schedules[i];
	struct schedule_plan p;
	struct value v[4];
	enum db_status st;
	int64_t inserted = -1;

	memset(o, 0, sizeof(*o));
	o->next = -1;
	if ((st = schedule_lock(c, s, o)) != DB_OK)
		goto fail;
	schedule_plan(s, o->last_slot, o->now_ms, &p);
	o->next = p.next;
	o->more = p.next >= 0 && p.next * 1000 <= o->now_ms;
	if (p.ninsert == 0 && p.skipped == 0) {
		/* Nothing due: the lock goes, a new row stays. */
		if (o->created)
			return db_commit(c->db);
		(void)db_rollback(c->db);
		return DB_OK;
	}
	if ((st = schedule_paused(c, s->name, &o->paused)) != DB_OK)
		goto fail;
	for (size_t k = 0; k < p.ninsert && !o->paused; k++) {
		if ((st = schedule_insert(c, i, p.insert[k])) != DB_OK ||
		    (st = schedule_slot_run(c, i, p.insert[k], o->now_ms,
		    "schedule", NULL)) != DB_OK)
			goto fail;
		inserted = p.insert[k];
	}
	o->skipped = p.skipped + (o->paused ? p.ninsert : 0);
	o->inserted = o->paused ? 0 : p.ninsert;
	memset(v, 0, sizeof(v));
	v[0] = (struct value){ .type = VALUE_INT, .i = p.last };
	v[1] = inserted >= 0 ? (struct value){ .type = VALUE_INT,
	    .i = inserted } : (struct value){ .type = VALUE_NULL };
	v[2] = (struct value){ .type = VALUE_INT, .is_unsigned = true,
	    .i = (long long)o->skipped };
	v[3] = (struct value){ .type = VALUE_TEXT, .s = s->name,
	    .len = strlen(s->name) };
	if ((st = db_stmt_exec(c->advance, v, 4, NULL)) != DB_OK ||
	    (st = db_commit(c->db)) != DB_OK)
		goto fail;
	o->last_slot = p.last;
	if (inserted >= 0)
		o->last_inserted = inserted;
	o->skipped_total += o->skipped;
	schedule_log(s, &p, o);
	return DB_OK;
fail:
	o->inserted = o->skipped = 0;
	(void)db_rollback(c->db);
	return st;
}

/* ---- rowq check ---- */

/* The next three slots from now, for `rowq check`. */
static void
schedule_check_show(const struct schedule *s)
{
	struct schedule_slot_text t;
	int64_t slot = wall_ms() / 1000;

	printf("schedules.%s:", s->name);
	for (int k = 0; k < 3 && (slot = schedule_next(s, slot)) >= 0; k++) {
		schedule_slot_text(s, slot, &t);
		printf("%s %s", k > 0 ? "," : " next slots", t.shown);
	}
	if (slot < 0)
		printf(" no slot in the next decades");
	putchar('\n');
}

/*
 * Each schedule's insert prepared (the server reports its errors with
 * the file, line and key), and the schedule table's read, if the table
 * is there; a missing table is a note: the first daemon creates it.
 * With explain (rowq check), each schedule's next three slots.  Returns
 * the number of problems, each logged.
 */
int
schedule_check(struct db *db, const struct config *cfg, bool explain)
{
	const char *table = config_schedule_table(cfg);
	enum db_status st;
	struct db_stmt *stmt;
	int problems = 0;

	if (cfg->nschedules == 0)
		return 0;
	for (size_t i = 0; i < cfg->nschedules; i++) {
		const struct schedule *s = &cfg->schedules[i];
		if ((stmt = db_prepare(db, s->insert.positional, &st)) == NULL) {
			log_error("%s: %s", s->insert.where, db_error(db));
			problems++;
		}
		db_stmt_free(stmt);
		if (explain)
			schedule_check_show(s);
	}
	if ((stmt = schedule_prepare_lock(db, table, &st)) != NULL)
		db_stmt_free(stmt);
	else if (db_no_such_table(db)) {
		if (explain)
			log_info("%s: schedule_table: %s does not exist yet: "
			    "the first rowq run creates it (CREATE "
			    "privilege), or an administrator does "
			    "(rowq.yaml(5), SCHEDULES)", cfg->path, table);
	} else {
		log_error("%s: schedule_table: %s: %s", cfg->path, table,
		    db_error(db));
		problems++;
	}
	return problems;
}
