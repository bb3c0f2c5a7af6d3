/*
 * status.c: `rowq status`, from two sources.  The database says how many
 * rows are ready, in progress and failed, and how old the oldest is
 * (status_db.c); the running daemon, through its status socket
 * (status_socket.c), says what each worker is doing and what it has done
 * since the start.  Shown as a table, or as JSON with --json.
 *
 * The socket speaks lines of tab-separated key=value fields, one line per
 * daemon, queue and worker: easy to write from the supervisor, easy to
 * read here, and readable with `socat - UNIX:/run/rowq/rowq.sock`.
 */
#include "rowq.h"
#include "db.h"
#include "schedule.h"
#include "claim.h"
#include "commands.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define STATUS_REPLY_MAX	(4 * 1024 * 1024)
#define STATUS_TIMEOUT_MS	5000

/* ---- the daemon's answer ---- */

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

void
status_live_load(struct live *lv, const struct config *cfg)
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

void
status_live_free(struct live *lv)
{
	for (size_t i = 0; i < lv->nlines; i++)
		free(lv->lines[i].field);
	free(lv->lines);
	free(lv->text);
}

/* The line of a kind ("daemon", "queue", "worker") for a queue, from i on. */
const struct line *
status_live_find(const struct live *lv, const char *kind, const char *queue,
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

const char *
status_live_value(const struct line *l, const char *key)
{
	const char *v = l ? status_get(l->field, l->n, key) : NULL;

	return v ? v : "";
}

/* ---- the renderers: a table, JSON ---- */

static void
status_age(char *out, size_t len, long long s)
{
	if (s < 0)
		snprintf(out, len, "-");
	else
		duration_format(s * 1000, out, len);
}

/* The daemon's last prune of a queue (prune_daemon.c's fields). */
static void
status_prune_line(const char *queue, const struct line *l)
{
	char ago[32];

	duration_format(atoll(status_live_value(l, "prune_ago")) * 1000, ago,
	    sizeof(ago));
	printf("  %s last prune: %s, %s rows in %s chunks, %.1fs, started "
	    "%s ago%s%s\n", queue, status_live_value(l, "prune"),
	    status_live_value(l, "prune_rows"), status_live_value(l, "prune_chunks"),
	    (double)atoll(status_live_value(l, "prune_ms")) / 1000, ago,
	    *status_live_value(l, "prune_error") ? ": " : "",
	    status_live_value(l, "prune_error"));
}

/* workers: {min, max}: how many now, and the last change. */
static void
status_scale_line(const char *queue, const struct line *l)
{
	char ago[32];

	printf("  %s workers: %s (from %s to %s)", queue, status_live_value(l, "scale"),
	    status_live_value(l, "scale_min"), status_live_value(l, "scale_max"));
	if (*status_live_value(l, "scale_why")) {
		duration_format(atoll(status_live_value(l, "scale_ago")) * 1000, ago,
		    sizeof(ago));
		printf(", last %s, %s ago", status_live_value(l, "scale_why"), ago);
	}
	putchar('\n');
}

/* How a queue's idle workers are woken, when it is not by polling. */
static void
status_wake_line(const char *queue, const struct line *l)
{
	printf("  %s wake: %s", queue, status_live_value(l, "wake"));
	if (*status_live_value(l, "binlog_lag"))
		printf(", %ss behind the server's binary log",
		    status_live_value(l, "binlog_lag"));
	else
		printf(" (polled until the binary log can be followed)");
	putchar('\n');
}

/*
 * The queue's worker whose handler has run the longest, when that is
 * longer than alert_running: a handler hung on a row is seen before its
 * timeout fires.  NULL: none (or no alert_running, or no daemon).
 */
static const struct line *
status_running_too_long(const struct live *lv, const struct queue *q)
{
	const struct line *w, *worst = NULL;
	long long worst_s = 0;
	size_t j = 0;

	if (q->alert_running_ms <= 0)
		return NULL;
	while ((w = status_live_find(lv, "worker", q->name, &j)) != NULL) {
		long long for_s = atoll(status_live_value(w, "for"));
		if (strcmp(status_live_value(w, "state"), "busy") == 0 &&
		    for_s * 1000 > q->alert_running_ms && for_s > worst_s) {
			worst = w;
			worst_s = for_s;
		}
	}
	return worst;
}

/* HH:MM:SS, here, ms from now. */
static void
status_clock(char *out, size_t len, long long ms)
{
	time_t t = (time_t)((wall_ms() + ms) / 1000);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(out, len, "%H:%M:%S", &tm);
}

/* Whether the queue's limit holds it back now. */
static bool
status_limited(const struct queue *q, const struct limit_status *l)
{
	return (q->limit.concurrency > 0 && l->in_use >= q->limit.concurrency) ||
	    l->next_start_ms > 0 || l->throttled_ms > 0 ||
	    l->keys_throttled > 0;
}

/*
 * "email limited: concurrency 4/4, rate 100/1m, next start in 12s,
 * throttled until 10:42:03 (partner says slow down)"; "limit:" while
 * nothing holds it back.
 */
static void
status_limit_line(const struct status_queue *r)
{
	const struct limit_policy *p = &r->q->limit;
	const struct limit_status *l = &r->limit;
	struct buf b = { 0 };
	char d[32];

	buf_printf(&b, "%s %s:", r->q->name, status_limited(r->q, l) ?
	    "limited" : "limit");
	if (p->concurrency > 0)
		buf_printf(&b, " concurrency %ld/%d,", l->in_use < 0 ? 0 :
		    l->in_use, p->concurrency);
	if (p->rate.count > 0) {
		duration_format(p->rate.period_ms, d, sizeof(d));
		buf_printf(&b, " rate %d/%s", p->rate.count, d);
		if (p->burst > 1)
			buf_printf(&b, " (burst %d)", p->burst);
		if (l->next_start_ms > 0) {
			duration_format(l->next_start_ms, d, sizeof(d));
			buf_printf(&b, ", next start in %s,", d);
		} else
			buf_puts(&b, ", next start now,");
	}
	if (p->key_column != NULL) {
		buf_printf(&b, " per %s", p->key_column);
		if (p->key_concurrency > 0)
			buf_printf(&b, ": concurrency %d", p->key_concurrency);
		if (p->key_rate.count > 0) {
			duration_format(p->key_rate.period_ms, d, sizeof(d));
			buf_printf(&b, "%s rate %d/%s", p->key_concurrency ?
			    "," : ":", p->key_rate.count, d);
		}
		buf_putc(&b, ',');
		if (l->keys_throttled > 0)
			buf_printf(&b, " %ld%s key%s throttled,",
			    l->keys_throttled, l->keys_throttled >=
			    STATUS_CAP ? "+" : "", l->keys_throttled == 1 ?
			    "" : "s");
	}
	if (l->throttled_ms > 0) {
		status_clock(d, sizeof(d), l->throttled_ms);
		buf_printf(&b, " throttled until %s", d);
		if (l->reason[0] != '\0')
			buf_printf(&b, " (%s)", l->reason);
		buf_putc(&b, ',');
	}
	if (b.data[b.len - 1] == ',')
		b.data[--b.len] = '\0';
	if (b.data[b.len - 1] == ':')
		buf_puts(&b, " throttles only");
	printf("%s\n", b.data);
	buf_free(&b);
}

/* Each alert in words, under the table, for the mail a check sends. */
static void
status_alerts(const struct status_queue *r, size_t n)
{
	char age[32], limit[32];

	for (size_t k = 0; k < n; k++) {
		if (r[k].alert) {
			status_age(age, sizeof(age), r[k].db.oldest_age_s);
			duration_format(r[k].q->alert_age_ms, limit,
			    sizeof(limit));
			printf("\nALERT %s: the oldest row has waited %s, more "
			    "than alert_age %s", r[k].q->name, age, limit);
		}
		if (r[k].alert_failed)
			printf("\nALERT %s: %lld failed rows, more than "
			    "alert_failed %ld", r[k].q->name, r[k].db.failed,
			    r[k].q->alert_failed);
		if (r[k].alert_running != NULL) {
			const struct line *w = r[k].alert_running;
			duration_format(atoll(status_live_value(w, "for")) * 1000, age,
			    sizeof(age));
			duration_format(r[k].q->alert_running_ms, limit,
			    sizeof(limit));
			printf("\nALERT %s: worker %s (pid %s) has run row %s for "
			    "%s, more than alert_running %s", r[k].q->name,
			    status_live_value(w, "number"), status_live_value(w, "pid"),
			    status_live_value(w, "key"), age, limit);
		}
	}
	for (size_t k = 0; k < n; k++)
		if (r[k].alert || r[k].alert_failed || r[k].alert_running) {
			putchar('\n');
			break;
		}
}

/* The schedules, and what the daemon's scheduler last failed with. */
static void
status_schedules(const struct schedule_list *sl, const struct live *lv)
{
	const struct line *l;
	size_t i = 0;

	if (sl == NULL || sl->n == 0)
		return;
	putchar('\n');
	schedule_list_table(sl);
	while ((l = status_live_find(lv, "schedule", NULL, &i)) != NULL)
		if (*status_live_value(l, "error"))
			printf("  schedule %s last error: %s\n",
			    status_live_value(l, "schedule"), status_live_value(l, "error"));
}

static void
status_table(const struct status_queue *r, size_t n, const struct live *lv,
    const struct status_link *link, const struct schedule_list *sl)
{
	size_t i = 0;
	const struct line *d = status_live_find(lv, "daemon", NULL, &i);

	/* Left of DONE: the database now; from DONE on: since the start. */
	printf("%-16s %7s %11s %8s %11s %9s %8s %8s %8s\n", "QUEUE", "READY",
	    "IN_PROGRESS", "OLDEST", "FAILED_ROWS", "DONE", "RETRIED",
	    "FAILED", "ROWS/MIN");
	for (size_t k = 0; k < n; k++) {
		char ready[24], inprog[24], age[32], failed[24];
		size_t j = 0;
		const struct line *l = status_live_find(lv, "queue", r[k].q->name, &j);

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
			status_age(age, sizeof(age), r[k].db.oldest_age_s);
			if (r[k].db.failed < 0)
				snprintf(failed, sizeof(failed), "-");
			else
				snprintf(failed, sizeof(failed), "%lld",
				    r[k].db.failed);
		}
		printf("%-16s %7s %11s %7s%s %10s%s %9s %8s %8s %8s\n",
		    r[k].q->name, ready, inprog, age, r[k].alert ? "!" : " ",
		    failed, r[k].alert_failed ? "!" : " ",
		    l ? status_live_value(l, "done") : "-",
		    l ? status_live_value(l, "retried") : "-",
		    l ? status_live_value(l, "failed") : "-",
		    l ? status_live_value(l, "rate") : "-");
	}
	status_alerts(r, n);
	status_schedules(sl, lv);
	for (size_t k = 0; k < n; k++)
		if (r[k].q->limit.enabled && r[k].limit_ok)
			status_limit_line(&r[k]);
	for (size_t k = 0; k < n; k++) {
		char ago[32];
		if (r[k].pause == NULL)
			continue;
		duration_format(r[k].pause->for_s * 1000, ago, sizeof(ago));
		printf("%s PAUSED since %s (%s)%s%s", r[k].q->name,
		    r[k].pause->since, ago, *r[k].pause->reason ? ": " : "",
		    r[k].pause->reason);
		if (r[k].pause->resume_in_s >= 0) {
			char in[32], at[32];
			duration_format(r[k].pause->resume_in_s * 1000, in,
			    sizeof(in));
			status_clock(at, sizeof(at),
			    r[k].pause->resume_in_s * 1000);
			printf("; resumes by itself at %s (in %s)", at, in);
		}
		putchar('\n');
	}
	if (link->where[0] != '\0')
		printf("\ndatabase: %s, %s%s\n", link->where,
		    link->cipher[0] ? "TLS cipher " : "not encrypted",
		    link->cipher);
	if (d == NULL) {
		printf("\ndaemon: not answering (%s)\n", lv->error);
		return;
	}
	printf("\ndaemon: pid %s, generation %s, last reload: %s\n",
	    status_live_value(d, "pid"), status_live_value(d, "generation"),
	    *status_live_value(d, "reload") ? status_live_value(d, "reload") : "none");
	for (size_t k = 0; k < n; k++) {
		const struct line *w;
		size_t j = 0;
		while ((w = status_live_find(lv, "worker", r[k].q->name, &j)) != NULL) {
			char since[32] = "";
			long long for_s = atoll(status_live_value(w, "for"));
			duration_format(for_s * 1000, since, sizeof(since));
			printf("  %s/%s pid %s: %s", r[k].q->name,
			    status_live_value(w, "number"), status_live_value(w, "pid"),
			    status_live_value(w, "state"));
			if (*status_live_value(w, "key"))
				printf(" row %s", status_live_value(w, "key"));
			printf(" for %s%s\n", since,
			    strcmp(status_live_value(w, "retiring"), "1") == 0 ?
			    " (retiring)" : "");
		}
		size_t q = 0;
		const struct line *ql = status_live_find(lv, "queue", r[k].q->name, &q);
		if (ql && *status_live_value(ql, "last_error"))
			printf("  %s last error: %s\n", r[k].q->name,
			    status_live_value(ql, "last_error"));
		if (ql && *status_live_value(ql, "prune"))
			status_prune_line(r[k].q->name, ql);
		if (ql && *status_live_value(ql, "scale"))
			status_scale_line(r[k].q->name, ql);
		if (ql && *status_live_value(ql, "wake") &&
		    strcmp(status_live_value(ql, "wake"), "poll") != 0)
			status_wake_line(r[k].q->name, ql);
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

/* The limit in JSON: null for a queue without limit:. */
static void
status_limit_json(struct buf *b, const struct status_queue *r)
{
	const struct limit_policy *p = &r->q->limit;
	const struct limit_status *l = &r->limit;
	char num[64], d[32];
	bool first = true;

	if (!p->enabled || !r->limit_ok) {
		buf_puts(b, "null");
		return;
	}
	buf_putc(b, '{');
	snprintf(num, sizeof(num), "%d", p->concurrency);
	json_kv_num(b, "concurrency", p->concurrency ? num : NULL, &first);
	snprintf(num, sizeof(num), "%ld", l->in_use);
	json_kv_num(b, "in_use", l->in_use >= 0 ? num : NULL, &first);
	duration_format(p->rate.period_ms, d, sizeof(d));
	snprintf(num, sizeof(num), "%d/%s", p->rate.count, d);
	if (p->rate.count > 0)
		json_kv_str(b, "rate", num, &first);
	else
		json_kv_num(b, "rate", NULL, &first);
	snprintf(num, sizeof(num), "%d", p->burst);
	json_kv_num(b, "burst", num, &first);
	snprintf(num, sizeof(num), "%lld", l->next_start_ms < 0 ? 0 :
	    l->next_start_ms);
	json_kv_num(b, "next_start_ms", p->rate.count ? num : NULL, &first);
	snprintf(num, sizeof(num), "%lld", l->throttled_ms);
	json_kv_num(b, "throttled_ms", l->throttled_ms > 0 ? num : NULL,
	    &first);
	json_kv_str(b, "throttle_reason", l->reason, &first);
	if (p->key_column != NULL)
		json_kv_str(b, "per_key_column", p->key_column, &first);
	snprintf(num, sizeof(num), "%ld", l->keys_throttled);
	json_kv_num(b, "keys_throttled", num, &first);
	json_kv_num(b, "limited", status_limited(r->q, l) ? "true" : "false",
	    &first);
	buf_putc(b, '}');
}

/* The --json answer, into out (the console's /api/status too). */
void
status_json(struct buf *out, const struct status_queue *r, size_t n,
    const struct live *lv, const struct status_link *link,
    const struct schedule_list *sl)
{
	struct buf b = { 0 };
	size_t i = 0;
	const struct line *d = status_live_find(lv, "daemon", NULL, &i);
	char num[32];

	buf_puts(&b, "{\"queues\":[");
	for (size_t k = 0; k < n; k++) {
		bool first = true;
		size_t j = 0;
		const struct line *l = status_live_find(lv, "queue", r[k].q->name, &j);
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
		json_kv_num(&b, "alert", r[k].alert || r[k].alert_failed ||
		    r[k].alert_running ? "true" : "false", &first);
		json_kv_num(&b, "alert_failed", r[k].alert_failed ? "true" :
		    "false", &first);
		json_kv_num(&b, "alert_running", r[k].alert_running ? "true" :
		    "false", &first);
		buf_puts(&b, ",\"paused\":");
		if (r[k].pause != NULL) {
			bool firstp = true;
			buf_putc(&b, '{');
			json_kv_str(&b, "since", r[k].pause->since, &firstp);
			snprintf(num, sizeof(num), "%lld", r[k].pause->for_s);
			json_kv_num(&b, "for_seconds", num, &firstp);
			json_kv_str(&b, "reason", r[k].pause->reason, &firstp);
			snprintf(num, sizeof(num), "%lld",
			    r[k].pause->resume_in_s);
			json_kv_num(&b, "resume_in_seconds",
			    r[k].pause->resume_in_s >= 0 ? num : NULL, &firstp);
			buf_putc(&b, '}');
		} else
			buf_puts(&b, "null");
		buf_puts(&b, ",\"limit\":");
		status_limit_json(&b, &r[k]);
		buf_puts(&b, ",\"daemon\":");
		if (l != NULL)
			json_live_line(&b, l);
		else
			buf_puts(&b, "null");
		buf_puts(&b, ",\"workers\":[");
		const struct line *w;
		size_t wi = 0;
		bool firstw = true;
		while ((w = status_live_find(lv, "worker", r[k].q->name, &wi)) != NULL) {
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
	if (link->where[0] != '\0') {
		bool firstd = true;
		buf_puts(&b, ",\"database\":{");
		json_kv_str(&b, "host", link->where, &firstd);
		if (link->cipher[0])
			json_kv_str(&b, "tls_cipher", link->cipher, &firstd);
		else
			json_kv_num(&b, "tls_cipher", NULL, &firstd);
		buf_putc(&b, '}');
	}
	if (sl != NULL && sl->n > 0) {
		buf_puts(&b, ",\"schedules\":");
		schedule_list_json(sl, &b);
	}
	buf_puts(&b, "}\n");
	buf_append(out, b.data, b.len);
	buf_free(&b);
}

static void
status_json_print(const struct status_queue *r, size_t n,
    const struct live *lv, const struct status_link *link,
    const struct schedule_list *sl)
{
	struct buf b = { 0 };

	status_json(&b, r, n, lv, link, sl);
	fputs(b.data, stdout);
	buf_free(&b);
}

/*
 * What the database says of each queue in r (each r[k].q set), and
 * which are paused (into paused, which r points into): a plain read of
 * each, which locks nothing.  Returns 0, or ROWQ_EXIT_FAILURE when a read
 * failed or a queue is past an alert.
 */
int
status_read_db(struct db *db, const struct config *cfg, struct status_queue *r,
    size_t n, struct pause_list *paused, struct status_link *link)
{
	int rc = ROWQ_EXIT_OK;

	snprintf(link->where, sizeof(link->where), "%s", db_where(db));
	snprintf(link->cipher, sizeof(link->cipher), "%s",
	    db_cipher(db) ? db_cipher(db) : "");
	if (pause_read(db, pause_table(cfg), paused) == -1) {
		log_error("%s: pause_table: cannot read %s: %s", cfg->path,
		    pause_table(cfg), db_error(db));
		rc = ROWQ_EXIT_FAILURE;
	}
	for (size_t k = 0; k < n; k++) {
		r[k].pause = pause_find(paused, r[k].q->name);
		r[k].db_ok = status_query(db, r[k].q, &r[k].db) == 0;
		if (!r[k].db_ok)
			rc = ROWQ_EXIT_FAILURE;
		r[k].limit_ok = r[k].q->limit.enabled &&
		    limit_status_read(db, cfg, r[k].q, &r[k].limit) == 0;
		r[k].alert = r[k].db_ok && r[k].q->alert_age_ms > 0 &&
		    r[k].db.oldest_age_s * 1000 > r[k].q->alert_age_ms;
		r[k].alert_failed = r[k].db_ok &&
		    r[k].q->alert_failed >= 0 &&
		    r[k].db.failed > r[k].q->alert_failed;
		if (r[k].alert || r[k].alert_failed)
			rc = ROWQ_EXIT_FAILURE;
	}
	return rc;
}

/*
 * Ready and in progress, with the daemon's busy workers taken out, and
 * the worker past alert_running.  True when a queue is past it.
 */
bool
status_live_split(const struct live *lv, struct status_queue *r, size_t n)
{
	bool alert = false;

	for (size_t k = 0; k < n; k++) {
		size_t j = 0;
		const struct line *l = status_live_find(lv, "queue",
		    r[k].q->name, &j);
		long busy = l && *status_live_value(l, "busy") ?
		    atol(status_live_value(l, "busy")) : -1;
		status_split(r[k].q, &r[k].db, busy, &r[k].ready,
		    &r[k].in_progress);
		r[k].alert_running = status_running_too_long(lv, r[k].q);
		alert |= r[k].alert_running != NULL;
	}
	return alert;
}

/*
 * `rowq status [QUEUE...] [--json]`.  Exit 0; 1 when a queue's oldest row
 * is older than its alert_age or it has more failed rows than its
 * alert_failed (a Nagios-style check), or the database cannot be asked; 78 for a bad configuration; 2 for an unknown queue.
 */
/*
 * The configuration file has errors (logged): the running daemon, which
 * keeps the configuration it loaded, still answers on its socket, so
 * show what it says, with '?' for what only the database knows.  Exits
 * 78 all the same: the next reload would fail.
 */
static int
status_broken_config(const struct config *cfg, char **names, size_t nnames,
    bool json)
{
	struct live lv = { 0 };
	struct status_link link = { 0 };
	struct status_queue *r = NULL;
	struct queue *q = NULL;
	size_t n = 0, i = 0;
	const struct line *l;
	char *path = status_socket_path(cfg);

	status_live_load(&lv, cfg);
	if (lv.text == NULL) {
		log_error("%s: the configuration has errors, and no daemon "
		    "answers on %s", cfg->path, lv.error);
		free(path);
		return ROWQ_EXIT_CONFIG;
	}
	log_warnx("%s: the configuration has errors (above); the running "
	    "daemon's own status follows, from %s, as it loaded its "
	    "configuration: fix the file before the next reload", cfg->path,
	    path);
	free(path);
	while ((l = status_live_find(&lv, "queue", NULL, &i)) != NULL) {
		const char *name = status_live_value(l, "queue");
		bool wanted = nnames == 0;
		for (size_t k = 0; k < nnames; k++)
			wanted |= strcmp(names[k], name) == 0;
		if (!wanted)
			continue;
		q = xrealloc(q, (n + 1) * sizeof(*q));
		r = xrealloc(r, (n + 1) * sizeof(*r));
		memset(&q[n], 0, sizeof(q[n]));
		memset(&r[n], 0, sizeof(r[n]));
		q[n].name = (char *)name;
		q[n].alert_failed = -1;
		n++;
	}
	for (size_t k = 0; k < n; k++) {
		r[k].q = &q[k];
		r[k].ready = r[k].in_progress = -1;
	}
	if (json)
		status_json_print(r, n, &lv, &link, NULL);
	else
		status_table(r, n, &lv, &link, NULL);
	fflush(stdout);
	free(r);
	free(q);
	status_live_free(&lv);
	return ROWQ_EXIT_CONFIG;
}

int
status_command(const char *path, char **names, size_t nnames, bool json)
{
	bool broken;
	struct config *cfg = config_load_any(path, &broken);
	struct status_queue *r;
	struct live lv = { 0 };
	struct pause_list paused = { 0 };
	struct status_link link = { 0 };
	struct schedule_list sched = { 0 };
	struct db *db;
	enum db_status st;
	size_t n = 0;
	int rc = ROWQ_EXIT_OK;

	if (broken) {
		rc = status_broken_config(cfg, names, nnames, json);
		config_free(cfg);
		return rc;
	}
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
	/* The daemon's figures first: a schedule's last row may run now. */
	status_live_load(&lv, cfg);
	db = db_open(&cfg->db, &st);
	if (st != DB_OK) {
		log_error("%s: database: cannot connect: %s", path,
		    db_error(db));
		rc = ROWQ_EXIT_FAILURE;
	} else {
		rc = status_read_db(db, cfg, r, n, &paused, &link);
		if (nnames == 0 &&
		    schedule_list_read(db, cfg, &sched, &lv) == -1) {
			log_error("%s: cannot read the schedules: %s", path,
			    db_error(db));
			rc = ROWQ_EXIT_FAILURE;
		}
	}
	db_close(db);
	if (status_live_split(&lv, r, n))
		rc = ROWQ_EXIT_FAILURE;
	if (json)
		status_json_print(r, n, &lv, &link, &sched);
	else
		status_table(r, n, &lv, &link, &sched);
	fflush(stdout);
	status_live_free(&lv);
out:
	schedule_list_free(&sched);
	pause_list_free(&paused);
	free(r);
	config_free(cfg);
	return rc;
}
