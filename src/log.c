/*
 * log.c: all of rowq's output to standard error.
 *
 * Under systemd (JOURNAL_STREAM names our stderr) each line goes to the
 * journal as a structured entry, with the fields of log_line_fields where
 * they are known (QUEUE=, WORKER=, ROW_KEY=, ATTEMPT=, OUTCOME=,
 * DURATION_USEC=, GENERATION=, HOST=, TRACE_ID=), so that `journalctl -u
 * rowq QUEUE=email OUTCOME=failed` finds what failed; if the journal's
 * socket cannot take it, the line goes to stderr with a <N> syslog
 * priority and no timestamp, since the journal adds its own.  Elsewhere,
 * log_format: json writes each line as one JSON object with the same
 * fields; otherwise `run` adds a timestamp and interactive commands print
 * bare lines.  Each process names itself once (log_procinit), and a
 * worker names the row it is working on (log_set_row, log_set_attempt),
 * so that every line about a row says queue, worker and key; the line
 * that says how a row ended carries its outcome (log_set_outcome).
 * Control characters in a line are escaped (log_escape), in every
 * format: one call logs one line.
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
static char	log_attempt[16];	/* ATTEMPT= of the row's lines */
static char	log_generation[16];	/* GENERATION= of a worker's lines */
static char	log_host[300];		/* HOST=: the database this process uses */
static char	log_trace[40];		/* TRACE_ID= of the row's lines */
static char	log_outcome[16];	/* OUTCOME= of the next line only */
static char	log_duration[24];	/* DURATION_USEC= of the next line only */
static bool	log_json;		/* log_format: json, off the journal */
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

/* log_format: json: one JSON object a line, where there is no journal. */
void
log_set_json(bool on)
{
	log_json = on && !log_journal;
}

void
log_set_attempt(int attempt)
{
	if (attempt <= 0)
		log_attempt[0] = '\0';
	else
		snprintf(log_attempt, sizeof(log_attempt), "%d", attempt);
}

void
log_set_generation(int generation)
{
	snprintf(log_generation, sizeof(log_generation), "%d", generation);
}

void
log_set_host(const char *host)
{
	snprintf(log_host, sizeof(log_host), "%s", host ? host : "");
}

/* The trace id of a W3C traceparent (32 hex digits); NULL: none. */
void
log_set_trace(const char *trace_id)
{
	snprintf(log_trace, sizeof(log_trace), "%s", trace_id ? trace_id : "");
}

/*
 * How the row ended, for the next line logged only: done, retry, failed,
 * skipped, ...  duration_us < 0: no duration.
 */
void
log_set_outcome(const char *outcome, int64_t duration_us)
{
	snprintf(log_outcome, sizeof(log_outcome), "%s", outcome);
	if (duration_us < 0)
		log_duration[0] = '\0';
	else
		snprintf(log_duration, sizeof(log_duration), "%lld",
		    (long long)duration_us);
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
		log_attempt[0] = log_trace[0] = '\0';
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
log_add(struct log_field *f, size_t *n, size_t max, const char *name,
    const char *value)
{
	if (value != NULL && value[0] != '\0' && *n < max)
		f[(*n)++] = (struct log_field){ name, value };
}

/*
 * The fields of a line, in the journal's names: what the journal gets,
 * and what log_format: json writes.  prio is the line's text priority
 * ("6"), message the line without timestamp.  The values point into
 * log.c's own state and the arguments, valid until the next log call.
 */
size_t
log_line_fields(struct log_field *f, size_t max, const char *prio,
    const char *message)
{
	const char *queue = log_about_queue[0] ? log_about_queue : log_queue;
	const char *worker = log_about_worker[0] ? log_about_worker : log_worker;
	size_t n = 0;

	log_add(f, &n, max, "MESSAGE", message);
	log_add(f, &n, max, "PRIORITY", prio);
	log_add(f, &n, max, "SYSLOG_IDENTIFIER", "rowq");
	log_add(f, &n, max, "QUEUE", queue);
	log_add(f, &n, max, "WORKER", worker);
	log_add(f, &n, max, "ROW_KEY", log_rowkey);
	/* KEY= is what rowq 0.1's lines carried: journalctl filters keep working. */
	log_add(f, &n, max, "KEY", log_rowkey);
	log_add(f, &n, max, "ATTEMPT", log_attempt);
	log_add(f, &n, max, "OUTCOME", log_outcome);
	log_add(f, &n, max, "DURATION_USEC", log_duration);
	log_add(f, &n, max, "GENERATION", log_generation);
	log_add(f, &n, max, "HOST", log_host);
	log_add(f, &n, max, "TRACE_ID", log_trace);
	return n;
}

/*
 * One journal entry for a line (without its newline).  Returns -1 when the
 * journal did not take it, and gives up on the native protocol for good:
 * the line and those after it go to stderr.
 */
static int
log_send_native(int prio, const char *msg, size_t msglen)
{
	struct log_field f[LOG_FIELDS_MAX];
	struct iovec iov[LOG_FIELDS_MAX];
	struct buf m = { 0 }, text[LOG_FIELDS_MAX];
	char p[16];
	size_t n;
	int r;

	buf_append(&m, msg, msglen);
	snprintf(p, sizeof(p), "%d", prio);
	n = log_line_fields(f, LOG_FIELDS_MAX, p, m.data);
	for (size_t i = 0; i < n; i++) {
		text[i] = (struct buf){ 0 };
		buf_printf(&text[i], "%s=%s", f[i].name, f[i].value);
		iov[i] = (struct iovec){ .iov_base = text[i].data,
		    .iov_len = text[i].len };
	}
	r = sd_journal_sendv(iov, (int)n);
	for (size_t i = 0; i < n; i++)
		buf_free(&text[i]);
	buf_free(&m);
	if (r < 0)
		log_native = false;
	return r < 0 ? -1 : 0;
}

/* Fields whose values are numbers in the JSON line. */
static bool
log_numeric(const char *name)
{
	return strcmp(name, "PRIORITY") == 0 || strcmp(name, "WORKER") == 0 ||
	    strcmp(name, "ATTEMPT") == 0 || strcmp(name, "DURATION_USEC") == 0 ||
	    strcmp(name, "GENERATION") == 0;
}

/*
 * log_format: json: {"TIMESTAMP":"2026-12-01T03:00:00.123Z","MESSAGE":...}
 * and a newline, in one write.
 */
static void
log_write_json(int prio, const char *msg, size_t msglen)
{
	struct log_field f[LOG_FIELDS_MAX];
	struct buf m = { 0 }, out = { 0 };
	struct timespec ts;
	struct tm tm;
	char p[16], when[40];
	size_t n;

	buf_append(&m, msg, msglen);
	utf8_sanitize(&m);
	snprintf(p, sizeof(p), "%d", prio);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	buf_printf(&out, "{\"TIMESTAMP\":\"%s.%03ldZ\"", when,
	    ts.tv_nsec / 1000000);
	n = log_line_fields(f, LOG_FIELDS_MAX, p, m.data);
	for (size_t i = 0; i < n; i++) {
		buf_printf(&out, ",\"%s\":", f[i].name);
		if (log_numeric(f[i].name))
			buf_puts(&out, f[i].value);
		else
			json_string(&out, f[i].value, strlen(f[i].value));
	}
	buf_puts(&out, "}\n");
	/* One write per line, so that lines from many workers never interleave. */
	ssize_t r = write(STDERR_FILENO, out.data, out.len);
	(void)r;
	buf_free(&m);
	buf_free(&out);
}

/*
 * s into out (len bytes, its NUL included) with its control characters
 * escaped: \n, \r, \t, and \xNN for the others and DEL, and the C1
 * controls of UTF-8 (U+0080 to U+009F, which some terminals obey) as
 * \u0080 and on.  A value that a row, a handler or an operator gave (a
 * key, an error, a pause reason) cannot then make a line of its own,
 * whatever the log's format, nor move a terminal's cursor.  Returns the
 * bytes written, cut short where out ends.
 */
size_t
log_escape(char *out, size_t len, const char *s)
{
	size_t o = 0;

	if (len == 0)
		return 0;
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		char e[8];
		size_t k;
		if (c == '\n' || c == '\r' || c == '\t')
			snprintf(e, sizeof(e), "\\%c", c == '\n' ? 'n' :
			    c == '\r' ? 'r' : 't');
		else if (c < 0x20 || c == 0x7f)
			snprintf(e, sizeof(e), "\\x%02x", c);
		else if (c == 0xc2 && (unsigned char)s[1] >= 0x80 &&
		    (unsigned char)s[1] <= 0x9f)
			snprintf(e, sizeof(e), "\\u%04x", (unsigned char)*++s);
		else {
			e[0] = (char)c;
			e[1] = '\0';
		}
		k = strlen(e);
		if (o + k >= len)
			break;
		memcpy(out + o, e, k);
		o += k;
	}
	out[o] = '\0';
	return o;
}

static void
log_vwrite(int prio, const char *errstr, const char *fmt, va_list ap)
{
	char line[4096], msg[4096];
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
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < sizeof(line))
		n += log_escape(line + n, sizeof(line) - n, msg);
	if (errstr != NULL && n + 2 < sizeof(line)) {
		n += (size_t)snprintf(line + n, sizeof(line) - n, ": ");
		n += log_escape(line + n, sizeof(line) - n, errstr);
	}
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	if (log_native && log_send_native(prio, line + body, n - body) == 0) {
		log_outcome[0] = log_duration[0] = '\0';
		errno = saved;
		return;
	}
	if (log_json) {
		log_write_json(prio, line + body, n - body);
		log_outcome[0] = log_duration[0] = '\0';
		errno = saved;
		return;
	}
	log_outcome[0] = log_duration[0] = '\0';
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
	else	/* the outcome was for this line alone */
		log_outcome[0] = log_duration[0] = '\0';
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
