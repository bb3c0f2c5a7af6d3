/*
 * check_flow.c: `rowq check`'s warnings about a queue's statements as
 * parts of a workflow (rowq.yaml(5), PATTERNS): a batch counted down by
 * its children, a chain, a DAG.  Two mistakes there look right in every
 * count and still break the workflow:
 *
 * - a SET list that reads a column it assigned earlier in the same
 *   UPDATE: the server assigns left to right (MySQL always, MariaDB
 *   unless sql_mode has SIMULTANEOUS_ASSIGNMENT), so
 *   `SET pending = pending - 1, status = IF(pending = 1, ...)` sees the
 *   new pending and marks the batch ready one child early;
 * - a counter in another table that some finishing lists count down and
 *   another does not: a child that ends through that list leaves its
 *   batch open for ever.  A table is a counter when some list's UPDATE
 *   of it reads a column it assigns; one that lists only set (a job's
 *   finished_at) is not.  A row ends through done, or through failed
 *   (which is where retry gives up), after which `rowq discard` may give
 *   it up: the counter belongs in done and in one of failed and discard,
 *   not in both (a failed row that is discarded would count twice).
 *
 * Warnings only: the statements run as written.
 */
#include "rowq.h"
#include "check_flow.h"
#include "db.h"
#include "dialect.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Whether this session assigns a SET list at once (MariaDB's sql_mode). */
static bool
check_flow_simultaneous(struct db *db)
{
	const char *word = db_dialect(db)->simultaneous_assignment;
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	bool on = false;

	if (word == NULL)
		return false;
	if (db_query(db, "SELECT @@SESSION.sql_mode", &rs, &cols,
	    &ncols) != DB_OK) {
		log_warnx("cannot read the session's sql_mode: %s",
		    db_error(db));
		return false;
	}
	if (rs.nrows == 1 && ncols == 1 && rs.rows[0].value[0] != NULL)
		on = strstr(rs.rows[0].value[0], word) != NULL;
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	return on;
}

/* Each statement of a list whose SET list reads what it assigned. */
static void
check_flow_reread(const struct sql *sql, const char *server)
{
	struct buf column = { 0 }, assignment = { 0 };

	for (; sql != NULL && sql->text != NULL; sql = sql->next)
		if (sql_update_reread(sql->text, &column, &assignment) == 1)
			log_warnx("%s: the SET list assigns %s and then reads "
			    "it in `%s`: %s assigns a SET list left to right, "
			    "so that reads the value just assigned, not the "
			    "row's (SET pending = pending - 1, status = "
			    "IF(pending = 1, ...) is one row early); write "
			    "the assignment that reads it first (SET status = "
			    "IF(pending = 1, ...), pending = pending - 1), "
			    "which reads the row's value whatever the "
			    "sql_mode", sql->where,
			    column.data, assignment.data, server);
	buf_free(&column);
	buf_free(&assignment);
}

/* The finishing lists a row can end through, in the order they are told. */
enum check_flow_list { FLOW_DONE, FLOW_FAILED, FLOW_DISCARD, FLOW_LISTS };

static const char *const check_flow_names[FLOW_LISTS] = { "done", "failed",
    "discard" };

/* A table other than the queue's, and the lists that update it. */
struct check_flow_counter {
	char		*table;
	const char	*where;		/* the first statement found */
	bool		 in[FLOW_LISTS];
	bool		 counts;	/* some statement counts in it */
};

static void
check_flow_collect(const struct sql *sql, enum check_flow_list list,
    const char *own, struct check_flow_counter **c, size_t *n)
{
	for (; sql != NULL && sql->text != NULL; sql = sql->next) {
		char **tables;
		size_t nt;

		bool counts = sql_update_counts(sql->text) == 1;

		if (sql_update_tables(sql->text, &tables, &nt) != 1)
			continue;
		for (size_t t = 0; t < nt; t++) {
			size_t k;
			if (own != NULL && strcasecmp(tables[t], own) == 0)
				continue;
			for (k = 0; k < *n; k++)
				if (strcasecmp((*c)[k].table, tables[t]) == 0)
					break;
			if (k == *n) {
				*c = xrealloc(*c, (*n + 1) * sizeof(**c));
				(*c)[k] = (struct check_flow_counter){
				    .table = xstrdup(tables[t]),
				    .where = sql->where };
				(*n)++;
			}
			(*c)[k].in[list] = true;
			(*c)[k].counts |= counts;
		}
		sql_update_tables_free(tables, nt);
	}
}

/* The lists of the queue's that lack (want false) or have the counter. */
static void
check_flow_lists(const struct queue *q, const struct check_flow_counter *c,
    bool want, struct buf *b)
{
	const struct sql *lists[FLOW_LISTS] = { &q->done, &q->failed,
	    &q->discard };

	buf_reset(b);
	for (int l = 0; l < FLOW_LISTS; l++)
		if (lists[l]->text != NULL && c->in[l] == want)
			buf_printf(b, "%s%s", b->len ? ", " : "",
			    check_flow_names[l]);
}

/* Warn of a counter that a way for a row to end does not count. */
static void
check_flow_counter(const struct queue *q, const struct check_flow_counter *c)
{
	struct buf has = { 0 }, lacks = { 0 };

	check_flow_lists(q, c, true, &has);
	check_flow_lists(q, c, false, &lacks);
	if (!c->in[FLOW_DONE] || (!c->in[FLOW_FAILED] && !c->in[FLOW_DISCARD]))
		log_warnx("%s: %s updates %s, and %s does not: if %s counts "
		    "the queue's rows down (a batch's pending children), a "
		    "row that ends through %s leaves it open for ever; "
		    "count it in done and in failed (where retry gives up), "
		    "or in discard to keep a failed row's batch open until "
		    "it is given up", c->where, has.data, c->table,
		    lacks.data, c->table, lacks.data);
	else if (c->in[FLOW_FAILED] && c->in[FLOW_DISCARD])
		log_warnx("%s: failed and discard both update %s: if it "
		    "counts the queue's rows down, a row that failed is "
		    "counted once by failed and again when it is "
		    "discarded; count it in one of them", c->where,
		    c->table);
	buf_free(&has);
	buf_free(&lacks);
}

void
check_flow(struct db *db, const struct queue *q)
{
	const struct sql *all[] = { &q->done, &q->failed, &q->retry.update,
	    &q->discard, &q->requeue, &q->lease.claim, &q->lease.renew,
	    &q->lease.release };
	struct check_flow_counter *c = NULL;
	size_t n = 0;
	char *own;

	if (!check_flow_simultaneous(db))
		for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++)
			check_flow_reread(all[k], db_dialect(db)->name);
	own = sql_select_table(q->select.text);
	check_flow_collect(&q->done, FLOW_DONE, own, &c, &n);
	check_flow_collect(&q->failed, FLOW_FAILED, own, &c, &n);
	check_flow_collect(&q->discard, FLOW_DISCARD, own, &c, &n);
	for (size_t k = 0; k < n; k++) {
		/* Only a counter has to be balanced by the other lists. */
		if (c[k].counts)
			check_flow_counter(q, &c[k]);
		free(c[k].table);
	}
	free(c);
	free(own);
}
