/*
 * status.c: `rowq status`, from two sources.  The database says how many
 * rows are ready, in progress and failed, and how old the oldest is; the
 * running daemon, through its status socket, says what each worker is
 * doing and what it has done since the start.
 *
 * The socket speaks lines of tab-separated key=value fields, one line per
 * daemon, queue and worker: easy to write from the supervisor, easy to
 * read here, and readable with `socat - UNIX:/run/rowq/rowq.sock`.
 */
#include "rowq.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define STATUS_REPLY_MAX	(4 * 1024 * 1024)
#define STATUS_TIMEOUT_MS	5000

/* ---- the database side ---- */

/* Run a row-returning statement with no parameters into rs. */
static int
status_fetch(struct db *db, const char *sql, const char *where,
    struct rowset *rs, struct db_stmt **out)
{
	enum db_status st;
	struct db_stmt *s = db_prepare(db, sql, &st);

	*out = s;
	if (s == NULL || db_stmt_fetch_all(s, NULL, 0, rs) != DB_OK) {
		log_error("%s: %s", where, db_error(db));
		return -1;
	}
	return 0;
}

/*
 * The age of the oldest waiting row among the first STATUS_CAP in the
 * select's order: the age column holds a time (DATETIME, TIMESTAMP) or
 * Unix seconds, and the server does the arithmetic, in its own time zone.
 */
static int
status_oldest(struct db *db, const struct queue *q, const struct column *cols,
    size_t ncols, const struct rowset *rs, long long *age)
{
	const char *min = NULL;
	int a = -1;
	bool numeric;
	struct rowset out = { 0 };
	struct db_stmt *s;
	struct value v = { .type = VALUE_TEXT };
	enum db_status st;

	*age = -1;
	for (size_t i = 0; i < ncols; i++)
		if (strcmp(cols[i].name, q->age_column) == 0)
			a = (int)i;
	if (a < 0)
		return 0;
	numeric = cols[a].kind == COLUMN_INTEGER ||
	    cols[a].kind == COLUMN_NUMBER;
	for (size_t i = 0; i < rs->nrows; i++) {
		const char *x = rs->rows[i].value[a];
		if (x == NULL)
			continue;
		if (min == NULL || (numeric ? atof(x) < atof(min) :
		    strcmp(x, min) < 0))
			min = x;
	}
	if (min == NULL)
		return 0;
	s = db_prepare(db, numeric ? "SELECT UNIX_TIMESTAMP() - ?" :
	    "SELECT TIMESTAMPDIFF(SECOND, ?, NOW())", &st);
	v.s = min;
	v.len = strlen(min);
	if (s == NULL || db_stmt_fetch_all(s, &v, 1, &out) != DB_OK) {
		log_error("%s: %s", q->age_where, db_error(db));
		db_stmt_free(s);
		return -1;
	}
	if (out.nrows == 1 && out.rows[0].value[0] != NULL)
		*age = atoll(out.rows[0].value[0]);
	rowset_clear(&out, 1);
	free(out.rows);
	db_stmt_free(s);
	return 0;
}

/*
 * What the select finds, read without locking (a plain read in the
 * session's READ COMMITTED): every waiting row among its first STATUS_CAP
 * in its order, whether a worker holds it or not.  A locking read, even
 * one committed at once, would make a worker's or a drain's claim skip
 * the rows it holds at that moment; which rows are someone's is said by
 * the workers themselves (status_split).  The read stays on the claim's
 * index: never a scan of the table.
 */
int
status_query(struct db *db, const struct queue *q, struct queue_db_status *out)
{
	struct rowset seen = { 0 }, failed = { 0 };
	struct db_stmt *plain = NULL, *count = NULL;
	const struct column *cols = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };
	int rc = -1;

	out->waiting = 0;
	out->oldest_age_s = out->failed = -1;
	buf_printf(&sql, "%s\nLIMIT %d", q->select.positional, STATUS_CAP);
	if (status_fetch(db, sql.data, q->select.where, &seen, &plain) == -1)
		goto done;
	cols = db_stmt_columns(plain, &ncols);
	out->waiting = (long)seen.nrows;
	if (q->age_column != NULL &&
	    status_oldest(db, q, cols, ncols, &seen, &out->oldest_age_s) == -1)
		goto done;
	if (q->failed_count.text != NULL) {
		if (status_fetch(db, q->failed_count.positional,
		    q->failed_count.where, &failed, &count) == -1)
			goto done;
		if (failed.nrows > 0 && failed.rows[0].value[0] != NULL)
			out->failed = atoll(failed.rows[0].value[0]);
	}
	rc = 0;
done:
	(void)db_rollback(db);	/* a read: nothing to keep */
	rowset_clear(&seen, ncols);
	rowset_clear(&failed, 1);
	free(seen.rows);
	free(failed.rows);
	db_stmt_free(plain);
	db_stmt_free(count);
	buf_free(&sql);
	return rc;
}

/*
 * READY and IN_PROGRESS from what the select finds and how many workers
 * of the daemon are busy with a row of the queue (busy -1: no daemon
 * answered, in_progress then -1 too).  A row a worker is on still matches
 * the select until its outcome commits, so it is taken out of the ready
 * ones; in lease mode the select already leaves leased rows out.  Rows
 * that another daemon or session holds count as ready: only a locking
 * read could tell them apart, and that would steal them from the claims.
 */
void
status_split(const struct queue *q, const struct queue_db_status *db,
    long busy, long *ready, long *in_progress)
{
	*ready = db->waiting;
	*in_progress = busy;
	if (busy > 0 && !q->lease.enabled)
		*ready = db->waiting > busy ? db->waiting - busy : 0;
}

/*
 * Whether the select still finds a row, by a plain read that locks
 * nothing: 1 yes, 0 no, -1 the database failed (logged).  A drain whose
 * claim found nothing asks this before it ends: a row that the claim
 * skipped because another worker or session holds it still matches, and
 * may come back (a rollback, a retry).  Call it with no transaction open;
 * it leaves none.
 */
int
status_select_finds(struct db *db, const struct queue *q)
{
	struct rowset rs = { 0 };
	struct db_stmt *s = NULL;
	size_t ncols = 0;
	struct buf sql = { 0 };
	int rc;

	buf_printf(&sql, "%s\nLIMIT 1", q->select.positional);
	rc = status_fetch(db, sql.data, q->select.where, &rs, &s);
	if (rc == 0)
		rc = rs.nrows > 0 ? 1 : 0;
	if (s != NULL)
		(void)db_stmt_columns(s, &ncols);
	(void)db_rollback(db);
	rowset_clear(&rs, ncols);
	free(rs.rows);
	db_stmt_free(s);
	buf_free(&sql);
	return rc;
}

/* ---- the socket ---- */

/* /run/rowq/NAME.sock, NAME being the config file's name without .yaml. */
char *
status_socket_path(const struct config *cfg)
{
	const char *base = strrchr(cfg->path, '/');
	struct buf b = { 0 };
	size_t n;

	if (cfg->status_socket != NULL)
		return xstrdup(cfg->status_socket);
	base = base ? base + 1 : cfg->path;
	n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".yaml") == 0)
		n -= 5;
	else if (n > 4 && strcmp(base + n - 4, ".yml") == 0)
		n -= 4;
	buf_puts(&b, "/run/rowq/");
	buf_append(&b, base, n);
	buf_puts(&b, ".sock");
	return buf_steal(&b);
}

/*
 * Listen on a unix socket only the daemon's user (and root) may use: the
 * status names rows and errors.  A stale socket from a dead daemon is
 * replaced; a live one is not stolen.
 */
int
status_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_error("status_socket: path too long: %s", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd == -1) {
		log_warn("status socket");
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		log_error("status socket %s: another rowq is answering there",
		    path);
		close(fd);
		return -1;
	}
	/* A stale socket of ours may go; anything else is not ours to remove. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_error("status_socket %s: not a socket: not removing "
			    "it; name another path", path);
			close(fd);
			return -1;
		}
		(void)unlink(path);
	}
	old = umask(0117);
	/* The unit's UMask=0077 would leave out the group: say 0660 here. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    chmod(path, 0660) == -1 || listen(fd, 16) == -1) {
		log_warn("status socket %s", path);
		umask(old);
		close(fd);
		return -1;
	}
	umask(old);
	return fd;
}

/* "\tkey=value", the value kept on one line and free of tabs. */
void
status_field(struct buf *b, const char *key, const char *value)
{
	buf_printf(b, "\t%s=", key);
	for (const char *p = value ? value : ""; *p; p++)
		buf_putc(b, (*p == '\t' || *p == '\n' || *p == '\r') ? ' ' : *p);
}

static char *
status_read_socket(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct buf b = { 0 };
	int64_t end = now_ms() + STATUS_TIMEOUT_MS;
	char chunk[8192];
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "path too long");
		return NULL;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		snprintf(err, errlen, "%s", strerror(errno));
		if (fd != -1)
			close(fd);
		return NULL;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			snprintf(err, errlen, "no answer within %ds",
			    STATUS_TIMEOUT_MS / 1000);
			break;
		}
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n == 0) {
			close(fd);
			return buf_steal(&b);
		}
		if (n < 0 && errno != EINTR) {
			snprintf(err, errlen, "%s", strerror(errno));
			break;
		}
		if (n > 0)
			buf_append(&b, chunk, (size_t)n);
		if (b.len > STATUS_REPLY_MAX) {
			snprintf(err, errlen, "answer too long");
			break;
		}
	}
	close(fd);
	buf_free(&b);
	return NULL;
}

/* The value of key on a status line (fields after the first), or NULL. */
static const char *
status_get(char *const *fields, size_t n, const char *key)
{
	size_t len = strlen(key);

	for (size_t i = 1; i < n; i++)
		if (strncmp(fields[i], key, len) == 0 && fields[i][len] == '=')
			return fields[i] + len + 1;
	return NULL;
}

/* ---- `rowq status` ---- */

struct line {
	char	**field;
	size_t	  n;
};

struct live {
	char		*text;		/* the daemon's answer, split in place */
	struct line	*lines;
	size_t		 nlines;
	char		 error[256];	/* why there is no answer */
};

static void
live_load(struct live *lv, const struct config *cfg)
{
	char *path = status_socket_path(cfg);
	char err[200];

	lv->text = status_read_socket(path, err, sizeof(err));
	if (lv->text == NULL) {
		snprintf(lv->error, sizeof(lv->error), "%s: %s", path, err);
		free(path);
		return;
	}
	free(path);
	for (char *save = NULL, *l = strtok_r(lv->text, "\n", &save); l;
	    l = strtok_r(NULL, "\n", &save)) {
		struct line *ln;
		lv->lines = xrealloc(lv->lines, (lv->nlines + 1) *
		    sizeof(*lv->lines));
		ln = &lv->lines[lv->nlines++];
		ln->field = NULL;
		ln->n = 0;
		for (char *s2 = NULL, *f = strtok_r(l, "\t", &s2); f;
		    f = strtok_r(NULL, "\t", &s2)) {
			ln->field = xrealloc(ln->field, (ln->n + 1) *
			    sizeof(*ln->field));
			ln->field[ln->n++] = f;
		}
	}
}

static void
live_free(struct live *lv)
{
	for (size_t i = 0; i < lv->nlines; i++)
		free(lv->lines[i].field);
	free(lv->lines);
	free(lv->text);
}

/* The line of a kind ("daemon", "queue", "worker") for a queue, from i on. */
static const struct line *
live_find(const struct live *lv, const char *kind, const char *queue,
    size_t *i)
{
	for (; *i < lv->nlines; (*i)++) {
		const struct line *l = &lv->lines[*i];
		const char *q;
		if (l->n == 0 || strcmp(l->field[0], kind) != 0)
			continue;
		q = status_get(l->field, l->n, "queue");
		if (queue == NULL || (q != NULL && strcmp(q, queue) == 0)) {
			(*i)++;
			return l;
		}
	}
	return NULL;
}

static const char *
live_value(const struct line *l, const char *key)
{
	const char *v = l ? status_get(l->field, l->n, key) : NULL;

	return v ? v : "";
}

struct report {
	const struct queue	*q;
	struct queue_db_status	 db;
	bool			 db_ok;
	bool			 alert;
	long			 ready;
	long			 in_progress;	/* -1: no daemon answered */
};

static void
report_age(char *out, size_t len, long long s)
{
	if (s < 0)
		snprintf(out, len, "-");
	else
		duration_format(s * 1000, out, len);
}

static void
report_table(const struct report *r, size_t n, const struct live *lv)
{
	size_t i = 0;
	const struct line *d = live_find(lv, "daemon", NULL, &i);

	/* Left of DONE: the database now; from DONE on: since the start. */
	printf("%-16s %7s %11s %8s %11s %9s %8s %8s %8s\n", "QUEUE", "READY",
	    "IN_PROGRESS", "OLDEST", "FAILED_ROWS", "DONE", "RETRIED",
	    "FAILED", "ROWS/MIN");
	for (size_t k = 0; k < n; k++) {
		char ready[24], inprog[24], age[32], failed[24];
		size_t j = 0;
		const struct line *l = live_find(lv, "queue", r[k].q->name, &j);

		if (!r[k].db_ok) {
			snprintf(ready, sizeof(ready), "?");
			snprintf(inprog, sizeof(inprog), "?");
			snprintf(age, sizeof(age), "?");
			snprintf(failed, sizeof(failed), "?");
		} else {
			snprintf(ready, sizeof(ready), "%ld%s", r[k].ready,
			    r[k].db.waiting >= STATUS_CAP ? "+" : "");
			if (r[k].in_progress < 0)
				snprintf(inprog, sizeof(inprog), "-");
			else
				snprintf(inprog, sizeof(inprog), "%ld",
				    r[k].in_progress);
			report_age(age, sizeof(age), r[k].db.oldest_age_s);
			if (r[k].db.failed < 0)
				snprintf(failed, sizeof(failed), "-");
			else
				snprintf(failed, sizeof(failed), "%lld",
				    r[k].db.failed);
		}
		printf("%-16s %7s %11s %7s%s %11s %9s %8s %8s %8s\n",
		    r[k].q->name, ready, inprog, age, r[k].alert ? "!" : " ",
		    failed, l ? live_value(l, "done") : "-",
		    l ? live_value(l, "retried") : "-",
		    l ? live_value(l, "failed") : "-",
		    l ? live_value(l, "rate") : "-");
	}
	if (d == NULL) {
		printf("\ndaemon: not answering (%s)\n", lv->error);
		return;
	}
	printf("\ndaemon: pid %s, generation %s, last reload: %s\n",
	    live_value(d, "pid"), live_value(d, "generation"),
	    *live_value(d, "reload") ? live_value(d, "reload") : "none");
	for (size_t k = 0; k < n; k++) {
		const struct line *w;
		size_t j = 0;
		while ((w = live_find(lv, "worker", r[k].q->name, &j)) != NULL) {
			char since[32] = "";
			long long for_s = atoll(live_value(w, "for"));
			duration_format(for_s * 1000, since, sizeof(since));
			printf("  %s/%s pid %s: %s", r[k].q->name,
			    live_value(w, "number"), live_value(w, "pid"),
			    live_value(w, "state"));
			if (*live_value(w, "key"))
				printf(" row %s", live_value(w, "key"));
			printf(" for %s%s\n", since,
			    strcmp(live_value(w, "retiring"), "1") == 0 ?
			    " (retiring)" : "");
		}
		size_t q = 0;
		const struct line *ql = live_find(lv, "queue", r[k].q->name, &q);
		if (ql && *live_value(ql, "last_error"))
			printf("  %s last error: %s\n", r[k].q->name,
			    live_value(ql, "last_error"));
	}
}

static void
json_kv_num(struct buf *b, const char *key, const char *num, bool *first)
{
	buf_printf(b, "%s\"%s\":%s", *first ? "" : ",", key,
	    (num && *num) ? num : "null");
	*first = false;
}

static void
json_kv_str(struct buf *b, const char *key, const char *s, bool *first)
{
	buf_printf(b, "%s\"%s\":", *first ? "" : ",", key);
	json_string(b, s, strlen(s));
	*first = false;
}

/* Every field of a live line, numbers as numbers. */
static void
json_live_line(struct buf *b, const struct line *l)
{
	bool first = true;

	buf_putc(b, '{');
	for (size_t i = 1; i < l->n; i++) {
		char *eq = strchr(l->field[i], '=');
		char key[64];
		if (eq == NULL || eq - l->field[i] >= (long)sizeof(key))
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)(eq - l->field[i]),
		    l->field[i]);
		char *end;
		(void)strtoll(eq + 1, &end, 10);
		if (*(eq + 1) != '\0' && *end == '\0')
			json_kv_num(b, key, eq + 1, &first);
		else
			json_kv_str(b, key, eq + 1, &first);
	}
	buf_putc(b, '}');
}

static void
report_json(const struct report *r, size_t n, const struct live *lv)
{
	struct buf b = { 0 };
	size_t i = 0;
	const struct line *d = live_find(lv, "daemon", NULL, &i);
	char num[32];

	buf_puts(&b, "{\"queues\":[");
	for (size_t k = 0; k < n; k++) {
		bool first = true;
		size_t j = 0;
		const struct line *l = live_find(lv, "queue", r[k].q->name, &j);
		buf_puts(&b, k ? ",{" : "{");
		json_kv_str(&b, "name", r[k].q->name, &first);
		if (r[k].db_ok) {
			snprintf(num, sizeof(num), "%ld", r[k].ready);
			json_kv_num(&b, "ready", num, &first);
			json_kv_num(&b, "ready_capped", r[k].db.waiting >=
			    STATUS_CAP ? "true" : "false", &first);
			snprintf(num, sizeof(num), "%ld", r[k].in_progress);
			json_kv_num(&b, "in_progress", r[k].in_progress < 0 ?
			    NULL : num, &first);
			snprintf(num, sizeof(num), "%lld", r[k].db.oldest_age_s);
			json_kv_num(&b, "oldest_age_seconds",
			    r[k].db.oldest_age_s < 0 ? NULL : num, &first);
			snprintf(num, sizeof(num), "%lld", r[k].db.failed);
			json_kv_num(&b, "failed_rows", r[k].db.failed < 0 ?
			    NULL : num, &first);
		}
		json_kv_num(&b, "alert", r[k].alert ? "true" : "false", &first);
		buf_puts(&b, ",\"daemon\":");
		if (l != NULL)
			json_live_line(&b, l);
		else
			buf_puts(&b, "null");
		buf_puts(&b, ",\"workers\":[");
		const struct line *w;
		size_t wi = 0;
		bool firstw = true;
		while ((w = live_find(lv, "worker", r[k].q->name, &wi)) != NULL) {
			if (!firstw)
				buf_putc(&b, ',');
			json_live_line(&b, w);
			firstw = false;
		}
		buf_puts(&b, "]}");
	}
	buf_puts(&b, "],\"daemon\":");
	if (d != NULL)
		json_live_line(&b, d);
	else {
		buf_puts(&b, "{\"error\":");
		json_string(&b, lv->error, strlen(lv->error));
		buf_putc(&b, '}');
	}
	buf_puts(&b, "}\n");
	fputs(b.data, stdout);
	buf_free(&b);
}

/*
 * `rowq status [QUEUE...] [--json]`.  Exit 0; 1 when a queue's oldest row
 * is older than its alert_age (a Nagios-style check) or the database
 * cannot be asked; 78 for a bad configuration; 2 for an unknown queue.
 */
int
status_command(const char *path, char **names, size_t nnames, bool json)
{
	struct config *cfg = config_load(path);
	struct report *r;
	struct live lv = { 0 };
	struct db *db;
	enum db_status st;
	size_t n = 0;
	int rc = ROWQ_EXIT_OK;

	if (cfg == NULL)
		return ROWQ_EXIT_CONFIG;
	r = xcalloc(cfg->nqueues, sizeof(*r));
	for (size_t i = 0; i < cfg->nqueues; i++) {
		bool wanted = nnames == 0;
		for (size_t k = 0; k < nnames; k++)
			wanted |= strcmp(names[k], cfg->queues[i].name) == 0;
		if (wanted)
			r[n++].q = &cfg->queues[i];
	}
	for (size_t k = 0; k < nnames; k++) {
		if (config_queue(cfg, names[k]) == NULL) {
			log_error("%s: no queue named %s", path, names[k]);
			rc = ROWQ_EXIT_USAGE;
		}
	}
	if (rc != ROWQ_EXIT_OK)
		goto out;
	db = db_open(&cfg->db, &st);
	if (st != DB_OK) {
		log_error("%s: database: cannot connect: %s", path,
		    db_error(db));
		rc = ROWQ_EXIT_FAILURE;
	} else {
		for (size_t k = 0; k < n; k++) {
			r[k].db_ok = status_query(db, r[k].q, &r[k].db) == 0;
			if (!r[k].db_ok)
				rc = ROWQ_EXIT_FAILURE;
			r[k].alert = r[k].db_ok && r[k].q->alert_age_ms > 0 &&
			    r[k].db.oldest_age_s * 1000 > r[k].q->alert_age_ms;
			if (r[k].alert)
				rc = ROWQ_EXIT_FAILURE;
		}
	}
	db_close(db);
	live_load(&lv, cfg);
	for (size_t k = 0; k < n; k++) {
		size_t j = 0;
		const struct line *l = live_find(&lv, "queue", r[k].q->name, &j);
		long busy = l && *live_value(l, "busy") ?
		    atol(live_value(l, "busy")) : -1;
		status_split(r[k].q, &r[k].db, busy, &r[k].ready,
		    &r[k].in_progress);
	}
	if (json)
		report_json(r, n, &lv);
	else
		report_table(r, n, &lv);
	fflush(stdout);
	live_free(&lv);
out:
	free(r);
	config_free(cfg);
	return rc;
}
