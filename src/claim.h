/*
 * claim.h: the two claims rowq builds in place of a select's own, when
 * the select's own would lock rows it does not return (keyed.c) or a
 * scan from a cursor is faster (cursor.c); for the worker's claim
 * (worker_claim.c) and for check.c, which chooses between them.
 */
#ifndef ROWQ_CLAIM_H
#define ROWQ_CLAIM_H

#include "rowq.h"

/* ---- keyed.c: the claim that locks only the rows it claims ---- */

/* One list of keys serves this many claims at most, and this long. */
#define KEYED_LIST_CLAIMS	1000
#define KEYED_LIST_MS		1000
/* Keys in one list, at most. */
#define KEYED_LIST_MAX		10000

/*
 * A select whose own claim locks rows it does not claim (a row every
 * claim joins, a sort), taken apart: the table its done changes and the
 * parts the claim by key is built from, as written.
 */
struct keyed_claim {
	char	*reason;	/* NULL: it applies; else "the select ..." */
	char	*why;		/* keyed_confirm: what the own claim locks */
	char	*schema;	/* the claimed table's; NULL: the connection's */
	char	*table;		/* the table done changes, unquoted */
	char	*alias;		/* as the select names it, unquoted */
	char	*table_ref;	/* "t AS a", as written, without hints */
	char	*columns;	/* "SELECT ..." up to FROM */
	char	*from;		/* after FROM, up to WHERE or ORDER BY */
	char	*from_head;	/* of from, before the claimed table */
	char	*from_tail;	/* of from, after it and its hints */
	char	*target;	/* the claimed table, [schema.]table as written */
	size_t	 ref_start, ref_end;	/* its tokens, for keyed_derive */
	char	*where;		/* the WHERE's condition; NULL: none */
	char	*own_where;	/* its conjuncts of the claimed table alone */
	char	*order;		/* after ORDER BY; NULL: none */
	bool	 join;		/* FROM has more tables */
	bool	 derived;	/* keyed_derive took it apart */
	char	*pk;		/* keyed_confirm: the primary key column */
};

int	 keyed_derive(struct keyed_claim *, const char *select,
	    const char *done);
int	 keyed_confirm(struct db *, struct keyed_claim *, const char *select,
	    int batch);
int	 keyed_list_rows(int claim_rows, int workers);
void	 keyed_list_sql(struct buf *, const struct keyed_claim *, int limit);
void	 keyed_lock_sql(struct buf *, const struct keyed_claim *,
	    const char *const *keys, size_t n, int limit);
void	 keyed_free(struct keyed_claim *);

/* ---- cursor.c: the claim that scans the primary key from a cursor ---- */

#define CURSOR_KEY_MAX		24	/* 20 digits, a sign, NUL, to spare */
#define CURSOR_FALLBACK_CLAIMS	1000	/* fast claims between fallbacks */
#define CURSOR_FALLBACK_MS	1000	/* and at least this often */

/*
 * A select of the common shape (one table, ORDER BY its primary key
 * ascending) in the parts the cursor claims are built from.  Every text is
 * as the select writes it, comments dropped.
 */
struct cursor_claim {
	char	*reason;	/* NULL: the shape holds; else "the select ..." */
	char	*schema;	/* unquoted; NULL: the connection's database */
	char	*table;		/* unquoted */
	char	*key_column;	/* the ORDER BY column, unquoted */
	char	*key_ref;	/* as written: id, e.id, `id` */
	char	*columns;	/* "SELECT ..." up to FROM */
	char	*table_ref;	/* "email AS e", without index hints */
	char	*hints;		/* the select's own index hints, or "" */
	char	*where;		/* the WHERE's condition; NULL: none */
	size_t	 key_index;	/* cursor_confirm: the key among the columns */
	/*
	 * Conditions its user adds (limit.per_key's), or NULL; not owned:
	 * also to the claim and its first key, take to the claim alone.
	 */
	const char *also;
	const char *take;
};

enum cursor_from {
	CURSOR_AFTER,		/* key > the last one claimed: the fast claim */
	CURSOR_AT,		/* key >= the start's: the fallback claim */
};

/* Where one worker's claims are: see cursor_fallback_due, cursor_claimed. */
struct cursor_state {
	char	 last[CURSOR_KEY_MAX];	/* "": none; the next claim falls back */
	int	 claims;		/* fast claims since the last fallback */
	int64_t	 fallback_ms;		/* now_ms() of the last fallback */
};

int	 cursor_derive(struct cursor_claim *, const char *select);
int	 cursor_confirm(struct db *, struct cursor_claim *,
	    const struct column *, size_t ncols);
void	 cursor_claim_sql(struct buf *, const struct cursor_claim *,
	    enum cursor_from, const char *key, int limit, const char *more);
void	 cursor_start_sql(struct buf *, const struct cursor_claim *);
bool	 cursor_key_valid(const char *, size_t);
void	 cursor_free(struct cursor_claim *);
void	 cursor_rewind(struct cursor_state *);
bool	 cursor_fallback_due(const struct cursor_state *, int64_t now_ms);
int	 cursor_claimed(struct cursor_state *, enum cursor_from,
	    const char *key, size_t len, int64_t now_ms);

#endif /* ROWQ_CLAIM_H */
