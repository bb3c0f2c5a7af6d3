/*
 * config_tls.c: database.tls:, TLS to the server.  Given at all, it
 * means encrypted or not at all: db_tls.c makes a server without TLS an
 * error rather than fall back to plain text.  verify: full (the default)
 * checks the chain to ca: and that the certificate names the host
 * connected to; ca checks the chain only; off checks nothing (`rowq
 * check` warns).  The files are opened here, so that a missing or
 * unreadable one is said at its line rather than at each connection.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void
config_field_verify(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "full, ca or off");
	char shown[CONFIG_SHOW_MAX + 8];

	(void)f;
	if (s == NULL)
		return;
	if (strcmp(s, "full") == 0)
		*(enum tls_verify *)dst = TLS_VERIFY_FULL;
	else if (strcmp(s, "ca") == 0)
		*(enum tls_verify *)dst = TLS_VERIFY_CA;
	/* YAML 1.1 reads a bare off as false; the parser keeps the text. */
	else if (strcmp(s, "off") == 0)
		*(enum tls_verify *)dst = TLS_VERIFY_OFF;
	else
		config_error(ld, it->value->line, it->path,
		    "expected full, ca or off, not %s",
		    config_show(s, shown, sizeof(shown)));
}

static const struct config_field tls_fields[] = {
	FIELD(struct db_tls, "ca", path, ca, 0, 0),
	FIELD(struct db_tls, "cert", path, cert, 0, 0),
	FIELD(struct db_tls, "key", path, key, 0, 0),
	FIELD(struct db_tls, "verify", verify, verify, 0, 0),
};

/* The file must be there and readable by this process. */
static void
config_tls_readable(struct load *ld, const struct config_item *it,
    const struct node *k, const char *file)
{
	char path[CONFIG_PATH_MAX];
	struct stat st;
	int fd;

	if (k == NULL || file == NULL)
		return;
	config_path(path, sizeof(path), it->path, k->value);
	if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		config_error(ld, k->line, path, "%s: %s", file,
		    strerror(errno));
		return;
	}
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode))
		config_error(ld, k->line, path, "%s: not a regular file",
		    file);
	close(fd);
}

/* A key that needs another: reported at the one given. */
static void
config_tls_needs(struct load *ld, const struct config_item *it,
    const struct node *given, const struct node *needed, const char *what)
{
	char path[CONFIG_PATH_MAX];

	if (given == NULL || needed != NULL)
		return;
	config_path(path, sizeof(path), it->path, given->value);
	config_error(ld, given->line, path, "%s", what);
}

void
config_field_tls(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const struct node *seen[NELEMS(tls_fields)] = { 0 };
	struct db_tls *tls = dst;
	const struct node *ca, *cert, *key;

	(void)f;
	tls->on = true;
	tls->verify = TLS_VERIFY_FULL;
	if (config_walk(ld, it, tls_fields, NELEMS(tls_fields), tls, seen) ==
	    -1)
		return;
	ca = SEEN(tls_fields, seen, "ca");
	cert = SEEN(tls_fields, seen, "cert");
	key = SEEN(tls_fields, seen, "key");
	config_tls_readable(ld, it, ca, tls->ca);
	config_tls_readable(ld, it, cert, tls->cert);
	config_tls_readable(ld, it, key, tls->key);
	config_tls_needs(ld, it, cert, key, "cert needs key: (the client "
	    "certificate's private key)");
	config_tls_needs(ld, it, key, cert, "key needs cert: (the client "
	    "certificate)");
	if (ca == NULL && tls->verify != TLS_VERIFY_OFF) {
		const struct node *v = SEEN(tls_fields, seen, "verify");
		config_error(ld, v != NULL ? v->line : it->key->line, it->path,
		    "verify: %s needs ca: (the CA that signed the server's "
		    "certificate); verify: off encrypts without checking",
		    tls->verify == TLS_VERIFY_CA ? "ca" : "full");
	}
}

void
config_tls_free(struct db_tls *tls)
{
	free(tls->ca);
	free(tls->cert);
	free(tls->key);
}
