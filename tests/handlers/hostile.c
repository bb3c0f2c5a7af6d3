/*
 * hostile: handlers that misbehave on purpose, for tests of what rowq does
 * about them.  Exec modes (one process per row):
 *
 *   hostile flood BYTES WHERE EXIT  write BYTES to WHERE (out, err, both, or
 *                                   err-nonl: one endless line), exit EXIT
 *   hostile ignore-term PIDFILE     ignore SIGTERM, write our pid, sleep
 *   hostile grandchild PIDFILE exit|hang
 *                                   fork a child that sleeps forever holding
 *                                   stdout and stderr, write its pid; then
 *                                   exit 0, or sleep forever too
 *   hostile close-stdin EXIT        close stdin unread, wait 200 ms, exit EXIT
 *   hostile no-read MS EXIT         never read stdin, sleep MS, exit EXIT
 *
 * Pipe modes (one process per worker, a JSON row per line):
 *
 *   hostile pipe-long-answer BYTES  answer each row with BYTES of 'x' and
 *                                   no newline
 *   hostile pipe-stderr BYTES       write BYTES of 100-byte lines to stderr
 *                                   per row, then answer "ok"
 *   hostile pipe-no-read            never read, never answer
 *   hostile pipe-close-stdin        close stdin, never answer
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void
forever(void)
{
	for (;;)
		pause();
}

static void
write_pid(const char *path, long pid)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "%ld\n", pid);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	if (fd == -1 || write(fd, line, (size_t)n) != n)
		exit(111);
	close(fd);
}

/* BYTES to fd, in 64 KiB writes; newline every 100 bytes unless nonl. */
static void
flood(int fd, long bytes, int nonl)
{
	static char chunk[65536];

	memset(chunk, 'x', sizeof(chunk));
	if (!nonl)
		for (size_t i = 99; i < sizeof(chunk); i += 100)
			chunk[i] = '\n';
	for (long done = 0; done < bytes;) {
		size_t n = bytes - done < (long)sizeof(chunk) ?
		    (size_t)(bytes - done) : sizeof(chunk);
		ssize_t w = write(fd, chunk, n);
		if (w <= 0)
			return;
		done += w;
	}
}

static int
exec_mode(int argc, char **argv)
{
	const char *mode = argv[1];

	if (strcmp(mode, "flood") == 0 && argc == 5) {
		long bytes = atol(argv[2]);
		const char *where = argv[3];
		if (strcmp(where, "out") == 0 || strcmp(where, "both") == 0)
			flood(1, bytes, 0);
		if (strcmp(where, "err") == 0 || strcmp(where, "both") == 0)
			flood(2, bytes, 0);
		if (strcmp(where, "err-nonl") == 0)
			flood(2, bytes, 1);
		return atoi(argv[4]);
	}
	if (strcmp(mode, "ignore-term") == 0 && argc == 3) {
		signal(SIGTERM, SIG_IGN);
		write_pid(argv[2], (long)getpid());
		forever();
	}
	if (strcmp(mode, "grandchild") == 0 && argc == 4) {
		pid_t pid = fork();
		if (pid == 0)
			forever();
		write_pid(argv[2], (long)pid);
		if (strcmp(argv[3], "hang") == 0)
			forever();
		return 0;
	}
	if (strcmp(mode, "close-stdin") == 0 && argc == 3) {
		close(0);
		sleep_ms(200);
		return atoi(argv[2]);
	}
	if (strcmp(mode, "no-read") == 0 && argc == 4) {
		sleep_ms(atol(argv[2]));
		return atoi(argv[3]);
	}
	return -1;
}

static int
pipe_mode(int argc, char **argv)
{
	const char *mode = argv[1];
	char *line = NULL;
	size_t cap = 0;

	if (strcmp(mode, "pipe-no-read") == 0)
		forever();
	if (strcmp(mode, "pipe-close-stdin") == 0) {
		close(0);
		forever();
	}
	if (argc != 3)
		return -1;
	long bytes = atol(argv[2]);
	if (strcmp(mode, "pipe-long-answer") != 0 &&
	    strcmp(mode, "pipe-stderr") != 0)
		return -1;
	while (getline(&line, &cap, stdin) > 0) {
		if (strcmp(mode, "pipe-long-answer") == 0) {
			flood(1, bytes, 1);
			continue;
		}
		flood(2, bytes, 0);
		if (write(1, "ok\n", 3) != 3)
			return 1;
	}
	free(line);
	return 0;
}

int
main(int argc, char **argv)
{
	int r = -1;

	if (argc >= 2 && strncmp(argv[1], "pipe-", 5) == 0)
		r = pipe_mode(argc, argv);
	else if (argc >= 2)
		r = exec_mode(argc, argv);
	if (r >= 0)
		return r;
	fprintf(stderr, "hostile: bad arguments\n");
	return 100;
}
