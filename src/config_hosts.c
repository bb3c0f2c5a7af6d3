/*
 * config_hosts.c: database.host:, one server or a list of them.  Each is
 * "HOST", "HOST:PORT" or "[ADDRESS]:PORT" (an IPv6 address with a port
 * in brackets; without a port it may stand bare).  Those without a port
 * get port:, or 3306.  db.c tries them in order and keeps the first that
 * answers and is writable (db_connect.c).
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

/*
 * An IPv6 address, with a zone ("fe80::1%eth0") or without: all that may
 * stand in brackets, or bare with its colons, so that a typo such as
 * "db1:3306:" is refused here rather than by the resolver at each connect.
 */
static bool
config_host_ipv6(const char *name, size_t len)
{
	const char *zone = memchr(name, '%', len);
	size_t n = zone != NULL ? (size_t)(zone - name) : len;
	char addr[INET6_ADDRSTRLEN];
	struct in6_addr a;

	if (n >= sizeof(addr) || (zone != NULL && zone + 1 == name + len))
		return false;
	memcpy(addr, name, n);
	addr[n] = '\0';
	return inet_pton(AF_INET6, addr, &a) == 1;
}

/* Split "HOST[:PORT]" into h; logs and returns -1 when it is no host. */
static int
config_host_parse(struct load *ld, const struct config_item *it,
    const char *s, struct db_host *h)
{
	char shown[CONFIG_SHOW_MAX + 8], *end;
	const char *colon = strrchr(s, ':'), *name = s;
	size_t len = strlen(s);
	unsigned long port = 0;
	bool ipv6 = false;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL || close == s + 1 ||
		    (close[1] != '\0' && close[1] != ':'))
			goto bad;
		name = s + 1;
		len = (size_t)(close - name);
		colon = close[1] == ':' ? close + 1 : NULL;
		ipv6 = true;
	} else if (colon != NULL && strchr(s, ':') != colon) {
		colon = NULL;		/* a bare IPv6 address */
		ipv6 = true;
	} else if (colon != NULL) {
		len = (size_t)(colon - s);
	}
	if (colon != NULL) {
		port = strtoul(colon + 1, &end, 10);
		if (colon[1] < '0' || colon[1] > '9' || *end != '\0' ||
		    port < 1 || port > 65535) {
			config_error(ld, it->value->line, it->path, "not a port "
			    "(1 to 65535) after the host's colon: %s",
			    config_show(s, shown, sizeof(shown)));
			return -1;
		}
	}
	if (len == 0 || strcspn(name, " \t/") < len ||
	    (ipv6 && !config_host_ipv6(name, len)))
		goto bad;
	h->name = xstrndup(name, len);
	h->port = (unsigned)port;
	return 0;
bad:
	config_error(ld, it->value->line, it->path, "not a host, HOST:PORT or "
	    "[ADDRESS]:PORT: %s", config_show(s, shown, sizeof(shown)));
	return -1;
}

static void
config_host_add(struct load *ld, const struct config_item *it,
    struct db_options *db)
{
	const char *s = config_scalar(ld, it, "a host name or address");
	struct db_host h;

	if (s == NULL || config_host_parse(ld, it, s, &h) == -1)
		return;
	if (db->nhosts == DB_HOSTS_MAX) {
		config_error(ld, it->value->line, it->path, "more than %d hosts",
		    DB_HOSTS_MAX);
		free(h.name);
		return;
	}
	db->hosts = xrealloc(db->hosts, (db->nhosts + 1) * sizeof(*db->hosts));
	db->hosts[db->nhosts++] = h;
}

/* dst is the struct db_options: host: fills its list of hosts. */
void
config_field_hosts(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const struct node *v = it->value;
	struct db_options *db = dst;
	char path[CONFIG_PATH_MAX];

	(void)f;
	if (v->kind != NODE_SEQUENCE) {
		config_host_add(ld, it, db);
		return;
	}
	if (v->nitems == 0)
		config_error(ld, v->line, it->path, "an empty list: name at "
		    "least one host");
	for (size_t i = 0; i < v->nitems; i++) {
		snprintf(path, sizeof(path), "%s[%zu]", it->path, i);
		struct config_item item = { .key = it->key,
		    .value = v->items[i], .path = path };
		config_host_add(ld, &item, db);
	}
}

/* Hosts named without a port get port:, or MariaDB's own 3306. */
void
config_hosts_port(struct db_options *db)
{
	for (size_t i = 0; i < db->nhosts; i++)
		if (db->hosts[i].port == 0)
			db->hosts[i].port = db->port != 0 ? db->port : 3306;
}

void
config_hosts_free(struct db_options *db)
{
	for (size_t i = 0; i < db->nhosts; i++)
		free(db->hosts[i].name);
	free(db->hosts);
	db->hosts = NULL;
	db->nhosts = 0;
}
