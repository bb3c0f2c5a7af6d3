/*
 * limit.c: a queue's limit: in the database, the statements every part of
 * rowq builds it from: the workers (worker_limit.c), `rowq status` and the
 * metrics probe (status_db.c), `rowq check` (check.c).
 *
 * Everything goes through the database the queue is in, with the
 * server's clock alone (UTC_TIMESTAMP(6): no time zone, no host's clock):
 *
 * - A concurrency slot, in transaction mode, is a named lock of the
 *   server, GET_LOCK('rowq:HASH:SLOT', 0), taken in the claim's round
 *   trip, inside the transaction that holds the rows, and released after
 *   its COMMIT.  A named lock belongs to the session: whatever ends the
 *   session (a killed worker, a server that ends an idle transaction of a
 *   frozen or cut-off host, db_limits.c, a restart) frees the slot at the
 *   moment it frees the rows, and no row of a table needs to exist for it.
 *   IS_USED_LOCK() tells `rowq status` how many are taken without taking
 *   any.  HASH is of the database's name, the queue's and the key's.
 * - In lease mode no transaction stays open while a handler runs, so a
 *   slot is a row (queue, scope, 1..N) of the limit table with a lease of
 *   its own, taken in the claim's transaction, renewed with the row's and
 *   given up when the row is finished; one whose daemon died runs out
 *   with the row's lease.
 * - A rate is a token bucket, the row (queue, scope, 0): tokens as of
 *   tokens_at, refilled by the server's elapsed time up to burst, taken
 *   by one UPDATE.
 * - A throttle (a handler's "throttle N", worker_limit.c) is
 *   throttled_until on the same row: no claim takes a slot or a token
 *   before it.
 *
 * The table is rowq's own (limit_table:, default rowq_limit): created by
 * the first worker that needs it, one row per queue, per key and per
 * lease-mode slot; rowq.yaml(5) gives the DDL.
 */
#include "rowq.h"
#include "db.h"
#include "dialect.h"
#include "commands.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* What the workers create; rowq.yaml(5) gives the same DDL. */
#define LIMIT_DDL \
	"CREATE TABLE IF NOT EXISTS %s (\n" \
	"  queue VARCHAR(191) NOT NULL,\n" \
	"  scope VARBINARY(255) NOT NULL DEFAULT '',\n" \
	"  slot INT NOT NULL DEFAULT 0,\n" \
	"  tokens DOUBLE NOT NULL DEFAULT 0,\n" \
	"  took INT NOT NULL DEFAULT 0,\n" \
	"  tokens_at DATETIME(6) NOT NULL DEFAULT '2000-01-01 00:00:00',\n" \
	"  lease CHAR(32) NULL,\n" \
	"  lease_until DATETIME(6) NULL,\n" \
	"  throttled_until DATETIME(6) NULL,\n" \
	"  reason VARCHAR(1000) NOT NULL DEFAULT '',\n" \
	"  PRIMARY KEY (queue, scope, slot),\n" \
	"  KEY rowq_throttled (queue, throttled_until)\n" \
	") ENGINE=InnoDB"

#define NOW6	"UTC_TIMESTAMP(6)"

/* CRC-32 (IEEE, as zlib's and the server's CRC32()) of bytes. */
uint32_t
limit_crc32(const char *s, size_t len)
{
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		crc ^= (unsigned char)s[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

const char *
limit_table(const struct config *cfg)
{
	return cfg->limit_table != NULL ? cfg->limit_table :
	    LIMIT_TABLE_DEFAULT;
}

/*
 * The context of one queue's statements.  database is the session's
 * (SELECT DATABASE()): the lock names of two databases' queues of the
 * same name must differ.
 */
void
limit_ctx_init(struct limit_ctx *c, const struct config *cfg,
    const struct queue *q, const char *database)
{
	uint64_t h = recent_hash(database ? database : "", database ?
	    strlen(database) : 0, 0);

	memset(c, 0, sizeof(*c));
	c->cfg = cfg;
	c->q = q;
	c->table = limit_table(cfg);
	h = recent_hash("", 1, h);	/* a NUL between the names */
	c->base = recent_hash(q->name, strlen(q->name), h);
}

/*
 * The scope of the queue (key NULL, is_key false), or of a key's value
 * (key NULL, is_key: SQL NULL).  A value that does not fit is kept as
 * its hash.
 */
void
limit_scope(struct limit_scope *s, const struct limit_ctx *c,
    const char *key, size_t len, bool is_key)
{
	memset(s, 0, sizeof(*s));
	if (!is_key) {
		s->len = 0;
	} else if (key == NULL) {
		s->bytes[0] = 'n';
		s->len = 1;
	} else if (len + 1 <= LIMIT_SCOPE_MAX - 1) {
		s->bytes[0] = 'k';
		memcpy(s->bytes + 1, key, len);
		s->len = len + 1;
	} else {
		uint64_t a = recent_hash(key, len, 0);
		uint64_t b = recent_hash(key, len, a ^ 0x9e3779b97f4a7c15ULL);
		s->len = (size_t)snprintf(s->bytes, sizeof(s->bytes),
		    "h%016" PRIx64 "%016" PRIx64, a, b);
	}
	s->hash = recent_hash(s->bytes, s->len, c->base);
}

/*
 * queue = 'Q' AND scope = X'..' AND slot ..., the row or rows of a scope,
 * of the table named as (with its "."; "" for none).
 */
static void
limit_sql_where_as(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, int slots, const char *as)
{
	/* Queue names are letters, digits, _ and - (config_queue.c). */
	buf_printf(b, "%squeue = '%s' AND %sscope = ", as, c->q->name, as);
	sql_hex(b, s->bytes, s->len);
	if (slots == 0)
		buf_printf(b, " AND %sslot = 0", as);
	else
		buf_printf(b, " AND %sslot BETWEEN 1 AND %d", as, slots);
}

/* The same, of the table as it is named. */
static void
limit_sql_where(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, int slots)
{
	limit_sql_where_as(b, c, s, slots, "");
}

/* The name of a transaction-mode slot's lock. */
void
limit_lock_name(struct buf *b, const struct limit_scope *s, int slot)
{
	buf_printf(b, "'rowq:%016" PRIx64 ":%d'", s->hash, slot);
}

/* The same, of the slot an SQL expression gives. */
static void
limit_sql_lock_of(struct buf *b, const struct limit_scope *s,
    const char *slot)
{
	buf_printf(b, "CONCAT('rowq:%016" PRIx64 ":', %s)", s->hash, slot);
}

/*
 * A table of n = 0..slots - 1, for each slot in turn (the slot of row n
 * is (n + first - 1) % slots + 1): short whatever the number of slots,
 * and read in order, so that a LIMIT 1 stops at the first match.
 */
static void
limit_sql_slots(struct buf *b, int slots)
{
	buf_printf(b, "WITH RECURSIVE rowq_n (n) AS (SELECT 0 UNION ALL "
	    "SELECT n + 1 FROM rowq_n WHERE n < %d) ", slots - 1);
}

/*
 * A free slot of the scope's, its lock taken: the expression is the
 * slot's number, or 0 when every one is taken; from slot first, round.
 * With wait_s, when every one is taken, it waits that long for the lock
 * of the slot of the two parameters (its number twice) instead, and is
 * that slot's number, or 0.  COALESCE reads each of its arguments once
 * (NULLIF would read its first twice, and take two locks).
 */
void
limit_sql_slot_take(struct buf *b, const struct limit_scope *s, int slots,
    int first, int wait_s)
{
	char slot[64];

	if (slots == 1 && wait_s == 0) {
		buf_puts(b, "IF(GET_LOCK(");
		limit_lock_name(b, s, 1);
		buf_puts(b, ", 0), 1, 0)");
		return;
	}
	buf_puts(b, "COALESCE(");
	if (slots == 1) {
		buf_puts(b, "IF(GET_LOCK(");
		limit_lock_name(b, s, 1);
		buf_puts(b, ", 0), 1, NULL)");
	} else {
		snprintf(slot, sizeof(slot), "(n + %d) %% %d + 1", first - 1,
		    slots);
		buf_putc(b, '(');
		limit_sql_slots(b, slots);
		buf_printf(b, "SELECT %s FROM rowq_n WHERE GET_LOCK(", slot);
		limit_sql_lock_of(b, s, slot);
		buf_puts(b, ", 0) LIMIT 1)");
	}
	if (wait_s > 0) {
		buf_puts(b, ", IF(GET_LOCK(");
		limit_sql_lock_of(b, s, "?");
		buf_printf(b, ", %d), ?, 0)", wait_s);
	}
	buf_puts(b, ", 0)");
}

/* Whether the scope is throttled now, as an SQL condition. */
void
limit_sql_throttled(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s)
{
	buf_printf(b, "EXISTS (SELECT 1 FROM %s WHERE ", c->table);
	limit_sql_where(b, c, s, 0);
	buf_puts(b, " AND throttled_until > " NOW6 ")");
}

/* Tokens per microsecond, as a literal. */
static void
limit_sql_per_us(struct buf *b, const struct limit_rate *r)
{
	buf_printf(b, "%.17g", (double)r->count / ((double)r->period_ms *
	    1000.0));
}

/* The tokens the bucket gained since the last take (none for a clock
 * set back). */
static void
limit_sql_refill(struct buf *b, const struct limit_rate *r)
{
	buf_puts(b, "GREATEST(0, TIMESTAMPDIFF(MICROSECOND, tokens_at, " NOW6
	    ")) * ");
	limit_sql_per_us(b, r);
}

/*
 * The tokens the bucket holds now, by the server's time since the last
 * take, with refund (an SQL expression) given back, at most burst.  Not
 * while it is in debt: each reserved token's due time counts the ones
 * reserved before it, and a token given back then would let a take
 * reserve the last one's time again (two starts where one was due); a
 * token not used is then lost to the rate, never added to it.
 */
static void
limit_sql_avail(struct buf *b, const struct limit_ctx *c,
    const struct limit_rate *r, const char *refund)
{
	buf_printf(b, "LEAST(%d, tokens + ", c->q->limit.burst);
	limit_sql_refill(b, r);
	buf_puts(b, " + IF(tokens + ");
	limit_sql_refill(b, r);
	buf_printf(b, " < 0, 0, %s))", refund);
}

/*
 * The rate's take, to prepare.  With a concurrency slot held, at batch 1
 * (iff): some tokens or none, as the rows it changes say, none while the
 * scope is throttled (limit_sql_take_one); its parameters, the tokens an
 * earlier take did not use, given back first, once per time the bucket
 * is read (the statement's holes say how many).  Otherwise: up to a number of tokens, the
 * second parameter, of those the bucket holds, or one reserved
 * (limit_ahead_tokens), the others the tokens given back; the row is
 * refilled either way, and took says what was taken (none while
 * throttled), for the gate to read (MariaDB and MySQL assign a
 * single-table UPDATE's columns left to right, each seeing the ones
 * before).
 */
/*
 * How many tokens a worker's take at batch 1 takes at once, where it
 * does not reserve one ahead (limit_take_took): a
 * millisecond's worth of the rate (at most LIMIT_RESERVE_MAX), so that
 * a rate far above what the workers do costs one UPDATE per that many
 * rows rather than one per row; 1, as before, below 2,000 a second.
 * The bucket may go into debt by the rest (the take needs one token
 * there), and what the worker does not start within LIMIT_RESERVE_MS
 * goes back with its next take.
 */
int
limit_reserve_size(const struct limit_rate *r)
{
	double per_ms;

	if (r->count <= 0 || r->period_ms <= 0)
		return 1;
	per_ms = (double)r->count / (double)r->period_ms;
	if (per_ms >= LIMIT_RESERVE_MAX)
		return LIMIT_RESERVE_MAX;
	return per_ms < 1 ? 1 : (int)per_ms;
}

/*
 * How many tokens ahead of the bucket a take of a worker in transaction
 * mode may reserve: LIMIT_AHEAD_MS of the rate.  A reserved token is
 * taken now and its handler starts when it is due (the bucket, in debt,
 * says when), so that a waiting worker sleeps until its own token rather
 * than polling for one it may miss, and no token falls due while nobody
 * is there to take it (with a burst of 1, such a token is lost).  None in
 * lease mode, whose take comes after the claim's rows are leased.
 */
int
limit_ahead_tokens(const struct limit_ctx *c, const struct limit_rate *r)
{
	double n;

	if (c->q->lease.enabled || r->count <= 0 || r->period_ms <= 0)
		return 0;
	/*
	 * Where a take takes a millisecond's tokens at once (2,000 a second
	 * and more), only while the burst holds no more than one take: a
	 * bucket that holds more keeps the tokens that fall due while the
	 * workers are busy, and a reservation would lose them instead, as a
	 * worker that wakes more than 10 ms after its half-millisecond
	 * token leaves it (limit_late), and a left token is lost while the
	 * bucket is in debt (2 daemons of 2 workers under ASan on 2 cores,
	 * 2000/1s, burst 10, started 1,535 a second so:
	 * 621_limit_rate_reserve.sh wants 1,600).  A burst of one take loses
	 * more without it: every token that falls due while no take is
	 * there (2000/1s, burst 1: about 1,500 a second).
	 */
	if (limit_reserve_size(r) > 1 &&
	    c->q->limit.burst > limit_reserve_size(r))
		return 0;
	n = (double)r->count * LIMIT_AHEAD_MS / (double)r->period_ms;
	/* Far more than any fleet's workers reserve at once. */
	return n > LIMIT_AHEAD_MAX ? LIMIT_AHEAD_MAX : (int)n;
}

/*
 * How many tokens a take at batch 1 took (limit_sql_take_one), from the
 * microseconds until its first is due: limit_reserve_size's when one was
 * there (due now); one when it reserved a token ahead, as each reserved
 * token's due time is its own, and one a worker did not use could not
 * go back while the bucket is in debt (a take of 2 at 2,000 a second,
 * burst 1, lost a quarter of the rate so under ASan).
 */
int
limit_take_took(const struct limit_ctx *c, const struct limit_rate *r,
    long long due_us)
{
	return limit_ahead_tokens(c, r) > 0 && due_us > 0 ? 1 :
	    limit_reserve_size(r);
}

/* What a take of n takes: one alone where it reserves one ahead. */
static void
limit_sql_took(struct buf *b, const struct limit_ctx *c,
    const struct limit_rate *r, const char *refund, int n, int ahead)
{
	if (ahead > 0 && n > 1) {
		buf_puts(b, "IF(");
		limit_sql_avail(b, c, r, refund);
		buf_printf(b, " >= 1, %d, 1)", n);
	} else
		buf_printf(b, "%d", n);
}

/*
 * n tokens or none, as the rows the UPDATE matches say, none while the
 * scope is throttled; refund (an SQL expression) given back first.  The
 * bucket needs one token, or with ahead tokens to reserve, 1 - ahead
 * (a token due within LIMIT_AHEAD_MS), and is left n - 1 short for more
 * (a debt the refill pays before the next take).  With ahead, the
 * microseconds until the first of them is due are the statement's
 * LAST_INSERT_ID (the insert id of its answer, no statement more), and
 * a token reserved ahead is taken alone (limit_take_took).
 */
static void
limit_sql_take_one(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, const struct limit_rate *r,
    const char *refund, int n, int ahead)
{
	buf_printf(b, "UPDATE %s SET took = ", c->table);
	limit_sql_took(b, c, r, refund, n, ahead);
	if (ahead > 0) {
		/* Read before tokens changes: columns go left to right. */
		buf_puts(b, " + 0 * LAST_INSERT_ID(CEIL(GREATEST(0, 1 - ");
		limit_sql_avail(b, c, r, refund);
		buf_puts(b, ") / ");
		limit_sql_per_us(b, r);
		buf_puts(b, "))");
	}
	/*
	 * Not "- took": under MariaDB's SIMULTANEOUS_ASSIGNMENT that is the
	 * last take's.
	 */
	buf_puts(b, ", tokens = ");
	limit_sql_avail(b, c, r, refund);
	buf_puts(b, " - ");
	limit_sql_took(b, c, r, refund, n, ahead);
	buf_puts(b, ", tokens_at = " NOW6 " WHERE ");
	limit_sql_where(b, c, s, 0);
	buf_puts(b, " AND (throttled_until IS NULL OR throttled_until <= "
	    NOW6 ") AND ");
	limit_sql_avail(b, c, r, refund);
	buf_printf(b, " >= %d", 1 - ahead);
}

void
limit_sql_rate_take(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, const struct limit_rate *r, bool iff)
{
	int ahead = limit_ahead_tokens(c, r);

	if (iff) {
		limit_sql_take_one(b, c, s, r, "?", limit_reserve_size(r),
		    ahead);
		return;
	}
	/*
	 * Up to the number asked for of the tokens there now; else one
	 * reserved, due within the ahead; not below 0, where a reserving
	 * take left the bucket in debt.
	 */
	buf_printf(b, "UPDATE %s SET took = IF(throttled_until > " NOW6
	    ", 0, IF(", c->table);
	limit_sql_avail(b, c, r, "?");
	buf_printf(b, " >= %d, LEAST(?, GREATEST(1, FLOOR(", 1 - ahead);
	limit_sql_avail(b, c, r, "?");
	buf_puts(b, "))), 0)), tokens = ");
	limit_sql_avail(b, c, r, "?");
	buf_puts(b, " - took, tokens_at = " NOW6 " WHERE ");
	limit_sql_where(b, c, s, 0);
}

/*
 * The gate of a claim, to prepare, read from the scope's row (slot 0).
 * With a concurrency (transaction mode) its parameters are the slot to
 * try first, three times (0: none); with wait, then the slot whose lock
 * to wait for, twice, when every one is taken: up to LIMIT_SLOT_WAIT_S,
 * in the server, which hands the lock over the moment its holder
 * releases it (limit_slot_turn).  Its values:
 *	[0] -1 when the scope is throttled; 0 when the rate's take before
 *	    it (rate) took nothing, or every slot is taken; the slot whose
 *	    lock it took, trying the first, then each from slot first,
 *	    round; else 1;
 *	[1] the throttle's microseconds left (NULL or negative: none);
 *	[2] rate: the tokens its take took, [3] microseconds until the
 *	    next (NULL without a rate).
 * No row when the scope's row is not there.  It runs only when the
 * worker holds no slot: a lock held twice by a session is released only
 * by two RELEASE_LOCKs.
 */
void
limit_sql_gate(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, int concurrency, int first,
    const struct limit_rate *rate, bool wait)
{
	buf_puts(b, "SELECT CASE WHEN throttled_until > " NOW6 " THEN -1");
	if (rate != NULL)
		buf_puts(b, " WHEN took = 0 THEN 0");
	if (concurrency > 0) {
		buf_puts(b, " WHEN ? > 0 AND GET_LOCK(");
		limit_sql_lock_of(b, s, "?");
		buf_puts(b, ", 0) THEN ? ELSE ");
		limit_sql_slot_take(b, s, concurrency, first, wait ?
		    LIMIT_SLOT_WAIT_S : 0);
		buf_puts(b, " END");
	} else
		buf_puts(b, " ELSE 1 END");
	buf_puts(b, ", TIMESTAMPDIFF(MICROSECOND, " NOW6 ", throttled_until)");
	if (rate != NULL) {
		/* After its own take, the row says when that take's first
		 * token is due, or when a take can reserve one. */
		buf_printf(b, ", took, CEIL(GREATEST(0, 1 - IF(took > 0, took, "
		    "%d) - tokens) / ", limit_ahead_tokens(c, rate));
		limit_sql_per_us(b, rate);
		buf_putc(b, ')');
	} else
		buf_puts(b, ", NULL, NULL");
	buf_printf(b, " FROM %s WHERE ", c->table);
	limit_sql_where(b, c, s, 0);
}

/*
 * A key's token on a connection of its own (worker_limit_key.c): the
 * scope's row made when it is missing (full), then one token or none, as
 * the rows the UPDATE matches say; none while the key is throttled.
 */
void
limit_sql_key_take(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, const struct limit_rate *r)
{
	limit_sql_rows(b, c, s, 0);
	buf_puts(b, ";\n");
	limit_sql_take_one(b, c, s, r, "0", 1, 0);
}

/* Give back n tokens, alone (a take carries them otherwise), but not
 * while the bucket is in debt (limit_sql_avail). */
void
limit_sql_refund(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, int n)
{
	buf_printf(b, "UPDATE %s SET tokens = IF(tokens + ", c->table);
	limit_sql_refill(b, &c->q->limit.rate);
	buf_printf(b, " < 0, tokens, LEAST(%d, tokens + %d)) WHERE ",
	    c->q->limit.burst, n);
	limit_sql_where(b, c, s, 0);
}

/*
 * Lease mode shares the slots between daemons that all have work
 * (worker_limit_lease.c) in the lease columns of the scope's row, slot 0,
 * which hold no lease: a daemon none of whose workers got a slot marks
 * it wanted there, lease 'w' and the daemon's id, for LIMIT_WANT_MS; a
 * worker that has held a slot for its turn gives it up, while another
 * daemon wants one, handed over: lease 'h' and its daemon's id, for
 * LIMIT_HANDOVER_MS, in which no worker of its own daemon takes it.  A
 * lease token is hex digits, never 'h' or 'w'.
 */

/* Lease mode: the daemon's mark that it wants a slot (daemon: its id). */
void
limit_sql_lease_want(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, const char *daemon)
{
	buf_printf(b, "UPDATE %s SET lease = 'w%s', lease_until = " NOW6
	    " + INTERVAL %d MICROSECOND WHERE ", c->table, daemon,
	    LIMIT_WANT_MS * 1000);
	limit_sql_where(b, c, s, 0);
}

/*
 * Lease mode: take a free slot of the scope with the lease token (the
 * one parameter), for the queue's lease.duration, or one another daemon
 * handed over (daemon: this one's id).  Changes one row, or
 * none when every slot's lease is live.  Slots whose row another claim
 * is taking are waited for (a lease-mode claim's transaction is short);
 * those leased are read as they were committed, and passed over.  It
 * runs whatever the gate before it said (the gate's answer is read by
 * the worker, not passed on in a user variable, whose assignment inside
 * a SELECT MySQL deprecates): a turn the gate holds back is rolled back
 * whole, this slot's lease with it.
 */
void
limit_sql_lease_take(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, int slots, const char *daemon)
{
	buf_printf(b, "UPDATE %s SET lease = ?, lease_until = " NOW6
	    " + INTERVAL %" PRId64 " MICROSECOND WHERE ", c->table,
	    c->q->lease.duration_ms * 1000);
	limit_sql_where(b, c, s, slots);
	buf_printf(b, " AND (lease_until IS NULL OR lease_until <= " NOW6
	    " OR lease LIKE 'h%%' AND lease <> 'h%s') ORDER BY slot LIMIT 1",
	    daemon);
}

/*
 * Lease mode: renew the slot whose lease is token, or give it up; with
 * daemon (this one's id), handed over where another daemon wants a slot
 * (the scope's row says so), else free.
 */
void
limit_sql_lease_keep(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, int slots, const char *token, bool renew,
    const char *daemon)
{
	if (renew)
		buf_printf(b, "UPDATE %s SET lease_until = " NOW6 " + INTERVAL %"
		    PRId64 " MICROSECOND WHERE ", c->table,
		    c->q->lease.duration_ms * 1000);
	else if (daemon == NULL)
		buf_printf(b, "UPDATE %s SET lease = NULL, lease_until = NULL "
		    "WHERE ", c->table);
	if (renew || daemon == NULL) {
		limit_sql_where(b, c, s, slots);
		buf_printf(b, " AND lease = '%s'", token);
		return;
	}
	/* Both read the scope's row, which this changes not. */
	buf_printf(b, "UPDATE %s AS s JOIN %s AS z ON z.queue = s.queue AND "
	    "z.scope = s.scope AND z.slot = 0 SET s.lease = IF(z.lease_until > "
	    NOW6 " AND z.lease <> 'w%s', 'h%s', NULL), s.lease_until = "
	    "IF(z.lease_until > " NOW6 " AND z.lease <> 'w%s', " NOW6
	    " + INTERVAL %d MICROSECOND, NULL) WHERE ", c->table, c->table,
	    daemon, daemon, daemon, LIMIT_HANDOVER_MS * 1000);
	limit_sql_where_as(b, c, s, slots, "s.");
	buf_printf(b, " AND s.lease = '%s'", token);
}

/*
 * The rows a scope needs: its slot 0 (the bucket, full, and the
 * throttle) and, in lease mode, its slots 1..slots.  INSERT IGNORE: the
 * rows that are there stay as they are.
 */
void
limit_sql_rows(struct buf *b, const struct limit_ctx *c,
    const struct limit_scope *s, int slots)
{
	buf_printf(b, "INSERT IGNORE INTO %s (queue, scope, slot, tokens, "
	    "tokens_at) VALUES ", c->table);
	for (int i = 0; i <= slots; i++) {
		buf_printf(b, "%s('%s', ", i ? ", " : "", c->q->name);
		sql_hex(b, s->bytes, s->len);
		buf_printf(b, ", %d, %d, " NOW6 ")", i, i == 0 ?
		    c->q->limit.burst : 0);
	}
}

/*
 * Make sure the limit table is there: a prepare looks (it runs nothing),
 * and a missing table is created, which needs the CREATE privilege; or
 * an administrator creates it (rowq.yaml(5), LIMIT TABLE).  Returns 0,
 * or -1 with the reason logged (*st says whether to try again later).
 */
int
limit_table_ensure(struct db *db, const struct limit_ctx *c,
    enum db_status *st)
{
	struct buf sql = { 0 };
	struct db_stmt *probe;
	int rc = 0;

	buf_printf(&sql, "SELECT queue, scope, slot, tokens, took, tokens_at, "
	    "lease, lease_until, throttled_until, reason FROM %s", c->table);
	probe = db_prepare(db, sql.data, st);
	db_stmt_free(probe);
	if (probe == NULL && db_no_such_table(db)) {
		buf_reset(&sql);
		buf_printf(&sql, LIMIT_DDL, c->table);
		*st = db_run(db, sql.data);
		if (*st == DB_OK)
			log_info("created the limit table %s", c->table);
	}
	if (*st != DB_OK) {
		log_error("%s: limit_table: %s: %s%s", c->q->limit.where,
		    c->table, db_error(db), db_denied(db) ? "; the database "
		    "user needs the CREATE privilege to create it, or an "
		    "administrator creates it (rowq.yaml(5), LIMIT TABLE); "
		    "every daemon needs SELECT, INSERT and UPDATE on it" : "");
		rc = -1;
	}
	buf_free(&sql);
	return rc;
}

/*
 * Throttle the scope for ms from now, with the handler's message: no
 * claim of any daemon takes a slot or a token of it before then.  A
 * throttle already running longer stays (with its reason).  In a
 * transaction of its own, committed.
 */
enum db_status
limit_throttle(struct db *db, const struct limit_ctx *c,
    const struct limit_scope *s, int64_t ms, const char *reason)
{
	const struct dialect *d = db_dialect(db);
	struct buf sql = { 0 };
	struct value v[2] = {
		{ .type = VALUE_INT, .i = ms * 1000 },
		{ .type = VALUE_TEXT, .s = reason, .len = strlen(reason) },
	};
	size_t rlen = strlen(reason);
	enum db_status st;
	struct db_stmt *stmt;

	if (rlen > PAUSE_REASON_MAX)
		v[1].len = PAUSE_REASON_MAX;
	buf_printf(&sql, "INSERT INTO %s (queue, scope, slot, tokens, "
	    "tokens_at, throttled_until, reason) VALUES ('%s', ", c->table,
	    c->q->name);
	sql_hex(&sql, s->bytes, s->len);
	buf_printf(&sql, ", 0, %d, " NOW6 ", " NOW6 " + INTERVAL ? "
	    "MICROSECOND, ?)", c->q->limit.burst);
	/* The row's own columns named with the table's name: beside an
	 * alias of the new row (dialect_upsert_alias), a bare name is
	 * ambiguous. */
	dialect_upsert_alias(d, &sql);
	buf_printf(&sql, " ON DUPLICATE KEY UPDATE reason = IF(%s."
	    "throttled_until IS NULL OR %s.throttled_until < ", c->table,
	    c->table);
	dialect_upsert_value(d, &sql, "throttled_until");
	buf_puts(&sql, ", ");
	dialect_upsert_value(d, &sql, "reason");
	buf_printf(&sql, ", %s.reason), throttled_until = GREATEST(COALESCE("
	    "%s.throttled_until, ", c->table, c->table);
	dialect_upsert_value(d, &sql, "throttled_until");
	buf_puts(&sql, "), ");
	dialect_upsert_value(d, &sql, "throttled_until");
	buf_puts(&sql, ")");
	stmt = db_prepare(db, sql.data, &st);
	if (stmt != NULL)
		st = db_stmt_exec(stmt, v, 2, NULL);
	db_stmt_free(stmt);
	if (st == DB_OK)
		st = db_commit(db);
	else
		(void)db_rollback(db);
	buf_free(&sql);
	return st;
}

/*
 * What `rowq status` and the metrics say of a queue's limit, read
 * without taking a slot, a token or a lock: the slots in use (the locks
 * IS_USED_LOCK finds taken, or the live leases), the tokens the bucket
 * holds now, and the throttle.  The session's database names the locks.
 * Returns 0, or -1 after a database error (logged).
 */
int
limit_status_read(struct db *db, const struct config *cfg,
    const struct queue *q, struct limit_status *out)
{
	const struct limit_policy *l = &q->limit;
	struct limit_ctx c;
	struct limit_scope qs;
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->in_use = out->next_start_ms = out->throttled_ms = -1;
	if (db_query(db, "SELECT DATABASE()", &rs, &cols, &ncols) != DB_OK ||
	    rs.nrows != 1)
		goto out;
	limit_ctx_init(&c, cfg, q, rs.rows[0].value[0]);
	limit_scope(&qs, &c, NULL, 0, false);
	rowset_clear(&rs, ncols);
	columns_free(cols, ncols);
	cols = NULL;
	buf_puts(&sql, "SELECT ");
	if (l->concurrency == 0)
		buf_puts(&sql, "NULL");
	else if (q->lease.enabled) {
		buf_printf(&sql, "(SELECT COUNT(*) FROM %s WHERE ", c.table);
		limit_sql_where(&sql, &c, &qs, l->concurrency);
		/* A slot handed over is nobody's yet. */
		buf_puts(&sql, " AND lease_until > " NOW6 " AND lease NOT LIKE "
		    "'h%')");
	} else {
		buf_puts(&sql, "(");
		limit_sql_slots(&sql, l->concurrency);
		buf_puts(&sql, "SELECT SUM(IS_USED_LOCK(");
		limit_sql_lock_of(&sql, &qs, "n + 1");
		buf_puts(&sql, ") IS NOT NULL) FROM rowq_n)");
	}
	buf_puts(&sql, ", (SELECT ");
	if (l->rate.count > 0) {
		buf_puts(&sql, "IF(");
		limit_sql_avail(&sql, &c, &l->rate, "0");
		buf_puts(&sql, " >= 1, 0, CEIL((1 - ");
		limit_sql_avail(&sql, &c, &l->rate, "0");
		buf_puts(&sql, ") / ");
		limit_sql_per_us(&sql, &l->rate);
		buf_puts(&sql, " / 1000))");
	} else
		buf_puts(&sql, "NULL");
	buf_printf(&sql, " FROM %s WHERE ", c.table);
	limit_sql_where(&sql, &c, &qs, 0);
	buf_printf(&sql, "), (SELECT TIMESTAMPDIFF(MICROSECOND, " NOW6 ", "
	    "throttled_until) DIV 1000 FROM %s WHERE ", c.table);
	limit_sql_where(&sql, &c, &qs, 0);
	buf_printf(&sql, "), (SELECT reason FROM %s WHERE ", c.table);
	limit_sql_where(&sql, &c, &qs, 0);
	buf_printf(&sql, "), (SELECT COUNT(*) FROM (SELECT 1 FROM %s WHERE "
	    "queue = '%s' AND scope <> '' AND slot = 0 AND throttled_until > "
	    NOW6 " LIMIT %d) AS k)", c.table, q->name, STATUS_CAP);
	if (db_query(db, sql.data, &rs, &cols, &ncols) != DB_OK ||
	    rs.nrows != 1 || ncols != 5) {
		if (db_no_such_table(db)) {
			/* No table yet: nothing taken, nothing throttled. */
			out->in_use = l->concurrency > 0 ? 0 : -1;
			rc = 0;
		} else
			log_error("%s: limit_table: %s: %s", l->where, c.table,
			    db_error(db));
		goto out;
	}
	char *const *v = rs.rows[0].value;
	out->in_use = v[0] ? atol(v[0]) : -1;
	out->next_start_ms = v[1] ? atoll(v[1]) : -1;
	out->throttled_ms = v[2] && atoll(v[2]) > 0 ? atoll(v[2]) : -1;
	snprintf(out->reason, sizeof(out->reason), "%s",
	    out->throttled_ms > 0 && v[3] ? v[3] : "");
	out->keys_throttled = v[4] ? atol(v[4]) : 0;
	rc = 0;
out:
	(void)db_rollback(db);
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	buf_free(&sql);
	return rc;
}
