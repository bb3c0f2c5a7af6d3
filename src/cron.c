/*
 * cron.c: cron expressions as people write them, and the next wall-clock
 * minute one matches.
 *
 * Five fields, minute hour day-of-month month day-of-week, separated by
 * spaces or tabs; each a list of `*`, N or N-M, any of them with a /STEP
 * (N/STEP reads as N-LAST/STEP, as most crons take it); month and day
 * names (jan-dec, sun-sat, any case) where numbers go; day-of-week 7 is
 * Sunday as 0 is.  Or one of @yearly (@annually), @monthly, @weekly,
 * @daily (@midnight) and @hourly.  When both day fields are restricted a
 * day matches when either does, Vixie cron's rule; a field counts as
 * unrestricted when it begins with `*`, as there (so `*` and `*\/2` in
 * day-of-month leave day-of-week alone to decide, AND).
 *
 * Times here are wall-clock times: seconds since 1970 of the clock on the
 * wall as if it were UTC, so that gmtime_r and timegm do the calendar.
 * Which instant a wall time is, in a zone, is tz.c's business.
 */
#include "rowq.h"
#include "schedule.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* A match is searched for this many years ahead, at most. */
#define CRON_SEARCH_YEARS	30

struct cron_field {
	const char		*name;
	int			 min, max;
	const char *const	*names;		/* names[i] is min + i; or NULL */
};

static const char *const cron_months[] = {
	"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
	"nov", "dec", NULL,
};
static const char *const cron_days[] = {
	"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL,
};

enum { CRON_MINUTE, CRON_HOUR, CRON_MDAY, CRON_MONTH, CRON_WDAY };

static const struct cron_field cron_fields[] = {
	[CRON_MINUTE] = { "minute", 0, 59, NULL },
	[CRON_HOUR] = { "hour", 0, 23, NULL },
	[CRON_MDAY] = { "day-of-month", 1, 31, NULL },
	[CRON_MONTH] = { "month", 1, 12, cron_months },
	[CRON_WDAY] = { "day-of-week", 0, 7, cron_days },
};

static const struct {
	const char	*name;
	const char	*fields;
} cron_macros[] = {
	{ "@yearly", "0 0 1 1 *" },
	{ "@annually", "0 0 1 1 *" },
	{ "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" },
	{ "@daily", "0 0 * * *" },
	{ "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

/* A number or, where the field has them, a name, at *sp. */
static int
cron_value(const struct cron_field *f, const char **sp, int *out,
    char *err, size_t errlen)
{
	const char *s = *sp;
	long v = 0;

	if (isdigit((unsigned char)*s)) {
		for (; isdigit((unsigned char)*s); s++)
			if ((v = v * 10 + (*s - '0')) > 1000)
				break;
		while (isdigit((unsigned char)*s))
			s++;
		if (v < f->min || v > f->max) {
			snprintf(err, errlen, "%s: %.*s is not from %d to %d",
			    f->name, (int)(s - *sp), *sp, f->min, f->max);
			return -1;
		}
	} else if (f->names != NULL && isalpha((unsigned char)*s)) {
		size_t n = 0;
		while (isalpha((unsigned char)s[n]))
			n++;
		for (v = 0; f->names[v] != NULL; v++)
			if (n == 3 && strncasecmp(s, f->names[v], 3) == 0)
				break;
		if (f->names[v] == NULL) {
			snprintf(err, errlen, "%s: %.*s is not a %s name (%s "
			    "to %s)", f->name, (int)(n > 20 ? 20 : n), s,
			    f->names == cron_months ? "month" : "day",
			    f->names[0], f->names == cron_months ? "dec" :
			    "sat");
			return -1;
		}
		v += f->min;
		s += n;
	} else {
		snprintf(err, errlen, "%s: expected a number%s, not %.*s",
		    f->name, f->names != NULL ? " or a name" : "",
		    (int)strcspn(s, ", \t"), s);
		return -1;
	}
	*sp = s;
	*out = (int)v;
	return 0;
}

/*
 * One field's list into bits (bit v for value v); *star when it begins
 * with `*`.  The text is the field alone, NUL-terminated.
 */
static int
cron_list(const struct cron_field *f, const char *s, uint64_t *bits,
    bool *star, char *err, size_t errlen)
{
	*bits = 0;
	*star = *s == '*';
	for (;;) {
		int lo, hi, step = 1;
		const char *item = s;
		if (*s == '*') {
			lo = f->min;
			hi = f->max;
			s++;
		} else {
			if (cron_value(f, &s, &lo, err, errlen) == -1)
				return -1;
			hi = lo;
			if (*s == '-') {
				s++;
				if (cron_value(f, &s, &hi, err, errlen) == -1)
					return -1;
				if (hi < lo) {
					snprintf(err, errlen, "%s: the range "
					    "%.*s goes down; a range goes up",
					    f->name, (int)(s - item), item);
					return -1;
				}
			} else if (*s == '/')
				hi = f->max;
		}
		if (*s == '/') {
			const char *from = ++s;
			long n = 0;
			for (; isdigit((unsigned char)*s); s++)
				if ((n = n * 10 + (*s - '0')) > 1000)
					n = 1000;
			if (s == from || n < 1 || n > f->max) {
				snprintf(err, errlen, "%s: the step in %.*s is "
				    "not from 1 to %d", f->name,
				    (int)strcspn(item, ","), item, f->max);
				return -1;
			}
			step = (int)n;
		}
		if (*s != ',' && *s != '\0') {
			snprintf(err, errlen, "%s: unexpected %.*s in %s",
			    f->name, (int)strcspn(s, ","), s, item);
			return -1;
		}
		/* lo and hi are within the field, which fits 64 bits. */
		for (int v = lo; v <= hi && v < 64; v += step)
			*bits |= 1ULL << v;
		if (*s == '\0')
			return 0;
		if (*++s == '\0') {
			snprintf(err, errlen, "%s: a list ends with ','",
			    f->name);
			return -1;
		}
	}
}

/* Whether some month of the expression has some day of its day-of-month. */
static bool
cron_some_day(const struct cron *c)
{
	static const int days[13] = { 0, 31, 29, 31, 30, 31, 30, 31, 31, 30,
	    31, 30, 31 };

	for (int m = 1; m <= 12; m++)
		for (int d = 1; (c->month >> m & 1) && d <= days[m]; d++)
			if (c->mday >> d & 1)
				return true;
	return false;
}

/* The five fields of text, or a macro's; 0, or -1 and err. */
int
cron_parse(struct cron *c, const char *text, char *err, size_t errlen)
{
	char buf[CRON_TEXT_MAX + 1], *field[6];
	uint64_t bits[5];
	bool star[5];
	size_t n = 0;

	memset(c, 0, sizeof(*c));
	while (isspace((unsigned char)*text))
		text++;
	if (strlen(text) > CRON_TEXT_MAX) {
		snprintf(err, errlen, "longer than %d characters",
		    CRON_TEXT_MAX);
		return -1;
	}
	if (*text == '@') {
		size_t len = strcspn(text, " \t\n");
		for (size_t i = 0; i < sizeof(cron_macros) /
		    sizeof(cron_macros[0]); i++)
			if (strlen(cron_macros[i].name) == len &&
			    strncasecmp(text, cron_macros[i].name, len) == 0 &&
			    text[len + strspn(text + len, " \t\n")] == '\0')
				return cron_parse(c, cron_macros[i].fields,
				    err, errlen);
		snprintf(err, errlen, "%.*s is not one of @yearly, @annually, "
		    "@monthly, @weekly, @daily, @midnight, @hourly",
		    (int)(len > 20 ? 20 : len), text);
		return -1;
	}
	memcpy(buf, text, strlen(text) + 1);
	for (char *save = NULL, *t = strtok_r(buf, " \t\n", &save);
	    t != NULL && n < 6; t = strtok_r(NULL, " \t\n", &save))
		field[n++] = t;
	if (n != 5) {
		snprintf(err, errlen, "%s five fields (minute hour "
		    "day-of-month month day-of-week), or @daily and the like",
		    n < 5 ? "expected" : "more than");
		return -1;
	}
	for (size_t i = 0; i < 5; i++)
		if (cron_list(&cron_fields[i], field[i], &bits[i], &star[i],
		    err, errlen) == -1)
			return -1;
	c->minute = bits[CRON_MINUTE];
	c->hour = (uint32_t)bits[CRON_HOUR];
	c->mday = (uint32_t)bits[CRON_MDAY];
	c->month = (uint16_t)bits[CRON_MONTH];
	/* 7 is Sunday too. */
	c->wday = (uint8_t)((bits[CRON_WDAY] | bits[CRON_WDAY] >> 7) & 0x7f);
	c->mday_star = star[CRON_MDAY];
	c->wday_star = star[CRON_WDAY];
	/* With both restricted, any day of the week will do. */
	if ((c->mday_star || c->wday_star) && !cron_some_day(c)) {
		snprintf(err, errlen, "never matches: no month of %s has a "
		    "day of %s", field[CRON_MONTH], field[CRON_MDAY]);
		return -1;
	}
	return 0;
}

/* Whether the day of tm matches, by Vixie cron's rule. */
bool
cron_day_matches(const struct cron *c, const struct tm *tm)
{
	bool mday = c->mday >> tm->tm_mday & 1, wday = c->wday >> tm->tm_wday & 1;

	if (!(c->month >> (tm->tm_mon + 1) & 1))
		return false;
	return c->mday_star || c->wday_star ? mday && wday : mday || wday;
}

/*
 * The first wall-clock minute after wall that matches, or -1 when none
 * does within CRON_SEARCH_YEARS.  Each turn moves to the start of the
 * next month, day, hour or minute that could match; timegm normalises
 * the fields (the 32nd of a month is the 1st of the next, and so on).
 */
int64_t
cron_next(const struct cron *c, int64_t wall)
{
	time_t t = (time_t)(wall - (wall % 60 + 60) % 60 + 60);
	struct tm tm;
	int limit;

	if (gmtime_r(&t, &tm) == NULL)
		return -1;
	limit = tm.tm_year + CRON_SEARCH_YEARS;
	while (tm.tm_year <= limit) {
		if (!(c->month >> (tm.tm_mon + 1) & 1)) {
			tm.tm_mon++;
			tm.tm_mday = 1;
			tm.tm_hour = tm.tm_min = 0;
		} else if (!cron_day_matches(c, &tm)) {
			tm.tm_mday++;
			tm.tm_hour = tm.tm_min = 0;
		} else if (!(c->hour >> tm.tm_hour & 1)) {
			tm.tm_hour++;
			tm.tm_min = 0;
		} else if (!(c->minute >> tm.tm_min & 1)) {
			tm.tm_min++;
		} else
			return (int64_t)timegm(&tm);
		tm.tm_sec = 0;
		tm.tm_isdst = 0;
		if ((t = timegm(&tm)) == (time_t)-1 || gmtime_r(&t, &tm) == NULL)
			return -1;
	}
	return -1;
}
