/*
 * worker_recent.c: the rows a worker finished lately, to notice one coming
 * straight back round (see claim_came_back in worker.c).  A fixed open-addressing
 * table keyed by a hash of the row's key: O(1) per row whatever the rate,
 * no allocation per row, and old entries simply expire.  Entries count
 * only once the transaction that finished them has committed.
 */
#include "worker.h"

#include <stdlib.h>
#include <string.h>

#define RECENT_SLOTS	4096		/* a power of two */
#define RECENT_PROBES	16
#define RECENT_PENDING	(BATCH_MAX + 1)

struct recent_entry {
	uint64_t	 key;		/* hash of the key; 0: empty */
	uint64_t	 row;		/* hash of all the row's values */
	const char	*where;		/* the statement that finished it */
	int64_t		 at_ms;
	bool		 committed;
};

struct recent {
	struct recent_entry	 slot[RECENT_SLOTS];
	unsigned		 pending[RECENT_PENDING];
	size_t			 npending;
};

uint64_t
recent_hash(const char *s, size_t n, uint64_t h)
{
	if (h == 0)
		h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h ? h : 1;
}

struct recent *
recent_new(void)
{
	return xcalloc(1, sizeof(struct recent));
}

void
recent_free(struct recent *r)
{
	free(r);
}

/* The slot of key, or NULL. */
static struct recent_entry *
recent_find(struct recent *r, uint64_t key)
{
	for (unsigned i = 0; i < RECENT_PROBES; i++) {
		struct recent_entry *e =
		    &r->slot[(key + i) & (RECENT_SLOTS - 1)];
		if (e->key == key)
			return e;
	}
	return NULL;
}

/*
 * Remember that this row was just finished (not yet committed).  Its old
 * entry, an empty one or the oldest of the probed slots takes it.
 */
void
recent_add(struct recent *r, uint64_t key, uint64_t row, const char *where,
    int64_t now)
{
	struct recent_entry *e = recent_find(r, key);

	if (e == NULL) {
		for (unsigned i = 0; i < RECENT_PROBES; i++) {
			struct recent_entry *c =
			    &r->slot[(key + i) & (RECENT_SLOTS - 1)];
			if (e == NULL || c->key == 0 || c->at_ms < e->at_ms)
				e = c;
			if (c->key == 0)
				break;
		}
	}
	*e = (struct recent_entry){ .key = key, .row = row, .where = where,
	    .at_ms = now };
	if (r->npending < RECENT_PENDING)
		r->pending[r->npending++] = (unsigned)(e - r->slot);
}

/*
 * The statement that finished this very row, unchanged, at most
 * window_ms ago in a committed transaction; NULL if there is none.
 */
const char *
recent_match(struct recent *r, uint64_t key, uint64_t row, int64_t now,
    int64_t window_ms)
{
	struct recent_entry *e = recent_find(r, key);

	if (e == NULL || !e->committed || e->row != row ||
	    now - e->at_ms > window_ms)
		return NULL;
	return e->where;
}

void
recent_forget(struct recent *r, uint64_t key)
{
	struct recent_entry *e = recent_find(r, key);

	if (e != NULL)
		memset(e, 0, sizeof(*e));
}

/* The transaction committed: what it finished counts now. */
void
recent_commit(struct recent *r)
{
	for (size_t i = 0; i < r->npending; i++)
		r->slot[r->pending[i]].committed = true;
	r->npending = 0;
}

/* The transaction rolled back: it finished nothing. */
void
recent_rollback(struct recent *r)
{
	for (size_t i = 0; i < r->npending; i++)
		if (!r->slot[r->pending[i]].committed)
			memset(&r->slot[r->pending[i]], 0, sizeof(r->slot[0]));
	r->npending = 0;
}

/* A hash of a key's bytes: binary keys may hold zero bytes. */
uint64_t
recent_key_hash(const char *key, size_t len)
{
	return recent_hash(key, len, 0);
}

/*
 * A hash of all a row's values, NULLs and lengths included: each value
 * behind a mark, 0 for NULL or its length plus one, hashed as bytes (the
 * hashes never leave the process, and this runs for rows finished).
 */
uint64_t
recent_row_hash(size_t ncols, const struct row *row)
{
	uint64_t h = 0;

	for (size_t c = 0; c < ncols; c++) {
		uint64_t mark = row->value[c] ? (uint64_t)row->len[c] + 1 : 0;
		h = recent_hash((const char *)&mark, sizeof(mark), h);
		if (row->value[c] != NULL)
			h = recent_hash(row->value[c], row->len[c], h);
	}
	return h;
}

/*
 * The first of rows that this worker finished, unchanged, at most
 * window_ms ago: its index, and the statement that finished it in *where;
 * -1 when none came back.
 */
int
recent_returned(struct recent *r, size_t ncols,
    int key_index, const struct rowset *rows, int64_t now, int64_t window_ms,
    const char **where)
{
	for (size_t i = 0; r != NULL && i < rows->nrows; i++) {
		const struct row *row = &rows->rows[i];
		const struct recent_entry *e;
		uint64_t key;
		if (row->value[key_index] == NULL)
			continue;
		key = recent_key_hash(row->value[key_index],
		    row->len[key_index]);
		/* The whole row is hashed only for a key finished lately. */
		if ((e = recent_find(r, key)) == NULL || !e->committed)
			continue;
		*where = recent_match(r, key, recent_row_hash(ncols, row),
		    now, window_ms);
		if (*where != NULL)
			return (int)i;
	}
	return -1;
}
