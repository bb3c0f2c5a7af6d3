/*
 * supervisor.c: the worker table.  Forks the workers of every queue,
 * reaps and restarts them, swaps generations on SIGHUP, and stops them
 * all gracefully on SIGTERM.
 *
 * From the moment workers run, the supervisor must not die on a
 * recoverable error: a bad reload keeps the old workers, a crashing worker
 * is restarted with growing delays, a database that is down only delays
 * the workers.  Signals arrive through a signalfd read inside poll().
 */
#include "rowq.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOTS_MAX		4096
#define GENERATIONS_MAX		64
/* A worker that lived this long before dying starts from a clean slate. */
#define RESTART_RESET_MS	10000
#define RESTART_MIN_MS		1000
#define RESTART_MAX_MS		60000
/* A worker that says the config does not fit the schema waits longer. */
#define RESTART_CONFIG_MS	30000
/* After stop_timeout, workers get this long to roll back before SIGKILL. */
#define STOP_KILL_GRACE_MS	3000

struct generation {
	struct config	*cfg;
	int		 number;
	int		 live;		/* slots still using cfg */
};

struct slot {
	bool			 used;
	pid_t			 pid;		/* 0: not running */
	struct generation	*gen;
	const struct queue	*queue;
	int			 number;
	bool			 retiring;	/* finish the row, then go */
	bool			 finished;	/* drain: exited for good */
	int64_t			 started_ms;
	int			 quick_deaths;
	int64_t			 restart_at_ms;	/* 0: no restart pending */
	struct worker_stats	*stats;
};

/* Rows counted by workers that have exited, per queue name. */
struct totals {
	char		*queue;
	uint64_t	 done, retried, failed, errors, restarts;
};

struct supervisor {
	const struct run_options *opts;
	int			 sigfd;
	struct slot		*slots;
	struct worker_stats	*stats;	/* SLOTS_MAX, shared with workers */
	struct generation	*gens[GENERATIONS_MAX];
	int			 ngens;
	int			 generation;	/* the newest number */
	struct totals		*totals;
	size_t			 ntotals;
	bool			 stopping;
	int64_t			 stop_deadline_ms;
	bool			 killed;
	int			 exit_code;
	char			 last_reload[160];
	int64_t			 started_ms;
};

static struct totals *
supervisor_totals(struct supervisor *s, const char *queue)
{
	for (size_t i = 0; i < s->ntotals; i++)
		if (strcmp(s->totals[i].queue, queue) == 0)
			return &s->totals[i];
	s->totals = xrealloc(s->totals, (s->ntotals + 1) * sizeof(*s->totals));
	memset(&s->totals[s->ntotals], 0, sizeof(*s->totals));
	s->totals[s->ntotals].queue = xstrdup(queue);
	return &s->totals[s->ntotals++];
}

/* Counts of a queue: what exited workers did plus what live ones report. */
static struct totals
supervisor_count(struct supervisor *s, const char *queue)
{
	struct totals t = *supervisor_totals(s, queue);

	for (int i = 0; i < SLOTS_MAX; i++) {
		struct slot *sl = &s->slots[i];
		if (!sl->used || sl->pid == 0 ||
		    strcmp(sl->queue->name, queue) != 0)
			continue;
		t.done += sl->stats->done;
		t.retried += sl->stats->retried;
		t.failed += sl->stats->failed;
		t.errors += sl->stats->errors;
	}
	return t;
}

static bool
supervisor_wants(const struct supervisor *s, const struct queue *q)
{
	if (!s->opts->drain || s->opts->nqueues == 0)
		return true;
	for (size_t i = 0; i < s->opts->nqueues; i++)
		if (strcmp(s->opts->queues[i], q->name) == 0)
			return true;
	return false;
}

static void
supervisor_fork(struct supervisor *s, struct slot *sl)
{
	pid_t parent = getpid();
	pid_t pid;

	memset(sl->stats, 0, sizeof(*sl->stats));
	pid = fork();
	if (pid == -1) {
		log_warn("fork for %s worker %d", sl->queue->name, sl->number);
		sl->restart_at_ms = now_ms() + RESTART_MIN_MS;
		return;
	}
	if (pid == 0) {
		struct worker_args args = {
			.cfg = sl->gen->cfg,
			.queue = sl->queue,
			.number = sl->number,
			.drain = s->opts->drain,
			.stats = sl->stats,
		};
		close(s->sigfd);
		proc_child_signals();
		/* If the supervisor dies, so do we: at once, rows roll back. */
		(void)prctl(PR_SET_PDEATHSIG, SIGQUIT);
		if (getppid() != parent)
			_exit(ROWQ_EXIT_TEMPFAIL);
		_exit(worker_run(&args));
	}
	sl->pid = pid;
	sl->started_ms = now_ms();
	sl->restart_at_ms = 0;
	log_debug("started %s worker %d, pid %ld", sl->queue->name,
	    sl->number, (long)pid);
}

static struct slot *
supervisor_new_slot(struct supervisor *s)
{
	for (int i = 0; i < SLOTS_MAX; i++) {
		if (!s->slots[i].used) {
			struct slot *sl = &s->slots[i];
			memset(sl, 0, sizeof(*sl));
			sl->used = true;
			sl->stats = &s->stats[i];
			return sl;
		}
	}
	return NULL;
}

/* Start a generation: a slot per worker of every queue it runs. */
static void
supervisor_start_generation(struct supervisor *s, struct config *cfg)
{
	struct generation *g = xcalloc(1, sizeof(*g));

	g->cfg = cfg;
	g->number = ++s->generation;
	s->gens[s->ngens++] = g;
	for (size_t i = 0; i < cfg->nqueues; i++) {
		const struct queue *q = &cfg->queues[i];
		int n = s->opts->workers > 0 ? s->opts->workers : q->workers;
		if (!supervisor_wants(s, q))
			continue;
		for (int k = 1; k <= n; k++) {
			struct slot *sl = supervisor_new_slot(s);
			if (sl == NULL) {
				log_error("more than %d workers: %s worker %d "
				    "not started", SLOTS_MAX, q->name, k);
				break;
			}
			sl->gen = g;
			sl->queue = q;
			sl->number = k;
			g->live++;
			supervisor_fork(s, sl);
		}
	}
}

static void
supervisor_release_slot(struct supervisor *s, struct slot *sl)
{
	struct generation *g = sl->gen;

	sl->used = false;
	if (--g->live > 0 || g->number == s->generation)
		return;
	/* The last worker of an old generation: its config can go. */
	for (int i = 0; i < s->ngens; i++) {
		if (s->gens[i] == g) {
			s->gens[i] = s->gens[--s->ngens];
			break;
		}
	}
	config_free(g->cfg);
	free(g);
}

static void
supervisor_describe_death(const struct slot *sl, int status, char *buf,
    size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)",
		    WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "status %d", status);
	(void)sl;
}

/* A worker is gone: count what it did, and decide about its restart. */
static void
supervisor_reaped(struct supervisor *s, struct slot *sl, int status)
{
	struct totals *t = supervisor_totals(s, sl->queue->name);
	int64_t lived = now_ms() - sl->started_ms;
	bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	char why[96];

	t->done += sl->stats->done;
	t->retried += sl->stats->retried;
	t->failed += sl->stats->failed;
	t->errors += sl->stats->errors;
	sl->pid = 0;
	supervisor_describe_death(sl, status, why, sizeof(why));
	if (sl->retiring || s->stopping || (s->opts->drain && clean)) {
		log_debug("%s worker %d exited (%s)", sl->queue->name,
		    sl->number, why);
		sl->finished = true;
		supervisor_release_slot(s, sl);
		return;
	}
	if (s->opts->drain && WIFEXITED(status) &&
	    WEXITSTATUS(status) == ROWQ_EXIT_CONFIG) {
		log_error("%s worker %d: the configuration does not fit the "
		    "database; giving up", sl->queue->name, sl->number);
		s->exit_code = ROWQ_EXIT_CONFIG;
		sl->finished = true;
		supervisor_release_slot(s, sl);
		return;
	}
	t->restarts++;
	if (clean) {
		sl->restart_at_ms = now_ms();	/* max_jobs reached */
		return;
	}
	sl->quick_deaths = lived < RESTART_RESET_MS ? sl->quick_deaths + 1 : 1;
	int64_t delay = backoff_capped_ms(RESTART_MIN_MS, RESTART_MAX_MS,
	    sl->quick_deaths);
	if (WIFEXITED(status) && WEXITSTATUS(status) == ROWQ_EXIT_CONFIG &&
	    delay < RESTART_CONFIG_MS)
		delay = RESTART_CONFIG_MS;
	char d[32];
	duration_format(delay, d, sizeof(d));
	log_error("%s worker %d died (%s) after %llds; restarting in %s",
	    sl->queue->name, sl->number, why, (long long)lived / 1000, d);
	sl->restart_at_ms = now_ms() + delay;
}

static void
supervisor_reap(struct supervisor *s)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < SLOTS_MAX; i++) {
			if (s->slots[i].used && s->slots[i].pid == pid) {
				supervisor_reaped(s, &s->slots[i], status);
				break;
			}
		}
	}
}

static void
supervisor_signal_all(struct supervisor *s, int sig, bool old_only)
{
	for (int i = 0; i < SLOTS_MAX; i++) {
		struct slot *sl = &s->slots[i];
		if (!sl->used || sl->pid == 0)
			continue;
		if (old_only && !sl->retiring)
			continue;
		kill(sl->pid, sig);
	}
}

static int
supervisor_running(const struct supervisor *s, bool *pending)
{
	int n = 0;

	*pending = false;
	for (int i = 0; i < SLOTS_MAX; i++) {
		if (!s->slots[i].used)
			continue;
		if (s->slots[i].pid != 0)
			n++;
		else if (s->slots[i].restart_at_ms != 0)
			*pending = true;
	}
	return n;
}

static void
supervisor_begin_stop(struct supervisor *s, const char *why)
{
	if (s->stopping)
		return;
	log_info("%s: stopping workers (they finish their rows within %llds)",
	    why, (long long)s->gens[s->ngens - 1]->cfg->stop_timeout_ms / 1000);
	s->stopping = true;
	s->stop_deadline_ms = now_ms() +
	    s->gens[s->ngens - 1]->cfg->stop_timeout_ms;
	notify_stopping();
	notify_extend_timeout(s->gens[s->ngens - 1]->cfg->stop_timeout_ms +
	    2 * STOP_KILL_GRACE_MS);
	for (int i = 0; i < SLOTS_MAX; i++)
		s->slots[i].restart_at_ms = 0;
	supervisor_signal_all(s, SIGTERM, false);
}

/*
 * Reload: parse and fully check the new configuration first.  A bad one
 * changes nothing; a good one starts a new generation and retires the old
 * workers, which finish their rows and exit while the new ones work.
 */
static void
supervisor_reload(struct supervisor *s)
{
	struct config *cfg;
	int problems;

	notify_reloading();
	log_info("reloading %s", s->opts->config_path);
	cfg = config_load(s->opts->config_path);
	if (cfg == NULL) {
		snprintf(s->last_reload, sizeof(s->last_reload),
		    "failed: configuration errors; old workers kept");
		log_error("reload: %s has errors, not reloading",
		    s->opts->config_path);
		notify_ready();
		return;
	}
	problems = check_config(cfg, false);
	if (problems != 0 || s->ngens >= GENERATIONS_MAX) {
		snprintf(s->last_reload, sizeof(s->last_reload),
		    "failed: %s; old workers kept", problems < 0 ?
		    "database unreachable" : problems > 0 ?
		    "check failed" : "too many generations still retiring");
		log_error("reload: %s", s->last_reload);
		config_free(cfg);
		notify_ready();
		return;
	}
	for (int i = 0; i < SLOTS_MAX; i++) {
		struct slot *sl = &s->slots[i];
		if (!sl->used)
			continue;
		sl->retiring = true;
		if (sl->pid == 0) {
			sl->restart_at_ms = 0;
			supervisor_release_slot(s, sl);
		}
	}
	supervisor_start_generation(s, cfg);
	supervisor_signal_all(s, SIGTERM, true);
	snprintf(s->last_reload, sizeof(s->last_reload), "ok, generation %d",
	    s->generation);
	log_info("reload: generation %d started", s->generation);
	notify_ready();
}

static void
supervisor_read_signals(struct supervisor *s, bool *reload)
{
	struct signalfd_siginfo si;

	while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			supervisor_reap(s);
			break;
		case SIGTERM:
		case SIGINT:
			supervisor_begin_stop(s, strsignal((int)si.ssi_signo));
			break;
		case SIGHUP:
			if (!s->opts->drain)
				*reload = true;
			break;
		default:
			break;
		}
	}
	/* SIGCHLDs coalesce: reap whatever is there in any case. */
	supervisor_reap(s);
}

static void
supervisor_restart_due(struct supervisor *s, int64_t now, int64_t *next)
{
	for (int i = 0; i < SLOTS_MAX; i++) {
		struct slot *sl = &s->slots[i];
		if (!sl->used || sl->pid != 0 || sl->restart_at_ms == 0)
			continue;
		if (sl->restart_at_ms <= now)
			supervisor_fork(s, sl);
		else if (sl->restart_at_ms < *next)
			*next = sl->restart_at_ms;
	}
}

static void
supervisor_status(struct supervisor *s)
{
	struct buf b = { 0 };
	struct config *cfg = s->gens[s->ngens - 1]->cfg;

	for (size_t i = 0; i < cfg->nqueues; i++) {
		struct totals t = supervisor_count(s, cfg->queues[i].name);
		int up = 0;
		for (int k = 0; k < SLOTS_MAX; k++)
			if (s->slots[k].used && s->slots[k].pid != 0 &&
			    s->slots[k].queue == &cfg->queues[i])
				up++;
		buf_printf(&b, "%s%s: %d up, %llu done, %llu failed",
		    i ? "; " : "", cfg->queues[i].name, up,
		    (unsigned long long)t.done, (unsigned long long)t.failed);
	}
	if (s->last_reload[0])
		buf_printf(&b, "; last reload %s", s->last_reload);
	notify_status("%s", b.data ? b.data : "");
	buf_free(&b);
}

static void
supervisor_progress(struct supervisor *s, bool final)
{
	struct config *cfg = s->gens[s->ngens - 1]->cfg;
	struct buf b = { 0 };

	for (size_t i = 0; i < cfg->nqueues; i++) {
		if (!supervisor_wants(s, &cfg->queues[i]))
			continue;
		struct totals t = supervisor_count(s, cfg->queues[i].name);
		buf_printf(&b, "%s%s: %llu done, %llu retried, %llu failed",
		    b.len ? "  " : "", cfg->queues[i].name,
		    (unsigned long long)t.done, (unsigned long long)t.retried,
		    (unsigned long long)t.failed);
	}
	printf("\r%s\033[K%s", b.data ? b.data : "", final ? "\n" : "");
	fflush(stdout);
	buf_free(&b);
}

/* The summary `rowq drain` prints: one line per queue. */
static void
supervisor_summary(struct supervisor *s)
{
	struct config *cfg = s->gens[s->ngens - 1]->cfg;
	double secs = (double)(now_ms() - s->started_ms) / 1000.0;

	for (size_t i = 0; i < cfg->nqueues; i++) {
		if (!supervisor_wants(s, &cfg->queues[i]))
			continue;
		struct totals t = supervisor_count(s, cfg->queues[i].name);
		uint64_t rows = t.done + t.retried + t.failed;
		printf("%s: %llu done, %llu retried, %llu failed, %llu errors, "
		    "%llu restarts in %.2fs (%.0f rows/s)\n",
		    cfg->queues[i].name, (unsigned long long)t.done,
		    (unsigned long long)t.retried, (unsigned long long)t.failed,
		    (unsigned long long)t.errors,
		    (unsigned long long)t.restarts, secs,
		    secs > 0 ? (double)rows / secs : 0.0);
		if (t.errors > 0 && s->exit_code == ROWQ_EXIT_OK)
			s->exit_code = ROWQ_EXIT_FAILURE;
	}
	fflush(stdout);
}

/*
 * Each turn of the loop: wait for a signal or the next timer; reap dead
 * workers; reload if asked; start workers whose restart delay is over;
 * in a stop, kill what outlives the deadline; ping the watchdog; and end
 * when a stop or a drain has no worker left.
 */
static void
supervisor_loop(struct supervisor *s)
{
	int64_t watchdog = notify_watchdog_ms() / 2, next_ping = 0;
	int64_t next_status = 0, next_progress = 0;
	bool tty = !s->opts->drain ? false : isatty(STDOUT_FILENO);

	for (;;) {
		int64_t now = now_ms(), next = now + 1000;
		bool reload = false, pending;

		supervisor_restart_due(s, now, &next);
		if (s->stopping && !s->killed && now >= s->stop_deadline_ms) {
			if (supervisor_running(s, &pending) > 0)
				log_warnx("stop_timeout passed: telling the "
				    "remaining workers to roll back and exit");
			supervisor_signal_all(s, SIGQUIT, false);
			s->killed = true;
		}
		if (s->killed && now >= s->stop_deadline_ms + STOP_KILL_GRACE_MS)
			supervisor_signal_all(s, SIGKILL, false);
		if (supervisor_running(s, &pending) == 0 && !pending &&
		    (s->stopping || s->opts->drain))
			break;
		if (watchdog > 0 && now >= next_ping) {
			notify_watchdog();
			next_ping = now + watchdog;
		}
		if (now >= next_status) {
			supervisor_status(s);
			next_status = now + 5000;
		}
		if (tty && now >= next_progress) {
			supervisor_progress(s, false);
			next_progress = now + 1000;
		}
		struct pollfd p = { .fd = s->sigfd, .events = POLLIN };
		int64_t wait = next - now;
		if (watchdog > 0 && next_ping - now < wait)
			wait = next_ping - now;
		if (poll(&p, 1, (int)(wait < 0 ? 0 : wait)) == -1 &&
		    errno != EINTR)
			log_warn("poll");
		supervisor_read_signals(s, &reload);
		if (reload && !s->stopping)
			supervisor_reload(s);
	}
	if (tty)
		supervisor_progress(s, true);
}

/* Runs until stopped (or drained); takes ownership of cfg. */
int
supervisor_run(struct config *cfg, const struct run_options *opts)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP };
	struct supervisor s = { .opts = opts, .exit_code = ROWQ_EXIT_OK };

	s.started_ms = now_ms();
	s.sigfd = proc_signalfd(sigs, sizeof(sigs) / sizeof(sigs[0]));
	s.slots = xcalloc(SLOTS_MAX, sizeof(*s.slots));
	s.stats = mmap(NULL, SLOTS_MAX * sizeof(*s.stats),
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s.stats == MAP_FAILED)
		fatal("mmap");
	proc_title("rowq: supervisor");
	supervisor_start_generation(&s, cfg);
	notify_ready();
	log_info("started %d worker(s) for %zu queue(s)",
	    s.gens[0]->live, cfg->nqueues);
	supervisor_loop(&s);
	if (opts->drain)
		supervisor_summary(&s);
	else
		log_info("stopped");
	for (int i = 0; i < s.ngens; i++) {
		config_free(s.gens[i]->cfg);
		free(s.gens[i]);
	}
	for (size_t i = 0; i < s.ntotals; i++)
		free(s.totals[i].queue);
	free(s.totals);
	free(s.slots);
	munmap(s.stats, SLOTS_MAX * sizeof(*s.stats));
	close(s.sigfd);
	return s.exit_code;
}
