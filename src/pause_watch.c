/*
 * pause_watch.c: the daemon's side of a pause (pause.c).  A watcher
 * child keeps one connection and reads the pause table once a second;
 * each reading comes to the supervisor as one message on a pipe, which
 * its loop polls.  So a pause costs no query per claim, and no database
 * call ever blocks the supervisor: a watcher that hangs only delays the
 * pause.
 *
 * A queue that becomes paused has its workers retired as a reload
 * retires old ones: each finishes its current row, commits and exits,
 * and none starts again until the queue is resumed.  At start-up the
 * workers wait for the first reading (at most PAUSE_FIRST_WAIT_MS), so
 * that a daemon started during a pause claims nothing; a database that
 * cannot be read keeps the last reading.
 */
#include "rowq.h"
#include "db.h"
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define PAUSE_EVERY_MS		1000
#define PAUSE_FIRST_WAIT_MS	3000
/* A watcher that died starts again this long after. */
#define PAUSE_RESTART_MS	1000

/* One reading, written whole to the pipe (smaller than PIPE_BUF). */
struct pause_reading {
	int		 generation;
	unsigned char	 paused[QUEUES_MAX];	/* by queue index */
};

/*
 * The watcher's session has no default database, so that the process
 * list tells it apart from the workers' sessions (each in the queue's
 * database); the table is named with its database.  Without database:
 * (an option file chooses it) the session is a worker's look-alike.
 */
static void
pause_watch_session(const struct config *cfg, struct db_options *o,
    struct buf *table)
{
	const char *t = pause_table(cfg);

	*o = cfg->db;
	if (cfg->db.name == NULL || strchr(t, '.') != NULL) {
		buf_puts(table, t);
		return;
	}
	o->name = NULL;
	buf_putc(table, '`');
	for (const char *c = cfg->db.name; *c != '\0'; c++) {
		if (*c == '`')
			buf_putc(table, '`');
		buf_putc(table, *c);
	}
	buf_printf(table, "`.%s", t);
}

static void
pause_sleep_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * The watcher: read, tell, sleep, for ever.  A failure is logged when it
 * begins, not every second; the connection is made again after any.
 * It exits when the supervisor no longer reads (the pipe is gone).
 */
static _Noreturn void
pause_watch_child(const struct config *cfg, int generation, int fd)
{
	struct db *db = NULL;
	struct db_options o;
	struct buf table = { 0 };
	bool failing = false;

	log_procinit("pause watch");
	proc_title("rowq: pause watch");
	pause_watch_session(cfg, &o, &table);
	for (;;) {
		struct pause_list l;
		enum db_status st = DB_OK;
		int rc = -1;

		if (db == NULL)
			db = db_open(&o, &st);
		if (st == DB_OK && db_demoted(db)) {
			log_warnx("%s: %s; moving", db_where(db), db_error(db));
			db_close(db);
			db = db_open(&o, &st);
		}
		if (st == DB_OK)
			rc = pause_read(db, table.data, &l);
		if (rc == 0) {
			struct pause_reading r = { .generation = generation };
			for (size_t i = 0; i < cfg->nqueues && i < QUEUES_MAX;
			    i++)
				r.paused[i] = pause_find(&l,
				    cfg->queues[i].name) != NULL;
			pause_list_free(&l);
			if (failing)
				log_info("reading %s again", table.data);
			failing = false;
			if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
				_exit(0);
		} else {
			if (!failing)
				log_warnx("cannot read the pause table %s: %s; "
				    "pauses stay as last read",
				    table.data, db_error(db));
			failing = true;
			db_close(db);
			db = NULL;
		}
		pause_sleep_ms(PAUSE_EVERY_MS);
	}
}

static void
pause_watch_fork(struct supervisor *s)
{
	pid_t pid, parent = getpid();
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) == -1) {
		log_warn("pipe for the pause watcher");
		s->pause.child.next_start_ms = now_ms() + PAUSE_RESTART_MS;
		return;
	}
	pid = fork();
	if (pid == -1) {
		log_warn("fork for the pause watcher");
		close(fds[0]);
		close(fds[1]);
		s->pause.child.next_start_ms = now_ms() + PAUSE_RESTART_MS;
		return;
	}
	if (pid == 0) {
		/*
		 * The write end goes to descriptor 0, the one below those
		 * proc_close_inherited closes; the watcher reads nothing.
		 */
		if (dup2(fds[1], 0) == -1)
			_exit(1);
		proc_helper_child(parent);
		pause_watch_child(s->current->cfg, s->current->number, 0);
	}
	close(fds[1]);
	(void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
	s->pause.child.pid = pid;
	s->pause.child.fd = fds[0];
	s->pause.child.generation = s->current->number;
}

void
pause_watch_start(struct supervisor *s)
{
	s->pause.child.fd = -1;
	s->pause.wait_until_ms = now_ms() + PAUSE_FIRST_WAIT_MS;
	pause_watch_fork(s);
}

bool
pause_watch_known(const struct supervisor *s)
{
	return s->opts->drain || s->pause.known;
}

bool
pause_watch_paused(const struct supervisor *s, const char *queue)
{
	for (size_t i = 0; i < s->pause.n; i++)
		if (strcmp(s->pause.paused[i], queue) == 0)
			return true;
	return false;
}

/* A paused queue's workers finish their rows and exit; none restarts. */
static void
pause_retire(struct supervisor *s, const struct queue *q)
{
	int n = 0;

	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state == SLOT_FREE ||
		    strcmp(sl->queue->name, q->name) != 0)
			continue;
		if (supervisor_retire_slot(s, sl))
			n++;
	}
	log_info("%s: paused in %s: %d worker(s) finish their rows and stop",
	    q->name, pause_table(s->current->cfg), n);
}

/*
 * A resumed queue's workers start again, unless the current generation
 * has not reached the queue yet (a full slot table): supervisor_fill
 * starts them then.
 */
static void
pause_resume(struct supervisor *s, size_t index)
{
	struct generation *g = s->current;
	const struct queue *q = &g->cfg->queues[index];

	log_info("%s: resumed: starting its workers", q->name);
	if (index >= g->next_queue)
		return;
	for (int number = 1; number <= q->workers; number++) {
		bool running = false;
		for (int i = 0; i < s->nslots && !running; i++) {
			const struct slot *sl = &s->slots[i];
			running = sl->gen == g && sl->queue == q &&
			    sl->number == number &&
			    (sl->state == SLOT_RUNNING ||
			    sl->state == SLOT_RESTARTING);
		}
		if (!running && !supervisor_start(s, q, number))
			break;
	}
}

/*
 * A reading of the current generation: act on what changed, then keep
 * the names it found paused (a queue a reload removed is forgotten).
 */
static void
pause_apply(struct supervisor *s, const struct pause_reading *r)
{
	const struct config *cfg = s->current->cfg;
	struct pause_state *p = &s->pause;
	size_t n = cfg->nqueues < QUEUES_MAX ? cfg->nqueues : QUEUES_MAX;

	p->known = true;
	for (size_t i = 0; i < n; i++) {
		const struct queue *q = &cfg->queues[i];
		bool was = pause_watch_paused(s, q->name);
		if (r->paused[i] && !was)
			pause_retire(s, q);
		if (!r->paused[i] && was)
			pause_resume(s, i);
		s->status_dirty |= r->paused[i] != was;
	}
	for (size_t i = 0; i < p->n; i++)
		free(p->paused[i]);
	p->n = 0;
	for (size_t i = 0; i < n; i++)
		if (r->paused[i])
			p->paused[p->n++] = xstrdup(cfg->queues[i].name);
}

void
pause_watch_handle(struct supervisor *s, const struct pollfd *p, nfds_t np)
{
	struct pause_reading r;
	bool got = false;
	ssize_t n;

	if (np == 0 || s->pause.child.fd == -1 || p[0].revents == 0)
		return;
	/* Only the newest reading matters. */
	while ((n = read(s->pause.child.fd, &r, sizeof(r))) == (ssize_t)sizeof(r))
		got = true;
	if (got && r.generation == s->current->number && !s->stopping)
		pause_apply(s, &r);
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
		close(s->pause.child.fd);
		s->pause.child.fd = -1;
	}
}

void
pause_watch_poll_fds(struct supervisor *s, struct pollfd *p, nfds_t *np)
{
	helper_child_poll_fd(&s->pause.child, p, np);
}

bool
pause_watch_reaped(struct supervisor *s, pid_t pid, int status)
{
	(void)status;
	return helper_child_reaped(&s->pause.child, pid, PAUSE_RESTART_MS);
}

/*
 * Start the watcher when it is due; after a reload, replace the one that
 * reads the old generation's queues (and maybe another table).  Stop
 * waiting for a first reading when it is late.
 */
void
pause_watch_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	struct pause_state *p = &s->pause;

	if (s->opts->drain || s->stopping)
		return;
	helper_child_retire(&p->child, s->current->number);
	if (p->child.pid == 0 && p->child.fd != -1) {
		close(p->child.fd);
		p->child.fd = -1;
	}
	if (helper_child_due(&p->child, now, next))
		pause_watch_fork(s);
	if (!p->known && now >= p->wait_until_ms) {
		log_warnx("no reading of the pause table %s within %ds: "
		    "starting the workers", pause_table(s->current->cfg),
		    PAUSE_FIRST_WAIT_MS / 1000);
		p->known = true;
	}
	if (!p->known && p->wait_until_ms < *next)
		*next = p->wait_until_ms;
}

void
pause_watch_stop(struct supervisor *s)
{
	struct pause_state *p = &s->pause;

	helper_child_kill(&p->child);
	if (p->child.fd != -1)
		close(p->child.fd);
	p->child.fd = -1;
	for (size_t i = 0; i < p->n; i++)
		free(p->paused[i]);
	p->n = 0;
}
