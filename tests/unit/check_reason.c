/*
 * check_reason.c: :reason.  reason.c's parsing of a handler's own
 * "reason=NAME" and the value each outcome gives; the row's own
 * max_attempts (row_max_attempts, bounded by max_attempts_ceiling);
 * finish_decide's choice of statement and reason for each outcome; and
 * the binding of :reason into a statement's values (finish_values).
 */
#include "worker.h"

#include <check.h>
#include "unit.h"
#include <stdlib.h>
#include <string.h>

START_TEST(test_parse)
{
	char name[REASON_NAME_MAX + 1];

	ck_assert_int_eq(reason_parse("reason=card_declined", name), 0);
	ck_assert_str_eq(name, "card_declined");
	ck_assert_int_eq(reason_parse("reason=http_503 upstream down", name),
	    0);
	ck_assert_str_eq(name, "http_503");
	ck_assert_int_eq(reason_parse("reason=a", name), 0);
	ck_assert_str_eq(name, "a");
	/* 32 characters at most. */
	ck_assert_int_eq(reason_parse(
	    "reason=abcdefghijklmnopqrstuvwxyz012345", name), 0);
	ck_assert_str_eq(name, "abcdefghijklmnopqrstuvwxyz012345");
	ck_assert_int_eq(reason_parse(
	    "reason=abcdefghijklmnopqrstuvwxyz0123456", name), -1);
	ck_assert_str_eq(name, "");
	/* Not a reason line: said otherwise, or a name out of its form. */
	static const char *const none[] = {
		"", "reason", "reason=", "reason= x", "reason=1abc",
		"reason=Card", "reason=card-declined", "reason=card.x",
		"reason=card\tx", " reason=card", "Reason=card", "reasons=card",
		"smtp said no reason=card",
		/* rowq's own values are not the handler's to give. */
		"reason=exhausted", "reason=permanent", "reason=timeout",
		"reason=error", "reason=lease_lost", "reason=refused",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		ck_assert_msg(reason_parse(none[i], name) == -1, "%s", none[i]);
		ck_assert_str_eq(name, "");
	}
	ck_assert_int_eq(reason_parse(NULL, name), -1);
	ck_assert_int_eq(reason_parse("reason=exhausted_twice", name), 0);
}
END_TEST

START_TEST(test_from_stderr)
{
	struct errsink e = { 0 };
	char name[REASON_NAME_MAX + 1];

	/* Nothing on stderr: no buffer at all. */
	ck_assert_int_eq(reason_from_stderr(&e, name), -1);

	buf_puts(&e.tail, "connecting\nreason=no_such_user mailbox gone\n");
	ck_assert_int_eq(reason_from_stderr(&e, name), 0);
	ck_assert_str_eq(name, "no_such_user");
	/* Only the last line counts. */
	buf_reset(&e.tail);
	buf_puts(&e.tail, "reason=no_such_user\nretrying later\n");
	ck_assert_int_eq(reason_from_stderr(&e, name), -1);
	buf_reset(&e.tail);
	buf_puts(&e.tail, "reason=quota\r\n\n");
	ck_assert_int_eq(reason_from_stderr(&e, name), 0);
	ck_assert_str_eq(name, "quota");
	buf_reset(&e.tail);
	ck_assert_int_eq(reason_from_stderr(&e, name), -1);
	buf_free(&e.tail);
}
END_TEST

START_TEST(test_of)
{
	struct handler_result r = { .outcome = OUTCOME_RETRY };

	ck_assert_str_eq(reason_of(REASON_STEP_DONE, &r), "");
	ck_assert_str_eq(reason_of(REASON_STEP_RETRY, &r), "error");
	ck_assert_str_eq(reason_of(REASON_STEP_FAILED_LAST, &r), "exhausted");
	r.timed_out = true;
	ck_assert_str_eq(reason_of(REASON_STEP_RETRY, &r), "timeout");
	/* The last try ran out of time: no try is left, said as such. */
	ck_assert_str_eq(reason_of(REASON_STEP_FAILED_LAST, &r), "exhausted");
	r.timed_out = false;
	strcpy(r.reason, "rate_limited");
	ck_assert_str_eq(reason_of(REASON_STEP_RETRY, &r), "rate_limited");
	ck_assert_str_eq(reason_of(REASON_STEP_FAILED_LAST, &r), "exhausted");
	r.outcome = OUTCOME_FAILED;
	ck_assert_str_eq(reason_of(REASON_STEP_FAILED_NEVER, &r),
	    "rate_limited");
	r.reason[0] = '\0';
	ck_assert_str_eq(reason_of(REASON_STEP_FAILED_NEVER, &r), "permanent");
	/* No failed: statement: never runs retry.update, and says so. */
	ck_assert_str_eq(reason_of(REASON_STEP_RETRY, &r), "permanent");
}
END_TEST

/* A worker with a queue, one row (id, attempts, max_tries) and outcomes. */
struct fixture {
	struct config	 cfg;
	struct queue	 q;
	struct worker	 w;
	struct row	 row;
	char		*value[3];
	size_t		 len[3];
};

static void
fixture_init(struct fixture *f, const char *max_tries)
{
	memset(f, 0, sizeof(*f));
	f->q.name = "job";
	f->q.retry.enabled = true;
	f->q.retry.delay_ms = 1000;
	f->q.retry.max_delay_ms = 1000;
	f->q.retry.attempts_column = "attempts";
	f->q.retry.max_attempts_column = "max_tries";
	f->q.retry.max_attempts_where = "rowq.yaml:7: queues.job.retry."
	    "max_attempts";
	f->q.retry.max_attempts_ceiling = 10;
	f->w.q = &f->q;
	f->w.turn.attempts_index = 1;
	f->w.turn.max_attempts_index = 2;
	/* Never used but as "is there a failed statement". */
	f->w.failed.stmt = (struct db_stmt *)&f->w;
	f->value[0] = "1";
	f->value[1] = "0";
	f->value[2] = (char *)max_tries;
	f->row.value = f->value;
	f->row.len = f->len;
	f->w.result.outcome = OUTCOME_RETRY;
	f->w.result.retry_in_ms = -1;
}

START_TEST(test_row_max_attempts)
{
	struct fixture f;

	fixture_init(&f, "3");
	ck_assert_int_eq(row_max_attempts(&f.w, &f.row), 3);
	f.value[2] = "10";
	ck_assert_int_eq(row_max_attempts(&f.w, &f.row), 10);
	/* Above the ceiling: the ceiling. */
	f.value[2] = "11";
	ck_assert_int_eq(row_max_attempts(&f.w, &f.row), 10);
	f.value[2] = "99999999999999999999";
	ck_assert_int_eq(row_max_attempts(&f.w, &f.row), 10);
	/* NULL, 0, negative or not a number: 1 try. */
	f.value[2] = NULL;
	ck_assert_int_eq(row_max_attempts(&f.w, &f.row), 1);
	f.value[2] = "0";
	ck_assert_int_eq(row_max_attempts(&f.w, &f.row), 1);
	f.value[2] = "-4";
	ck_assert_int_eq(row_max_attempts(&f.w, &f.row), 1);
	f.value[2] = "3x";
	ck_assert_int_eq(row_max_attempts(&f.w, &f.row), 1);
	/* Without the column: the queue's number. */
	f.q.retry.max_attempts_column = NULL;
	f.q.retry.max_attempts = 4;
	ck_assert_int_eq(row_max_attempts(&f.w, &f.row), 4);
}
END_TEST

START_TEST(test_decide)
{
	struct fixture f;
	int64_t delay;

	/* Rows of 1, 2 and 5 tries: each fails on its own last. */
	static const struct { const char *max; int attempt; bool last; }
	    cases[] = {
		{ "1", 1, true }, { "2", 1, false }, { "2", 2, true },
		{ "5", 4, false }, { "5", 5, true }, { "5", 6, true },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fixture_init(&f, cases[i].max);
		struct bound *b = finish_decide(&f.w, &f.row, cases[i].attempt,
		    &delay);
		ck_assert_msg(b == (cases[i].last ? &f.w.failed : &f.w.retry),
		    "max %s, try %d", cases[i].max, cases[i].attempt);
		ck_assert_str_eq(f.w.reason, cases[i].last ? "exhausted" :
		    "error");
	}
	fixture_init(&f, "5");
	f.w.result.timed_out = true;
	ck_assert_ptr_eq(finish_decide(&f.w, &f.row, 1, &delay), &f.w.retry);
	ck_assert_str_eq(f.w.reason, "timeout");
	fixture_init(&f, "5");
	f.w.result.outcome = OUTCOME_FAILED;
	ck_assert_ptr_eq(finish_decide(&f.w, &f.row, 1, &delay), &f.w.failed);
	ck_assert_str_eq(f.w.reason, "permanent");
	strcpy(f.w.result.reason, "card_declined");
	ck_assert_ptr_eq(finish_decide(&f.w, &f.row, 1, &delay), &f.w.failed);
	ck_assert_str_eq(f.w.reason, "card_declined");
	f.w.result.outcome = OUTCOME_DONE;
	ck_assert_ptr_eq(finish_decide(&f.w, &f.row, 1, &delay), &f.w.done);
	ck_assert_str_eq(f.w.reason, "");
}
END_TEST

/* :reason is bound as text, the decided reason; done's is empty. */
START_TEST(test_bind)
{
	static char *params[] = { "reason", "attempt" };
	struct sql sql = { .text = "UPDATE job SET why = :reason, n = :attempt "
	    "WHERE id = 1", .params = params, .nparams = 2 };
	enum param_source src[2];
	struct value v[2];
	struct fixture f;
	int64_t delay;

	ck_assert(finish_param_source("reason", &src[0]));
	ck_assert_int_eq(src[0], PARAM_REASON);
	ck_assert(finish_param_source("attempt", &src[1]));
	ck_assert(!finish_param_source("reasons", &src[1]));
	ck_assert(finish_param_source("attempt", &src[1]));
	fixture_init(&f, "2");
	f.w.retry.sql = f.w.failed.sql = f.w.done.sql = &sql;
	f.w.retry.source = f.w.failed.source = f.w.done.source = src;
	ck_assert_ptr_eq(finish_decide(&f.w, &f.row, 2, &delay), &f.w.failed);
	finish_values(&f.w, &f.w.failed, &f.row, 2, 0, v);
	ck_assert_int_eq(v[0].type, VALUE_TEXT);
	ck_assert_uint_eq(v[0].len, strlen("exhausted"));
	ck_assert_mem_eq(v[0].s, "exhausted", v[0].len);
	ck_assert_int_eq(v[1].type, VALUE_INT);
	ck_assert_int_eq(v[1].i, 2);
	f.w.result.timed_out = true;
	ck_assert_ptr_eq(finish_decide(&f.w, &f.row, 1, &delay), &f.w.retry);
	finish_values(&f.w, &f.w.retry, &f.row, 1, delay, v);
	ck_assert_uint_eq(v[0].len, strlen("timeout"));
	ck_assert_mem_eq(v[0].s, "timeout", v[0].len);
	/* A batch's ok rows are bound after others' outcomes: still empty. */
	finish_values(&f.w, &f.w.done, &f.row, 1, 0, v);
	ck_assert_int_eq(v[0].type, VALUE_TEXT);
	ck_assert_uint_eq(v[0].len, 0);
}
END_TEST

static Suite *
reason_suite(void)
{
	Suite *s = suite_create("reason");
	TCase *tc = tcase_create("reason");

	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_from_stderr);
	tcase_add_test(tc, test_of);
	tcase_add_test(tc, test_row_max_attempts);
	tcase_add_test(tc, test_decide);
	tcase_add_test(tc, test_bind);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(reason_suite());
}
