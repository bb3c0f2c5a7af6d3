/*
 * schedule_cmd.c: the commands of schedules: `rowq schedules [--json]`
 * (each schedule with its expression, zone, last slot, next slot and
 * catch-up, also in `rowq status`), `rowq schedule run NAME` (one slot
 * now, by hand), and `rowq pause --schedule NAME` / `rowq resume
 * --schedule NAME` (a row in the pause table, pause.c).
 */
#include "rowq.h"
#include "db.h"
#include "schedule.h"
#include "runs.h"
#include "claim.h"
#include "commands.h"

#include <stdlib.h>
#include <string.h>

/* ---- what the schedule table says ---- */

static void
schedule_list_rows(struct schedule_list *l, const struct rowset *rs,
    size_t ncols)
{
	for (size_t k = 0; ncols == 4 && k < rs->nrows; k++) {
		char *const *v = rs->rows[k].value;
		for (size_t i = 0; v[0] != NULL && i < l->n; i++) {
			struct schedule_row *r = &l->row[i];
			if (strcmp(r->s->name, v[0]) != 0)
				continue;
			r->known = true;
			r->last_slot = v[1] != NULL ? strtoll(v[1], NULL, 10) : -1;
			r->last_inserted = v[2] != NULL ? strtoll(v[2], NULL,
			    10) : -1;
			r->skipped = v[3] != NULL ? strtoull(v[3], NULL, 10) : 0;
		}
	}
}

/*
 * The row of each schedule's last slot that names its queue: its key,
 * and its state as its story tells it, running from lv.  A run log that
 * cannot be read leaves it unknown (logged).
 */
static void
schedule_list_last(struct db *db, const struct config *cfg,
    struct schedule_list *l, const struct live *lv)
{
	for (size_t i = 0; i < l->n; i++) {
		struct schedule_row *r = &l->row[i];
		struct schedule_slots slots;
		if (r->s->queue == NULL)
			continue;
		if (schedule_slots_read(&slots, db, cfg, r, 1, lv) == 0 &&
		    slots.n == 1) {
			const struct row *slot = slots.slot[0].slot;
			r->last_row = true;
			snprintf(r->last_key, sizeof(r->last_key), "%.*s",
			    (int)slot->len[S_KEY], slot->len[S_KEY] > 0 ?
			    slot->value[S_KEY] : "");
			snprintf(r->last_state, sizeof(r->last_state), "%s",
			    schedule_slot_state(&slots.slot[0]));
			r->last_tries = slots.slot[0].tries;
		}
		schedule_slots_free(&slots);
	}
}

/*
 * Each schedule's row of the schedule table and its pause, by plain reads
 * that lock nothing, the transaction ended after them; with lv, also the
 * row each one's last slot inserted (queue:), running from lv.  A
 * missing table says nothing yet.  -1: the database failed (db_error).
 */
int
schedule_list_read(struct db *db, const struct config *cfg,
    struct schedule_list *l, const struct live *lv)
{
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 }, key = { 0 };
	int64_t now = wall_ms();
	int rc = 0;

	memset(l, 0, sizeof(*l));
	l->n = cfg->nschedules;
	l->row = xcalloc(l->n + 1, sizeof(*l->row));
	for (size_t i = 0; i < l->n; i++) {
		l->row[i].s = &cfg->schedules[i];
		l->row[i].last_slot = l->row[i].last_inserted = -1;
	}
	if (l->n == 0)
		return 0;
	buf_printf(&sql, "SELECT name, last_slot, last_inserted, skipped "
	    "FROM %s", config_schedule_table(cfg));
	if (db_query(db, sql.data, &rs, &cols, &ncols) == DB_OK)
		schedule_list_rows(l, &rs, ncols);
	else if (!db_no_such_table(db))
		rc = -1;
	(void)db_rollback(db);
	if (rc == 0 && pause_read(db, pause_table(cfg), &l->paused) == -1)
		rc = -1;
	for (size_t i = 0; i < l->n; i++) {
		struct schedule_row *r = &l->row[i];
		buf_reset(&key);
		buf_printf(&key, "%s%s", SCHEDULE_PAUSE_PREFIX, r->s->name);
		r->pause = pause_find(&l->paused, key.data);
		/* A schedule no daemon has seen starts from then. */
		r->next = schedule_due(r->s, r->known ? r->last_slot :
		    now / 1000, now);
	}
	if (rc == 0 && lv != NULL)
		schedule_list_last(db, cfg, l, lv);
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
	buf_free(&sql);
	buf_free(&key);
	return rc;
}

void
schedule_list_free(struct schedule_list *l)
{
	pause_list_free(&l->paused);
	free(l->row);
	memset(l, 0, sizeof(*l));
}

/* "cron 0 3 * * *", "every 15m" */
static void
schedule_expression(const struct schedule *s, char *out, size_t len)
{
	snprintf(out, len, "%s %s", s->every_s > 0 ? "every" : "cron",
	    s->expr);
}

/* A slot as the tables show it, in the schedule's zone; "-": none. */
void
schedule_shown(const struct schedule *s, int64_t slot, char *out, size_t len)
{
	struct schedule_slot_text t;
	char *sp;

	if (slot < 0) {
		snprintf(out, len, "-");
		return;
	}
	schedule_slot_text(s, slot, &t);
	snprintf(out, len, "%s", t.shown);
	/* The zone has a column of its own. */
	if ((sp = strrchr(out, ' ')) != NULL)
		*sp = '\0';
}

/* The schedules as a table, under `rowq status` too. */
void
schedule_list_table(const struct schedule_list *l)
{
	char expr[CRON_TEXT_MAX + 8], catch_up[32];
	char last[sizeof(((struct schedule_slot_text *)0)->shown)];
	char next[sizeof(last)];

	if (l->n == 0)
		return;
	printf("%-16s %-18s %-16s %-19s %-19s %8s %7s  %s\n", "SCHEDULE",
	    "EXPRESSION", "TIMEZONE", "LAST_SLOT", "NEXT_SLOT", "CATCH_UP",
	    "SKIPPED", "LAST_ROW");
	for (size_t i = 0; i < l->n; i++) {
		const struct schedule_row *r = &l->row[i];
		char row[sizeof(r->last_key) + sizeof(r->last_state) + 2] = "-";
		schedule_expression(r->s, expr, sizeof(expr));
		schedule_shown(r->s, r->last_inserted, last, sizeof(last));
		schedule_shown(r->s, r->next, next, sizeof(next));
		duration_format(r->s->catch_up_ms, catch_up, sizeof(catch_up));
		if (r->last_row)
			snprintf(row, sizeof(row), "%s %s", *r->last_key ?
			    r->last_key : "-", r->last_state);
		printf("%-16s %-18s %-16s %-19s %-19s %8s %7llu  %s\n",
		    r->s->name, expr, r->s->timezone, last, r->pause != NULL ?
		    "PAUSED" : next, catch_up, (unsigned long long)r->skipped,
		    row);
	}
	for (size_t i = 0; i < l->n; i++) {
		const struct pause_entry *p = l->row[i].pause;
		char ago[32];
		if (p == NULL)
			continue;
		duration_format(p->for_s * 1000, ago, sizeof(ago));
		printf("schedule %s PAUSED since %s (%s)%s%s\n",
		    l->row[i].s->name, p->since, ago, *p->reason ? ": " : "",
		    p->reason);
	}
}

static void
schedule_json_slot(struct buf *b, const char *key, const struct schedule *s,
    int64_t slot)
{
	struct schedule_slot_text t;

	if (slot < 0) {
		buf_printf(b, ",\"%s\":null,\"%s_utc\":null,\"%s_unix\":null",
		    key, key, key);
		return;
	}
	schedule_slot_text(s, slot, &t);
	buf_printf(b, ",\"%s\":\"%s\",\"%s_utc\":\"%s\",\"%s_unix\":%lld", key,
	    t.local, key, t.utc, key, (long long)slot);
}

/* The schedules as a JSON array, after "schedules": */
void
schedule_list_json(const struct schedule_list *l, struct buf *b)
{
	buf_putc(b, '[');
	for (size_t i = 0; i < l->n; i++) {
		const struct schedule_row *r = &l->row[i];
		buf_puts(b, i > 0 ? ",{\"name\":" : "{\"name\":");
		json_string(b, r->s->name, strlen(r->s->name));
		buf_printf(b, ",\"%s\":", r->s->every_s > 0 ? "every" : "cron");
		json_string(b, r->s->expr, strlen(r->s->expr));
		buf_puts(b, ",\"timezone\":");
		json_string(b, r->s->timezone, strlen(r->s->timezone));
		buf_printf(b, ",\"catch_up_seconds\":%lld",
		    (long long)(r->s->catch_up_ms / 1000));
		schedule_json_slot(b, "last_slot", r->s, r->last_inserted);
		schedule_json_slot(b, "next_slot", r->s, r->next);
		buf_printf(b, ",\"skipped\":%llu,\"last_row\":",
		    (unsigned long long)r->skipped);
		if (r->last_row) {
			buf_puts(b, "{\"key\":");
			if (*r->last_key)
				json_string(b, r->last_key, strlen(r->last_key));
			else
				buf_puts(b, "null");
			buf_puts(b, ",\"state\":");
			json_string(b, r->last_state, strlen(r->last_state));
			buf_printf(b, ",\"tries\":%zu}", r->last_tries);
		} else
			buf_puts(b, "null");
		buf_puts(b, ",\"paused\":");
		if (r->pause != NULL) {
			buf_puts(b, "{\"since\":");
			json_string(b, r->pause->since, strlen(r->pause->since));
			buf_printf(b, ",\"for_seconds\":%lld,\"reason\":",
			    r->pause->for_s);
			json_string(b, r->pause->reason, strlen(r->pause->reason));
			buf_putc(b, '}');
		} else
			buf_puts(b, "null");
		buf_putc(b, '}');
	}
	buf_putc(b, ']');
}

/* ---- the commands ---- */

/* The schedule named, or NULL (logged, *rc 2). */
static const struct schedule *
schedule_cmd_find(const char *path, const struct config *cfg,
    const char *name, int *rc)
{
	const struct schedule *s = config_schedule(cfg, name);

	if (s == NULL) {
		log_error("%s: no schedule named %s", path, name);
		*rc = ROWQ_EXIT_USAGE;
	}
	return s;
}

/* `rowq schedules [--json]`: 0, 1 the database failed, 78 the config. */
int
schedules_command(const char *path, bool json)
{
	struct config *cfg;
	struct schedule_list l = { 0 };
	struct live lv = { 0 };
	int rc = ROWQ_EXIT_OK;
	struct db *db = pause_connect(path, NULL, &cfg, &rc);

	if (db == NULL)
		goto out;
	status_live_load(&lv, cfg);
	if (schedule_list_read(db, cfg, &l, &lv) == -1) {
		log_error("%s: cannot read the schedules: %s", path,
		    db_error(db));
		rc = ROWQ_EXIT_FAILURE;
	} else if (json) {
		struct buf b = { 0 };
		buf_puts(&b, "{\"schedules\":");
		schedule_list_json(&l, &b);
		buf_puts(&b, "}\n");
		fputs(b.data, stdout);
		buf_free(&b);
	} else if (cfg->nschedules == 0)
		printf("%s: no schedules\n", path);
	else
		schedule_list_table(&l);
out:
	schedule_list_free(&l);
	status_live_free(&lv);
	db_close(db);
	config_free(cfg);
	return rc;
}

/*
 * The transaction of a slot by hand: the insert, and with queue: the
 * slot's run (its run log made first when missing), committed; each
 * failure said with the key it comes from.  *id: the row inserted.
 */
static enum db_status
schedule_hand_txn(struct schedule_conn *c, const struct schedule *s,
    int64_t slot, unsigned long long *id)
{
	const struct queue *q = s->queue ? config_queue(c->cfg, s->queue) :
	    NULL;
	size_t i = (size_t)(s - c->cfg->schedules);
	enum db_status st;

	if (q != NULL && runs_ensure(c->db, q) == -1)
		return DB_FATAL;
	if ((st = schedule_insert(c, i, slot)) != DB_OK) {
		log_error("%s: %s", s->insert.where, db_error(c->db));
	} else if (q != NULL && (st = schedule_slot_run(c, i, slot, wall_ms(),
	    "by_hand", id)) != DB_OK) {
		log_error("%s: the run log %s of queue %s: %s; the slot is not "
		    "inserted", s->where, runs_table(q), q->name,
		    db_error(c->db));
	} else if ((st = db_commit(c->db)) != DB_OK)
		log_error("%s: %s", s->insert.where, db_error(c->db));
	if (st != DB_OK)
		(void)db_rollback(c->db);
	return st;
}

/*
 * `rowq schedule run NAME`: one slot now, by hand: the insert with :slot
 * the time now, committed; the schedule's last slot stays, so its slots
 * go on as they were.  A paused schedule runs all the same.
 */
int
schedule_run_command(const char *path, const char *name)
{
	struct config *cfg;
	struct schedule_conn c;
	struct schedule_list l = { 0 };
	struct schedule_slot_text t;
	char last[TZ_TIME_LEN + TZ_NAME_MAX + 8] = "none yet";
	char row[128] = "";	/* ", row ID of queue NAME" */
	unsigned long long id = 0;
	int64_t slot = wall_ms() / 1000;
	const struct schedule *s;
	int rc = ROWQ_EXIT_OK;
	struct db *db = pause_connect(path, NULL, &cfg, &rc);

	memset(&c, 0, sizeof(c));
	if (db == NULL || (s = schedule_cmd_find(path, cfg, name, &rc)) ==
	    NULL)
		goto out;
	if (schedule_list_read(db, cfg, &l, NULL) == 0) {
		const struct schedule_row *r = &l.row[s - cfg->schedules];
		if (r->last_inserted >= 0) {
			schedule_slot_text(s, r->last_inserted, &t);
			snprintf(last, sizeof(last), "%s", t.shown);
		}
		if (r->pause != NULL)
			log_info("%s: the schedule is paused; a run by hand "
			    "inserts all the same", name);
	}
	c.cfg = cfg;
	c.db = db;
	schedule_slot_text(s, slot, &t);
	if (schedule_hand_txn(&c, s, slot, &id) == DB_OK) {
		if (s->queue != NULL && id > 0)
			snprintf(row, sizeof(row), ", row %llu of queue %s", id,
			    s->queue);
		log_info("%s: manual slot %s inserted (rowq schedule run); the "
		    "last slot stays %s%s", name, t.shown, last, row);
	} else
		rc = ROWQ_EXIT_FAILURE;
out:
	schedule_list_free(&l);
	schedule_conn_close(&c);
	db_close(db);
	config_free(cfg);
	return rc;
}

/*
 * `rowq pause --schedule NAME [--reason TEXT]`, `rowq resume --schedule
 * NAME`: the row SCHEDULE_PAUSE_PREFIX NAME in the pause table, which the
 * schedule's transaction reads.  Exit statuses as pause_command's.
 */
int
schedule_pause_command(const char *path, const char *name,
    const char *reason, bool pause)
{
	struct config *cfg;
	struct buf key = { 0 };
	unsigned long long affected = 0;
	int rc = ROWQ_EXIT_OK;
	struct db *db = pause_connect(path, NULL, &cfg, &rc);

	if (db == NULL || schedule_cmd_find(path, cfg, name, &rc) == NULL)
		goto out;
	buf_printf(&key, "%s%s", SCHEDULE_PAUSE_PREFIX, name);
	if ((pause ? pause_row_add(db, cfg, key.data, reason, &affected) :
	    pause_row_remove(db, cfg, key.data, &affected)) == -1)
		rc = ROWQ_EXIT_FAILURE;
	else if (pause)
		printf("schedule %s: %s; no daemon inserts its slots until "
		    "rowq resume --schedule %s (the slots due meanwhile are "
		    "skipped)\n", name, affected > 0 ? "paused" :
		    "already paused", name);
	else
		printf("schedule %s: %s\n", name, affected > 0 ? "resumed; "
		    "its next slot is inserted when due" : "not paused");
out:
	buf_free(&key);
	db_close(db);
	config_free(cfg);
	return rc;
}
