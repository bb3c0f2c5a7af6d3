/*
 * prune_daemon.c: the daemon's prunes.  Each queue with prune: gets a
 * run every every:, in a short-lived child of the supervisor (as the
 * metrics probe), so that a slow DELETE never stalls the supervisor's
 * loop and a run that crashes takes nothing else with it.  The child
 * writes how the run goes into memory shared with the supervisor, which
 * shows the last run in `rowq status` and counts the rows in the metrics.
 * A queue's next run waits until its last one has ended.
 */
#include "rowq.h"
#include "db.h"
#include "supervisor.h"
#include "prune.h"
#include "runs.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The first run after the start: every:, but no later than this. */
#define PRUNE_FIRST_MAX_MS	60000
/* At a stop, how long a run may take to finish its chunk. */
#define PRUNE_STOP_WAIT_MS	3000

/* One queue's prunes, by name, so that they outlive a reload. */
struct prune_record {
	char			 queue[80];	/* 64 at most, and a NUL */
	struct prune_result	 last;		/* the child writes it */
	volatile int64_t	 wall_ms;	/* the last run's start */
	volatile uint64_t	 total_rows;	/* since the daemon started */
};

struct pruner {
	struct prune_record	*rec;		/* QUEUES_MAX, shared */
	size_t			 nrec;
	pid_t			 pid[QUEUES_MAX];	/* 0: no run */
	int64_t			 next_ms[QUEUES_MAX];
	int64_t			 started_ms[QUEUES_MAX];
	bool			 termed[QUEUES_MAX];
};

/* The index of queue's record in *index, made if it is new; -1 when full. */
static int
prune_record(struct pruner *p, const char *queue, size_t *index)
{
	size_t i;

	for (i = 0; i < p->nrec; i++)
		if (strcmp(p->rec[i].queue, queue) == 0)
			break;
	if (i == p->nrec) {
		if (p->nrec == QUEUES_MAX)
			return -1;
		snprintf(p->rec[i].queue, sizeof(p->rec[i].queue), "%s", queue);
		p->nrec++;
	}
	*index = i;
	return 0;
}

/*
 * The run log's old runs, after the queue's own prune: with a lock of
 * their own, not needed: two daemons that prune them at once remove each
 * old run once.  A failure is said, and the next round tries again.
 */
static void
prune_child_runs(struct db *db, const struct queue *q, struct stopper *stopper)
{
	unsigned long long rows = 0;
	char err[300];

	if (runs_prune(db, q, stopper, &rows, err, sizeof(err)) == -1)
		log_warnx("%s: %s; next round in %llds", q->runs.where, err,
		    (long long)q->prune.every_ms / 1000);
	else if (rows > 0)
		log_info("run log: removed %llu run%s older than keep:", rows,
		    rows == 1 ? "" : "s");
}

/* The child: connect, run, log what it did, exit 0 (or 1: failed). */
static _Noreturn void
prune_child(const struct config *cfg, const struct queue *q,
    struct prune_record *rec)
{
	struct prune_result *r = &rec->last;
	uint64_t counted = 0;
	struct stopper stopper;
	enum db_status st;
	struct db *db;

	log_procinit("prune %s", q->name);
	stopper_init(&stopper, true);
	db = db_open(&cfg->db, &st);
	if (st != DB_OK) {
		r->end = PRUNE_FAILED;
		snprintf(r->error, sizeof(r->error), "cannot connect: %s",
		    db_error(db));
		log_warnx("%s: %s; next round in %llds", q->prune.enabled ?
		    q->prune.where : q->runs.where, r->error, (long long)q->prune.every_ms / 1000);
		_exit(ROWQ_EXIT_FAILURE);
	}
	if (q->prune.enabled)
		prune_run(db, q, &stopper, NULL, NULL, r);
	else
		r->end = PRUNE_DONE;
	if (q->runs.enabled && r->end != PRUNE_STOPPED && !stopper.stop)
		prune_child_runs(db, q, &stopper);
	counted = r->rows;
	rec->total_rows += counted;
	db_close(db);
	if (!q->prune.enabled)
		_exit(0);
	switch (r->end) {
	case PRUNE_SKIPPED:
		log_info("prune skipped: another rowq is pruning this queue");
		_exit(0);
	case PRUNE_DONE:
	case PRUNE_STOPPED:
		log_info("pruned %llu rows in %llu chunks, %.1fs%s",
		    (unsigned long long)r->rows, (unsigned long long)r->chunks,
		    (double)r->ms / 1000, r->end == PRUNE_STOPPED ?
		    " (stopped)" : "");
		_exit(0);
	default:
		log_error("%s: prune stopped after %llu rows in %llu chunks: "
		    "%s; next round in %llds", q->prune.where,
		    (unsigned long long)r->rows, (unsigned long long)r->chunks,
		    r->error, (long long)q->prune.every_ms / 1000);
		_exit(ROWQ_EXIT_FAILURE);
	}
}

static void
prune_fork(struct supervisor *s, const struct queue *q, size_t i,
    int64_t now)
{
	struct pruner *p = s->pruner;
	struct prune_record *rec = &p->rec[i];
	pid_t pid, parent = getpid();

	memset(&rec->last, 0, sizeof(rec->last));
	rec->last.end = PRUNE_RUNNING;
	rec->wall_ms = wall_ms();
	pid = fork();
	if (pid == -1) {
		log_warn("fork for the prune of %s", q->name);
		rec->last.end = PRUNE_FAILED;
		snprintf(rec->last.error, sizeof(rec->last.error), "fork failed");
		p->next_ms[i] = now + q->prune.every_ms;
		return;
	}
	if (pid == 0) {
		proc_helper_child(parent);
		proc_title("rowq: prune %s", q->name);
		prune_child(s->current->cfg, q, rec);
	}
	p->pid[i] = pid;
	p->started_ms[i] = now;
	p->termed[i] = false;
}

static void
prune_daemon_start(struct supervisor *s)
{
	struct pruner *p = xcalloc(1, sizeof(*p));

	p->rec = mmap(NULL, QUEUES_MAX * sizeof(*p->rec),
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p->rec == MAP_FAILED)
		fatal("mmap");
	s->pruner = p;
}

/*
 * Each tick: during a stop, ask running prunes to stop after their chunk;
 * otherwise start the run of each current queue that is due and has none
 * running.  The first is due every: after the start, or within a minute.
 */
static void
prune_daemon_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	const struct config *cfg = s->current->cfg;
	struct pruner *p = s->pruner;

	if (p == NULL)
		return;
	if (s->stopping) {
		for (size_t i = 0; i < p->nrec; i++)
			if (p->pid[i] > 0 && !p->termed[i]) {
				kill(p->pid[i], SIGTERM);
				p->termed[i] = true;
			}
		return;
	}
	for (size_t k = 0; k < cfg->nqueues; k++) {
		const struct queue *q = &cfg->queues[k];
		size_t i;
		if ((!q->prune.enabled && !q->runs.enabled) ||
		    prune_record(p, q->name, &i) == -1)
			continue;
		if (p->next_ms[i] == 0)
			p->next_ms[i] = now + (q->prune.every_ms <
			    PRUNE_FIRST_MAX_MS ? q->prune.every_ms :
			    PRUNE_FIRST_MAX_MS);
		if (p->pid[i] == 0 && now >= p->next_ms[i]) {
			prune_fork(s, q, i, now);
			p->next_ms[i] = now + q->prune.every_ms;
		}
		if (p->pid[i] == 0 && p->next_ms[i] < *next)
			*next = p->next_ms[i];
	}
}

/* A run that ended: one that died without saying so is a failed one. */
static bool
prune_daemon_reaped(struct supervisor *s, pid_t pid, int status)
{
	struct pruner *p = s->pruner;
	int64_t now = now_ms();

	if (p == NULL || pid <= 0)
		return false;
	for (size_t i = 0; i < p->nrec; i++) {
		struct prune_record *rec = &p->rec[i];
		if (p->pid[i] != pid)
			continue;
		p->pid[i] = 0;
		if (rec->last.end == PRUNE_RUNNING) {
			rec->last.end = PRUNE_FAILED;
			supervisor_describe_death(status, rec->last.error,
			    sizeof(rec->last.error));
			log_warnx("prune of %s: %s", rec->queue,
			    rec->last.error);
		}
		/*
		 * A run that outlasted every: removed what there was: the
		 * next waits a whole every: from now, not none.
		 */
		if (p->next_ms[i] < now)
			p->next_ms[i] = now + (p->next_ms[i] - p->started_ms[i]);
		return true;
	}
	return false;
}

/* The stop: runs were asked to stop; wait a little, then kill them. */
static void
prune_daemon_stop(struct supervisor *s)
{
	struct pruner *p = s->pruner;
	int64_t deadline = now_ms() + PRUNE_STOP_WAIT_MS;

	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nrec; i++) {
		if (p->pid[i] <= 0)
			continue;
		kill(p->pid[i], SIGTERM);
		while (waitpid(p->pid[i], NULL, WNOHANG) == 0) {
			if (now_ms() >= deadline) {
				kill(p->pid[i], SIGKILL);
				(void)waitpid(p->pid[i], NULL, 0);
				break;
			}
			usleep(10000);
		}
		p->pid[i] = 0;
	}
	munmap(p->rec, QUEUES_MAX * sizeof(*p->rec));
	free(p);
	s->pruner = NULL;
}

/* Rows the daemon's runs removed from the queue, for the metrics. */
uint64_t
prune_daemon_total(struct supervisor *s, const char *queue)
{
	struct pruner *p = s->pruner;

	if (p == NULL)
		return 0;
	for (size_t i = 0; i < p->nrec; i++)
		if (strcmp(p->rec[i].queue, queue) == 0)
			return p->rec[i].total_rows;
	return 0;
}

/* The status socket's fields of the queue's last prune (none: no prune). */
void
prune_daemon_status(struct supervisor *s, const char *queue, struct buf *b)
{
	struct pruner *p = s->pruner;
	const struct prune_record *rec = NULL;

	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nrec; i++)
		if (strcmp(p->rec[i].queue, queue) == 0)
			rec = &p->rec[i];
	if (rec == NULL)
		return;
	buf_printf(b, "\tprune=%s\tprune_rows=%llu\tprune_chunks=%llu"
	    "\tprune_ms=%lld\tprune_ago=%lld\tpruned_total=%llu\tprune_error=",
	    prune_end_name(rec->last.end),
	    (unsigned long long)rec->last.rows,
	    (unsigned long long)rec->last.chunks, (long long)rec->last.ms,
	    (long long)(wall_ms() - rec->wall_ms) / 1000,
	    (unsigned long long)rec->total_rows);
	for (const char *c = rec->last.error; *c; c++)
		buf_putc(b, (*c == '\t' || *c == '\n') ? ' ' : *c);
}

const struct supervisor_part prune_daemon_part = {
	.name = "prune",
	.start = prune_daemon_start,
	.stop = prune_daemon_stop,
	.tick = prune_daemon_tick,
	.reaped = prune_daemon_reaped,
};
