/*
 * check_shape.h: what a queue's select says about the index it needs,
 * read from its SQL alone (check_shape.c), for check_plan.c and the unit
 * tests.
 */
#ifndef ROWQ_CHECK_SHAPE_H
#define ROWQ_CHECK_SHAPE_H

#include <stdbool.h>
#include <stddef.h>

#define PLAN_COLUMNS_MAX	32
#define PLAN_NAME_MAX		65	/* identifier, NUL included */

struct buf;
struct dialect;
struct keyed_claim;

/* What the select says about the index it needs. */
struct plan_shape {
	char		 schema[PLAN_NAME_MAX];	/* "" : the connection's */
	char		 table[PLAN_NAME_MAX];	/* "" : not a plain table */
	char		 alias[PLAN_NAME_MAX];	/* as EXPLAIN names it */
	bool		 join;
	bool		 has_where;
	bool		 where_known;		/* its equalities could be read */
	char		 eq[PLAN_COLUMNS_MAX][PLAN_NAME_MAX];
	size_t		 neq;
	bool		 has_order;		/* ORDER BY at its top level */
	bool		 order_known;		/* plain columns only */
	char		 order[PLAN_COLUMNS_MAX][PLAN_NAME_MAX];
	bool		 desc[PLAN_COLUMNS_MAX];
	size_t		 norder;
};

/* ---- check_shape.c: the select's shape, for check_plan.c ---- */

/*
 * Read the parts of the select that choose an index: its table, the
 * columns its WHERE fixes, its ORDER BY.  With a keyed claim, the table
 * is the claim's.  What cannot be read is left unknown (where_known,
 * order_known false), never guessed.
 */
void	plan_shape(const char *select, const struct dialect *,
	    unsigned long version, const struct keyed_claim *,
	    struct plan_shape *);
/* The shape in words ("table email, fixed status, order id"), for
 * `rowq -d check` and the unit tests. */
void	check_plan_describe(const char *select, const struct dialect *,
	    unsigned long version, struct buf *);

#endif
