/*
 * mhd.c: libmicrohttpd, loaded with dlopen when metrics: or console:
 * asks for it, not linked: it brings GnuTLS and p11-kit, which initialise
 * themselves as they load, and linked they would do so in every rowq
 * process, most of which never serve HTTP.  The only includer of
 * <microhttpd.h> besides the files that serve (through mhd.h).
 */
#include "mhd.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* The soname of libmicrohttpd's stable ABI (0.9.x), as the linker names it. */
#define MHD_LIBRARY	"libmicrohttpd.so.12"

struct mhd_api mhd;

static void *
mhd_symbol(void *handle, const char *who, const char *name, bool *ok)
{
	void *p = dlsym(handle, name);

	if (p == NULL && *ok) {
		log_error("%s: %s: %s", who, MHD_LIBRARY, dlerror());
		*ok = false;
	}
	return p;
}

#define MHD_RESOLVE(handle, who, field, name, ok)			\
	(mhd.field = (__typeof__(mhd.field))mhd_symbol(handle, who, name, ok))

/*
 * Load libmicrohttpd once, all its symbols bound now (RTLD_NOW: a missing
 * one is an error here, not a crash at the first request) and none of them
 * visible to the libraries loaded after it (RTLD_LOCAL).  who names the
 * part that needs it, for the messages.
 */
int
mhd_load(const char *who)
{
	void *h;
	bool ok = true;

	if (mhd.handle != NULL)
		return 0;
	h = dlopen(MHD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		log_error("%s: cannot load %s, which serving HTTP needs: %s",
		    who, MHD_LIBRARY, dlerror());
		return -1;
	}
	MHD_RESOLVE(h, who, start_daemon, "MHD_start_daemon", &ok);
	MHD_RESOLVE(h, who, stop_daemon, "MHD_stop_daemon", &ok);
	MHD_RESOLVE(h, who, run, "MHD_run", &ok);
	MHD_RESOLVE(h, who, get_timeout, "MHD_get_timeout", &ok);
	MHD_RESOLVE(h, who, get_daemon_info, "MHD_get_daemon_info", &ok);
	MHD_RESOLVE(h, who, get_connection_info, "MHD_get_connection_info",
	    &ok);
	MHD_RESOLVE(h, who, lookup_connection_value,
	    "MHD_lookup_connection_value", &ok);
	MHD_RESOLVE(h, who, get_connection_values, "MHD_get_connection_values",
	    &ok);
	MHD_RESOLVE(h, who, create_response_from_buffer,
	    "MHD_create_response_from_buffer", &ok);
	MHD_RESOLVE(h, who, add_response_header, "MHD_add_response_header",
	    &ok);
	MHD_RESOLVE(h, who, queue_response, "MHD_queue_response", &ok);
	MHD_RESOLVE(h, who, destroy_response, "MHD_destroy_response", &ok);
	MHD_RESOLVE(h, who, is_feature_supported, "MHD_is_feature_supported",
	    &ok);
	MHD_RESOLVE(h, who, suspend_connection, "MHD_suspend_connection", &ok);
	MHD_RESOLVE(h, who, resume_connection, "MHD_resume_connection", &ok);
	if (!ok) {
		(void)dlclose(h);
		return -1;
	}
	mhd.handle = h;
	return 0;
}

/* The daemon's epoll descriptor, for a poll() of our own; -1: none. */
int
mhd_epoll_fd(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *i = mhd.get_daemon_info(d,
	    MHD_DAEMON_INFO_EPOLL_FD);

	return i ? i->epoll_fd : -1;
}

/*
 * The library's timers, which cut idle clients: run when they are due
 * (one run closes the clients past their timeout, the next frees their
 * slots, and only the one after listens again, the library having
 * stopped listening at its limit, accepting those that waited in the
 * backlog), and *next lowered to when the next is, never sooner than
 * 10 ms from now: never a busy loop, whatever the library says.
 */
void
mhd_timers(struct MHD_Daemon *d, int64_t now, int64_t *next)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (mhd.get_timeout(d, &ms) != MHD_YES)
		return;
	if (ms == 0) {
		for (int i = 0; i < 3; i++)
			(void)mhd.run(d);
		if (mhd.get_timeout(d, &ms) != MHD_YES)
			return;
	}
	if (ms < 10)
		ms = 10;
	if (ms < INT32_MAX && now + (int64_t)ms < *next)
		*next = now + (int64_t)ms;
}

/* "HOST:PORT" (IPv4 or [IPv6]) into a socket address. */
int
mhd_address(const char *addr, struct sockaddr_storage *ss)
{
	const char *colon = strrchr(addr, ':');
	char host[64];
	char *end;
	long port;

	memset(ss, 0, sizeof(*ss));
	if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
		return -1;
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 1 || port > 65535)
		return -1;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		host[strlen(host) - 1] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		return inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1 ? 0 : -1;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &s4->sin_addr) == 1 ? 0 : -1;
}

