/*
 * worker_lease_ride.c: at batch 1, a row's lease in its claim's round
 * trip.
 *
 * A lease queue's turn took two round trips before its handler could
 * start: the claim (the last row's `done` and COMMIT in front of it),
 * then the lease and its COMMIT; transaction mode takes one.  The lease
 * needs the row's key, which only the claim's answer brings to rowq.  On
 * MariaDB the claim hands it to the lease inside the server instead, in
 * a user variable its select sets:
 *
 *	EXECUTE rowq_done USING 'token1', 711;
 *	COMMIT;
 *	SELECT id, payload, @rowq_claim := 42, @rowq_c0 := `id`
 *	FROM job FORCE INDEX (PRIMARY) WHERE id > 711 AND (...)
 *	ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED;
 *	EXECUTE rowq_lease USING 'token2', IF(@rowq_claim = 42, @rowq_c0, NULL);
 *	COMMIT
 *
 * and the row comes back leased, with its own token, and committed, in
 * one round trip.  The variable counts only when the claim's number (42,
 * this worker's count) is the one the select set: a claim that finds no
 * row sets nothing, and the lease then compares the key with NULL and
 * changes nothing.  The row is locked from the select to the COMMIT, as
 * when its lease went in a round trip of its own, so nobody else can
 * lease it in between.  The last row's `done` keeps its COMMIT of its
 * own, in front: a claim or a lease that fails, or that a Galera cluster
 * refuses at its COMMIT (another node leased the row), undoes no row
 * finished.  Each parameter of
 * lease.claim that names a column of the select rides the same way, a
 * variable each; the others are known before the claim (:lease,
 * :duration).
 *
 * The variables go in the select's own list where the claim is the
 * cursor's (cursor.c) and each column is a table's column (whatever its
 * alias, the variable takes the column by its table's name); else in a
 * select over the claim, which costs the server a derived table:
 *
 *	SELECT rowq_c.*, @rowq_claim := 42, @rowq_c0 := rowq_c.`id` FROM (
 *	SELECT ... LIMIT 1 FOR UPDATE SKIP LOCKED
 *	) AS rowq_c;
 *
 * What the server said of the lease comes back with the claim's row: a
 * lease that changed no row leaves the row unleased and skipped, as one
 * by one; a lease the server refused stops the text there, and the next
 * turn leases one by one, prepared, which says which statement and row.
 *
 * Not on MySQL, where a select that sets a variable is deprecated (it
 * warns, and is to be removed): there the lease keeps its round trip;
 * nor on a Galera node (see lease_ride_bind).  Nor with limit:, a claim
 * by key, a lease.claim list, parameters known only after the claim
 * (:attempt), or after skipped rows (the claim asks
 * for more than one); nor for a select the server refuses so (a derived
 * table with two columns of one name), which each connection finds out
 * once, preparing it.
 */
#include "worker.h"
#include "claim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The derived table's name, and the variables'. */
#define RIDE_TABLE	"rowq_c"
#define RIDE_VAR	"rowq_c"
#define RIDE_NUMBER	"rowq_claim"

/* Whether every parameter of lease.claim can ride (see above). */
static bool
lease_ride_params(const struct worker *w)
{
	const struct bound *b = &w->lease;

	for (size_t i = 0; i < b->sql->nparams; i++)
		switch (b->source[i]) {
		case PARAM_COLUMN:
		case PARAM_LEASE:
		case PARAM_LEASE_INT:
		case PARAM_DURATION:
			break;
		default:
			return false;
		}
	return true;
}

/* Whether column col is one of lease.claim's parameters. */
static bool
lease_ride_uses(const struct worker *w, size_t col)
{
	const struct bound *b = &w->lease;

	for (size_t i = 0; i < b->sql->nparams; i++)
		if (b->source[i] == PARAM_COLUMN && (size_t)b->column[i] == col)
			return true;
	return false;
}

/*
 * The variables of the columns lease.claim takes, as the select's list
 * sets them, into w->ride_vars: by the table's column names in the
 * cursor claim's own list (direct), else from the derived table.  Returns
 * how many, or -1 when direct and a column is no table's.
 */
static int
lease_ride_vars(struct worker *w, bool direct)
{
	struct buf *b = &w->ride_vars;
	int n = 0;

	buf_reset(b);
	for (size_t c = 0; c < w->ncols; c++) {
		if (!lease_ride_uses(w, c))
			continue;
		buf_printf(b, ", @" RIDE_VAR "%zu := ", c);
		if (direct) {
			struct buf origin = { 0 };
			bool named = db_stmt_column_origin(w->claim, c, &origin);
			if (named)
				sql_ident(b, origin.data);
			buf_free(&origin);
			if (!named)
				return -1;
		} else {
			buf_puts(b, RIDE_TABLE ".");
			sql_ident(b, w->cols[c].name);
		}
		n++;
	}
	return n;
}

/* The claim's list's own columns, for the claim numbered number. */
static void
lease_ride_list(struct worker *w, unsigned long long number)
{
	buf_reset(&w->ride_list);
	buf_printf(&w->ride_list, ", @" RIDE_NUMBER " := %llu", number);
	buf_append(&w->ride_list, w->ride_vars.data, w->ride_vars.len);
}

/*
 * Whether the claim with the variables, direct or not, is one the server
 * takes, with the claim's columns and its own.
 */
static bool
lease_ride_tried(struct worker *w, bool direct, int nvars)
{
	struct buf sql = { 0 };
	struct db_stmt *s;
	enum db_status st;
	size_t n = 0;

	lease_ride_list(w, 0);
	if (direct)
		cursor_claim_sql(&sql, &w->cursor, CURSOR_AFTER, NULL, 1,
		    w->ride_list.data);
	else {
		char *claim = sql_claim(w->q->select.positional, 1);
		buf_printf(&sql, "SELECT " RIDE_TABLE ".*%s FROM (\n%s\n) AS "
		    RIDE_TABLE, w->ride_list.data, claim);
		free(claim);
	}
	s = db_prepare(w->db, sql.data, &st);
	buf_free(&sql);
	if (s == NULL) {
		log_debug("%s: the lease rides on no claim%s: %s",
		    w->q->lease.claim.where, direct ? " of the cursor's" : "",
		    db_error(w->db));
		return false;
	}
	(void)db_stmt_columns(s, &n);
	db_stmt_free(s);
	return n == w->ncols + 1 + (size_t)nvars;
}

/*
 * After a connection's statements are bound: whether its claims can
 * carry their lease (see above), and how.
 */
void
lease_ride_bind(struct worker *w)
{
	int nvars;
	char node[128];

	w->ride_ok = w->ride_direct = false;
	if (!w->q->lease.enabled || queue_claim_rows(w->q) != 1 ||
	    w->q->limit.enabled || w->keyed_on || w->lease.next != NULL ||
	    w->lease.text == NULL ||
	    !db_dialect(w->db)->assigns_in_select || !lease_ride_params(w))
		return;
	/*
	 * On a Galera node another node's claim can take the same row, and
	 * the cluster settles which lease stands at the COMMIT: there the
	 * lease keeps its own round trip, the way tests/cluster checks.
	 */
	if (check_galera_node(w->db, node, sizeof(node))) {
		log_debug("%s: the lease rides on no claim: the database is "
		    "Galera node %s", w->q->lease.claim.where, node);
		return;
	}
	if (w->cursor_on && (nvars = lease_ride_vars(w, true)) >= 0 &&
	    lease_ride_tried(w, true, nvars))
		w->ride_direct = true;
	else if ((nvars = lease_ride_vars(w, false)) < 0 ||
	    !lease_ride_tried(w, false, nvars))
		return;
	w->ride_columns = 1 + nvars;
	w->ride_ok = true;
	log_debug("%s: the lease rides on the claim%s",
	    w->q->lease.claim.where, w->ride_direct ? ", in its own list" :
	    ", in a select over it");
}

/*
 * Before a turn's claim: whether its lease rides on it, and if so the
 * row's token, and the text around the claim.  Returns w->riding.
 */
bool
lease_ride_arm(struct worker *w)
{
	const struct bound *b = &w->lease;
	size_t np = b->sql->nparams;
	unsigned long long number = ++w->ride_number;
	struct value *values;
	struct buf *exprs;

	w->riding = w->ride_committed = w->ride_refused = false;
	w->ride_leased = 0;
	if (!w->ride_ok || w->ride_held_off || w->lease_one_by_one ||
	    turn_next_limit(w) != 1)
		return false;
	lease_new_token(&w->lease_tokens[0]);
	w->token = w->lease_tokens[0];
	values = xcalloc(np ? np : 1, sizeof(*values));
	exprs = xcalloc(np ? np : 1, sizeof(*exprs));
	for (size_t i = 0; i < np; i++) {
		if (b->source[i] != PARAM_COLUMN) {
			finish_value(w, b, i, NULL, 0, 0, &values[i]);
			continue;
		}
		buf_printf(&exprs[i], "IF(@" RIDE_NUMBER " = %llu, @" RIDE_VAR
		    "%d, NULL)", number, b->column[i]);
		values[i].type = VALUE_SQL;
		values[i].s = exprs[i].data;
		values[i].len = exprs[i].len;
	}
	lease_ride_list(w, number);
	buf_reset(&w->ride_front);
	buf_reset(&w->ride_back);
	if (!w->ride_direct) {
		buf_printf(&w->ride_front, "SELECT " RIDE_TABLE ".*%s FROM (\n",
		    w->ride_list.data);
		buf_puts(&w->ride_back, "\n) AS " RIDE_TABLE);
	}
	buf_puts(&w->ride_back, ";\n");
	w->riding = dialect_stmt_execute(b->text, &w->ride_back, values, np);
	buf_puts(&w->ride_back, ";\nCOMMIT");
	for (size_t i = 0; i < np; i++)
		buf_free(&exprs[i]);
	free(exprs);
	free(values);
	return w->riding;
}

/* The cursor claim's own columns, when the lease rides in its list. */
const char *
lease_ride_columns(const struct worker *w)
{
	return w->riding && w->ride_direct ? w->ride_list.data : NULL;
}

/* Around a claim's text (the front already written into b). */
void
lease_ride_open(const struct worker *w, struct buf *b)
{
	if (w->riding)
		buf_append(b, w->ride_front.data, w->ride_front.len);
}

void
lease_ride_close(const struct worker *w, struct buf *b)
{
	if (w->riding)
		buf_append(b, w->ride_back.data, w->ride_back.len);
}

/* What db_select is to read of it; and, after, what it read. */
void
lease_ride_ahead(const struct worker *w, struct db_ahead *a)
{
	if (!w->riding)
		return;
	a->ride_columns = w->ride_columns;
	a->nbehind = 2;		/* the lease, its COMMIT */
}

void
lease_ride_sent(struct worker *w, const struct db_ahead *a,
    enum db_status st)
{
	if (!w->riding)
		return;
	w->ride_leased = a->behind_ran >= 1 ? a->behind[0].affected : 0;
	w->ride_committed = st == DB_OK && a->behind_ran == 2;
	/* The select ran, and what follows it did not: the lease failed. */
	w->ride_refused = st != DB_OK && a->selected && a->behind_ran == 0;
}

/*
 * A claim the lease rode on failed with its transaction open.  When it
 * was the lease the server refused (its select ran), the claim's lock is
 * let go (COMMIT: the refused statement changed nothing), and the next
 * turn leases one by one, prepared, which says which statement and row;
 * the lease rides again once a row was leased so.  The turn ends here:
 * returns true.  Else the claim's failure is the caller's to say.
 */
bool
lease_ride_failed(struct worker *w, enum db_status st)
{
	if (!w->riding || !w->ride_refused || st != DB_FATAL ||
	    !db_in_transaction(w->db))
		return false;
	/* A COMMIT that goes through leaves the error to say as it was. */
	if (db_commit(w->db) != DB_OK)
		return false;
	turn_committed(w);
	log_info("%s, in the claim's round trip: %s; the next leases one by "
	    "one", w->lease.sql->where, db_error(w->db));
	w->lease_one_by_one = w->ride_held_off = true;
	w->riding = false;
	turn_rolled_back(w);
	return true;
}

/*
 * After a claim the lease rode on, and its COMMIT went through: the row
 * leased, or skipped (as lease_rows).  Returns how many were leased.
 */
int
lease_ride_leased(struct worker *w, bool *leased)
{
	int n = (int)w->turn.rows.nrows, nleased = 0;

	w->lease_rows = n;
	for (int i = 0; i < n; i++)
		leased[i] = w->lease_live[i] = false;
	if (n == 1 && turn_row_workable(w, 0)) {
		if (w->ride_leased == 1) {
			leased[0] = w->lease_live[0] = true;
			nleased = 1;
		} else
			turn_skip(w, &w->turn.rows.rows[0], "lease.claim "
			    "changed no row, so it was not leased");
	}
	worker_committed(w);
	return nleased;
}
