/*
 * schedule_daemon.c: the daemon's schedules.  One helper child, the
 * scheduler, runs every schedule of the current generation on a
 * connection of its own, so that a slow database never holds up the
 * supervisor: it computes each schedule's next slot itself, sleeps until
 * the first is due, and then runs that schedule's transaction
 * (schedule_db.c), which decides on the server's clock what is due and
 * inserts it, once across every daemon.  An idle daemon pays no
 * statement at all for its schedules: it sleeps until a slot is due.
 * Each transaction is reported on a pipe (struct schedule_report), and
 * the supervisor keeps what the reports say, by schedule name, for `rowq
 * status` and the metrics.
 *
 * The scheduler's session ends an idle transaction after
 * SCHEDULE_IDLE_TRANSACTION_S, so that a daemon frozen inside
 * one (SIGSTOP, a stalled VM) holds a schedule's row for that long only:
 * the server rolls it back and another daemon's transaction goes on.
 */
#include "rowq.h"
#include "db.h"
#include "dialect.h"
#include "schedule.h"
#include "supervisor.h"
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A scheduler that died starts again this long after. */
#define SCHEDULE_RESTART_MS		1000
/*
 * After a failed connection: 1 s, 2 s, 4 s ... 10 s, so that a database
 * back within the minute a slot is on time gets its slots on time.
 */
#define SCHEDULE_RETRY_MS		1000
#define SCHEDULE_RETRY_MAX_MS		10000
/* A deadlock or lock wait: again after this, doubled up to the max. */
#define SCHEDULE_LOCK_RETRY_MS		100
#define SCHEDULE_LOCK_RETRY_MAX_MS	2000
/* A failing insert: again after 1 s, 2 s, 4 s ... up to a minute. */
#define SCHEDULE_FAIL_MIN_MS		1000
#define SCHEDULE_FAIL_MAX_MS		60000
/* The scheduler wakes at least this often, for a clock that stepped. */
#define SCHEDULE_SLEEP_MAX_MS		60000
/* A transaction that found nothing due yet waits at least this long. */
#define SCHEDULE_EARLY_MS		50
#define SCHEDULE_IDLE_TRANSACTION_S	5

/* One report of the scheduler, written whole to its pipe (< PIPE_BUF). */
struct schedule_report {
	int		 generation;
	int		 index;		/* in the generation's config */
	int64_t		 last_slot;
	int64_t		 last_inserted;	/* -1: none yet */
	int64_t		 next;		/* -1: none */
	uint64_t	 skipped_total;	/* the table's, every daemon's */
	uint32_t	 inserted;	/* by this transaction */
	uint32_t	 skipped;
	bool		 paused;
	bool		 failing;	/* error says why */
	char		 error[200];
};

/* What the reports said of one schedule, by name (it outlives a reload). */
struct schedule_view {
	char		 name[80];
	bool		 known;		/* a report came */
	int64_t		 last_slot;
	int64_t		 last_inserted;
	int64_t		 next;
	uint64_t	 skipped_total;
	uint64_t	 inserted;	/* by this daemon since it started */
	uint64_t	 skipped;
	bool		 paused;
	char		 error[200];	/* "": the last transaction went */
};

struct scheduler {
	struct helper_child	 child;
	size_t			 nviews;
	struct schedule_view	 view[SCHEDULES_MAX];
};

/* ---- the scheduler child ---- */

/* What the child keeps of each schedule. */
struct schedule_turn {
	int64_t		 due_ms;	/* our clock: when to run it */
	int		 failures;	/* in a row */
	int		 lock_waits;	/* in a row */
	bool		 failing;	/* said so in the log */
};

/* Connect, set the session, prepare; NULL: logged when it begins. */
static struct db *
schedule_connect(const struct config *cfg, struct schedule_conn *c,
    bool *failing)
{
	enum db_status st;
	struct db *db = db_open(&cfg->db, &st);
	struct buf sql = { 0 };

	/* Where only wait_timeout bounds an idle transaction, the loop
	 * sets it (schedule_wait_timeout). */
	if (st == DB_OK && db_dialect(db)->idle_transaction[0] != NULL) {
		dialect_session_idle(db_dialect(db), &sql, NULL,
		    SCHEDULE_IDLE_TRANSACTION_S);
		if ((st = db_run(db, sql.data)) == DB_FATAL) {
			log_warnx("cannot limit the scheduler's idle "
			    "transactions (%s): a frozen daemon holds its "
			    "schedule until the server's own limit",
			    db_error(db));
			st = DB_OK;
		}
		buf_free(&sql);
	}
	if (st == DB_OK)
		st = schedule_conn_open(c, db, cfg);
	if (st == DB_OK) {
		if (*failing)
			log_info("running the schedules again");
		*failing = false;
		return db;
	}
	if (!*failing)
		log_warnx("cannot connect to run the schedules: %s; trying "
		    "again, every %ds at most", db_error(db),
		    SCHEDULE_RETRY_MAX_MS / 1000);
	*failing = true;
	schedule_conn_close(c);
	db_close(db);
	return NULL;
}

static void
schedule_report_send(int out, int generation, size_t i,
    const struct schedule_outcome *o, const char *error)
{
	struct schedule_report r = {
		.generation = generation,
		.index = (int)i,
		.last_slot = o->last_slot,
		.last_inserted = o->last_inserted,
		.next = o->next,
		.skipped_total = o->skipped_total,
		.inserted = (uint32_t)o->inserted,
		.skipped = (uint32_t)o->skipped,
		.paused = o->paused,
		.failing = error != NULL,
	};

	if (error != NULL)
		snprintf(r.error, sizeof(r.error), "%s", error);
	if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(0);	/* the supervisor is gone */
}

/*
 * After a transaction that failed: a lost link connects again; a lock
 * wait or deadlock tries again soon; anything else (the insert is
 * broken, the table was changed) is logged once and tried with backoff,
 * while the slots age: those that pass the window are skipped then.
 * Returns whether the connection must go.
 */
static bool
schedule_failed(struct db *db, const struct schedule *s,
    struct schedule_turn *t, enum db_status st, int64_t now, char *why,
    size_t len)
{
	snprintf(why, len, "%s", db_error(db));
	if (st == DB_RECONNECT || db_link_closed(db) || db_no_such_table(db)) {
		log_warnx("%s: %s; connecting again", s->name, why);
		return true;
	}
	if (st == DB_RETRY) {
		t->due_ms = now + backoff_capped_ms(SCHEDULE_LOCK_RETRY_MS,
		    SCHEDULE_LOCK_RETRY_MAX_MS, ++t->lock_waits);
		log_debug("%s: %s; again soon", s->name, why);
		return false;
	}
	if (!t->failing)
		log_error("%s: %s", s->insert.where != NULL ? s->insert.where :
		    s->name, why);
	t->failing = true;
	t->due_ms = now + backoff_capped_ms(SCHEDULE_FAIL_MIN_MS,
	    SCHEDULE_FAIL_MAX_MS, ++t->failures);
	return false;
}

/* The next run of a schedule after a transaction that went through. */
static void
schedule_went(const struct schedule *s, struct schedule_turn *t,
    const struct schedule_outcome *o, int64_t now, int64_t offset_ms)
{
	if (t->failing)
		log_info("%s: inserting again", s->name);
	t->failing = false;
	t->failures = t->lock_waits = 0;
	if (o->more)
		t->due_ms = now;
	else if (o->next < 0)
		t->due_ms = INT64_MAX;
	else
		t->due_ms = o->next * 1000 - offset_ms;
	/* Our clock ahead of the server's: not again at once. */
	if (o->inserted + o->skipped == 0 && !o->created &&
	    t->due_ms < now + SCHEDULE_EARLY_MS)
		t->due_ms = now + SCHEDULE_EARLY_MS;
}

static void
schedule_disconnect(struct schedule_conn *c, struct db **db)
{
	schedule_conn_close(c);
	db_close(*db);
	*db = NULL;
}

/*
 * A server whose only bound on an idle transaction is wait_timeout
 * (MySQL, dialect.h): the session's is SCHEDULE_IDLE_TRANSACTION_S while
 * a transaction may run, and raised for a sleep of sleep_ms (0: none
 * coming), so that the session outlives the sleep.  *now_s is what it
 * is set to (0: the server's own).  A lost link is returned; a refusal
 * is not (the server's own limit then applies).
 */
static enum db_status
schedule_wait_timeout(struct db *db, int64_t sleep_ms, int *now_s)
{
	int want = SCHEDULE_IDLE_TRANSACTION_S + (int)((sleep_ms + 999) / 1000);
	char sql[64];
	enum db_status st;

	if (db_dialect(db)->idle_transaction[0] != NULL || *now_s == want)
		return DB_OK;
	snprintf(sql, sizeof(sql), "SET SESSION wait_timeout = %d", want);
	if ((st = db_run(db, sql)) == DB_RECONNECT)
		return st;
	*now_s = st == DB_OK ? want : 0;
	return DB_OK;
}

/*
 * The scheduler: each turn runs the transaction of the schedule due
 * first, if it is due, and otherwise sleeps until it is (or a minute at
 * most).  Every schedule runs once at the start, which reads (or
 * creates) its row.  It exits when the supervisor no longer reads its
 * reports.
 */
static _Noreturn void
schedule_child(const struct config *cfg, int generation, int out)
{
	size_t n = cfg->nschedules;
	struct schedule_turn *turn = xcalloc(n, sizeof(*turn));
	struct schedule_conn conn;
	struct db *db = NULL;
	bool failing = false;
	int connects = 0;	/* failed, in a row */
	int64_t offset_ms = 0;	/* the server's clock minus ours */
	int wait_s = 0;		/* schedule_wait_timeout's */
	char why[200];

	log_procinit("schedules");
	proc_title("rowq: schedules");
	memset(&conn, 0, sizeof(conn));
	for (;;) {
		struct schedule_outcome o;
		int64_t now = wall_ms();
		size_t i = 0;
		enum db_status st;

		if (db == NULL) {
			wait_s = 0;
			db = schedule_connect(cfg, &conn, &failing);
		}
		if (db == NULL) {
			usleep((useconds_t)backoff_capped_ms(SCHEDULE_RETRY_MS,
			    SCHEDULE_RETRY_MAX_MS, ++connects) * 1000);
			continue;
		}
		connects = 0;
		for (size_t k = 1; k < n; k++)
			if (turn[k].due_ms < turn[i].due_ms)
				i = k;
		if (turn[i].due_ms > now) {
			int64_t wait = turn[i].due_ms - now;
			if (wait > SCHEDULE_SLEEP_MAX_MS)
				wait = SCHEDULE_SLEEP_MAX_MS;
			if (schedule_wait_timeout(db, wait, &wait_s) != DB_OK) {
				log_warnx("%s; connecting again", db_error(db));
				schedule_disconnect(&conn, &db);
				continue;
			}
			usleep((useconds_t)wait * 1000);
			continue;
		}
		if ((st = schedule_wait_timeout(db, 0, &wait_s)) == DB_OK &&
		    (st = schedule_txn(&conn, i, &o)) == DB_OK) {
			offset_ms = o.now_ms - wall_ms();
			schedule_went(&cfg->schedules[i], &turn[i], &o, now,
			    offset_ms);
			schedule_report_send(out, generation, i, &o, NULL);
			continue;
		}
		if (schedule_failed(db, &cfg->schedules[i], &turn[i], st, now,
		    why, sizeof(why)))
			schedule_disconnect(&conn, &db);
		schedule_report_send(out, generation, i, &o, why);
	}
}

/* ---- the supervisor's side ---- */

static void
schedule_daemon_fork(struct supervisor *s)
{
	struct scheduler *sc = s->scheduler;
	pid_t pid, parent = getpid();
	int up[2];

	if (pipe2(up, O_CLOEXEC) == -1) {
		log_warn("pipe for the scheduler");
		sc->child.next_start_ms = now_ms() + SCHEDULE_RESTART_MS;
		return;
	}
	pid = fork();
	if (pid == -1) {
		log_warn("fork for the scheduler");
		close(up[0]);
		close(up[1]);
		sc->child.next_start_ms = now_ms() + SCHEDULE_RESTART_MS;
		return;
	}
	if (pid == 0) {
		/* Its reports go to descriptor 1, below those closed. */
		if (dup2(up[1], 1) == -1)
			_exit(1);
		proc_helper_child(parent);
		schedule_child(s->current->cfg, s->current->number, 1);
	}
	close(up[1]);
	(void)fcntl(up[0], F_SETFL, O_NONBLOCK);
	sc->child.pid = pid;
	sc->child.fd = up[0];
	sc->child.generation = s->current->number;
}

static void
schedule_daemon_start(struct supervisor *s)
{
	s->scheduler = xcalloc(1, sizeof(*s->scheduler));
	s->scheduler->child.fd = -1;
}

/* The view of a schedule, by name; a new one when there is room. */
static struct schedule_view *
schedule_daemon_view(struct scheduler *sc, const char *name)
{
	for (size_t i = 0; i < sc->nviews; i++)
		if (strcmp(sc->view[i].name, name) == 0)
			return &sc->view[i];
	if (sc->nviews == SCHEDULES_MAX)
		return NULL;
	struct schedule_view *v = &sc->view[sc->nviews++];
	snprintf(v->name, sizeof(v->name), "%s", name);
	v->last_slot = v->last_inserted = v->next = -1;
	return v;
}

static void
schedule_daemon_apply(struct supervisor *s, const struct schedule_report *r)
{
	const struct config *cfg = s->current->cfg;
	struct schedule_view *v;

	if (r->generation != s->current->number || r->index < 0 ||
	    (size_t)r->index >= cfg->nschedules ||
	    (v = schedule_daemon_view(s->scheduler,
	    cfg->schedules[r->index].name)) == NULL)
		return;
	v->inserted += r->inserted;
	v->skipped += r->skipped;
	if (r->failing) {
		memcpy(v->error, r->error, sizeof(v->error));
		v->error[sizeof(v->error) - 1] = '\0';
		return;
	}
	v->known = true;
	v->error[0] = '\0';
	v->last_slot = r->last_slot;
	v->last_inserted = r->last_inserted;
	v->next = r->next;
	v->skipped_total = r->skipped_total;
	v->paused = r->paused;
}

static void
schedule_daemon_handle(struct supervisor *s, const struct pollfd *p,
    nfds_t np)
{
	struct helper_child *h = &s->scheduler->child;
	struct schedule_report r;
	ssize_t n;

	if (np == 0 || h->fd == -1 || p[0].revents == 0)
		return;
	while ((n = read(h->fd, &r, sizeof(r))) == (ssize_t)sizeof(r))
		schedule_daemon_apply(s, &r);
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
		close(h->fd);
		h->fd = -1;
	}
}

static void
schedule_daemon_poll_fds(struct supervisor *s, struct pollfd *p, nfds_t *np)
{
	helper_child_poll_fd(&s->scheduler->child, p, np);
}

static bool
schedule_daemon_reaped(struct supervisor *s, pid_t pid, int status)
{
	struct helper_child *h;

	/* Asked of every part, those a drain left out included. */
	if (s->scheduler == NULL)
		return false;
	h = &s->scheduler->child;
	if (!helper_child_reaped(h, pid, SCHEDULE_RESTART_MS))
		return false;
	if (!s->stopping) {
		struct buf b = { 0 };
		describe_wait_status(status, &b);
		log_warnx("the scheduler exited (%s); starting it again",
		    b.data);
		buf_free(&b);
	}
	return true;
}

/*
 * Start the scheduler when the current generation has schedules and it
 * is due; after a reload, replace the one that runs the old
 * generation's.
 */
static void
schedule_daemon_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	struct helper_child *h = &s->scheduler->child;

	if (s->stopping)
		return;
	helper_child_retire(h, s->current->number);
	if (h->pid == 0 && h->fd != -1) {
		close(h->fd);
		h->fd = -1;
	}
	if (s->current->cfg->nschedules > 0 && helper_child_due(h, now, next))
		schedule_daemon_fork(s);
}

static void
schedule_daemon_stop(struct supervisor *s)
{
	struct helper_child *h;

	if (s->scheduler == NULL)
		return;		/* a drain, which runs no schedule */
	h = &s->scheduler->child;
	helper_child_kill(h);
	if (h->fd != -1)
		close(h->fd);
	free(s->scheduler);
	s->scheduler = NULL;
}

/* The status socket's line for each schedule of the current generation. */
void
schedule_daemon_status(struct supervisor *s, struct buf *b)
{
	const struct config *cfg = s->current->cfg;

	for (size_t i = 0; s->scheduler != NULL && i < cfg->nschedules; i++) {
		const struct schedule_view *v = schedule_daemon_view(
		    s->scheduler, cfg->schedules[i].name);
		if (v == NULL)
			continue;
		buf_printf(b, "schedule\tschedule=%s\tknown=%d\tlast_slot=%lld"
		    "\tlast_inserted=%lld\tnext_slot=%lld\tinserted=%llu"
		    "\tskipped=%llu\tpaused=%d\terror=", v->name, v->known,
		    (long long)v->last_slot, (long long)v->last_inserted,
		    (long long)v->next, (unsigned long long)v->inserted,
		    (unsigned long long)v->skipped, v->paused);
		for (const char *c = v->error; *c != '\0'; c++)
			buf_putc(b, *c == '\t' || *c == '\n' ? ' ' : *c);
		buf_putc(b, '\n');
	}
}

/* The metrics of the current generation's schedules. */
void
schedule_daemon_metrics(struct supervisor *s, struct buf *b)
{
	const struct config *cfg = s->current->cfg;
	struct metrics_schedule *m;

	if (s->scheduler == NULL || cfg->nschedules == 0)
		return;
	m = xcalloc(cfg->nschedules, sizeof(*m));
	for (size_t i = 0; i < cfg->nschedules; i++) {
		const struct schedule_view *v = schedule_daemon_view(
		    s->scheduler, cfg->schedules[i].name);
		m[i].name = cfg->schedules[i].name;
		m[i].last_slot = v != NULL ? v->last_inserted : -1;
		m[i].inserted = v != NULL ? v->inserted : 0;
		m[i].skipped = v != NULL ? v->skipped : 0;
		m[i].paused = v != NULL && v->paused;
	}
	metrics_render_schedules(b, m, cfg->nschedules);
	free(m);
}

const struct supervisor_part schedule_daemon_part = {
	.name = "schedules",
	.poll_max = 1,
	.start = schedule_daemon_start,
	.stop = schedule_daemon_stop,
	.tick = schedule_daemon_tick,
	.poll_fds = schedule_daemon_poll_fds,
	.handle = schedule_daemon_handle,
	.reaped = schedule_daemon_reaped,
};
