/*
 * Unit tests for limit.c's pure parts: how many tokens a take reserves
 * for a rate, how far ahead of the bucket it may reserve one, and the
 * CRC-32 that names a key's locks (the server's
 * CRC32() must give the same, or a key's slots would not be shared).
 */
#include "rowq.h"
#include "db.h"

#include <check.h>
#include "unit.h"
#include <string.h>

static int
reserve(int count, int64_t period_ms)
{
	struct limit_rate r = { .count = count, .period_ms = period_ms };

	return limit_reserve_size(&r);
}

START_TEST(test_reserve_size)
{
	/* Below 2,000 a second, one token a take, as without a reserve. */
	ck_assert_int_eq(reserve(50, 1000), 1);
	ck_assert_int_eq(reserve(100, 60000), 1);
	ck_assert_int_eq(reserve(1999, 1000), 1);
	/* A millisecond's worth. */
	ck_assert_int_eq(reserve(2000, 1000), 2);
	ck_assert_int_eq(reserve(10000, 1000), 10);
	ck_assert_int_eq(reserve(600000, 60000), 10);
	/* At most LIMIT_RESERVE_MAX. */
	ck_assert_int_eq(reserve(16000, 1000), LIMIT_RESERVE_MAX);
	ck_assert_int_eq(reserve(LIMIT_RATE_COUNT_MAX, 1), LIMIT_RESERVE_MAX);
	/* No rate, or a period of nothing: one. */
	ck_assert_int_eq(reserve(0, 1000), 1);
	ck_assert_int_eq(reserve(10, 0), 1);
}
END_TEST

static int
ahead_burst(int count, int64_t period_ms, bool lease, int burst)
{
	struct queue q = { .lease = { .enabled = lease },
	    .limit = { .burst = burst } };
	struct limit_ctx c = { .q = &q };
	struct limit_rate r = { .count = count, .period_ms = period_ms };

	return limit_ahead_tokens(&c, &r);
}

static int
ahead(int count, int64_t period_ms, bool lease)
{
	return ahead_burst(count, period_ms, lease, 1);
}

static int
took(int count, int64_t period_ms, int burst, long long due_us)
{
	struct queue q = { .limit = { .burst = burst } };
	struct limit_ctx c = { .q = &q };
	struct limit_rate r = { .count = count, .period_ms = period_ms };

	return limit_take_took(&c, &r, due_us);
}

START_TEST(test_ahead_tokens)
{
	/* LIMIT_AHEAD_MS (1 s) of the rate, rounded down. */
	ck_assert_int_eq(ahead(20, 1000, false), 20);
	ck_assert_int_eq(ahead(1999, 1000, false), 1999);
	/*
	 * Where a take takes a millisecond's tokens (2,000 a second), only
	 * with a burst of no more than one take.
	 */
	ck_assert_int_eq(ahead(2000, 1000, false), 2000);
	ck_assert_int_eq(ahead_burst(2000, 1000, false, 2), 2000);
	ck_assert_int_eq(ahead_burst(2000, 1000, false, 3), 0);
	ck_assert_int_eq(ahead_burst(2000, 1000, false, 10), 0);
	ck_assert_int_eq(ahead_burst(16000, 1000, false, 16), 16000);
	ck_assert_int_eq(ahead_burst(16000, 1000, false, 17), 0);
	/*
	 * A take that reserved its token ahead took it alone; one that found
	 * a token there (due now) took a millisecond's.
	 */
	ck_assert_int_eq(took(2000, 1000, 1, 250), 1);
	ck_assert_int_eq(took(2000, 1000, 1, 0), 2);
	ck_assert_int_eq(took(2000, 1000, 10, 250), 2);
	ck_assert_int_eq(took(1000000, 1000, 1, 0), LIMIT_RESERVE_MAX);
	ck_assert_int_eq(took(1000000, 1000, 1, 1), 1);
	ck_assert_int_eq(took(20, 1000, 1, 40000), 1);
	ck_assert_int_eq(took(20, 1000, 1, 0), 1);
	ck_assert_int_eq(ahead(100, 60000, false), 1);
	/* Below 1 a second, none: the take waits for the token itself. */
	ck_assert_int_eq(ahead(59, 60000, false), 0);
	ck_assert_int_eq(ahead_burst(LIMIT_RATE_COUNT_MAX, 1, false, 100), 0);
	ck_assert_int_eq(ahead(LIMIT_RATE_COUNT_MAX, 1, false),
	    LIMIT_AHEAD_MAX);
	/* None in lease mode, or without a rate. */
	ck_assert_int_eq(ahead(2000, 1000, true), 0);
	ck_assert_int_eq(ahead(0, 1000, false), 0);
	ck_assert_int_eq(ahead(10, 0, false), 0);
}
END_TEST

START_TEST(test_crc32)
{
	/* The check value of CRC-32/IEEE, and SELECT CRC32('rowq'). */
	ck_assert_uint_eq(limit_crc32("123456789", 9), 0xcbf43926u);
	ck_assert_uint_eq(limit_crc32("", 0), 0);
	ck_assert_uint_eq(limit_crc32("rowq", 4), 3833959821u);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("limit");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_reserve_size);
	tcase_add_test(tc, test_ahead_tokens);
	tcase_add_test(tc, test_crc32);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
