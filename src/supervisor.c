/*
 * supervisor.c: the worker table.  Forks the workers of every queue,
 * reaps and restarts them, swaps generations on SIGHUP (reload.c), and
 * stops them all gracefully on SIGTERM.
 *
 * From the moment workers run, the supervisor must not die on a
 * recoverable error: a bad reload keeps the old workers, a crashing worker
 * is restarted with growing delays, a database that is down only delays
 * the workers.  Signals arrive through a signalfd read inside poll(), and
 * nothing in the loop blocks for long: the database check of a reload runs
 * in a child process, so that reaping, stopping and the watchdog go on
 * while it connects.
 *
 * A worker's stop, as the supervisor drives it, is drawn in
 * supervisor.h (enum stage): the supervisor owns the deadline, tells it
 * with the SIGTERM, and its SIGQUIT at the deadline is what makes a worker
 * give up its row.  The same steps serve a stop (every worker), a drain's
 * end and a reload (the old generation's workers, while the new ones
 * already run).
 */
#include "rowq.h"
#include "db.h"
#include "supervisor.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A worker that lived this long before dying starts from a clean slate. */
#define RESTART_RESET_MS	10000
/* Restart delays double with each quick death: 1 s, 2 s, 4 s ... 60 s. */
#define RESTART_MIN_MS		1000
#define RESTART_MAX_MS		60000
/*
 * A worker that exits EX_CONFIG (the database refuses the user, a
 * statement no longer fits the schema, the handler is gone) will not get
 * better by itself soon: 2 s, 4 s, 8 s ... up to 5 minutes.  A reload
 * with the fix starts it at once.
 */
#define RESTART_CONFIG_MIN_MS	2000
#define RESTART_CONFIG_MAX_MS	300000
/*
 * While workers finish during a stop, systemd hears from us this often,
 * each time asking for EXTEND_TIMEOUT_MS more: a live supervisor that is
 * still waiting for rows is never killed by TimeoutStopSec=, a hung one
 * is, soon after it stops talking.
 */
#define EXTEND_EVERY_MS		2000
#define EXTEND_TIMEOUT_MS	10000
#define STATUS_EVERY_MS		5000

/* An old generation with no slot left: its config can go. */
void
generation_release(struct supervisor *s, struct generation *g)
{
	if (g->live > 0 || g == s->current)
		return;
	for (int i = 0; i < s->ngens; i++) {
		if (s->gens[i] == g) {
			memmove(&s->gens[i], &s->gens[i + 1],
			    (size_t)(s->ngens - i - 1) * sizeof(s->gens[0]));
			s->ngens--;
			break;
		}
	}
	log_debug("generation %d has no worker left", g->number);
	config_free(g->cfg);
	free(g);
}

static void
supervisor_fork(struct supervisor *s, struct slot *sl)
{
	pid_t parent = getpid();
	pid_t pid;

	memset(sl->stats, 0, sizeof(*sl->stats));
	sl->drain_woken_us = 0;
	sl->stage = STAGE_RUNNING;
	pid = fork();
	if (pid == -1) {
		log_warn("fork for %s worker %d", sl->queue->name, sl->number);
		if (s->fork_failing_since == 0)
			s->fork_failing_since = now_ms();
		sl->restart_at_ms = now_ms() + RESTART_MIN_MS;
		slot_set_state(s, sl, SLOT_RESTARTING);
		return;
	}
	if (pid == 0) {
		struct worker_args args = {
			.cfg = sl->gen->cfg,
			.queue = sl->queue,
			.number = sl->number,
			.generation = sl->gen->number,
			.of = s->opts->workers > 0 ? s->opts->workers :
			    sl->queue->workers,
			.drain = s->opts->drain,
			.stats = sl->stats,
			.close_fd = -1,
			.on_failed_fd = -1,
		};
		/* Only a worker whose rows have a hook keeps its socket. */
		int keep = config_on_failed(sl->gen->cfg, sl->queue) != NULL ?
		    s->on_failed.send_fd : -1;
		if (keep >= 0)
			args.on_failed_fd = PROC_KEPT_FD;
		/*
		 * Nothing of ours is the worker's: not the signalfd, not the
		 * status and metrics listeners or their clients.  (The
		 * worker ignores SIGPIPE again itself.)
		 */
		proc_close_inherited_but(keep);
		proc_child_signals();
		/* If the supervisor dies, so do we: at once, rows roll back. */
		(void)prctl(PR_SET_PDEATHSIG, SIGQUIT);
		if (getppid() != parent)
			_exit(ROWQ_EXIT_TEMPFAIL);
		/* Where the worker publishes its handler's process group. */
		child_pgid_slot = &sl->stats->handler_pgid;
		_exit(worker_run(&args));
	}
	s->fork_failing_since = 0;
	sl->pid = pid;
	sl->started_ms = now_ms();
	slot_set_state(s, sl, SLOT_RUNNING);
	log_debug("started %s worker %d (generation %d), pid %ld",
	    sl->queue->name, sl->number, sl->gen->number, (long)pid);
}

/* The first free slot, for worker number of q in g; NULL: the table is full. */
static struct slot *
supervisor_new_slot(struct supervisor *s, struct generation *g,
    const struct queue *q, int number)
{
	for (int i = 0; i < SLOTS_MAX; i++) {
		if (i < s->nslots && s->slots[i].state != SLOT_FREE)
			continue;
		struct slot *sl = &s->slots[i];
		memset(sl, 0, sizeof(*sl));
		sl->stats = &s->stats[i];
		sl->gen = g;
		sl->queue = q;
		sl->number = number;
		if (i == s->nslots)
			s->nslots++;
		return sl;
	}
	return NULL;
}

/*
 * Start worker number of q in the current generation, outside
 * supervisor_fill (a resumed queue); false when the slot table is full.
 */
bool
supervisor_start(struct supervisor *s, const struct queue *q, int number)
{
	struct slot *sl = supervisor_new_slot(s, s->current, q, number);

	if (sl == NULL) {
		log_error("more than %d workers: %s worker %d not started",
		    SLOTS_MAX, q->name, number);
		return false;
	}
	supervisor_fork(s, sl);
	return true;
}

/* A new generation becomes the current one; supervisor_fill starts it. */
void
generation_start(struct supervisor *s, struct config *cfg)
{
	struct generation *g = xcalloc(1, sizeof(*g));

	g->cfg = cfg;
	g->number = ++s->generation;
	/* Lines look as the generation's file says, and so do its workers'. */
	log_set_json(cfg->log_json);
	g->next_number = 1;
	s->gens[s->ngens++] = g;
	s->current = g;
}

static bool
generation_complete(const struct generation *g)
{
	return g->next_queue >= g->cfg->nqueues;
}

/*
 * Start the current generation's workers that have no slot yet, as far
 * as the table has room; the rest start as slots free up (old workers
 * finishing), called again from the loop.  Paused queues are left out
 * (pause_watch.c starts them on resume), and nothing starts before the
 * pause table has been read.
 */
void
supervisor_fill(struct supervisor *s)
{
	struct generation *g = s->current;
	const struct config *cfg = g->cfg;

	if (!pause_watch_known(s))
		return;
	for (; !generation_complete(g); g->next_queue++, g->next_number = 1) {
		const struct queue *q = &cfg->queues[g->next_queue];
		int n = scale_workers(s, q);
		if (!supervisor_wants(s, q) || pause_watch_paused(s, q->name))
			continue;
		for (; g->next_number <= n; g->next_number++) {
			struct slot *sl = supervisor_new_slot(s, g, q,
			    g->next_number);
			if (sl == NULL) {
				if (!g->short_of_slots)
					log_error("more than %d workers: %s "
					    "worker %d and those after it wait "
					    "for old workers to exit", SLOTS_MAX,
					    q->name, g->next_number);
				g->short_of_slots = true;
				return;
			}
			supervisor_fork(s, sl);
		}
	}
	if (g->short_of_slots)
		log_info("generation %d: every worker started", g->number);
	g->short_of_slots = false;
}

/* "exit status 78, EX_CONFIG: ...", "killed by signal 9 (Killed)". */
void
supervisor_describe_death(int status, char *buf, size_t len)
{
	struct buf b = { 0 };

	describe_wait_status(status, &b);
	if (WIFEXITED(status) && WEXITSTATUS(status) == ROWQ_EXIT_CONFIG)
		buf_puts(&b, ", EX_CONFIG: it cannot work with this "
		    "configuration");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == ROWQ_EXIT_TEMPFAIL)
		buf_puts(&b, ", EX_TEMPFAIL");
	snprintf(buf, len, "%s", b.data);
	buf_free(&b);
}

static void supervisor_begin_stop(struct supervisor *, const char *why);

/* A worker is gone: count what it did, and decide about its restart. */
static void
supervisor_reaped(struct supervisor *s, struct slot *sl, int status)
{
	int64_t lived = now_ms() - sl->started_ms;
	bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	bool config = WIFEXITED(status) &&
	    WEXITSTATUS(status) == ROWQ_EXIT_CONFIG;
	char why[128], d[32], l[32];

	log_set_about(sl->queue->name, sl->number);
	struct totals *t = supervisor_add_exited(s, sl->queue->name,
	    sl->stats);
	if (sl->stats->finished_us > s->drain_finished_us)
		s->drain_finished_us = sl->stats->finished_us;
	supervisor_describe_death(status, why, sizeof(why));
	duration_format(lived, l, sizeof(l));
	if (!clean)
		slot_kill_handler_group(sl);
	if (s->opts->drain && clean) {
		log_debug("%s worker %d finished (%s)", sl->queue->name,
		    sl->number, why);
	} else if (sl->state == SLOT_RETIRING || s->stopping) {
		if (clean && sl->stage >= STAGE_ABORTING)
			log_info("%s worker %d (generation %d) exited after "
			    "stop_timeout; rows it had not finished were rolled "
			    "back", sl->queue->name, sl->number,
			    sl->gen->number);
		else if (clean)
			log_info("%s worker %d (generation %d) finished its "
			    "rows and exited", sl->queue->name, sl->number,
			    sl->gen->number);
		else
			log_warnx("%s worker %d (generation %d) exited while "
			    "stopping (%s)", sl->queue->name, sl->number,
			    sl->gen->number, why);
	}
	if (sl->state == SLOT_RETIRING || s->stopping ||
	    (s->opts->drain && clean)) {
		slot_set_state(s, sl, SLOT_FREE);
		log_set_about(NULL, 0);
		return;
	}
	if (s->opts->drain && config) {
		log_error("%s worker %d: the configuration does not fit the "
		    "database; giving up", sl->queue->name, sl->number);
		s->exit_code = ROWQ_EXIT_CONFIG;
		slot_set_state(s, sl, SLOT_FREE);
		log_set_about(NULL, 0);
		return;
	}
	if (s->opts->drain && WIFEXITED(status) &&
	    WEXITSTATUS(status) == ROWQ_EXIT_FAILURE) {
		/* It said why (a row that comes straight back round). */
		s->exit_code = ROWQ_EXIT_FAILURE;
		slot_set_state(s, sl, SLOT_FREE);
		log_set_about(NULL, 0);
		supervisor_begin_stop(s, "the drain cannot end");
		return;
	}
	t->restarts++;
	if (clean) {
		/* max_jobs reached; still, never two starts within a second. */
		log_info("%s worker %d exited after its max_jobs rows; "
		    "starting a new one", sl->queue->name, sl->number);
		sl->quick_deaths = 0;
		sl->last_death[0] = '\0';
		slot_set_state(s, sl, SLOT_RESTARTING);
		sl->restart_at_ms = sl->started_ms + RESTART_MIN_MS;
		if (sl->restart_at_ms < now_ms())
			sl->restart_at_ms = now_ms();
		log_set_about(NULL, 0);
		return;
	}
	sl->quick_deaths = lived < RESTART_RESET_MS ? sl->quick_deaths + 1 : 1;
	int64_t delay = config ?
	    backoff_capped_ms(RESTART_CONFIG_MIN_MS, RESTART_CONFIG_MAX_MS,
	    sl->quick_deaths) :
	    backoff_capped_ms(RESTART_MIN_MS, RESTART_MAX_MS, sl->quick_deaths);
	duration_format(delay, d, sizeof(d));
	snprintf(sl->last_death, sizeof(sl->last_death), "%s", why);
	log_error("%s worker %d died (%s) after %s; restarting in %s "
	    "(death %d in a row)", sl->queue->name, sl->number, why, l, d,
	    sl->quick_deaths);
	slot_set_state(s, sl, SLOT_RESTARTING);
	sl->restart_at_ms = now_ms() + delay;
	log_set_about(NULL, 0);
}

static void
supervisor_reap(struct supervisor *s)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == s->check_pid) {
			s->check_pid = 0;
			reload_checked(s, status);
			continue;
		}
		if (supervisor_parts_reaped(s, pid, status))
			continue;
		for (int i = 0; i < s->nslots; i++) {
			if (s->slots[i].pid == pid) {
				supervisor_reaped(s, &s->slots[i], status);
				break;
			}
		}
	}
}

/*
 * Ask a worker to finish its current row and exit within timeout_ms.  A
 * worker already finishing keeps the earlier of the two deadlines, and
 * is told when it is the new one.
 */
void
supervisor_finish_slot(struct slot *sl, int64_t timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	if (sl->pid == 0)
		return;
	if (sl->stage == STAGE_RUNNING)
		slot_set_stage(sl, STAGE_FINISHING, deadline);
	else if (sl->stage == STAGE_FINISHING &&
	    deadline < sl->stage_deadline_ms) {
		sl->stage_deadline_ms = deadline;
		slot_tell_deadline(sl);
	}
}

/*
 * A slot that is to go (its generation replaced, its queue paused): a
 * worker waiting to restart never starts again, a running one finishes
 * its row within its own generation's stop_timeout.  Returns true for a
 * running one.
 */
bool
supervisor_retire_slot(struct supervisor *s, struct slot *sl)
{
	if (sl->state == SLOT_RESTARTING)
		slot_set_state(s, sl, SLOT_FREE);
	if (sl->state != SLOT_RUNNING)
		return false;
	slot_set_state(s, sl, SLOT_RETIRING);
	supervisor_finish_slot(sl, sl->gen->cfg->stop_timeout_ms);
	return true;
}

/*
 * Past its deadline a finishing worker is told to roll back (SIGQUIT: it
 * kills its handler's group and exits), and STOP_KILL_GRACE_MS later it
 * is killed, then its handler's group.
 */
static void
supervisor_escalate(struct supervisor *s, int64_t now, int64_t *next)
{
	char d[32];

	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->pid == 0 || sl->stage == STAGE_RUNNING ||
		    sl->stage == STAGE_KILLED)
			continue;
		if (now < sl->stage_deadline_ms) {
			if (sl->stage_deadline_ms < *next)
				*next = sl->stage_deadline_ms;
			continue;
		}
		log_set_about(sl->queue->name, sl->number);
		if (sl->stage == STAGE_FINISHING) {
			duration_format(sl->gen->cfg->stop_timeout_ms, d,
			    sizeof(d));
			log_warnx("%s worker %d still busy after stop_timeout "
			    "(%s): telling it to roll back and exit",
			    sl->queue->name, sl->number, d);
			slot_set_stage(sl, STAGE_ABORTING,
			    now + STOP_KILL_GRACE_MS);
			if (sl->stage_deadline_ms < *next)
				*next = sl->stage_deadline_ms;
		} else {
			log_warnx("%s worker %d did not exit %ds after SIGQUIT: "
			    "killing it and its handler", sl->queue->name,
			    sl->number, STOP_KILL_GRACE_MS / 1000);
			slot_set_stage(sl, STAGE_KILLED, 0);
		}
		log_set_about(NULL, 0);
	}
}

int
supervisor_running(const struct supervisor *s, bool *pending)
{
	int n = 0;

	/* Workers still to start count as pending, unless stopping. */
	*pending = !s->stopping && !generation_complete(s->current);
	for (int i = 0; i < s->nslots; i++) {
		if (s->slots[i].pid != 0)
			n++;
		else if (s->slots[i].state == SLOT_RESTARTING)
			*pending = true;
	}
	return n;
}

static void
supervisor_begin_stop(struct supervisor *s, const char *why)
{
	int64_t timeout = s->current->cfg->stop_timeout_ms;
	bool pending;
	char d[32];

	if (s->stopping)
		return;
	s->stopping = true;
	s->status_dirty = true;
	duration_format(timeout, d, sizeof(d));
	log_info("%s: stopping %d worker(s); they finish their rows within "
	    "stop_timeout (%s)", why, supervisor_running(s, &pending), d);
	notify_stopping();
	if (s->check_pid != 0) {
		/* The reload it checks will not happen: reaped in the loop. */
		(void)kill(s->check_pid, SIGKILL);
	}
	/* Each worker within its own generation's stop_timeout. */
	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state == SLOT_RESTARTING)
			slot_set_state(s, sl, SLOT_FREE);
		else if (sl->pid != 0)
			supervisor_finish_slot(sl, sl->gen->cfg->stop_timeout_ms);
	}
}

static void
supervisor_read_signals(struct supervisor *s)
{
	struct signalfd_siginfo si;
	ssize_t n;

	while ((n = read(s->sigfd, &si, sizeof(si))) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			supervisor_reap(s);
			break;
		case SIGTERM:
		case SIGINT:
			supervisor_begin_stop(s, strsignal((int)si.ssi_signo));
			break;
		case SIGHUP:
			/*
			 * One more reload after the one in progress, however
			 * many SIGHUPs came meanwhile.
			 */
			if (!s->opts->drain && !s->stopping)
				s->reload_wanted = true;
			break;
		default:
			break;
		}
	}
	if (n == -1 && errno != EAGAIN && errno != EINTR) {
		if (s->signalfd_errors++ == 0)
			log_warn("reading signals");
	} else
		s->signalfd_errors = 0;
	/* SIGCHLDs coalesce: reap whatever is there in any case. */
	supervisor_reap(s);
}

static void
supervisor_restart_due(struct supervisor *s, int64_t now, int64_t *next)
{
	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state != SLOT_RESTARTING)
			continue;
		if (sl->restart_at_ms <= now) {
			supervisor_fork(s, sl);
			if (sl->pid != 0 && sl->quick_deaths > 0)
				log_info("%s worker %d restarted, pid %ld",
				    sl->queue->name, sl->number, (long)sl->pid);
			s->status_dirty = true;
		} else if (sl->restart_at_ms < *next)
			*next = sl->restart_at_ms;
	}
}

/* The last rows any worker finished, those that exited included. */
static int64_t
supervisor_drain_last(const struct supervisor *s)
{
	int64_t last = s->drain_finished_us;

	for (int i = 0; i < s->nslots; i++) {
		const struct slot *sl = &s->slots[i];
		if (sl->pid != 0 && sl->stats->finished_us > last)
			last = sl->stats->finished_us;
	}
	return last;
}

/*
 * A drain is over when every worker's last look found nothing, and began
 * after the last rows any worker finished were committed: none holds a
 * row, and nothing finished since could have moved one into a select.
 */
static bool
supervisor_drained(const struct supervisor *s)
{
	int64_t first = INT64_MAX, last = supervisor_drain_last(s);
	int n = 0;

	if (!generation_complete(s->current))
		return false;
	for (int i = 0; i < s->nslots; i++) {
		const struct slot *sl = &s->slots[i];
		if (sl->state == SLOT_RESTARTING)
			return false;
		if (sl->pid == 0)
			continue;
		if (sl->stats->drained_us == 0)
			return false;
		n++;
		if (sl->stats->drained_us < first)
			first = sl->stats->drained_us;
	}
	return n > 0 && first > last;
}

/*
 * An idle worker whose last look began before rows that another worker
 * finished since would sleep its whole idle (2 s by default) before it
 * looks again, and the drain would end that much late: wake it (SIGUSR1,
 * as the wake watcher does), once for each newer finish.
 */
static void
supervisor_drain_wake(struct supervisor *s)
{
	int64_t last = supervisor_drain_last(s);

	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state != SLOT_RUNNING || sl->pid <= 0 ||
		    sl->stats->state != WORKER_IDLE ||
		    sl->stats->drained_us > last || sl->drain_woken_us >= last)
			continue;
		if (kill(sl->pid, SIGUSR1) == 0)
			sl->drain_woken_us = last;
	}
}

/* The drain is over: each idle worker is told to exit (SIGTERM). */
static void
supervisor_end_drain(struct supervisor *s)
{
	s->stopping = true;
	for (int i = 0; i < s->nslots; i++)
		supervisor_finish_slot(&s->slots[i],
		    s->slots[i].gen->cfg->stop_timeout_ms);
}

/*
 * The watchdog is fed only from the loop, and only while it can do its
 * job: read signals and fork workers.  A supervisor stuck anywhere, or one
 * that has been unable to fork for a whole watchdog period, goes quiet and
 * systemd restarts the service.
 */
static bool
supervisor_healthy(const struct supervisor *s, int64_t now, int64_t period)
{
	if (s->signalfd_errors > 0)
		return false;
	if (s->fork_failing_since != 0 && now - s->fork_failing_since > period)
		return false;
	return true;
}

/*
 * Each turn of the loop: start a reload if one is wanted and none is being
 * checked; start workers whose restart delay is over; move finishing
 * workers past their deadline to the next step; fail a reload check that
 * hangs; end when a stop or a drain has no worker left; feed the watchdog
 * if healthy; during a stop, ask systemd for more time; refresh STATUS=;
 * then wait for a signal or the next timer and handle what came.
 */
static void
supervisor_loop(struct supervisor *s)
{
	int64_t watchdog = notify_watchdog_ms() / 2, next_ping = 0;
	int64_t next_status = 0, next_progress = 0, next_extend = 0;
	bool tty = !s->opts->drain ? false : isatty(STDOUT_FILENO);

	for (;;) {
		int64_t now = now_ms(), next = now + 1000;
		bool pending;
		int running;

		if (s->reload_wanted && s->check_pid == 0 && !s->stopping)
			reload_begin(s);
		if (!s->stopping) {
			supervisor_fill(s);
			supervisor_restart_due(s, now, &next);
		}
		supervisor_escalate(s, now, &next);
		reload_watch(s, now, &next);
		running = supervisor_running(s, &pending);
		if (running == 0 && !pending && s->check_pid == 0 &&
		    (s->stopping || s->opts->drain))
			break;
		if (s->opts->drain && !s->stopping) {
			if (supervisor_drained(s))
				supervisor_end_drain(s);
			else
				supervisor_drain_wake(s);
			/* Workers' looks are read often: the end is not late. */
			if (now + DRAIN_LOOK_MS < next)
				next = now + DRAIN_LOOK_MS;
		}
		if (watchdog > 0 && now >= next_ping) {
			if (supervisor_healthy(s, now, 2 * watchdog))
				notify_watchdog();
			next_ping = now + watchdog;
		}
		if (s->stopping && running > 0 && now >= next_extend) {
			notify_extend_timeout(EXTEND_TIMEOUT_MS);
			next_extend = now + EXTEND_EVERY_MS;
		}
		if (now >= next_status || s->status_dirty) {
			report_status(s);
			next_status = now + STATUS_EVERY_MS;
		}
		if (tty && now >= next_progress) {
			report_progress(s, false);
			next_progress = now + 1000;
		}
		supervisor_parts_tick(s, now, &next);
		s->poll[0] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
		nfds_t np = supervisor_parts_poll_fds(s);
		int64_t wait = next - now;
		if (watchdog > 0 && next_ping - now < wait)
			wait = next_ping - now;
		if (s->reload_wanted && s->check_pid == 0)
			wait = 0;
		if (poll(s->poll, np, (int)(wait < 0 ? 0 : wait)) == -1 &&
		    errno != EINTR)
			log_warn("poll");
		supervisor_read_signals(s);
		supervisor_parts_handle(s);
	}
	if (tty)
		report_progress(s, true);
}

/* Runs until stopped (or drained); takes ownership of cfg. */
int
supervisor_run(struct config *cfg, const struct run_options *opts)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP };
	struct supervisor s = { .opts = opts, .exit_code = ROWQ_EXIT_OK };
	bool pending;

	s.started_ms = now_ms();
	s.sigfd = proc_signalfd(sigs, sizeof(sigs) / sizeof(sigs[0]));
	/*
	 * Slots are taken from the front and every scan stops at nslots, so
	 * only the pages of slots in use become resident; mapped rather than
	 * calloc'd, the rest of the table is never cleared or touched.
	 */
	s.slots = mmap(NULL, SLOTS_MAX * sizeof(*s.slots),
	    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	s.stats = mmap(NULL, SLOTS_MAX * sizeof(*s.stats),
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	s.shared = mmap(NULL, sizeof(*s.shared), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s.slots == MAP_FAILED || s.stats == MAP_FAILED ||
	    s.shared == MAP_FAILED)
		fatal("mmap");
	proc_title("rowq: supervisor");
	/* Before the first fork, so that every worker starts with it done. */
	db_library_init();
	limit_daemon_init();
	db_announce_hosts();	/* each child logs the host it uses */
	s.status_fd = -1;
	s.wake_fd = -1;
	generation_start(&s, cfg);
	supervisor_parts_start(&s);
	supervisor_fill(&s);
	log_info("started %d worker(s) for %zu queue(s)%s",
	    supervisor_running(&s, &pending), cfg->nqueues,
	    pause_watch_known(&s) ? "" :
	    "; the rest once the pause table is read");
	report_status(&s);
	notify_ready();
	supervisor_loop(&s);
	if (opts->drain)
		report_summary(&s);
	else
		log_info("stopped");
	supervisor_parts_stop(&s);
	for (int i = 0; i < s.ngens; i++) {
		config_free(s.gens[i]->cfg);
		free(s.gens[i]);
	}
	config_free(s.check_cfg);
	for (size_t i = 0; i < s.ntotals; i++)
		free(s.totals[i].queue);
	free(s.totals);
	munmap(s.slots, SLOTS_MAX * sizeof(*s.slots));
	munmap(s.stats, SLOTS_MAX * sizeof(*s.stats));
	munmap(s.shared, sizeof(*s.shared));
	close(s.sigfd);
	return s.exit_code;
}
