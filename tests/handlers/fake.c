/*
 * fake: a handler for tests, whose behaviour is chosen by its arguments.
 *
 *   fake append LOG            append "KEY ATTEMPT" to LOG, exit 0
 *   fake fail-until N LOG      append, then exit 3 until attempt N
 *   fake exit CODE [LOG]       append, say so on stderr, exit CODE
 *   fake fail-every N          exit 65 (failed at once) when the key is a
 *                              multiple of N, else 0
 *   fake sleep MS LOG          append, sleep MS milliseconds, exit 0
 *   fake args OUT ARG...       write each ARG to OUT, NUL-terminated
 *   fake stdin OUT             copy stdin to OUT
 *   fake env OUT               write the environment to OUT
 *   fake fds OUT               list open descriptors into OUT
 *   fake hang                  sleep forever
 *   fake ignore-term           ignore SIGTERM, sleep forever
 *   fake grandchild PIDFILE    fork a child that sleeps forever, exit 0
 *   fake flood BYTES           write BYTES to stdout and stderr, exit 3
 *   fake kill-worker           kill the worker that started us (SIGKILL)
 *
 * Every line is appended with one write() on an O_APPEND descriptor, so
 * concurrent handlers never interleave.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "";
}

static void
append(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	if (fd == -1 || write(fd, text, len) != (ssize_t)len) {
		perror(path);
		exit(111);
	}
	close(fd);
}

static void
append_key(const char *path)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%s %s\n", env("ROWQ_KEY"),
	    env("ROWQ_ATTEMPT"));

	append(path, line, (size_t)n);
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void
copy_stdin(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	char buf[65536];
	ssize_t n;

	if (fd == -1)
		exit(111);
	while ((n = read(0, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)n) != n)
			exit(111);
	close(fd);
}

static void
list_fds(const char *path)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char line[64];
	int self = dirfd(d);

	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == self)
			continue;
		int n = snprintf(line, sizeof(line), "%s\n", e->d_name);
		append(path, line, (size_t)n);
	}
	closedir(d);
}

static void
flood(long bytes)
{
	static char chunk[65536];

	memset(chunk, 'x', sizeof(chunk));
	for (int i = 0; i < (int)sizeof(chunk); i += 100)
		chunk[i] = '\n';
	for (long done = 0; done < bytes; done += (long)sizeof(chunk)) {
		if (write(1, chunk, sizeof(chunk)) < 0 ||
		    write(2, chunk, sizeof(chunk)) < 0)
			break;
	}
	exit(3);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "append") == 0 && argc == 3) {
		append_key(argv[2]);
		return 0;
	}
	if (strcmp(mode, "fail-until") == 0 && argc == 4) {
		append_key(argv[3]);
		if (atoi(env("ROWQ_ATTEMPT")) < atoi(argv[2])) {
			fprintf(stderr, "not yet: attempt %s\n",
			    env("ROWQ_ATTEMPT"));
			return 3;
		}
		return 0;
	}
	if (strcmp(mode, "fail-every") == 0 && argc == 3) {
		if (atol(env("ROWQ_KEY")) % atol(argv[2]) == 0) {
			fprintf(stderr, "no such mailbox: %s\n", env("ROWQ_KEY"));
			return 65;
		}
		return 0;
	}
	if (strcmp(mode, "exit") == 0 && argc >= 3) {
		if (argc == 4)
			append_key(argv[3]);
		fprintf(stderr, "exiting with %s as asked\n", argv[2]);
		return atoi(argv[2]);
	}
	if (strcmp(mode, "sleep") == 0 && argc == 4) {
		append_key(argv[3]);
		sleep_ms(atol(argv[2]));
		return 0;
	}
	if (strcmp(mode, "args") == 0 && argc >= 3) {
		for (int i = 3; i < argc; i++)
			append(argv[2], argv[i], strlen(argv[i]) + 1);
		return 0;
	}
	if (strcmp(mode, "stdin") == 0 && argc >= 3) {
		copy_stdin(argv[2]);
		return 0;
	}
	if (strcmp(mode, "env") == 0 && argc >= 3) {
		for (char **e = environ; *e; e++) {
			append(argv[2], *e, strlen(*e));
			append(argv[2], "\n", 1);
		}
		return 0;
	}
	if (strcmp(mode, "fds") == 0 && argc >= 3) {
		list_fds(argv[2]);
		return 0;
	}
	if (strcmp(mode, "hang") == 0) {
		for (;;)
			pause();
	}
	if (strcmp(mode, "ignore-term") == 0) {
		signal(SIGTERM, SIG_IGN);
		for (;;)
			pause();
	}
	if (strcmp(mode, "grandchild") == 0 && argc == 3) {
		pid_t pid = fork();
		if (pid == 0) {
			for (;;)
				pause();
		}
		char line[32];
		int n = snprintf(line, sizeof(line), "%ld\n", (long)pid);
		append(argv[2], line, (size_t)n);
		return 0;
	}
	if (strcmp(mode, "kill-worker") == 0) {
		kill(getppid(), SIGKILL);
		return 0;
	}
	if (strcmp(mode, "flood") == 0 && argc == 3)
		flood(atol(argv[2]));
	fprintf(stderr, "fake: bad arguments\n");
	return 100;
}
