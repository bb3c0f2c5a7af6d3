/*
 * notify.c: telling systemd what the supervisor is doing; the only includer
 * of <systemd/sd-daemon.h>.
 *
 * Only the supervisor may notify: notify_init keeps the socket's address
 * and removes NOTIFY_SOCKET from the environment, so that workers and
 * handlers, which inherit the environment, cannot speak for the service.
 */
#include "rowq.h"

#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

static char	*notify_socket;
static int64_t	 notify_watchdog_interval_ms;

void
notify_init(void)
{
	const char *s = getenv("NOTIFY_SOCKET");
	const char *w = getenv("WATCHDOG_USEC");
	const char *wp = getenv("WATCHDOG_PID");

	if (s != NULL && *s != '\0')
		notify_socket = xstrdup(s);
	if (w != NULL && (wp == NULL || atol(wp) == (long)getpid()))
		notify_watchdog_interval_ms = atoll(w) / 1000;
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

static void
notify_send(const char *msg)
{
	if (notify_socket == NULL)
		return;
	/* sd_notify reads the address from the environment, just for now. */
	setenv("NOTIFY_SOCKET", notify_socket, 1);
	(void)sd_notify(0, msg);
	unsetenv("NOTIFY_SOCKET");
}

void
notify_ready(void)
{
	notify_send("READY=1");
}

/* systemd wants the time of the reload with it, to order the messages. */
void
notify_reloading(void)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%lld",
	    (long long)now_ms() * 1000);
	notify_send(msg);
}

void
notify_stopping(void)
{
	notify_send("STOPPING=1");
}

void
notify_status(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "STATUS=");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
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
