/*
 * status_db.c: what the database says of a queue: how many rows the
 * select finds, how old the oldest is, how many failed.  Read by `rowq
 * status` (status.c), by the daemon's probe for the metrics (report.c),
 * and by a drain before it ends (worker.c).  Every read is a plain one,
 * which locks nothing, so that asking never takes a row from a claim.
 */
#include "rowq.h"
#include "db.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>

/* Run a row-returning statement with no parameters into rs. */
static int
status_fetch(struct db *db, const char *sql, const char *where,
    struct rowset *rs, struct db_stmt **out)
{
	enum db_status st;
	struct db_stmt *s = db_prepare(db, sql, &st);

	*out = s;
	if (s == NULL || db_stmt_fetch_all(s, NULL, 0, rs) != DB_OK) {
		log_error("%s: %s", where, db_error(db));
		return -1;
	}
	return 0;
}

/*
 * The age of the oldest waiting row among the first STATUS_CAP in the
 * select's order: the age column holds a time (DATETIME, TIMESTAMP) or
 * Unix seconds, and the server does the arithmetic, in the session's
 * time zone, or in UTC with time_zone: UTC (a DATETIME kept in UTC, as
 * many frameworks keep theirs).  A TIMESTAMP reads in the session's
 * zone whatever time_zone: says, as it is stored in UTC and shown in
 * that zone: leave time_zone: out for one.
 */
static int
status_oldest(struct db *db, const struct queue *q, const struct column *cols,
    size_t ncols, const struct rowset *rs, long long *age)
{
	const char *min = NULL;
	int a = -1;
	bool numeric;
	struct rowset out = { 0 };
	struct db_stmt *s;
	struct value v = { .type = VALUE_TEXT };
	enum db_status st;

	*age = -1;
	for (size_t i = 0; i < ncols; i++)
		if (strcmp(cols[i].name, q->age.name) == 0)
			a = (int)i;
	if (a < 0)
		return 0;
	numeric = cols[a].kind == COLUMN_INTEGER ||
	    cols[a].kind == COLUMN_NUMBER;
	for (size_t i = 0; i < rs->nrows; i++) {
		const char *x = rs->rows[i].value[a];
		if (x == NULL)
			continue;
		if (min == NULL || (numeric ? atof(x) < atof(min) :
		    strcmp(x, min) < 0))
			min = x;
	}
	if (min == NULL)
		return 0;
	s = db_prepare(db, numeric ? "SELECT UNIX_TIMESTAMP() - ?" :
	    q->times_utc ? "SELECT TIMESTAMPDIFF(SECOND, ?, UTC_TIMESTAMP())" :
	    "SELECT TIMESTAMPDIFF(SECOND, ?, NOW())", &st);
	v.s = min;
	v.len = strlen(min);
	if (s == NULL || db_stmt_fetch_all(s, &v, 1, &out) != DB_OK) {
		log_error("%s: %s", q->age.where, db_error(db));
		db_stmt_free(s);
		return -1;
	}
	if (out.nrows == 1 && out.rows[0].value[0] != NULL)
		*age = atoll(out.rows[0].value[0]);
	rowset_free(&out, 1);
	db_stmt_free(s);
	return 0;
}

/*
 * What the select finds, read without locking (a plain read in the
 * session's READ COMMITTED): every waiting row among its first STATUS_CAP
 * in its order, whether a worker holds it or not.  A locking read, even
 * one committed at once, would make a worker's or a drain's claim skip
 * the rows it holds at that moment; which rows are someone's is said by
 * the workers themselves (status_split).  The read stays on the claim's
 * index: never a scan of the table.
 */
int
status_query(struct db *db, const struct queue *q, struct queue_db_status *out)
{
	struct rowset seen = { 0 }, failed = { 0 };
	struct db_stmt *plain = NULL, *count = NULL;
	const struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };
	int rc = -1;

	out->waiting = 0;
	out->oldest_age_s = out->failed = -1;
	buf_printf(&sql, "%s\nLIMIT %d", q->select.positional, STATUS_CAP);
	if (status_fetch(db, sql.data, q->select.where, &seen, &plain) == -1)
		goto done;
	cols = db_stmt_columns(plain, &ncols);
	out->waiting = (long)seen.nrows;
	if (q->age.name != NULL &&
	    status_oldest(db, q, cols, ncols, &seen, &out->oldest_age_s) == -1)
		goto done;
	if (q->failed_count.text != NULL) {
		if (status_fetch(db, q->failed_count.positional,
		    q->failed_count.where, &failed, &count) == -1)
			goto done;
		if (failed.nrows > 0 && failed.rows[0].value[0] != NULL)
			out->failed = atoll(failed.rows[0].value[0]);
	}
	rc = 0;
done:
	(void)db_rollback(db);	/* a read: nothing to keep */
	rowset_clear(&seen, ncols);
	rowset_clear(&failed, 1);
	free(seen.rows);
	free(failed.rows);
	db_stmt_free(plain);
	db_stmt_free(count);
	buf_free(&sql);
	return rc;
}

/*
 * READY and IN_PROGRESS from what the select finds and how many workers
 * of the daemon are busy with a row of the queue (busy -1: no daemon
 * answered, in_progress then -1 too).  A row a worker is on still matches
 * the select until its outcome commits, so it is taken out of the ready
 * ones; in lease mode the select already leaves leased rows out.  Rows
 * that another daemon or session holds count as ready: only a locking
 * read could tell them apart, and that would steal them from the claims.
 */
void
status_split(const struct queue *q, const struct queue_db_status *db,
    long busy, long *ready, long *in_progress)
{
	*ready = db->waiting;
	*in_progress = busy;
	if (busy > 0 && !q->lease.enabled)
		*ready = db->waiting > busy ? db->waiting - busy : 0;
}

/*
 * Whether the select still finds a row, by a plain read that locks
 * nothing: 1 yes, 0 no, -1 the database failed (logged).  A drain whose
 * claim found nothing asks this before it ends: a row that the claim
 * skipped because another worker or session holds it still matches, and
 * may come back (a rollback, a retry).  Call it with no transaction open;
 * it leaves none.
 */
int
status_select_finds(struct db *db, const struct queue *q)
{
	struct rowset rs = { 0 };
	struct db_stmt *s = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };
	int rc;

	buf_printf(&sql, "%s\nLIMIT 1", q->select.positional);
	rc = status_fetch(db, sql.data, q->select.where, &rs, &s);
	if (rc == 0)
		rc = rs.nrows > 0 ? 1 : 0;
	if (s != NULL)
		(void)db_stmt_columns(s, &ncols);
	(void)db_rollback(db);
	rowset_free(&rs, ncols);
	db_stmt_free(s);
	buf_free(&sql);
	return rc;
}
