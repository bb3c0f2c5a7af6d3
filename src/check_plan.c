/*
 * check_plan.c: the claim's plan, for check.c.
 *
 * A claim should read the first rows its select returns and nothing else:
 * every row it reads is locked (FOR UPDATE) until the commit, so a plan
 * that reads rows it will not return makes each claim slower as finished
 * rows pile up, and a plan that sorts (filesort) reads and locks every
 * matching row before returning the first, so that SKIP LOCKED hands the
 * whole queue to one worker while the others find nothing.
 *
 * Two sources, because neither is enough alone.  The select itself, read
 * with sql.c's tokenizer as the server reads it (an executable comment's
 * contents are code), says which index would serve it: the columns the
 * WHERE fixes (col = constant, col IS NULL), then the ORDER BY columns.
 * That judgement holds whatever the table holds today.  EXPLAIN says what
 * the optimizer does now, which depends on the table's statistics: on a
 * small table a full scan is the right choice and says nothing, so a plan
 * that ignores an index that would serve is only reported on a table of
 * PLAN_SMALL_ROWS rows or more.
 *
 * Findings are warnings: `check` still exits 0, since the configuration
 * works, only slowly.  Every one names the queue's select.
 */
#include "rowq.h"
#include "db.h"
#include "dialect.h"
#include "check_shape.h"
#include "claim.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define PLAN_SMALL_ROWS		1000
#define PLAN_INDEXES_MAX	64

struct plan_index {
	char		 name[PLAN_NAME_MAX];
	char		 cols[PLAN_COLUMNS_MAX][PLAN_NAME_MAX];
	bool		 desc[PLAN_COLUMNS_MAX];
	size_t		 ncols;		/* usable for order: no prefix parts */
	size_t		 nshown;	/* as declared, for messages */
};

static bool
plan_in_eq(const struct plan_shape *sh, const char *col)
{
	for (size_t i = 0; i < sh->neq; i++)
		if (strcasecmp(sh->eq[i], col) == 0)
			return true;
	return false;
}

/* How far an index serves the select: 2 both, 1 the WHERE only, 0 not. */
static int
plan_serves(const struct plan_shape *sh, const struct plan_index *ix)
{
	size_t pos, k;
	int dir = -1;

	if (ix->ncols < sh->neq)
		return 0;
	for (pos = 0; pos < sh->neq; pos++)
		if (!plan_in_eq(sh, ix->cols[pos]))
			return 0;
	for (k = 0; k < sh->norder; k++) {
		if (plan_in_eq(sh, sh->order[k]))
			continue;
		if (pos >= ix->ncols ||
		    strcasecmp(ix->cols[pos], sh->order[k]) != 0)
			return 1;
		/* Mixed directions need an index with the same mix. */
		int d = sh->desc[k] != ix->desc[pos];
		if (dir != -1 && d != dir)
			return 1;
		dir = d;
		pos++;
	}
	return 2;
}

/*
 * The table's B-tree indexes.  InnoDB ends every secondary index with the
 * primary key's columns, so INDEX (status) serves ORDER BY id too.
 */
static size_t
plan_indexes(struct db *db, const struct plan_shape *sh, struct plan_index *ix,
    size_t max, long long *table_rows, char *engine, size_t enginelen)
{
	static const char stats[] =
	    "SELECT INDEX_NAME, COLUMN_NAME, SUB_PART, COLLATION, INDEX_TYPE "
	    "FROM information_schema.STATISTICS "
	    "WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? "
	    "ORDER BY INDEX_NAME <> 'PRIMARY', INDEX_NAME, SEQ_IN_INDEX";
	static const char tables[] =
	    "SELECT TABLE_ROWS, ENGINE FROM information_schema.TABLES "
	    "WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?";
	struct value v[2] = {
		{ .type = sh->schema[0] ? VALUE_TEXT : VALUE_NULL,
		  .s = sh->schema, .len = strlen(sh->schema) },
		{ .type = VALUE_TEXT, .s = sh->table, .len = strlen(sh->table) },
	};
	struct rowset rs = { 0 };
	struct db_stmt *s;
	enum db_status st;
	size_t nix = 0;

	*table_rows = -1;
	engine[0] = '\0';
	if ((s = db_prepare(db, tables, &st)) != NULL) {
		if (db_stmt_fetch_all(s, v, 2, &rs) == DB_OK && rs.nrows == 1) {
			if (rs.rows[0].value[0])
				*table_rows = strtoll(rs.rows[0].value[0], NULL, 10);
			if (rs.rows[0].value[1])
				snprintf(engine, enginelen, "%s", rs.rows[0].value[1]);
		}
		rowset_clear(&rs, 2);
		db_stmt_free(s);
	}
	if ((s = db_prepare(db, stats, &st)) == NULL)
		return 0;
	if (db_stmt_fetch_all(s, v, 2, &rs) == DB_OK) {
		struct plan_index *cur = NULL;
		bool prefix = false;
		for (size_t r = 0; r < rs.nrows; r++) {
			char **val = rs.rows[r].value;
			if (val[0] == NULL || val[1] == NULL ||
			    (val[4] && strcmp(val[4], "BTREE") != 0))
				continue;
			if (cur == NULL || strcmp(cur->name, val[0]) != 0) {
				if (nix == max)
					break;
				cur = &ix[nix++];
				memset(cur, 0, sizeof(*cur));
				snprintf(cur->name, sizeof(cur->name), "%s", val[0]);
				prefix = false;
			}
			if (cur->nshown == PLAN_COLUMNS_MAX)
				continue;
			snprintf(cur->cols[cur->nshown], PLAN_NAME_MAX, "%s", val[1]);
			cur->desc[cur->nshown] = val[3] && strcmp(val[3], "D") == 0;
			cur->nshown++;
			/* A prefix of a column cannot give its order. */
			if (!prefix && val[2] == NULL)
				cur->ncols = cur->nshown;
			else
				prefix = true;
		}
		/* Secondary indexes end with the primary key. */
		if (nix > 0 && strcmp(ix[0].name, "PRIMARY") == 0 &&
		    strcasecmp(engine, "InnoDB") == 0) {
			for (size_t k = 1; k < nix; k++) {
				if (ix[k].ncols != ix[k].nshown)
					continue;
				for (size_t p = 0; p < ix[0].nshown; p++) {
					bool have = false;
					for (size_t c = 0; c < ix[k].ncols; c++)
						if (strcasecmp(ix[k].cols[c],
						    ix[0].cols[p]) == 0)
							have = true;
					if (!have && ix[k].ncols < PLAN_COLUMNS_MAX) {
						snprintf(ix[k].cols[ix[k].ncols],
						    PLAN_NAME_MAX, "%s", ix[0].cols[p]);
						ix[k].desc[ix[k].ncols++] = false;
					}
				}
			}
		}
	}
	rowset_free(&rs, 5);
	db_stmt_free(s);
	return nix;
}

/*
 * "email" or "email AS e": the table as the select names it, to write
 * FROM ... FORCE INDEX (...) with, which takes the table's name, not the
 * alias alone.
 */
static const char *
plan_from(const struct plan_shape *sh, struct buf *b)
{
	buf_reset(b);
	sql_ident(b, sh->table);
	if (strcmp(sh->alias, sh->table) != 0) {
		buf_puts(b, " AS ");
		sql_ident(b, sh->alias);
	}
	return b->data;
}

/* "FORCE INDEX (name)", quoted as SQL needs it. */
static const char *
plan_force(const char *index, struct buf *b)
{
	buf_reset(b);
	buf_puts(b, "FORCE INDEX (");
	sql_ident(b, index);
	buf_putc(b, ')');
	return b->data;
}

/* "ALTER TABLE t ADD INDEX name (a, b)", to paste. */
static void
plan_alter(struct buf *b, const struct plan_shape *sh, const char *name,
    const char *cols)
{
	buf_puts(b, "ALTER TABLE ");
	sql_ident(b, sh->table);
	buf_puts(b, " ADD INDEX ");
	sql_ident(b, name);
	buf_printf(b, " %s", cols);
}

/* "(a, b)" for an index as declared. */
static void
plan_index_cols(struct buf *b, const struct plan_index *ix)
{
	buf_putc(b, '(');
	for (size_t i = 0; i < ix->nshown; i++)
		buf_printf(b, "%s%s%s", i ? ", " : "", ix->cols[i],
		    ix->desc[i] ? " DESC" : "");
	buf_putc(b, ')');
}

/*
 * The index that would serve: the WHERE's fixed columns, then ORDER BY's,
 * and a name for it made of its columns.
 */
static void
plan_ideal(struct buf *b, struct buf *name, const struct plan_shape *sh)
{
	bool mixed = false;
	size_t n = 0;

	for (size_t k = 1; k < sh->norder; k++)
		if (sh->desc[k] != sh->desc[0])
			mixed = true;
	buf_putc(b, '(');
	for (size_t i = 0; i < sh->neq; i++) {
		buf_printf(name, "%s%s", n ? "_" : "", sh->eq[i]);
		buf_puts(b, n++ ? ", " : "");
		sql_ident(b, sh->eq[i]);
	}
	for (size_t k = 0; k < sh->norder; k++) {
		if (plan_in_eq(sh, sh->order[k]))
			continue;
		buf_printf(name, "%s%s", n ? "_" : "", sh->order[k]);
		buf_puts(b, n++ ? ", " : "");
		sql_ident(b, sh->order[k]);
		buf_puts(b, mixed && sh->desc[k] ? " DESC" : "");
	}
	buf_putc(b, ')');
	if (name->len > 64)
		name->data[name->len = 64] = '\0';
}

/* Whether the ORDER BY names every column of the index: no ties left. */
static bool
plan_orders_by_all(const struct plan_shape *sh, const struct plan_index *ix)
{
	for (size_t c = 0; c < ix->nshown; c++) {
		bool have = false;
		for (size_t k = 0; k < sh->norder; k++)
			if (strcasecmp(sh->order[k], ix->cols[c]) == 0)
				have = true;
		if (!have)
			return false;
	}
	return ix->nshown > 0;
}

/*
 * A claim in descending order.  ORDER BY priority DESC, id mixes
 * directions, which only an index with the same mix serves, and MariaDB
 * before 10.8 (MySQL before 8.0) accepts DESC in an index definition but
 * builds the index ascending all the same: there the claim sorts, locking
 * every waiting row.  ORDER BY priority DESC alone reads an index
 * backwards, which takes the newest of equal rows first; there are no
 * equal rows when the order ends with the primary key (ORDER BY id DESC),
 * and nothing to say.  An ascending urgency column (most urgent lowest)
 * needs neither, so the warning names it whatever this server does: the
 * same configuration may meet an older one.
 */
static void
plan_warn_desc(const struct queue *q, const struct plan_shape *sh,
    const struct plan_index *primary)
{
	struct plan_shape *asc;
	struct buf written = { 0 }, way = { 0 }, ideal = { 0 }, same_mix = { 0 };
	struct buf name = { 0 };	/* plan_ideal's; not shown */
	bool any_desc = false, any_asc = false;
	size_t k, n = 0;

	for (k = 0; k < sh->norder; k++) {
		if (plan_in_eq(sh, sh->order[k]))
			continue;
		if (sh->desc[k])
			any_desc = true;
		else
			any_asc = true;
	}
	if (!sh->order_known || !any_desc)
		return;
	if (!any_asc && primary != NULL && plan_orders_by_all(sh, primary))
		return;

	/* The way out: the first DESC column becomes urgency, ascending. */
	asc = xcalloc(1, sizeof(*asc));
	*asc = *sh;
	asc->norder = 0;
	for (k = 0; k < sh->norder; k++) {
		buf_printf(&written, "%s%s%s", k ? ", " : "", sh->order[k],
		    sh->desc[k] ? " DESC" : "");
		bool first_desc = sh->desc[k] && !plan_in_eq(sh, sh->order[k]) &&
		    n++ == 0;
		snprintf(asc->order[asc->norder], PLAN_NAME_MAX, "%s",
		    first_desc ? "urgency" : sh->order[k]);
		asc->desc[asc->norder++] = false;
		buf_printf(&way, "%s%s", k ? ", " : "",
		    asc->order[asc->norder - 1]);
	}
	plan_ideal(&ideal, &name, asc);
	if (any_asc) {
		plan_ideal(&same_mix, &name, sh);
		log_warnx("%s: ORDER BY %s mixes directions: only an index "
		    "with the same mix, %s, serves it, and MariaDB before 10.8 "
		    "(MySQL before 8.0) builds such an index ascending all the "
		    "same, so that there the claim sorts and locks every "
		    "waiting row; keep an ascending urgency column instead "
		    "(most urgent lowest) and write ORDER BY %s with INDEX %s, "
		    "which every server serves", q->select.where, written.data,
		    same_mix.data, way.data, ideal.data);
	} else {
		log_warnx("%s: ORDER BY %s reads its index backwards, which "
		    "takes the newest of equal rows first; oldest first needs a "
		    "descending index, which MariaDB before 10.8 (MySQL before "
		    "8.0) ignores: keep an ascending urgency column instead "
		    "(most urgent lowest) and write ORDER BY %s with INDEX %s, "
		    "which every server serves, oldest first", q->select.where,
		    written.data, way.data, ideal.data);
	}
	free(asc);
	buf_free(&written);
	buf_free(&way);
	buf_free(&ideal);
	buf_free(&name);
	buf_free(&same_mix);
}

/* One table of the plan, as EXPLAIN's traditional format lists it. */
struct plan_row {
	const char	*table, *type, *key, *rows, *extra;
};

static const char *
plan_field(const struct row *r, const struct column *cols, size_t ncols,
    const char *name)
{
	for (size_t i = 0; i < ncols; i++)
		if (strcasecmp(cols[i].name, name) == 0)
			return r->value[i] ? r->value[i] : "";
	return "";
}

static bool
plan_extra(const struct plan_row *p, const char *what)
{
	return strstr(p->extra, what) != NULL;
}

/*
 * What is wrong with one table of the plan, appended to why; returns
 * whether anything is.  The queue's own table is `main`.
 */
static bool
plan_judge(const struct plan_row *p, bool main, struct buf *why)
{
	size_t before = why->len;
	const char *sep = why->len ? "; " : "";

	if (strcmp(p->type, "ALL") == 0)
		buf_printf(why, "%sa full scan of %s (EXPLAIN: type ALL, "
		    "~%s rows)%s", sep, p->table, p->rows,
		    main ? ", reading and locking rows it will not return" :
		    " for every row claimed");
	else if (main && strcmp(p->type, "index") == 0 &&
	    plan_extra(p, "Using where"))
		buf_printf(why, "%sit scans index %s of %s, reading and "
		    "locking every row the WHERE rejects (the finished rows in "
		    "front of the first waiting one), so each claim gets slower "
		    "as they pile up (EXPLAIN: type index, key %s, Using where)",
		    sep, p->key, p->table, p->key);
	if (plan_extra(p, "Using filesort") || plan_extra(p, "Using temporary"))
		buf_printf(why, "%s%s: every matching row is read and locked "
		    "before the first is returned, so SKIP LOCKED hands the "
		    "whole queue to one worker while the others find nothing "
		    "(EXPLAIN: %s)", why->len > before ? "; " : sep,
		    plan_extra(p, "Using filesort") ? "a sort" :
		    "a temporary table", p->extra);
	return why->len > before;
}

/* How long the claim by key's list takes now, in ms; -1 if it failed. */
static double
plan_list_ms(struct db *db, const struct queue *q,
    const struct keyed_claim *keyed)
{
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };
	struct timespec t0, t1;
	enum db_status st;

	keyed_list_sql(&sql, keyed, keyed_list_rows(queue_claim_rows(q),
	    q->workers));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	st = db_query(db, sql.data, &rs, &cols, &ncols);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	buf_free(&sql);
	return st != DB_OK ? -1 : (double)(t1.tv_sec - t0.tv_sec) * 1000 +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
}

/*
 * The order that an existing index serves with the WHERE, once leading
 * ORDER BY columns go (a tie-breaker kept, ORDER BY priority, date, id
 * becoming ORDER BY date, id), in SQL to paste; else what would serve.
 * A select of one table may order by its primary key instead, which rowq
 * claims from a cursor, the claim that reads least.
 */
static void
plan_rewrite(struct buf *b, const struct plan_shape *sh,
    const struct plan_index *ix, size_t nix, const char *pk)
{
	struct plan_shape *alt = xcalloc(1, sizeof(*alt));
	const char *qual = sh->join ? sh->alias : "";
	struct buf name = { 0 }, ideal = { 0 };

	if (!sh->join && pk != NULL) {
		buf_puts(b, "write ORDER BY ");
		sql_ident(b, pk);
		buf_puts(b, ", which rowq claims from a cursor, reading only "
		    "the rows it returns (rows in the order they were added); "
		    "or ");
	}

	for (size_t s = 1; sh->order_known && s < sh->norder; s++) {
		*alt = *sh;
		alt->norder = sh->norder - s;
		memmove(alt->order, sh->order + s, alt->norder *
		    sizeof(alt->order[0]));
		memmove(alt->desc, sh->desc + s, alt->norder *
		    sizeof(alt->desc[0]));
		for (size_t i = 0; i < nix; i++) {
			if (plan_serves(alt, &ix[i]) != 2)
				continue;
			buf_puts(b, b->len ? "ORDER BY " : "write ORDER BY ");
			for (size_t k = 0; k < alt->norder; k++) {
				buf_puts(b, k ? ", " : "");
				if (qual[0] != '\0') {
					sql_ident(b, qual);
					buf_putc(b, '.');
				}
				sql_ident(b, alt->order[k]);
				buf_puts(b, alt->desc[k] ? " DESC" : "");
			}
			buf_printf(b, ", which index %s ", ix[i].name);
			plan_index_cols(b, &ix[i]);
			buf_puts(b, " serves: the list then reads only the rows "
			    "it returns (without ");
			for (size_t k = 0; k < s; k++)
				buf_printf(b, "%s%s", k ? ", " : "", sh->order[k]);
			buf_puts(b, " in the order)");
			free(alt);
			return;
		}
	}
	free(alt);
	plan_ideal(&ideal, &name, sh);
	buf_printf(b, "give %s the index that serves the WHERE and the ORDER "
	    "BY: ", sh->table);
	plan_alter(b, sh, name.data, ideal.data);
	buf_free(&name);
	buf_free(&ideal);
}

/*
 * Claimed by key (keyed.c): the lock reads only what it claims, but the
 * list it locks from is the select, read without locking, and a sort
 * there reads every row the select matches, once a second and every
 * KEYED_LIST_CLAIMS claims of each worker: measured, and the order that
 * an index serves named.
 */
static void
plan_by_key(struct db *db, const struct queue *q, const struct plan_shape *sh,
    const struct plan_index *ix, size_t nix, const struct keyed_claim *keyed,
    const struct plan_row *main, bool verbose)
{
	struct buf fix = { 0 };
	double ms;

	if (!plan_extra(main, "Using filesort") &&
	    !plan_extra(main, "Using temporary")) {
		if (verbose)
			log_info("%s: claim plan: by key, its list read "
			    "through %s%s%s", q->select.where, main->type,
			    main->key[0] ? " on index " : "", main->key);
		return;
	}
	ms = plan_list_ms(db, q, keyed);
	plan_rewrite(&fix, sh, ix, nix, keyed->pk);
	log_warnx("%s: the claim by key locks only the rows it claims, but its "
	    "list of keys sorts every row the select matches (~%s rows of %s; "
	    "EXPLAIN: %s), %.1f ms measured now, and each worker reads it once "
	    "a second and every %d claims: with %d workers, %.0f ms of the "
	    "server's time a second, growing with the queue, and rows that "
	    "come wait for the next list; %s", q->select.where, main->rows,
	    sh->table, main->extra, ms, KEYED_LIST_CLAIMS, q->workers,
	    ms * q->workers, fix.data);
	buf_free(&fix);
}

/*
 * EXPLAIN the claim and warn about a plan that reads rows it will not
 * return.  Only warns: returns 0, the number of problems found.  With
 * verbose, a clean plan is logged too (at info level).
 */
int
check_plan(struct db *db, const struct queue *q, bool verbose,
    const struct keyed_claim *keyed, bool cursor)
{
	/*
	 * Claimed from a cursor, the select's own plan is only the fallback's
	 * first key, read without locking at most once a second: a note.
	 */
	void (*say)(const char *, ...) = cursor ? log_info : log_warnx;
	struct plan_index *ix;
	struct plan_shape sh;
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0, nix = 0;
	struct buf sql = { 0 }, why = { 0 }, fix = { 0 }, ideal = { 0 };
	struct buf name = { 0 };
	struct plan_row mainrow = { "", "", "", "", "" };
	const struct plan_index *serving = NULL, *where_only = NULL;
	long long table_rows = -1;
	struct buf from = { 0 }, force = { 0 };
	char engine[32] = "";
	char *claim;
	bool bad = false, analysable;
	enum db_status st;

	claim = sql_claim(q->select.positional, queue_claim_rows(q));
	buf_printf(&sql, "%s%s", db_dialect(db)->explain, claim);
	free(claim);
	st = db_query(db, sql.data, &rs, &cols, &ncols);
	buf_free(&sql);
	if (st != DB_OK) {
		/* The claim itself was prepared: this is about privileges
		 * (EXPLAIN of a view needs SHOW VIEW), not a broken queue. */
		log_warnx("%s: cannot EXPLAIN the claim, its plan is not "
		    "checked: %s", q->select.where, db_error(db));
		rowset_free(&rs, ncols);
		columns_free(cols, ncols);
		return 0;
	}

	plan_shape(q->select.positional, db_dialect(db), db_server_version(db),
	    keyed, &sh);
	ix = xcalloc(PLAN_INDEXES_MAX, sizeof(*ix));	/* 140 KiB: not the stack */
	if (sh.table[0] != '\0')
		nix = plan_indexes(db, &sh, ix, PLAN_INDEXES_MAX, &table_rows,
		    engine, sizeof(engine));
	plan_warn_desc(q, &sh, nix > 0 && strcmp(ix[0].name, "PRIMARY") == 0 ?
	    &ix[0] : NULL);
	if (sh.table[0] != '\0' && !sh.has_order)
		log_warnx("%s: the select has no ORDER BY: rows are claimed in "
		    "no defined order (whichever the plan meets first, which "
		    "may change with the table), so a row can wait behind rows "
		    "that came after it, on a busy queue for ever; order by the "
		    "key or by the time a row waits for (ORDER BY id), and give "
		    "it the index that serves the WHERE and the ORDER BY",
		    q->select.where);
	/* The engine is known when the table is: a plain table, found. */
	analysable = engine[0] != '\0' && sh.where_known &&
	    sh.order_known && (sh.neq > 0 || sh.norder > 0);
	for (size_t i = 0; analysable && i < nix; i++) {
		int s = plan_serves(&sh, &ix[i]);
		if (s == 2 && serving == NULL)
			serving = &ix[i];
		if (s >= 1 && where_only == NULL && sh.neq > 0)
			where_only = &ix[i];
	}

	for (size_t r = 0; r < rs.nrows; r++) {
		struct plan_row p = {
			plan_field(&rs.rows[r], cols, ncols, "table"),
			plan_field(&rs.rows[r], cols, ncols, "type"),
			plan_field(&rs.rows[r], cols, ncols, "key"),
			plan_field(&rs.rows[r], cols, ncols, "rows"),
			plan_field(&rs.rows[r], cols, ncols, "Extra"),
		};
		bool main = (r == 0 && keyed == NULL) ||
		    strcmp(p.table, sh.alias) == 0;
		if (main && mainrow.table[0] == '\0')
			mainrow = p;
		bad |= plan_judge(&p, main, &why);
	}
	/* The plan uses the index that serves, yet reads what it rejects. */
	bool uses_serving = serving != NULL &&
	    strcmp(mainrow.key, serving->name) == 0;

	if (strcasecmp(engine, "InnoDB") != 0 && engine[0] != '\0')
		log_warnx("%s: table %s is %s: FOR UPDATE SKIP LOCKED needs "
		    "InnoDB, whose row locks let workers share the queue",
		    q->select.where, sh.table, engine);

	if (cursor && (bad || (analysable && serving == NULL)))
		log_info("%s: the claim is from a cursor; what follows is the "
		    "plan of its fallback's first key, read without locking, at "
		    "most once a second", q->select.where);
	if (keyed != NULL)
		plan_by_key(db, q, &sh, ix, nix, keyed, &mainrow, verbose);
	else if (analysable && serving == NULL) {
		plan_ideal(&ideal, &name, &sh);
		buf_printf(&fix, "no index of %s serves both the WHERE and the "
		    "ORDER BY", sh.table);
		if (where_only != NULL) {
			buf_printf(&fix, " (%s ", where_only->name);
			plan_index_cols(&fix, where_only);
			buf_printf(&fix, " has the WHERE's columns but not the "
			    "ORDER BY's right after them)");
		}
		buf_puts(&fix, ": ");
		plan_alter(&fix, &sh, name.data, ideal.data);
		buf_printf(&fix, "; if EXPLAIN still shows a scan or a sort once "
		    "the table is large and partly drained, write FROM %s %s in "
		    "the select: the optimizer's statistics assume the waiting "
		    "rows are spread evenly, but in a queue they are bunched at "
		    "the end", plan_from(&sh, &from), plan_force(name.data,
		    &force));
		if (bad)
			say("%s: the claim reads rows it will not return: "
			    "%s", q->select.where, why.data);
		say("%s: %s", q->select.where, fix.data);
	} else if (bad && analysable && !uses_serving) {
		if (table_rows >= 0 && table_rows < PLAN_SMALL_ROWS) {
			/* A small table is scanned whatever the indexes. */
			log_debug("%s: claim plan ignored on a table of ~%lld "
			    "rows: %s", q->select.where, table_rows, why.data);
		} else {
			say("%s: the claim reads rows it will not return: "
			    "%s", q->select.where, why.data);
			say("%s: index %s serves the WHERE and the ORDER BY "
			    "but the optimizer does not use it (its statistics "
			    "assume the waiting rows are spread evenly, but in a "
			    "queue they are bunched): write FROM %s %s in the "
			    "select", q->select.where, serving->name,
			    plan_from(&sh, &from), plan_force(serving->name,
			    &force));
		}
	} else if (bad && uses_serving && table_rows >= 0 &&
	    table_rows < PLAN_SMALL_ROWS) {
		/* The index that serves, scanned whole on a small table (MySQL
		 * does so on an empty one): the statistics' choice. */
		if (verbose)
			log_info("%s: claim plan: %s on index %s, on a table of "
			    "~%lld rows, whose plan is not that of a larger one: "
			    "check again once the table has rows",
			    q->select.where, mainrow.type, mainrow.key, table_rows);
	} else if (bad && uses_serving && sh.join) {
		say("%s: the claim reads rows it will not return: %s",
		    q->select.where, why.data);
		say("%s: index %s serves %s, but the join adds work to "
		    "every claim: give each joined table an index on the "
		    "columns it is joined on", q->select.where, serving->name,
		    sh.table);
	} else if (bad) {
		say("%s: the claim reads rows it will not return: %s",
		    q->select.where, why.data);
		say("%s: a claim should read only the rows it returns: "
		    "the WHERE needs columns compared with constants (such as "
		    "status = 'waiting' or done_at IS NULL) that finished rows "
		    "no longer match, and an index that starts with them and "
		    "goes on with the ORDER BY columns, so that the index "
		    "holds the waiting rows in the order they are claimed",
		    q->select.where);
	} else if (verbose) {
		log_info("%s: claim plan: %s%s%s, reads only the rows it returns",
		    q->select.where, mainrow.type,
		    mainrow.key[0] ? " on index " : "", mainrow.key);
	}
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	buf_free(&why);
	buf_free(&fix);
	buf_free(&ideal);
	buf_free(&name);
	buf_free(&from);
	buf_free(&force);
	free(ix);
	return 0;
}
