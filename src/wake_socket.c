/*
 * wake_socket.c: `rowq wake QUEUE`, a producer's push.  The daemon binds
 * a datagram socket beside its status socket (NAME.wake for NAME.sock);
 * each datagram names a queue, and the wake watcher reads that queue at
 * once (wake_watch_queue).  A datagram needs no answer and no
 * connection: the daemon reads it without ever waiting, and the producer
 * never waits for the daemon.  A wake is a hint: `rowq wake` exits 0
 * when no daemon listens, and a lost datagram costs at most `idle`.
 */
#include "rowq.h"
#include "supervisor.h"
#include "claim.h"
#include "commands.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* At most this many datagrams are read at one turn of the loop. */
#define WAKE_READS_MAX	64

/* The status socket's path, with .wake for its .sock (or appended). */
char *
wake_socket_path(const struct config *cfg)
{
	char *status = status_socket_path(cfg);
	size_t n = strlen(status);
	struct buf b = { 0 };

	if (n > 5 && strcmp(status + n - 5, ".sock") == 0)
		status[n - 5] = '\0';
	buf_printf(&b, "%s.wake", status);
	free(status);
	return buf_steal(&b);
}

static int
wake_socket_address(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -1;
	memcpy(sa->sun_path, path, strlen(path) + 1);
	return 0;
}

/*
 * Bind the socket, for the daemon's user and group only, as the status
 * socket; a stale one is replaced.  The status socket already refused
 * to start beside a live daemon.  On failure wakes come by polling only.
 */
static void
wake_socket_start(struct supervisor *s)
{
	struct sockaddr_un sa;
	struct stat st;
	mode_t old;
	int fd;

	s->wake_fd = -1;
	if (s->status_fd == -1)
		return;
	s->wake_path = wake_socket_path(s->current->cfg);
	if (wake_socket_address(s->wake_path, &sa) == -1) {
		log_warnx("wake socket: path too long: %s", s->wake_path);
		return;
	}
	if (lstat(s->wake_path, &st) == 0 && S_ISSOCK(st.st_mode))
		(void)unlink(s->wake_path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	old = umask(0117);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    chmod(s->wake_path, 0660) == -1) {
		log_warn("wake socket %s: `rowq wake` is not heard",
		    s->wake_path);
		if (fd != -1)
			close(fd);
		fd = -1;
	}
	umask(old);
	s->wake_fd = fd;
}

static void
wake_socket_stop(struct supervisor *s)
{
	if (s->wake_fd != -1) {
		close(s->wake_fd);
		(void)unlink(s->wake_path);
	}
	s->wake_fd = -1;
	free(s->wake_path);
	s->wake_path = NULL;
}

static void
wake_socket_poll_fds(struct supervisor *s, struct pollfd *p, nfds_t *np)
{
	if (s->wake_fd != -1)
		p[(*np)++] = (struct pollfd){ .fd = s->wake_fd,
		    .events = POLLIN };
}

/* Each datagram names a queue; a name the daemon does not run is logged. */
static void
wake_socket_handle(struct supervisor *s, const struct pollfd *p, nfds_t np)
{
	char name[256];
	ssize_t n;

	if (np == 0 || s->wake_fd == -1 || p[0].revents == 0)
		return;
	for (int i = 0; i < WAKE_READS_MAX; i++) {
		n = recv(s->wake_fd, name, sizeof(name) - 1, 0);
		if (n < 0)
			break;
		name[n] = '\0';
		log_debug("wake for %s", name);
		if (wake_watch_queue(s, name) == -1)
			log_debug("wake for %s: no such queue here", name);
	}
}

/* The datagram that names queue, to the daemon of cfg if one listens. */
void
wake_send(const struct config *cfg, const char *queue)
{
	struct sockaddr_un sa;
	char *path = wake_socket_path(cfg);
	int fd;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd != -1 && wake_socket_address(path, &sa) == 0)
		(void)sendto(fd, queue, strlen(queue), 0,
		    (struct sockaddr *)&sa, sizeof(sa));
	if (fd != -1)
		close(fd);
	free(path);
}

/*
 * `rowq wake QUEUE`: 0 whether or not a daemon heard it, 2 for a queue
 * the configuration does not name.
 */
int
wake_command(const char *config_path, const char *queue)
{
	struct config *cfg = config_load(config_path);

	if (cfg == NULL)
		return ROWQ_EXIT_CONFIG;
	if (config_queue(cfg, queue) == NULL) {
		log_error("%s: no queue named %s", config_path, queue);
		config_free(cfg);
		return ROWQ_EXIT_USAGE;
	}
	wake_send(cfg, queue);
	config_free(cfg);
	return ROWQ_EXIT_OK;
}

const struct supervisor_part wake_socket_part = {
	.name = "wake socket",
	.poll_max = 1,
	.start = wake_socket_start,
	.stop = wake_socket_stop,
	.poll_fds = wake_socket_poll_fds,
	.handle = wake_socket_handle,
};
