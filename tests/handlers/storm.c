/*
 * storm: a handler with a fixed retry pattern, for tests that kill things
 * and then check that every row ended where the policy says.
 *
 *   storm exec LOG MS     one process per row (exec:); the try is $ROWQ_ATTEMPT
 *   storm pipe LOG MS     one process per worker (pipe:); the try is the
 *                         row's "attempts" + 1, read from the JSON line
 *
 * Each try appends "KEY TRY PID" to LOG with one write(), sleeps MS
 * milliseconds, then: a key divisible by 13 always fails (exit 3 /
 * "retry"), a key divisible by 7 fails its first try, any other key
 * succeeds.  So with max_attempts M, a %13 row ends failed after exactly M
 * counted tries, a %7 row ends done after 2, any other after 1 -- unless
 * something killed a try, which the test then accounts for.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
append(const char *path, long key, long try)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "%ld %ld %ld\n", key, try,
	    (long)getpid());
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	if (fd == -1 || write(fd, line, (size_t)n) != n)
		exit(111);
	close(fd);
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (ms > 0 && nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* 1: this try succeeds. */
static int
verdict(long key, long try)
{
	if (key % 13 == 0)
		return 0;
	if (key % 7 == 0 && try < 2)
		return 0;
	return 1;
}

static long
json_number(const char *line, const char *name)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", name);
	p = strstr(line, pat);
	return p ? atol(p + strlen(pat)) : -1;
}

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: storm exec|pipe LOG MS\n");
		return 100;
	}
	const char *log = argv[2];
	long ms = atol(argv[3]);

	if (strcmp(argv[1], "exec") == 0) {
		const char *k = getenv("ROWQ_KEY"), *a = getenv("ROWQ_ATTEMPT");
		long key = k ? atol(k) : -1, try = a ? atol(a) : -1;

		append(log, key, try);
		sleep_ms(ms);
		if (verdict(key, try))
			return 0;
		fprintf(stderr, "storm: key %ld fails try %ld\n", key, try);
		return 3;
	}
	if (strcmp(argv[1], "pipe") == 0) {
		char *line = NULL;
		size_t cap = 0;

		setvbuf(stdout, NULL, _IOLBF, 0);
		while (getline(&line, &cap, stdin) > 0) {
			long key = json_number(line, "id");
			long try = json_number(line, "attempts") + 1;

			append(log, key, try);
			sleep_ms(ms);
			if (verdict(key, try))
				printf("ok\n");
			else
				printf("retry key %ld fails try %ld\n", key, try);
		}
		free(line);
		return 0;
	}
	fprintf(stderr, "storm: unknown mode %s\n", argv[1]);
	return 100;
}
