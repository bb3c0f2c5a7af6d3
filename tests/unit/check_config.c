/*
 * check_config.c: config_load, config_free, config_queue and
 * config_check_columns.
 *
 * Each test runs in a fresh temporary directory (it is the current
 * directory, so that messages name "rowq.yaml:LINE"), writes its YAML
 * there and captures what config_load logs by pointing descriptor 2 at a
 * temporary file: the messages are part of the product, so the tests
 * check them to the letter.
 */
#include "rowq.h"

#include <check.h>
#include "unit.h"
#include "unit_dir.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void
put_mode(const char *name, const char *text, size_t len, mode_t mode)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_msg(fd != -1, "%s: %s", name, strerror(errno));
	ck_assert(write(fd, text, len) == (ssize_t)len);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

static void
put(const char *name, const char *text)
{
	put_mode(name, text, strlen(text), 0600);
}

/* Load a file, with everything logged meanwhile in *log (caller frees). */
static struct config *
load(const char *name, char **log)
{
	FILE *tmp = tmpfile();
	struct config *cfg;
	int saved;
	long len;

	ck_assert(tmp != NULL);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	ck_assert(saved != -1);
	ck_assert(dup2(fileno(tmp), STDERR_FILENO) != -1);
	cfg = config_load(name);
	ck_assert(dup2(saved, STDERR_FILENO) != -1);
	close(saved);
	len = ftell(tmp);
	ck_assert(len >= 0);
	*log = calloc(1, (size_t)len + 1);
	rewind(tmp);
	ck_assert(fread(*log, 1, (size_t)len, tmp) == (size_t)len);
	fclose(tmp);
	return cfg;
}

/* Same for config_check_columns. */
static int
check_columns(const struct queue *q, char *const *cols, size_t n, char **log)
{
	FILE *tmp = tmpfile();
	int saved, problems;
	long len;

	ck_assert(tmp != NULL);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	ck_assert(dup2(fileno(tmp), STDERR_FILENO) != -1);
	problems = config_check_columns(q, cols, n);
	ck_assert(dup2(saved, STDERR_FILENO) != -1);
	close(saved);
	len = ftell(tmp);
	*log = calloc(1, (size_t)len + 1);
	rewind(tmp);
	ck_assert(fread(*log, 1, (size_t)len, tmp) == (size_t)len);
	fclose(tmp);
	return problems;
}

#define ck_assert_has(log, text) \
	ck_assert_msg(strstr((log), (text)) != NULL, \
	    "expected \"%s\" in the log:\n%s", (text), (log))

static size_t
count_lines(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++)
		if (*s == '\n')
			n++;
	return n;
}

/* Write rowq.yaml, expect it refused with `message` among the errors. */
static void
refused(const char *yaml, const char *message)
{
	struct config *cfg;
	char *log;

	put("rowq.yaml", yaml);
	cfg = load("rowq.yaml", &log);
	ck_assert_msg(cfg == NULL, "accepted:\n%s", yaml);
	ck_assert_has(log, message);
	free(log);
}

/* Write rowq.yaml, expect it loaded with nothing logged. */
static struct config *
accepted(const char *yaml)
{
	struct config *cfg;
	char *log;

	put("rowq.yaml", yaml);
	cfg = load("rowq.yaml", &log);
	ck_assert_msg(cfg != NULL, "refused:\n%s", log);
	ck_assert_msg(log[0] == '\0', "logged:\n%s", log);
	free(log);
	return cfg;
}

/* The example of the interface, word for word but the password file. */
static const char example[] =
    "database:\n"
    "  socket: /run/mysqld/mysqld.sock   # or host: + port:\n"
    "  user: rowq\n"
    "  password_file: db.password\n"
    "  name: shop\n"
    "stop_timeout: 30s\n"
    "include: queues.d/*.yaml   # relative to this file\n"
    "\n"
    "queues:\n"
    "  email:\n"						/* 10 */
    "    workers: 4\n"
    "    select: |\n"
    "      SELECT id, recipient, subject, attempts FROM email\n"
    "      WHERE status = 'waiting' AND (retry_at IS NULL OR retry_at <= UNIX_TIMESTAMP())\n"
    "      ORDER BY id\n"
    "    batch: 1               # rows claimed per transaction\n"
    "    exec: [/usr/local/bin/send-email, \"{recipient}\"]   # or pipe: [...]\n"
    "    timeout: 30s           # per row\n"
    "    done:   UPDATE email SET status = 'sent' WHERE id = :id\n"
    "    retry:\n"						/* 20 */
    "      max_attempts: 5\n"
    "      attempts_column: attempts\n"
    "      backoff: exponential # fixed | linear | exponential\n"
    "      delay: 10s\n"
    "      max_delay: 1h\n"
    "      jitter: true\n"
    "      update: UPDATE email SET attempts = attempts + 1, last_error = :error,\n"
    "              retry_at = UNIX_TIMESTAMP() + :delay WHERE id = :id\n"
    "    failed: UPDATE email SET status = 'failed', attempts = attempts + 1,\n"
    "            last_error = :error WHERE id = :id\n"	/* 30 */
    "    idle: 2s               # sleep when the select finds nothing\n"
    "    max_jobs: 1000         # a worker is replaced after this many rows (0: never)\n";

START_TEST(test_example)
{
	struct config *cfg;
	struct queue *q;

	put("db.password", "s3cret\n");
	cfg = accepted(example);
	ck_assert_str_eq(cfg->path, "rowq.yaml");
	ck_assert_str_eq(cfg->db.socket, "/run/mysqld/mysqld.sock");
	ck_assert_uint_eq(cfg->db.nhosts, 0);
	ck_assert_str_eq(cfg->db.user, "rowq");
	ck_assert_str_eq(cfg->db.password, "s3cret");
	ck_assert_str_eq(cfg->db.password_file, "db.password");
	ck_assert_str_eq(cfg->db.name, "shop");
	ck_assert_int_eq(cfg->stop_timeout_ms, 30000);
	ck_assert_uint_eq(cfg->nqueues, 1);
	q = config_queue(cfg, "email");
	ck_assert_ptr_eq(q, &cfg->queues[0]);
	ck_assert_str_eq(q->name, "email");
	ck_assert_str_eq(q->where, "rowq.yaml:10");
	ck_assert_int_eq(q->workers, 4);
	ck_assert_str_eq(q->select.text, "SELECT id, recipient, subject, "
	    "attempts FROM email\nWHERE status = 'waiting' AND (retry_at IS "
	    "NULL OR retry_at <= UNIX_TIMESTAMP())\nORDER BY id\n");
	ck_assert_uint_eq(q->select.nparams, 0);
	ck_assert_ptr_null(q->key_column);
	ck_assert_int_eq(q->batch, 1);
	ck_assert_int_eq(q->handler, HANDLER_EXEC);
	ck_assert_str_eq(q->argv[0], "/usr/local/bin/send-email");
	ck_assert_str_eq(q->argv[1], "{recipient}");
	ck_assert_ptr_null(q->argv[2]);
	ck_assert_str_eq(q->argv_where, "rowq.yaml:17: queues.email.exec");
	ck_assert_int_eq(q->handling.timeout_ms, 30000);
	ck_assert_str_eq(q->done.positional,
	    "UPDATE email SET status = 'sent' WHERE id = ?");
	ck_assert_uint_eq(q->done.nparams, 1);
	ck_assert_str_eq(q->done.params[0], "id");
	ck_assert_str_eq(q->done.where, "rowq.yaml:19: queues.email.done");
	ck_assert(q->retry.enabled);
	ck_assert_int_eq(q->retry.max_attempts, 5);
	ck_assert_str_eq(q->retry.attempts_column, "attempts");
	ck_assert_int_eq(q->retry.backoff, BACKOFF_EXPONENTIAL);
	ck_assert_int_eq(q->retry.delay_ms, 10000);
	ck_assert_int_eq(q->retry.max_delay_ms, 3600000);
	ck_assert(q->retry.jitter);
	/* A plain scalar over two lines: folded into one. */
	ck_assert_str_eq(q->retry.update.positional, "UPDATE email SET "
	    "attempts = attempts + 1, last_error = ?, retry_at = "
	    "UNIX_TIMESTAMP() + ? WHERE id = ?");
	ck_assert_uint_eq(q->retry.update.nparams, 3);
	ck_assert_str_eq(q->retry.update.params[0], "error");
	ck_assert_str_eq(q->retry.update.params[1], "delay");
	ck_assert_str_eq(q->retry.update.params[2], "id");
	ck_assert_str_eq(q->retry.update.where,
	    "rowq.yaml:27: queues.email.retry.update");
	ck_assert_str_eq(q->failed.where, "rowq.yaml:29: queues.email.failed");
	ck_assert_uint_eq(q->failed.nparams, 2);
	ck_assert_int_eq(q->idle_ms, 2000);
	ck_assert_int_eq(q->max_jobs, 1000);
	ck_assert(!q->lease.enabled);
	ck_assert_ptr_null(config_queue(cfg, "sms"));
	config_free(cfg);
}
END_TEST

START_TEST(test_defaults)
{
	struct config *cfg = accepted(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n");
	struct queue *q = &cfg->queues[0];

	ck_assert_int_eq(cfg->stop_timeout_ms, 30000);
	ck_assert_ptr_null(cfg->db.socket);
	ck_assert_uint_eq(cfg->db.nhosts, 0);
	ck_assert_ptr_null(cfg->db.password);
	ck_assert_int_eq(q->workers, 1);
	ck_assert_int_eq(q->batch, 1);
	ck_assert_int_eq(q->handling.timeout_ms, 30000);
	ck_assert_int_eq(q->idle_ms, 2000);
	ck_assert_int_eq(q->max_jobs, 0);
	ck_assert(!q->retry.enabled);
	ck_assert(!q->lease.enabled);
	ck_assert_ptr_null(q->retry.update.text);
	ck_assert_ptr_null(q->lease.claim.text);
	ck_assert_ptr_null(q->key_column);
	config_free(cfg);
}
END_TEST

/* retry: without failed: goes on for ever; max_attempts 0 says so. */
START_TEST(test_retry_unlimited)
{
	struct config *cfg = accepted(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id, attempts FROM email\n"
	    "    pipe: [/usr/bin/handler, --fast]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    retry:\n"
	    "      attempts_column: attempts\n"
	    "      backoff: linear\n"
	    "      jitter: no\n"
	    "      update: |\n"
	    "        UPDATE email\n"
	    "        SET attempts = attempts + 1\n"
	    "        WHERE id = :id\n");
	struct queue *q = &cfg->queues[0];

	ck_assert_int_eq(q->handler, HANDLER_PIPE);
	ck_assert_str_eq(q->argv_where, "rowq.yaml:4: queues.email.pipe");
	ck_assert(q->retry.enabled);
	ck_assert_int_eq(q->retry.max_attempts, 0);
	ck_assert_int_eq(q->retry.backoff, BACKOFF_LINEAR);
	ck_assert_int_eq(q->retry.delay_ms, 10000);
	ck_assert_int_eq(q->retry.max_delay_ms, 3600000);
	ck_assert(!q->retry.jitter);
	ck_assert_str_eq(q->retry.update.positional,
	    "UPDATE email\nSET attempts = attempts + 1\nWHERE id = ?");
	ck_assert_str_eq(q->retry.attempts_where,
	    "rowq.yaml:7: queues.email.retry.attempts_column");
	ck_assert_ptr_null(q->failed.text);
	config_free(cfg);
}
END_TEST

START_TEST(test_retry_default_attempts)
{
	struct config *cfg = accepted(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id, attempts FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    retry:\n"
	    "      attempts_column: attempts\n"
	    "      delay: 2h\n"
	    "      jitter: yes\n"
	    "      update: UPDATE email SET attempts = attempts + 1 WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n");
	struct queue *q = &cfg->queues[0];

	ck_assert_int_eq(q->retry.max_attempts, 5);
	ck_assert_int_eq(q->retry.delay_ms, 2 * 3600000);
	/* max_delay defaults to 1h, but never below delay. */
	ck_assert_int_eq(q->retry.max_delay_ms, 2 * 3600000);
	ck_assert(q->retry.jitter);
	config_free(cfg);
}
END_TEST

START_TEST(test_retry_max_attempts_needs_failed)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id, attempts FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    retry:\n"
	    "      max_attempts: 3\n"
	    "      attempts_column: attempts\n"
	    "      update: UPDATE email SET attempts = attempts + 1 WHERE id = :id\n",
	    "rowq.yaml:7: queues.email.retry.max_attempts: max_attempts needs "
	    "a failed statement to run after the last attempt\n");
}
END_TEST

/* A queue whose rows say how many tries each has: max_attempts: column. */
#define PER_ROW_QUEUE(max, more)					\
	"queues:\n"							\
	"  job:\n"							\
	"    select: SELECT id, attempts, max_tries FROM job\n"		\
	"    exec: [/bin/true]\n"					\
	"    done: UPDATE job SET status = 'done' WHERE id = :id\n"	\
	"    retry:\n"							\
	"      max_attempts: " max "\n"					\
	"      attempts_column: attempts\n"				\
	"      update: UPDATE job SET attempts = attempts + 1, why = :reason "\
	"WHERE id = :id\n"						\
	more								\
	"    failed: UPDATE job SET status = 'failed', why = :reason "	\
	"WHERE id = :id\n"

START_TEST(test_retry_max_attempts_column)
{
	struct config *cfg = accepted(PER_ROW_QUEUE("column max_tries", ""));
	const struct retry_policy *r = &cfg->queues[0].retry;

	ck_assert_str_eq(r->max_attempts_column, "max_tries");
	ck_assert_str_eq(r->max_attempts_where,
	    "rowq.yaml:7: queues.job.retry.max_attempts");
	ck_assert_int_eq(r->max_attempts, 0);	/* each row's own */
	ck_assert_int_eq(r->max_attempts_ceiling, RETRY_CEILING_DEFAULT);
	ck_assert_ptr_null(r->gave_up.text);
	config_free(cfg);
	/* Spaces around the name, and a ceiling of its own. */
	cfg = accepted(PER_ROW_QUEUE("\"column   max_tries  \"",
	    "      max_attempts_ceiling: 7\n"));
	ck_assert_str_eq(cfg->queues[0].retry.max_attempts_column,
	    "max_tries");
	ck_assert_int_eq(cfg->queues[0].retry.max_attempts_ceiling, 7);
	config_free(cfg);
	/* A bare name is a column's too. */
	cfg = accepted(PER_ROW_QUEUE("max_tries", ""));
	ck_assert_str_eq(cfg->queues[0].retry.max_attempts_column,
	    "max_tries");
	config_free(cfg);
	/* A number is what it was. */
	cfg = accepted(PER_ROW_QUEUE("4", ""));
	ck_assert_ptr_null(cfg->queues[0].retry.max_attempts_column);
	ck_assert_int_eq(cfg->queues[0].retry.max_attempts, 4);
	config_free(cfg);
}
END_TEST

START_TEST(test_retry_max_attempts_column_errors)
{
	refused(PER_ROW_QUEUE("column", ""),
	    "rowq.yaml:7: queues.job.retry.max_attempts: expected \"column "
	    "NAME\", one column of the select, not \"column\"\n");
	refused(PER_ROW_QUEUE("column a b", ""),
	    "rowq.yaml:7: queues.job.retry.max_attempts: expected \"column "
	    "NAME\", one column of the select, not \"column a b\"\n");
	refused(PER_ROW_QUEUE("5x", ""),
	    "rowq.yaml:7: queues.job.retry.max_attempts: not a whole number: "
	    "\"5x\"\n");
	refused(PER_ROW_QUEUE("max-tries", ""),
	    "rowq.yaml:7: queues.job.retry.max_attempts: not a whole number: "
	    "\"max-tries\"\n");
	refused(PER_ROW_QUEUE("[column, x]", ""),
	    "rowq.yaml:7: queues.job.retry.max_attempts: expected a whole "
	    "number or \"column NAME\", not a sequence\n");
	refused(PER_ROW_QUEUE("column max_tries",
	    "      max_attempts_ceiling: 0\n"),
	    "rowq.yaml:10: queues.job.retry.max_attempts_ceiling: must be "
	    "from 1 to 100000, not 0\n");
	refused(PER_ROW_QUEUE("5", "      max_attempts_ceiling: 50\n"),
	    "rowq.yaml:10: queues.job.retry.max_attempts_ceiling: "
	    "max_attempts_ceiling bounds each row's own max_attempts: it goes "
	    "with max_attempts: column NAME\n");
	/* As a number, it needs failed: and attempts_column. */
	refused(
	    "queues:\n"
	    "  job:\n"
	    "    select: SELECT id, max_tries FROM job\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE job SET status = 'done' WHERE id = :id\n"
	    "    retry:\n"
	    "      max_attempts: column max_tries\n"
	    "      update: UPDATE job SET n = 1 WHERE id = :id\n"
	    "    failed: UPDATE job SET status = 'failed' WHERE id = :id\n",
	    "rowq.yaml:7: queues.job.retry.max_attempts: max_attempts counts "
	    "tries in retry.attempts_column");
}
END_TEST

START_TEST(test_retry_gave_up)
{
	struct config *cfg = accepted(PER_ROW_QUEUE("3",
	    "      gave_up: SELECT status = 'failed' FROM job WHERE id = :id\n"));
	const struct sql *g = &cfg->queues[0].retry.gave_up;

	ck_assert_str_eq(g->where, "rowq.yaml:10: queues.job.retry.gave_up");
	ck_assert_uint_eq(g->nparams, 1);
	ck_assert_str_eq(g->params[0], "id");
	config_free(cfg);
	refused(PER_ROW_QUEUE("3",
	    "      gave_up: UPDATE job SET x = 1 WHERE id = :id\n"),
	    "rowq.yaml:10: queues.job.retry.gave_up: expected a SELECT whose "
	    "first column says whether the row was given up, as SELECT "
	    "status = 'failed' FROM job WHERE id = :id\n");
	refused(PER_ROW_QUEUE("3", "      gave_up: SELECT 'x\n"),
	    "rowq.yaml:10: queues.job.retry.gave_up: ");
}
END_TEST

/* The column must be one of the select's, and whole numbers. */
START_TEST(test_check_columns_max_attempts)
{
	struct config *cfg = accepted(PER_ROW_QUEUE("column max_tries",
	    "      gave_up: SELECT :nope\n"));
	char *good[] = { "id", "attempts", "max_tries" };
	char *bad[] = { "id", "attempts" };
	struct column kinds[] = {
		{ .name = "id", .kind = COLUMN_INTEGER },
		{ .name = "attempts", .kind = COLUMN_INTEGER },
		{ .name = "max_tries", .kind = COLUMN_TEXT },
	};
	char *log;

	ck_assert_int_eq(check_columns(&cfg->queues[0], good, 3, &log), 1);
	ck_assert_has(log, "rowq.yaml:10: queues.job.retry.gave_up: :nope is "
	    "not a column of the select");
	free(log);
	ck_assert_int_eq(check_columns(&cfg->queues[0], bad, 2, &log), 2);
	ck_assert_has(log, "rowq.yaml:7: queues.job.retry.max_attempts: "
	    "max_tries is not a column of the select (columns: id, "
	    "attempts)\n");
	free(log);
	ck_assert_int_eq(config_check_column_kinds(&cfg->queues[0], kinds, 3),
	    1);
	kinds[2].kind = COLUMN_INTEGER;
	ck_assert_int_eq(config_check_column_kinds(&cfg->queues[0], kinds, 3),
	    0);
	config_free(cfg);
}
END_TEST

START_TEST(test_statement_returns_rows)
{
	/* A finishing statement that returns rows would be read as the next
	 * claim's result where it travels in front of one. */
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: DELETE FROM email WHERE id = :id RETURNING id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n",
	    "rowq.yaml:5: queues.email.done: the statement returns rows "
	    "(RETURNING): rowq reads none from a finishing statement; "
	    "leave RETURNING out\n");
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: SELECT id FROM email WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n",
	    "rowq.yaml:5: queues.email.done: a SELECT returns rows, and "
	    "changes none: done, failed, retry.update, lease, requeue and "
	    "discard statements are UPDATE, DELETE, INSERT, REPLACE or "
	    "CALL\n");
	/* A column or string of that name is no clause. */
	{
		struct config *cfg;
		char *log;

		put("rowq.yaml",
		    "queues:\n"
		    "  email:\n"
		    "    select: SELECT id FROM email\n"
		    "    exec: [/bin/true]\n"
		    "    done: UPDATE email SET `returning` = 'RETURNING' "
		    "WHERE id = :id\n"
		    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n");
		cfg = load("rowq.yaml", &log);
		ck_assert_msg(cfg != NULL, "refused:\n%s", log);
		config_free(cfg);
		free(log);
	}
}
END_TEST

START_TEST(test_retry_required_and_ranges)
{
	static const char yaml[] =
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id, attempts FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    retry:\n"
	    "      max_attempts: 0\n"
	    "      delay: 10s\n"
	    "      max_delay: 5s\n"
	    "      backoff: quadratic\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n";
	char *log;

	put("rowq.yaml", yaml);
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:7: queues.email.retry.max_attempts: "
	    "must be from 1 to 2147483647, not 0\n");
	ck_assert_has(log, "rowq.yaml:9: queues.email.retry.max_delay: 5s is "
	    "shorter than delay (10s)\n");
	ck_assert_has(log, "rowq.yaml:10: queues.email.retry.backoff: "
	    "expected fixed, linear or exponential, not \"quadratic\"\n");
	/* Without attempts_column, no try is counted. */
	ck_assert_has(log, "rowq.yaml:7: queues.email.retry.max_attempts: "
	    "max_attempts counts tries in retry.attempts_column: name one, or "
	    "leave max_attempts out to retry without a limit\n");
	ck_assert_has(log, "rowq.yaml:6: queues.email.retry: missing required "
	    "key update\n");
	ck_assert_uint_eq(count_lines(log), 5);
	free(log);
}
END_TEST

START_TEST(test_unknown_keys)
{
	static const char yaml[] =
	    "databse:\n"
	    "  user: rowq\n"
	    "queues:\n"
	    "  email:\n"
	    "    worker: 4\n"
	    "    colour: red\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    retry:\n"
	    "      attempts_colum: attempts\n"
	    "      jiter: true\n"
	    "      update: UPDATE email SET a = a + 1 WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n"
	    "    Lease: {}\n";
	char *log;

	put("rowq.yaml", yaml);
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:1: databse: unknown key: did you mean "
	    "database?\n");
	ck_assert_has(log, "rowq.yaml:5: queues.email.worker: unknown key: "
	    "did you mean workers?\n");
	ck_assert_has(log, "rowq.yaml:6: queues.email.colour: unknown key\n");
	ck_assert_has(log, "rowq.yaml:11: queues.email.retry.attempts_colum: "
	    "unknown key: did you mean attempts_column?\n");
	ck_assert_has(log, "rowq.yaml:12: queues.email.retry.jiter: unknown "
	    "key: did you mean jitter?\n");
	ck_assert_has(log, "rowq.yaml:15: queues.email.Lease: unknown key: "
	    "did you mean lease?\n");
	ck_assert_uint_eq(count_lines(log), 6);
	free(log);
}
END_TEST

START_TEST(test_duplicate_key)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n"
	    "    select: SELECT id FROM email WHERE 1\n",
	    "rowq.yaml:7: queues.email.select: duplicate key (first at line "
	    "3)\n");
	refused(
	    "stop_timeout: 5s\n"
	    "queues: {}\n"
	    "stop_timeout: 6s\n",
	    "rowq.yaml:3: stop_timeout: duplicate key (first at line 1)\n");
}
END_TEST

#define SMALL_QUEUE(name) \
	"  " name ":\n" \
	"    select: SELECT id FROM t\n" \
	"    exec: [/bin/true]\n" \
	"    done: UPDATE t SET s = 1 WHERE id = :id\n" \
	"    failed: UPDATE t SET s = 2 WHERE id = :id\n"

/* stop_signal: and stop_grace: (handler_end.c), and what they refuse. */
START_TEST(test_stop_signal)
{
	struct config *cfg = accepted(
	    "queues:\n"
	    SMALL_QUEUE("email")
	    "    stop_signal: TERM\n"
	    "    stop_grace: 10s\n"
	    SMALL_QUEUE("sms")
	    "    stop_signal: SIGUSR2\n"
	    SMALL_QUEUE("push"));

	ck_assert_int_eq(cfg->queues[0].handling.stop_signal, SIGTERM);
	ck_assert_int_eq(cfg->queues[0].handling.stop_grace_ms, 10000);
	ck_assert_int_eq(cfg->queues[1].handling.stop_signal, SIGUSR2);
	ck_assert_int_eq(cfg->queues[1].handling.stop_grace_ms, 0);
	ck_assert_int_eq(cfg->queues[2].handling.stop_signal, 0);
	ck_assert_str_eq(handler_stop_signal_name(SIGQUIT), "QUIT");
	config_free(cfg);
	refused(
	    "queues:\n"
	    SMALL_QUEUE("email")
	    "    stop_signal: KILL\n",
	    "rowq.yaml:7: queues.email.stop_signal: expected TERM, INT, HUP, "
	    "QUIT, USR1 or USR2, not \"KILL\"\n");
	refused(
	    "queues:\n"
	    SMALL_QUEUE("email")
	    "    stop_signal: [TERM]\n",
	    "rowq.yaml:7: queues.email.stop_signal: expected a signal's name");
	refused(
	    "queues:\n"
	    SMALL_QUEUE("email")
	    "    stop_grace: 5s\n",
	    "rowq.yaml:7: queues.email.stop_grace: stop_grace needs "
	    "stop_signal:, the signal it is the grace of\n");
	refused(
	    "queues:\n"
	    SMALL_QUEUE("email")
	    "    stop_signal: INT\n"
	    "    stop_grace: 0s\n",
	    "rowq.yaml:8: queues.email.stop_grace: must be more than 0\n");
	refused(
	    "queues:\n"
	    SMALL_QUEUE("email")
	    "    stop_signal: HUP\n"
	    "    stop_grace: soon\n",
	    "rowq.yaml:8: queues.email.stop_grace: not a duration: "
	    "\"soon\"\n");
}
END_TEST

/*
 * A stop's deadline travels in a signal's int: read back exactly on
 * either side of a wrap of its 31 bits, and clamped when too far.
 */
START_TEST(test_stop_deadline_encoding)
{
	const int64_t nows[] = { 5, 1000, ((int64_t)1 << 31) - 10,
	    ((int64_t)1 << 31) + 10, ((int64_t)7 << 40) + 12345 };

	for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		int64_t now = nows[i];
		const int64_t ahead[] = { 0, 1, 30000, 3600000,
		    PROC_DEADLINE_SPAN_MS };
		for (size_t j = 0; j < sizeof(ahead) / sizeof(ahead[0]); j++)
			ck_assert_int_eq(proc_deadline_decode(
			    proc_deadline_encode(now + ahead[j], now), now + 7),
			    now + ahead[j]);
		/* Read a little late, or before (a deadline already past). */
		ck_assert_int_eq(proc_deadline_decode(
		    proc_deadline_encode(now - 500, now), now), now - 500);
		ck_assert_int_eq(proc_deadline_decode(proc_deadline_encode(
		    now + PROC_DEADLINE_SPAN_MS * 3, now), now),
		    now + PROC_DEADLINE_SPAN_MS);
	}
}
END_TEST

START_TEST(test_duplicate_queue)
{
	refused(
	    "queues:\n"
	    SMALL_QUEUE("email")
	    SMALL_QUEUE("email"),
	    "rowq.yaml:7: queues.email: queue defined twice: first at "
	    "rowq.yaml:2\n");
}
END_TEST

START_TEST(test_duplicate_queue_across_include)
{
	char *log;

	ck_assert_int_eq(mkdir("queues.d", 0700), 0);
	put("rowq.yaml",
	    "include: queues.d/*.yaml\n"
	    "queues:\n"
	    SMALL_QUEUE("email"));
	put("queues.d/a.yaml",
	    "# more queues\n"
	    "queues:\n"
	    SMALL_QUEUE("sms")
	    SMALL_QUEUE("email"));
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "queues.d/a.yaml:8: queues.email: queue defined "
	    "twice: first at rowq.yaml:3\n");
	ck_assert_uint_eq(count_lines(log), 1);
	free(log);
}
END_TEST

/* include: is relative to the file; matches load in sorted order. */
START_TEST(test_include)
{
	struct config *cfg;
	char *log;

	ck_assert_int_eq(mkdir("etc", 0700), 0);
	ck_assert_int_eq(mkdir("etc/queues.d", 0700), 0);
	ck_assert_int_eq(mkdir("etc/more", 0700), 0);
	put("etc/rowq.yaml",
	    "include:\n"
	    "  - queues.d/*.yaml\n"
	    "  - nowhere/*.yaml\n"
	    "  - more/*.yaml\n"
	    "  - queues.d/b.yaml\n"	/* again: loaded once */
	    "queues:\n"
	    SMALL_QUEUE("main"));
	put("etc/queues.d/b.yaml", "queues:\n" SMALL_QUEUE("bq"));
	put("etc/queues.d/a.yaml", "queues:\n" SMALL_QUEUE("aq"));
	put("etc/queues.d/c.yaml.off", "queues:\n" SMALL_QUEUE("off"));
	put("etc/queues.d/empty.yaml", "# nothing yet\n");
	put("etc/more/x.yaml", "queues:\n" SMALL_QUEUE("xq"));
	cfg = load("etc/rowq.yaml", &log);
	ck_assert_msg(cfg != NULL, "%s", log);
	ck_assert_str_eq(log, "");
	ck_assert_uint_eq(cfg->nqueues, 4);
	ck_assert_str_eq(cfg->queues[0].name, "main");
	ck_assert_str_eq(cfg->queues[1].name, "aq");
	ck_assert_str_eq(cfg->queues[2].name, "bq");
	ck_assert_str_eq(cfg->queues[3].name, "xq");
	ck_assert_str_eq(cfg->queues[1].where, "etc/queues.d/a.yaml:2");
	ck_assert_str_eq(cfg->queues[1].done.where,
	    "etc/queues.d/a.yaml:5: queues.aq.done");
	config_free(cfg);
	free(log);
}
END_TEST

/* A main file that matches its own pattern is not read twice. */
START_TEST(test_include_self)
{
	struct config *cfg;

	put("other.yaml", "queues:\n" SMALL_QUEUE("other"));
	cfg = accepted(
	    "include: \"*.yaml\"\n"
	    "queues:\n"
	    SMALL_QUEUE("main"));
	ck_assert_uint_eq(cfg->nqueues, 2);
	config_free(cfg);
}
END_TEST

START_TEST(test_include_only_queues)
{
	char *log;

	put("rowq.yaml", "include: q.yaml\nqueues:\n" SMALL_QUEUE("main"));
	put("q.yaml",
	    "database:\n"
	    "  user: rowq\n"
	    "include: r.yaml\n"
	    "stop_timeout: 1s\n"
	    "queus: {}\n");
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "q.yaml:1: database: not allowed in an included "
	    "file, which may only add queues:\n");
	ck_assert_has(log, "q.yaml:3: include: not allowed in an included "
	    "file, which may only add queues:\n");
	ck_assert_has(log, "q.yaml:4: stop_timeout: not allowed in an "
	    "included file, which may only add queues:\n");
	ck_assert_has(log, "q.yaml:5: queus: unknown key: did you mean "
	    "queues?\n");
	ck_assert_uint_eq(count_lines(log), 4);
	free(log);
}
END_TEST

START_TEST(test_include_unreadable)
{
	ck_assert_int_eq(mkdir("q.yaml", 0700), 0);
	refused("include: [q.yaml]\nqueues:\n" SMALL_QUEUE("main"),
	    "rowq.yaml:1: include: q.yaml: not a regular file\n");
}
END_TEST

START_TEST(test_too_many_files)
{
	char name[64];
	int i;

	ck_assert_int_eq(mkdir("inc", 0700), 0);
	for (i = 0; i < CONFIG_FILES_MAX; i++) {
		snprintf(name, sizeof(name), "inc/%03d.yaml", i);
		put(name, "");
	}
	refused("include: inc/*.yaml\nqueues:\n" SMALL_QUEUE("main"),
	    "rowq.yaml:1: include: inc/255.yaml: more than 256 configuration "
	    "files\n");
}
END_TEST

START_TEST(test_bad_duration)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id, attempts FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    retry:\n"
	    "      delay: 10 parsecs\n"
	    "      attempts_column: attempts\n"
	    "      update: UPDATE email SET a = a + 1 WHERE id = :id\n",
	    "rowq.yaml:7: queues.email.retry.delay: not a duration: "
	    "\"10 parsecs\"\n");
	refused("stop_timeout: -1s\nqueues:\n" SMALL_QUEUE("q"),
	    "rowq.yaml:1: stop_timeout: not a duration: \"-1s\"\n");
}
END_TEST

/* wake: poll (the default) or binlog, nothing else. */
START_TEST(test_wake)
{
	struct config *cfg = accepted("queues:\n" SMALL_QUEUE("a")
	    "    wake: binlog\n" SMALL_QUEUE("b") "    wake: poll\n"
	    SMALL_QUEUE("c"));

	ck_assert(cfg->queues[0].wake_binlog);
	ck_assert_str_eq(cfg->queues[0].wake_where,
	    "rowq.yaml:7: queues.a.wake");
	ck_assert(!cfg->queues[1].wake_binlog);
	ck_assert(!cfg->queues[2].wake_binlog);
	config_free(cfg);
	refused("queues:\n" SMALL_QUEUE("a") "    wake: notify\n",
	    "rowq.yaml:7: queues.a.wake: not poll or binlog: \"notify\"\n");
	refused("queues:\n" SMALL_QUEUE("a") "    wake: [binlog]\n",
	    "rowq.yaml:7: queues.a.wake: expected poll or binlog, not a "
	    "sequence\n");
}
END_TEST

START_TEST(test_time_zone)
{
	struct config *cfg = accepted("queues:\n" SMALL_QUEUE("a")
	    "    time_zone: UTC\n" SMALL_QUEUE("b") "    time_zone: server\n"
	    SMALL_QUEUE("c"));

	ck_assert(cfg->queues[0].times_utc);
	ck_assert(!cfg->queues[1].times_utc);
	ck_assert(!cfg->queues[2].times_utc);
	config_free(cfg);
	refused("queues:\n" SMALL_QUEUE("a") "    time_zone: Europe/Paris\n",
	    "rowq.yaml:7: queues.a.time_zone: expected server or UTC, not "
	    "\"Europe/Paris\"\n");
	refused("queues:\n" SMALL_QUEUE("a") "    time_zone: [UTC]\n",
	    "rowq.yaml:7: queues.a.time_zone: expected server or UTC, not a "
	    "sequence\n");
}
END_TEST

/* group_by: a column name, kept with where it was said. */
START_TEST(test_group_by)
{
	struct config *cfg = accepted("queues:\n" SMALL_QUEUE("a")
	    "    group_by: batch_id\n" SMALL_QUEUE("b"));
	char *cols[] = { "id", "batch_id" }, *log;

	ck_assert_str_eq(cfg->queues[0].group_by.name, "batch_id");
	ck_assert_str_eq(cfg->queues[0].group_by.where,
	    "rowq.yaml:7: queues.a.group_by");
	ck_assert_ptr_null(cfg->queues[1].group_by.name);
	ck_assert_int_eq(check_columns(&cfg->queues[0], cols, 2, &log), 0);
	free(log);
	ck_assert_int_eq(check_columns(&cfg->queues[0], cols, 1, &log), 1);
	ck_assert_str_eq(log, "rowq: rowq.yaml:7: queues.a.group_by: batch_id "
	    "is not a column of the select (columns: id)\n");
	free(log);
	config_free(cfg);
	refused("queues:\n" SMALL_QUEUE("a") "    group_by: [batch_id]\n",
	    "rowq.yaml:7: queues.a.group_by: expected a column name, not a "
	    "sequence\n");
	refused("queues:\n" SMALL_QUEUE("a") "    group_by: {column: b}\n",
	    "rowq.yaml:7: queues.a.group_by: expected a column name, not a "
	    "mapping\n");
}
END_TEST

START_TEST(test_duration_ranges)
{
	static const char yaml[] =
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    timeout: 0s\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n"
	    "    lease: {claim: UPDATE email SET l = 1 WHERE id = :id, duration: 2500ms}\n";
	char *log;

	put("rowq.yaml", yaml);
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:5: queues.email.timeout: must be more "
	    "than 0\n");
	ck_assert_has(log, "rowq.yaml:8: queues.email.lease.duration: must be "
	    "at least 3s, not 2500ms\n");
	ck_assert_uint_eq(count_lines(log), 2);
	free(log);
}
END_TEST

/* runs: the defaults, its keys, and what it refuses. */
#define RUNS_QUEUE \
	"queues:\n" \
	"  q:\n" \
	"    select: SELECT id FROM t\n" \
	"    exec: [/bin/true]\n" \
	"    done: UPDATE t SET done = 1 WHERE id = :id\n" \
	"    failed: UPDATE t SET done = 2 WHERE id = :id\n"

START_TEST(test_runs)
{
	struct config *cfg = accepted(RUNS_QUEUE "    runs: {}\n");

	ck_assert(cfg->queues[0].runs.enabled);
	ck_assert_ptr_null(cfg->queues[0].runs.table);
	ck_assert_int_eq(cfg->queues[0].runs.keep_ms, 7 * 24 * 3600 * 1000LL);
	ck_assert_str_eq(cfg->queues[0].runs.where, "rowq.yaml:7: queues.q.runs");
	config_free(cfg);
	cfg = accepted(RUNS_QUEUE "    runs: {table: ops.q_runs, keep: 36h}\n");
	ck_assert_str_eq(cfg->queues[0].runs.table, "ops.q_runs");
	ck_assert_int_eq(cfg->queues[0].runs.keep_ms, 36 * 3600 * 1000LL);
	config_free(cfg);
	cfg = accepted(RUNS_QUEUE "    runs: true\n");
	ck_assert(cfg->queues[0].runs.enabled);
	config_free(cfg);
	cfg = accepted(RUNS_QUEUE);
	ck_assert(!cfg->queues[0].runs.enabled);
	config_free(cfg);
	refused(RUNS_QUEUE "    runs: {table: \"runs; DROP TABLE t\"}\n",
	    "rowq.yaml:7: queues.q.runs.table: not a table name (letters, "
	    "digits, _ and $, or DATABASE.TABLE): ");
	refused(RUNS_QUEUE "    runs: {keep: soon}\n",
	    "rowq.yaml:7: queues.q.runs.keep: ");
	refused(RUNS_QUEUE "    runs: {kept: 1h}\n",
	    "rowq.yaml:7: queues.q.runs.kept: unknown key: did you mean keep?");
	refused(RUNS_QUEUE "    runs: maybe\n",
	    "rowq.yaml:7: queues.q.runs: expected true or false, not \"maybe\"");
}
END_TEST

START_TEST(test_lease)
{
	struct config *cfg = accepted(
	    "queues:\n"
	    "  render:\n"
	    "    select: SELECT id FROM video WHERE lease_until < NOW()\n"
	    "    exec: [/usr/bin/render, \"{id}\"]\n"
	    "    done: UPDATE video SET done = 1 WHERE id = :id\n"
	    "    failed: UPDATE video SET failed = 1 WHERE id = :id\n"
	    "    lease:\n"
	    "      claim: UPDATE video SET lease_until = NOW() + INTERVAL :lease SECOND WHERE id = :id\n"
	    "      duration: 10m\n");
	struct queue *q = &cfg->queues[0];

	ck_assert(q->lease.enabled);
	ck_assert_int_eq(q->lease.duration_ms, 600000);
	ck_assert_uint_eq(q->lease.claim.nparams, 2);
	ck_assert_str_eq(q->lease.claim.where,
	    "rowq.yaml:8: queues.render.lease.claim");
	config_free(cfg);
	refused(
	    "queues:\n"
	    "  render:\n"
	    "    select: SELECT id FROM video\n"
	    "    exec: [/usr/bin/render]\n"
	    "    done: UPDATE video SET done = 1 WHERE id = :id\n"
	    "    failed: UPDATE video SET failed = 1 WHERE id = :id\n"
	    "    lease:\n"
	    "      duration: 10m\n",
	    "rowq.yaml:7: queues.render.lease: missing required key claim\n");
	/* A batch of leased rows: leased, renewed and finished together. */
	cfg = accepted(
	    "queues:\n"
	    "  render:\n"
	    "    select: SELECT id FROM video WHERE lease_until < NOW()\n"
	    "    exec: [/usr/bin/render, \"{id}\"]\n"
	    "    batch: 10\n"
	    "    done: UPDATE video SET done = 1 WHERE id = :id\n"
	    "    failed: UPDATE video SET failed = 1 WHERE id = :id\n"
	    "    lease:\n"
	    "      claim: UPDATE video SET lease_until = NOW() + INTERVAL :lease SECOND WHERE id = :id\n"
	    "      duration: 10m\n");
	ck_assert_int_eq(cfg->queues[0].batch, 10);
	ck_assert(cfg->queues[0].lease.enabled);
	ck_assert_int_eq(queue_claim_rows(&cfg->queues[0]), 10);
	config_free(cfg);
}
END_TEST

/* lease.ahead: rows leased at a claim at batch 1, and what it refuses. */
#define AHEAD_QUEUE \
	"queues:\n" \
	"  render:\n" \
	"    select: SELECT id FROM video WHERE lease_until < NOW()\n" \
	"    exec: [/usr/bin/render, \"{id}\"]\n" \
	"    done: UPDATE video SET done = 1 WHERE id = :id\n" \
	"    failed: UPDATE video SET failed = 1 WHERE id = :id\n" \
	"    lease:\n" \
	"      claim: UPDATE video SET l = :lease WHERE id = :id\n" \
	"      duration: 10m\n"

START_TEST(test_lease_ahead)
{
	struct config *cfg = accepted(AHEAD_QUEUE "      ahead: 10\n");

	ck_assert_int_eq(cfg->queues[0].batch, 1);
	ck_assert_int_eq(cfg->queues[0].lease.ahead, 10);
	ck_assert_int_eq(queue_claim_rows(&cfg->queues[0]), 10);
	config_free(cfg);
	cfg = accepted(AHEAD_QUEUE);
	ck_assert_int_eq(queue_claim_rows(&cfg->queues[0]), 1);
	config_free(cfg);
	refused(AHEAD_QUEUE "      ahead: 0\n",
	    "rowq.yaml:10: queues.render.lease.ahead: must be from 1 to "
	    "1000, not 0\n");
	refused(AHEAD_QUEUE "      ahead: 1001\n",
	    "rowq.yaml:10: queues.render.lease.ahead: must be from 1 to "
	    "1000, not 1001\n");
	refused(AHEAD_QUEUE "      ahead: 10\n    batch: 5\n",
	    "rowq.yaml:10: queues.render.lease.ahead: lease.ahead is for "
	    "batch 1: with batch: 5 the claim leases 5 rows already; give "
	    "one of them\n");
	refused(AHEAD_QUEUE "      ahead: 10\n    limit: {concurrency: 2}\n",
	    "rowq.yaml:10: queues.render.lease.ahead: lease.ahead cannot go "
	    "with limit:, whose slots are taken a row at a time as it "
	    "runs\n");
}
END_TEST

/* lease.release: a statement or a list, kept with where it was said. */
START_TEST(test_lease_release)
{
	struct config *cfg = accepted(AHEAD_QUEUE "      ahead: 10\n"
	    "      release: UPDATE video SET l = NULL WHERE id = :id AND l = "
	    ":lease\n");
	const struct queue *q = &cfg->queues[0];

	ck_assert_str_eq(q->lease.release.text,
	    "UPDATE video SET l = NULL WHERE id = :id AND l = :lease");
	ck_assert_str_eq(q->lease.release.where,
	    "rowq.yaml:11: queues.render.lease.release");
	config_free(cfg);
	cfg = accepted(AHEAD_QUEUE);
	ck_assert_ptr_null(cfg->queues[0].lease.release.text);
	config_free(cfg);
	cfg = accepted(AHEAD_QUEUE "      release:\n"
	    "        - UPDATE video SET l = NULL WHERE id = :id AND l = :lease\n"
	    "        - INSERT INTO given_back VALUES (:id)\n");
	ck_assert_ptr_nonnull(cfg->queues[0].lease.release.next);
	config_free(cfg);
}
END_TEST

/*
 * A try's outcome has no place in the lease statements (run before it,
 * or for rows never handled).
 */
START_TEST(test_lease_answer_params)
{
	struct config *cfg = accepted(AHEAD_QUEUE "      ahead: 10\n"
	    "      release: UPDATE video SET l = NULL, e = :error WHERE id = :id"
	    "\n      renew: UPDATE video SET o = :output WHERE l = :lease\n");
	char *id_only[] = { "id" };
	char *log;

	ck_assert_int_eq(check_columns(&cfg->queues[0], id_only, 1, &log), 2);
	ck_assert_has(log, "rowq.yaml:11: queues.render.lease.release: :error "
	    "is part of a try's outcome, and this statement runs when no row "
	    "has one");
	ck_assert_has(log, "queues.render.lease.renew: :output is part of a "
	    "try's outcome");
	free(log);
	config_free(cfg);
}
END_TEST

/* lease.claim and lease.renew as lists; a claim list needs a renew. */
START_TEST(test_lease_lists)
{
	struct config *cfg = accepted(
	    "queues:\n"
	    "  jobs:\n"
	    "    select: SELECT job_id AS id FROM ready\n"
	    "    exec: [/usr/bin/run]\n"
	    "    done: DELETE FROM claimed WHERE job_id = :id AND lease = :lease\n"
	    "    failed: DELETE FROM claimed WHERE job_id = :id AND lease = :lease\n"
	    "    lease:\n"
	    "      claim:\n"
	    "        - INSERT INTO claimed (job_id, lease) SELECT job_id, :lease FROM ready WHERE job_id = :id\n"
	    "        - DELETE FROM ready WHERE job_id = :id\n"
	    "      renew: [UPDATE claimed SET t = NOW() WHERE job_id = :id AND lease = :lease, INSERT INTO renewals VALUES (:id)]\n"
	    "      duration: 1m\n");
	struct queue *q = &cfg->queues[0];

	ck_assert_ptr_nonnull(q->lease.claim.next);
	ck_assert_ptr_null(q->lease.claim.next->next);
	ck_assert_str_eq(q->lease.claim.next->where,
	    "rowq.yaml:10: queues.jobs.lease.claim[1]");
	ck_assert_ptr_nonnull(q->lease.renew.next);
	config_free(cfg);
	refused(
	    "queues:\n"
	    "  jobs:\n"
	    "    select: SELECT id FROM ready\n"
	    "    exec: [/usr/bin/run]\n"
	    "    done: DELETE FROM claimed WHERE job_id = :id\n"
	    "    failed: DELETE FROM claimed WHERE job_id = :id\n"
	    "    lease:\n"
	    "      claim:\n"
	    "        - INSERT INTO claimed VALUES (:id, :lease)\n"
	    "        - DELETE FROM ready WHERE id = :id\n"
	    "      duration: 1m\n",
	    "rowq.yaml:8: queues.jobs.lease.claim: a list of statements "
	    "cannot renew the lease by running again: give lease.renew");
	refused(
	    "queues:\n"
	    "  jobs:\n"
	    "    select: SELECT id FROM ready\n"
	    "    exec: [/usr/bin/run]\n"
	    "    done: DELETE FROM claimed WHERE job_id = :id\n"
	    "    failed: DELETE FROM claimed WHERE job_id = :id\n"
	    "    lease:\n"
	    "      claim: UPDATE ready SET lease = :lease WHERE id = :id\n"
	    "      renew: []\n"
	    "      duration: 1m\n",
	    "rowq.yaml:9: queues.jobs.lease.renew: expected a statement or "
	    "a list of 1 to 16, not 0\n");
}
END_TEST

/* handler: none: done: is the work; the keys of a handler refused. */
START_TEST(test_handler_none)
{
	struct config *cfg = accepted(
	    "queues:\n"
	    "  due:\n"
	    "    handler: none\n"
	    "    batch: 100\n"
	    "    select: SELECT id FROM delayed WHERE run_at <= NOW() ORDER BY run_at\n"
	    "    done: [INSERT INTO ready SELECT id FROM delayed WHERE id = :id, DELETE FROM delayed WHERE id = :id]\n");
	struct queue *q = &cfg->queues[0];

	ck_assert_int_eq(q->handler, HANDLER_NONE);
	ck_assert_ptr_null(q->argv);
	ck_assert_int_eq(q->batch, 100);
	config_free(cfg);
	char *log;

	put("rowq.yaml",
	    "queues:\n"
	    "  due:\n"
	    "    handler: none\n"
	    "    select: SELECT id FROM delayed\n"
	    "    exec: [/bin/true]\n"
	    "    timeout: 5s\n"
	    "    retry: {update: UPDATE delayed SET n = n + 1 WHERE id = :id}\n"
	    "    lease: {claim: UPDATE delayed SET l = :lease WHERE id = :id, duration: 1m}\n"
	    "    done: DELETE FROM delayed WHERE id = :id\n");
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:5: queues.due.exec: not with handler: "
	    "none: the handler is none\n");
	ck_assert_has(log, "rowq.yaml:6: queues.due.timeout: not with "
	    "handler: none: no handler runs\n");
	ck_assert_has(log, "rowq.yaml:7: queues.due.retry: not with handler: "
	    "none: no handler fails a try (failed: runs when the server "
	    "refuses done: for a row)\n");
	ck_assert_has(log, "rowq.yaml:8: queues.due.lease: not with handler: "
	    "none: the rows are claimed and finished in one transaction\n");
	ck_assert_uint_eq(count_lines(log), 4);
	free(log);
	refused(
	    "queues:\n"
	    "  due:\n"
	    "    handler: sql\n"
	    "    select: SELECT id FROM delayed\n"
	    "    done: DELETE FROM delayed WHERE id = :id\n",
	    "rowq.yaml:3: queues.due.handler: expected none (a queue whose "
	    "done: statements are its work), not \"sql\"; a program is exec: or "
	    "pipe:\n");
	refused(
	    "queues:\n"
	    "  due:\n"
	    "    select: SELECT id FROM delayed\n"
	    "    done: DELETE FROM delayed WHERE id = :id\n",
	    "rowq.yaml:2: queues.due: missing exec: or pipe:, the handler (or "
	    "handler: none, for a queue whose done: statements are its "
	    "work)\n");
}
END_TEST

/* prune.delete as a list: each bounded with the chunk, named by place. */
START_TEST(test_prune_list)
{
	struct config *cfg = accepted(
	    "queues:\n"
	    "  job:\n"
	    "    select: SELECT id FROM job WHERE status = 'waiting' ORDER BY id\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE job SET status = 'done' WHERE id = :id\n"
	    "    failed: UPDATE job SET status = 'failed' WHERE id = :id\n"
	    "    prune:\n"
	    "      delete:\n"
	    "        - DELETE FROM job_log WHERE created_at < NOW() - INTERVAL 7 DAY\n"
	    "        - CALL prune_jobs(:chunk)\n"
	    "      chunk: 250\n");
	const struct prune_policy *p = &cfg->queues[0].prune;

	ck_assert_str_eq(p->chunk_sql, "DELETE FROM job_log WHERE created_at "
	    "< NOW() - INTERVAL 7 DAY LIMIT 250");
	ck_assert_str_eq(p->where, "rowq.yaml:9: queues.job.prune.delete[0]");
	ck_assert_ptr_nonnull(p->next);
	ck_assert(p->next->is_call);
	ck_assert_str_eq(p->next->chunk_sql, "CALL prune_jobs(250)");
	ck_assert_str_eq(p->next->where,
	    "rowq.yaml:10: queues.job.prune.delete[1]");
	ck_assert_ptr_null(p->next->next);
	config_free(cfg);
	refused(
	    "queues:\n"
	    "  job:\n"
	    "    select: SELECT id FROM job WHERE status = 'waiting' ORDER BY id\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE job SET status = 'done' WHERE id = :id\n"
	    "    failed: UPDATE job SET status = 'failed' WHERE id = :id\n"
	    "    prune:\n"
	    "      delete:\n"
	    "        - DELETE FROM job_log WHERE created_at < NOW()\n"
	    "        - DELETE FROM job\n",
	    "rowq.yaml:10: queues.job.prune.delete[1]: a DELETE without "
	    "WHERE would remove the waiting rows too");
}
END_TEST

START_TEST(test_select_limit)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email ORDER BY id LIMIT 10\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n",
	    "rowq.yaml:3: queues.email.select: has LIMIT");
}
END_TEST

START_TEST(test_select_for_update)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: |\n"
	    "      SELECT id FROM email\n"
	    "      FOR UPDATE SKIP LOCKED\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n",
	    "rowq.yaml:3: queues.email.select: has a locking clause");
}
END_TEST

START_TEST(test_select_parameters)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email WHERE created < :since\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n",
	    "rowq.yaml:3: queues.email.select: :since: the select takes no "
	    "parameters (only done, failed, retry.update, lease.claim, "
	    "lease.renew, lease.release, requeue, discard and cancel do)\n");
}
END_TEST

START_TEST(test_statement_errors)
{
	static const char yaml[] =
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent WHERE id = :id\n"
	    "    failed: \"\"\n";
	char *log;

	put("rowq.yaml", yaml);
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:5: queues.email.done: unterminated "
	    "quoted string\n");
	ck_assert_has(log, "rowq.yaml:6: queues.email.failed: expected an SQL "
	    "statement, not an empty value\n");
	free(log);
}
END_TEST

START_TEST(test_neither_retry_nor_failed)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n",
	    "rowq.yaml:2: queues.email: neither retry nor failed: a failing row "
	    "would be claimed again at once, forever\n");
}
END_TEST

START_TEST(test_missing_keys)
{
	char *log;

	put("rowq.yaml", "queues:\n  email:\n    workers: 2\n    failed: "
	    "UPDATE email SET s = 2 WHERE id = :id\n");
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:2: queues.email: missing required key "
	    "select\n");
	ck_assert_has(log, "rowq.yaml:2: queues.email: missing required key "
	    "done\n");
	ck_assert_has(log, "rowq.yaml:2: queues.email: missing exec: or "
	    "pipe:, the handler (or handler: none, for a queue whose done: "
	    "statements are its work)\n");
	ck_assert_uint_eq(count_lines(log), 3);
	free(log);
}
END_TEST

START_TEST(test_handlers)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    pipe: [/bin/cat]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n",
	    "rowq.yaml:5: queues.email.pipe: a queue has one handler: exec or "
	    "pipe, not both\n");
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/echo, \"{id\", \"}\", \"{}\", \"{{ok}} {id}\"]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n",
	    "rowq.yaml:4: queues.email.exec[1]: an unclosed { (write {{ for a "
	    "literal brace) in \"{id\"\n");
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [\"\"]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n",
	    "rowq.yaml:4: queues.email.exec[0]: an empty program name\n");
}
END_TEST

START_TEST(test_wrong_types)
{
	static const char yaml[] =
	    "database: [localhost]\n"
	    "include: {a: b}\n"
	    "queues:\n"
	    "  email:\n"
	    "    workers: [1]\n"
	    "    batch: four\n"
	    "    select:\n"
	    "      text: SELECT id FROM email\n"
	    "    exec: /bin/true --verbose\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    retry: 5\n"
	    "    failed:\n"
	    "    max_jobs: -1\n"
	    "    idle: ~\n"
	    "    key: [a, b]\n"
	    "  sms: []\n";
	char *log;

	put("rowq.yaml", yaml);
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:1: database: expected a mapping, not a "
	    "sequence\n");
	ck_assert_has(log, "rowq.yaml:2: include: expected a file name pattern "
	    "or a sequence of them, not a mapping\n");
	ck_assert_has(log, "rowq.yaml:5: queues.email.workers: expected a "
	    "whole number, not a sequence\n");
	ck_assert_has(log, "rowq.yaml:6: queues.email.batch: not a whole "
	    "number: \"four\"\n");
	ck_assert_has(log, "rowq.yaml:8: queues.email.select: expected a "
	    "SELECT statement, not a mapping\n");
	ck_assert_has(log, "rowq.yaml:9: queues.email.exec: expected a "
	    "sequence such as [/usr/bin/program, \"{id}\"], not a string\n");
	ck_assert_has(log, "rowq.yaml:11: queues.email.retry: expected a "
	    "mapping, not a string\n");
	ck_assert_has(log, "rowq.yaml:12: queues.email.failed: expected an SQL "
	    "statement, not an empty value\n");
	ck_assert_has(log, "rowq.yaml:13: queues.email.max_jobs: must be at "
	    "least 0, not -1\n");
	ck_assert_has(log, "rowq.yaml:14: queues.email.idle: expected a "
	    "duration, not an empty value\n");
	ck_assert_has(log, "rowq.yaml:15: queues.email.key: expected a column "
	    "name, not a sequence\n");
	ck_assert_has(log, "rowq.yaml:16: queues.sms: expected a mapping, not "
	    "a sequence\n");
	ck_assert_uint_eq(count_lines(log), 12);
	free(log);
}
END_TEST

START_TEST(test_numbers)
{
	static const char yaml[] =
	    "queues:\n"
	    "  email:\n"
	    "    workers: 257\n"
	    "    batch: 1001\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n"
	    "    max_jobs: 99999999999999999999999\n";
	char *log;

	put("rowq.yaml", yaml);
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:3: queues.email.workers: must be from 1 "
	    "to 256, not 257\n");
	ck_assert_has(log, "rowq.yaml:4: queues.email.batch: must be from 1 "
	    "to 1000, not 1001\n");
	ck_assert_has(log, "rowq.yaml:9: queues.email.max_jobs: must be at "
	    "least 0, not 99999999999999999999999\n");
	free(log);
}
END_TEST

START_TEST(test_queue_names)
{
	char yaml[512];
	struct config *cfg;

	refused("queues:\n" SMALL_QUEUE("bad name"),
	    "rowq.yaml:2: queues: \"bad name\" is not a queue name: use 1 to "
	    "64 letters, digits, _ and -\n");
	snprintf(yaml, sizeof(yaml), "queues:\n  %065d:\n    select: SELECT 1\n",
	    0);
	refused(yaml, "is not a queue name");
	cfg = accepted("queues:\n" SMALL_QUEUE(
	    "A-z_012345678901234567890123456789012345678901234567890123456789"));
	ck_assert_uint_eq(strlen(cfg->queues[0].name), 64);
	config_free(cfg);
}
END_TEST

START_TEST(test_too_many_queues)
{
	struct buf b = { 0 };
	char *log;
	int i;

	buf_puts(&b, "queues:\n");
	for (i = 0; i <= QUEUES_MAX; i++)
		buf_printf(&b, "  q%d: {select: SELECT id FROM t, exec: [x], "
		    "done: UPDATE t SET s = 1 WHERE id = :id, failed: UPDATE t "
		    "SET s = 2 WHERE id = :id}\n", i);
	buf_printf(&b, "  q%d: {}\n", QUEUES_MAX + 1);
	put("rowq.yaml", b.data);
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:258: queues.q256: more than 256 "
	    "queues\n");
	ck_assert_uint_eq(count_lines(log), 1);	/* said once */
	free(log);
	buf_free(&b);
}
END_TEST

START_TEST(test_too_many_values)
{
	struct buf b = { 0 };
	int i;

	buf_puts(&b, "queues:\n  email:\n    exec: [x");
	for (i = 0; i < 100000; i++)
		buf_puts(&b, ",x");
	buf_puts(&b, "]\n");
	refused(b.data, "rowq.yaml:3: queues.email.exec[99993]: more than "
	    "100000 values in one file\n");
	buf_free(&b);
}
END_TEST

START_TEST(test_no_queues)
{
	refused("", "rowq.yaml:1: queues: no queue is defined\n");
	refused("stop_timeout: 1s\nqueues:\n", "rowq.yaml:2: queues: no queue "
	    "is defined\n");
	refused("# nothing\nqueues: {}\n", "rowq.yaml:2: queues: no queue is "
	    "defined\n");
}
END_TEST

START_TEST(test_alias)
{
	refused(
	    "queues:\n"
	    "  email: &q\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n"
	    "  sms: *q\n",
	    "rowq.yaml:7: queues.sms: alias *q: anchors and aliases are not "
	    "allowed\n");
}
END_TEST

/* An anchor with no alias is refused as well: one rule for both. */
START_TEST(test_anchor)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: &s SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n",
	    "rowq.yaml:3: queues.email.select: anchor &s: anchors and aliases "
	    "are not allowed\n");
}
END_TEST

/* ": " in a plain value: the message says to quote it or use |. */
START_TEST(test_colon_space_hint)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET note = CONCAT('at: ', NOW()) WHERE id = :id\n",
	    "rowq.yaml:5: syntax error: mapping values are not allowed in "
	    "this context; a value holding \": \" (a colon and a space) must "
	    "be quoted, or written as a block after |\n");
}
END_TEST

/* Nine levels of ten aliases each would be a billion strings. */
START_TEST(test_billion_laughs)
{
	static const char yaml[] =
	    "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
	    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
	    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
	    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
	    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
	    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
	    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
	    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";

	refused(yaml, "rowq.yaml:2: b[0]: alias *a: anchors and aliases are "
	    "not allowed\n");
}
END_TEST

START_TEST(test_deep_nesting)
{
	struct buf b = { 0 };
	int i;

	buf_puts(&b, "queues:\n  email:\n    select: ");
	for (i = 0; i < 20; i++)
		buf_putc(&b, '[');
	for (i = 0; i < 20; i++)
		buf_putc(&b, ']');
	buf_putc(&b, '\n');
	refused(b.data, "rowq.yaml:3: queues.email.select[0][0][0][0][0][0]"
	    "[0][0][0][0][0][0][0]: nested more than 16 levels deep\n");
	buf_free(&b);
}
END_TEST

START_TEST(test_huge_scalar)
{
	struct buf b = { 0 };
	int i;

	buf_puts(&b, "queues:\n  email:\n    select: SELECT id FROM email "
	    "WHERE x IN (0");
	for (i = 0; i < CONFIG_SCALAR_MAX / 2; i++)
		buf_puts(&b, ",1");
	buf_puts(&b, ")\n");
	refused(b.data, "rowq.yaml:3: queues.email.select: value longer than "
	    "65536 bytes\n");
	buf_free(&b);
}
END_TEST

START_TEST(test_file_too_large)
{
	char *text = malloc(CONFIG_FILE_MAX + 1);
	struct config *cfg;
	char *log;

	memset(text, '#', CONFIG_FILE_MAX);
	text[CONFIG_FILE_MAX - 1] = '\n';
	/* Exactly the limit is fine (and holds no queue). */
	put_mode("rowq.yaml", text, CONFIG_FILE_MAX, 0600);
	cfg = load("rowq.yaml", &log);
	ck_assert_ptr_null(cfg);
	ck_assert_has(log, "rowq.yaml:1: queues: no queue is defined\n");
	ck_assert_uint_eq(count_lines(log), 1);
	free(log);
	text[CONFIG_FILE_MAX] = '\n';
	put_mode("rowq.yaml", text, CONFIG_FILE_MAX + 1, 0600);
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml: larger than 1048576 bytes\n");
	free(log);
	free(text);
}
END_TEST

START_TEST(test_tabs)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "\tselect: SELECT id FROM email\n",
	    "rowq.yaml:3: syntax error: found character that cannot start any "
	    "token; the line has a tab, and YAML indents with spaces only\n");
}
END_TEST

/* A tab inside a block scalar is text, not indentation. */
START_TEST(test_tab_in_text)
{
	struct config *cfg = accepted(
	    "queues:\n"
	    "  email:\n"
	    "    select: |\n"
	    "      SELECT id\n"
	    "      \tFROM email\n"
	    "    exec: [/bin/true]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :id\n"
	    "    failed: UPDATE email SET status = 'failed' WHERE id = :id\n");

	ck_assert_str_eq(cfg->queues[0].select.text, "SELECT id\n\tFROM email\n");
	config_free(cfg);
}
END_TEST

START_TEST(test_not_utf8)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id FROM email\n"
	    "    done: UPDATE email SET subject = 'caf\xe9' WHERE id = :id\n",
	    "rowq.yaml:4: not UTF-8 text (byte 0xe9): a configuration file must "
	    "be UTF-8\n");
	/* UTF-16, with its byte order mark. */
	put_mode("rowq.yaml", "\xff\xfeq\0u\0", 6, 0600);
	char *log;
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:1: not UTF-8 text (byte 0xff): a "
	    "configuration file must be UTF-8\n");
	ck_assert_uint_eq(count_lines(log), 1);
	free(log);
}
END_TEST

START_TEST(test_control_characters)
{
	refused("queues:\n  email:\n    select: \"SELECT \x01\"\n",
	    "rowq.yaml:3: control characters are not allowed (U+0001)\n");
	refused("queues:\n  email:\n    select: \"SELECT \\0\"\n",
	    "rowq.yaml:3: queues.email.select: value contains a NUL "
	    "character\n");
}
END_TEST

START_TEST(test_bom)
{
	struct config *cfg = accepted("\xef\xbb\xbfqueues:\n" SMALL_QUEUE("q"));

	ck_assert_str_eq(cfg->queues[0].where, "rowq.yaml:2");
	config_free(cfg);
}
END_TEST

START_TEST(test_syntax_errors)
{
	refused(
	    "queues:\n"
	    "  email:\n"
	    "    select: \"SELECT id FROM email\n"
	    "    exec: [/bin/true]\n",
	    "rowq.yaml:5: syntax error: found unexpected end of stream (while "
	    "scanning a quoted scalar at line 3)\n");
	refused("queues: {}\n---\nqueues: {}\n",
	    "rowq.yaml:2: a second YAML document: a configuration file holds "
	    "one\n");
	refused("- queues\n", "rowq.yaml:1: expected a mapping of keys such as "
	    "queues:, not a sequence\n");
	refused("queues:\n  ? [a]\n  : 1\n", "rowq.yaml:2: queues: a sequence "
	    "is not a queue name: use 1 to 64 letters, digits, _ and -\n");
}
END_TEST

START_TEST(test_missing_file)
{
	char *log;

	ck_assert_ptr_null(load("nope.yaml", &log));
	ck_assert_has(log, " nope.yaml: No such file or directory\n");
	ck_assert_uint_eq(count_lines(log), 1);
	free(log);
}
END_TEST

START_TEST(test_database)
{
	struct config *cfg;
	char *log;

	cfg = accepted(
	    "database:\n"
	    "  host: db1.example.com\n"
	    "  user: rowq\n"
	    "  name: shop\n"
	    "  option_group: rowq\n"
	    "queues:\n" SMALL_QUEUE("q"));
	ck_assert_uint_eq(cfg->db.nhosts, 1);
	ck_assert_str_eq(cfg->db.hosts[0].name, "db1.example.com");
	ck_assert_uint_eq(cfg->db.hosts[0].port, 3306);
	ck_assert(!cfg->db.tls.on);
	ck_assert_str_eq(cfg->db.option_group, "rowq");
	config_free(cfg);
	put("my.cnf", "[rowq]\nport=3307\n");
	cfg = accepted(
	    "database:\n"
	    "  option_file: my.cnf\n"
	    "queues:\n" SMALL_QUEUE("q"));
	ck_assert_uint_eq(cfg->db.port, 0);	/* the option file's */
	ck_assert_str_eq(cfg->db.option_file, "my.cnf");
	config_free(cfg);
	put("rowq.yaml",
	    "database:\n"
	    "  socket: /run/mysqld/mysqld.sock\n"
	    "  host: localhost\n"
	    "  port: 3307\n"
	    "  option_file: /nonexistent/my.cnf\n"
	    "queues:\n" SMALL_QUEUE("q"));
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:3: database.host: socket and host "
	    "exclude each other\n");
	ck_assert_has(log, "rowq.yaml:5: database.option_file: "
	    "/nonexistent/my.cnf: No such file or directory\n");
	ck_assert_uint_eq(count_lines(log), 2);
	free(log);
	refused("database:\n  port: 3307\nqueues:\n" SMALL_QUEUE("q"),
	    "rowq.yaml:2: database.port: port needs host:\n");
	refused("database:\n  port: 70000\nqueues:\n" SMALL_QUEUE("q"),
	    "rowq.yaml:2: database.port: must be from 1 to 65535, not 70000\n");
}
END_TEST

/* host: as a list, each with a port of its own or port:'s. */
START_TEST(test_database_hosts)
{
	struct config *cfg;

	cfg = accepted(
	    "database:\n"
	    "  host: [db1.example.com, \"10.0.0.2:3307\", \"[fd00::3]:3308\",\n"
	    "         \"fd00::4\"]\n"
	    "  port: 3310\n"
	    "queues:\n" SMALL_QUEUE("q"));
	ck_assert_uint_eq(cfg->db.nhosts, 4);
	ck_assert_str_eq(cfg->db.hosts[0].name, "db1.example.com");
	ck_assert_uint_eq(cfg->db.hosts[0].port, 3310);
	ck_assert_str_eq(cfg->db.hosts[1].name, "10.0.0.2");
	ck_assert_uint_eq(cfg->db.hosts[1].port, 3307);
	ck_assert_str_eq(cfg->db.hosts[2].name, "fd00::3");
	ck_assert_uint_eq(cfg->db.hosts[2].port, 3308);
	ck_assert_str_eq(cfg->db.hosts[3].name, "fd00::4");
	ck_assert_uint_eq(cfg->db.hosts[3].port, 3310);
	config_free(cfg);
	refused("database:\n  host: []\nqueues:\n" SMALL_QUEUE("q"),
	    "rowq.yaml:2: database.host: an empty list: name at least one "
	    "host\n");
	refused("database:\n  host: [a, \"b:99999\"]\nqueues:\n"
	    SMALL_QUEUE("q"), "rowq.yaml:2: database.host[1]: not a port "
	    "(1 to 65535) after the host's colon: \"b:99999\"\n");
	refused("database:\n  host: \"[fd00::1\"\nqueues:\n" SMALL_QUEUE("q"),
	    "rowq.yaml:2: database.host: not a host, HOST:PORT or "
	    "[ADDRESS]:PORT: \"[fd00::1\"\n");
}
END_TEST

/* tls: its files there, verify one of three, full by default. */
START_TEST(test_database_tls)
{
	struct config *cfg;
	char *log;

	put("ca.pem", "x");
	put("c.pem", "x");
	put("k.pem", "x");
	cfg = accepted(
	    "database:\n"
	    "  host: db1\n"
	    "  tls: {ca: ca.pem, cert: c.pem, key: k.pem}\n"
	    "queues:\n" SMALL_QUEUE("q"));
	ck_assert(cfg->db.tls.on);
	ck_assert_int_eq(cfg->db.tls.verify, TLS_VERIFY_FULL);
	ck_assert_str_eq(cfg->db.tls.ca, "ca.pem");
	ck_assert_str_eq(cfg->db.tls.key, "k.pem");
	config_free(cfg);
	cfg = accepted("database:\n  host: db1\n  tls: {verify: off}\n"
	    "queues:\n" SMALL_QUEUE("q"));
	ck_assert_int_eq(cfg->db.tls.verify, TLS_VERIFY_OFF);
	config_free(cfg);
	put("rowq.yaml",
	    "database:\n"
	    "  socket: /run/mysqld/mysqld.sock\n"
	    "  tls:\n"
	    "    ca: nowhere.pem\n"
	    "    key: k.pem\n"
	    "    verify: maybe\n"
	    "queues:\n" SMALL_QUEUE("q"));
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:6: database.tls.verify: expected full, "
	    "ca or off, not \"maybe\"\n");
	ck_assert_has(log, "rowq.yaml:4: database.tls.ca: nowhere.pem: No such "
	    "file or directory\n");
	ck_assert_has(log, "rowq.yaml:5: database.tls.key: key needs cert: ");
	ck_assert_has(log, "rowq.yaml:3: database.tls: tls needs host: ");
	ck_assert_uint_eq(count_lines(log), 4);
	free(log);
	refused("database:\n  host: db1\n  tls: {verify: ca}\nqueues:\n"
	    SMALL_QUEUE("q"), "rowq.yaml:3: database.tls: verify: ca needs "
	    "ca: (the CA that signed the server's certificate); verify: off "
	    "encrypts without checking\n");
}
END_TEST

/*
 * console.tls.min_version: "1.2" by default, or "1.3"; nothing older.
 * The console's files are not read here (config_load leaves them to the
 * commands that serve the console).
 */
START_TEST(test_console_tls)
{
	struct config *cfg;

	cfg = accepted("console:\n  users_file: nowhere.users\n"
	    "  tls: {cert: c.pem, key: k.pem}\nqueues:\n" SMALL_QUEUE("q"));
	ck_assert_int_eq(cfg->console.tls_min_version, 12);
	ck_assert_str_eq(cfg->console.tls_key, "k.pem");
	config_free(cfg);
	cfg = accepted(
	    "console:\n"
	    "  users_file: nowhere.users\n"
	    "  tls: {cert: c.pem, key: k.pem, min_version: \"1.3\"}\n"
	    "queues:\n" SMALL_QUEUE("q"));
	ck_assert_int_eq(cfg->console.tls_min_version, 13);
	config_free(cfg);
	cfg = accepted(
	    "console:\n"
	    "  users_file: nowhere.users\n"
	    "  tls: {cert: c.pem, key: k.pem, min_version: 1.2}\n"
	    "queues:\n" SMALL_QUEUE("q"));
	ck_assert_int_eq(cfg->console.tls_min_version, 12);
	config_free(cfg);
	refused(
	    "console:\n"
	    "  users_file: nowhere.users\n"
	    "  tls: {cert: c.pem, key: k.pem, min_version: \"1.1\"}\n"
	    "queues:\n" SMALL_QUEUE("q"), "rowq.yaml:3: "
	    "console.tls.min_version: expected \"1.2\" or \"1.3\" (TLS 1.0 "
	    "and 1.1 are never spoken), not \"1.1\"\n");
}
END_TEST

/* Relative to the file's directory; one newline stripped; no leak in log. */
START_TEST(test_password_file)
{
	static const char yaml[] =
	    "database:\n"
	    "  password_file: db.password\n"
	    "queues:\n" SMALL_QUEUE("q");
	struct config *cfg;
	char *log;

	ck_assert_int_eq(mkdir("etc", 0700), 0);
	put("etc/rowq.yaml", yaml);
	put("etc/db.password", "pw\n\n");
	cfg = load("etc/rowq.yaml", &log);
	ck_assert_msg(cfg != NULL, "%s", log);
	ck_assert_str_eq(log, "");
	ck_assert_str_eq(cfg->db.password, "pw\n");
	ck_assert_str_eq(cfg->db.password_file, "etc/db.password");
	config_free(cfg);
	free(log);

	put("etc/db.password", "pw");
	cfg = load("etc/rowq.yaml", &log);
	ck_assert_str_eq(cfg->db.password, "pw");
	config_free(cfg);
	free(log);

	/* Readable by all: loaded, with a warning that names the file. */
	put_mode("etc/db.password", "sesame\n", 7, 0644);
	cfg = load("etc/rowq.yaml", &log);
	ck_assert_ptr_nonnull(cfg);
	ck_assert_str_eq(cfg->db.password, "sesame");
	ck_assert_has(log, "etc/db.password: the password file is readable by "
	    "everyone (mode 0644): chmod o-r it\n");
	ck_assert_ptr_null(strstr(log, "sesame"));
	config_free(cfg);
	free(log);
}
END_TEST

START_TEST(test_password_errors)
{
	char big[PASSWORD_MAX + 2];
	struct config *cfg;
	char *log;

	refused("database:\n  password_file: db.password\nqueues:\n"
	    SMALL_QUEUE("q"), "rowq.yaml:2: database.password_file: "
	    "db.password: No such file or directory\n");

	memset(big, 'x', sizeof(big));
	big[PASSWORD_MAX] = '\n';
	put_mode("db.password", big, PASSWORD_MAX + 1, 0600);
	cfg = accepted("database:\n  password_file: db.password\nqueues:\n"
	    SMALL_QUEUE("q"));
	ck_assert_uint_eq(strlen(cfg->db.password), PASSWORD_MAX);
	config_free(cfg);

	put_mode("db.password", big, PASSWORD_MAX + 2, 0600);
	refused("database:\n  password_file: db.password\nqueues:\n"
	    SMALL_QUEUE("q"), "rowq.yaml:2: database.password_file: "
	    "db.password: longer than a password can be\n");

	put_mode("db.password", "a\0b\n", 4, 0600);
	put("rowq.yaml", "database:\n  password_file: db.password\nqueues:\n"
	    SMALL_QUEUE("q"));
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "db.password: contains a NUL byte\n");
	free(log);
}
END_TEST

START_TEST(test_credential)
{
	struct config *cfg;
	char dir[PATH_MAX + 16];

	ck_assert_int_eq(mkdir("creds", 0700), 0);
	put("creds/db", "from-systemd\n");
	unsetenv("CREDENTIALS_DIRECTORY");
	refused("database:\n  credential: db\nqueues:\n" SMALL_QUEUE("q"),
	    "rowq.yaml:2: database.credential: $CREDENTIALS_DIRECTORY is not "
	    "set: credential: works under systemd's LoadCredential=; "
	    "elsewhere use password_file:\n");
	snprintf(dir, sizeof(dir), "%s/creds", unit_dir);
	setenv("CREDENTIALS_DIRECTORY", dir, 1);
	cfg = accepted("database:\n  credential: db\nqueues:\n"
	    SMALL_QUEUE("q"));
	ck_assert_str_eq(cfg->db.password, "from-systemd");
	ck_assert_str_eq(cfg->db.credential, "db");
	config_free(cfg);
	refused("database:\n  credential: ../db\nqueues:\n" SMALL_QUEUE("q"),
	    "rowq.yaml:2: database.credential: a credential is a name, not a "
	    "path: \"../db\"\n");
	refused("database:\n  credential: db\n  password_file: x\nqueues:\n"
	    SMALL_QUEUE("q"), "rowq.yaml:3: database.password_file: "
	    "password_file and credential exclude each other\n");
	unsetenv("CREDENTIALS_DIRECTORY");
}
END_TEST

/* The same :param in one statement, or a bad key, is reported once. */
START_TEST(test_check_columns)
{
	static const char yaml[] =
	    "queues:\n"
	    "  email:\n"
	    "    select: SELECT id, recipient, subject, attempts FROM email\n"
	    "    key: ident\n"
	    "    exec: [/usr/bin/send, \"{recipent}\", \"{{literal}}\", \"{id}\"]\n"
	    "    done: UPDATE email SET status = 'sent' WHERE id = :idd OR id = :idd\n"
	    "    retry:\n"
	    "      attempts_column: tries\n"
	    "      update: UPDATE email SET a = :attempt, e = :error, d = :delay WHERE id = :id\n"
	    "    failed: UPDATE email SET o = :output, l = :lease WHERE id = :id\n";
	char *cols[] = { "id", "recipient", "subject", "attempts" };
	struct config *cfg = accepted(yaml);
	char *log;

	ck_assert_int_eq(check_columns(&cfg->queues[0], cols, 4, &log), 5);
	ck_assert_has(log, "rowq.yaml:6: queues.email.done: :idd is not a "
	    "column of the select (columns: id, recipient, subject, attempts) "
	    "nor a built-in (:attempt :delay :error :output :reason)\n");
	ck_assert_has(log, "rowq.yaml:10: queues.email.failed: :lease is not a "
	    "column of the select (columns: id, recipient, subject, attempts) "
	    "nor a built-in (:attempt :delay :error :output :reason)\n");
	ck_assert_has(log, "rowq.yaml:4: queues.email.key: ident is not a "
	    "column of the select (columns: id, recipient, subject, "
	    "attempts)\n");
	ck_assert_has(log, "rowq.yaml:8: queues.email.retry.attempts_column: "
	    "tries is not a column of the select (columns: id, recipient, "
	    "subject, attempts)\n");
	ck_assert_has(log, "rowq.yaml:5: queues.email.exec[1]: {recipent} is "
	    "not a column of the select (columns: id, recipient, subject, "
	    "attempts)\n");
	ck_assert_uint_eq(count_lines(log), 5);
	free(log);
	config_free(cfg);
}
END_TEST

START_TEST(test_check_columns_good)
{
	static const char yaml[] =
	    "queues:\n"
	    "  render:\n"
	    "    select: SELECT id, path, tries FROM video\n"
	    "    key: path\n"
	    "    exec: [/usr/bin/render, \"--in={path}\", \"{{x}}\"]\n"
	    "    done: UPDATE video SET out = :output WHERE id = :id\n"
	    "    retry:\n"
	    "      attempts_column: tries\n"
	    "      update: UPDATE video SET tries = :attempt, e = :error WHERE id = :id\n"
	    "    lease:\n"
	    "      claim: UPDATE video SET until = NOW() + INTERVAL :lease SECOND WHERE id = :id\n"
	    "      duration: 1h\n";
	char *cols[] = { "id", "path", "tries" };
	char *bad[] = { "path", "tries" };
	struct config *cfg = accepted(yaml);
	char *log;

	ck_assert_str_eq(cfg->queues[0].key_column, "path");
	ck_assert_int_eq(check_columns(&cfg->queues[0], cols, 3, &log), 0);
	ck_assert_str_eq(log, "");
	free(log);
	/* A pipe handler's arguments are fixed: no {column} there. */
	cfg->queues[0].handler = HANDLER_PIPE;
	ck_assert_int_eq(check_columns(&cfg->queues[0], cols, 3, &log), 1);
	ck_assert_has(log, "queues.render.exec[1]: {path}: a pipe handler's "
	    "arguments are fixed for its life");
	free(log);
	cfg->queues[0].handler = HANDLER_EXEC;
	/* With :lease allowed, the list of built-ins says so. */
	ck_assert_int_eq(check_columns(&cfg->queues[0], bad, 2, &log), 3);
	ck_assert_has(log, "rowq.yaml:6: queues.render.done: :id is not a "
	    "column of the select (columns: path, tries) nor a built-in "
	    "(:attempt :delay :error :output :lease :lease_int :duration "
	    ":reason)\n");
	free(log);
	config_free(cfg);
}
END_TEST

START_TEST(test_builtins)
{
	size_t n;

	for (n = 0; config_builtin_params[n] != NULL; n++)
		;
	ck_assert_uint_eq(n, 8);
	ck_assert_str_eq(config_builtin_params[0], "attempt");
	ck_assert_str_eq(config_builtin_params[7], "reason");
	ck_assert_str_eq(config_builtin_params[4], "lease");
	ck_assert_str_eq(config_builtin_params[5], "lease_int");
	ck_assert_str_eq(config_builtin_params[6], "duration");
}
END_TEST

/* One run reports every mistake, not just the first. */
START_TEST(test_all_errors)
{
	static const char yaml[] =
	    "stop_timeout: soon\n"
	    "queues:\n"
	    "  a:\n"
	    "    workers: 0\n"
	    "    select: SELECT id FROM a LIMIT 1\n"
	    "    exec: [x]\n"
	    "    done: UPDATE a SET s = 1 WHERE id = :id\n"
	    "    failed: UPDATE a SET s = 2 WHERE id = :id\n"
	    "  b:\n"
	    "    select: SELECT id FROM b\n"
	    "    exec: [x]\n"
	    "    timeout: 1 minute\n"
	    "    done: UPDATE b SET s = 1 WHERE id = :id\n";
	char *log;

	put("rowq.yaml", yaml);
	ck_assert_ptr_null(load("rowq.yaml", &log));
	ck_assert_has(log, "rowq.yaml:1: stop_timeout: not a duration: "
	    "\"soon\"\n");
	ck_assert_has(log, "rowq.yaml:4: queues.a.workers: must be from 1 to "
	    "256, not 0\n");
	ck_assert_has(log, "rowq.yaml:5: queues.a.select: has LIMIT");
	ck_assert_has(log, "rowq.yaml:12: queues.b.timeout: not a duration: "
	    "\"1 minute\"\n");
	ck_assert_has(log, "rowq.yaml:9: queues.b: neither retry nor failed");
	ck_assert_uint_eq(count_lines(log), 5);
	free(log);
}
END_TEST

START_TEST(test_free_null)
{
	config_free(NULL);
}
END_TEST

static Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_unchecked_fixture(tc, unit_dir_make, unit_dir_remove);
	tcase_add_checked_fixture(tc, unit_dir_enter, unit_dir_leave);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_example);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_retry_unlimited);
	tcase_add_test(tc, test_retry_default_attempts);
	tcase_add_test(tc, test_retry_max_attempts_needs_failed);
	tcase_add_test(tc, test_retry_max_attempts_column);
	tcase_add_test(tc, test_retry_max_attempts_column_errors);
	tcase_add_test(tc, test_retry_gave_up);
	tcase_add_test(tc, test_check_columns_max_attempts);
	tcase_add_test(tc, test_retry_required_and_ranges);
	tcase_add_test(tc, test_statement_returns_rows);
	tcase_add_test(tc, test_unknown_keys);
	tcase_add_test(tc, test_duplicate_key);
	tcase_add_test(tc, test_duplicate_queue);
	tcase_add_test(tc, test_stop_signal);
	tcase_add_test(tc, test_stop_deadline_encoding);
	tcase_add_test(tc, test_duplicate_queue_across_include);
	tcase_add_test(tc, test_include);
	tcase_add_test(tc, test_include_self);
	tcase_add_test(tc, test_include_only_queues);
	tcase_add_test(tc, test_include_unreadable);
	tcase_add_test(tc, test_too_many_files);
	tcase_add_test(tc, test_bad_duration);
	tcase_add_test(tc, test_duration_ranges);
	tcase_add_test(tc, test_wake);
	tcase_add_test(tc, test_time_zone);
	tcase_add_test(tc, test_group_by);
	tcase_add_test(tc, test_lease);
	tcase_add_test(tc, test_lease_ahead);
	tcase_add_test(tc, test_lease_release);
	tcase_add_test(tc, test_lease_answer_params);
	tcase_add_test(tc, test_lease_lists);
	tcase_add_test(tc, test_handler_none);
	tcase_add_test(tc, test_prune_list);
	tcase_add_test(tc, test_select_limit);
	tcase_add_test(tc, test_select_for_update);
	tcase_add_test(tc, test_select_parameters);
	tcase_add_test(tc, test_statement_errors);
	tcase_add_test(tc, test_neither_retry_nor_failed);
	tcase_add_test(tc, test_missing_keys);
	tcase_add_test(tc, test_handlers);
	tcase_add_test(tc, test_wrong_types);
	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_queue_names);
	tcase_add_test(tc, test_too_many_queues);
	tcase_add_test(tc, test_too_many_values);
	tcase_add_test(tc, test_no_queues);
	tcase_add_test(tc, test_alias);
	tcase_add_test(tc, test_anchor);
	tcase_add_test(tc, test_colon_space_hint);
	tcase_add_test(tc, test_billion_laughs);
	tcase_add_test(tc, test_deep_nesting);
	tcase_add_test(tc, test_huge_scalar);
	tcase_add_test(tc, test_file_too_large);
	tcase_add_test(tc, test_tabs);
	tcase_add_test(tc, test_tab_in_text);
	tcase_add_test(tc, test_not_utf8);
	tcase_add_test(tc, test_control_characters);
	tcase_add_test(tc, test_bom);
	tcase_add_test(tc, test_syntax_errors);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_database);
	tcase_add_test(tc, test_database_hosts);
	tcase_add_test(tc, test_database_tls);
	tcase_add_test(tc, test_console_tls);
	tcase_add_test(tc, test_password_file);
	tcase_add_test(tc, test_password_errors);
	tcase_add_test(tc, test_credential);
	tcase_add_test(tc, test_check_columns);
	tcase_add_test(tc, test_check_columns_good);
	tcase_add_test(tc, test_builtins);
	tcase_add_test(tc, test_all_errors);
	tcase_add_test(tc, test_free_null);
	tcase_add_test(tc, test_runs);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(config_suite());
}
