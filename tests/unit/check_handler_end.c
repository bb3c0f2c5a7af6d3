/*
 * check_handler_end.c: handler_outcome, the one map from how a handler's
 * wait ended to the row's outcome that exec and pipe handlers share, and
 * handler_stop_due, when a stopping worker sends stop_signal.
 */
#include "handler.h"

#include <check.h>
#include "unit.h"
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#define NELEMS(a)	(sizeof(a) / sizeof((a)[0]))

#define EXITED(n)	W_EXITCODE((n), 0)
#define KILLED(sig)	(sig)		/* a wait status: death by sig */

static const struct {
	enum handler_kind kind;
	enum wait_end	 end;
	int		 status;
	bool		 signalled;	/* stop_signal (SIGTERM) was sent */
	enum outcome	 outcome;
	const char	*error;		/* the :error text it starts with */
	bool		 timed_out, killed;
} cases[] = {
	/* An exec handler's exit is its verdict. */
	{ HANDLER_EXEC, WAIT_EXITED, EXITED(0), false, OUTCOME_DONE, "",
	    false, false },
	{ HANDLER_EXEC, WAIT_EXITED, EXITED(65), false, OUTCOME_FAILED,
	    "exit status 65", false, false },
	{ HANDLER_EXEC, WAIT_EXITED, EXITED(1), false, OUTCOME_RETRY,
	    "exit status 1", false, false },
	{ HANDLER_EXEC, WAIT_EXITED, KILLED(SIGKILL), false, OUTCOME_RETRY,
	    "killed by signal 9", false, true },
	/* Told to stop: its answer counts as usual... */
	{ HANDLER_EXEC, WAIT_EXITED, EXITED(0), true, OUTCOME_DONE, "",
	    false, false },
	{ HANDLER_EXEC, WAIT_EXITED, EXITED(1), true, OUTCOME_RETRY,
	    "exit status 1", false, false },
	/* ...and a death of that very signal gives the row back. */
	{ HANDLER_EXEC, WAIT_EXITED, KILLED(SIGTERM), true, OUTCOME_ABORTED,
	    "stopped: rowq is shutting down", false, false },
	{ HANDLER_EXEC, WAIT_EXITED, KILLED(SIGTERM), false, OUTCOME_RETRY,
	    "killed by signal 15", false, true },
	{ HANDLER_EXEC, WAIT_EXITED, KILLED(SIGKILL), true, OUTCOME_RETRY,
	    "killed by signal 9", false, true },
	/* A pipe handler's exit is a death, whatever its status. */
	{ HANDLER_PIPE, WAIT_EXITED, EXITED(0), false, OUTCOME_RETRY,
	    "pipe handler died: exit status 0", false, false },
	{ HANDLER_PIPE, WAIT_EXITED, KILLED(SIGTERM), true, OUTCOME_ABORTED,
	    "stopped: rowq is shutting down", false, false },
	{ HANDLER_PIPE, WAIT_EXITED, KILLED(SIGKILL), false, OUTCOME_RETRY,
	    "pipe handler died: killed by signal 9", false, true },
	/* The rest is the same for both kinds. */
	{ HANDLER_EXEC, WAIT_TIMEOUT, 0, false, OUTCOME_RETRY,
	    "timed out after 2s", true, false },
	{ HANDLER_PIPE, WAIT_TIMEOUT, 0, true, OUTCOME_RETRY,
	    "timed out after 2s", true, false },
	{ HANDLER_EXEC, WAIT_STOPPED, 0, true, OUTCOME_ABORTED,
	    "stopped: rowq is shutting down", false, false },
	{ HANDLER_PIPE, WAIT_STOPPED, 0, false, OUTCOME_ABORTED,
	    "stopped: rowq is shutting down", false, false },
	{ HANDLER_PIPE, WAIT_TICK, 0, false, OUTCOME_ABORTED, "", false,
	    false },
};

START_TEST(test_outcome)
{
	const struct handler_settings set = { .timeout_ms = 2000,
	    .stop_signal = SIGTERM };
	const struct handler_job job = { .set = &set };
	struct handler_result res = { 0 };

	handler_result_begin(&res);
	res.stop_signalled = cases[_i].signalled;
	handler_outcome(&job, cases[_i].kind, cases[_i].end, cases[_i].status,
	    &res);
	ck_assert_int_eq(res.outcome, cases[_i].outcome);
	ck_assert_msg(strncmp(res.error.data ? res.error.data : "",
	    cases[_i].error, strlen(cases[_i].error)) == 0,
	    "case %d: error \"%s\", expected \"%s...\"", _i,
	    res.error.data ? res.error.data : "", cases[_i].error);
	ck_assert_int_eq(res.timed_out, cases[_i].timed_out);
	ck_assert_int_eq(res.killed, cases[_i].killed);
	handler_result_free(&res);
}
END_TEST

/* An answer is read by the pipe handler before: left as it was. */
START_TEST(test_outcome_answer_untouched)
{
	const struct handler_settings set = { .timeout_ms = 2000 };
	const struct handler_job job = { .set = &set };
	struct handler_result res = { 0 };

	handler_result_begin(&res);
	res.outcome = OUTCOME_FAILED;
	buf_puts(&res.error, "no such user");
	handler_outcome(&job, HANDLER_PIPE, WAIT_ANSWERED, 0, &res);
	ck_assert_int_eq(res.outcome, OUTCOME_FAILED);
	ck_assert_str_eq(res.error.data, "no such user");
	handler_result_free(&res);
}
END_TEST

START_TEST(test_stop_due)
{
	struct handler_settings set = { .timeout_ms = 1000 };
	struct stopper st = { .stop_deadline_ms = INT64_MAX };

	/* No stop_signal, or no stop yet: never. */
	ck_assert(handler_stop_due(&set, &st) == INT64_MAX);
	st.stop = true;
	ck_assert(handler_stop_due(&set, &st) == INT64_MAX);
	/* At once: no grace, or no deadline told. */
	set.stop_signal = SIGUSR1;
	ck_assert(handler_stop_due(&set, &st) == 0);
	set.stop_grace_ms = 5000;
	ck_assert(handler_stop_due(&set, &st) == 0);
	st.stop_deadline_ms = 100000;
	ck_assert(handler_stop_due(&set, &st) == 95000);
	set.stop_grace_ms = 0;
	ck_assert(handler_stop_due(&set, &st) == 0);
	st.stop = false;
	ck_assert(handler_stop_due(&set, &st) == INT64_MAX);
}
END_TEST

START_TEST(test_signal_names)
{
	ck_assert_int_eq(handler_stop_signal_parse("TERM"), SIGTERM);
	ck_assert_int_eq(handler_stop_signal_parse("SIGINT"), SIGINT);
	ck_assert_int_eq(handler_stop_signal_parse("USR1"), SIGUSR1);
	ck_assert_int_eq(handler_stop_signal_parse("KILL"), 0);
	ck_assert_int_eq(handler_stop_signal_parse("term"), 0);
	ck_assert_int_eq(handler_stop_signal_parse("SIG"), 0);
	ck_assert_int_eq(handler_stop_signal_parse(""), 0);
	ck_assert_str_eq(handler_stop_signal_name(SIGHUP), "HUP");
	ck_assert_str_eq(handler_stop_signal_name(SIGKILL), "?");
}
END_TEST

static Suite *
handler_end_suite(void)
{
	Suite *s = suite_create("handler_end");
	TCase *tc = tcase_create("handler_end");

	tcase_add_loop_test(tc, test_outcome, 0, NELEMS(cases));
	tcase_add_test(tc, test_outcome_answer_untouched);
	tcase_add_test(tc, test_stop_due);
	tcase_add_test(tc, test_signal_names);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(handler_end_suite());
}
