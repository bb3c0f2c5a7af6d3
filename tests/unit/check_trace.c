/*
 * Unit tests for trace.c and worker_pickup.c's reading of a value: what
 * counts as a W3C traceparent (and so reaches a handler), and the moment
 * a ready_at: value means.
 */
#include "rowq.h"

#include <check.h>
#include "unit.h"
#include <string.h>

static bool
parse(const char *s, char *id)
{
	return trace_parse(s, strlen(s), id);
}

START_TEST(test_traceparent)
{
	char id[33];

	ck_assert(parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	    id));
	ck_assert_str_eq(id, "4bf92f3577b34da6a3ce929d0e0e4736");
	/* A later version may say more after the flags. */
	ck_assert(parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
	    id));
	/* Version 00 is exactly 55 bytes; ff is no version. */
	ck_assert(!parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
	    id));
	ck_assert(!parse("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	    id));
	/* Upper case, zero ids, bad separators, short, spaces: refused. */
	ck_assert(!parse("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
	    id));
	ck_assert(!parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01",
	    id));
	ck_assert(!parse("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
	    id));
	ck_assert(!parse("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	    id));
	ck_assert(!parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
	    id));
	ck_assert(!parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 x",
	    id));
	ck_assert(!parse("", id));
	ck_assert(!trace_parse(NULL, 0, id));
}
END_TEST

START_TEST(test_ready_at)
{
	/* Unix seconds, whole or not. */
	ck_assert_int_eq(pickup_ready_us("1700000000", 10, 0),
	    1700000000LL * 1000000);
	ck_assert_int_eq(pickup_ready_us("1700000000.25", 13, 3600),
	    1700000000LL * 1000000 + 250000);
	/* A DATETIME in a zone an hour east of UTC is an hour earlier. */
	ck_assert_int_eq(pickup_ready_us("2023-11-14 22:13:20", 19, 0),
	    1700000000LL * 1000000);
	ck_assert_int_eq(pickup_ready_us("2023-11-14 23:13:20", 19, 3600),
	    1700000000LL * 1000000);
	ck_assert_int_eq(pickup_ready_us("2023-11-14 22:13:20.5", 21, 0),
	    1700000000LL * 1000000 + 500000);
	ck_assert_int_eq(pickup_ready_us("2023-11-14 22:13:20.000123", 26, 0),
	    1700000000LL * 1000000 + 123);
	/* Not a moment: -1. */
	ck_assert_int_eq(pickup_ready_us("yesterday", 9, 0), -1);
	ck_assert_int_eq(pickup_ready_us("2023-11-14", 10, 0), -1);
	ck_assert_int_eq(pickup_ready_us("2023-11-14 22:13:20 x", 21, 0), -1);
	ck_assert_int_eq(pickup_ready_us("-5", 2, 0), -1);
	ck_assert_int_eq(pickup_ready_us(NULL, 0, 0), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_traceparent);
	tcase_add_test(tc, test_ready_at);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
