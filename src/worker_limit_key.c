/*
 * worker_limit_key.c: limit.per_key, the worker's side: the limits of
 * limit: for each value of a column of the select, a key.
 *
 * A row whose key is at its limit must be passed over, and the rows of
 * the other keys keep flowing, with a claim that locks nothing it does
 * not return.  So the claim is the one from a cursor (cursor.c: a scan of
 * the primary key, which releases at once the rows it reads and
 * rejects), and a slot of the row's key is taken by the claim itself, as
 * the last condition of its WHERE:
 *
 *	... AND (customer_id IS NULL OR customer_id NOT IN (17, 93))
 *	    AND (GET_LOCK(CONCAT('rowq:BASE:', IFNULL(CRC32(customer_id),
 *	    'n'), ':', 1), 0)) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
 *
 * The lock is tried only for a row that SKIP LOCKED has not skipped and
 * that the rest of the WHERE keeps, so it is taken for the rows the claim
 * returns and for no other; a row whose key's slots are all taken is
 * read past as a row that does not match, with no round trip of its own.
 * The locks are the session's, as the queue's slots (limit.c), held
 * while the turn's transaction holds the rows and given back behind its
 * COMMIT, in the next claim's round trip.  The keys throttled (a
 * handler's "throttle N" for its row's key) are read from the limit
 * table every LIMIT_KEY_THROTTLES_MS through its index on (queue,
 * throttled_until) and left out (NOT IN, at most LIMIT_KEYS_OUT_MAX)
 * until their throttle ends.  A key's rate is a bucket of its own in the
 * limit table, taken on a connection aside (key_tokens).
 *
 * per_key needs a select of that shape; rowq check and the workers
 * refuse it otherwise.  In lease mode the locks outlive the claim's
 * COMMIT (they are the session's): the session keeps them while the
 * handler runs, and the turn gives them back once its rows are finished
 * (worker_lease.c); db_limits.c has such a session end after a lease of
 * silence, so that a frozen host's keys come back with its rows.
 */
#include "worker.h"
#include "claim.h"

#include <stdlib.h>
#include <string.h>

/* The keys throttled are read this often. */
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
 * (cursor_key_valid), anything else as bytes (dialect_bytes), which the
 * server compares as the same bytes.  False when it cannot be written (the row is then
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
		dialect_bytes(db_dialect(w->db), b, k->value, k->len);
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
	rowset_free(&rs, ncols);
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

/*
 * The name of a key's slot, in SQL: 'rowq:BASE:CRC:SLOT', CRC the CRC-32
 * of the key's value as the client gets it ('n' for NULL).  The claim
 * computes it from the column (key_take_sql), and the worker from the
 * row it got (key_name): the same bytes, so the same name.  Two keys of
 * the same CRC share their slots: limited together, never more.
 */
static void
key_name_sql(const struct worker *w, struct buf *b, const char *slot)
{
	const struct limit_keys *ks = &w->limit.keys;

	buf_printf(b, "CONCAT('rowq:%016llx:', IFNULL(CRC32(",
	    (unsigned long long)w->limit.ctx.base);
	if (ks->kind == COLUMN_TEXT)
		buf_printf(b, "CONVERT(%s USING utf8mb4)", ks->ref.data);
	else
		buf_puts(b, ks->ref.data);
	buf_printf(b, "), 'n'), ':', %s)", slot);
}

/* The name of the slot of a key whose CRC is crc (-1: NULL), as text. */
static void
key_name(const struct worker *w, struct buf *b, long long crc,
    const char *slot)
{
	if (crc < 0)
		buf_printf(b, "CONCAT('rowq:%016llx:n:', %s)",
		    (unsigned long long)w->limit.ctx.base, slot);
	else
		buf_printf(b, "CONCAT('rowq:%016llx:%lld:', %s)",
		    (unsigned long long)w->limit.ctx.base, crc, slot);
}

/* Slots of a key tried in one condition; more go through a table. */
#define KEY_SLOTS_INLINE	4

/*
 * The claim's condition that takes a slot of the row's key: evaluated
 * last, for the rows the rest of the WHERE keeps and SKIP LOCKED has not
 * skipped, so that a lock is taken for the rows the claim returns, and
 * the row of a key whose slots are all taken is read past like a row
 * that does not match (the claim from a cursor releases it at once).
 */
static void
key_take_sql(struct worker *w, struct buf *b)
{
	int n = key_policy(w)->key_concurrency;
	char slot[32];

	buf_reset(b);
	if (n > KEY_SLOTS_INLINE) {
		buf_printf(b, "EXISTS (WITH RECURSIVE rowq_n (n) AS (SELECT 1 "
		    "UNION ALL SELECT n + 1 FROM rowq_n WHERE n < %d) SELECT 1 "
		    "FROM rowq_n WHERE GET_LOCK(", n);
		key_name_sql(w, b, "n");
		buf_puts(b, ", 0) LIMIT 1)");
		return;
	}
	buf_putc(b, '(');
	for (int i = 1; i <= n; i++) {
		snprintf(slot, sizeof(slot), "%d", i);
		buf_puts(b, i > 1 ? " OR GET_LOCK(" : "GET_LOCK(");
		key_name_sql(w, b, slot);
		buf_puts(b, ", 0)");
	}
	buf_putc(b, ')');
}

/*
 * The slots the last turn's rows took, given back: into sql as one
 * statement (each row's key, every slot of it: RELEASE_LOCK of a lock
 * not held does nothing, and a key two rows of a batch had is held
 * twice).  Nothing when none is held.
 */
static void
key_release_sql(struct worker *w, struct buf *sql)
{
	struct limit_keys *ks = &w->limit.keys;
	int n = key_policy(w)->key_concurrency;
	char slot[32];

	if (ks->nheld == 0 || n == 0)
		return;
	buf_puts(sql, "DO 0");
	for (int i = 0; i < ks->nheld; i++) {
		if (n > KEY_SLOTS_INLINE) {
			buf_printf(sql, ", (WITH RECURSIVE rowq_n (n) AS (SELECT "
			    "1 UNION ALL SELECT n + 1 FROM rowq_n WHERE n < %d) "
			    "SELECT SUM(RELEASE_LOCK(", n);
			key_name(w, sql, ks->held[i].crc, "n");
			buf_puts(sql, ")) FROM rowq_n)");
			continue;
		}
		for (int k = 1; k <= n; k++) {
			snprintf(slot, sizeof(slot), "%d", k);
			buf_puts(sql, ", RELEASE_LOCK(");
			key_name(w, sql, ks->held[i].crc, slot);
			buf_putc(sql, ')');
		}
	}
}

/*
 * For the claim's front, behind its COMMIT: the last turn's slots given
 * back (limit_keys_released says whether that ran).  Returns how many
 * statements it wrote: 0 or 1.
 */
int
limit_keys_front(struct worker *w, struct buf *after)
{
	size_t len = after->len;

	if (!limit_keys_on(w))
		return 0;
	key_release_sql(w, after);
	if (after->len == len)
		return 0;
	buf_puts(after, ";\n");
	return 1;
}

/* The front's release ran: nothing held from the last turn. */
void
limit_keys_released(struct worker *w)
{
	w->limit.keys.nheld = 0;
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
	key_release_sql(w, &sql);
	if (sql.len > 0 && db_run(w->db, sql.data) != DB_OK)
		log_debug("limit: %s", db_error(w->db));
	ks->nheld = 0;
	buf_free(&sql);
}

/*
 * The claim's own conditions, before it is written: the keys left out
 * (into cond, the cursor's also, for its first key too) and, with a
 * concurrency, the take of a slot (the cursor's take, for the claim
 * alone).
 */
void
limit_keys_claim_sql(struct worker *w)
{
	struct limit_keys *ks = &w->limit.keys;

	w->cursor.take = NULL;
	if (!limit_keys_on(w))
		return;
	limit_keys_condition(w, &ks->cond);
	if (key_policy(w)->key_concurrency > 0) {
		if (ks->take.len == 0)
			key_take_sql(w, &ks->take);
		w->cursor.take = ks->take.data;
	}
}

/*
 * After a claim that returned rows: each row holds a slot of its key
 * (the claim took it), kept to be given back after the turn's COMMIT;
 * with a rate, each key takes a token (key_tokens), and the rows whose
 * key got none are marked not to be worked (limit_key_allows).  Returns
 * how many rows may be worked.
 */
int
limit_keys_claimed(struct worker *w)
{
	struct limit_keys *ks = &w->limit.keys;
	const struct limit_policy *p = key_policy(w);
	const struct rowset *rs = &w->turn.rows;
	size_t n = rs->nrows;
	int *first, allowed = (int)n;

	if (!limit_keys_on(w) || n == 0)
		return (int)n;
	if (ks->cap < n) {
		ks->ok = xrealloc(ks->ok, n * sizeof(*ks->ok));
		ks->cap = n;
	}
	first = xcalloc(n, sizeof(*first));
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const char *v = key_value(w, &rs->rows[i], &len);
		ks->ok[i] = true;
		first[i] = (int)i;
		for (size_t k = 0; k < i; k++)
			if (first[k] == (int)k && key_same(w, i, k)) {
				first[i] = (int)k;
				break;
			}
		if (p->key_concurrency > 0 && ks->nheld < LIMIT_KEYS_HELD_MAX)
			ks->held[ks->nheld++].crc = v == NULL ? -1 :
			    (long long)limit_crc32(v, len);
	}
	ks->nrows = n;
	if (p->key_rate.count > 0)
		allowed = key_tokens(w, first, allowed);
	free(first);
	return allowed;
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
	buf_reset(&ks->take);
	if (p->key_concurrency > 0)
		key_take_sql(w, &ks->take);
	buf_printf(&sql, "%s IS NULL", ks->ref.data);
	w->cursor.also = sql.data;
	w->cursor.take = ks->take.len > 0 ? ks->take.data : NULL;
	{
		struct buf claim = { 0 };
		cursor_claim_sql(&claim, &w->cursor, CURSOR_AFTER, "0", 1, NULL);
		s = db_prepare(w->db, claim.data, &st);
		buf_free(&claim);
	}
	w->cursor.also = w->cursor.take = NULL;
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
	buf_free(&ks->take);
	db_close(ks->aside);
	ks->aside = NULL;
}
