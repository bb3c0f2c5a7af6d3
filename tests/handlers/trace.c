/*
 * trace: a handler for tests that says when it ran, and for whom.
 *
 *   trace LOG MS [CODE]   append "start KEY PID PPID ATTEMPT US" to LOG,
 *                         sleep MS milliseconds (in steps of 10 ms: a
 *                         handler stopped and continued sleeps what it had
 *                         left), append "end KEY PID PPID ATTEMPT US",
 *                         exit CODE (default 0)
 *
 * KEY is ROWQ_KEY, PPID the worker that started it, US microseconds since
 * the epoch.  A handler killed while it sleeps leaves a start without an
 * end.  MS usually comes from a column of the row ("{sleep_ms}"), so that
 * each row of one queue can take its own time.  Each line is one write()
 * on an O_APPEND descriptor, so concurrent handlers never interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "";
}

static long long
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
say(const char *path, const char *what)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%s %s %ld %ld %s %lld\n", what,
	    env("ROWQ_KEY"), (long)getpid(), (long)getppid(),
	    env("ROWQ_ATTEMPT"), now_us());
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	if (n < 0 || (size_t)n >= sizeof(line) || fd == -1 ||
	    write(fd, line, (size_t)n) != n) {
		perror(path);
		exit(111);
	}
	close(fd);
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

int
main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: trace LOG MS [CODE]\n");
		return 2;
	}
	say(argv[1], "start");
	/*
	 * In steps, as work is done: a handler stopped (SIGSTOP) and
	 * continued goes on with what it had left, as a real one would.
	 */
	for (long left = atol(argv[2]); left > 0; left -= 10)
		sleep_ms(left < 10 ? left : 10);
	say(argv[1], "end");
	return argc == 4 ? atoi(argv[3]) : 0;
}
