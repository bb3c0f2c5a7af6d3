/*
 * tz.c: time zones, from the system's tz database through libc.
 *
 * A zone is used by setting TZ and calling tzset, after which
 * localtime_r converts in it; tz_restore puts the process's own zone
 * back, so that its log lines keep their time.  Only processes that
 * compute slots switch (the scheduler child, the commands): never the
 * supervisor.
 *
 * The wall clock of an instant is localtime_r's, read as if it were UTC
 * (the instant plus tm_gmtoff).  The instant of a wall-clock time is its
 * first occurrence: one of the offsets in effect around it gives an
 * instant that localtime_r reads back as that time, and where two do
 * (the hour a fall-back repeats) the earlier is taken.  Where none does
 * (the hour a spring-forward skips), the time does not exist, and its
 * instant is the first one after it: the transition itself, found by
 * bisection between the two offsets' readings, in which the wall clock
 * only goes up.
 */
#include "rowq.h"
#include "schedule.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TZ_DIR_DEFAULT	"/usr/share/zoneinfo"

static char	 tz_current[TZ_NAME_MAX + 2];	/* "" : the process's own */
static char	*tz_own;			/* TZ as the process had it */
static bool	 tz_own_saved;

/* Where libc looks for zones: $TZDIR, else the default. */
static const char *
tz_dir(void)
{
	const char *d = getenv("TZDIR");

	return d != NULL && d[0] != '\0' ? d : TZ_DIR_DEFAULT;
}

/*
 * Whether name is a zone of the tz database: a relative file name under
 * its directory that holds a TZif file.  libc would take any other name
 * for UTC without a word, so it is checked here, at load.
 */
int
tz_check(const char *name, char *err, size_t errlen)
{
	char path[1024], magic[4];
	size_t n = strlen(name);
	int fd;
	ssize_t got;

	if (n == 0 || n > TZ_NAME_MAX || name[0] == '/' ||
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789/_+-") != n || strstr(name, "..") != NULL ||
	    strstr(name, "//") != NULL || name[n - 1] == '/') {
		snprintf(err, errlen, "not a time zone name such as "
		    "Europe/Paris or UTC");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", tz_dir(), name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1) {
		snprintf(err, errlen, "no such time zone in %s (%s)", tz_dir(),
		    strerror(errno));
		return -1;
	}
	got = read(fd, magic, sizeof(magic));
	close(fd);
	if (got != (ssize_t)sizeof(magic) || memcmp(magic, "TZif", 4) != 0) {
		snprintf(err, errlen, "%s is not a time zone file", path);
		return -1;
	}
	return 0;
}

/* From now on localtime_r converts in zone (checked with tz_check). */
void
tz_use(const char *zone)
{
	char tz[TZ_NAME_MAX + 2];

	if (!tz_own_saved) {
		const char *own = getenv("TZ");
		tz_own = own != NULL ? xstrdup(own) : NULL;
		tz_own_saved = true;
	}
	snprintf(tz, sizeof(tz), ":%s", zone);
	if (strcmp(tz, tz_current) == 0)
		return;
	setenv("TZ", tz, 1);
	tzset();
	memcpy(tz_current, tz, sizeof(tz));
}

/* The process's own zone again, as it was before the first tz_use. */
void
tz_restore(void)
{
	if (tz_current[0] == '\0')
		return;
	if (tz_own != NULL)
		setenv("TZ", tz_own, 1);
	else
		unsetenv("TZ");
	tzset();
	tz_current[0] = '\0';
}

/* The wall clock at instant t, in the zone in use. */
int64_t
tz_wall(int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (localtime_r(&tt, &tm) == NULL)
		return t;
	return t + tm.tm_gmtoff;
}

/* The zone's offset from UTC at instant t, in seconds. */
static int64_t
tz_offset(int64_t t)
{
	return tz_wall(t) - t;
}

/*
 * The instant of wall-clock time wall in the zone in use: its first
 * occurrence, or in a gap the first instant after it (see the top).  The
 * offsets are sampled a day either side, which covers every zone whose
 * transitions are more than a day apart.
 */
int64_t
tz_instant(int64_t wall)
{
	int64_t offs[3] = { tz_offset(wall - 86400), tz_offset(wall),
	    tz_offset(wall + 86400) };
	int64_t best = INT64_MAX, lo = INT64_MAX, hi = INT64_MIN;

	for (int i = 0; i < 3; i++) {
		int64_t c = wall - offs[i];
		if (tz_wall(c) == wall && c < best)
			best = c;
		if (c < lo)
			lo = c;
		if (c > hi)
			hi = c;
	}
	if (best != INT64_MAX)
		return best;
	/* A gap: the wall clock is below wall at lo, past it at hi. */
	if (tz_wall(lo) >= wall || tz_wall(hi) < wall)
		return hi;
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		if (tz_wall(mid) >= wall)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/*
 * "YYYY-MM-DD HH:MM:SS" of wall-clock time wall (as timegm reads it),
 * the form a DATETIME takes; out has room for TZ_TIME_LEN + 1 bytes.
 */
void
tz_format(int64_t wall, char *out, size_t len)
{
	time_t t = (time_t)wall;
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(out, len, "@%lld", (long long)wall);
}
