/*
 * check_retry_in.c: retry_in_parse, a pipe handler's "retry-in N
 * [message]" answer, and retry_in_from_stderr, the same line as the last
 * of an exec handler's stderr.
 */
#include "handler.h"

#include <check.h>
#include "unit.h"
#include <string.h>

#define NELEMS(a)	(sizeof(a) / sizeof((a)[0]))

static const struct {
	const char	*line;
	int64_t		 ms;
	const char	*message;
} valid[] = {
	{ "retry-in 120", 120000, "" },
	{ "retry-in 5m", 300000, "" },
	{ "retry-in 1h30m", 5400000, "" },
	{ "retry-in 250ms", 250, "" },
	{ "retry-in 1.5", 1500, "" },
	{ "retry-in 0", 0, "" },		/* at once, as backoff 0 is */
	{ "retry-in 36500d", 36500LL * 86400000, "" },	/* the largest */
	{ "retry-in 50 greylisted until later", 50000,
	    "greylisted until later" },
	{ "retry-in   5s   429 Too Many Requests", 5000,
	    "429 Too Many Requests" },		/* spaces around N skipped */
	{ "retry-in 5 ", 5000, "" },
	{ "retry-in 5 s", 5000, "s" },		/* N ends at the space */
	{ "retry-in 120 a: b  c ", 120000, "a: b  c " },
};

/* Lines that are not retry-in lines at all: the other answers. */
static const char *const other[] = {
	"",
	"ok",
	"retry",
	"retry 5",
	"retry-in5",
	"retry-inx 5",
	"retry-in\t5",
	" retry-in 5",
	"RETRY-IN 5",
	"retry-",
	"fail retry-in 5",
};

/* retry-in lines with a bad N: out of protocol. */
static const char *const bad[] = {
	"retry-in",
	"retry-in ",
	"retry-in    ",
	"retry-in soon",
	"retry-in -5",
	"retry-in +5",
	"retry-in 5x",
	"retry-in 5S",
	"retry-in 1.5ms",
	"retry-in 36501d",		/* over a hundred years */
	"retry-in 99999999999999999999",
	"retry-in 1e3",
	"retry-in 5\t",			/* only spaces end N */
	/* 32 characters: longer than any duration can be written. */
	"retry-in 00000000000000000000000000000005",
};

START_TEST(test_parse_valid)
{
	const char *message = NULL;
	int64_t ms = -1;

	ck_assert_msg(retry_in_parse(valid[_i].line, &ms, &message) == 0,
	    "\"%s\" refused", valid[_i].line);
	ck_assert_msg(ms == valid[_i].ms, "\"%s\" gave %lld ms, not %lld",
	    valid[_i].line, (long long)ms, (long long)valid[_i].ms);
	ck_assert_ptr_nonnull(message);
	ck_assert_str_eq(message, valid[_i].message);
}
END_TEST

START_TEST(test_parse_other)
{
	const char *message = "untouched";
	int64_t ms = 12345;

	ck_assert_msg(retry_in_parse(other[_i], &ms, &message) == 1,
	    "\"%s\" read as a retry-in line", other[_i]);
	ck_assert_int_eq(ms, 12345);
	ck_assert_str_eq(message, "untouched");
}
END_TEST

START_TEST(test_parse_bad)
{
	const char *message = NULL;
	int64_t ms = 12345;

	ck_assert_msg(retry_in_parse(bad[_i], &ms, &message) == -1,
	    "\"%s\" not refused (%lld ms)", bad[_i], (long long)ms);
}
END_TEST

/* The message points into the line, not into a copy. */
START_TEST(test_parse_message_in_line)
{
	const char *line = "retry-in 5m greylisted", *message;
	int64_t ms;

	ck_assert_int_eq(retry_in_parse(line, &ms, &message), 0);
	ck_assert_ptr_eq(message, line + strlen("retry-in 5m "));
}
END_TEST

/* An exec handler's stderr tail, as the errsink keeps it. */
static int
from_stderr(const char *tail, size_t len, int64_t *ms)
{
	struct errsink e = { 0 };
	int rc;

	buf_append(&e.tail, tail, len);
	rc = handler_stderr_word(&e, RETRY_IN_WORD, ms, NULL, 0);
	errsink_free(&e);
	return rc;
}

static const struct {
	const char	*tail;
	int64_t		 ms;		/* -1: not heeded */
} tails[] = {
	{ "retry-in 120\n", 120000 },
	{ "retry-in 120", 120000 },		/* no newline at the end */
	{ "retry-in 2h\r\n", 7200000 },
	{ "retry-in 5m\n\n\n", 300000 },	/* empty lines after it */
	{ "rate limited\nretry-in 100\n", 100000 },
	{ "a\nb\nc\nretry-in 50 greylisted\n", 50000 },
	{ "retry-in 100\nrate limited\n", -1 },	/* only the last line */
	{ "", -1 },
	{ "\n", -1 },
	{ "\r\n\n", -1 },
	{ "retry-in soon\n", -1 },
	{ "retry 100\n", -1 },
	{ "retry-in\n", -1 },
	{ "xretry-in 5\n", -1 },
};

START_TEST(test_from_stderr)
{
	int64_t ms = -1;
	int rc;

	rc = from_stderr(tails[_i].tail, strlen(tails[_i].tail), &ms);
	if (tails[_i].ms == -1) {
		ck_assert_msg(rc == -1, "\"%s\" heeded as %lld ms",
		    tails[_i].tail, (long long)ms);
	} else {
		ck_assert_msg(rc == 0, "\"%s\" not heeded", tails[_i].tail);
		ck_assert_int_eq(ms, tails[_i].ms);
	}
}
END_TEST

/*
 * The line's message is the handler's to choose, as in a pipe handler's
 * answer: a long one does not hide the delay it asks for.
 */
START_TEST(test_from_stderr_long_message)
{
	char tail[HANDLER_ERROR_MAX];
	size_t len;
	int64_t ms = -1;

	len = (size_t)snprintf(tail, sizeof(tail), "some output\nretry-in 120 ");
	memset(tail + len, 'm', 300);
	len += 300;
	tail[len++] = '\n';
	ck_assert_int_eq(from_stderr(tail, len, &ms), 0);
	ck_assert_int_eq(ms, 120000);
}
END_TEST

/* An exec handler's throttle-in line: the delay and its reason, cut to fit. */
START_TEST(test_from_stderr_throttle)
{
	struct errsink e = { 0 };
	const char *tail = "rate limited\nthrottle-in 30s HTTP 429 from api\n";
	char reason[8];
	int64_t ms = -1;

	buf_append(&e.tail, tail, strlen(tail));
	ck_assert_int_eq(handler_stderr_word(&e, THROTTLE_IN_WORD, &ms,
	    reason, sizeof(reason)), 0);
	ck_assert_int_eq(ms, 30000);
	ck_assert_str_eq(reason, "HTTP 42");
	ck_assert_int_eq(handler_stderr_word(&e, RETRY_IN_WORD, &ms, NULL, 0),
	    -1);
	errsink_free(&e);
}
END_TEST

static Suite *
retry_in_suite(void)
{
	Suite *s = suite_create("retry_in");
	TCase *tc = tcase_create("retry_in");

	tcase_add_loop_test(tc, test_parse_valid, 0, NELEMS(valid));
	tcase_add_loop_test(tc, test_parse_other, 0, NELEMS(other));
	tcase_add_loop_test(tc, test_parse_bad, 0, NELEMS(bad));
	tcase_add_test(tc, test_parse_message_in_line);
	tcase_add_loop_test(tc, test_from_stderr, 0, NELEMS(tails));
	tcase_add_test(tc, test_from_stderr_long_message);
	tcase_add_test(tc, test_from_stderr_throttle);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(retry_in_suite());
}
