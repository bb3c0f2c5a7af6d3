/*
 * log.c: all of rowq's output to standard error.
 *
 * Under systemd (JOURNAL_STREAM names our stderr) each line goes to the
 * journal as a structured entry, with QUEUE=, WORKER= and KEY= fields where
 * they are known, so that `journalctl -u rowq QUEUE=email KEY=8841` finds a
 * row's story; if the journal's socket cannot take it, the line goes to
 * stderr with a <N> syslog priority and no timestamp, since the journal
 * adds its own.  Otherwise `run` adds a timestamp and interactive commands
 * print bare lines.  Each process names itself once (log_procinit), and a
 * worker names the row it is working on (log_set_row), so that every line
 * about a row says queue, worker and key.
 */
#include "rowq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Entries from log.c would otherwise all say CODE_FILE=src/log.c. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

enum {
	PRIO_ERR = 3,
	PRIO_WARNING = 4,
	PRIO_INFO = 6,
	PRIO_DEBUG = 7,
};

static char	log_name[96] = "rowq";
static char	log_rowkey[160];
static char	log_queue[96];		/* QUEUE= of this process's lines */
static char	log_worker[16];		/* WORKER= */
static char	log_about_queue[96];	/* the supervisor, about a worker */
static char	log_about_worker[16];
static bool	log_journal;
static bool	log_native;		/* sd_journal_sendv still works */
static bool	log_timestamps;
static bool	log_debugging;
static unsigned long log_warnings;	/* said so far, for check --strict */
static char	*log_capture_buf;
static size_t	 log_capture_len;

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
	struct stat st;

	log_journal = log_stderr_is_journal();
	/* sd_journal_sendv drops entries quietly when there is no socket. */
	log_native = log_journal &&
	    stat("/run/systemd/journal/socket", &st) == 0 && S_ISSOCK(st.st_mode);
	snprintf(log_name, sizeof(log_name), "%s", procname);
}

/*
 * "email/2" is a worker's name: its queue and number become the QUEUE= and
 * WORKER= fields of everything it logs.
 */
void
log_procinit(const char *fmt, ...)
{
	va_list ap;
	char *slash;

	va_start(ap, fmt);
	vsnprintf(log_name, sizeof(log_name), fmt, ap);
	va_end(ap);
	log_rowkey[0] = '\0';
	log_queue[0] = log_worker[0] = '\0';
	log_about_queue[0] = log_about_worker[0] = '\0';
	slash = strrchr(log_name, '/');
	if (slash != NULL && slash[1] != '\0' &&
	    strspn(slash + 1, "0123456789") == strlen(slash + 1)) {
		snprintf(log_queue, sizeof(log_queue), "%.*s",
		    (int)(slash - log_name), log_name);
		snprintf(log_worker, sizeof(log_worker), "%s", slash + 1);
	}
}

/* The supervisor's lines about one worker carry its fields too. */
void
log_set_about(const char *queue, int worker)
{
	if (queue == NULL) {
		log_about_queue[0] = log_about_worker[0] = '\0';
		return;
	}
	snprintf(log_about_queue, sizeof(log_about_queue), "%s", queue);
	snprintf(log_about_worker, sizeof(log_about_worker), "%d", worker);
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

void
log_capture(char *buf, size_t len)
{
	log_capture_buf = len > 0 ? buf : NULL;
	log_capture_len = len;
	if (log_capture_buf != NULL)
		log_capture_buf[0] = '\0';
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

/* A field for sd_journal_sendv, "NAME=value", kept in buf. */
static void
log_field(struct iovec *iov, int *n, char *buf, size_t len, const char *name,
    const char *value)
{
	int k;

	if (value == NULL || value[0] == '\0')
		return;
	k = snprintf(buf, len, "%s=%s", name, value);
	if (k < 0)
		return;
	iov[*n].iov_base = buf;
	iov[*n].iov_len = (size_t)k < len ? (size_t)k : len - 1;
	(*n)++;
}

/*
 * One journal entry for a line (without its newline).  Returns -1 when the
 * journal did not take it, and gives up on the native protocol for good:
 * the line and those after it go to stderr.
 */
static int
log_send_native(int prio, const char *msg, size_t msglen)
{
	char p[16], id[] = "SYSLOG_IDENTIFIER=rowq";
	char q[128], w[32], k[192];
	struct buf m = { 0 };
	struct iovec iov[6];
	int n = 0, r;
	const char *queue = log_about_queue[0] ? log_about_queue : log_queue;
	const char *worker = log_about_worker[0] ? log_about_worker : log_worker;

	buf_puts(&m, "MESSAGE=");
	buf_append(&m, msg, msglen);
	iov[n++] = (struct iovec){ .iov_base = m.data, .iov_len = m.len };
	snprintf(p, sizeof(p), "PRIORITY=%d", prio);
	iov[n++] = (struct iovec){ .iov_base = p, .iov_len = strlen(p) };
	iov[n++] = (struct iovec){ .iov_base = id, .iov_len = strlen(id) };
	log_field(iov, &n, q, sizeof(q), "QUEUE", queue);
	log_field(iov, &n, w, sizeof(w), "WORKER", worker);
	log_field(iov, &n, k, sizeof(k), "KEY", log_rowkey);
	r = sd_journal_sendv(iov, n);
	buf_free(&m);
	if (r < 0)
		log_native = false;
	return r < 0 ? -1 : 0;
}

static void
log_vwrite(int prio, const char *errstr, const char *fmt, va_list ap)
{
	char line[4096];
	size_t n = 0, body;
	int saved = errno;
	va_list copy;

	if (prio == PRIO_WARNING)
		log_warnings++;
	if (log_capture_buf != NULL && log_capture_buf[0] == '\0' &&
	    prio <= PRIO_ERR) {
		va_copy(copy, ap);
		vsnprintf(log_capture_buf, log_capture_len, fmt, copy);
		va_end(copy);
	}
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
	body = n;
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
	if (log_native && log_send_native(prio, line + body, n - body) == 0) {
		errno = saved;
		return;
	}
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

/* How many warnings this process has logged. */
unsigned long
log_warning_count(void)
{
	return log_warnings;
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
