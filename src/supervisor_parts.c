/*
 * supervisor_parts.c: the parts of the supervisor's loop (SUPERVISOR_PARTS
 * in supervisor.h), each started, polled, ticked, handed its ready
 * descriptors and its reaped children in turn; a drain runs only those
 * marked in_drain.
 */
#include "rowq.h"
#include "supervisor.h"

#include <poll.h>
#include <stdlib.h>

#define SUPERVISOR_PART_ROW(name) &name##_part,
static const struct supervisor_part *const supervisor_parts[] = {
	SUPERVISOR_PARTS(SUPERVISOR_PART_ROW)
};
#define NPARTS	(sizeof(supervisor_parts) / sizeof(supervisor_parts[0]))

/* Whether part i takes part in this run: a drain has only some. */
static bool
supervisor_part_on(const struct supervisor *s, size_t i)
{
	return !s->opts->drain || supervisor_parts[i]->in_drain;
}

/* Start every part, and size the poll array for all of them. */
void
supervisor_parts_start(struct supervisor *s)
{
	nfds_t n = 1;	/* the signalfd */

	for (size_t i = 0; i < NPARTS; i++)
		n += supervisor_parts[i]->poll_max;
	s->poll = xcalloc(n, sizeof(*s->poll));
	s->poll_from = xcalloc(NPARTS + 1, sizeof(*s->poll_from));
	for (size_t i = 0; i < NPARTS; i++)
		if (supervisor_part_on(s, i) && supervisor_parts[i]->start)
			supervisor_parts[i]->start(s);
}

void
supervisor_parts_stop(struct supervisor *s)
{
	for (size_t i = 0; i < NPARTS; i++)
		if (supervisor_parts[i]->stop)
			supervisor_parts[i]->stop(s);
	free(s->poll);
	free(s->poll_from);
}

void
supervisor_parts_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	for (size_t i = 0; i < NPARTS; i++)
		if (supervisor_part_on(s, i) && supervisor_parts[i]->tick)
			supervisor_parts[i]->tick(s, now, next);
}

/*
 * Each part's entries after the signalfd's, where poll_from says: part
 * i's are poll[poll_from[i]] up to poll[poll_from[i + 1]].  A part that
 * asks for more than its poll_max is a bug of ours.
 */
nfds_t
supervisor_parts_poll_fds(struct supervisor *s)
{
	nfds_t np = 1;

	for (size_t i = 0; i < NPARTS; i++) {
		const struct supervisor_part *pt = supervisor_parts[i];
		s->poll_from[i] = np;
		if (supervisor_part_on(s, i) && pt->poll_fds) {
			pt->poll_fds(s, s->poll, &np);
			if (np - s->poll_from[i] > pt->poll_max)
				fatalx("%s: %lu poll entries, more than its %lu",
				    pt->name, (unsigned long)(np -
				    s->poll_from[i]), (unsigned long)pt->poll_max);
		}
	}
	s->poll_from[NPARTS] = np;
	return np;
}

void
supervisor_parts_handle(struct supervisor *s)
{
	for (size_t i = 0; i < NPARTS; i++) {
		nfds_t from = s->poll_from[i], to = s->poll_from[i + 1];
		if (to > from && supervisor_parts[i]->handle)
			supervisor_parts[i]->handle(s, s->poll + from,
			    to - from);
	}
}

bool
supervisor_parts_reaped(struct supervisor *s, pid_t pid, int status)
{
	for (size_t i = 0; i < NPARTS; i++)
		if (supervisor_parts[i]->reaped &&
		    supervisor_parts[i]->reaped(s, pid, status))
			return true;
	return false;
}
