/*
 * console.c: the web console (console:), a helper child of the
 * supervisor's own, and the supervisor's part that starts it.
 *
 * The console serves HTTP (console_http.c) in a process of its own, with
 * its own database connection: a slow query, a slow client or a crash
 * there never holds up the supervisor or a worker.  It learns the
 * supervisor's live figures as `rowq status` does, from the status
 * socket, at most every CONSOLE_LIVE_MS however many pages are asked
 * for, and what the database says of the queues at most every
 * CONSOLE_DB_MS; the charts come from the history that the supervisor
 * keeps in memory it shares with the console (history.c), and the
 * sessions live in memory shared the same way, so that a console started
 * again (it died, or a reload replaced it) keeps its users logged in.
 * It writes the daemon's row of the daemons table (heartbeat.c).
 *
 * A console that dies is started again after CONSOLE_RESTART_MS, or
 * later when it keeps dying at once (a port taken, a broken users file).
 */
#include "rowq.h"
#include "console.h"
#include "db.h"
#include "supervisor.h"
#include "commands.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define CONSOLE_RESTART_MS	1000
#define CONSOLE_RESTART_MAX_MS	30000
/* A console that lived this long before dying starts again at once. */
#define CONSOLE_QUICK_MS	10000
/* After a failed connection: wait this long before the next. */
#define CONSOLE_DB_RETRY_MS	2000
/* At the daemon's stop, the console's last heartbeat gets this long. */
#define CONSOLE_LAST_HEARTBEAT_MS	2000

/* The supervisor's side. */
struct console_link {
	struct helper_child	 child;
	struct console_sessions	*sessions;	/* shared with the child */
	int64_t			 started_ms;
	int			 quick_deaths;
	bool			 replacing;	/* killed by us after a reload */
};

/* ---- the child ---- */

/*
 * The connection, opened when it is needed and not open; NULL while
 * the database is away (tried again after CONSOLE_DB_RETRY_MS).  Its
 * reads are READ COMMITTED, as every rowq session's, and each request
 * ends its transaction (console_route), so that no metadata lock stays.
 */
struct db *
console_db(struct console *c)
{
	enum db_status st;

	if (c->db != NULL && db_link_closed(c->db)) {
		db_close(c->db);
		c->db = NULL;
	}
	c->db_used = true;
	if (c->db != NULL || now_ms() < c->db_retry_ms)
		return c->db;
	c->db = db_open(&c->cfg->db, &st);
	if (st != DB_OK) {
		log_warnx("cannot connect: %s", db_error(c->db));
		db_close(c->db);
		c->db = NULL;
		c->db_retry_ms = now_ms() + CONSOLE_DB_RETRY_MS;
	}
	return c->db;
}

/*
 * The queues as `rowq status` sees them, read again when they are older
 * than CONSOLE_DB_MS (the database) or CONSOLE_LIVE_MS (the daemon's
 * figures).  Never NULL; db_ok false in each queue the database did not
 * answer for.
 */
const struct console_view *
console_view(struct console *c)
{
	struct console_view *v = &c->view;
	const struct config *cfg = c->cfg;
	int64_t now = now_ms();
	struct db *db;

	(void)console_live_view(c);
	if (now - v->db_ms >= CONSOLE_DB_MS && (db = console_db(c)) != NULL) {
		pause_list_free(&v->paused);
		for (size_t k = 0; k < v->n; k++)
			v->q[k].pause = NULL;
		(void)status_read_db(db, cfg, v->q, v->n, &v->paused,
		    &v->link);
		(void)db_rollback(db);
		v->db_ms = now;
		/* Ready and in progress: the database's rows less the busy. */
		status_live_split(&v->live, v->q, v->n);
	}
	return v;
}

/*
 * The daemon's own figures only (its status socket), read again when
 * older than CONSOLE_LIVE_MS: what the heartbeat needs, without the
 * database's reads of every queue.
 */
const struct console_view *
console_live_view(struct console *c)
{
	struct console_view *v = &c->view;
	const struct config *cfg = c->cfg;
	int64_t now = now_ms();

	if (v->q == NULL) {
		v->q = xcalloc(cfg->nqueues, sizeof(*v->q));
		v->n = cfg->nqueues;
		for (size_t k = 0; k < v->n; k++)
			v->q[k].q = &cfg->queues[k];
	}
	if (now - v->live_ms >= CONSOLE_LIVE_MS) {
		status_live_free(&v->live);
		memset(&v->live, 0, sizeof(v->live));
		status_live_load(&v->live, cfg);
		status_live_split(&v->live, v->q, v->n);
		v->live_ms = now;
	}
	return v;
}

/* The figures are to be read again at the next page (after an action). */
void
console_view_stale(struct console *c)
{
	c->view.db_ms = c->view.live_ms = 0;
}

/* Set by SIGTERM (console_stop): the last heartbeat goes, then exit. */
static volatile sig_atomic_t console_stopping;

static void
console_on_term(int sig)
{
	(void)sig;
	console_stopping = 1;
}

/* No SA_RESTART: the loop's poll returns, and sees it at once. */
static void
console_catch_term(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = console_on_term;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGTERM, &sa, NULL);
}

/* The daemon stops: its row says nothing runs here now (heartbeat.c). */
static _Noreturn void
console_exit_stopping(struct console *c)
{
	heartbeat_last(&c->heartbeat, c);
	_exit(0);
}

/*
 * daemons_table: without console:, so that the consoles of other daemons
 * list this one: the heartbeat alone, no listener.
 */
static _Noreturn void
console_heartbeat_only(struct console *c)
{
	proc_title("rowq: heartbeat");
	heartbeat_init(&c->heartbeat);
	console_catch_term();
	for (;;) {
		int64_t now = now_ms(), next = now + 1000;
		if (console_stopping)
			console_exit_stopping(c);
		heartbeat_tick(&c->heartbeat, c, now, &next);
		(void)poll(NULL, 0, (int)(next > now ? next - now : 0));
		if (getppid() == 1)
			_exit(0);
	}
}

/*
 * The console's loop: serve HTTP (the library's timers included) and
 * write the heartbeat when it is due, until the supervisor is gone.
 */
static _Noreturn void
console_child(const struct config *cfg, int generation,
    struct console_sessions *sessions, const struct history *history,
    int64_t started_wall_ms)
{
	struct console c = { .cfg = cfg, .generation = generation,
	    .sessions = sessions, .history = history,
	    .started_wall_ms = started_wall_ms };
	struct buf why = { 0 };

	log_procinit("console");
	proc_title("rowq: console");
	if (!cfg->console.on)
		console_heartbeat_only(&c);
	if (console_users_load(cfg->console.users_file, &c.users, &why) == -1) {
		log_error("users_file: %s", why.data);
		_exit(ROWQ_EXIT_CONFIG);
	}
	buf_free(&why);
	c.throttle = xcalloc(1, sizeof(*c.throttle));
	console_sessions_recheck(sessions, &c.users);
	c.http = console_http_start(&c);
	if (c.http == NULL)
		_exit(ROWQ_EXIT_FAILURE);
	heartbeat_init(&c.heartbeat);
	console_catch_term();
	for (;;) {
		int64_t now = now_ms(), next = now + 1000;
		struct pollfd p[2] = {
			{ .fd = console_http_fd(c.http), .events = POLLIN },
			{ .fd = console_bulk_fd(&c), .events = POLLIN },
		};

		if (console_stopping)
			console_exit_stopping(&c);
		heartbeat_tick(&c.heartbeat, &c, now, &next);
		console_bulk_timers(&c, now, &next);
		console_http_timers(c.http, now, &next);
		if (poll(p, 2, (int)(next > now ? next - now : 0)) > 0) {
			/* A bulk action done: its request is answered now. */
			if (p[1].revents != 0)
				console_bulk_handle(&c);
			console_http_run(c.http);
		}
		if (getppid() == 1)
			_exit(0);
	}
}

/* ---- the supervisor's part ---- */

static void
console_fork(struct supervisor *s)
{
	struct console_link *l = s->console;
	const struct config *cfg = s->current->cfg;
	pid_t pid, parent = getpid();
	int64_t started = wall_ms() - (now_ms() - s->started_ms);

	pid = fork();
	if (pid == -1) {
		log_warn("fork for the console");
		l->child.next_start_ms = now_ms() + CONSOLE_RESTART_MS;
		return;
	}
	if (pid == 0) {
		proc_helper_child(parent);
		console_child(cfg, s->current->number, l->sessions,
		    s->history, started);
	}
	l->child.pid = pid;
	l->child.generation = s->current->number;
	l->started_ms = now_ms();
}

/* The console, or its heartbeat alone when daemons_table: asks for it. */
static bool
console_wanted(const struct config *cfg)
{
	return cfg->console.on || cfg->daemons_table != NULL;
}

static void
console_start(struct supervisor *s)
{
	struct console_link *l = xcalloc(1, sizeof(*l));

	l->child.fd = -1;
	l->sessions = mmap(NULL, sizeof(*l->sessions), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (l->sessions == MAP_FAILED)
		fatal("mmap");
	s->console = l;
	if (console_wanted(s->current->cfg))
		console_fork(s);
}

/*
 * Start the console when it is due and configured; after a reload,
 * replace the one that serves the old generation's queues (or stop it,
 * when console: is gone).
 */
static void
console_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	struct console_link *l = s->console;

	if (s->stopping)
		return;
	if (l->child.pid != 0 && l->child.generation != s->current->number)
		l->replacing = true;
	helper_child_retire(&l->child, s->current->number);
	if (console_wanted(s->current->cfg) && helper_child_due(&l->child, now,
	    next))
		console_fork(s);
}

static bool
console_reaped(struct supervisor *s, pid_t pid, int status)
{
	struct console_link *l = s->console;
	int64_t delay = CONSOLE_RESTART_MS;
	struct buf why = { 0 };

	/* Every part hears of every child, in a drain too (no console then). */
	if (l == NULL || pid == 0 || pid != l->child.pid)
		return false;
	if (l->replacing)
		delay = 0;
	else if (now_ms() - l->started_ms < CONSOLE_QUICK_MS)
		delay = backoff_capped_ms(CONSOLE_RESTART_MS,
		    CONSOLE_RESTART_MAX_MS, ++l->quick_deaths);
	else
		l->quick_deaths = 0;
	(void)helper_child_reaped(&l->child, pid, delay);
	if (!s->stopping && !l->replacing) {
		describe_wait_status(status, &why);
		log_warnx("console: %s; starting it again in %llds", why.data,
		    (long long)(delay / 1000));
	}
	l->replacing = false;
	buf_free(&why);
	return true;
}

static void
console_stop(struct supervisor *s)
{
	struct console_link *l = s->console;

	if (l == NULL)
		return;
	/* Its workers are gone: a moment for its last heartbeat. */
	helper_child_stop(&l->child, CONSOLE_LAST_HEARTBEAT_MS);
	munmap(l->sessions, sizeof(*l->sessions));
	free(l);
	s->console = NULL;
}

const struct supervisor_part console_part = {
	.name = "console",
	.start = console_start,
	.stop = console_stop,
	.tick = console_tick,
	.reaped = console_reaped,
};
