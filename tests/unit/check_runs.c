/*
 * Unit tests for runs.c: the run log's rows as text.  The held row's run
 * prepared once (runs_held_text, runs_held_values, sent through
 * dialect.c) must write the same values as the INSERT's text
 * (runs_values), whatever the run: that the run log records the same
 * either way.  (What the servers make of them is for the integration
 * tests 734-738, on each server.)
 */
#include "rowq.h"
#include "db.h"
#include "dialect.h"
#include "runs.h"

#include <check.h>
#include "unit.h"
#include <string.h>

/* The values of the held run's EXECUTE on MariaDB, after "USING ". */
static void
executed(const struct run_rec *r, struct buf *out)
{
	struct queue q = { .name = "email" };
	struct dialect_stmt s;
	struct buf text = { 0 }, prepare = { 0 }, exec = { 0 };
	struct run_values v;
	static const char head[] = "EXECUTE rowq_run USING ";

	q.group_by.name = r->grouped ? "batch" : NULL;
	runs_held_text(&text, &q);
	ck_assert_int_eq(dialect_stmt_init(&s, dialect_mariadb(), "rowq_run",
	    text.data, &prepare), 0);
	ck_assert_uint_gt(prepare.len, 0);
	runs_held_values(&v, r);
	ck_assert_uint_eq(v.n, r->grouped ? 15 : 14);
	ck_assert(dialect_stmt_execute(&s, &exec, v.v, v.n));
	ck_assert_int_eq(strncmp(exec.data, head, sizeof(head) - 1), 0);
	buf_puts(out, exec.data + sizeof(head) - 1);
	dialect_stmt_free(&s);
	buf_free(&text);
	buf_free(&prepare);
	buf_free(&exec);
}

/* r's values by the text and by the prepared statement: the same. */
static void
same_values(const struct run_rec *r, const char *want)
{
	struct run_rec plain = *r;
	struct buf text = { 0 }, exec = { 0 };

	plain.if_changed = false;	/* the IF()s are in the statement */
	runs_values(&text, &plain);
	executed(r, &exec);
	ck_assert_str_eq(exec.data, text.data);
	ck_assert_str_eq(exec.data, want);
	buf_free(&text);
	buf_free(&exec);
}

START_TEST(test_held_values)
{
	char key[RUNS_KEY_MAX + 10], error[RUNS_ERROR_MAX + 10];
	struct run_rec r = {
		.queue = "email", .key = "17", .key_len = 2, .attempt = 3,
		.outcome = "done", .reason = "", .exit_status = 0,
		.started_us = 1764691200123000LL,
		.finished_us = 1764691201000000LL, .duration_ms = 877,
		.host = "vm", .worker = 2, .pid = 4711, .error = "",
		.error_len = 0, .trace_id = "", .if_changed = true,
	};

	same_values(&r, "'email', X'3137', 3, 'done', '', 0, "
	    "'2025-12-02 16:00:00.123000', '2025-12-02 16:00:01.000000', 877, "
	    "X'766d', 2, 4711, X'', NULL");
	/* A binary key, a signal (no exit status), a trace id, an error. */
	r.key = "\0'\\\xff";
	r.key_len = 4;
	r.exit_status = -1;
	r.outcome = "failed";
	r.reason = "timeout";
	r.error = "it's \"late\"\n";
	r.error_len = strlen(r.error);
	r.trace_id = "0af7651916cd43dd8448eb211c80319c";
	same_values(&r, "'email', X'00275cff', 3, 'failed', 'timeout', NULL, "
	    "'2025-12-02 16:00:00.123000', '2025-12-02 16:00:01.000000', 877, "
	    "X'766d', 2, 4711, X'6974277320226c617465220a', "
	    "'0af7651916cd43dd8448eb211c80319c'");
	/* A key and an error longer than their columns: cut alike. */
	memset(key, 'k', sizeof(key));
	memset(error, 'e', sizeof(error));
	r.key = key;
	r.key_len = sizeof(key);
	r.error = error;
	r.error_len = sizeof(error);
	{
		struct run_rec plain = r;
		struct buf text = { 0 }, exec = { 0 };

		plain.if_changed = false;
		runs_values(&text, &plain);
		executed(&r, &exec);
		ck_assert_str_eq(exec.data, text.data);
		/* X'6b...' of RUNS_KEY_MAX bytes, and no more. */
		ck_assert_ptr_nonnull(strstr(exec.data, "6b'"));
		ck_assert_uint_eq(strspn(strstr(exec.data, "X'6b") + 2, "6b"),
		    2 * RUNS_KEY_MAX);
		buf_free(&text);
		buf_free(&exec);
	}
}
END_TEST

/*
 * A queue with group_by: writes the row's group too, last (grp): its
 * bytes as hex, cut at RUNS_GROUP_MAX, NULL for null; the same by the
 * text and by the prepared statement.
 */
START_TEST(test_held_group)
{
	char group[RUNS_GROUP_MAX + 10];
	struct queue q = { .name = "email", .group_by = { .name = "batch" } };
	struct run_rec r = {
		.queue = "email", .key = "17", .key_len = 2, .attempt = 1,
		.outcome = "done", .reason = "", .exit_status = 0,
		.started_us = 1764691200123000LL,
		.finished_us = 1764691201000000LL, .duration_ms = 877,
		.host = "vm", .worker = 2, .pid = 4711, .error = "",
		.error_len = 0, .trace_id = "", .if_changed = true,
		.grouped = true, .group = "o'k\\\xff", .group_len = 5,
	};
	struct buf head = { 0 };

	same_values(&r, "'email', X'3137', 1, 'done', '', 0, "
	    "'2025-12-02 16:00:00.123000', '2025-12-02 16:00:01.000000', 877, "
	    "X'766d', 2, 4711, X'', NULL, X'6f276b5cff'");
	r.group = NULL;
	same_values(&r, "'email', X'3137', 1, 'done', '', 0, "
	    "'2025-12-02 16:00:00.123000', '2025-12-02 16:00:01.000000', 877, "
	    "X'766d', 2, 4711, X'', NULL, NULL");
	memset(group, 'g', sizeof(group));
	r.group = group;
	r.group_len = sizeof(group);
	{
		struct run_rec plain = r;
		struct buf text = { 0 }, exec = { 0 };

		plain.if_changed = false;
		runs_values(&text, &plain);
		executed(&r, &exec);
		ck_assert_str_eq(exec.data, text.data);
		/* X'67...' of RUNS_GROUP_MAX bytes, last. */
		ck_assert_uint_eq(strlen(strstr(exec.data, "X'67") + 2),
		    2 * RUNS_GROUP_MAX + 1);
		buf_free(&text);
		buf_free(&exec);
	}
	/* The column named where the values are. */
	runs_insert_head(&head, &q, runs_grouped(&q));
	ck_assert_ptr_nonnull(strstr(head.data, ", trace_id, grp) "));
	buf_free(&head);
}
END_TEST

/* On MySQL the statement is its text, the values in it. */
START_TEST(test_held_text_mysql)
{
	struct queue q = { .name = "email" };
	struct run_rec r = {
		.queue = "email", .key = "5", .key_len = 1, .attempt = 1,
		.outcome = "done", .reason = "", .exit_status = 0,
		.started_us = 1764691200000000LL,
		.finished_us = 1764691200000000LL, .duration_ms = 0,
		.host = "h", .worker = 1, .pid = 9, .error = "",
		.trace_id = NULL, .if_changed = true,
	};
	struct dialect_stmt s;
	struct buf text = { 0 }, prepare = { 0 }, out = { 0 };
	struct run_values v;

	runs_held_text(&text, &q);
	ck_assert_int_eq(dialect_stmt_init(&s, dialect_mysql(), "rowq_run",
	    text.data, &prepare), 0);
	ck_assert_uint_eq(prepare.len, 0);
	runs_held_values(&v, &r);
	ck_assert(dialect_stmt_execute(&s, &out, v.v, v.n));
	ck_assert_str_eq(out.data, "INSERT INTO rowq_runs (queue, row_key, "
	    "attempt, outcome, reason, exit_status, started, finished, "
	    "duration_ms, host, worker, pid, error, trace_id) VALUES "
	    "('email', CAST(X'35' AS BINARY), 1, IF(ROW_COUNT() > 0, 'done', "
	    "'none'), IF(ROW_COUNT() > 0, '', 'no_row'), 0, "
	    "'2025-12-02 16:00:00.000000', '2025-12-02 16:00:00.000000', 0, "
	    "CAST(X'68' AS BINARY), 1, 9, CAST(X'' AS BINARY), NULL)\n");
	dialect_stmt_free(&s);
	buf_free(&text);
	buf_free(&prepare);
	buf_free(&out);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("runs");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_held_values);
	tcase_add_test(tc, test_held_text_mysql);
	tcase_add_test(tc, test_held_group);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
