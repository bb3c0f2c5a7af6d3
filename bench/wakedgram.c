/*
 * wakedgram: a producer's own wake, without starting `rowq wake` each
 * time: each line read from standard input (a queue's name) is sent as
 * one datagram to the daemon's wake socket, as `rowq wake` does.
 *
 *	wakedgram /run/rowq/NAME.wake
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

int
main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[256];
	int fd;

	if (argc != 2 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: wakedgram SOCKET\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		perror("socket");
		return 1;
	}
	while (fgets(line, sizeof(line), stdin) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		/* A wake is a hint: a daemon not listening is no error. */
		(void)sendto(fd, line, strlen(line), 0,
		    (struct sockaddr *)&sa, sizeof(sa));
	}
	return 0;
}
