/*
 * prune.c: one run of a queue's prune: statement (or list of them), in
 * chunks of its own short transaction each, with a pause between them,
 * until a chunk's statements each remove fewer rows than chunk: allows.
 * One rowq at a time prunes a queue, across daemons and hosts: a run
 * starts by taking a named server lock (GET_LOCK) without waiting, and a
 * rowq that finds it held skips the round.  The daemon runs it in a child of the supervisor
 * (prune_daemon.c); `rowq prune` runs it here, in the foreground.
 */
#include "rowq.h"
#include "db.h"
#include "dialect.h"
#include "prune.h"
#include "runs.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A chunk that waited on a lock or a deadlock is tried this often more. */
#define PRUNE_CHUNK_RETRIES	3
/* A slow chunk lengthens the pause after it up to this. */
#define PRUNE_PAUSE_MAX_MS	60000

const char *
prune_end_name(int end)
{
	static const char *const names[] = {
		[PRUNE_NONE] = "none",
		[PRUNE_RUNNING] = "running",
		[PRUNE_DONE] = "done",
		[PRUNE_SKIPPED] = "skipped",
		[PRUNE_FAILED] = "failed",
		[PRUNE_STOPPED] = "stopped",
	};

	return end >= 0 && end <= PRUNE_STOPPED ? names[end] : "unknown";
}

/*
 * The queue's prune lock, per database and queue, so that two daemons of
 * one database never prune a queue at once while queues of the same name
 * in other databases do not wait for each other.  The name is a hash
 * because a lock's name may be 64 characters at most (MySQL), SHA2's
 * because MySQL 9 has no SHA1() or MD5() any more.  Held until the
 * session ends.  1: ours; 0: held by another session; -1: error.
 */
static int
prune_lock(struct db *db, const struct queue *q)
{
	struct rowset rs = { 0 };
	struct column *cols;
	size_t ncols;
	struct buf sql = { 0 };
	int got = -1;

	/* Queue names are letters, digits, _ and -: nothing to escape. */
	buf_printf(&sql, "SELECT GET_LOCK(CONCAT('rowq-prune-', "
	    "LEFT(SHA2(CONCAT(IFNULL(DATABASE(), ''), '.', '%s'), 256), 40)), "
	    "0)", q->name);
	if (db_query(db, sql.data, &rs, &cols, &ncols) == DB_OK &&
	    rs.nrows == 1 && ncols == 1 && rs.rows[0].value[0] != NULL)
		got = strcmp(rs.rows[0].value[0], "1") == 0 ? 1 : 0;
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	buf_free(&sql);
	(void)db_rollback(db);
	return got;
}

/*
 * The pause after a chunk: pause:, or as long as the chunk took when that
 * was longer, so that a busy server gets at least as much time for the
 * application's writes (and replicas for the binlog) as the prune takes.
 */
static int64_t
prune_pause_ms(const struct prune_policy *p, int64_t chunk_ms)
{
	int64_t ms = chunk_ms > p->pause_ms ? chunk_ms : p->pause_ms;

	if (ms > PRUNE_PAUSE_MAX_MS && p->pause_ms <= PRUNE_PAUSE_MAX_MS)
		ms = PRUNE_PAUSE_MAX_MS;
	return ms;
}

/*
 * One chunk in a transaction of its own: each statement of delete: in
 * order, every one of them, since each removes rows of its own (a job's
 * log rows, then the job).  *rows: what they removed together; *full:
 * whether one of them removed a whole chunk, so that more may be left.
 */
static enum db_status
prune_chunk(struct db *db, const struct prune_policy *p,
    unsigned long long *rows, bool *full, const char **failed_at)
{
	enum db_status st = DB_OK;
	unsigned long long n;

	*rows = 0;
	*full = false;
	*failed_at = p->where;
	for (const struct prune_policy *s = p; s != NULL && st == DB_OK;
	    s = s->next) {
		n = 0;
		*failed_at = s->where;
		st = db_run_count(db, s->chunk_sql, &n);
		*rows += n;
		if (n >= (unsigned long long)p->chunk)
			*full = true;
	}
	if (st == DB_OK)
		st = db_commit(db);
	if (st != DB_OK)
		(void)db_rollback(db);
	return st;
}

/*
 * Each turn: run a chunk and commit it; on a deadlock or lock wait try it
 * again after the pause, a few times; on any other error stop the run
 * (the next round tries again); count it; stop when it removed fewer than
 * chunk: rows; pause, longer after a slow chunk, and stop early when
 * asked to.  r says how it ended, and is filled as the run goes.
 */
void
prune_run(struct db *db, const struct queue *q, struct stopper *stopper,
    prune_progress_fn progress, void *ctx, struct prune_result *r)
{
	const struct prune_policy *p = &q->prune;
	int64_t start = now_ms();
	int retries = 0;

	r->rows = r->chunks = 0;
	r->ms = 0;
	r->error[0] = '\0';
	switch (prune_lock(db, q)) {
	case 0:
		r->end = PRUNE_SKIPPED;
		return;
	case -1:
		r->end = PRUNE_FAILED;
		snprintf(r->error, sizeof(r->error), "the prune lock: %s",
		    db_error(db));
		return;
	default:
		break;
	}
	r->end = PRUNE_RUNNING;
	for (;;) {
		unsigned long long rows = 0;
		bool full = false;
		int64_t t0 = now_ms();
		const char *at;
		enum db_status st = prune_chunk(db, p, &rows, &full, &at);
		int64_t took = now_ms() - t0;

		r->ms = now_ms() - start;
		if (st == DB_RETRY && retries++ < PRUNE_CHUNK_RETRIES) {
			log_info("prune: chunk %llu: %s; trying again",
			    (unsigned long long)r->chunks + 1, db_error(db));
		} else if (st != DB_OK) {
			r->end = PRUNE_FAILED;
			snprintf(r->error, sizeof(r->error), "chunk %llu: %s%s%s",
			    (unsigned long long)r->chunks + 1, p->next != NULL ?
			    at : "", p->next != NULL ? ": " : "", db_error(db));
			return;
		} else {
			retries = 0;
			r->rows += rows;
			r->chunks++;
			if (progress != NULL)
				progress(ctx, r);
			if (!full) {
				r->end = PRUNE_DONE;
				return;
			}
		}
		if (stopper_sleep(stopper, prune_pause_ms(p, took))) {
			r->ms = now_ms() - start;
			r->end = PRUNE_STOPPED;
			return;
		}
	}
}

/* ---- rowq check ---- */

static const char *
prune_field(const struct rowset *rs, const struct column *cols, size_t ncols,
    const char *name)
{
	for (size_t i = 0; i < ncols; i++)
		if (strcasecmp(cols[i].name, name) == 0 && rs->nrows > 0)
			return rs->rows[0].value[i] ? rs->rows[0].value[i] :
			    "NULL";
	return "";
}

/*
 * Prepare the chunk's statement (without running it), and EXPLAIN a
 * DELETE's: one that reads the whole table or index reads past every row
 * it keeps, each chunk, which on the article's four million rows is what
 * makes a prune hurt.  Returns the problems found (a warning is none).
 */
/*
 * Prepare one statement of delete: (without running it), and EXPLAIN a
 * DELETE: one that reads the whole table or index reads past every row
 * it keeps, each chunk, which on the article's four million rows is what
 * makes a prune hurt.  Returns the problems found (a warning is none).
 */
static int
prune_check_one(struct db *db, const struct prune_policy *p)
{
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	struct db_stmt *stmt;
	struct buf sql = { 0 };
	enum db_status st;

	if ((stmt = db_prepare(db, p->chunk_sql, &st)) == NULL) {
		log_error("%s: %s", p->where, db_error(db));
		return 1;
	}
	db_stmt_free(stmt);
	if (p->is_call)
		return 0;
	buf_printf(&sql, "%s%s", db_dialect(db)->explain, p->chunk_sql);
	if (db_query(db, sql.data, &rs, &cols, &ncols) == DB_OK) {
		const char *type = prune_field(&rs, cols, ncols, "type");
		const char *rows = prune_field(&rs, cols, ncols, "rows");
		if (strcmp(type, "ALL") == 0 || strcmp(type, "index") == 0)
			log_warnx("%s: each chunk scans the table (EXPLAIN: "
			    "type %s, %s rows): an index on the columns of its "
			    "WHERE (the time column) would let it read only "
			    "the rows it removes", p->where, type, rows);
	}
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	buf_free(&sql);
	(void)db_rollback(db);
	return 0;
}

/* Every statement of the queue's delete:, as prune_check_one. */
int
prune_check(struct db *db, const struct queue *q)
{
	int problems = 0;

	if (!q->prune.enabled)
		return 0;
	for (const struct prune_policy *p = &q->prune; p != NULL; p = p->next)
		problems += prune_check_one(db, p);
	return problems;
}

/* ---- rowq prune QUEUE [--dry-run] ---- */

struct prune_tty {
	const char	*queue;
	int64_t		 start_ms;
};

static void
prune_progress_line(void *ctx, const struct prune_result *r)
{
	const struct prune_tty *t = ctx;

	fprintf(stderr, "\r%s: %llu rows in %llu chunks, %.1fs ", t->queue,
	    (unsigned long long)r->rows, (unsigned long long)r->chunks,
	    (double)(now_ms() - t->start_ms) / 1000);
	fflush(stderr);
}

/* --dry-run: what the DELETE's WHERE finds now, counted in one select. */
static int
prune_count(struct db *db, const struct queue *q)
{
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	int rc = ROWQ_EXIT_OK;
	long long n = 0;

	/* A list's: what each of its DELETEs would remove, together. */
	for (const struct prune_policy *p = &q->prune; p != NULL &&
	    rc == ROWQ_EXIT_OK; p = p->next) {
		if (db_query(db, p->count_sql, &rs, &cols, &ncols) != DB_OK ||
		    rs.nrows != 1 || ncols != 1 ||
		    rs.rows[0].value[0] == NULL) {
			log_error("%s: counting: %s", p->where, db_error(db));
			rc = ROWQ_EXIT_FAILURE;
		} else
			n += atoll(rs.rows[0].value[0]);
		rowset_free(&rs, ncols);
		columns_free(cols, ncols);
		rs = (struct rowset){ 0 };
		cols = NULL;
		ncols = 0;
	}
	if (rc == ROWQ_EXIT_OK)
		printf("%s: would remove %lld rows in %lld chunks of %d\n",
		    q->name, n, n / q->prune.chunk + 1, q->prune.chunk);
	(void)db_rollback(db);
	return rc;
}

static int
prune_report(const struct queue *q, const struct prune_result *r)
{
	switch (r->end) {
	case PRUNE_SKIPPED:
		log_error("%s: another rowq is pruning this queue; try again "
		    "later", q->name);
		return ROWQ_EXIT_FAILURE;
	case PRUNE_DONE:
	case PRUNE_STOPPED:
		printf("%s: pruned %llu rows in %llu chunks, %.1fs%s\n",
		    q->name, (unsigned long long)r->rows,
		    (unsigned long long)r->chunks, (double)r->ms / 1000,
		    r->end == PRUNE_STOPPED ? " (stopped)" : "");
		return ROWQ_EXIT_OK;
	default:
		log_error("%s: %s: prune stopped after %llu rows in %llu "
		    "chunks: %s", q->prune.where, q->name,
		    (unsigned long long)r->rows,
		    (unsigned long long)r->chunks, r->error);
		return ROWQ_EXIT_FAILURE;
	}
}

/* The run log's old runs (runs.c), said on standard output. */
static int
prune_runs_report(struct db *db, const struct queue *q,
    struct stopper *stopper, int rc)
{
	unsigned long long rows = 0;
	char err[300];

	if (runs_prune(db, q, stopper, &rows, err, sizeof(err)) == -1) {
		log_error("%s: %s", q->runs.where, err);
		return ROWQ_EXIT_FAILURE;
	}
	printf("%s: run log: removed %llu run%s older than keep:\n", q->name,
	    rows, rows == 1 ? "" : "s");
	return rc;
}

static int
prune_once(const struct config *cfg, const struct queue *q, bool dry_run)
{
	struct prune_tty tty = { .queue = q->name, .start_ms = now_ms() };
	struct prune_result r = { 0 };
	struct stopper stopper;
	enum db_status st;
	struct db *db;
	int rc;

	db = db_open(&cfg->db, &st);
	if (st != DB_OK) {
		log_error("%s: database: cannot connect: %s", cfg->path,
		    db_error(db));
		db_close(db);
		return st == DB_CONFIG ? ROWQ_EXIT_CONFIG : ROWQ_EXIT_FAILURE;
	}
	if (dry_run) {
		rc = prune_count(db, q);
		db_close(db);
		return rc;
	}
	/* ^C stops between chunks: the one running is committed or not. */
	stopper_init(&stopper, true);
	rc = ROWQ_EXIT_OK;
	if (q->prune.enabled) {
		prune_run(db, q, &stopper, isatty(STDERR_FILENO) ?
		    prune_progress_line : NULL, &tty, &r);
		if (isatty(STDERR_FILENO) && r.chunks > 0)
			fputc('\n', stderr);
		rc = prune_report(q, &r);
	}
	if (q->runs.enabled && !stopper.stop)
		rc = prune_runs_report(db, q, &stopper, rc);
	close(stopper.fd);
	db_close(db);
	return rc;
}

/* The first CALL of delete:, which --dry-run cannot count; or NULL. */
static const struct prune_policy *
prune_has_call(const struct prune_policy *p)
{
	for (; p != NULL; p = p->next)
		if (p->is_call)
			return p;
	return NULL;
}

int
prune_command(const char *path, int argc, char **argv)
{
	const char *name = NULL;
	bool dry_run = false;
	struct config *cfg;
	const struct queue *q;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dry-run") == 0)
			dry_run = true;
		else if (argv[i][0] == '-' || name != NULL) {
			fprintf(stderr, "rowq: prune: %s %s\n", argv[i][0] ==
			    '-' ? "unknown option" : "one queue, not also",
			    argv[i]);
			return ROWQ_EXIT_USAGE;
		} else
			name = argv[i];
	}
	if (name == NULL) {
		fprintf(stderr, "usage: rowq [-c FILE] prune QUEUE "
		    "[--dry-run]\n");
		return ROWQ_EXIT_USAGE;
	}
	if ((cfg = config_load(path)) == NULL)
		return ROWQ_EXIT_CONFIG;
	if ((q = config_queue(cfg, name)) == NULL) {
		log_error("%s: no queue named %s", path, name);
		rc = ROWQ_EXIT_USAGE;
	} else if (!q->prune.enabled && !q->runs.enabled) {
		log_error("%s: queues.%s: has no prune: or runs: to run",
		    q->where, name);
		rc = ROWQ_EXIT_CONFIG;
	} else if (dry_run && !q->prune.enabled) {
		log_error("%s: --dry-run: counts what prune: would remove, and "
		    "the queue has none", q->where);
		rc = ROWQ_EXIT_USAGE;
	} else if (dry_run && prune_has_call(&q->prune)) {
		log_error("%s: --dry-run: rowq cannot count what a procedure "
		    "would remove without running it", prune_has_call(
		    &q->prune)->where);
		rc = ROWQ_EXIT_USAGE;
	} else
		rc = prune_once(cfg, q, dry_run);
	config_free(cfg);
	return rc;
}
