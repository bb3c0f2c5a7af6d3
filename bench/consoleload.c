/*
 * consoleload.c: the console benchmark's clients (bench/console.sh), as
 * cheap as a client can be, so that what is measured is the console and
 * not them: one process, one poll() loop, N clients each loading PATH
 * with its own session cookie once a second (a new connection each
 * time, "Connection: close"), from the start until the file STOP appears.
 *
 *	consoleload PORT PATH COOKIES STOP
 *
 * COOKIES holds one session token a line (its line count is N).  Prints
 * "PAGES ERRORS SLOWEST_MS" at the end: a page counts when it is answered
 * 200 in full.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CLIENTS_MAX	1000

struct client {
	char	 cookie[128];
	int	 fd;		/* -1: waiting for its next load */
	double	 due;	/* the next load */
	double	 started;
	char	 head[16];	/* the answer's first bytes */
	size_t	 nhead;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
start(struct client *c, int port, const char *path)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons((unsigned short)port) };
	char req[512];
	int fd, n;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	    "Cookie: rowq_session=%s\r\nConnection: close\r\n\r\n", path,
	    c->cookie);
	if (write(fd, req, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	c->fd = fd;
	c->started = now();
	c->nhead = 0;
	return 0;
}

int
main(int argc, char **argv)
{
	static struct client cl[CLIENTS_MAX];
	static struct pollfd pfd[CLIENTS_MAX];
	static char buf[65536];
	long pages = 0, errors = 0;
	double slowest = 0;
	int n = 0, port;
	FILE *f;

	if (argc != 5 || (f = fopen(argv[3], "r")) == NULL) {
		fprintf(stderr, "usage: consoleload PORT PATH COOKIES STOP\n");
		return 2;
	}
	port = atoi(argv[1]);
	while (n < CLIENTS_MAX && fgets(cl[n].cookie, sizeof(cl[n].cookie), f)) {
		cl[n].cookie[strcspn(cl[n].cookie, "\n")] = '\0';
		cl[n].fd = -1;
		/* Spread over the first second, as clients would be. */
		cl[n].due = now() + (double)n / 50.0;
		n++;
	}
	fclose(f);
	while (access(argv[4], F_OK) != 0) {
		double t = now(), wait = 0.2;
		int np = 0;

		for (int i = 0; i < n; i++) {
			if (cl[i].fd == -1 && t >= cl[i].due &&
			    start(&cl[i], port, argv[2]) == -1) {
				errors++;
				cl[i].due = t + 1.0;
			}
			if (cl[i].fd == -1 && cl[i].due - t < wait)
				wait = cl[i].due - t;
			if (cl[i].fd != -1)
				pfd[np++] = (struct pollfd){ .fd = cl[i].fd,
				    .events = POLLIN };
		}
		if (poll(pfd, (nfds_t)np, (int)(wait > 0 ? wait * 1000 : 0)) < 0 &&
		    errno != EINTR)
			return 1;
		for (int k = 0; k < np; k++) {
			struct client *c = NULL;
			ssize_t r;
			if (pfd[k].revents == 0)
				continue;
			for (int i = 0; i < n && c == NULL; i++)
				if (cl[i].fd == pfd[k].fd)
					c = &cl[i];
			r = read(c->fd, buf, sizeof(buf));
			if (r > 0) {
				size_t take = (size_t)r < sizeof(c->head) - c->nhead ?
				    (size_t)r : sizeof(c->head) - c->nhead;
				memcpy(c->head + c->nhead, buf, take);
				c->nhead += take;
				continue;
			}
			close(c->fd);
			c->fd = -1;
			if (c->nhead >= 12 && memcmp(c->head + 9, "200", 3) == 0)
				pages++;
			else
				errors++;
			if (now() - c->started > slowest)
				slowest = now() - c->started;
			c->due = c->started + 1.0;
		}
	}
	printf("%ld %ld %.0f\n", pages, errors, slowest * 1000);
	return 0;
}
