/*
 * check_config_hosts.c: database.host:, read by config_hosts.c through
 * config_load: one host or a list, each with a port of its own or port:'s
 * (or 3306), IPv6 addresses bare or in brackets, and each mistake refused
 * as "rowq.yaml:LINE: database.host[N]: ...".
 *
 * Each test runs in a fresh temporary directory, its current directory,
 * and captures what config_load logs by pointing descriptor 2 at a
 * temporary file, as check_config.c does.
 */
#include "rowq.h"

#include <check.h>
#include "unit.h"
#include "unit_dir.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NELEMS(a)	(sizeof(a) / sizeof((a)[0]))

#define QUEUE \
	"queues:\n" \
	"  q:\n" \
	"    select: SELECT id FROM t\n" \
	"    exec: [/bin/true]\n" \
	"    done: UPDATE t SET s = 1 WHERE id = :id\n" \
	"    failed: UPDATE t SET s = 2 WHERE id = :id\n"

/* Write rowq.yaml with this database: section and load it; *log: caller frees. */
static struct config *
load(const char *database, char **log)
{
	FILE *tmp = tmpfile();
	struct config *cfg;
	int fd, saved;
	long len;
	char *yaml;

	ck_assert(asprintf(&yaml, "database:\n%s" QUEUE, database) != -1);
	fd = open("rowq.yaml", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_msg(fd != -1, "rowq.yaml: %s", strerror(errno));
	ck_assert(write(fd, yaml, strlen(yaml)) == (ssize_t)strlen(yaml));
	close(fd);
	free(yaml);

	ck_assert(tmp != NULL);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	ck_assert(saved != -1);
	ck_assert(dup2(fileno(tmp), STDERR_FILENO) != -1);
	cfg = config_load("rowq.yaml");
	ck_assert(dup2(saved, STDERR_FILENO) != -1);
	close(saved);
	len = ftell(tmp);
	ck_assert(len >= 0);
	*log = calloc(1, (size_t)len + 1);
	rewind(tmp);
	ck_assert(fread(*log, 1, (size_t)len, tmp) == (size_t)len);
	fclose(tmp);
	return cfg;
}

static struct config *
accepted(const char *database)
{
	struct config *cfg;
	char *log;

	cfg = load(database, &log);
	ck_assert_msg(cfg != NULL, "refused:\n%s\n%s", database, log);
	ck_assert_msg(log[0] == '\0', "logged:\n%s", log);
	free(log);
	return cfg;
}

/* Refused, with exactly these lines logged ("rowq: " before each). */
static void
refused(const char *database, const char *messages)
{
	struct config *cfg;
	char *log;

	cfg = load(database, &log);
	ck_assert_msg(cfg == NULL, "accepted:\n%s", database);
	ck_assert_str_eq(log, messages);
	free(log);
}

/* One host, as written in host: alone; port: where it says so. */
static const struct {
	const char	*host;		/* YAML, after "host: " */
	const char	*port;		/* port:, or NULL */
	const char	*name;
	unsigned	 want_port;
} one[] = {
	{ "db1.example.com", NULL, "db1.example.com", 3306 },
	{ "db1", "3310", "db1", 3310 },
	{ "db1:3307", NULL, "db1", 3307 },
	{ "\"db1:3307\"", "3310", "db1", 3307 },	/* its own port first */
	{ "db1:1", NULL, "db1", 1 },
	{ "db1:65535", NULL, "db1", 65535 },
	{ "db1:03307", NULL, "db1", 3307 },
	{ "127.0.0.1", NULL, "127.0.0.1", 3306 },
	{ "127.0.0.1:3307", NULL, "127.0.0.1", 3307 },
	{ "localhost", "3307", "localhost", 3307 },
	/* IPv6: bare without a port, in brackets with or without one. */
	{ "\"::1\"", NULL, "::1", 3306 },
	{ "\"fd00::4\"", "3310", "fd00::4", 3310 },
	{ "\"2001:db8:0:0:0:0:0:1\"", NULL, "2001:db8:0:0:0:0:0:1", 3306 },
	{ "\"::ffff:192.0.2.1\"", NULL, "::ffff:192.0.2.1", 3306 },
	{ "\"fe80::1%eth0\"", NULL, "fe80::1%eth0", 3306 },
	{ "\"[::1]\"", NULL, "::1", 3306 },
	{ "\"[::1]\"", "3310", "::1", 3310 },
	{ "\"[::1]:3307\"", NULL, "::1", 3307 },
	{ "\"[fd00::3]:3308\"", "3310", "fd00::3", 3308 },
	{ "\"[fe80::1%eth0]:3307\"", NULL, "fe80::1%eth0", 3307 },
};

START_TEST(test_one)
{
	struct config *cfg;
	char db[256];

	snprintf(db, sizeof(db), "  host: %s\n%s%s%s", one[_i].host,
	    one[_i].port ? "  port: " : "", one[_i].port ? one[_i].port : "",
	    one[_i].port ? "\n" : "");
	cfg = accepted(db);
	ck_assert_uint_eq(cfg->db.nhosts, 1);
	ck_assert_str_eq(cfg->db.hosts[0].name, one[_i].name);
	ck_assert_uint_eq(cfg->db.hosts[0].port, one[_i].want_port);
	config_free(cfg);
}
END_TEST

/* A list, in flow and block style, in its order. */
START_TEST(test_list)
{
	struct config *cfg;

	cfg = accepted("  host:\n"
	    "    - db1\n"
	    "    - db2:3307\n"
	    "    - \"[fd00::3]:3308\"\n"
	    "    - \"fd00::4\"\n"
	    "  port: 3310\n");
	ck_assert_uint_eq(cfg->db.nhosts, 4);
	ck_assert_str_eq(cfg->db.hosts[0].name, "db1");
	ck_assert_uint_eq(cfg->db.hosts[0].port, 3310);
	ck_assert_str_eq(cfg->db.hosts[1].name, "db2");
	ck_assert_uint_eq(cfg->db.hosts[1].port, 3307);
	ck_assert_str_eq(cfg->db.hosts[2].name, "fd00::3");
	ck_assert_uint_eq(cfg->db.hosts[2].port, 3308);
	ck_assert_str_eq(cfg->db.hosts[3].name, "fd00::4");
	ck_assert_uint_eq(cfg->db.hosts[3].port, 3310);
	config_free(cfg);

	cfg = accepted("  host: [db1]\n");
	ck_assert_uint_eq(cfg->db.nhosts, 1);
	ck_assert_str_eq(cfg->db.hosts[0].name, "db1");
	ck_assert_uint_eq(cfg->db.hosts[0].port, 3306);
	config_free(cfg);
}
END_TEST

/* DB_HOSTS_MAX hosts, and not one more. */
START_TEST(test_most)
{
	struct config *cfg;
	char db[1024], msg[256];
	size_t len;

	len = (size_t)snprintf(db, sizeof(db), "  host: [");
	for (int i = 0; i < DB_HOSTS_MAX; i++)
		len += (size_t)snprintf(db + len, sizeof(db) - len, "%sh%d",
		    i ? ", " : "", i);
	snprintf(db + len, sizeof(db) - len, "]\n");
	cfg = accepted(db);
	ck_assert_uint_eq(cfg->db.nhosts, DB_HOSTS_MAX);
	ck_assert_str_eq(cfg->db.hosts[DB_HOSTS_MAX - 1].name, "h15");
	config_free(cfg);

	snprintf(db + len, sizeof(db) - len, ", one_more, two_more]\n");
	snprintf(msg, sizeof(msg), "rowq: rowq.yaml:2: database.host[%d]: "
	    "more than %d hosts\nrowq: rowq.yaml:2: database.host[%d]: more "
	    "than %d hosts\n", DB_HOSTS_MAX, DB_HOSTS_MAX, DB_HOSTS_MAX + 1,
	    DB_HOSTS_MAX);
	refused(db, msg);
}
END_TEST

/* What is no host, each with its message: file, line, key, the value. */
static const struct {
	const char	*host;
	const char	*message;	/* after "rowq.yaml:2: database.host: " */
} bad[] = {
	{ "\"db1:\"", "not a port (1 to 65535) after the host's colon: \"db1:\"" },
	{ "\"db1:0\"", "not a port (1 to 65535) after the host's colon: \"db1:0\"" },
	{ "\"db1:65536\"", "not a port (1 to 65535) after the host's colon: \"db1:65536\"" },
	{ "\"db1:99999999999999999999\"", "not a port (1 to 65535) after the host's colon: \"db1:99999999999999999999\"" },
	{ "\"db1:-1\"", "not a port (1 to 65535) after the host's colon: \"db1:-1\"" },
	{ "\"db1:+1\"", "not a port (1 to 65535) after the host's colon: \"db1:+1\"" },
	{ "\"db1: 3307\"", "not a port (1 to 65535) after the host's colon: \"db1: 3307\"" },
	{ "\"db1:3307x\"", "not a port (1 to 65535) after the host's colon: \"db1:3307x\"" },
	{ "\"db1:mysql\"", "not a port (1 to 65535) after the host's colon: \"db1:mysql\"" },
	{ "\"[::1]:\"", "not a port (1 to 65535) after the host's colon: \"[::1]:\"" },
	{ "\"[::1]:70000\"", "not a port (1 to 65535) after the host's colon: \"[::1]:70000\"" },
	{ "\"\"", "expected a host name or address, not an empty value" },
	{ "\":3307\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \":3307\"" },
	{ "\"db 1\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"db 1\"" },
	{ "\"db\\t1\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"db?1\"" },
	{ "/run/mysqld/mysqld.sock", "not a host, HOST:PORT or [ADDRESS]:PORT: \"/run/mysqld/mysqld.sock\"" },
	{ "\"[fd00::1\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"[fd00::1\"" },
	{ "\"[]\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"[]\"" },
	{ "\"[]:3306\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"[]:3306\"" },
	{ "\"[::1]3306\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"[::1]3306\"" },
	{ "\"[::1]]:3306\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"[::1]]:3306\"" },
	{ "\"[fd00:: 1]:3306\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"[fd00:: 1]:3306\"" },
	/* Two colons and no brackets: an IPv6 address, or nothing. */
	{ "\"db1:3306:\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"db1:3306:\"" },
	{ "\"db1:3306:3307\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"db1:3306:3307\"" },
	{ "\"db1.example.com::3306\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"db1.example.com::3306\"" },
	{ "\"fd00:::1\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"fd00:::1\"" },
	/* In brackets, an IPv6 address. */
	{ "\"[db1]:3306\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"[db1]:3306\"" },
	{ "\"[db1:3306]\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"[db1:3306]\"" },
	{ "\"[fe80::1%]:3306\"", "not a host, HOST:PORT or [ADDRESS]:PORT: \"[fe80::1%]:3306\"" },
	/* Not a scalar. */
	{ "{name: db1}", "expected a host name or address, not a mapping" },
	{ "~", "expected a host name or address, not an empty value" },
};

START_TEST(test_bad)
{
	char db[256], msg[512];

	snprintf(db, sizeof(db), "  host: %s\n", bad[_i].host);
	snprintf(msg, sizeof(msg), "rowq: rowq.yaml:2: database.host: %s\n",
	    bad[_i].message);
	refused(db, msg);
}
END_TEST

/* In a list: the item's index and its own line, each mistake reported. */
START_TEST(test_bad_item)
{
	refused("  host:\n"
	    "    - db1\n"
	    "    - \"db2:0\"\n"
	    "    - db3\n"
	    "    - \"[db4]\"\n"
	    "    - [db5]\n",
	    "rowq: rowq.yaml:4: database.host[1]: not a port (1 to 65535) "
	    "after the host's colon: \"db2:0\"\n"
	    "rowq: rowq.yaml:6: database.host[3]: not a host, HOST:PORT or "
	    "[ADDRESS]:PORT: \"[db4]\"\n"
	    "rowq: rowq.yaml:7: database.host[4]: expected a host name or "
	    "address, not a sequence\n");
	refused("  host: []\n",
	    "rowq: rowq.yaml:2: database.host: an empty list: name at least "
	    "one host\n");
	refused("  host: [a, \"b:99999\"]\n",
	    "rowq: rowq.yaml:2: database.host[1]: not a port (1 to 65535) "
	    "after the host's colon: \"b:99999\"\n");
}
END_TEST

/* A long value is shown cut, never overflowing the message. */
START_TEST(test_long)
{
	char db[4200], *log;
	struct config *cfg;

	memset(db, 'h', sizeof(db));
	memcpy(db, "  host: \"", 9);
	memcpy(db + sizeof(db) - 9, ":99999\"\n", 9);
	cfg = load(db, &log);
	ck_assert_ptr_null(cfg);
	const char *want = "rowq: rowq.yaml:2: database.host: not a port "
	    "(1 to 65535) after the host's colon: \"hhh";

	ck_assert_msg(strncmp(log, want, strlen(want)) == 0, "%s", log);
	ck_assert(strlen(log) < 400);
	free(log);
}
END_TEST

static Suite *
config_hosts_suite(void)
{
	Suite *s = suite_create("config_hosts");
	TCase *tc = tcase_create("config_hosts");

	tcase_add_unchecked_fixture(tc, unit_dir_make, unit_dir_remove);
	tcase_add_checked_fixture(tc, unit_dir_enter, unit_dir_leave);
	tcase_add_loop_test(tc, test_one, 0, NELEMS(one));
	tcase_add_test(tc, test_list);
	tcase_add_test(tc, test_most);
	tcase_add_loop_test(tc, test_bad, 0, NELEMS(bad));
	tcase_add_test(tc, test_bad_item);
	tcase_add_test(tc, test_long);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return unit_run(config_hosts_suite());
}
