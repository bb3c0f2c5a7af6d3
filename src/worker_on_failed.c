/*
 * worker_on_failed.c: a worker's side of on_failed: (on_failed.c).  A row
 * finished with its failed statement is noted while the transaction is
 * open; once it commits, each noted row goes to the supervisor's runner
 * as one datagram, sent without waiting: when the socket is full, the
 * row's hook is dropped and counted, and the worker goes on.  A rollback
 * drops the notes: the row is waiting again, nothing failed.
 */
#include "worker.h"
#include "on_failed.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

static enum on_failed_outcome
worker_on_failed_outcome(const struct worker *w)
{
	if (w->result.timed_out)
		return ON_FAILED_TIMEOUT;
	return w->result.killed ? ON_FAILED_KILLED : ON_FAILED_FAILED;
}

/* The row failed for good in this transaction: note its datagram. */
void
on_failed_note(struct worker *w, const struct row *row, const char *key,
    int attempt)
{
	struct turn *t = &w->turn;
	struct on_failed_msg m = { .attempt = attempt };
	struct buf json = { 0 }, *d;
	const char *err = w->result.error.data ? w->result.error.data : "";

	if (w->args->on_failed_fd < 0 ||
	    config_on_failed(w->args->cfg, w->q) == NULL)
		return;
	if (t->nfailed_notes >= ON_FAILED_NOTES_MAX) {
		t->failed_notes_dropped++;
		return;
	}
	row_json(w, row, &json);
	if (json.len > ON_FAILED_ROW_MAX) {
		buf_reset(&json);
		buf_puts(&json, "{}\n");
	}
	snprintf(m.queue, sizeof(m.queue), "%s", w->q->name);
	m.outcome = worker_on_failed_outcome(w);
	m.key_len = (uint32_t)strnlen(key, 4096);
	m.error_len = (uint32_t)strnlen(err, HANDLER_ERROR_MAX);
	m.row_len = (uint32_t)json.len;
	d = &t->failed_notes[t->nfailed_notes++];
	buf_reset(d);
	buf_append(d, &m, sizeof(m));
	buf_append(d, key, m.key_len);
	buf_append(d, err, m.error_len);
	buf_append(d, json.data, json.len);
	buf_free(&json);
}

/* The transaction committed: the noted rows failed for good; send them. */
void
on_failed_send(struct worker *w)
{
	struct turn *t = &w->turn;
	uint64_t dropped = t->failed_notes_dropped;

	for (size_t i = 0; i < t->nfailed_notes; i++) {
		struct buf *d = &t->failed_notes[i];
		if (send(w->args->on_failed_fd, d->data, d->len,
		    MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)d->len)
			dropped++;
	}
	if (dropped > 0 && w->args->stats)
		w->args->stats->on_failed_dropped += dropped;
	on_failed_forget(w);
}

/* A rollback, or the end of the worker: nothing noted failed. */
void
on_failed_forget(struct worker *w)
{
	w->turn.nfailed_notes = 0;
	w->turn.failed_notes_dropped = 0;
}

void
on_failed_free(struct worker *w)
{
	for (size_t i = 0; i < ON_FAILED_NOTES_MAX; i++)
		buf_free(&w->turn.failed_notes[i]);
}
