/*
 * check_cron.c: cron expressions (cron.c), zones (tz.c) and a
 * schedule's slots (schedule.c): what parses and what does not, the next
 * slots against tests/unit/cron_table.tsv (made by cron_table.py from
 * croniter and zoneinfo: see its header), and what a transaction
 * inserts and skips.
 */
#include "rowq.h"
#include "schedule.h"

#include <check.h>
#include "unit.h"
#include <stdlib.h>
#include <string.h>

#define NELEMS(a)	(sizeof(a) / sizeof((a)[0]))
#define CRON_TABLE	"tests/unit/cron_table.tsv"

static const char *const valid[] = {
	"* * * * *", "*/5 * * * *", "5/15 * * * *", "0,30 * * * *",
	"0 9 * * mon-fri", "0 0 1 JAN,Jul *", "0 0 * * 7", "0 0 * * 5-7",
	"  0  0\t* * *  ", "@hourly", "@daily", "@midnight", "@weekly",
	"@monthly", "@yearly", "@annually", "@DAILY", "0 0 29 2 *",
	"0 0 31 1-12 *", "59 23 31 12 6", "0 0 */2 * mon", "0-59/59 * * * *",
};

static const struct {
	const char	*text;
	const char	*error;		/* a part of the message */
} invalid[] = {
	{ "", "expected five fields" },
	{ "* * * *", "expected five fields" },
	{ "* * * * * *", "more than five fields" },
	{ "60 * * * *", "minute: 60 is not from 0 to 59" },
	{ "* 24 * * *", "hour: 24 is not from 0 to 23" },
	{ "* * 0 * *", "day-of-month: 0 is not from 1 to 31" },
	{ "* * 32 * *", "day-of-month: 32 is not from 1 to 31" },
	{ "* * * 13 *", "month: 13 is not from 1 to 12" },
	{ "* * * * 8", "day-of-week: 8 is not from 0 to 7" },
	{ "* * * foo *", "month: foo is not a month name" },
	{ "* * * * monday", "day-of-week: monday is not a day name" },
	{ "mon * * * *", "minute: expected a number, not mon" },
	{ "*/0 * * * *", "minute: the step in */0 is not from 1 to 59" },
	{ "*/ * * * *", "the step in */ is not" },
	{ "*/60 * * * *", "the step in */60 is not" },
	{ "20-10 * * * *", "the range 20-10 goes down" },
	{ "1,,2 * * * *", "minute: expected a number" },
	{ "1, * * * *", "a list ends with ','" },
	{ "1-2-3 * * * *", "unexpected -3" },
	{ "*-5 * * * *", "unexpected -5" },
	{ "0 0 31 2 *", "never matches: no month of 2 has a day of 31" },
	{ "0 0 30,31 feb *", "never matches" },
	{ "0 0 31 4,6,9,11 *", "never matches" },
	{ "@reboot", "@reboot is not one of @yearly" },
	{ "@daily 5", "@daily is not one of" },
	{ "99999999999999999999 * * * *", "minute: 99999999999999999999 is "
	    "not from 0 to 59" },
};

START_TEST(test_valid)
{
	struct cron c;
	char err[256];

	for (size_t i = 0; i < NELEMS(valid); i++)
		ck_assert_msg(cron_parse(&c, valid[i], err, sizeof(err)) == 0,
		    "%s: %s", valid[i], err);
}
END_TEST

START_TEST(test_invalid)
{
	struct cron c;
	char err[256];

	for (size_t i = 0; i < NELEMS(invalid); i++) {
		err[0] = '\0';
		ck_assert_msg(cron_parse(&c, invalid[i].text, err,
		    sizeof(err)) == -1, "%s parsed", invalid[i].text);
		ck_assert_msg(strstr(err, invalid[i].error) != NULL,
		    "%s: \"%s\" lacks \"%s\"", invalid[i].text, err,
		    invalid[i].error);
	}
}
END_TEST

/* The fields as bits, and Vixie's rule for the day fields. */
START_TEST(test_fields)
{
	struct cron c;
	char err[256];

	ck_assert_int_eq(cron_parse(&c, "5/15 1-3,7 * * 1/2", err,
	    sizeof(err)), 0);
	ck_assert(c.minute == (1ULL << 5 | 1ULL << 20 | 1ULL << 35 |
	    1ULL << 50));
	ck_assert_uint_eq(c.hour, 1u << 1 | 1u << 2 | 1u << 3 | 1u << 7);
	/* 1/2 is 1,3,5,7, and 7 is Sunday. */
	ck_assert_uint_eq(c.wday, 1u << 0 | 1u << 1 | 1u << 3 | 1u << 5);
	ck_assert(c.mday_star && !c.wday_star);
	ck_assert_int_eq(cron_parse(&c, "0 0 13 * fri", err, sizeof(err)), 0);
	ck_assert(!c.mday_star && !c.wday_star);
	/* Both restricted: either.  The 13th, a Sunday; and a Friday. */
	struct tm sun13 = { .tm_mday = 13, .tm_mon = 11, .tm_wday = 0 };
	struct tm fri4 = { .tm_mday = 4, .tm_mon = 11, .tm_wday = 5 };
	struct tm sat5 = { .tm_mday = 5, .tm_mon = 11, .tm_wday = 6 };
	ck_assert(cron_day_matches(&c, &sun13));
	ck_assert(cron_day_matches(&c, &fri4));
	ck_assert(!cron_day_matches(&c, &sat5));
	/* A step of the whole range begins with a star: both must match. */
	ck_assert_int_eq(cron_parse(&c, "0 0 */2 * fri", err, sizeof(err)), 0);
	ck_assert(c.mday_star);
	ck_assert(!cron_day_matches(&c, &fri4));
	struct tm fri5 = { .tm_mday = 5, .tm_mon = 11, .tm_wday = 5 };
	ck_assert(cron_day_matches(&c, &fri5));
}
END_TEST

START_TEST(test_zones)
{
	char err[256];

	ck_assert_int_eq(tz_check("UTC", err, sizeof(err)), 0);
	ck_assert_int_eq(tz_check("Europe/Paris", err, sizeof(err)), 0);
	ck_assert_int_eq(tz_check("America/Argentina/Buenos_Aires", err,
	    sizeof(err)), 0);
	ck_assert_int_eq(tz_check("Europe/Pariss", err, sizeof(err)), -1);
	ck_assert(strstr(err, "no such time zone") != NULL);
	ck_assert_int_eq(tz_check("../etc/passwd", err, sizeof(err)), -1);
	ck_assert_int_eq(tz_check("/usr/share/zoneinfo/UTC", err,
	    sizeof(err)), -1);
	ck_assert_int_eq(tz_check("Europe", err, sizeof(err)), -1);
	ck_assert_int_eq(tz_check("", err, sizeof(err)), -1);
	ck_assert_int_eq(tz_check("Europe/Paris ", err, sizeof(err)), -1);
}
END_TEST

/* The wall clock's instant: normal, in a gap, in a repeated hour. */
START_TEST(test_instants)
{
	tz_use("Europe/Paris");
	/* 2026-03-29 02:30 does not exist: 03:00 CEST, 01:00 UTC. */
	ck_assert_int_eq(tz_instant(1774751400), 1774746000);
	/* 02:00 neither: the same instant. */
	ck_assert_int_eq(tz_instant(1774749600), 1774746000);
	/* 2026-10-25 02:30 happens twice: its CEST pass, 00:30 UTC. */
	ck_assert_int_eq(tz_instant(1792895400), 1792888200);
	ck_assert_int_eq(tz_wall(1792888200), 1792895400);
	ck_assert_int_eq(tz_wall(1792888200 + 3600), 1792895400);
	tz_use("America/New_York");
	/* 2026-11-01 01:30 EDT, 05:30 UTC; not 06:30. */
	ck_assert_int_eq(tz_instant(1793496600), 1793511000);
	tz_restore();
}
END_TEST

static int64_t
table_number(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	ck_assert_msg(*s != '\0' && *end == '\0', "not a number: %s", s);
	return v;
}

/* Every row of the table: three next slots. */
START_TEST(test_table)
{
	FILE *f = fopen(CRON_TABLE, "r");
	char line[1024];
	int rows = 0, unmarked = 0;

	ck_assert_msg(f != NULL, "%s: run from the top of the tree",
	    CRON_TABLE);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *col[8], *save = NULL, err[256];
		struct schedule s = { 0 };
		size_t n = 0;
		int64_t t;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = '\0';
		for (char *c = strtok_r(line, "\t", &save); c != NULL && n < 8;
		    c = strtok_r(NULL, "\t", &save))
			col[n++] = c;
		ck_assert_msg(n >= 7, "a row of %zu columns", n);
		ck_assert_msg(cron_parse(&s.cron, col[0], err,
		    sizeof(err)) == 0, "%s: %s", col[0], err);
		s.timezone = col[1];
		t = table_number(col[2]);
		for (int k = 0; k < 3; k++) {
			int64_t want = table_number(col[3 + k]);
			t = schedule_next(&s, t);
			ck_assert_msg(t == want, "%s in %s after %s: slot %d is "
			    "%lld, not %lld (%s)", col[0], col[1], col[2], k + 1,
			    (long long)t, (long long)want, col[6]);
		}
		rows++;
		unmarked += strcmp(col[6], "-") == 0;
	}
	fclose(f);
	ck_assert_int_ge(rows, 300);
	ck_assert_int_ge(unmarked, 200);
}
END_TEST

static struct schedule
every(int64_t period_s, int64_t catch_up_ms)
{
	struct schedule s = { .every_s = period_s, .timezone = "UTC",
	    .catch_up_ms = catch_up_ms };

	return s;
}

/* every: slots are multiples of the period since the epoch. */
START_TEST(test_every)
{
	struct schedule s = every(900, 0);

	ck_assert_int_eq(schedule_next(&s, 1796000000), 1796000400);
	ck_assert_int_eq(schedule_next(&s, 1796000400), 1796001300);
	ck_assert_int_eq(schedule_next(&s, -1), 0);
}
END_TEST

/* On time within a minute; catch_up widens it; older ones skipped. */
START_TEST(test_plan)
{
	struct schedule s = every(1, 0);
	struct schedule_plan p;
	int64_t now = 1796000000;

	/* Due now and 59 s late: all on time. */
	schedule_plan(&s, now - 60, now * 1000, &p);
	ck_assert_uint_eq(p.skipped, 0);
	ck_assert_uint_eq(p.ninsert, 60);
	ck_assert_int_eq(p.insert[0], now - 59);
	ck_assert_int_eq(p.last, now);
	/* A minute and a half behind: 30 skipped, the rest inserted. */
	schedule_plan(&s, now - 90, now * 1000 + 500, &p);
	ck_assert_uint_eq(p.skipped, 30);
	ck_assert_int_eq(p.skip_log[0], now - 89);
	ck_assert_int_eq(p.skipped_last, now - 60);
	ck_assert_int_eq(p.insert[0], now - 59);
	ck_assert_uint_eq(p.ninsert, 60);
	/* More than a batch: the rest in the next transaction. */
	s = every(1, 3600 * 1000);
	schedule_plan(&s, now - 1000, now * 1000, &p);
	ck_assert_uint_eq(p.skipped, 0);
	ck_assert_uint_eq(p.ninsert, SCHEDULE_BATCH_MAX);
	ck_assert_int_eq(p.last, now - 1000 + SCHEDULE_BATCH_MAX);
	ck_assert_int_eq(p.next, p.last + 1);
	/* Nothing due: nothing to do, and the next slot. */
	s = every(60, 0);
	schedule_plan(&s, now - now % 60, now * 1000, &p);
	ck_assert_uint_eq(p.ninsert + p.skipped, 0);
	ck_assert_int_eq(p.next, now - now % 60 + 60);
}
END_TEST

/* A cron schedule a day behind, with catch_up 6h: the example. */
START_TEST(test_plan_cron)
{
	struct schedule s = { .timezone = "Europe/Paris",
	    .catch_up_ms = 6 * 3600 * 1000 };
	struct schedule_plan p;
	struct schedule_slot_text t;
	char err[256];
	/* 2026-12-01 12:00 Paris, 11:00 UTC; the last slot a day before. */
	int64_t now = 1796122800, last = 1796036400 - 3600 * 9;

	ck_assert_int_eq(cron_parse(&s.cron, "0 3,9 * * *", err,
	    sizeof(err)), 0);
	schedule_plan(&s, last, now * 1000, &p);
	/* 2026-11-30 09:00, 2026-12-01 03:00 skipped; 09:00 inserted. */
	ck_assert_uint_eq(p.skipped, 2);
	schedule_slot_text(&s, p.skip_log[1], &t);
	ck_assert_str_eq(t.shown, "2026-12-01 03:00 Europe/Paris");
	ck_assert_str_eq(t.utc, "2026-12-01 02:00:00");
	ck_assert_uint_eq(p.ninsert, 1);
	schedule_slot_text(&s, p.insert[0], &t);
	ck_assert_str_eq(t.local, "2026-12-01 09:00:00");
	ck_assert_int_eq(schedule_due(&s, p.last, now * 1000),
	    1796176800);	/* 2026-12-02 03:00 Paris */
}
END_TEST

/* The slots up to a time, newest first: an every's, and a cron's. */
START_TEST(test_slots_upto)
{
	struct schedule s = every(900, 0);
	struct schedule_slot_text t;
	int64_t out[5];
	char err[256];

	/* 1796000000 is 2026-11-30 00:53:20 UTC: 00:45, 00:30, 00:15. */
	ck_assert_uint_eq(schedule_slots_upto(&s, 1796000000, 3, out), 3);
	ck_assert_int_eq(out[0], 1796000000 - 500);
	ck_assert_int_eq(out[2], 1796000000 - 500 - 1800);
	/* A slot at upto is one of them. */
	ck_assert_uint_eq(schedule_slots_upto(&s, out[0], 1, out), 1);
	ck_assert_int_eq(out[0], 1796000000 - 500);
	/* Weekdays at 09:00 Paris, from a Sunday: Fri, Thu, Wed, Tue, Mon. */
	s = (struct schedule){ .timezone = "Europe/Paris" };
	ck_assert_int_eq(cron_parse(&s.cron, "0 9 * * mon-fri", err,
	    sizeof(err)), 0);
	/* 2026-12-06 12:00 UTC, a Sunday. */
	ck_assert_uint_eq(schedule_slots_upto(&s, 1796558400, 5, out), 5);
	schedule_slot_text(&s, out[0], &t);
	ck_assert_str_eq(t.local, "2026-12-04 09:00:00");
	schedule_slot_text(&s, out[4], &t);
	ck_assert_str_eq(t.local, "2026-11-30 09:00:00");
	/* The 29th of February: 2024's and 2020's (2028 is after upto). */
	ck_assert_int_eq(cron_parse(&s.cron, "0 0 29 2 *", err,
	    sizeof(err)), 0);
	ck_assert_uint_eq(schedule_slots_upto(&s, 1796558400, 2, out), 2);
	schedule_slot_text(&s, out[0], &t);
	ck_assert_str_eq(t.local, "2024-02-29 00:00:00");
	schedule_slot_text(&s, out[1], &t);
	ck_assert_str_eq(t.local, "2020-02-29 00:00:00");
	ck_assert_uint_eq(schedule_slots_upto(&s, -1, 2, out), 0);
}
END_TEST

static Suite *
cron_suite(void)
{
	Suite *s = suite_create("cron");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_valid);
	tcase_add_test(tc, test_invalid);
	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_zones);
	tcase_add_test(tc, test_instants);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_every);
	tcase_add_test(tc, test_plan);
	tcase_add_test(tc, test_plan_cron);
	tcase_add_test(tc, test_slots_upto);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(cron_suite());
}
