/*
 * pipefake: a pipe handler for tests.  Reads one JSON row per line and
 * answers per its mode; the row's key is the number after "id":.
 *
 *   pipefake ok LOG             append "KEY PID" to LOG, answer "ok KEY"
 *   pipefake crash-on KEY LOG   like ok, but exit 3 on that key
 *   pipefake hang-on KEY LOG    like ok, but never answer that key
 *   pipefake garbage-on KEY LOG like ok, but answer nonsense on that key
 *   pipefake double-on KEY LOG  like ok, but answer that key twice
 *   pipefake bye-at-eof LOG     like ok, and write "bye" at end of input
 *   pipefake retry-all LOG      answer "retry busy" to every row
 *   pipefake exit-at-start      exit 1 before reading anything
 *   pipefake sleep MS LOG       like ok, after sleeping MS milliseconds
 *   pipefake timed LOG          like ok, with the microseconds since the
 *                               epoch: "KEY PID US"
 *
 * It writes its pid to stderr when it starts, so tests can count starts.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
append(const char *path, long key, bool timed)
{
	char line[96];
	struct timespec now;
	int n;
	int fd;

	if (timed) {
		clock_gettime(CLOCK_REALTIME, &now);
		n = snprintf(line, sizeof(line), "%ld %ld %lld\n", key,
		    (long)getpid(), (long long)now.tv_sec * 1000000 +
		    now.tv_nsec / 1000);
	} else
		n = snprintf(line, sizeof(line), "%ld %ld\n", key,
		    (long)getpid());
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd == -1 || write(fd, line, (size_t)n) != n)
		exit(111);
	close(fd);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	bool timed = strcmp(mode, "timed") == 0;
	const char *log = argv[argc - 1];
	long special = argc > 3 ? atol(argv[2]) : -1;
	char *line = NULL;
	size_t cap = 0;

	fprintf(stderr, "started %ld\n", (long)getpid());
	if (strcmp(mode, "exit-at-start") == 0)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (getline(&line, &cap, stdin) > 0) {
		char *p = strstr(line, "\"id\":");
		long key = p ? atol(p + 5) : -1;

		if (strcmp(mode, "retry-all") == 0) {
			append(log, key, timed);
			printf("retry busy\n");
			continue;
		}
		if (strcmp(mode, "sleep") == 0) {
			long ms = atol(argv[2]);
			struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
		append(log, key, timed);
		if (key == special && strcmp(mode, "crash-on") == 0)
			return 3;
		if (key == special && strcmp(mode, "hang-on") == 0)
			for (;;)
				pause();
		if (key == special && strcmp(mode, "double-on") == 0)
			printf("ok %ld\n", key);
		if (key == special && strcmp(mode, "garbage-on") == 0) {
			printf("what is this row?\n");
			continue;
		}
		printf("ok %ld\n", key);
	}
	if (strcmp(mode, "bye-at-eof") == 0)
		printf("bye\n");
	free(line);
	return 0;
}
