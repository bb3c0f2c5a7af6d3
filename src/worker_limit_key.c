/*
 * worker_limit_key.c: limit.per_key, the worker's side: the limits of
 * limit: for each value of a column of the select, a key.
 *
 * A row whose key is at its limit must be passed over, and the rows of
 * the other keys keep flowing, without a claim that locks what it does
 * not return.  So the claim is the one from a cursor (cursor.c: a scan
 * of the primary key, which releases at once the rows it reads and
 * rejects), with the keys known to be at their limit left out by its
 * WHERE,
 *
 *	... AND (customer_id IS NULL OR customer_id NOT IN (17, 93))
 *
 * and after the claim, in one round trip, each key of the rows it
 * returned takes a slot of its own: a named lock per key and slot, as
 * the queue's (limit.c), held while the turn's transaction holds the row,
 * given back after its COMMIT.  A row whose key got none is not worked
 * (it goes back when the turn commits, or at once when it was the turn's
 * only row) and its key is left out of the next claims for
 * LIMIT_KEY_RECHECK_MS, when the key is tried again; a hot key's rows
 * are read past, not locked, and a key that has room is claimed by the
 * next claim that comes to its rows.  The keys throttled (a handler's
 * "throttle N" for its row's key) are read from the limit table every
 * LIMIT_KEY_THROTTLES_MS through its index on (queue, throttled_until)
 * and left out until their throttle ends; a key too long to write in
 * the claim (LIMIT_SCOPE_MAX) is looked up in its slot's statement.
 *
 * A key's rate is a bucket of its own in the limit table, taken on a
 * connection aside (key_tokens).
 *
 * per_key works in transaction mode with a select of that shape; rowq
 * check and the workers refuse it otherwise.
 */
#include "worker.h"

#include <stdlib.h>
#include <string.h>

/* A key left out: how long, and how it is written in the claim. */
#define LIMIT_KEY_RECHECK_MS	200
#define LIMIT_KEY_THROTTLES_MS	250

static const struct limit_policy *
key_policy(const struct worker *w)
{
	return &w->q->limit;
}

bool
limit_keys_on(const struct worker *w)
{
	return w->q->limit.key_column != NULL;
}

/* ---- the keys left out ---- */

static void
key_entry_free(struct limit_key *k)
{
	free(k->value);
	memset(k, 0, sizeof(*k));
}

/* Leave a key out until until_ms (a later time wins); value NULL: NULL. */
static void
key_exclude(struct worker *w, const char *value, size_t len, int64_t until)
{
	struct limit_keys *ks = &w->limit.keys;
	struct limit_key *k = NULL, *oldest = &ks->out[0];

	for (int i = 0; i < ks->nout; i++) {
		struct limit_key *e = &ks->out[i];
		if (e->null == (value == NULL) && e->len == len &&
		    (value == NULL || memcmp(e->value, value, len) == 0)) {
			if (until > e->until_ms)
				e->until_ms = until;
			return;
		}
		if (e->until_ms < oldest->until_ms)
			oldest = e;
	}
	if (ks->nout < LIMIT_KEYS_OUT_MAX)
		k = &ks->out[ks->nout++];
	else {
		/* Full: the one due soonest makes room; tried again early. */
		key_entry_free(oldest);
		k = oldest;
	}
	k->null = value == NULL;
	k->value = value ? xstrndup(value, len) : NULL;
	k->len = len;
	k->until_ms = until;
}

/* The keys whose time is up are tried again. */
static void
key_expire(struct worker *w, int64_t now)
{
	struct limit_keys *ks = &w->limit.keys;

	for (int i = 0; i < ks->nout;) {
		if (ks->out[i].until_ms <= now) {
			key_entry_free(&ks->out[i]);
			ks->out[i] = ks->out[--ks->nout];
			memset(&ks->out[ks->nout], 0, sizeof(ks->out[0]));
		} else
			i++;
	}
}

/*
 * A key's value in the claim's text: an integer column's as its digits
 * (cursor_key_valid), anything else as X'..', which MariaDB compares as
 * the same bytes.  False when it cannot be written (the row is then
 * tried, and its slot's statement decides).
 */
static bool
key_literal(const struct worker *w, struct buf *b, const struct limit_key *k)
{
	if (k->len + 1 > LIMIT_SCOPE_MAX - 1)
		return false;
	if (w->limit.keys.kind == COLUMN_INTEGER) {
		if (!cursor_key_valid(k->value, k->len))
			return false;
		buf_append(b, k->value, k->len);
	} else
		sql_hex(b, k->value, k->len);
	return true;
}

/*
 * The claim's condition that leaves the keys out, into cond; the cursor
 * claim adds it to its WHERE (cursor_claim.also).  Nothing when no key is
 * left out.
 */
void
limit_keys_condition(struct worker *w, struct buf *cond)
{
	struct limit_keys *ks = &w->limit.keys;
	bool null_out = false;
	int n = 0;

	buf_reset(cond);
	w->cursor.also = NULL;
	if (!limit_keys_on(w))
		return;
	key_expire(w, now_ms());
	buf_printf(cond, "%s NOT IN (", ks->ref.data);
	for (int i = 0; i < ks->nout; i++) {
		size_t mark = cond->len;
		if (ks->out[i].null) {
			null_out = true;
			continue;
		}
		if (n > 0)
			buf_puts(cond, ", ");
		if (!key_literal(w, cond, &ks->out[i])) {
			cond->len = mark;
			cond->data[mark] = '\0';
			continue;
		}
		n++;
	}
	buf_putc(cond, ')');
	if (n == 0 && !null_out) {
		buf_reset(cond);
		return;
	}
	if (n == 0) {
		buf_reset(cond);
		buf_printf(cond, "%s IS NOT NULL", ks->ref.data);
	} else {
		struct buf all = { 0 };
		buf_printf(&all, "(%s %s %s)", ks->ref.data, null_out ?
		    "IS NOT NULL AND" : "IS NULL OR", cond->data);
		buf_reset(cond);
		buf_puts(cond, all.data);
		buf_free(&all);
	}
	w->cursor.also = cond->data;
}

/* ---- the connection ---- */

/*
 * On a new connection: the column, and the claim it needs.  The locks of
 * the last session are gone with it.
 */
enum connect_status
limit_keys_connect(struct worker *w)
{
	struct limit_keys *ks = &w->limit.keys;
	const struct limit_policy *p = key_policy(w);
	struct buf sql = { 0 };
	struct db_stmt *s;
	enum db_status st;
	int col;

	ks->nheld = 0;
	if (!limit_keys_on(w))
		return CONNECT_OK;
	if (w->q->lease.enabled) {
		log_error("%s: per_key works in transaction mode only; this "
		    "queue has lease:", p->key_where);
		return CONNECT_CONFIG;
	}
	if (!w->cursor_on) {
		log_error("%s: per_key needs a select that rowq claims from a "
		    "cursor, of one table ordered by its integer primary key, "
		    "so that the rows of a key at its limit are read past, "
		    "never locked: the select %s", p->key_where,
		    w->cursor.reason ? w->cursor.reason :
		    "cannot be claimed so");
		return CONNECT_CONFIG;
	}
	if ((col = worker_column(w, p->key_column)) < 0)
		return CONNECT_CONFIG;	/* config_check_columns said it */
	ks->column = col;
	ks->kind = w->cols[col].kind;
	buf_reset(&ks->ref);
	buf_putc(&ks->ref, '`');
	for (const char *c = p->key_column; *c != '\0'; c++) {
		if (*c == '`')
			buf_putc(&ks->ref, '`');
		buf_putc(&ks->ref, *c);
	}
	buf_putc(&ks->ref, '`');
	/* The column must be the table's too: the claim's WHERE names it. */
	w->cursor.also = NULL;
	buf_printf(&sql, "%s IS NULL", ks->ref.data);
	w->cursor.also = sql.data;
	{
		struct buf claim = { 0 };
		cursor_claim_sql(&claim, &w->cursor, CURSOR_AFTER, "0", 1);
		s = db_prepare(w->db, claim.data, &st);
		buf_free(&claim);
	}
	w->cursor.also = NULL;
	buf_free(&sql);
	if (s == NULL) {
		log_error("%s: %s is not a column of the select's table %s: %s",
		    p->key_where, p->key_column, w->cursor.table,
		    db_error(w->db));
		return st == DB_RECONNECT ? CONNECT_AWAY : CONNECT_CONFIG;
	}
	db_stmt_free(s);
	return CONNECT_OK;
}

void
limit_keys_disconnect(struct worker *w)
{
	w->limit.keys.nheld = 0;
}

/* ---- the keys throttled ---- */

/*
 * Every LIMIT_KEY_THROTTLES_MS: the keys throttled now, left out until
 * their throttle ends.  A plain read through the index on (queue,
 * throttled_until), with whatever transaction is open.  Failures are
 * logged once a minute at most, and the keys stay as last read.
 */
static void
key_throttles(struct worker *w, int64_t now)
{
	struct limit_keys *ks = &w->limit.keys;
	struct worker_limit *l = &w->limit;
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };

	if (now - ks->throttles_ms < LIMIT_KEY_THROTTLES_MS)
		return;
	ks->throttles_ms = now;
	buf_printf(&sql, "SELECT scope, TIMESTAMPDIFF(MICROSECOND, "
	    "UTC_TIMESTAMP(6), throttled_until) FROM %s WHERE queue = '%s' AND "
	    "throttled_until > UTC_TIMESTAMP(6) AND slot = 0 AND scope <> '' "
	    "ORDER BY throttled_until DESC LIMIT %d", l->ctx.table, w->q->name,
	    LIMIT_KEYS_OUT_MAX);
	if (db_query(w->db, sql.data, &rs, &cols, &ncols) != DB_OK) {
		if (now - ks->said_ms > 60000)
			log_warnx("%s: cannot read the keys throttled: %s",
			    key_policy(w)->key_where, db_error(w->db));
		ks->said_ms = now;
	}
	for (size_t i = 0; ncols == 2 && i < rs.nrows; i++) {
		char *const *v = rs.rows[i].value;
		int64_t ms = v[1] ? (atoll(v[1]) + 999) / 1000 : 0;
		if (v[0] == NULL || rs.rows[i].len[0] == 0 || ms <= 0)
			continue;
		if (v[0][0] == 'n')
			key_exclude(w, NULL, 0, now + ms);
		else if (v[0][0] == 'k')
			key_exclude(w, v[0] + 1, rs.rows[i].len[0] - 1, now + ms);
	}
	rowset_clear(&rs, ncols);
	free(rs.rows);
	columns_free(cols, ncols);
	buf_free(&sql);
}

/* Before a claim: the keys throttled, when they are due to be read. */
void
limit_keys_before_claim(struct worker *w)
{
	if (limit_keys_on(w))
		key_throttles(w, now_ms());
}

/* The key's value of a row of the turn (NULL for SQL NULL). */
static const char *
key_value(const struct worker *w, const struct row *row, size_t *len)
{
	int c = w->limit.keys.column;

	*len = row->value[c] ? row->len[c] : 0;
	return row->value[c];
}

/* ---- the keys' rates: a connection aside ---- */

/*
 * A key's token must be committed before its handler starts (a crash
 * then costs the rate a token, and never exceeds it), and the key is
 * known only once its row is claimed, in a transaction that lasts as
 * long as the handler: so the tokens are taken on a connection of the
 * worker's own beside it, opened when first needed, which holds no
 * transaction between takes (a frozen host's holds nothing).  NULL when
 * the database is away: no token then.
 */
static struct db *
key_aside(struct worker *w)
{
	struct limit_keys *ks = &w->limit.keys;
	enum db_status st;

	if (ks->aside != NULL && !db_link_closed(ks->aside))
		return ks->aside;
	db_close(ks->aside);
	ks->aside = db_open(&w->args->cfg->db, &st);
	if (st != DB_OK) {
		worker_db_trouble(w, "connecting for per_key's rate");
		db_close(ks->aside);
		ks->aside = NULL;
	}
	return ks->aside;
}

/*
 * A token of each key's rate, for the turn's rows whose key has a slot:
 * one round trip on the connection aside, committed.  The rows of a key
 * that got none are not worked, and the key is left out for one token's
 * time (at most LIMIT_WAIT_MAX_MS); a key's second row in one turn waits
 * for the next.  Returns how many rows may still be worked.
 */
static int
key_tokens(struct worker *w, const int *first, int allowed)
{
	struct limit_keys *ks = &w->limit.keys;
	const struct limit_rate *r = &key_policy(w)->key_rate;
	const struct rowset *rs = &w->turn.rows;
	struct db_ahead_result *res;
	struct buf sql = { 0 };
	size_t n = rs->nrows, nkeys = 0;
	int64_t now = now_ms(), out = r->period_ms / r->count;
	struct db *db = key_aside(w);
	int *at = xcalloc(n ? n : 1, sizeof(*at));
	enum db_status st = DB_RECONNECT;

	if (out > 5000)
		out = 5000;
	for (size_t i = 0; i < n; i++) {
		struct limit_scope s;
		size_t len;
		const char *v = key_value(w, &rs->rows[i], &len);
		at[i] = -1;
		if (!ks->ok[i] || first[i] != (int)i)
			continue;
		limit_scope(&s, &w->limit.ctx, v, len, true);
		limit_sql_key_take(&sql, &w->limit.ctx, &s, r);
		buf_puts(&sql, ";\n");
		at[i] = (int)(2 * nkeys + 1);	/* the UPDATE's result */
		nkeys++;
	}
	res = xcalloc(2 * nkeys + 1, sizeof(*res));
	buf_puts(&sql, "COMMIT");
	if (db != NULL && nkeys > 0)
		st = db_run_results(db, sql.data, (int)(2 * nkeys + 1), res);
	if (db != NULL && st != DB_OK) {
		worker_db_trouble(w, "taking per_key's tokens");
		(void)db_rollback(db);
	}
	for (size_t i = 0; i < n; i++) {
		int k = first[i];
		bool got = st == DB_OK && at[k] >= 0 && res[at[k]].affected > 0;
		if (!ks->ok[i])
			continue;
		/* One start per key per turn: its token is the first row's. */
		if (got && k == (int)i)
			continue;
		ks->ok[i] = false;
		allowed--;
		if (k == (int)i) {
			size_t len;
			const char *v = key_value(w, &rs->rows[i], &len);
			key_exclude(w, v, len, now + out);
			if (w->args->stats)
				w->args->stats->limit_waits[LIMIT_KEY_RATE]++;
		}
	}
	free(at);
	free(res);
	buf_free(&sql);
	return allowed;
}

/* ---- the slots of the keys ---- */

/* Whether the i-th row's key is the same as the k-th's. */
static bool
key_same(const struct worker *w, size_t i, size_t k)
{
	const struct rowset *rs = &w->turn.rows;
	size_t a, b;
	const char *x = key_value(w, &rs->rows[i], &a);
	const char *y = key_value(w, &rs->rows[k], &b);

	if (x == NULL || y == NULL)
		return x == y;
	return a == b && memcmp(x, y, a) == 0;
}

/* The slots held, given back: into sql as RELEASE_LOCKs, and forgotten. */
static void
key_release_sql(struct worker *w, struct buf *sql, const char *sep)
{
	struct limit_keys *ks = &w->limit.keys;

	for (int i = 0; i < ks->nheld; i++) {
		struct limit_scope s = { .hash = ks->held[i].hash };
		buf_puts(sql, i ? ", " : sep);
		buf_puts(sql, "RELEASE_LOCK(");
		limit_lock_name(sql, &s, ks->held[i].slot);
		buf_putc(sql, ')');
	}
	ks->nheld = 0;
}

/* Give back the slots held (no transaction open any more). */
void
limit_keys_release(struct worker *w)
{
	struct limit_keys *ks = &w->limit.keys;
	struct buf sql = { 0 };

	if (ks->nheld == 0 || w->db == NULL) {
		ks->nheld = 0;
		return;
	}
	key_release_sql(w, &sql, "DO ");
	if (db_run(w->db, sql.data) != DB_OK)
		log_debug("limit: %s", db_error(w->db));
	buf_free(&sql);
}

/*
 * After a claim that returned rows: each key among them takes a slot
 * (the last turn's given back first, in the same statement), and the
 * rows whose key got none are marked not to be worked (limit_key_allows)
 * and their keys left out of the next claims.  Returns how many rows may
 * be worked, or -1 after a database error (the caller ends the turn).
 */
int
limit_keys_claimed(struct worker *w)
{
	struct limit_keys *ks = &w->limit.keys;
	const struct limit_policy *p = key_policy(w);
	const struct rowset *rs = &w->turn.rows;
	struct buf sql = { 0 };
	struct rowset got = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0, n = rs->nrows, nkeys = 0;
	int *first = xcalloc(n ? n : 1, sizeof(*first));
	int allowed = 0;
	enum db_status st;
	int64_t now = now_ms();

	if (!limit_keys_on(w) || n == 0) {
		free(first);
		return (int)n;
	}
	if (ks->cap < n) {
		ks->ok = xrealloc(ks->ok, n * sizeof(*ks->ok));
		ks->cap = n;
	}
	buf_puts(&sql, "SELECT ");
	key_release_sql(w, &sql, "");
	/* One column per distinct key, for the first row that has it. */
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const char *v = key_value(w, &rs->rows[i], &len);
		struct limit_scope s;
		first[i] = (int)i;
		for (size_t k = 0; k < i; k++)
			if (first[k] == (int)k && key_same(w, i, k)) {
				first[i] = (int)k;
				break;
			}
		if (first[i] != (int)i)
			continue;
		limit_scope(&s, &w->limit.ctx, v, len, true);
		buf_puts(&sql, sql.len > 7 ? ", " : "");
		buf_puts(&sql, "CASE WHEN ");
		/* A long key was not left out by the claim: looked at here. */
		if (s.bytes[0] == 'h')
			limit_sql_throttled(&sql, &w->limit.ctx, &s);
		else
			buf_puts(&sql, "0");
		buf_puts(&sql, " THEN -1 ELSE ");
		if (p->key_concurrency > 0)
			limit_sql_slot_take(&sql, &s, p->key_concurrency,
			    w->args->number % p->key_concurrency + 1);
		else
			buf_puts(&sql, "0");
		buf_puts(&sql, " END");
		nkeys++;
	}
	st = db_query(w->db, sql.data, &got, &cols, &ncols);
	buf_free(&sql);
	if (st != DB_OK || got.nrows != 1) {
		free(first);
		rowset_clear(&got, ncols);
		free(got.rows);
		columns_free(cols, ncols);
		worker_db_failed(w, st == DB_OK ? DB_FATAL : st,
		    "per_key's slots");
		return -1;
	}
	/* The releases' columns come first; then each key's, in order. */
	size_t c = ncols - nkeys, at = 0;
	int *slot = xcalloc(n ? n : 1, sizeof(*slot));
	for (size_t i = 0; i < n; i++) {
		if (first[i] == (int)i) {
			const char *v = got.rows[0].value[c + at++];
			slot[i] = v ? atoi(v) : 0;
		} else
			slot[i] = slot[first[i]];
		ks->ok[i] = slot[i] > 0 || p->key_concurrency == 0;
		if (first[i] == (int)i && slot[i] > 0 &&
		    ks->nheld < LIMIT_KEYS_HELD_MAX) {
			size_t len;
			const char *v = key_value(w, &rs->rows[i], &len);
			struct limit_scope s;
			limit_scope(&s, &w->limit.ctx, v, len, true);
			ks->held[ks->nheld].hash = s.hash;
			ks->held[ks->nheld++].slot = slot[i];
		}
		if (ks->ok[i]) {
			allowed++;
			continue;
		}
		if (first[i] == (int)i) {
			size_t len;
			const char *v = key_value(w, &rs->rows[i], &len);
			key_exclude(w, v, len, now + LIMIT_KEY_RECHECK_MS);
			if (w->args->stats)
				w->args->stats->limit_waits[slot[i] < 0 ?
				    LIMIT_KEY_THROTTLE : LIMIT_KEY_CONCURRENCY]++;
		}
	}
	ks->nrows = n;
	if (p->key_rate.count > 0 && allowed > 0)
		allowed = key_tokens(w, first, allowed);
	free(slot);
	free(first);
	rowset_clear(&got, ncols);
	free(got.rows);
	columns_free(cols, ncols);
	return allowed;
}

/* Whether the i-th row of the turn may be worked (its key has a slot). */
bool
limit_key_allows(const struct worker *w, size_t i)
{
	const struct limit_keys *ks = &w->limit.keys;

	return !limit_keys_on(w) || i >= ks->nrows || ks->ok[i];
}

/* The scope of the i-th row's key, for its throttle. */
void
limit_key_scope(const struct worker *w, const struct row *row,
    struct limit_scope *s)
{
	size_t len;
	const char *v = key_value(w, row, &len);

	limit_scope(s, &w->limit.ctx, v, len, true);
}

void
limit_keys_free(struct worker *w)
{
	struct limit_keys *ks = &w->limit.keys;

	for (int i = 0; i < ks->nout; i++)
		key_entry_free(&ks->out[i]);
	free(ks->ok);
	buf_free(&ks->ref);
	buf_free(&ks->cond);
	db_close(ks->aside);
	ks->aside = NULL;
}
