/*
 * duration.c: durations as people write them in a configuration file.
 *
 * A duration is either a bare number of seconds ("30") or one or more
 * number-and-unit parts from the largest unit down ("250ms", "5s", "10m",
 * "1h30m", "2d3h").  Units are d, h, m, s and ms, lower case, each used at
 * most once and in that order, with nothing between a number and its unit
 * and no signs or spaces anywhere: "5 s", "-5s" and "5S" are not durations.
 * A number may have a decimal part ("1.5s", "0.5h") as long as the result
 * is a whole number of milliseconds, so that nothing is silently rounded.
 * Durations are capped at DURATION_MAX_MS, a hundred years: anything longer
 * is a typo, and the cap keeps every sum and product below far from
 * overflowing an int64_t.
 */
#include "rowq.h"

#include <string.h>

#define DURATION_MAX_MS	(100LL * 365 * 24 * 3600 * 1000)

struct duration_unit {
	const char	*name;
	int64_t		 ms;
};

/* Largest first: parsing walks down the table, formatting too. */
static const struct duration_unit duration_units[] = {
	{ "d", 24LL * 3600 * 1000 },
	{ "h", 3600LL * 1000 },
	{ "m", 60LL * 1000 },
	{ "s", 1000 },
	{ "ms", 1 },
};

#define DURATION_NUNITS	(sizeof(duration_units) / sizeof(duration_units[0]))

static bool
duration_isdigit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Read "DIGITS[.DIGITS]" at *sp into a whole part and a fraction kept as
 * numerator/denominator.  Returns -1 when there is no number or it is too
 * large to be part of any valid duration.
 */
static int
duration_number(const char **sp, int64_t *whole, int64_t *num, int64_t *den)
{
	const char *s = *sp;

	if (!duration_isdigit(*s))
		return -1;
	*whole = 0;
	for (; duration_isdigit(*s); s++) {
		*whole = *whole * 10 + (*s - '0');
		if (*whole > DURATION_MAX_MS)
			return -1;
	}
	*num = 0;
	*den = 1;
	if (*s == '.') {
		s++;
		if (!duration_isdigit(*s))
			return -1;
		for (; duration_isdigit(*s); s++) {
			/* Nine decimals at most: keeps num * unit in range. */
			if (*den >= 1000000000LL)
				return -1;
			*num = *num * 10 + (*s - '0');
			*den *= 10;
		}
	}
	*sp = s;
	return 0;
}

/*
 * Index of the unit at s, or -1.  A unit ends where the letters do, so
 * that "5m" is minutes, "5ms" milliseconds and "5min" nothing.
 */
static int
duration_unit_at(const char *s, size_t *len)
{
	size_t i, n;

	for (i = 0; i < DURATION_NUNITS; i++) {
		n = strlen(duration_units[i].name);
		if (strncmp(s, duration_units[i].name, n) == 0 &&
		    !(s[n] >= 'a' && s[n] <= 'z')) {
			*len = n;
			return (int)i;
		}
	}
	return -1;
}

/* whole.num/den times unit, if it is a whole number of ms within the cap. */
static int
duration_scale(int64_t whole, int64_t num, int64_t den, int64_t unit,
    int64_t *ms)
{
	if (whole > DURATION_MAX_MS / unit)
		return -1;
	/* num < den <= 1e9 and unit <= 8.64e7: the product fits. */
	if ((num * unit) % den != 0)
		return -1;
	*ms = whole * unit + num * unit / den;
	return *ms > DURATION_MAX_MS ? -1 : 0;
}

int
duration_parse(const char *s, int64_t *msp)
{
	int64_t whole, num, den, part, total = 0;
	int last = -1, u;
	size_t len;

	if (s == NULL || *s == '\0')
		return -1;
	if (duration_number(&s, &whole, &num, &den) == -1)
		return -1;
	if (*s == '\0') {
		/* A bare number: seconds. */
		if (duration_scale(whole, num, den, 1000, &total) == -1)
			return -1;
		*msp = total;
		return 0;
	}
	for (;;) {
		if ((u = duration_unit_at(s, &len)) == -1 || u <= last)
			return -1;
		if (duration_scale(whole, num, den, duration_units[u].ms,
		    &part) == -1)
			return -1;
		total += part;
		if (total > DURATION_MAX_MS)
			return -1;
		last = u;
		s += len;
		if (*s == '\0')
			break;
		if (duration_number(&s, &whole, &num, &den) == -1)
			return -1;
	}
	*msp = total;
	return 0;
}

/*
 * The largest unit that fits and the next one down, truncated, so that
 * status lines stay short: 3m12s, 2d3h, 1h (for 1h0m), 1s500ms, 250ms.
 * duration_parse reads back whatever it prints from 0 to the cap (past
 * it, "36501d" is no duration).  A negative
 * value (a clock that went backwards) is printed with a minus sign.
 */
void
duration_format(int64_t ms, char *out, size_t len)
{
	const char *sign = "";
	uint64_t v;
	size_t i;

	if (len == 0)
		return;
	if (ms < 0) {
		sign = "-";
		v = (uint64_t)-(ms + 1) + 1;
	} else
		v = (uint64_t)ms;
	if (v == 0) {
		snprintf(out, len, "0s");
		return;
	}
	for (i = 0; i < DURATION_NUNITS; i++) {
		uint64_t unit = (uint64_t)duration_units[i].ms;
		if (v < unit)
			continue;
		uint64_t hi = v / unit;
		if (i + 1 < DURATION_NUNITS) {
			uint64_t lounit = (uint64_t)duration_units[i + 1].ms;
			uint64_t lo = v % unit / lounit;
			if (lo != 0) {
				snprintf(out, len, "%s%llu%s%llu%s", sign,
				    (unsigned long long)hi,
				    duration_units[i].name,
				    (unsigned long long)lo,
				    duration_units[i + 1].name);
				return;
			}
		}
		snprintf(out, len, "%s%llu%s", sign, (unsigned long long)hi,
		    duration_units[i].name);
		return;
	}
}
