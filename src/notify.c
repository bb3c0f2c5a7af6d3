/*
 * notify.c: telling systemd what the supervisor is doing; the only includer
 * of <systemd/sd-daemon.h>.
 *
 * Only the supervisor may notify: notify_init keeps the socket's address
 * and removes NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID from the
 * environment, so that workers and handlers, which inherit the
 * environment, cannot speak for the service.  Without NOTIFY_SOCKET every
 * function here does nothing.
 */
#include "rowq.h"

#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

static char	*notify_socket;
static int64_t	 notify_watchdog_interval_ms;

void
notify_init(void)
{
	const char *s = getenv("NOTIFY_SOCKET");
	uint64_t usec = 0;

	if (s != NULL && *s != '\0')
		notify_socket = xstrdup(s);
	/*
	 * WATCHDOG_USEC counts only when WATCHDOG_PID is unset or names us;
	 * either way both variables go, as NOTIFY_SOCKET does.
	 */
	if (sd_watchdog_enabled(1, &usec) > 0)
		notify_watchdog_interval_ms = (int64_t)(usec / 1000);
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	unsetenv("NOTIFY_SOCKET");
}

static void
notify_send(const char *msg)
{
	if (notify_socket == NULL)
		return;
	/*
	 * sd_notify reads the address from the environment, so it is there
	 * for this call only: no fork happens in between.
	 */
	setenv("NOTIFY_SOCKET", notify_socket, 1);
	(void)sd_notify(0, msg);
	unsetenv("NOTIFY_SOCKET");
}

void
notify_ready(void)
{
	notify_send("READY=1");
}

/*
 * systemd wants the time of the reload with it, in microseconds of
 * CLOCK_MONOTONIC, to tell this reload from an older one: rounding it to
 * milliseconds could date it before the SIGHUP that asked for it.
 */
void
notify_reloading(void)
{
	struct timespec ts;
	char msg[96];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
	    (unsigned long long)ts.tv_sec * 1000000ULL +
	    (unsigned long long)ts.tv_nsec / 1000ULL);
	notify_send(msg);
}

void
notify_stopping(void)
{
	notify_send("STOPPING=1");
}

/* One line: a newline would end the assignment early. */
void
notify_status(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "STATUS=");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	for (char *p = msg; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	notify_send(msg);
}

void
notify_extend_timeout(int64_t ms)
{
	char msg[64];

	snprintf(msg, sizeof(msg), "EXTEND_TIMEOUT_USEC=%lld",
	    (long long)ms * 1000);
	notify_send(msg);
}

int64_t
notify_watchdog_ms(void)
{
	return notify_socket ? notify_watchdog_interval_ms : 0;
}

void
notify_watchdog(void)
{
	notify_send("WATCHDOG=1");
}
