/*
 * Unit tests for log.c's fields: the list a journal entry gets (and
 * log_format: json writes) for a worker's line about a row, which
 * fields it leaves out when they are not known, that a row's outcome
 * goes with one line only, and the escaping of control characters.
 */
#include "rowq.h"

#include <check.h>
#include "unit.h"
#include <stdio.h>
#include <string.h>

/* The value of the field called name, or NULL. */
static const char *
field(const struct log_field *f, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(f[i].name, name) == 0)
			return f[i].value;
	return NULL;
}

START_TEST(test_row_line_fields)
{
	struct log_field f[LOG_FIELDS_MAX];
	size_t n;

	log_procinit("email/2");
	log_set_generation(4);
	log_set_host("db1.example.com:3306");
	log_set_row("8841");
	log_set_attempt(3);
	log_set_trace("4bf92f3577b34da6a3ce929d0e0e4736");
	log_set_outcome("failed", 1500);
	n = log_line_fields(f, LOG_FIELDS_MAX, "3", "email/2: row 8841: x");
	ck_assert_str_eq(field(f, n, "MESSAGE"), "email/2: row 8841: x");
	ck_assert_str_eq(field(f, n, "PRIORITY"), "3");
	ck_assert_str_eq(field(f, n, "SYSLOG_IDENTIFIER"), "rowq");
	ck_assert_str_eq(field(f, n, "QUEUE"), "email");
	ck_assert_str_eq(field(f, n, "WORKER"), "2");
	ck_assert_str_eq(field(f, n, "ROW_KEY"), "8841");
	ck_assert_str_eq(field(f, n, "KEY"), "8841");
	ck_assert_str_eq(field(f, n, "ATTEMPT"), "3");
	ck_assert_str_eq(field(f, n, "OUTCOME"), "failed");
	ck_assert_str_eq(field(f, n, "DURATION_USEC"), "1500");
	ck_assert_str_eq(field(f, n, "GENERATION"), "4");
	ck_assert_str_eq(field(f, n, "HOST"), "db1.example.com:3306");
	ck_assert_str_eq(field(f, n, "TRACE_ID"),
	    "4bf92f3577b34da6a3ce929d0e0e4736");
	ck_assert_uint_eq(n, 13);
	ck_assert_uint_le(n, LOG_FIELDS_MAX);
}
END_TEST

/* Not about a row: no row's fields; the supervisor's line about a worker. */
START_TEST(test_fields_left_out)
{
	struct log_field f[LOG_FIELDS_MAX];
	size_t n;

	log_procinit("rowq");
	log_set_row(NULL);
	n = log_line_fields(f, LOG_FIELDS_MAX, "6", "started");
	ck_assert_ptr_null(field(f, n, "QUEUE"));
	ck_assert_ptr_null(field(f, n, "ROW_KEY"));
	ck_assert_ptr_null(field(f, n, "ATTEMPT"));
	ck_assert_ptr_null(field(f, n, "TRACE_ID"));
	log_set_about("email", 3);
	n = log_line_fields(f, LOG_FIELDS_MAX, "4", "died");
	ck_assert_str_eq(field(f, n, "QUEUE"), "email");
	ck_assert_str_eq(field(f, n, "WORKER"), "3");
	log_set_about(NULL, 0);
}
END_TEST

/* An outcome is the next line's, logged or not; a row's end clears all. */
START_TEST(test_outcome_one_line)
{
	struct log_field f[LOG_FIELDS_MAX];
	size_t n;

	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
	log_procinit("email/1");
	log_set_row("5");
	log_set_attempt(1);
	log_set_outcome("retry", 20);
	log_warnx("try 1 failed");
	n = log_line_fields(f, LOG_FIELDS_MAX, "6", "next");
	ck_assert_ptr_null(field(f, n, "OUTCOME"));
	ck_assert_ptr_null(field(f, n, "DURATION_USEC"));
	ck_assert_str_eq(field(f, n, "ATTEMPT"), "1");
	/* A debug line that is not written takes its outcome with it. */
	log_set_outcome("done", 7);
	log_debug("done");
	n = log_line_fields(f, LOG_FIELDS_MAX, "6", "next");
	ck_assert_ptr_null(field(f, n, "OUTCOME"));
	log_set_row(NULL);
	n = log_line_fields(f, LOG_FIELDS_MAX, "6", "next");
	ck_assert_ptr_null(field(f, n, "ATTEMPT"));
}
END_TEST

/* A value cannot make a line of its own, nor reach a terminal raw. */
START_TEST(test_escape)
{
	char out[64];

	ck_assert_uint_eq(log_escape(out, sizeof(out),
	    "plain, \\ and \xc3\xa9"), strlen("plain, \\ and \xc3\xa9"));
	ck_assert_str_eq(out, "plain, \\ and \xc3\xa9");
	log_escape(out, sizeof(out), "a\nb\r\tc\x1b[2J\x7f\x01");
	ck_assert_str_eq(out, "a\\nb\\r\\tc\\x1b[2J\\x7f\\x01");
	/* U+009B (CSI) in UTF-8; U+00A0 is no control. */
	log_escape(out, sizeof(out), "x\xc2\x9by\xc2\xa0");
	ck_assert_str_eq(out, "x\\u009by\xc2\xa0");
	/* Cut short whole: never half an escape, always a NUL. */
	ck_assert_uint_eq(log_escape(out, 6, "ab\ncd"), 5);
	ck_assert_str_eq(out, "ab\\nc");
	ck_assert_uint_eq(log_escape(out, 5, "ab\ncd"), 4);
	ck_assert_str_eq(out, "ab\\n");
	ck_assert_uint_eq(log_escape(out, 4, "ab\ncd"), 2);
	ck_assert_str_eq(out, "ab");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_row_line_fields);
	tcase_add_test(tc, test_escape);
	tcase_add_test(tc, test_fields_left_out);
	tcase_add_test(tc, test_outcome_one_line);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
