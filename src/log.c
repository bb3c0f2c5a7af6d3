/*
 * log.c: all of rowq's output to standard error.
 *
 * Under systemd (JOURNAL_STREAM names our stderr) every line starts with a
 * <N> syslog priority and carries no timestamp, since the journal adds its
 * own; otherwise `run` adds a timestamp and interactive commands print bare
 * lines.  Each process names itself once (log_procinit), and a worker names
 * the row it is working on (log_set_row), so that every line about a row
 * says queue, worker and key.
 */
#include "rowq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
	PRIO_ERR = 3,
	PRIO_WARNING = 4,
	PRIO_INFO = 6,
	PRIO_DEBUG = 7,
};

static char	log_name[96] = "rowq";
static char	log_rowkey[160];
static bool	log_journal;
static bool	log_timestamps;
static bool	log_debugging;

/* True when stderr is the stream JOURNAL_STREAM ("DEV:INODE") describes. */
static bool
log_stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (e == NULL || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) == -1)
		return false;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *procname)
{
	log_journal = log_stderr_is_journal();
	snprintf(log_name, sizeof(log_name), "%s", procname);
}

void
log_procinit(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(log_name, sizeof(log_name), fmt, ap);
	va_end(ap);
	log_rowkey[0] = '\0';
}

void
log_set_timestamps(bool on)
{
	log_timestamps = on && !log_journal;
}

void
log_set_debug(bool on)
{
	log_debugging = on;
}

/* Keys come from the database: keep them printable and short in the log. */
void
log_set_row(const char *key)
{
	size_t i, o = 0;

	if (key == NULL) {
		log_rowkey[0] = '\0';
		return;
	}
	for (i = 0; key[i] != '\0' && o < sizeof(log_rowkey) - 4; i++) {
		unsigned char c = (unsigned char)key[i];
		log_rowkey[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	if (key[i] != '\0') {
		memcpy(log_rowkey + o, "...", 3);
		o += 3;
	}
	log_rowkey[o] = '\0';
}

static void
log_vwrite(int prio, const char *errstr, const char *fmt, va_list ap)
{
	char line[4096];
	size_t n = 0;
	int saved = errno;

	if (log_journal)
		n += (size_t)snprintf(line, sizeof(line), "<%d>", prio);
	if (log_timestamps) {
		struct timespec ts;
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		n += strftime(line + n, sizeof(line) - n, "%Y-%m-%d %H:%M:%S", &tm);
		n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ld ",
		    ts.tv_nsec / 1000000);
	}
	if (n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s: ", log_name);
	if (log_rowkey[0] != '\0' && n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, "row %s: ",
		    log_rowkey);
	if (n < sizeof(line))
		n += (size_t)vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (errstr != NULL && n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, ": %s", errstr);
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line, so that lines from many workers never interleave. */
	ssize_t r = write(STDERR_FILENO, line, n);
	(void)r;
	errno = saved;
}

#define LOG_BODY(prio, errstr)				\
	do {						\
		va_list ap;				\
		va_start(ap, fmt);			\
		log_vwrite((prio), (errstr), fmt, ap);	\
		va_end(ap);				\
	} while (0)

void
log_error(const char *fmt, ...)
{
	LOG_BODY(PRIO_ERR, NULL);
}

void
log_warn(const char *fmt, ...)
{
	const char *e = strerror(errno);

	LOG_BODY(PRIO_WARNING, e);
}

void
log_warnx(const char *fmt, ...)
{
	LOG_BODY(PRIO_WARNING, NULL);
}

void
log_info(const char *fmt, ...)
{
	LOG_BODY(PRIO_INFO, NULL);
}

void
log_debug(const char *fmt, ...)
{
	if (log_debugging)
		LOG_BODY(PRIO_DEBUG, NULL);
}

void
fatal(const char *fmt, ...)
{
	const char *e = strerror(errno);

	LOG_BODY(PRIO_ERR, e);
	exit(ROWQ_EXIT_FAILURE);
}

void
fatalx(const char *fmt, ...)
{
	LOG_BODY(PRIO_ERR, NULL);
	exit(ROWQ_EXIT_FAILURE);
}
