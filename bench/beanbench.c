/*
 * beanbench.c: the broker a user would pick instead of a table queue, for
 * the benchmark: beanstalkd, over its unix socket.
 *
 *	beanbench -s SOCKET -n JOBS -P		put JOBS jobs, one connection
 *	beanbench -s SOCKET -n JOBS [-w WORKERS]
 *
 * The second form forks WORKERS processes; each opens its own connection
 * and loops `reserve-with-timeout 0` / `delete ID` until no job is ready,
 * which is the cycle of a worker that does nothing with its job.  It then
 * checks that the workers deleted JOBS jobs in all and that the server
 * holds none: exit status 0 when they did.  Run beanstalkd with
 * `-b DIR -f 0` for an fsync of its binlog on every write, the
 * durability of a database commit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define PUT_CHUNK	100	/* puts sent before their answers are read */

struct conn {
	int	 fd;
	char	 buf[65536];
	size_t	 len;		/* bytes in buf */
};

static void
die(const char *what)
{
	fprintf(stderr, "beanbench[%d]: %s: %s\n", (int)getpid(), what,
	    errno ? strerror(errno) : "unexpected answer");
	exit(1);
}

static void
bean_connect(struct conn *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path))
		die("socket path too long");
	strcpy(sa.sun_path, path);
	c->len = 0;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd == -1 || connect(c->fd, (struct sockaddr *)&sa,
	    sizeof(sa)) == -1)
		die(path);
}

static void
bean_send(struct conn *c, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(c->fd, s, n);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		s += w;
		n -= (size_t)w;
	}
}

/* One line of the answer, without its \r\n, into line. */
static void
bean_line(struct conn *c, char *line, size_t max)
{
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		if (nl != NULL) {
			size_t n = (size_t)(nl - c->buf) + 1;
			size_t keep = n - 1;
			if (keep > 0 && c->buf[keep - 1] == '\r')
				keep--;
			if (keep >= max)
				keep = max - 1;
			memcpy(line, c->buf, keep);
			line[keep] = '\0';
			memmove(c->buf, c->buf + n, c->len - n);
			c->len -= n;
			return;
		}
		if (c->len == sizeof(c->buf))
			die("answer line too long");
		ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = 0;
			die("read");
		}
		c->len += (size_t)r;
	}
}

static void
put_jobs(const char *path, long jobs)
{
	struct conn c;
	char cmd[128], line[256];

	bean_connect(&c, path);
	for (long i = 0; i < jobs; i += PUT_CHUNK) {
		long k, n = jobs - i < PUT_CHUNK ? jobs - i : PUT_CHUNK;
		for (k = 0; k < n; k++) {
			char body[32];
			int blen = snprintf(body, sizeof(body), "job %ld", i + k);
			int len = snprintf(cmd, sizeof(cmd),
			    "put 0 0 60 %d\r\n%s\r\n", blen, body);
			bean_send(&c, cmd, (size_t)len);
		}
		for (k = 0; k < n; k++) {
			bean_line(&c, line, sizeof(line));
			if (strncmp(line, "INSERTED ", 9) != 0) {
				errno = 0;
				die(line);
			}
		}
	}
	close(c.fd);
}

/* Reserve and delete until nothing is ready; returns the jobs deleted. */
static long
drain(const char *path)
{
	struct conn c;
	char line[256], cmd[64];
	long done = 0;

	bean_connect(&c, path);
	for (;;) {
		unsigned long long id;
		size_t bytes;

		bean_send(&c, "reserve-with-timeout 0\r\n", 24);
		bean_line(&c, line, sizeof(line));
		if (strcmp(line, "TIMED_OUT") == 0)
			break;
		if (sscanf(line, "RESERVED %llu %zu", &id, &bytes) != 2) {
			errno = 0;
			die(line);
		}
		bean_line(&c, line, sizeof(line));	/* the body */
		int len = snprintf(cmd, sizeof(cmd), "delete %llu\r\n", id);
		bean_send(&c, cmd, (size_t)len);
		bean_line(&c, line, sizeof(line));
		if (strcmp(line, "DELETED") != 0) {
			errno = 0;
			die(line);
		}
		done++;
	}
	close(c.fd);
	return done;
}

/* The value of one field of `stats`, or -1. */
static long
stat_field(const char *path, const char *field)
{
	struct conn c;
	char line[256], key[128];
	long bytes, value = -1;

	bean_connect(&c, path);
	bean_send(&c, "stats\r\n", 7);
	bean_line(&c, line, sizeof(line));
	if (sscanf(line, "OK %ld", &bytes) != 1 || bytes < 0 ||
	    (size_t)bytes + 2 > sizeof(c.buf)) {
		errno = 0;
		die(line);
	}
	/* The YAML document and its final \r\n, in one buffer. */
	while (c.len < (size_t)bytes + 2) {
		ssize_t r = read(c.fd, c.buf + c.len, sizeof(c.buf) - c.len);
		if (r <= 0)
			die("read stats");
		c.len += (size_t)r;
	}
	c.buf[bytes] = '\0';
	snprintf(key, sizeof(key), "\n%s: ", field);
	char *at = strstr(c.buf, key);
	if (at != NULL)
		value = atol(at + strlen(key));
	close(c.fd);
	return value;
}

int
main(int argc, char **argv)
{
	const char *path = NULL;
	long jobs = 0, total = 0;
	int workers = 1, put = 0, c, failed = 0, fds[2];

	while ((c = getopt(argc, argv, "s:n:w:P")) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'n': jobs = atol(optarg); break;
		case 'w': workers = atoi(optarg); break;
		case 'P': put = 1; break;
		default:
			goto usage;
		}
	}
	if (path == NULL || jobs < 1 || workers < 1)
		goto usage;
	if (put) {
		put_jobs(path, jobs);
		return 0;
	}
	if (pipe(fds) == -1)
		die("pipe");
	for (int i = 0; i < workers; i++) {
		pid_t pid = fork();
		if (pid == -1)
			die("fork");
		if (pid == 0) {
			long n = drain(path);
			if (write(fds[1], &n, sizeof(n)) != sizeof(n))
				_exit(1);
			_exit(0);
		}
	}
	close(fds[1]);
	for (int i = 0; i < workers; i++) {
		int status;
		if (wait(&status) == -1)
			die("wait");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	for (long n; read(fds[0], &n, sizeof(n)) == sizeof(n); )
		total += n;
	if (failed || total != jobs) {
		fprintf(stderr, "beanbench: %d worker(s) failed, %ld of %ld "
		    "jobs deleted\n", failed, total, jobs);
		return 1;
	}
	long left = stat_field(path, "current-jobs-ready") +
	    stat_field(path, "current-jobs-reserved");
	if (left != 0) {
		fprintf(stderr, "beanbench: %ld jobs left on the server\n", left);
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: beanbench -s SOCKET -n JOBS [-w WORKERS] "
	    "[-P]\n");
	return 2;
}
