/*
 * worker_row.c: a claimed row's own questions, answered in the layout it
 * was read with (the turn's columns, worker_turn.c): its key, as bytes
 * and as text, its try, its size, its JSON form and its trace context.
 * The worker (worker.c) asks them when it hands the row on, the outcome
 * (worker_finish.c) when it binds the row's statement, so that a row's
 * trip goes one way: claim, row, handler, outcome, commit.
 */
#include "worker.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A row's key as bytes: binary keys may hold zero bytes. */
const char *
row_key(const struct worker *w, const struct row *row, size_t *len)
{
	int k = w->turn.key_index;

	*len = row->value[k] ? row->len[k] : 0;
	return row->value[k];
}

/*
 * The key as text for ROWQ_KEY and the logs: a binary key (BINARY(16),
 * VARBINARY) in lowercase hex, which says every byte and no other key's;
 * other keys as they are.
 */
void
row_key_text(const struct worker *w, const struct row *row, struct buf *b)
{
	size_t len;
	const char *key = row_key(w, row, &len);

	buf_reset(b);
	buf_append(b, "", 0);		/* never NULL */
	if (key == NULL) {
		buf_puts(b, "NULL");
		return;
	}
	if (w->turn.cols[w->turn.key_index].kind != COLUMN_BINARY) {
		buf_append(b, key, len);
		return;
	}
	buf_put_hex(b, key, len);
}

/*
 * This try's number, from 1: the attempts column plus one.  Capped at
 * INT_MAX, which no max_attempts exceeds, so a row at the cap fails
 * rather than retrying for ever.
 */
int
row_attempt(const struct worker *w, const struct row *row)
{
	int i = w->turn.attempts_index;

	if (i < 0 || row->value[i] == NULL)
		return 1;
	long long n = strtoll(row->value[i], NULL, 10);
	if (n < 0)
		n = 0;
	return n >= INT_MAX - 1 ? INT_MAX : (int)n + 1;
}

/*
 * The row's max_attempts: the queue's (0: no limit), or, with
 * max_attempts: column NAME, the row's own value, which comes from the
 * table and is bounded here: above max_attempts_ceiling it is the
 * ceiling, so that no row is retried for ever; NULL, or below 1, is 1
 * (the first failed try is the last: a row that says nothing has no try
 * to spare).  Either is said in the log.
 */
int
row_max_attempts(const struct worker *w, const struct row *row)
{
	const struct retry_policy *r = &w->q->retry;
	int i = w->turn.max_attempts_index;
	const char *v;
	long long n;
	char *end;

	if (r->max_attempts_column == NULL || i < 0)
		return r->max_attempts;
	v = row->value[i];
	n = v != NULL ? strtoll(v, &end, 10) : 0;
	if (v == NULL || end == v || *end != '\0' || n < 1) {
		log_warnx("%s: %s is %s: 1 try", r->max_attempts_where,
		    r->max_attempts_column, v == NULL ? "NULL" : v);
		return 1;
	}
	if (n > r->max_attempts_ceiling) {
		log_warnx("%s: %s is %s, above max_attempts_ceiling: %d "
		    "tries", r->max_attempts_where, r->max_attempts_column, v,
		    r->max_attempts_ceiling);
		return r->max_attempts_ceiling;
	}
	return (int)n;
}

/* The bytes of all its values, for ROW_BYTES_MAX. */
size_t
row_bytes(const struct worker *w, const struct row *row)
{
	size_t total = 0;

	for (size_t c = 0; c < w->turn.ncols; c++)
		total += row->value[c] ? row->len[c] : 0;
	return total;
}

/* The row as one line of JSON, as its handler reads it. */
void
row_json(const struct worker *w, const struct row *row, struct buf *b)
{
	buf_reset(b);
	json_row(b, w->turn.cols, w->turn.ncols, row);
	buf_putc(b, '\n');
}

/*
 * The row's group_by: value into st, for status --by (status_group.c):
 * cut to its buffer, which the status socket compares the same way.
 */
void
row_group_note(const struct worker *w, const struct row *row,
    struct worker_stats *st)
{
	int i = w->turn.group_index;
	size_t len;

	if (i < 0)
		return;
	st->group_null = row->value[i] == NULL;
	len = row->value[i] == NULL ? 0 : row->len[i];
	if (len > sizeof(st->group) - 1)
		len = sizeof(st->group) - 1;
	memcpy(st->group, row->value[i] ? row->value[i] : "", len);
	st->group[len] = '\0';
}

/*
 * The row's trace context (traceparent_column:), when it is a valid
 * one: its trace id in trace_id (33 bytes), and its value.  NULL: none.
 */
const char *
row_traceparent(const struct worker *w, const struct row *row,
    char *trace_id)
{
	int i = w->turn.trace_index;

	if (i < 0 || row->value[i] == NULL ||
	    !trace_parse(row->value[i], row->len[i], trace_id))
		return NULL;
	return row->value[i];
}
