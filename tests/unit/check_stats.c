/* Unit tests for stats.c and metrics_render: histograms, rates, format. */
#include "rowq.h"

#include <check.h>
#include "unit.h"
#include "commands.h"
#include "metrics.h"
#include <string.h>

START_TEST(test_histogram_buckets)
{
	struct histogram h;

	memset(&h, 0, sizeof(h));
	histogram_add(&h, 500);		/* 0.5 ms: first bucket */
	histogram_add(&h, 1000);	/* exactly 1 ms: still the first */
	histogram_add(&h, 30000);	/* 30 ms: le 0.05 */
	histogram_add(&h, 600000000);	/* 10 min: le 600, lease-mode work */
	histogram_add(&h, 18000000000);	/* 5 h: +Inf, past 4 h */
	ck_assert_uint_eq(h.count[0], 2);
	ck_assert_uint_eq(h.count[4], 1);
	ck_assert(histogram_bounds_s[16] == 600);
	ck_assert_uint_eq(h.count[16], 1);
	ck_assert(histogram_bounds_s[HISTOGRAM_BUCKETS - 1] == 14400);
	ck_assert_uint_eq(h.count[HISTOGRAM_BUCKETS], 1);
	ck_assert_uint_eq(h.sum_us, 18600031500);
}
END_TEST

START_TEST(test_rate_window)
{
	struct rate r;

	memset(&r, 0, sizeof(r));
	for (int i = 0; i < 5; i++)
		rate_add(&r, 1000);
	rate_add(&r, 1030);
	ck_assert_uint_eq(rate_sum(&r, 1030), 6);
	ck_assert_uint_eq(rate_sum(&r, 1059), 6);
	/* A minute after the first five, only the later one counts. */
	ck_assert_uint_eq(rate_sum(&r, 1060), 1);
	/* The slot of second 1000 is reused by 1060, not added to. */
	rate_add(&r, 1060);
	ck_assert_uint_eq(rate_sum(&r, 1060), 2);
	ck_assert_uint_eq(rate_sum(&r, 2000), 0);
}
END_TEST

START_TEST(test_render)
{
	struct metrics_queue q;
	struct buf b = { 0 };

	memset(&q, 0, sizeof(q));
	q.name = "em\"ail";
	q.done = 7;
	q.ready = 3;
	q.in_progress = -1;
	q.oldest_age_s = 42;
	q.failed_rows = -1;
	histogram_add(&q.handler[HANDLER_OUTCOME_DONE], 2000);
	histogram_add(&q.handler[HANDLER_OUTCOME_DONE], 2000000);
	histogram_add(&q.handler[HANDLER_OUTCOME_TIMEOUT], 30000000);
	q.running_oldest_s = 75;
	metrics_render(&b, &q, 1);
	ck_assert_ptr_nonnull(strstr(b.data,
	    "# TYPE rowq_rows_done_total counter\n"
	    "rowq_rows_done_total{queue=\"em\\\"ail\"} 7\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "rowq_ready_rows{queue=\"em\\\"ail\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "rowq_oldest_age_seconds{queue=\"em\\\"ail\"} 42\n"));
	/* Unknown gauges are left out, not reported as a number. */
	ck_assert_ptr_null(strstr(b.data, "rowq_in_progress_rows{"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "rowq_handler_duration_seconds_bucket{queue=\"em\\\"ail\",outcome=\"done\",le=\"0.005\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "rowq_handler_duration_seconds_bucket{queue=\"em\\\"ail\",outcome=\"done\",le=\"+Inf\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "rowq_handler_duration_seconds_count{queue=\"em\\\"ail\",outcome=\"done\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "rowq_handler_duration_seconds_sum{queue=\"em\\\"ail\",outcome=\"done\"} 2.002000\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "rowq_handler_duration_seconds_bucket{queue=\"em\\\"ail\",outcome=\"timeout\",le=\"30\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "rowq_handler_duration_seconds_count{queue=\"em\\\"ail\",outcome=\"retry\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "rowq_in_progress_oldest_seconds{queue=\"em\\\"ail\"} 75\n"));
	/* Without ready_at: no pickup series. */
	ck_assert_ptr_null(strstr(b.data, "rowq_pickup_delay_seconds_count{"));
	buf_reset(&b);
	q.has_pickup = true;
	histogram_add(&q.pickup, 1500000);
	metrics_render(&b, &q, 1);
	ck_assert_ptr_nonnull(strstr(b.data,
	    "rowq_pickup_delay_seconds_bucket{queue=\"em\\\"ail\",le=\"2.5\"} 1\n"));
	buf_free(&b);
}
END_TEST

START_TEST(test_recent)
{
	struct recent *r = recent_new();
	uint64_t k1 = recent_hash("1", 1, 0), k2 = recent_hash("2", 1, 0);

	/* Not counted before the commit, nor after a rollback. */
	recent_add(r, k1, 11, "done", 1000);
	ck_assert_ptr_null(recent_match(r, k1, 11, 1001, 10000));
	recent_rollback(r);
	recent_commit(r);
	ck_assert_ptr_null(recent_match(r, k1, 11, 1001, 10000));
	/* Committed: the same values match, changed ones do not. */
	recent_add(r, k1, 11, "done", 1000);
	recent_add(r, k2, 22, "retry", 1000);
	recent_commit(r);
	ck_assert_str_eq(recent_match(r, k1, 11, 2000, 10000), "done");
	ck_assert_str_eq(recent_match(r, k2, 22, 2000, 10000), "retry");
	ck_assert_ptr_null(recent_match(r, k1, 12, 2000, 10000));
	/* Too long ago, or forgotten: no match. */
	ck_assert_ptr_null(recent_match(r, k1, 11, 20000, 10000));
	recent_forget(r, k2);
	ck_assert_ptr_null(recent_match(r, k2, 22, 2000, 10000));
	/* Many more rows than slots: bounded, and the newest still match. */
	for (int i = 0; i < 100000; i++) {
		char key[16];
		int n = snprintf(key, sizeof(key), "%d", i);
		recent_add(r, recent_hash(key, (size_t)n, 0), (uint64_t)i,
		    "done", 5000 + i);
		if (i % 1000 == 999)
			recent_commit(r);
	}
	ck_assert_str_eq(recent_match(r, recent_hash("99998", 5, 0), 99998,
	    105000, 10000), "done");
	recent_free(r);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_histogram_buckets);
	tcase_add_test(tc, test_rate_window);
	tcase_add_test(tc, test_render);
	tcase_add_test(tc, test_recent);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
