/*
 * schedule_runs.c: `rowq schedule runs NAME [--limit N] [--json]`, what
 * became of a schedule's latest slots: when each was inserted and how
 * late, the row it inserted, and that row's story (row_story.c): waiting,
 * running, done or failed, its tries, the first try's start and the last
 * try's outcome and duration.
 *
 * Each slot's transaction wrote the slot's run into the run log of the
 * queue the schedule names (queue:; schedule_db.c): outcome "inserted",
 * the schedule's name as its error, started and finished at the slot's
 * instant.  So the latest slots are found by their instants, which the
 * schedule gives (schedule_slots_upto, up to its last slot): one lookup
 * each in the log's index on (queue, finished), however many other runs
 * the queue has; the row's tries are its runs under the same key.  Every
 * read is a plain one, which locks nothing.
 */
#include "rowq.h"
#include "db.h"
#include "schedule.h"
#include "runs.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>

#define SCHEDULE_RUNS_DEFAULT	10	/* slots shown unless told */
#define SCHEDULE_RUNS_MAX	1000

/*
 * The runs of the schedule's slots among its last limit up to upto,
 * newest first, into rs (S_NCOLS columns a row); a slot skipped, or
 * inserted before the schedule had queue:, has none.  A missing run log
 * is no slot.  Returns 0, or -1 (logged).
 */
static int
schedule_runs_slots(struct db *db, const struct queue *q,
    const struct schedule *s, int64_t upto, long limit, struct rowset *rs)
{
	struct value v[2] = {
		{ .type = VALUE_TEXT, .s = q->name, .len = strlen(q->name) },
		{ .type = VALUE_BLOB, .s = s->name, .len = strlen(s->name) },
	};
	int64_t *slot = xcalloc((size_t)limit, sizeof(*slot));
	size_t n = schedule_slots_upto(s, upto, (size_t)limit, slot);
	struct schedule_slot_text t;
	struct buf sql = { 0 };
	enum db_status st;
	struct db_stmt *stmt = NULL;
	int rc = 0;

	buf_printf(&sql, "SELECT row_key, TIMESTAMPDIFF(SECOND, "
	    "'1970-01-01', finished), DATE_FORMAT(finished + INTERVAL "
	    "duration_ms * 1000 MICROSECOND, '%%Y-%%m-%%dT%%H:%%i:%%s.%%fZ'), "
	    "duration_ms FROM %s WHERE queue = ? AND outcome = 'inserted' AND "
	    "error = ? AND finished IN (", runs_table(q));
	/* Instants as DATETIME literals in UTC, digits only. */
	for (size_t k = 0; k < n; k++) {
		schedule_slot_text(s, slot[k], &t);
		buf_printf(&sql, "%s'%s'", k > 0 ? ", " : "", t.utc);
	}
	buf_puts(&sql, ") ORDER BY finished DESC, id DESC");
	if (n > 0 && (stmt = db_prepare(db, sql.data, &st)) == NULL) {
		if (!db_no_such_table(db)) {
			log_error("the run log %s: %s", runs_table(q),
			    db_error(db));
			rc = -1;
		}
	} else if (n > 0 && db_stmt_fetch_all(stmt, v, 2, rs) != DB_OK) {
		log_error("the run log %s: %s", runs_table(q), db_error(db));
		rc = -1;
	}
	db_stmt_free(stmt);
	(void)db_rollback(db);
	buf_free(&sql);
	free(slot);
	return rc;
}

/* The slot's row's story, and its tries: runs past the slot's own. */
static void
schedule_runs_story(struct slot_story *ss, struct db *db,
    const struct queue *q, const struct row *slot, const struct live *lv)
{
	memset(ss, 0, sizeof(*ss));
	ss->slot = slot;
	if (slot->len[S_KEY] == 0)
		return;
	row_story_read(&ss->story, db, q, slot->value[S_KEY],
	    slot->len[S_KEY], false, lv);
	ss->read = true;
	for (size_t i = 0; i < ss->story.runs.nrows; i++) {
		const struct row *r = &ss->story.runs.rows[i];
		if (atoll(runs_v(r, R_TRY)) < 1 ||
		    strcmp(runs_v(r, R_OUTCOME), "none") == 0)
			continue;
		if (ss->first == NULL)
			ss->first = r;
		ss->last = r;
		ss->tries++;
	}
}

/* What became of the slot's row, in one word. */
const char *
schedule_slot_state(const struct slot_story *ss)
{
	if (!ss->read)
		return "no key";
	return ss->story.state;
}

/*
 * The slots of r's schedule among its last limit (none before a daemon
 * ran it), newest first, each with its row's story, running from lv (the
 * daemons' status as the caller read it), into l.  Returns 0, or -1 when the run log could not be read
 * (logged); l->failed says a story's runs could not.  Free it with
 * schedule_slots_free.
 */
int
schedule_slots_read(struct schedule_slots *l, struct db *db,
    const struct config *cfg, const struct schedule_row *r, long limit,
    const struct live *lv)
{
	memset(l, 0, sizeof(*l));
	l->s = r->s;
	l->q = config_queue(cfg, r->s->queue);
	if (r->known && schedule_runs_slots(db, l->q, r->s, r->last_slot,
	    limit, &l->rs) == -1)
		return -1;
	l->slot = xcalloc(l->rs.nrows + 1, sizeof(*l->slot));
	for (l->n = 0; l->n < l->rs.nrows; l->n++) {
		struct slot_story *ss = &l->slot[l->n];
		schedule_runs_story(ss, db, l->q, &l->rs.rows[l->n], lv);
		if (ss->read && !ss->story.runs_ok)
			l->failed = true;
	}
	return 0;
}

void
schedule_slots_free(struct schedule_slots *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->slot[i].read)
			row_story_free(&l->slot[i].story);
	free(l->slot);
	rowset_free(&l->rs, S_NCOLS);
	memset(l, 0, sizeof(*l));
}

/* The slot's time, as unix seconds. */
int64_t
schedule_slot_unix(const struct slot_story *ss)
{
	return strtoll(runs_v(ss->slot, S_SLOT), NULL, 10);
}

static void
schedule_runs_table(const struct schedule_slots *l)
{
	const struct schedule *s = l->s;
	const struct slot_story *ss = l->slot;
	size_t n = l->n;
	char shown[sizeof(((struct schedule_slot_text *)0)->shown)];
	struct buf key = { 0 };
	char late[32], dur[32];

	printf("%-19s %8s %-12s %-9s %5s %-27s %-7s %10s\n", "SLOT", "LATE",
	    "KEY", "STATE", "TRIES", "FIRST_TRY", "OUTCOME", "DURATION");
	for (size_t i = 0; i < n; i++) {
		const struct row *slot = ss[i].slot;
		const struct row *last = ss[i].last;
		schedule_shown(s, schedule_slot_unix(&ss[i]), shown,
		    sizeof(shown));
		duration_format(atoll(runs_v(slot, S_LATE)), late,
		    sizeof(late));
		buf_reset(&key);
		buf_append(&key, "", 0);
		if (slot->len[S_KEY] == 0)
			buf_puts(&key, "-");
		else
			buf_append(&key, slot->value[S_KEY], slot->len[S_KEY]);
		if (last != NULL)
			duration_format(atoll(runs_v(last, R_DURATION)), dur,
			    sizeof(dur));
		printf("%-19s %8s %-12s %-9s %5zu %-27s %-7s %10s\n",
		    shown, late, key.data, schedule_slot_state(&ss[i]),
		    ss[i].tries, ss[i].first ? runs_v(ss[i].first,
		    R_STARTED) : "-", last ? runs_v(last, R_OUTCOME) : "-",
		    last ? dur : "-");
	}
	buf_free(&key);
}

static void
schedule_runs_json_one(struct buf *b, const struct schedule *s,
    const struct slot_story *ss)
{
	const struct row *slot = ss->slot;
	struct schedule_slot_text t;
	long long at = schedule_slot_unix(ss);

	schedule_slot_text(s, at, &t);
	buf_printf(b, "{\"slot\":\"%s\",\"slot_utc\":\"%s\",\"slot_unix\":"
	    "%lld,\"inserted\":\"%s\",\"late_ms\":%s,\"key\":", t.local, t.utc,
	    at, runs_v(slot, S_INSERTED), runs_v(slot, S_LATE));
	if (slot->len[S_KEY] > 0)
		json_string(b, slot->value[S_KEY], slot->len[S_KEY]);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"state\":");
	json_string(b, schedule_slot_state(ss), strlen(schedule_slot_state(ss)));
	buf_printf(b, ",\"tries\":%zu,\"first_try\":", ss->tries);
	if (ss->first != NULL)
		json_string(b, runs_v(ss->first, R_STARTED),
		    strlen(runs_v(ss->first, R_STARTED)));
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"outcome\":");
	if (ss->last != NULL) {
		json_string(b, runs_v(ss->last, R_OUTCOME),
		    strlen(runs_v(ss->last, R_OUTCOME)));
		buf_printf(b, ",\"duration_ms\":%s", runs_v(ss->last,
		    R_DURATION));
	} else
		buf_puts(b, "null,\"duration_ms\":null");
	buf_puts(b, ",\"runs\":");
	if (ss->read)
		runs_json_list(b, &ss->story.runs);
	else
		buf_puts(b, "[]");
	buf_putc(b, '}');
}

static void
schedule_runs_json(const struct schedule_slots *l)
{
	const struct schedule *s = l->s;
	struct buf b = { 0 };

	buf_puts(&b, "{\"schedule\":");
	json_string(&b, s->name, strlen(s->name));
	buf_puts(&b, ",\"queue\":");
	json_string(&b, s->queue, strlen(s->queue));
	buf_puts(&b, ",\"slots\":[");
	for (size_t i = 0; i < l->n; i++) {
		buf_puts(&b, i > 0 ? ",\n" : "\n");
		schedule_runs_json_one(&b, s, &l->slot[i]);
	}
	buf_puts(&b, l->n > 0 ? "\n]}" : "]}");
	printf("%s\n", b.data);
	buf_free(&b);
}

/* The slots' stories, printed; 0, or 1 when a read failed. */
static int
schedule_runs_print(struct db *db, const struct config *cfg,
    const struct schedule *s, long limit, bool json)
{
	struct schedule_list sl = { 0 };
	struct schedule_slots l = { 0 };
	struct live lv = { 0 };
	int rc = ROWQ_EXIT_OK;

	status_live_load(&lv, cfg);
	if (schedule_list_read(db, cfg, &sl, NULL) == -1) {
		log_error("%s: cannot read the schedules: %s", cfg->path,
		    db_error(db));
		rc = ROWQ_EXIT_FAILURE;
	} else if (schedule_slots_read(&l, db, cfg,
	    &sl.row[s - cfg->schedules], limit, &lv) == -1)
		rc = ROWQ_EXIT_FAILURE;
	else if (json)
		schedule_runs_json(&l);
	else if (l.n == 0)
		printf("schedule %s: no slot in the run log of queue %s yet\n",
		    s->name, l.q->name);
	else
		schedule_runs_table(&l);
	fflush(stdout);
	if (l.failed)
		rc = ROWQ_EXIT_FAILURE;
	schedule_slots_free(&l);
	schedule_list_free(&sl);
	status_live_free(&lv);
	return rc;
}

/*
 * `rowq schedule runs NAME [--limit N] [--json]`: 0; 1 the database
 * failed; 2 usage, or a schedule without queue:; 78 the configuration.
 */
int
schedule_runs_command(const char *path, int argc, char **argv)
{
	const char *name = NULL;
	long limit = SCHEDULE_RUNS_DEFAULT;
	bool json = false;
	struct config *cfg = NULL;
	const struct schedule *s;
	struct db *db = NULL;
	enum db_status st;
	int rc = ROWQ_EXIT_OK;

	for (int i = 0; i < argc; i++) {
		char *end;
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
			limit = strtol(argv[++i], &end, 10);
			if (*end != '\0' || limit < 1 ||
			    limit > SCHEDULE_RUNS_MAX) {
				fprintf(stderr, "rowq: schedule runs: --limit "
				    "takes a number from 1 to %d\n",
				    SCHEDULE_RUNS_MAX);
				return ROWQ_EXIT_USAGE;
			}
		} else if (argv[i][0] != '-' && name == NULL)
			name = argv[i];
		else {
			fprintf(stderr, "rowq: schedule runs: unexpected "
			    "argument %s\n", argv[i]);
			return ROWQ_EXIT_USAGE;
		}
	}
	if (name == NULL) {
		fprintf(stderr, "rowq: schedule runs: name a schedule\n");
		return ROWQ_EXIT_USAGE;
	}
	/* The configuration's answer first: a usage error needs no server. */
	if ((cfg = config_load(path)) == NULL)
		return ROWQ_EXIT_CONFIG;
	if ((s = config_schedule(cfg, name)) == NULL) {
		log_error("%s: no schedule named %s", path, name);
		rc = ROWQ_EXIT_USAGE;
	} else if (s->queue == NULL) {
		log_error("%s: schedules.%s has no queue: key, which names the "
		    "queue whose run log keeps its slots", path, name);
		rc = ROWQ_EXIT_USAGE;
	} else if ((db = db_open(&cfg->db, &st)), st != DB_OK) {
		log_error("%s: database: cannot connect: %s", path,
		    db_error(db));
		rc = ROWQ_EXIT_FAILURE;
	} else
		rc = schedule_runs_print(db, cfg, s, limit, json);
	db_close(db);
	config_free(cfg);
	return rc;
}
