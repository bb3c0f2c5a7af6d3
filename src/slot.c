/*
 * slot.c: a slot's life, as a checked state machine (s6-supervise and
 * pgbouncer keep theirs the same way).  slot_set_state is the only
 * writer of a slot's state and slot_set_stage of its stage: each checks
 * the move against the table drawn from the diagram in supervisor.h,
 * logs it at debug level ("email/3: running -> retiring"), and a move
 * the table does not have is a bug of ours, fatal at once rather than a
 * slot that leaks or a worker started twice.
 */
#include "rowq.h"
#include "supervisor.h"

#include <signal.h>

static const char *const slot_state_names[] = {
	[SLOT_FREE] = "free",
	[SLOT_RUNNING] = "running",
	[SLOT_RESTARTING] = "restarting",
	[SLOT_RETIRING] = "retiring",
};

static const char *const slot_stage_names[] = {
	[STAGE_RUNNING] = "running",
	[STAGE_FINISHING] = "finishing",
	[STAGE_ABORTING] = "aborting",
	[STAGE_KILLED] = "killed",
};

#define SLOT_STATES	(sizeof(slot_state_names) / sizeof(slot_state_names[0]))
#define SLOT_STAGES	(sizeof(slot_stage_names) / sizeof(slot_stage_names[0]))

/*
 * The moves of supervisor.h's diagram, [from][to]:
 *	free --fork--> running; free --fork failed--> restarting
 *	running --death--> restarting --due--> running
 *	running --reload, pause--> retiring --exit--> free
 *	running --exit during a stop, a drain's end--> free
 *	restarting --reload, stop, pause--> free
 */
static const bool slot_moves[SLOT_STATES][SLOT_STATES] = {
	[SLOT_FREE] = { [SLOT_RUNNING] = true, [SLOT_RESTARTING] = true },
	[SLOT_RUNNING] = { [SLOT_RESTARTING] = true, [SLOT_RETIRING] = true,
	    [SLOT_FREE] = true },
	[SLOT_RESTARTING] = { [SLOT_RUNNING] = true, [SLOT_FREE] = true },
	[SLOT_RETIRING] = { [SLOT_FREE] = true },
};

const char *
slot_state_name(enum slot_state st)
{
	return (size_t)st < SLOT_STATES ? slot_state_names[st] : "?";
}

const char *
slot_stage_name(enum stage st)
{
	return (size_t)st < SLOT_STAGES ? slot_stage_names[st] : "?";
}

bool
slot_move_allowed(enum slot_state from, enum slot_state to)
{
	return (size_t)from < SLOT_STATES && (size_t)to < SLOT_STATES &&
	    slot_moves[from][to];
}

/*
 * A stage only goes forward, one step at a time, from running, where a
 * fresh worker starts (slot_set_stage is not how it gets there).
 */
bool
slot_stage_allowed(enum stage from, enum stage to)
{
	return (size_t)to < SLOT_STAGES && to == from + 1;
}

/*
 * The only place a slot changes state.  Each generation counts its
 * slots in use, and the last one to go frees an old generation: whether
 * its worker exited, or was waiting to restart when a reload or a stop
 * made it unneeded.
 */
void
slot_set_state(struct supervisor *s, struct slot *sl, enum slot_state to)
{
	enum slot_state from = sl->state;

	if (from == to)
		return;
	if (!slot_move_allowed(from, to))
		fatalx("%s/%d: slot %s -> %s is not a move of a slot's life",
		    sl->queue->name, sl->number, slot_state_name(from),
		    slot_state_name(to));
	log_debug("%s/%d: %s -> %s", sl->queue->name, sl->number,
	    slot_state_name(from), slot_state_name(to));
	sl->state = to;
	s->status_dirty = true;
	if (to == SLOT_FREE || to == SLOT_RESTARTING)
		sl->pid = 0;
	if (to != SLOT_RESTARTING)
		sl->restart_at_ms = 0;
	if (from == SLOT_FREE)
		sl->gen->live++;
	else if (to == SLOT_FREE) {
		sl->gen->live--;
		generation_release(s, sl->gen);
	}
}

/*
 * A worker that died without reaping its handler (SIGKILL, a crash)
 * leaves the handler's process group behind: PR_SET_PDEATHSIG kills only
 * the handler itself, not what it started.  The group must not go on
 * working on a row whose transaction is gone.
 */
void
slot_kill_handler_group(struct slot *sl)
{
	pid_t pgid = sl->stats->handler_pgid;

	if (pgid <= 1)
		return;
	if (kill(-pgid, SIGKILL) == 0)
		log_warnx("%s worker %d: killed its handler's process group "
		    "%ld", sl->queue->name, sl->number, (long)pgid);
	sl->stats->handler_pgid = 0;
}

/*
 * A finishing worker is told its deadline with its SIGTERM (sigqueue):
 * the supervisor owns it, the worker uses it to warn its handler in time
 * (stop_grace) and to bound its own end; a shorter one is told again.
 * (A SIGTERM sent while the last is still unread is merged into it by the
 * kernel, and the worker keeps the first deadline: its handler is then
 * told late, but the SIGQUIT at the true deadline still ends the row.)
 */
void
slot_tell_deadline(const struct slot *sl)
{
	union sigval v = { .sival_int = proc_deadline_encode(
	    sl->stage_deadline_ms, now_ms()) };

	if (sl->pid > 0)
		(void)sigqueue(sl->pid, SIGTERM, v);
}

/*
 * The only place a worker is asked to stop: the next stage, its signal,
 * and until when it has before the one after.
 *	finishing: SIGTERM with the deadline, finish the row, commit, exit;
 *	aborting: SIGQUIT at the deadline, the one thing that makes the
 *	    worker give up its row: it kills the handler's group and rolls
 *	    back;
 *	killed: SIGKILL for the worker first (it must not see its
 *	    handler die and record that), then the handler's group.
 */
void
slot_set_stage(struct slot *sl, enum stage to, int64_t deadline_ms)
{
	static const int signals[] = {
		[STAGE_ABORTING] = SIGQUIT,
		[STAGE_KILLED] = SIGKILL,
	};

	if (!slot_stage_allowed(sl->stage, to))
		fatalx("%s/%d: stage %s -> %s is not a step of a stop",
		    sl->queue->name, sl->number, slot_stage_name(sl->stage),
		    slot_stage_name(to));
	log_debug("%s/%d: %s -> %s", sl->queue->name, sl->number,
	    slot_stage_name(sl->stage), slot_stage_name(to));
	sl->stage = to;
	sl->stage_deadline_ms = deadline_ms;
	if (to == STAGE_FINISHING)
		slot_tell_deadline(sl);
	else if (sl->pid > 0)
		(void)kill(sl->pid, signals[to]);
	if (to == STAGE_KILLED)
		slot_kill_handler_group(sl);
}
