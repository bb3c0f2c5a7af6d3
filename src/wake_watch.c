/*
 * wake_watch.c: one watcher per daemon looks for work for every queue,
 * so that idle workers need not each poll.
 *
 * A watcher child keeps one connection and runs, every `idle` of each
 * queue, the queue's select with a LIMIT as a plain read (autocommit, no
 * FOR UPDATE: it locks nothing and takes no row from a claim).  Each
 * reading, the number of rows it found, comes to the supervisor as one
 * message on a pipe; the supervisor wakes (SIGUSR1, read by the worker's
 * stopper) as many of the queue's idle workers as there are rows not
 * already in a worker's hands.  A worker that found rows goes on
 * claiming without sleeping, as before.
 *
 * Every reading also vouches for the queue in each worker's shared
 * stats (watched_ms): an idle worker waits for a wake only while the
 * watcher's last reading is recent; when the watcher is dead, hangs or
 * cannot read the queue, the workers poll by claiming every `idle`, as
 * they did without it.  And each still claims every WAKE_FLOOR_FACTOR
 * times `idle` even when vouched for, so that no worker waits for ever.
 *
 * `rowq wake QUEUE` (status_socket.c) and POST /wake/QUEUE (metrics.c)
 * ask the watcher to read the queue at once (wake_watch_queue).
 *
 * The watcher also reads the pause table for the daemon (pause_watch.c),
 * inside each queue's read when it can, so that an idle daemon costs one
 * statement per queue per `idle`, plus one a second at most for pauses.
 */
#include "rowq.h"
#include "db.h"
#include "supervisor.h"
#include "commands.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* A watcher that died starts again this long after. */
#define WAKE_RESTART_MS		1000
/* After a failed connection or statement: wait this long, then again. */
#define WAKE_RETRY_MS		1000
/* A queue whose probe could not be prepared: try again this often. */
#define WAKE_PREPARE_AGAIN_MS	30000

/* The watcher's view of one queue. */
struct wake_probe {
	struct db_stmt	*stmt;
	bool		 folded;	/* the pause table's rows come too */
	int64_t		 due_ms;
	bool		 failing;	/* said so in the log */
	int		 echoes;	/* reads again if it finds nothing */
};

/*
 * A command: the queue's index, and WAKE_CMD_BINLOG when the binary log
 * asked.  The server writes a transaction to the binary log before its
 * engine commits it, so a read at once may not see its rows yet: after a
 * binlog wake that finds nothing the watcher reads again, WAKE_ECHO_MS
 * later, then twice that.
 */
typedef uint16_t wake_cmd;
#define WAKE_CMD_BINLOG		0x8000u
#define WAKE_ECHOES		2
#define WAKE_ECHO_MS		10

/*
 * Rows read at most: enough to wake every worker of the queue and to
 * see past the rows its busy workers hold.
 */
static int
wake_probe_limit(const struct queue *q)
{
	int n = 2 * q->workers * (q->batch > 0 ? q->batch : 1);

	return n < STATUS_CAP ? n : STATUS_CAP;
}

static void
wake_disconnect(struct db *db, struct wake_probe *p, size_t nqueues,
    struct pause_probe *pp)
{
	for (size_t i = 0; i < nqueues && i < QUEUES_MAX; i++) {
		db_stmt_free(p[i].stmt);
		p[i].stmt = NULL;
	}
	pause_probe_close(pp);
	db_close(db);
}

/*
 * Queue i's probe, with the pause table's read folded in when the table
 * is there and the fold prepares (a select whose columns share a name
 * cannot be a derived table: its probe goes alone).
 */
static struct db_stmt *
wake_probe_prepare(struct db *db, const struct queue *q,
    struct wake_probe *p, const struct pause_probe *pp, enum db_status *st)
{
	struct buf sql = { 0 }, folded = { 0 };
	struct db_stmt *stmt = NULL;

	buf_printf(&sql, "%s\nLIMIT %d", q->select.positional,
	    wake_probe_limit(q));
	pause_probe_fold(pp, sql.data, &folded);
	if (folded.len > 0)
		stmt = db_prepare(db, folded.data, st);
	p->folded = stmt != NULL;
	if (stmt == NULL)
		stmt = db_prepare(db, sql.data, st);
	buf_free(&sql);
	buf_free(&folded);
	return stmt;
}

/*
 * The watcher's session: autocommit, so that a read leaves no transaction
 * (and no metadata lock) open and costs one statement; each queue's probe
 * is prepared in the configured database, and the session then moves to
 * information_schema, so that the process list tells it apart from the
 * workers' sessions (a prepared statement keeps the database it was
 * prepared in).  NULL: the database failed, logged when it begins.
 */
static struct db *
wake_connect(const struct config *cfg, struct wake_probe *p,
    struct pause_probe *pp, bool *failing)
{
	enum db_status st;
	struct db *db = db_open(&cfg->db, &st);

	if (st == DB_OK)
		st = db_run(db, "SET autocommit = 1");
	if (st == DB_OK && pause_probe_prepare(db, pp) == -1 &&
	    db_link_closed(db))
		st = DB_RECONNECT;
	for (size_t i = 0; st == DB_OK && i < cfg->nqueues && i < QUEUES_MAX;
	    i++) {
		const struct queue *q = &cfg->queues[i];
		enum db_status pst;
		/* A queue whose probe fails is polled by its workers. */
		p[i].stmt = wake_probe_prepare(db, q, &p[i], pp, &pst);
		if (p[i].stmt == NULL && !p[i].failing)
			log_warnx("%s: cannot watch the queue (its workers "
			    "poll): %s", q->where, db_error(db));
		p[i].failing = p[i].stmt == NULL;
		if (pst == DB_RECONNECT)
			st = pst;
	}
	if (st == DB_OK)
		st = db_run(db, "USE information_schema");
	if (st == DB_OK) {
		if (*failing)
			log_info("watching the queues again");
		*failing = false;
		return db;
	}
	if (!*failing)
		log_warnx("cannot connect to watch the queues (the workers "
		    "poll): %s", db_error(db));
	*failing = true;
	wake_disconnect(db, p, cfg->nqueues, pp);
	return NULL;
}

/*
 * How many rows queue i's select finds now, in r->rows (-1: it failed);
 * a folded probe brings the pause table's reading too.  Returns false
 * when the probes must be prepared again on a new connection: a folded
 * probe that finds no table (the pause table dropped, or the queue's
 * own), or a failure the client library reports (2000-2999), such as a
 * result whose columns changed under the prepared probe (a SELECT * whose
 * table gained one, 2057), after which the connection is out of sync.
 */
static bool
wake_probe_run(struct db *db, const struct queue *q, struct wake_probe *p,
    struct pause_probe *pp, int64_t now, struct watch_reading *r)
{
	struct rowset rs = { 0 };
	size_t ncols = 0;
	bool again = true;
	enum db_status st;

	r->rows = -1;
	r->pause_read = false;
	if (p->stmt == NULL)
		return true;
	(void)db_stmt_columns(p->stmt, &ncols);
	if ((st = db_stmt_fetch_all(p->stmt, NULL, 0, &rs)) == DB_OK) {
		r->rows = (int)rs.nrows;
		if (p->folded) {
			pause_probe_names(pp, &rs, now, r);
			r->rows = 0;
			for (size_t k = 0; k < rs.nrows; k++)
				r->rows += rs.rows[k].value[0] == NULL;
		}
	} else if (p->folded && db_no_such_table(db))
		again = false;
	else if (st == DB_RECONNECT && !db_link_closed(db)) {
		log_info("%s: the select's columns changed, or its statement "
		    "broke: %s; preparing the probes again", q->where,
		    db_error(db));
		again = false;
	} else if (!p->failing)
		log_warnx("%s: cannot watch the queue (its workers poll): %s",
		    q->where, db_error(db));
	p->failing = r->rows < 0 && again;
	rowset_free(&rs, ncols);
	return again;
}

/*
 * The commands from the supervisor: a queue to read at once.
 * Returns -1 when the supervisor is gone.
 */
static int
wake_commands(int fd, const struct config *cfg, struct wake_probe *p,
    int64_t now)
{
	wake_cmd c[64];
	ssize_t n;

	/* Each write is one whole command (smaller than PIPE_BUF). */
	while ((n = read(fd, c, sizeof(c))) > 0)
		for (size_t i = 0; i < (size_t)n / sizeof(c[0]); i++) {
			size_t q = c[i] & ~WAKE_CMD_BINLOG;
			if (q >= cfg->nqueues || q >= QUEUES_MAX)
				continue;
			p[q].due_ms = now;
			if (c[i] & WAKE_CMD_BINLOG)
				p[q].echoes = WAKE_ECHOES;
		}
	return n == 0 ? -1 : 0;
}

/*
 * The watcher: read each queue when it is due, tell the supervisor,
 * sleep until the next is due or a command comes.  It exits when the
 * supervisor no longer reads or writes (a pipe is gone).
 */
static _Noreturn void
wake_watch_child(const struct config *cfg, int generation, int out, int in)
{
	struct wake_probe p[QUEUES_MAX] = { 0 };
	struct pause_probe pp;
	size_t nq = cfg->nqueues < QUEUES_MAX ? cfg->nqueues : QUEUES_MAX;
	struct db *db = NULL;
	bool failing = false;
	int64_t prepare_again = now_ms() + WAKE_PREPARE_AGAIN_MS;

	log_procinit("wake watch");
	proc_title("rowq: wake watch");
	pause_probe_init(&pp, cfg);
	for (;;) {
		int64_t now = now_ms(), next = now + WAKE_RETRY_MS;
		bool again = true;

		/* It only reads: a demoted primary gives it no 1290. */
		if (db != NULL && db_demoted(db)) {
			log_warnx("%s: %s; moving", db_where(db), db_error(db));
			wake_disconnect(db, p, nq, &pp);
			db = NULL;
		}
		if (db == NULL)
			db = wake_connect(cfg, p, &pp, &failing);
		for (size_t i = 0; i < nq && db != NULL && again; i++) {
			const struct queue *q = &cfg->queues[i];
			struct watch_reading r = { .generation = generation,
			    .queue = (int)i, .rows = -1 };
			if (p[i].due_ms > now)
				continue;
			again = wake_probe_run(db, q, &p[i], &pp, now, &r);
			p[i].due_ms = now + (r.rows < 0 ? WAKE_RETRY_MS :
			    q->idle_ms);
			if (r.rows == 0 && p[i].echoes > 0)
				p[i].due_ms = now + (WAKE_ECHO_MS <<
				    (WAKE_ECHOES - p[i].echoes--));
			else
				p[i].echoes = 0;
			if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
				_exit(0);
			/*
			 * A lost link, or a queue that could not be prepared
			 * (its table may come): connect again, that one at
			 * most every WAKE_PREPARE_AGAIN_MS.
			 */
			if ((r.rows < 0 && db_link_closed(db)) ||
			    (p[i].stmt == NULL && now >= prepare_again)) {
				again = false;
				prepare_again = now + WAKE_PREPARE_AGAIN_MS;
			}
		}
		if (db != NULL && again) {
			struct watch_reading r = { .generation = generation,
			    .queue = -1, .rows = -1 };
			enum pause_probe_end end = pause_probe_run(db, &pp,
			    now_ms(), &r);
			if (r.pause_read &&
			    write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
				_exit(0);
			again = end == PAUSE_PROBE_READ;
		}
		if (db != NULL && !again) {
			/* Connect again now, and prepare every probe anew. */
			wake_disconnect(db, p, nq, &pp);
			db = NULL;
			continue;
		}
		for (size_t i = 0; i < nq && db != NULL; i++)
			if (p[i].due_ms < next)
				next = p[i].due_ms;
		if (db != NULL && pp.due_ms < next)
			next = pp.due_ms;
		struct pollfd pfd = { .fd = in, .events = POLLIN };
		int64_t wait = next - now_ms();
		if (poll(&pfd, 1, (int)(wait < 0 ? 0 : wait)) > 0 &&
		    wake_commands(in, cfg, p, now_ms()) == -1)
			_exit(0);
	}
}

static void
wake_watch_fork(struct supervisor *s)
{
	struct wake_state *w = &s->wake;
	pid_t pid, parent = getpid();
	int up[2], down[2];

	if (pipe2(up, O_CLOEXEC) == -1) {
		log_warn("pipe for the wake watcher");
		w->child.next_start_ms = now_ms() + WAKE_RESTART_MS;
		return;
	}
	if (pipe2(down, O_CLOEXEC) == -1) {
		log_warn("pipe for the wake watcher");
		close(up[0]);
		close(up[1]);
		w->child.next_start_ms = now_ms() + WAKE_RESTART_MS;
		return;
	}
	pid = fork();
	if (pid == -1) {
		log_warn("fork for the wake watcher");
		close(up[0]);
		close(up[1]);
		close(down[0]);
		close(down[1]);
		w->child.next_start_ms = now_ms() + WAKE_RESTART_MS;
		return;
	}
	if (pid == 0) {
		/*
		 * Its ends go to descriptors 0 and 1, below those
		 * proc_close_inherited closes: 0 the commands it reads,
		 * 1 the readings it writes.
		 */
		if (dup2(down[0], 0) == -1 || dup2(up[1], 1) == -1 ||
		    fcntl(0, F_SETFL, O_NONBLOCK) == -1)
			_exit(1);
		proc_helper_child(parent);
		wake_watch_child(s->current->cfg, s->current->number, 1, 0);
	}
	close(up[1]);
	close(down[0]);
	(void)fcntl(up[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(down[1], F_SETFL, O_NONBLOCK);
	w->child.pid = pid;
	w->child.fd = up[0];
	w->cmd_fd = down[1];
	w->child.generation = s->current->number;
}

static void
wake_watch_start(struct supervisor *s)
{
	s->wake.child.fd = s->wake.cmd_fd = -1;
	if (!s->opts->drain)
		wake_watch_fork(s);
}

/*
 * A reading: vouch for the queue to its workers, and wake as many idle
 * ones as there are rows that no worker of ours holds (in transaction
 * mode a claimed row matches the select until it commits).  Rows another
 * daemon holds wake a worker for one claim that finds nothing: bounded
 * by the idle workers, once a reading.
 */
static void
wake_apply(struct supervisor *s, size_t index, int rows, bool vouch)
{
	const struct queue *q = &s->current->cfg->queues[index];
	int64_t now = now_ms();
	int busy = 0, wake;

	if (rows < 0)
		return;
	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state != SLOT_RUNNING || sl->gen != s->current ||
		    sl->queue != q)
			continue;
		if (vouch)
			sl->stats->watched_ms = now;
		busy += sl->stats->state == WORKER_BUSY;
	}
	wake = q->lease.enabled || !vouch ? rows : rows - busy;
	for (int i = 0; i < s->nslots && wake > 0; i++) {
		struct slot *sl = &s->slots[i];
		/* Only an idle worker: its stopper reads SIGUSR1. */
		if (sl->state != SLOT_RUNNING || sl->gen != s->current ||
		    sl->queue != q || sl->stats->state != WORKER_IDLE ||
		    sl->pid <= 0)
			continue;
		if (kill(sl->pid, SIGUSR1) == 0)
			wake--;
	}
}

static void
wake_watch_handle(struct supervisor *s, const struct pollfd *p, nfds_t np)
{
	struct watch_reading r;
	ssize_t n;

	if (np == 0 || s->wake.child.fd == -1 || p[0].revents == 0)
		return;
	while ((n = read(s->wake.child.fd, &r, sizeof(r))) == (ssize_t)sizeof(r)) {
		if (r.generation != s->current->number || s->stopping)
			continue;
		if (r.rows >= 0 || r.pause_read)
			s->wake.db_seen_ms = now_ms();
		pause_watch_reading(s, &r);
		if (r.queue >= 0 &&
		    (size_t)r.queue < s->current->cfg->nqueues) {
			wake_apply(s, (size_t)r.queue, r.rows, true);
			scale_reading(s, (size_t)r.queue, r.rows);
		}
	}
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
		close(s->wake.child.fd);
		s->wake.child.fd = -1;
	}
}

static void
wake_watch_poll_fds(struct supervisor *s, struct pollfd *p, nfds_t *np)
{
	helper_child_poll_fd(&s->wake.child, p, np);
}

static bool
wake_watch_reaped(struct supervisor *s, pid_t pid, int status)
{
	(void)status;
	return helper_child_reaped(&s->wake.child, pid, WAKE_RESTART_MS);
}

static void
wake_watch_close(struct wake_state *w)
{
	if (w->child.fd != -1)
		close(w->child.fd);
	if (w->cmd_fd != -1)
		close(w->cmd_fd);
	w->child.fd = w->cmd_fd = -1;
}

/*
 * Start the watcher when it is due; after a reload, replace the one that
 * reads the old generation's queues.
 */
static void
wake_watch_tick(struct supervisor *s, int64_t now, int64_t *next)
{
	struct wake_state *w = &s->wake;

	if (s->opts->drain || s->stopping)
		return;
	helper_child_retire(&w->child, s->current->number);
	if (w->child.pid == 0 && (w->child.fd != -1 || w->cmd_fd != -1))
		wake_watch_close(w);
	if (helper_child_due(&w->child, now, next))
		wake_watch_fork(s);
}

static void
wake_watch_stop(struct supervisor *s)
{
	struct wake_state *w = &s->wake;

	helper_child_kill(&w->child);
	wake_watch_close(w);
}

static bool
wake_has_idle(const struct supervisor *s, const struct queue *q)
{
	for (int i = 0; i < s->nslots; i++) {
		const struct slot *sl = &s->slots[i];
		if (sl->state == SLOT_RUNNING && sl->gen == s->current &&
		    sl->queue == q && sl->stats->state == WORKER_IDLE)
			return true;
	}
	return false;
}

/*
 * A wake of queue i of the current generation: the watcher reads the
 * queue at once and wakes as many workers as it finds rows; with no
 * watcher, one idle worker is woken to claim.  binlog: the binary log
 * said so (wake_binlog.c), and a queue whose workers are all busy is
 * not read: they claim again without waiting, and under load the
 * commits would otherwise cost a read each.
 */
void
wake_watch_index(struct supervisor *s, size_t i, bool binlog)
{
	wake_cmd c = (wake_cmd)(i | (binlog ? WAKE_CMD_BINLOG : 0));

	if (i >= s->current->cfg->nqueues || i >= QUEUES_MAX)
		return;
	if (binlog && !wake_has_idle(s, &s->current->cfg->queues[i]))
		return;
	if (s->wake.child.pid > 0 && s->wake.cmd_fd != -1 &&
	    write(s->wake.cmd_fd, &c, sizeof(c)) == (ssize_t)sizeof(c))
		return;
	wake_apply(s, i, 1, false);
}

/*
 * A wake from outside (`rowq wake`, POST /wake/QUEUE).  The producer
 * says a row is there: one idle worker is woken at once, without the
 * watcher's read first (a wrong wake costs that worker one empty claim),
 * and the watcher reads the queue to wake as many more as it finds rows.
 * Returns -1 for a queue the daemon does not run.
 */
int
wake_watch_queue(struct supervisor *s, const char *name)
{
	const struct config *cfg = s->current->cfg;

	for (size_t i = 0; i < cfg->nqueues && i < QUEUES_MAX; i++)
		if (strcmp(cfg->queues[i].name, name) == 0) {
			if (!s->stopping)
				wake_apply(s, i, 1, false);
			wake_watch_index(s, i, false);
			return 0;
		}
	return -1;
}

const struct supervisor_part wake_watch_part = {
	.name = "wake watch",
	.poll_max = 1,
	.start = wake_watch_start,
	.stop = wake_watch_stop,
	.tick = wake_watch_tick,
	.poll_fds = wake_watch_poll_fds,
	.handle = wake_watch_handle,
	.reaped = wake_watch_reaped,
};
