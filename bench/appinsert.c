/*
 * appinsert.c: the application of the prune benchmark (bench/prune.sh).
 * Inserts one waiting row into the queue's table every INTERVAL
 * milliseconds, from one connection in autocommit, as an application that
 * enqueues a job per request would, and times each INSERT from the
 * client's side: sent to answered, the commit included.
 *
 *	appinsert -S SOCKET -D DATABASE [-i INTERVAL_MS]
 *
 * Runs until SIGTERM or SIGINT, then prints one line:
 *
 *	INSERTS MEDIAN_US P99_US MAX_US
 *
 * The schedule is a tick every INTERVAL.  An INSERT that took longer
 * moves it on: the next INSERT starts at once and the ticks it missed are
 * not made up, so one slow INSERT is one sample, as long as it waited,
 * and does not drag a burst of quick ones after it.
 */
#include <errno.h>
#include <mysql.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One insert every 10 ms for up to an hour is 360,000 samples. */
#define SAMPLES_MAX	(1 << 20)

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static long long
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int
by_value(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static long long took[SAMPLES_MAX];
	const char *sock = NULL, *dbname = NULL;
	long long interval_us = 10000, next, t0;
	size_t n = 0;
	struct sigaction sa;
	MYSQL *db;
	int opt;

	while ((opt = getopt(argc, argv, "S:D:i:")) != -1) {
		switch (opt) {
		case 'S': sock = optarg; break;
		case 'D': dbname = optarg; break;
		case 'i': interval_us = atoll(optarg) * 1000; break;
		default:
			fprintf(stderr, "usage: appinsert -S SOCKET -D DATABASE "
			    "[-i INTERVAL_MS]\n");
			return 2;
		}
	}
	if (sock == NULL || dbname == NULL || interval_us <= 0) {
		fprintf(stderr, "appinsert: -S and -D are required, -i > 0\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	/* An INSERT under way finishes; only the sleep between is cut. */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if ((db = mysql_init(NULL)) == NULL ||
	    mysql_real_connect(db, NULL, "root", NULL, dbname, 0, sock, 0) ==
	    NULL) {
		fprintf(stderr, "appinsert: connect: %s\n", mysql_error(db));
		return 1;
	}
	next = now_us();
	while (!stop && n < SAMPLES_MAX) {
		long long wait = next - now_us();
		if (wait > 0) {
			struct timespec ts = { wait / 1000000,
			    (wait % 1000000) * 1000 };
			if (nanosleep(&ts, NULL) != 0 && errno == EINTR)
				continue;
		}
		t0 = now_us();
		if (mysql_query(db, "INSERT INTO email (recipient, subject, "
		    "body) VALUES ('app@example.com', 'app', 'body')") != 0) {
			fprintf(stderr, "appinsert: insert: %s\n",
			    mysql_error(db));
			mysql_close(db);
			return 1;
		}
		took[n++] = now_us() - t0;
		next += interval_us;
		if (next < now_us())
			next = now_us();
	}
	mysql_close(db);
	if (n == 0) {
		fprintf(stderr, "appinsert: stopped before the first insert\n");
		return 1;
	}
	qsort(took, n, sizeof(took[0]), by_value);
	printf("%zu %lld %lld %lld\n", n, took[n / 2], took[n * 99 / 100],
	    took[n - 1]);
	return 0;
}
