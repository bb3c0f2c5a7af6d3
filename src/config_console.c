/*
 * config_console.c: console:, the web console (console.c).  listen: is
 * loopback by default; an address beyond loopback needs tls: (HTTPS) or
 * insecure_listen: true, which says that plain HTTP there is meant (a
 * proxy in front that speaks TLS, a private network).  users_file: is
 * read here as it will be by the console, so that a mistake in it is
 * said at load, with its own file and line; the console reads it again
 * when it starts, and nothing of it stays in the supervisor.  Only the
 * commands that serve the console read it and tls:'s files (enum
 * config_private): they are rowq's own user's to read.
 */
#include "config.h"
#include "console.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct console_tls {
	char	*cert;
	char	*key;
	int	 min_version;	/* 12 or 13 */
};

/*
 * tls.min_version: "1.2" (the default) or "1.3"; TLS 1.0 and 1.1 are
 * never spoken.
 */
static void
config_field_tls_version(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "\"1.2\" or \"1.3\"");
	char shown[CONFIG_SHOW_MAX + 8];

	(void)f;
	if (s == NULL)
		return;
	if (strcmp(s, "1.2") == 0)
		*(int *)dst = 12;
	else if (strcmp(s, "1.3") == 0)
		*(int *)dst = 13;
	else
		config_error(ld, it->value->line, it->path, "expected \"1.2\" "
		    "or \"1.3\" (TLS 1.0 and 1.1 are never spoken), not %s",
		    config_show(s, shown, sizeof(shown)));
}

static const struct config_field console_tls_fields[] = {
	FIELD(struct console_tls, "cert", path, cert, 0, 0),
	FIELD(struct console_tls, "key", path, key, 0, 0),
	FIELD(struct console_tls, "min_version", tls_version, min_version, 0,
	    0),
};

/*
 * Whether a file of the console's (its users, its certificate and key)
 * is there and readable, where the load reads them: the commands that
 * do not serve the console leave them alone (CONFIG_PRIVATE_SKIP);
 * `rowq check` run by a user who may not read one warns, since rowq run
 * reads it as its own user; rowq run and a reload must read it.
 */
static bool
config_console_readable(struct load *ld, unsigned long line, const char *path,
    const char *file)
{
	char *where;
	int fd;

	if (ld->private_files == CONFIG_PRIVATE_SKIP)
		return false;
	if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY)) != -1) {
		close(fd);
		return true;
	}
	if (ld->private_files == CONFIG_PRIVATE_WARN && (errno == EACCES ||
	    errno == EPERM)) {
		where = config_where(ld, line, path);
		log_warnx("%s: %s: %s: not checked (rowq run reads it, as its "
		    "own user)", where, file, strerror(errno));
		free(where);
	} else
		config_error(ld, line, path, "%s: %s", file, strerror(errno));
	return false;
}

static void
config_field_console_tls(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	static const char *const required[] = { "cert", "key", NULL };
	const struct node *seen[NELEMS(console_tls_fields)] = { 0 };
	struct console_options *c = dst;
	struct console_tls t = { .min_version = 12 };
	char path[CONFIG_PATH_MAX];

	(void)f;
	if (config_walk(ld, it, console_tls_fields,
	    NELEMS(console_tls_fields), &t, seen) == 0) {
		config_require(ld, it, console_tls_fields,
		    NELEMS(console_tls_fields), seen, required);
		/* cert and key: the table's first two rows. */
		for (size_t i = 0; i < 2; i++) {
			const char *file = i == 0 ? t.cert : t.key;
			if (seen[i] == NULL || file == NULL)
				continue;
			config_path(path, sizeof(path), it->path,
			    console_tls_fields[i].name);
			(void)config_console_readable(ld, seen[i]->line, path,
			    file);
		}
	}
	c->tls_cert = t.cert;
	c->tls_key = t.key;
	c->tls_min_version = t.min_version;
}

static const struct config_field console_fields[] = {
	FIELD(struct console_options, "listen", string, listen, 0, 0),
	FIELD(struct console_options, "users_file", path, users_file, 0, 0),
	WHOLE("tls", console_tls),
	FIELD(struct console_options, "insecure_listen", bool,
	    insecure_listen, 0, 0),
};

/* Whether HOST:PORT is an address of this machine's loopback only. */
static bool
config_console_loopback(const char *addr)
{
	const char *colon = strrchr(addr, ':');
	char host[64];
	unsigned char a[16];

	if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
		return false;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	if (strcmp(host, "[::1]") == 0)
		return true;
	return inet_pton(AF_INET, host, a) == 1 && a[0] == 127;
}

/*
 * The users file, parsed as the console will, where the load reads the
 * console's files; its problems said here.
 */
static void
config_console_users(struct load *ld, const struct config_item *it,
    const struct node *k, const char *file)
{
	char path[CONFIG_PATH_MAX];
	struct console_users users = { 0 };
	struct buf why = { 0 };

	config_path(path, sizeof(path), it->path, "users_file");
	if (!config_console_readable(ld, k->line, path, file))
		return;
	if (console_users_load(file, &users, &why) == -1)
		config_error(ld, k->line, path, "%s", why.data);
	else if (users.n == 0)
		config_error(ld, k->line, path, "%s: no user: add a line made "
		    "by rowq console-user NAME", file);
	console_users_free(&users);
	buf_free(&why);
}

void
config_field_console(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	static const char *const required[] = { "users_file", NULL };
	const struct node *seen[NELEMS(console_fields)] = { 0 };
	struct console_options *c = dst;
	struct sockaddr_storage ss;
	const struct node *k;
	char path[CONFIG_PATH_MAX], shown[CONFIG_SHOW_MAX + 8];

	(void)f;
	if (config_walk(ld, it, console_fields, NELEMS(console_fields), c,
	    seen) == -1)
		return;
	c->on = true;
	config_require(ld, it, console_fields, NELEMS(console_fields), seen,
	    required);
	if (c->listen == NULL)
		c->listen = xstrdup(CONSOLE_LISTEN_DEFAULT);
	k = SEEN(console_fields, seen, "listen");
	config_path(path, sizeof(path), it->path, "listen");
	if (mhd_address(c->listen, &ss) == -1)
		config_error(ld, k ? k->line : it->key->line, path,
		    "not an address HOST:PORT (IPv4, or [IPv6]): %s",
		    config_show(c->listen, shown, sizeof(shown)));
	else if (!config_console_loopback(c->listen) &&
	    c->tls_cert == NULL && !c->insecure_listen)
		config_error(ld, k ? k->line : it->key->line, path,
		    "%s is not a loopback address, and the console would "
		    "send passwords and sessions there in plain text: give "
		    "tls: {cert: ..., key: ...}, or insecure_listen: true "
		    "if a proxy in front encrypts", c->listen);
	if ((k = SEEN(console_fields, seen, "users_file")) != NULL &&
	    c->users_file != NULL)
		config_console_users(ld, it, k, c->users_file);
}

void
config_console_free(struct console_options *c)
{
	free(c->listen);
	free(c->users_file);
	free(c->tls_cert);
	free(c->tls_key);
}
