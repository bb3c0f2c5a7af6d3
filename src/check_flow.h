/*
 * check_flow.h: a queue's statements as parts of a workflow, for check.c
 * and the unit tests: what sql_update.c reads of an UPDATE, and
 * check_flow.c's warnings from it.
 */
#ifndef ROWQ_CHECK_FLOW_H
#define ROWQ_CHECK_FLOW_H

#include <stddef.h>

struct buf;
struct db;
struct queue;

/* ---- sql_update.c: what an UPDATE writes, for check's warnings ---- */

/*
 * The tables an UPDATE writes (of several joined, those its SET targets
 * name; all when a target names none), each unquoted and once: 1 with
 * *tables (the caller frees them with sql_update_tables_free), 0 when
 * the statement is not an UPDATE.
 */
int	 sql_update_tables(const char *text, char ***tables, size_t *n);
void	 sql_update_tables_free(char **tables, size_t n);
/*
 * 1 when an assignment of the UPDATE's SET list reads a column that an
 * earlier one assigned (column: its name; assignment: the one reading
 * it), 0 when none does or the statement is not an UPDATE.
 */
int	 sql_update_reread(const char *text, struct buf *column,
	    struct buf *assignment);
/*
 * 1 when an assignment of the UPDATE's SET list reads the column it
 * assigns (pending = pending - 1: a counter), 0 when none does or the
 * statement is not an UPDATE.
 */
int	 sql_update_counts(const char *text);
/* The first table after a select's top-level FROM; NULL if none. */
char	*sql_select_table(const char *select);

/* ---- check_flow.c: workflow statements, for check.c ---- */

/* Warns of a SET list that rereads, and of a counter a list forgets. */
void	 check_flow(struct db *, const struct queue *);

#endif /* ROWQ_CHECK_FLOW_H */
