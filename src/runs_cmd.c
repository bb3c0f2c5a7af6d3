/*
 * runs_cmd.c: `rowq runs` lists a queue's runs (runs.c), and `rowq show`
 * tells one row's story (row_story.c, which the console's row page reads
 * too): the row as the select sees it now, or that it returns it no
 * more; whether a worker of this daemon runs it now (its status socket,
 * as `rowq status` reads it); whether it is in the failed set
 * (failed_select:); and its runs.  Every read is a plain one, which
 * locks no row, and the transaction ends after it.
 *
 * A key is given as its bytes, or with --hex as hex digits (a binary key,
 * or one with bytes a shell cannot pass).  Runs are listed oldest first.
 */
#include "rowq.h"
#include "commands.h"
#include "db.h"
#include "runs.h"

#include <stdlib.h>
#include <string.h>

/* What the command line asked for. */
struct runs_args {
	const char	*queue;
	char		*key;		/* its bytes; NULL: every key */
	size_t		 key_len;
	bool		 hex;
	int64_t		 since_ms;	/* 0: all */
	const char	*outcome;	/* NULL: all */
	long		 limit;
	bool		 json;
};

static int
runs_unhex(const char *s, char **out, size_t *len)
{
	size_t n = strlen(s);

	if (n % 2 != 0 || strspn(s, "0123456789abcdefABCDEF") != n)
		return -1;
	*out = xcalloc(n / 2 + 1, 1);
	for (size_t i = 0; i < n / 2; i++) {
		char two[3] = { s[2 * i], s[2 * i + 1], '\0' };
		(*out)[i] = (char)strtol(two, NULL, 16);
	}
	*len = n / 2;
	return 0;
}

/* A key, an error, a host for the terminal: as it is, or x'hex'. */
static void
runs_shown(struct buf *b, const char *s, size_t n)
{
	if (row_story_printable(s, n))
		buf_append(b, s, n);
	else {
		buf_puts(b, "x'");
		buf_put_hex(b, s, n);
		buf_puts(b, "'");
	}
}

static int
runs_parse(int argc, char **argv, struct runs_args *a, bool show)
{
	const char *cmd = show ? "show" : "runs", *key = NULL;

	memset(a, 0, sizeof(*a));
	a->limit = RUNS_LIMIT_DEFAULT;
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;
		if (strcmp(argv[i], "--json") == 0)
			a->json = true;
		else if (strcmp(argv[i], "--hex") == 0)
			a->hex = true;
		else if (!show && strcmp(argv[i], "--since") == 0) {
			if (v == NULL || duration_parse(v, &a->since_ms) == -1 ||
			    a->since_ms <= 0) {
				fprintf(stderr, "rowq: runs: --since takes a "
				    "duration (10m, 2h, 7d)\n");
				return -1;
			}
			i++;
		} else if (!show && strcmp(argv[i], "--outcome") == 0) {
			if (v == NULL || (strcmp(v, "done") != 0 &&
			    strcmp(v, "retry") != 0 && strcmp(v, "failed") != 0 &&
			    strcmp(v, "cancel") != 0 &&
			    strcmp(v, "inserted") != 0)) {
				fprintf(stderr, "rowq: runs: --outcome takes "
				    "done, retry, failed, cancel or inserted\n");
				return -1;
			}
			a->outcome = v;
			i++;
		} else if (!show && strcmp(argv[i], "--limit") == 0) {
			a->limit = v != NULL ? strtol(v, &end, 10) : 0;
			if (v == NULL || *end != '\0' || a->limit < 1 ||
			    a->limit > RUNS_LIMIT_MAX) {
				fprintf(stderr, "rowq: runs: --limit takes a "
				    "number from 1 to %d\n", RUNS_LIMIT_MAX);
				return -1;
			}
			i++;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "rowq: %s: unknown option %s\n", cmd,
			    argv[i]);
			return -1;
		} else if (a->queue == NULL)
			a->queue = argv[i];
		else if (key == NULL)
			key = argv[i];
		else {
			fprintf(stderr, "rowq: %s: one queue and one key, not "
			    "also %s\n", cmd, argv[i]);
			return -1;
		}
	}
	if (a->queue == NULL || (show && key == NULL)) {
		fprintf(stderr, "rowq: %s: name a queue%s\n", cmd,
		    show ? " and a key" : "");
		return -1;
	}
	if (key != NULL && a->hex && runs_unhex(key, &a->key,
	    &a->key_len) == -1) {
		fprintf(stderr, "rowq: %s: --hex: %s is not hex digits\n", cmd,
		    key);
		return -1;
	}
	if (key != NULL && !a->hex) {
		a->key = xstrdup(key);
		a->key_len = strlen(key);
	}
	return 0;
}

/* ---- reading ---- */

/* The runs a asks for, into rs: runs_read's contract. */
static int
runs_args_read(struct db *db, const struct queue *q,
    const struct runs_args *a, struct rowset *rs)
{
	struct runs_filter f = { .key = a->key, .key_len = a->key_len,
	    .since_ms = a->since_ms, .outcome = a->outcome, .limit = a->limit };

	return runs_read(db, q, &f, rs);
}

/* The runs as a table, the key in it when they are of several keys. */
static void
runs_table_print(const struct rowset *rs, bool with_key)
{
	struct buf line = { 0 };

	printf("%s%-4s %-8s %-27s %10s  %-20s %-6s %-4s %-12s %s\n",
	    with_key ? "KEY                  " : "", "TRY", "OUTCOME",
	    "STARTED", "DURATION", "HOST", "WORKER", "EXIT", "REASON",
	    "ERROR");
	for (size_t i = 0; i < rs->nrows; i++) {
		const struct row *r = &rs->rows[i];
		char d[32];
		buf_reset(&line);
		if (with_key) {
			size_t start = line.len;
			runs_shown(&line, r->value[R_KEY], r->len[R_KEY]);
			while (line.len - start < 20)
				buf_putc(&line, ' ');
			buf_putc(&line, ' ');
		}
		duration_format(atoll(runs_v(r, R_DURATION)), d, sizeof(d));
		buf_printf(&line, "%-4s %-8s %-27s %10s  ", runs_v(r, R_TRY),
		    runs_v(r, R_OUTCOME), runs_v(r, R_STARTED), d);
		runs_shown(&line, r->value[R_HOST], r->len[R_HOST]);
		buf_printf(&line, " %-6s %-4s %-12s ", runs_v(r, R_WORKER),
		    r->value[R_EXIT] ? r->value[R_EXIT] : "-",
		    *runs_v(r, R_REASON) ? runs_v(r, R_REASON) : "-");
		/* The error's first line, on one line. */
		size_t n = r->len[R_ERROR], k;
		for (k = 0; k < n && r->value[R_ERROR][k] != '\n'; k++)
			;
		runs_shown(&line, r->value[R_ERROR], k < 200 ? k : 200);
		printf("%s\n", line.data);
	}
	buf_free(&line);
}

/* Load, find the queue, check it has runs:, connect. */
static int
runs_open(const char *path, const char *name, const char *cmd,
    bool need_runs, struct failed_ctx *what)
{
	int rc = failed_open(path, name, cmd, false, NULL, what);

	if (rc == ROWQ_EXIT_OK && need_runs && !what->q->runs.enabled) {
		log_error("%s: queues.%s has no runs: key, which %s needs",
		    path, name, cmd);
		failed_close(what);
		return ROWQ_EXIT_USAGE;
	}
	return rc;
}

int
runs_command(const char *path, int argc, char **argv)
{
	struct runs_args a;
	struct failed_ctx what;
	struct rowset rs = { 0 };
	struct buf out = { 0 };
	int rc;

	if (runs_parse(argc, argv, &a, false) == -1)
		return ROWQ_EXIT_USAGE;
	if ((rc = runs_open(path, a.queue, "rowq runs", true, &what)) !=
	    ROWQ_EXIT_OK) {
		free(a.key);
		return rc;
	}
	if (runs_args_read(what.db, what.q, &a, &rs) == -1)
		rc = ROWQ_EXIT_FAILURE;
	else if (a.json) {
		runs_json_list(&out, &rs);
		printf("%s\n", out.data);
	} else
		runs_table_print(&rs, a.key == NULL);
	fflush(stdout);
	rowset_free(&rs, R_NCOLS);
	buf_free(&out);
	failed_close(&what);
	free(a.key);
	return rc;
}

/* ---- rowq show ---- */

static void
show_json(const struct runs_args *a, const struct row_story *s,
    const struct live *lv)
{
	struct buf b = { 0 };

	row_story_json(&b, a->queue, a->key, a->key_len, s, lv);
	printf("%s\n", b.data);
	buf_free(&b);
}

/* The row's columns, one a line. */
static void
show_row_lines(const struct row_view *v)
{
	struct buf line = { 0 };

	for (size_t c = 0; c < v->ncols; c++) {
		const char *s = v->rs.rows[0].value[c];
		buf_reset(&line);
		if (s == NULL)
			buf_puts(&line, "NULL");
		else
			runs_shown(&line, s, v->rs.rows[0].len[c] < 200 ?
			    v->rs.rows[0].len[c] : 200);
		printf("  %-20s %s\n", v->cols[c].name, line.data);
	}
	buf_free(&line);
}

static void
show_text(const struct runs_args *a, const struct row_story *s,
    const struct live *lv)
{
	const struct row_view *sel = &s->sel, *failed = &s->failed;
	const struct line *running = s->running;
	struct buf k = { 0 };

	runs_shown(&k, a->key, a->key_len);
	printf("%s %s: %s\n", a->queue, k.data, s->state);
	if (running != NULL)
		printf("running: worker %s (pid %s) of this daemon, try %s, for "
		    "%ss\n", status_live_value(running, "number"),
		    status_live_value(running, "pid"),
		    status_live_value(running, "attempt"),
		    status_live_value(running, "for"));
	else if (*lv->error)
		printf("running: unknown, no daemon status (%s)\n", lv->error);
	else
		printf("running: not on this daemon\n");
	if (!sel->read)
		printf("select: cannot be read: %s\n", sel->why);
	else if (sel->rs.nrows == 0)
		printf("select: does not return it\n");
	else {
		printf("select: returns it%s\n", running != NULL ? " (as "
		    "before the claim: a plain read locks nothing)" : "");
		show_row_lines(sel);
	}
	if (failed->read && failed->rs.nrows > 0) {
		printf("failed_select: returns it\n");
		show_row_lines(failed);
	} else if (failed->read)
		printf("failed_select: does not return it\n");
	if (s->lost > 0)
		printf("tries without a run: %lld (their transaction rolled "
		    "back: a worker or the database died, or the link was "
		    "lost)\n", s->lost);
	printf("runs: %zu\n", s->runs.nrows);
	if (s->runs.nrows > 0)
		runs_table_print(&s->runs, false);
	buf_free(&k);
}

int
show_command(const char *path, int argc, char **argv)
{
	struct runs_args a;
	struct failed_ctx what;
	struct row_story s;
	struct live lv = { 0 };
	int rc;

	if (runs_parse(argc, argv, &a, true) == -1)
		return ROWQ_EXIT_USAGE;
	if ((rc = runs_open(path, a.queue, "rowq show", false, &what)) !=
	    ROWQ_EXIT_OK) {
		free(a.key);
		return rc;
	}
	status_live_load(&lv, what.cfg);
	row_story_read(&s, what.db, what.q, a.key, a.key_len, a.hex, &lv);
	if (!s.runs_ok)
		rc = ROWQ_EXIT_FAILURE;
	if (a.json)
		show_json(&a, &s, &lv);
	else
		show_text(&a, &s, &lv);
	fflush(stdout);
	if (!s.sel.read)
		rc = ROWQ_EXIT_FAILURE;
	row_story_free(&s);
	status_live_free(&lv);
	failed_close(&what);
	free(a.key);
	return rc;
}
