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

/* ---- at the limits ---- */

#define MAX_MS	(36500LL * 86400000)	/* a hundred years: the cap */

/* Zero, in every unit and as several parts. */
START_TEST(test_zero)
{
	static const char *const zeros[] = {
		"0", "0.0", "0.000", "0d", "0h", "0m", "0s", "0ms", "0d0h",
		"0h0m0s0ms", "0d0h0m0s0ms", "000", "0.5s0ms",
	};
	int64_t ms;

	for (size_t i = 0; i < NELEMS(zeros); i++) {
		ms = -1;
		ck_assert_msg(duration_parse(zeros[i], &ms) == 0, "\"%s\"",
		    zeros[i]);
		ck_assert_msg(ms == (strcmp(zeros[i], "0.5s0ms") == 0 ? 500 :
		    0), "\"%s\" gave %lld", zeros[i], (long long)ms);
	}
}
END_TEST

/* The largest duration, written in each unit; a millisecond more is not. */
START_TEST(test_largest)
{
	static const char *const at_cap[] = {
		"36500d", "876000h", "52560000m", "3153600000s",
		"3153600000000ms", "3153600000", "3153600000.000",
		"36499d24h", "36499d23h60m", "36500d0h0m0s0ms",
		"0036500d",
	};
	static const char *const past[] = {
		"36500d1ms", "36500.00000001d", "876000h1ms", "876001h",
		"52560001m", "3153600001s", "3153600000001ms",
		"3153600000.001", "3153600001", "36499d24h1ms",
		"36499d23h59m59s1001ms", "36501d",
	};
	int64_t ms;

	for (size_t i = 0; i < NELEMS(at_cap); i++) {
		ms = -1;
		ck_assert_msg(duration_parse(at_cap[i], &ms) == 0, "\"%s\" "
		    "refused", at_cap[i]);
		ck_assert_msg(ms == MAX_MS, "\"%s\" gave %lld", at_cap[i],
		    (long long)ms);
	}
	ck_assert_int_eq(duration_parse("36499d23h59m59s999ms", &ms), 0);
	ck_assert_int_eq(ms, MAX_MS - 1);
	for (size_t i = 0; i < NELEMS(past); i++) {
		ms = 12345;
		ck_assert_msg(duration_parse(past[i], &ms) == -1, "\"%s\" "
		    "accepted as %lld", past[i], (long long)ms);
		ck_assert_int_eq(ms, 12345);
	}
}
END_TEST

/* Numbers far past int64_t: refused, never wrapped round to a small one. */
START_TEST(test_overflow)
{
	static const char *const huge[] = {
		"9223372036854775807ms", "9223372036854775808ms",
		"18446744073709551616ms", "18446744073709551617s",
		"106751991167d", "2562047788015h", "153722867280912m",
		"9223372036854775s", "9223372036854775807",
		"99999999999999999999999999999999999999d",
		"1d99999999999999999999h",
		"1.99999999999999999999d",	/* more decimals than kept */
		"0.0000000001d", "1.0000000000s",	/* ten decimals */
		"36500d36500d",
	};
	int64_t ms;

	for (size_t i = 0; i < NELEMS(huge); i++) {
		ms = 12345;
		ck_assert_msg(duration_parse(huge[i], &ms) == -1, "\"%s\" "
		    "accepted as %lld", huge[i], (long long)ms);
		ck_assert_int_eq(ms, 12345);
	}
	/* Nine decimals are kept, and read exactly. */
	ck_assert_int_eq(duration_parse("1.500000000s", &ms), 0);
	ck_assert_int_eq(ms, 1500);
	ck_assert_int_eq(duration_parse("0.000003125d", &ms), 0);
	ck_assert_int_eq(ms, 270);
}
END_TEST

/* Units that are not rowq's, or written another way. */
START_TEST(test_bad_units)
{
	static const char *const bad[] = {
		"5y", "5w", "5us", "5ns", "5\xc2\xb5s", "5M", "5D", "5H", "5Ms",
		"5mS", "5mss", "5sm", "5msec", "5hr", "5hours", "5min",
		"5 ms", "5m 5s", "5m,5s", "5m+5s", "5_000ms", "5'000ms",
		"5d5d", "5ms5ms", "5s5m", "5m5h", "5h5d", "5ms5s", "5s5",
		"5m5", "5.5.5s", "5..5s", "5.s", ".s", "s5", "5s.",
		"\t5s", "5s\t",
	};
	int64_t ms;

	for (size_t i = 0; i < NELEMS(bad); i++) {
		ms = 12345;
		ck_assert_msg(duration_parse(bad[i], &ms) == -1, "\"%s\" "
		    "accepted as %lld", bad[i], (long long)ms);
		ck_assert_int_eq(ms, 12345);
	}
}
END_TEST

/*
 * duration_format keeps two units, truncating: read back, a value comes
 * within the lower unit it printed, and exactly when it fits two units.
 */
START_TEST(test_round_trip_limits)
{
	static const struct {
		int64_t	 unit;		/* the largest unit that fits */
		int64_t	 lower;		/* the one after it */
	} units[] = {
		{ 86400000, 3600000 }, { 3600000, 60000 }, { 60000, 1000 },
		{ 1000, 1 }, { 1, 1 },
	};
	static const int64_t values[] = {
		1, 999, 1000, 1001, 59999, 60000, 60001, 3599999, 3600000,
		3600001, 86399999, 86400000, 86400001, 90061001, 1234567890123,
		MAX_MS - 1, MAX_MS,
	};
	char buf[64];
	int64_t back;

	for (size_t i = 0; i < NELEMS(values); i++) {
		int64_t v = values[i], lower = 0;
		for (size_t u = 0; u < NELEMS(units); u++)
			if (v >= units[u].unit) {
				lower = units[u].lower;
				break;
			}
		duration_format(v, buf, sizeof(buf));
		ck_assert_msg(duration_parse(buf, &back) == 0, "%lld as \"%s\" "
		    "not read back", (long long)v, buf);
		ck_assert_msg(back <= v && v - back < lower + (lower == 1),
		    "%lld as \"%s\" read back as %lld", (long long)v, buf,
		    (long long)back);
	}
	/* What two units hold comes back exactly. */
	for (size_t u = 0; u + 1 < NELEMS(units); u++)
		for (int64_t a = 1; a < (u == 0 ? 36500 :
		    units[u - 1].unit / units[u].unit); a += 7)
			for (int64_t b = 0; b * units[u].lower < units[u].unit;
			    b += units[u].unit / units[u].lower / 5 + 1) {
				int64_t v = a * units[u].unit + b * units[u].lower;
				duration_format(v, buf, sizeof(buf));
				ck_assert_int_eq(duration_parse(buf, &back), 0);
				ck_assert_msg(back == v, "%lld as \"%s\" read "
				    "back as %lld", (long long)v, buf,
				    (long long)back);
			}
	duration_format(MAX_MS, buf, sizeof(buf));
	ck_assert_str_eq(buf, "36500d");
	duration_format(MAX_MS - 1, buf, sizeof(buf));
	ck_assert_str_eq(buf, "36499d23h");
	/* Past the cap, what it prints is not a duration to read. */
	duration_format(MAX_MS + 86400000, buf, sizeof(buf));
	ck_assert_str_eq(buf, "36501d");
	ck_assert_int_eq(duration_parse(buf, &back), -1);
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
	tcase_add_test(tc, test_zero);
	tcase_add_test(tc, test_largest);
	tcase_add_test(tc, test_overflow);
	tcase_add_test(tc, test_bad_units);
	tcase_add_test(tc, test_round_trip_limits);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(duration_suite());
}
