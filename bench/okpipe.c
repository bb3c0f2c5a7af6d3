/*
 * okpipe.c: the no-op pipe handler of the benchmark.  Reads one JSON line
 * per row and answers "ok" at once, so that what is measured is rowq.
 *
 *	okpipe [-s MS] [STAMPFILE]
 *
 * With STAMPFILE, each row's arrival time (CLOCK_REALTIME, microseconds)
 * and the row's "id" are appended to it, one line per row, for the
 * pickup-latency measurement.  With -s, each row takes MS milliseconds
 * (a handler that waits for something, as bench/limits.sh needs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	static char buf[1 << 16];
	FILE *stamps = NULL;
	size_t have = 0;
	ssize_t n;
	long sleep_ms = 0;

	if (argc > 2 && strcmp(argv[1], "-s") == 0) {
		sleep_ms = atol(argv[2]);
		argc -= 2;
		argv += 2;
	}
	if (argc > 1 && (stamps = fopen(argv[1], "a")) == NULL) {
		perror(argv[1]);
		return 1;
	}
	while ((n = read(0, buf + have, sizeof(buf) - have)) > 0) {
		char *start = buf, *nl;
		have += (size_t)n;
		while ((nl = memchr(start, '\n', have - (size_t)(start - buf)))) {
			if (stamps != NULL) {
				struct timespec ts;
				const char *id = strstr(start, "\"id\":");
				clock_gettime(CLOCK_REALTIME, &ts);
				fprintf(stamps, "%lld %lld\n",
				    (long long)ts.tv_sec * 1000000 +
				    ts.tv_nsec / 1000,
				    id ? atoll(id + 5) : -1LL);
				fflush(stamps);
			}
			if (sleep_ms > 0) {
				struct timespec ts = { sleep_ms / 1000,
				    (sleep_ms % 1000) * 1000000L };
				nanosleep(&ts, NULL);
			}
			if (write(1, "ok\n", 3) != 3)
				return 1;
			start = nl + 1;
		}
		have -= (size_t)(start - buf);
		memmove(buf, start, have);
		if (have == sizeof(buf))
			have = 0;	/* a line too long: drop it */
	}
	return 0;
}
