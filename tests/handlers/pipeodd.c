/*
 * pipeodd: a pipe handler for tests of the protocol's edges.  Rows are
 * read with read(2), not stdio, so that what it does between reads is
 * exactly what it says; the row's key is the number after "id":.
 *
 *   pipeodd stderr-flood LINES LOG
 *       answer "ok KEY", then write LINES lines to stderr, one write(2)
 *       each, pausing 10 ms every 500 lines; append "KEY flooded" to LOG
 *       when done
 *   pipeodd early LOG
 *       answer "ok KEY" after the first read of a row, before its
 *       newline has arrived, wait 200 ms (so that rowq sees the answer
 *       while the row is still being written), then read the rest of
 *       the line; append
 *       "KEY ids=N" to LOG, N being how many "id": the line held (more
 *       than 1: two rows were glued into one line)
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
append(const char *path, const char *line)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	size_t n = strlen(line);

	if (fd == -1 || write(fd, line, n) != (ssize_t)n)
		exit(111);
	close(fd);
}

static void
say(int fd, const char *s)
{
	size_t n = strlen(s);

	if (write(fd, s, n) != (ssize_t)n)
		exit(112);
}

static long
key_of(const char *s, size_t n)
{
	const char *p = memmem(s, n, "\"id\":", 5);

	return p ? atol(p + 5) : -1;
}

static int
count_ids(const char *s, size_t n)
{
	int k = 0;
	const char *p;

	while ((p = memmem(s, n, "\"id\":", 5)) != NULL) {
		k++;
		n -= (size_t)(p + 5 - s);
		s = p + 5;
	}
	return k;
}

static void
flood(long lines)
{
	char line[128];

	for (long i = 0; i < lines; i++) {
		snprintf(line, sizeof(line), "chatter line %ld of %ld, "
		    "written between rows\n", i + 1, lines);
		say(2, line);
		if (i % 500 == 499) {
			struct timespec ts = { 0, 10 * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *log = argv[argc - 1];
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap), out[64];
	ssize_t n;

	if (buf == NULL)
		return 111;
	for (;;) {
		char *nl;
		bool answered = false;
		long key = -1;

		/* One line: the first read may be answered at once. */
		while ((nl = memchr(buf, '\n', len)) == NULL) {
			if (len == cap && (buf = realloc(buf, cap *= 2)) == NULL)
				return 111;
			if ((n = read(0, buf + len, cap - len)) <= 0)
				return 0;
			len += (size_t)n;
			if (strcmp(mode, "early") == 0 && !answered &&
			    (key = key_of(buf, len)) >= 0) {
				snprintf(out, sizeof(out), "ok %ld\n", key);
				say(1, out);
				answered = true;
				/* Let rowq see the answer with the row unwritten. */
				struct timespec ts = { 0, 200 * 1000000L };
				nanosleep(&ts, NULL);
			}
		}
		size_t line_len = (size_t)(nl - buf) + 1;
		if (key < 0)
			key = key_of(buf, line_len);
		if (strcmp(mode, "early") == 0) {
			if (!answered) {
				snprintf(out, sizeof(out), "ok %ld\n", key);
				say(1, out);
			}
			snprintf(out, sizeof(out), "%ld ids=%d\n", key,
			    count_ids(buf, line_len));
			append(log, out);
		} else if (strcmp(mode, "stderr-flood") == 0) {
			snprintf(out, sizeof(out), "ok %ld\n", key);
			say(1, out);
			flood(atol(argv[2]));
			snprintf(out, sizeof(out), "%ld flooded\n", key);
			append(log, out);
		} else
			return 2;
		memmove(buf, buf + line_len, len - line_len);
		len -= line_len;
	}
}
