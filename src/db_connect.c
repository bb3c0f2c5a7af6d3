/*
 * db_connect.c: opening a connection (db_open): to the first of
 * database.host: that answers and is writable, as libpq's
 * target_session_attrs=read-write does, over TLS when database.tls: says
 * so and then never in plain text.  With db.c and db_bulk.c, an includer
 * of <mysql.h>.
 *
 * A read-only server is a replica, or a primary demoted by a switchover:
 * rows finished there would not count, so it is passed over as if it did
 * not answer.  A worker whose statement meets a read-only error (db.c
 * classifies 1290 and 1836 as DB_RECONNECT) or loses its link reconnects
 * with its usual backoff, and that lands on the host now writable.
 */
#include "rowq.h"
#include "db.h"
#include "db_private.h"
#include "dialect.h"

#include <errmsg.h>
#include <mysqld_error.h>
#include <fcntl.h>
#include <string.h>

/* Client timeouts, so that a frozen server cannot hang a worker forever. */
#define DB_CONNECT_TIMEOUT_S	5
#define DB_READ_TIMEOUT_S	30
#define DB_WRITE_TIMEOUT_S	30
/* A finishing UPDATE waits at most this long for an application's lock. */
#define DB_LOCK_WAIT_TIMEOUT_S	10

/* Whether this process says which host it uses (db_announce_hosts). */
static bool db_announce;
/* How often a reading session asks whether its server was demoted. */
#define DB_DEMOTED_EVERY_MS	10000

/* The host this process last connected to, to tell a move. */
static char db_last_where[sizeof(((struct db *)0)->where)];

void
db_announce_hosts(void)
{
	db_announce = true;
}

/* libmariadb does not promise SOCK_CLOEXEC: a handler must not get the link. */
static void
db_cloexec(struct db *db)
{
	int fd = (int)mysql_get_socket(db->mysql);

	if (fd >= 0)
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/*
 * TLS, and nothing less once asked for.  libmariadb 3.3 checks the
 * server's name only under MYSQL_OPT_SSL_VERIFY_SERVER_CERT (off by
 * default), and with a CA it checks the chain in any case.  It refuses a
 * server that offers no TLS before logging in only under that same
 * option: MYSQL_OPT_SSL_ENFORCE alone still falls back to plain text.
 * So under verify: ca and off db_connect_one refuses such a session
 * after the login, before any statement (the man page says what that
 * leaves open).  verify: off gives the library no CA: the session is
 * encrypted, but anyone may answer.
 */
static void
db_set_tls(MYSQL *m, const struct db_tls *t)
{
	my_bool on = 1, verify_name = t->verify == TLS_VERIFY_FULL;

	mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &on);
	mysql_optionsv(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify_name);
	if (t->verify != TLS_VERIFY_OFF && t->ca != NULL)
		mysql_optionsv(m, MYSQL_OPT_SSL_CA, t->ca);
	if (t->cert != NULL)
		mysql_optionsv(m, MYSQL_OPT_SSL_CERT, t->cert);
	if (t->key != NULL)
		mysql_optionsv(m, MYSQL_OPT_SSL_KEY, t->key);
}

static void
db_set_options(MYSQL *m, const struct db_options *o)
{
	unsigned int connect_timeout = DB_CONNECT_TIMEOUT_S;
	unsigned int read_timeout = DB_READ_TIMEOUT_S;
	unsigned int write_timeout = DB_WRITE_TIMEOUT_S;
	my_bool off = 0;

	mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
	mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &read_timeout);
	mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &write_timeout);
	mysql_optionsv(m, MYSQL_OPT_RECONNECT, &off);
	mysql_optionsv(m, MYSQL_OPT_LOCAL_INFILE, &off);
	mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (o->option_file)
		mysql_optionsv(m, MYSQL_READ_DEFAULT_FILE, o->option_file);
	if (o->option_group)
		mysql_optionsv(m, MYSQL_READ_DEFAULT_GROUP, o->option_group);
	/* After the option file, so that it cannot turn TLS off. */
	if (o->tls.on)
		db_set_tls(m, &o->tls);
}

/* MariaDB (not MySQL) 10.2 and later: COM_STMT_BULK_EXECUTE. */
static bool
db_can_bulk(MYSQL *m)
{
	unsigned long caps = 0, ext = 0;

	if (mariadb_get_infov(m, MARIADB_CONNECTION_SERVER_CAPABILITIES,
	    &caps) != 0 || mariadb_get_infov(m,
	    MARIADB_CONNECTION_EXTENDED_SERVER_CAPABILITIES, &ext) != 0)
		return false;
	return (caps & CLIENT_MYSQL) == 0 &&
	    (ext & (MARIADB_CLIENT_STMT_BULK_OPERATIONS >> 32)) != 0;
}

/*
 * Whether the server takes writes: neither read_only (a replica, a
 * demoted primary) nor innodb_read_only (a server that cannot write its
 * tables at all).  A user with READ ONLY ADMIN could still write under
 * read_only; rowq keeps away all the same, as the server is not the one
 * the others write to.
 */
static enum db_status
db_check_writable(struct db *db)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	bool writable;

	if (mysql_query(db->mysql,
	    "SELECT @@global.read_only, @@global.innodb_read_only") != 0)
		return db_fail_mysql(db);
	if ((res = mysql_store_result(db->mysql)) == NULL)
		return db_fail_mysql(db);
	row = mysql_fetch_row(res);
	writable = row != NULL && row[0] != NULL && row[1] != NULL &&
	    strcmp(row[0], "0") == 0 && strcmp(row[1], "0") == 0;
	mysql_free_result(res);
	if (!writable)
		return db_fail(db, 0, "the server is read-only"), DB_RECONNECT;
	return DB_OK;
}

/*
 * Access denied with a password from a file: say which key and file, so
 * that the operator knows what to fix (never the password itself).
 */
static void
db_name_password_source(struct db *db, const struct db_options *o)
{
	size_t n = strlen(db->error);

	if (mysql_errno(db->mysql) != ER_ACCESS_DENIED_ERROR ||
	    o->password_source == NULL || n + 3 >= sizeof(db->error))
		return;
	snprintf(db->error + n, sizeof(db->error) - n, "; %s was refused",
	    o->password_source);
}

/* The session rowq wants: see db.c's top. */
static enum db_status
db_set_session(struct db *db)
{
	static const char session[] =
	    "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
	char lockwait[64];

	snprintf(lockwait, sizeof(lockwait),
	    "SET SESSION innodb_lock_wait_timeout = %d", DB_LOCK_WAIT_TIMEOUT_S);
	if (mysql_query(db->mysql, session) != 0 ||
	    mysql_query(db->mysql, lockwait) != 0 ||
	    mysql_autocommit(db->mysql, 0) != 0)
		return db_fail_mysql(db);
	return DB_OK;
}

/*
 * CLIENT_MULTI_STATEMENTS lets db_select send the last row's `done`,
 * COMMIT and the next claim in one round trip.  What runs as text is the
 * operator's own SQL, which sql.c refuses when text follows its ';' (a
 * ';' that sql.c's tokenizer cannot see, in a versioned comment or under
 * NO_BACKSLASH_ESCAPES, would split it: the operator's SQL all the same),
 * and values only where they can be written exactly: a cursor's key as
 * digits, and the values that EXECUTE gives the `done` prepared by SQL
 * (worker_finish_text.c): integers as digits, bytes as X'hex'.  Every other
 * value is bound to a prepared statement, never spliced.
 */
static enum db_status
db_connect_one(struct db *db, const struct db_options *o,
    const struct db_host *h)
{
	enum db_status st;

	if (db->mysql != NULL)
		mysql_close(db->mysql);
	db->mysql = mysql_init(NULL);
	if (db->mysql == NULL)
		fatalx("mysql_init: out of memory");
	db->status_known = false;
	db_set_options(db->mysql, o);
	if (h != NULL)
		snprintf(db->where, sizeof(db->where), h->name[0] != '[' &&
		    strchr(h->name, ':') != NULL ? "[%s]:%u" : "%s:%u",
		    h->name, h->port);
	else
		snprintf(db->where, sizeof(db->where), "%s",
		    o->socket ? o->socket : "the default socket");
	if (mysql_real_connect(db->mysql, h ? h->name : NULL, o->user,
	    o->password, o->name, h ? h->port : 0, h ? NULL : o->socket,
	    CLIENT_FOUND_ROWS | CLIENT_MULTI_STATEMENTS) == NULL) {
		st = db_fail_mysql(db);
		db_name_password_source(db, o);
		/* Any failure to connect is a reconnect, unless it is the config. */
		return st == DB_CONFIG ? DB_CONFIG : DB_RECONNECT;
	}
	db_cloexec(db);
	db->status_known = true;
	db->dialect = dialect_of(mysql_get_server_info(db->mysql));
	/* Belt and braces: no session in plain text once TLS is asked for. */
	if (o->tls.on && mysql_get_ssl_cipher(db->mysql) == NULL)
		return db_fail(db, 0, "the server offers no TLS, and tls: "
		    "allows no plain text"), DB_RECONNECT;
	if ((st = db_check_writable(db)) != DB_OK)
		return st;
	db->writable_ms = now_ms();
	db->bulk = db->dialect->bulk_execute && db_can_bulk(db->mysql);
	return db_set_session(db);
}

/* Say which host this process uses, once per host it moves to. */
static void
db_tell_host(const struct db *db)
{
	const char *cipher = db_cipher(db);

	log_set_host(db->where);
	if (!db_announce || strcmp(db_last_where, db->where) == 0)
		return;
	if (db_last_where[0] == '\0')
		log_info("connected to %s%s%s", db->where,
		    cipher ? ", TLS " : "", cipher ? cipher : "");
	else
		log_warnx("moved from %s to %s%s%s", db_last_where, db->where,
		    cipher ? ", TLS " : "", cipher ? cipher : "");
	snprintf(db_last_where, sizeof(db_last_where), "%s", db->where);
}

/* What a failed TLS handshake may mean, as the library does not say. */
static const char *
db_tls_hint(const struct db *db, const struct db_options *o)
{
	unsigned long caps = 0;

	/* No hint for a server without TLS: the library says so itself. */
	if (!o->tls.on || db->errnum != CR_SSL_CONNECTION_ERROR ||
	    mariadb_get_infov(db->mysql, MARIADB_CONNECTION_SERVER_CAPABILITIES,
	    &caps) != 0 || (caps & CLIENT_SSL) == 0)
		return "";
	switch (o->tls.verify) {
	case TLS_VERIFY_FULL:
		return " (verify: full: the server's certificate must be "
		    "signed by ca: and name the host as written in host:)";
	case TLS_VERIFY_CA:
		return " (verify: ca: the server's certificate must be "
		    "signed by ca:)";
	default:
		return "";
	}
}

/*
 * Each host in turn until one answers and is writable.  When none does,
 * the error names each host and what it said, and the status is the
 * last one's (DB_CONFIG for a refused login, so that a wrong password is
 * not retried for ever).
 */
struct db *
db_open(const struct db_options *o, enum db_status *status)
{
	struct db *db = xcalloc(1, sizeof(*db));
	struct buf why = { 0 };
	size_t n = o->nhosts > 0 ? o->nhosts : 1;

	db->can_move = n > 1;

	for (size_t i = 0; i < n; i++) {
		*status = db_connect_one(db, o, o->nhosts ? &o->hosts[i] : NULL);
		if (*status == DB_OK) {
			db_tell_host(db);
			buf_free(&why);
			return db;
		}
		buf_printf(&why, "%s%s: %s%s", why.len ? "; " : "", db->where,
		    db->error, db_tls_hint(db, o));
	}
	snprintf(db->error, sizeof(db->error), "%s", why.data);
	buf_free(&why);
	return db;
}

/*
 * For sessions that only read (the pause and wake watchers): whether the
 * server has turned read-only, asked at most every DB_DEMOTED_EVERY_MS.
 * A demoted primary that stays up gives such a session no read-only
 * error to move on, and pauses made on the new primary would never be
 * seen.  True also when the question fails: the link is gone.  With one
 * host there is nowhere to move, and nothing is asked.
 */
bool
db_demoted(struct db *db)
{
	int64_t now = now_ms();

	if (!db->can_move || now - db->writable_ms < DB_DEMOTED_EVERY_MS)
		return false;
	if (db_check_writable(db) != DB_OK)
		return true;
	db->writable_ms = now;
	return false;
}

/* The host connected to: "HOST:PORT", or the socket's path. */
const char *
db_where(const struct db *db)
{
	return db->where;
}

/* The session's TLS cipher, or NULL when it is not encrypted. */
const char *
db_cipher(const struct db *db)
{
	return db->mysql != NULL ? mysql_get_ssl_cipher(db->mysql) : NULL;
}
