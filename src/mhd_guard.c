/*
 * mhd_guard.c: the bounds that keep a listener (metrics.c, the console's
 * console_http.c) serving while clients are slow on purpose.
 *
 * libmicrohttpd serves a bounded number of connections and cuts one idle
 * for its timeout, but a client that sends a byte now and then is never
 * idle: a few of them, one header line every 2 s, held every slot, and
 * /healthz or /login stopped answering.  So each connection is watched
 * from the library's notices (MHD_OPTION_NOTIFY_CONNECTION):
 *
 * - a request must arrive whole, headers and body, within deadline_ms of
 *   the connection's start (or of the previous answer on a connection
 *   kept alive); past it, the connection is cut, however steadily it
 *   trickles;
 * - an address holds per_addr connections at most: a newer one cuts its
 *   address's oldest that is still waiting for its request (a client
 *   behind the same address gets in, a flood from one address takes a
 *   share and no more);
 * - when every slot is taken, the connection whose request has been the
 *   longest in coming, after CROWD_MS at least, is cut, so that a slot
 *   frees for the next client in the backlog (a liveness probe) rather
 *   than after the deadline.
 *
 * A cut is shutdown(2) on the connection's socket, which the library then
 * reads as the client's end and closes; the descriptor stays the
 * library's.  A connection whose request has arrived (mhd_guard_answering)
 * is left to the library's own timeout while it is answered.  Cuts are
 * counted, and said in the log once a minute at most.
 */
#include "mhd.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* A full listener cuts a waiting request only once it is this old. */
#define MHD_GUARD_CROWD_MS	1000
/* Cuts are said in the log at most this often. */
#define MHD_GUARD_LOG_MS	60000

struct mhd_guard_conn {
	bool		 used;
	struct MHD_Connection *conn;
	int		 fd;
	unsigned char	 addr[16];	/* IPv4 in the first 4 bytes */
	int64_t		 begun_ms;	/* the request's clock: now_ms */
	bool		 answering;	/* its request is in */
	bool		 cut;
};

/* The client's address, as bytes that compare. */
static void
mhd_guard_addr(struct MHD_Connection *conn, unsigned char *out)
{
	const union MHD_ConnectionInfo *i = mhd.get_connection_info(conn,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = i != NULL ? i->client_addr : NULL;

	memset(out, 0, 16);
	if (sa != NULL && sa->sa_family == AF_INET)
		memcpy(out, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa != NULL && sa->sa_family == AF_INET6)
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static void
mhd_guard_cut(struct mhd_guard *g, struct mhd_guard_conn *c, bool slow)
{
	if (c->cut)
		return;
	c->cut = true;
	(void)shutdown(c->fd, SHUT_RDWR);
	if (slow)
		g->cut_slow++;
	else
		g->cut_crowd++;
}

/*
 * The connection of all (addr NULL) or of one address still waiting for
 * its request, begun the longest ago, and at or before before_ms; NULL:
 * none.
 */
static struct mhd_guard_conn *
mhd_guard_oldest(struct mhd_guard *g, const unsigned char *addr,
    int64_t before_ms, const struct mhd_guard_conn *not)
{
	struct mhd_guard_conn *pick = NULL;

	for (size_t i = 0; i < g->max; i++) {
		struct mhd_guard_conn *c = &g->conn[i];
		if (c == not || !c->used || c->cut || c->answering ||
		    c->begun_ms > before_ms ||
		    (addr != NULL && memcmp(c->addr, addr, 16) != 0))
			continue;
		if (pick == NULL || c->begun_ms < pick->begun_ms)
			pick = c;
	}
	return pick;
}

static size_t
mhd_guard_count(const struct mhd_guard *g, const unsigned char *addr)
{
	size_t n = 0;

	for (size_t i = 0; i < g->max; i++)
		n += g->conn[i].used && !g->conn[i].cut && (addr == NULL ||
		    memcmp(g->conn[i].addr, addr, 16) == 0);
	return n;
}

/* A new connection: noted, and its address held to its share. */
static void
mhd_guard_started(struct mhd_guard *g, struct MHD_Connection *conn,
    void **ctx)
{
	const union MHD_ConnectionInfo *i = mhd.get_connection_info(conn,
	    MHD_CONNECTION_INFO_CONNECTION_FD);
	struct mhd_guard_conn *c = NULL, *old;

	for (size_t k = 0; k < g->max && c == NULL; k++)
		if (!g->conn[k].used)
			c = &g->conn[k];
	if (i == NULL)
		return;
	if (c == NULL) {
		/* More than the library's own limit: none of ours to keep. */
		(void)shutdown(i->connect_fd, SHUT_RDWR);
		g->cut_crowd++;
		return;
	}
	memset(c, 0, sizeof(*c));
	c->used = true;
	c->conn = conn;
	c->fd = i->connect_fd;
	c->begun_ms = now_ms();
	mhd_guard_addr(conn, c->addr);
	*ctx = c;
	if (mhd_guard_count(g, c->addr) > g->per_addr &&
	    (old = mhd_guard_oldest(g, c->addr, c->begun_ms, c)) != NULL)
		mhd_guard_cut(g, old, false);
}

/* MHD_OPTION_NOTIFY_CONNECTION's callback; cls is the guard. */
void
mhd_guard_notify(void *cls, struct MHD_Connection *conn, void **ctx,
    enum MHD_ConnectionNotificationCode what)
{
	struct mhd_guard *g = cls;
	struct mhd_guard_conn *c = *ctx;

	if (what == MHD_CONNECTION_NOTIFY_STARTED)
		mhd_guard_started(g, conn, ctx);
	else if (what == MHD_CONNECTION_NOTIFY_CLOSED && c != NULL) {
		memset(c, 0, sizeof(*c));
		*ctx = NULL;
	}
}

static struct mhd_guard_conn *
mhd_guard_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *i = mhd.get_connection_info(conn,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return i != NULL ? i->socket_context : NULL;
}

/* conn's request has arrived whole: no deadline while it is answered. */
void
mhd_guard_answering(struct MHD_Connection *conn)
{
	struct mhd_guard_conn *c = mhd_guard_of(conn);

	if (c != NULL)
		c->answering = true;
}

/* conn's answer is sent: the next request on it has its own deadline. */
void
mhd_guard_completed(struct MHD_Connection *conn)
{
	struct mhd_guard_conn *c = mhd_guard_of(conn);

	if (c != NULL) {
		c->answering = false;
		c->begun_ms = now_ms();
	}
}

static void
mhd_guard_log(struct mhd_guard *g, int64_t now)
{
	if ((g->cut_slow == 0 && g->cut_crowd == 0) ||
	    now - g->logged_ms < MHD_GUARD_LOG_MS)
		return;
	log_warnx("%s: cut %llu client%s whose request took longer than %llds "
	    "to arrive, and %llu for room (more than %u from one address, "
	    "or every slot taken)", g->who, g->cut_slow, g->cut_slow == 1 ?
	    "" : "s", (long long)(g->deadline_ms / 1000), g->cut_crowd,
	    g->per_addr);
	g->cut_slow = g->cut_crowd = 0;
	g->logged_ms = now;
}

/*
 * Cut the connections whose request is past its deadline, and, every
 * slot taken, the one waiting the longest for its request; *next lowered
 * to the next deadline.
 */
void
mhd_guard_timers(struct mhd_guard *g, int64_t now, int64_t *next)
{
	struct mhd_guard_conn *old;

	for (size_t i = 0; i < g->max; i++) {
		struct mhd_guard_conn *c = &g->conn[i];
		if (!c->used || c->cut || c->answering)
			continue;
		if (now - c->begun_ms >= g->deadline_ms)
			mhd_guard_cut(g, c, true);
		else if (c->begun_ms + g->deadline_ms < *next)
			*next = c->begun_ms + g->deadline_ms;
	}
	if (mhd_guard_count(g, NULL) >= g->max) {
		old = mhd_guard_oldest(g, NULL, now, NULL);
		if (old != NULL && now - old->begun_ms >= MHD_GUARD_CROWD_MS)
			mhd_guard_cut(g, old, false);
		else if (old != NULL && old->begun_ms + MHD_GUARD_CROWD_MS <
		    *next)
			*next = old->begun_ms + MHD_GUARD_CROWD_MS;
	}
	mhd_guard_log(g, now);
}

void
mhd_guard_init(struct mhd_guard *g, const char *who, unsigned max,
    unsigned per_addr, int64_t deadline_ms)
{
	memset(g, 0, sizeof(*g));
	g->who = who;
	g->max = max;
	g->per_addr = per_addr;
	g->deadline_ms = deadline_ms;
	g->conn = xcalloc(max, sizeof(*g->conn));
}

void
mhd_guard_free(struct mhd_guard *g)
{
	free(g->conn);
	g->conn = NULL;
}
