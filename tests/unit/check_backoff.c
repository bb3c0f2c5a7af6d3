/* Unit tests for backoff.c: retry delays and capped restart backoff. */
#include "rowq.h"

#include <check.h>
#include "unit.h"

static struct retry_policy
policy(enum backoff_kind kind, bool jitter)
{
	struct retry_policy p = {
		.enabled = true, .backoff = kind, .delay_ms = 10000,
		.max_delay_ms = 3600000, .jitter = jitter,
	};
	return p;
}

START_TEST(test_fixed)
{
	struct retry_policy p = policy(BACKOFF_FIXED, false);

	ck_assert_int_eq(backoff_retry_delay_ms(&p, 1, 0), 10000);
	ck_assert_int_eq(backoff_retry_delay_ms(&p, 7, 0), 10000);
}
END_TEST

START_TEST(test_linear)
{
	struct retry_policy p = policy(BACKOFF_LINEAR, false);

	ck_assert_int_eq(backoff_retry_delay_ms(&p, 1, 0), 10000);
	ck_assert_int_eq(backoff_retry_delay_ms(&p, 3, 0), 30000);
	ck_assert_int_eq(backoff_retry_delay_ms(&p, 1000, 0), 3600000);
}
END_TEST

START_TEST(test_exponential_capped)
{
	struct retry_policy p = policy(BACKOFF_EXPONENTIAL, false);

	ck_assert_int_eq(backoff_retry_delay_ms(&p, 1, 0), 10000);
	ck_assert_int_eq(backoff_retry_delay_ms(&p, 2, 0), 20000);
	ck_assert_int_eq(backoff_retry_delay_ms(&p, 4, 0), 80000);
	ck_assert_int_eq(backoff_retry_delay_ms(&p, 9, 0), 2560000);
	ck_assert_int_eq(backoff_retry_delay_ms(&p, 10, 0), 3600000);
	/* No overflow however many tries. */
	ck_assert_int_eq(backoff_retry_delay_ms(&p, 1000000, 0), 3600000);
}
END_TEST

START_TEST(test_full_jitter_bounds)
{
	struct retry_policy p = policy(BACKOFF_EXPONENTIAL, true);
	int64_t lo = INT64_MAX, hi = 0;

	for (int i = 0; i < 10000; i++) {
		int64_t d = backoff_retry_delay_ms(&p, 3, backoff_random());
		ck_assert_int_ge(d, 0);
		ck_assert_int_le(d, 40000);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	/* Spread over the whole range, not stuck at one end. */
	ck_assert_int_lt(lo, 4000);
	ck_assert_int_gt(hi, 36000);
}
END_TEST

START_TEST(test_zero_delay)
{
	struct retry_policy p = policy(BACKOFF_EXPONENTIAL, true);

	p.delay_ms = 0;
	ck_assert_int_eq(backoff_retry_delay_ms(&p, 5, 12345), 0);
}
END_TEST

START_TEST(test_capped)
{
	ck_assert_int_eq(backoff_capped_ms(1000, 60000, 0), 0);
	ck_assert_int_eq(backoff_capped_ms(1000, 60000, 1), 1000);
	ck_assert_int_eq(backoff_capped_ms(1000, 60000, 2), 2000);
	ck_assert_int_eq(backoff_capped_ms(1000, 60000, 6), 32000);
	ck_assert_int_eq(backoff_capped_ms(1000, 60000, 7), 60000);
	ck_assert_int_eq(backoff_capped_ms(1000, 60000, 1 << 30), 60000);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("backoff");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_fixed);
	tcase_add_test(tc, test_linear);
	tcase_add_test(tc, test_exponential_capped);
	tcase_add_test(tc, test_full_jitter_bounds);
	tcase_add_test(tc, test_zero_delay);
	tcase_add_test(tc, test_capped);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
