/*
 * hunt: a hostile handler for tests, looking for the database password
 * wherever a handler might find it.
 *
 *   hunt exec ORACLE OUT [PATH...]   hunt once, exit 0
 *   hunt pipe ORACLE OUT [PATH...]   hunt for each row read, answer "ok"
 *
 * ORACLE holds the password (the test's knowledge, not rowq's).  Each hunt
 * appends to OUT one line "uid UID" and one line "found WHERE" for every
 * place that holds the password: its own environment and arguments, every
 * descriptor it inherited beyond 0-2, the environ, cmdline, memory and
 * descriptors of its parent (the worker) and grandparent (the
 * supervisor), the files in $CREDENTIALS_DIRECTORY, and each PATH given
 * (the credential's and password file's known paths).  "fd N" names a
 * descriptor beyond 0-2 that was open, "read PATH: RESULT" says what
 * opening each PATH gave, "mem PID: RESULT" whether a memory was
 * readable at all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static char secret[512];
static size_t secret_len;
static FILE *out;

static int
holds(const char *data, size_t n)
{
	return secret_len > 0 && memmem(data, n, secret, secret_len) != NULL;
}

/* Read a whole file (bounded) and say whether it holds the secret. */
static int
file_holds(const char *path, int *err)
{
	static char buf[1 << 20];
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd == -1) {
		*err = errno;
		return 0;
	}
	*err = 0;
	while (len < sizeof(buf) &&
	    (n = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	if (n == -1 && len == 0)
		*err = errno;
	close(fd);
	return holds(buf, len);
}

static void
found(const char *where)
{
	fprintf(out, "found %s\n", where);
}

/* Every readable mapping of pid, through /proc/PID/mem. */
static void
hunt_mem(pid_t pid)
{
	char path[64], line[512];
	static char chunk[1 << 20];
	FILE *maps;
	int fd, hit = 0;

	snprintf(path, sizeof(path), "/proc/%ld/mem", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		fprintf(out, "mem %ld: %s\n", (long)pid, strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "/proc/%ld/maps", (long)pid);
	if ((maps = fopen(path, "re")) == NULL) {
		fprintf(out, "mem %ld: maps: %s\n", (long)pid, strerror(errno));
		close(fd);
		return;
	}
	while (!hit && fgets(line, sizeof(line), maps) != NULL) {
		unsigned long start, end;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3 ||
		    perms[0] != 'r' || strstr(line, "[vvar") != NULL ||
		    strstr(line, "[vsyscall]") != NULL ||
		    end - start > 256UL << 20)	/* sanitizer shadow */
			continue;
		for (unsigned long a = start; a < end && !hit;
		    a += sizeof(chunk)) {
			size_t want = end - a < sizeof(chunk) ? end - a :
			    sizeof(chunk);
			/* Overlap chunks so that no match is cut in two. */
			ssize_t n = pread(fd, chunk, want, (off_t)a);
			if (n > 0 && holds(chunk, (size_t)n))
				hit = 1;
			if (a > start && n > 0 && secret_len > 1) {
				char edge[1024];
				size_t k = secret_len - 1;
				if (pread(fd, edge, 2 * k, (off_t)(a - k)) ==
				    (ssize_t)(2 * k) && holds(edge, 2 * k))
					hit = 1;
			}
		}
	}
	fclose(maps);
	close(fd);
	fprintf(out, "mem %ld: readable\n", (long)pid);
	if (hit) {
		snprintf(path, sizeof(path), "mem of %ld", (long)pid);
		found(path);
	}
}

/* Another process: environ, cmdline, memory, descriptors. */
static void
hunt_process(pid_t pid, const char *who)
{
	static const char *const files[] = { "environ", "cmdline" };
	char path[128], where[512];
	DIR *d;
	struct dirent *e;
	int err;

	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid,
		    files[i]);
		if (file_holds(path, &err)) {
			snprintf(where, sizeof(where), "%s %s", who, files[i]);
			found(where);
		}
	}
	hunt_mem(pid);
	snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
	if ((d = opendir(path)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char fdpath[512];
		if (e->d_name[0] == '.')
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, e->d_name);
		if (file_holds(fdpath, &err)) {
			snprintf(where, sizeof(where), "%s fd %s", who,
			    e->d_name);
			found(where);
		}
	}
	closedir(d);
}

static pid_t
parent_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	long ppid = 0;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %*c %ld", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

static void
hunt(int argc, char **argv)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	DIR *d;
	struct dirent *e;
	int err;

	fprintf(out, "uid %ld\n", (long)getuid());
	for (char **v = environ; *v != NULL; v++)
		if (holds(*v, strlen(*v)))
			found("environment");
	for (int i = 0; i < argc; i++)
		if (holds(argv[i], strlen(argv[i])))
			found("argv");
	/* Descriptors beyond 0-2 (the directory stream's own excepted). */
	if ((d = opendir("/proc/self/fd")) != NULL) {
		while ((e = readdir(d)) != NULL) {
			int fd = atoi(e->d_name);
			char path[300];
			if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d) ||
			    fd == fileno(out))
				continue;
			fprintf(out, "fd %d\n", fd);
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			if (file_holds(path, &err))
				found("inherited descriptor");
		}
		closedir(d);
	}
	pid_t worker = getppid();
	hunt_process(worker, "worker");
	pid_t supervisor = parent_of(worker);
	if (supervisor > 1)
		hunt_process(supervisor, "supervisor");
	if (dir != NULL && (d = opendir(dir)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			char path[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (file_holds(path, &err))
				found("$CREDENTIALS_DIRECTORY");
		}
		closedir(d);
	}
	for (int i = 4; i < argc; i++) {
		int hit = file_holds(argv[i], &err);
		fprintf(out, "read %s: %s\n", argv[i], err ? strerror(err) :
		    "ok");
		if (hit)
			found(argv[i]);
	}
	fflush(out);
}

int
main(int argc, char **argv)
{
	FILE *o;
	char line[65536];

	if (argc < 4)
		return 64;
	if ((o = fopen(argv[2], "re")) == NULL)
		return 111;
	secret_len = fread(secret, 1, sizeof(secret) - 1, o);
	fclose(o);
	while (secret_len > 0 && secret[secret_len - 1] == '\n')
		secret_len--;
	if ((out = fopen(argv[3], "ae")) == NULL)
		return 111;
	if (strcmp(argv[1], "exec") == 0) {
		while (fgets(line, sizeof(line), stdin) != NULL)
			;
		hunt(argc, argv);
		return 0;
	}
	while (fgets(line, sizeof(line), stdin) != NULL) {
		hunt(argc, argv);
		printf("ok\n");
		fflush(stdout);
	}
	return 0;
}
