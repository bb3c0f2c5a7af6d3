/*
 * check_duration.c: duration_parse and duration_format.
 */
#include "rowq.h"

#include <check.h>
#include "unit.h"
#include <stdlib.h>
#include <string.h>

#define NELEMS(a)	(sizeof(a) / sizeof((a)[0]))

static const struct {
	const char	*text;
	int64_t		 ms;
} valid[] = {
	{ "250ms", 250 },
	{ "5s", 5000 },
	{ "10m", 600000 },
	{ "1h", 3600000 },
	{ "2d", 172800000 },
	{ "30", 30000 },		/* a bare number is seconds */
	{ "0", 0 },
	{ "0s", 0 },
	{ "0ms", 0 },
	{ "1h30m", 5400000 },
	{ "2d3h", 183600000 },
	{ "3m12s", 192000 },
	{ "1s500ms", 1500 },
	{ "1d2h3m4s5ms", 93784005 },
	{ "1.5s", 1500 },
	{ "1.5", 1500 },
	{ "0.5h", 1800000 },
	{ "0.001", 1 },
	{ "1.250s", 1250 },
	{ "007s", 7000 },
	{ "36500d", 36500LL * 86400000 },	/* a hundred years: the cap */
};

static const char *const invalid[] = {
	"",
	"-5s",
	"+5s",
	"5 s",		/* no space between number and unit */
	" 5s",
	"5s ",
	"10 parsecs",
	"5S",		/* units are lower case */
	"5sec",
	"5min",
	"5w",
	"s",
	"ms",
	"1.s",
	".5s",
	"1.5.5s",
	"1.0001s",	/* not a whole millisecond */
	"1.5ms",
	"30m1h",	/* largest unit first */
	"1h1h",
	"5ms5s",
	"1h30",		/* a bare number only on its own */
	"99999999999999999999",
	"36501d",
	"3154000000",	/* seconds beyond a hundred years */
	"1e3",
	"0x10",
	"5s\n",
	"1,5s",
};

START_TEST(test_parse_valid)
{
	int64_t ms = -1;

	ck_assert_msg(duration_parse(valid[_i].text, &ms) == 0,
	    "\"%s\" refused", valid[_i].text);
	ck_assert_msg(ms == valid[_i].ms, "\"%s\" gave %lld, not %lld",
	    valid[_i].text, (long long)ms, (long long)valid[_i].ms);
}
END_TEST

START_TEST(test_parse_invalid)
{
	int64_t ms = 12345;

	ck_assert_msg(duration_parse(invalid[_i], &ms) == -1,
	    "\"%s\" accepted as %lld", invalid[_i], (long long)ms);
	ck_assert_msg(ms == 12345, "\"%s\" changed the result",
	    invalid[_i]);
}
END_TEST

START_TEST(test_parse_null)
{
	int64_t ms;

	ck_assert_int_eq(duration_parse(NULL, &ms), -1);
}
END_TEST

static const struct {
	int64_t		 ms;
	const char	*text;
} formats[] = {
	{ 0, "0s" },
	{ 1, "1ms" },
	{ 250, "250ms" },
	{ 999, "999ms" },
	{ 1000, "1s" },
	{ 1500, "1s500ms" },
	{ 59000, "59s" },
	{ 192000, "3m12s" },
	{ 192999, "3m12s" },		/* truncated to two units */
	{ 3600000, "1h" },
	{ 3600500, "1h" },		/* 1h0m: the next unit is zero */
	{ 3660000, "1h1m" },
	{ 86400000, "1d" },
	{ 183600000, "2d3h" },
	{ 183660000, "2d3h" },
	{ 36500LL * 86400000, "36500d" },
	{ -1500, "-1s500ms" },
};

START_TEST(test_format)
{
	char buf[64];

	duration_format(formats[_i].ms, buf, sizeof(buf));
	ck_assert_str_eq(buf, formats[_i].text);
}
END_TEST

/* Whatever duration_format prints (for ms >= 0), duration_parse reads. */
START_TEST(test_round_trip)
{
	static const int64_t values[] = {
		0, 1, 999, 1000, 1001, 61000, 3599999, 3600000, 86399999,
		86400000, 90061001, 36500LL * 86400000,
	};
	char buf[64];
	size_t i;
	int64_t ms;

	for (i = 0; i < NELEMS(values); i++) {
		duration_format(values[i], buf, sizeof(buf));
		ck_assert_msg(duration_parse(buf, &ms) == 0, "\"%s\"", buf);
		ck_assert(ms <= values[i]);
	}
	for (i = 0; i < NELEMS(valid); i++) {
		if (strchr(valid[i].text, '.') != NULL)
			continue;
		duration_format(valid[i].ms, buf, sizeof(buf));
		ck_assert_msg(duration_parse(buf, &ms) == 0, "\"%s\"", buf);
	}
}
END_TEST

START_TEST(test_format_small_buffer)
{
	char buf[8];

	memset(buf, 'x', sizeof(buf));
	duration_format(192000, buf, 3);
	ck_assert_str_eq(buf, "3m");
	ck_assert_int_eq(buf[3], 'x');
	duration_format(192000, buf, 0);	/* writes nothing */
	ck_assert_int_eq(buf[0], '3');
}
END_TEST

START_TEST(test_format_extremes)
{
	char buf[64];

	duration_format(INT64_MIN, buf, sizeof(buf));
	ck_assert(buf[0] == '-');
	duration_format(INT64_MAX, buf, sizeof(buf));
	ck_assert(strlen(buf) > 1);
}
END_TEST

static Suite *
duration_suite(void)
{
	Suite *s = suite_create("duration");
	TCase *tc = tcase_create("duration");

	tcase_add_loop_test(tc, test_parse_valid, 0, NELEMS(valid));
	tcase_add_loop_test(tc, test_parse_invalid, 0, NELEMS(invalid));
	tcase_add_test(tc, test_parse_null);
	tcase_add_loop_test(tc, test_format, 0, NELEMS(formats));
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_format_small_buffer);
	tcase_add_test(tc, test_format_extremes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(duration_suite());
}
