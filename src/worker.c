/*
 * worker.c: one worker's loop over its queue.
 *
 * In transaction mode a turn claims up to `batch` rows with the queue's
 * select plus LIMIT n FOR UPDATE SKIP LOCKED, runs the handler for each
 * while the transaction holds the row locks, runs done, retry or failed
 * for each in the same transaction, and commits.  Whatever dies before the
 * commit (the handler, the worker, the connection) rolls the transaction
 * back and the rows are simply waiting again: delivery is at least once,
 * never lost.  Lease mode (worker_lease.c) holds no transaction while a handler
 * runs.  The turn's state lives in struct turn (worker_turn.c); a row's outcome
 * is finished in worker_finish.c.
 */
#include "worker.h"
#include "claim.h"
#include "commands.h"
#include "runs.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/*
 * While a handler runs in transaction mode, how often the worker looks
 * whether the server closed the connection (and with it the row locks).
 */
#define LINK_WATCH_MS		250

void
worker_set_state(struct worker *w, enum worker_state s, const char *key)
{
	struct worker_stats *st = w->args->stats;

	if (st == NULL)
		return;
	st->state = s;
	st->since_ms = wall_ms();
	snprintf(st->key, sizeof(st->key), "%s", key ? key : "");
}

/* The last thing that went wrong, for `rowq status`. */
void
worker_note_error(struct worker *w, const char *what, const char *msg)
{
	struct worker_stats *st = w->args->stats;

	if (st == NULL)
		return;
	snprintf(st->last_error, sizeof(st->last_error), "%s%s%s", what,
	    *what ? ": " : "", msg ? msg : "");
	st->last_error_ms = wall_ms();
}

/*
 * Commit, and only then count the rows it finished; a `done` held for
 * the next claim runs first, prepared, when no claim follows.
 */
int
worker_commit(struct worker *w)
{
	enum db_status st = w->turn.holding ? finish_held_now(w) : DB_OK;

	if (st != DB_OK) {
		worker_db_failed(w, st, w->failing);
		turn_rolled_back(w);
		return -1;
	}
	if ((st = runs_flush(w)) != DB_OK) {
		worker_db_failed(w, st, w->failing);
		(void)db_rollback(w->db);
		turn_rolled_back(w);
		return -1;
	}
	st = db_commit(w->db);
	if (st != DB_OK) {
		worker_db_failed(w, st, "commit");
		turn_rolled_back(w);
		return -1;
	}
	worker_committed(w);
	return 0;
}

/* After a COMMIT that went through, and no claim with it: count it. */
void
worker_committed(struct worker *w)
{
	turn_committed(w);
	worker_db_ok(w);
	/* No claim follows in this round trip: the slot goes now. */
	limit_release(w);
}

/* Send the COMMIT a turn left for the next claim, when no claim follows. */
static void
worker_flush(struct worker *w)
{
	if (w->turn.uncommitted && w->db != NULL)
		(void)worker_commit(w);
}

/*
 * After a turn that skipped rows: the next claim asks for as many more.
 * When the claim found nothing else, it asks for twice as many at once,
 * while that can find more.  Past that, the rows the select returns are
 * all rows that cannot be worked, and claiming them again at once would
 * spin: returns true when the worker must pause (worker_pause).
 */
static bool
worker_widen(struct worker *w, int worked)
{
	const struct turn *t = &w->turn;

	w->widen = t->skipped;
	if (worked > 0 || t->skipped == 0)
		return false;
	if ((int)t->rows.nrows >= t->limit &&
	    t->limit - queue_claim_rows(w->q) < SKIP_WIDEN_MAX) {
		w->widen = 2 * t->limit;
		return false;
	}
	return true;
}

/* Pause claims, with growing delays, with no transaction open. */
static void
worker_pause(struct worker *w)
{
	int64_t delay = backoff_capped_ms(HOT_LOOP_BACKOFF_MIN_MS,
	    HOT_LOOP_BACKOFF_MAX_MS, ++w->hot_loops);

	worker_set_state(w, WORKER_BACKOFF, NULL);
	stopper_sleep(&w->stopper, delay);
	w->last_hot_ms = now_ms();
}

/*
 * After a turn's rows are finished and committed: widen, or pause.  A
 * drain ends instead: what is left cannot be worked.  Returns the turn's
 * result for worker_run: n, or 0 when the drain is to end.
 */
int
worker_turn_end(struct worker *w, int worked, int n)
{
	if (!worker_widen(w, worked))
		return n;
	if (w->args->drain) {
		log_warnx("only rows that cannot be worked are left; the "
		    "drain ends with them in the queue");
		w->only_unworkable = true;
		return 0;
	}
	worker_pause(w);
	return n;
}

/*
 * A row bigger than ROW_BYTES_MAX is not handed to a handler (its JSON
 * alone would be bigger still): it fails, with the reason, rather than
 * come back at every claim.
 */
bool
worker_row_fits(struct worker *w, const struct row *row)
{
	size_t total = row_bytes(w, row);

	if (total <= ROW_BYTES_MAX)
		return true;
	buf_reset(&w->result.output);
	buf_reset(&w->result.error);
	buf_printf(&w->result.error, "the row is %zu bytes, over rowq's "
	    "limit of %d MiB; not handed to the handler", total,
	    ROW_BYTES_MAX / (1024 * 1024));
	w->result.outcome = OUTCOME_FAILED;
	w->result.duration_ms = 0;
	w->result.retry_in_ms = -1;
	w->result.exit_status = -1;
	w->result.throttle_ms = -1;
	w->result.timed_out = w->result.killed = false;
	w->result.reason[0] = '\0';
	return false;
}

/*
 * Lease mode: a row claimed with no try left.  lease.claim counts each
 * try, so its last try was counted and never finished: its worker died,
 * or was stopped, and the lease ran out.  It fails now, with :reason
 * lease_lost, rather than run a try past max_attempts.  (In transaction
 * mode a try that never finished was rolled back, uncounted; a row past
 * its count there was changed by hand, and gets its one more try.)
 */
static bool
worker_row_spent(struct worker *w, const struct row *row, int attempt)
{
	int max = row_max_attempts(w, row);

	if (!w->q->lease.enabled || !w->q->retry.enabled ||
	    w->failed.stmt == NULL || max == 0 || attempt <= max)
		return false;
	handler_result_begin(&w->result);
	buf_printf(&w->result.error, "try %d of %d did not finish: its lease "
	    "ran out (its worker died or was stopped); no try is left",
	    attempt - 1, max);
	w->result.outcome = OUTCOME_FAILED;
	/* No handler ran: the reason is rowq's (reason_of passes it on). */
	snprintf(w->result.reason, sizeof(w->result.reason), "%s",
	    REASON_LEASE_LOST);
	return true;
}

/*
 * Transaction mode, while a handler runs: a server that closed the
 * connection took the transaction and the row locks with it, and another
 * worker may be running the row already, so this handler is stopped.
 */
static int
worker_watch_link(void *ctx, struct handler_result *res)
{
	struct worker *w = ctx;

	if (!db_link_closed(w->db))
		return 0;
	w->turn.link_lost = true;
	buf_puts(&res->error, "the database closed the connection, and the "
	    "row's lock with it");
	return 1;
}

/*
 * handler: none: the row's work is its done: statements, which run in the
 * claim's transaction; nothing is started and nothing can fail but them.
 */
static void
worker_no_handler(struct worker *w)
{
	buf_reset(&w->result.output);
	buf_reset(&w->result.error);
	w->result.outcome = OUTCOME_DONE;
	w->result.duration_ms = 0;
	w->result.retry_in_ms = -1;
	w->result.throttle_ms = -1;
	w->result.timed_out = w->result.killed = false;
}

/* Run the handler for a row, whichever kind the queue has. */
void
worker_handle(struct worker *w, const struct row *row, const char *key,
    int attempt)
{
	struct handler_job job = { 0 };
	struct buf json = { 0 };
	char attempt_s[32], worker_s[32];
	struct buf qenv = { 0 }, kenv = { 0 }, tenv = { 0 };
	char id[33];

	limit_started(w);
	if (w->q->handler == HANDLER_NONE) {
		worker_no_handler(w);
		return;
	}
	row_json(w, row, &json);
	job.input = json.data;
	job.input_len = json.len;
	job.set = &w->q->handling;
	if (w->q->lease.enabled) {
		job.tick = lease_renew;
		job.tick_ms = w->q->lease.duration_ms / 3;
		w->leased_row = row;
		w->leased_attempt = attempt;
		w->lease_renewed_ms = now_ms();
	} else {
		job.tick = worker_watch_link;
		job.tick_ms = LINK_WATCH_MS;
	}
	job.tick_ctx = w;
	if (w->q->handler == HANDLER_PIPE) {
		pipe_handle(&w->pipe, &job, &w->stopper, &w->result);
	} else {
		buf_printf(&qenv, "ROWQ_QUEUE=%s", w->q->name);
		buf_printf(&kenv, "ROWQ_KEY=%s", key);
		snprintf(attempt_s, sizeof(attempt_s), "ROWQ_ATTEMPT=%d", attempt);
		snprintf(worker_s, sizeof(worker_s), "ROWQ_WORKER=%d",
		    w->args->number);
		const char *tp = row_traceparent(w, row, id);
		if (tp != NULL)
			buf_printf(&tenv, "TRACEPARENT=%s", tp);
		const char *extra[] = { qenv.data, kenv.data, attempt_s,
		    worker_s, tenv.data, NULL };
		job.argv = handler_argv(w->q->argv, w->turn.cols,
		    w->turn.ncols, row);
		job.envp = handler_env(w->base_env, extra);
		handler_exec(w->path, &job, &w->stopper, &w->result);
		handler_argv_free(job.argv);
		handler_env_free(job.envp);
	}
	w->leased_row = NULL;
	buf_free(&qenv);
	buf_free(&kenv);
	buf_free(&tenv);
	buf_free(&json);
}

/*
 * Whether the row's outcome can be recorded: in lease mode a renewal that
 * lost the link left no connection, or one whose columns are not those
 * the row was read with.
 */
static bool
worker_can_finish(struct worker *w)
{
	if (w->db == NULL && worker_connect(w) != CONNECT_OK) {
		worker_disconnect(w);
		log_warnx("the database is away: the row is not finished; it "
		    "comes back when its lease runs out");
		return false;
	}
	if (!turn_layout_current(w)) {
		log_warnx("the select's columns changed while the database was "
		    "away: the row is not finished; it comes back when its "
		    "lease runs out");
		return false;
	}
	return true;
}

/* The outcome label of the row's handler duration. */
static enum handler_outcome
worker_outcome(const struct worker *w, const struct bound *b)
{
	if (b == &w->done)
		return HANDLER_OUTCOME_DONE;
	if (w->result.timed_out)
		return HANDLER_OUTCOME_TIMEOUT;
	return b == &w->retry ? HANDLER_OUTCOME_RETRY : HANDLER_OUTCOME_FAILED;
}

/*
 * Handle one claimed row and run its finishing statement.  Returns DB_OK,
 * or the status that ends the turn.  *aborted is set when the handler was
 * stopped without a verdict (rowq is stopping, the lease or the link is
 * lost): the row must not be finished.
 */
enum db_status
worker_row(struct worker *w, const struct row *row, bool *aborted)
{
	int attempt = row_attempt(w, row);
	struct buf key = { 0 };
	struct bound *b;
	const struct bound *counted;
	int64_t delay_ms;
	enum db_status st = DB_OK;

	char id[33];

	row_key_text(w, row, &key);
	log_set_row(key.data);
	log_set_attempt(attempt);
	log_set_trace(row_traceparent(w, row, id) ? id : NULL);
	/* The group before the state: a busy worker's group is its row's. */
	if (w->args->stats != NULL)
		row_group_note(w, row, w->args->stats);
	worker_set_state(w, WORKER_BUSY, key.data);
	if (w->args->stats != NULL)
		w->args->stats->attempt = attempt;
	proc_title("rowq: %s worker %d (row %s)", w->q->name,
	    w->args->number, key.data);
	/* With no handler no row is too big to hand over. */
	if ((w->q->handler == HANDLER_NONE || worker_row_fits(w, row)) &&
	    !worker_row_spent(w, row, attempt))
		worker_handle(w, row, key.data, attempt);
	if (w->result.outcome == OUTCOME_ABORTED) {
		log_warnx("handler stopped (%s): the row is not finished",
		    w->result.error.data ? w->result.error.data : "");
		*aborted = true;
		goto out;
	}
	if (w->result.outcome == OUTCOME_THROTTLED) {
		/* Not finished: back as it was, and the turn ends. */
		limit_throttle_asked(w, row);
		*aborted = true;
		goto out;
	}
	if (!worker_can_finish(w)) {
		*aborted = true;
		goto out;
	}
	/* Text parameters must be valid UTF-8 for a utf8mb4 column. */
	utf8_sanitize(&w->result.error);
	utf8_sanitize(&w->result.output);
	b = finish_decide(w, row, attempt, &delay_ms);
	counted = b;
	runs_note(w, row, attempt, b);
	if (b == &w->done) {
		log_set_outcome("done", w->result.duration_ms * 1000);
		log_debug("done in %lldms", (long long)w->result.duration_ms);
	}
	if (w->result.outcome != OUTCOME_DONE)
		worker_note_error(w, key.data, w->result.error.data);
	if (b == &w->done && w->bulk_done) {
		/* Finished with the batch's other ok rows, at the end. */
		w->turn.ok_row[w->turn.noks] = (int)(row - w->turn.rows.rows);
		w->turn.ok_token[w->turn.noks] = w->token;
		w->turn.ok_attempt[w->turn.noks++] = attempt;
	} else if (b == &w->done && finish_text_hold(w, row, attempt)) {
		/* Finished in front of the next claim (worker_finish_text.c). */
		turn_hold(w, (size_t)(row - w->turn.rows.rows), attempt);
	} else {
		/* The duration's outcome is what the row counted as. */
		st = finish_row_as(w, b, row, attempt, delay_ms, &counted);
		w->turn.finished_alone = true;
	}
	if (w->args->stats) {
		if (w->q->handler != HANDLER_NONE)
			histogram_add(&w->args->stats->handler[
			    worker_outcome(w, counted)],
			    w->result.duration_ms * 1000);
		w->args->stats->worked_ms = wall_ms();
	}
	w->jobs++;
out:
	log_set_row(NULL);
	buf_free(&key);
	return st;
}

/*
 * The connection went during the turn (a handler stopped for it, or a
 * look before the next handler): the server rolled the transaction back,
 * so no handler may start for the turn's other rows, whose locks are gone.
 */
static int
worker_link_lost(struct worker *w)
{
	log_warnx("the database closed the connection during a turn: its "
	    "rows go back to the queue unfinished");
	turn_abandon(w);
	worker_db_trouble(w, "the connection was lost");
	worker_disconnect(w);
	stopper_sleep(&w->stopper, worker_jitter(
	    backoff_capped_ms(100, 30000, w->db_failures)));
	return -1;
}

/* Transaction mode: claim, handle, finish, commit, all in one transaction. */
static int
worker_turn_transaction(struct worker *w)
{
	struct turn *t = &w->turn;
	enum db_status st;
	bool aborted = false;
	int n = limit_before_claim(w);

	if (n <= 0)
		return n;
	n = claim_batch(w);
	if (n <= 0 && (w->limit.waiting || w->limit.key_retry))
		return 0;	/* rolled back already */
	if (n <= 0)
		return n < 0 ? -1 : (worker_commit(w) == 0 ? 0 : -1);
	for (int i = 0; i < n && !aborted && t->handled < w->q->batch &&
	    limit_allows(w); i++) {
		/* Its key at its limit (per_key): back at the COMMIT. */
		if (!limit_key_allows(w, (size_t)i))
			continue;
		if (!turn_row_workable(w, (size_t)i))
			continue;
		/*
		 * Rows ok'd in bulk send nothing: look at the link before
		 * each handler but the turn's first, whose claim has just
		 * answered on it (a system call a row at batch 1).
		 */
		if (t->handled > 0 && db_link_closed(w->db))
			return worker_link_lost(w);
		st = worker_row(w, &t->rows.rows[i], &aborted);
		if (st != DB_OK) {
			worker_db_failed(w, st, w->failing);
			turn_rolled_back(w);
			return -1;
		}
		if (!aborted)
			t->handled++;
		/* Stopping: the rest of the batch goes back untouched. */
		if (w->stopper.stop)
			break;
	}
	if (t->link_lost)
		return worker_link_lost(w);
	/*
	 * A handler stopped by a stop or reload leaves its row unfinished;
	 * the rows finished before it are committed all the same.
	 */
	if ((st = finish_oks(w)) != DB_OK) {
		worker_db_failed(w, st, w->failing);
		turn_rolled_back(w);
		return -1;
	}
	t->uncommitted = true;
	/* A throttle: commit now, then write it and wait it out. */
	if (w->limit.throttle_ms >= 0) {
		if (worker_commit(w) != 0)
			return -1;
		limit_throttle_now(w);
		return 0;
	}
	/* Only rows that cannot be worked: commit, not to hold them, and pause. */
	if (worker_widen(w, t->handled)) {
		if (worker_commit(w) != 0)
			return -1;
		return worker_turn_end(w, t->handled, n);
	}
	/* Else the COMMIT goes with the next claim, or worker_run sends it. */
	return n;
}

/*
 * Whether the daemon's wake watcher read the queue lately: then it wakes
 * this worker when rows come, and the worker need not claim to find out.
 */
static bool
worker_watched(const struct worker *w, int64_t now)
{
	const struct worker_stats *st = w->args->stats;

	return st != NULL && st->watched_ms != 0 && now - st->watched_ms <=
	    WAKE_VOUCH_FACTOR * w->q->idle_ms + WAKE_VOUCH_SLACK_MS;
}

/*
 * Wait for the next claim, logging a pipe handler's stderr as it comes.
 * The claim comes when the wake watcher wakes the worker (SIGUSR1, see
 * wake_watch.c); or when idle_ms has passed and the watcher has not read
 * the queue lately (it is dead, stuck, or cannot read it: the worker
 * polls as it would without it); or after WAKE_FLOOR_FACTOR × idle_ms
 * all the same, so that no worker waits for ever.
 */
static void
worker_idle(struct worker *w, int64_t idle_ms)
{
	int64_t start = now_ms(), look = start + idle_ms;
	int64_t floor = start + WAKE_FLOOR_FACTOR * w->q->idle_ms;

	while (!w->stopper.stop && !w->stopper.wake) {
		int64_t now = now_ms(), until = floor;
		struct pollfd p[2] = {
			{ .fd = w->stopper.fd, .events = POLLIN },
			{ .fd = w->pipe.child.pid > 0 ? w->pipe.child.err : -1,
			  .events = POLLIN },
		};
		if (now >= floor)
			break;
		if (now >= look) {
			if (!worker_watched(w, now))
				break;
			look = now + idle_ms;
		}
		if (look < until)
			until = look;
		if (poll(p, 2, (int)(until - now > 1000 ? 1000 :
		    until - now)) > 0) {
			stopper_read(&w->stopper);
			pipe_drain(&w->pipe);
		}
	}
	w->stopper.wake = false;
}

/*
 * Drain, after a turn that began at look and claimed nothing: when the
 * select, read without locking, finds nothing either, say so to the
 * supervisor (drained_us), which ends the drain once every worker of the
 * named queues has found nothing since the last rows any of them
 * finished (a retry or a done may move a row into another queue's
 * select).  Rows that others hold are waited for: they may come back.
 * Returns true when the worker should look again at once: its own COMMIT
 * went with that claim, so the look began before it.
 */
static bool
worker_drain_look(struct worker *w, int64_t look)
{
	struct worker_stats *st = w->args->stats;

	if (st != NULL && st->finished_us >= look)
		return true;
	if (st == NULL || status_select_finds(w->db, w->q) != 0)
		return false;
	st->drained_us = look;
	return false;
}

static void
worker_free(struct worker *w)
{
	int64_t grace = PIPE_EOF_GRACE_MS;

	/* Never past the stop's deadline, whose SIGQUIT would cut it. */
	if (w->stopper.stop_deadline_ms - now_ms() < grace)
		grace = w->stopper.stop_deadline_ms - now_ms();
	if (w->q->handler == HANDLER_PIPE)
		pipe_stop(&w->pipe, grace > 0 ? grace : 0);
	worker_disconnect(w);
	on_failed_free(w);
	limit_free(w);
	turn_free(&w->turn);
	cursor_free(&w->cursor);
	keyed_free(&w->keyed);
	free(w->keyed_list.rows);
	buf_free(&w->claim_text);
	buf_free(&w->ride_vars);
	buf_free(&w->ride_list);
	buf_free(&w->ride_front);
	buf_free(&w->ride_back);
	recent_free(w->recent);
	free(w->path);
	handler_env_free(w->pipe.envp);
	handler_env_free(w->base_env);
	handler_result_free(&w->result);
}

static void
worker_pipe_init(struct worker *w)
{
	char worker_s[32];
	struct buf qenv = { 0 };

	buf_printf(&qenv, "ROWQ_QUEUE=%s", w->q->name);
	snprintf(worker_s, sizeof(worker_s), "ROWQ_WORKER=%d", w->args->number);
	const char *extra[] = { qenv.data, worker_s, NULL };
	w->pipe.path = w->path;
	w->pipe.argv = w->q->argv;
	w->pipe.envp = handler_env(w->base_env, extra);
	w->pipe.queue = w->q->name;
	w->pipe.child = (struct child){ .in = -1, .out = -1, .err = -1,
	    .pidfd = -1 };
	buf_free(&qenv);
}

/*
 * The worker's loop.  Each turn: stop if asked to or after max_jobs rows;
 * make sure the connection (and a pipe handler) is up; claim and handle a
 * batch; when nothing was claimed, exit in drain mode or sleep `idle`
 * (with jitter, so that workers started together do not poll together).
 */
int
worker_run(const struct worker_args *args)
{
	struct worker w = { .args = args, .q = args->queue,
	    .limit = { .throttle_ms = -1 } };
	int rc = ROWQ_EXIT_OK;

	log_procinit("%s/%d", w.q->name, args->number);
	log_set_generation(args->generation);
	proc_title("rowq: %s worker %d (starting)", w.q->name, args->number);
	stopper_init(&w.stopper, false);
	signal(SIGPIPE, SIG_IGN);
	if (args->stats) {
		child_pgid_slot = &args->stats->handler_pgid;
		args->stats->worked_ms = wall_ms();
	}
	worker_set_state(&w, WORKER_STARTING, NULL);
	if (w.q->handler != HANDLER_NONE &&
	    handler_resolve(w.q->argv[0], &w.path) == -1) {
		log_error("%s: cannot run %s: %s", w.q->argv_where,
		    w.q->argv[0], strerror(errno));
		return ROWQ_EXIT_CONFIG;
	}
	if (w.q->handler != HANDLER_NONE) {
		w.base_env = handler_base_env(args->cfg, w.q);
		identity_worker_init(config_handler_user(args->cfg, w.q));
	}
	if (w.q->handler == HANDLER_PIPE)
		worker_pipe_init(&w);
	while (!w.stopper.stop) {
		if (w.q->max_jobs > 0 && w.jobs >= w.q->max_jobs) {
			log_info("%ld rows handled: exiting to be replaced",
			    w.jobs);
			break;
		}
		enum connect_status r = worker_ensure_db(&w);
		if (r == CONNECT_CONFIG) {
			rc = ROWQ_EXIT_CONFIG;
			break;
		}
		if (r == CONNECT_AWAY)
			continue;
		/* No claim without a handler to give the rows to. */
		if (w.q->handler == HANDLER_PIPE && !pipe_ready(&w.pipe)) {
			/* Starting it again may wait: commit before that. */
			worker_flush(&w);
			if (pipe_ensure(&w.pipe, &w.stopper) == -1)
				break;
		}
		/* The first start is not a restart. */
		if (args->stats && w.pipe.restarts > 1)
			args->stats->handler_restarts = w.pipe.restarts - 1;
		int64_t look = now_us();
		int n = w.q->lease.enabled ? lease_turn(&w) :
		    worker_turn_transaction(&w);
		if (w.drain_failed) {
			rc = ROWQ_EXIT_FAILURE;
			break;
		}
		if (w.limit.waiting) {
			limit_wait(&w);
			continue;
		}
		/* Keys at their limit left out: claim the others at once. */
		if (w.limit.key_retry) {
			w.limit.key_retry = false;
			continue;
		}
		if (n == 0) {
			w.widen = 0;
			/* Rows that cannot be worked will not be. */
			if (args->drain && w.only_unworkable)
				break;
			if (args->drain && worker_drain_look(&w, look))
				continue;
			worker_set_state(&w, WORKER_IDLE, NULL);
			proc_title("rowq: %s worker %d (idle)", w.q->name,
			    args->number);
			int64_t idle = w.q->idle_ms;
			idle += (int64_t)(backoff_random() % (uint64_t)(idle / 10 + 1));
			worker_idle(&w, idle);
		}
	}
	worker_flush(&w);
	worker_set_state(&w, WORKER_STOPPING, NULL);
	worker_free(&w);
	return rc;
}
