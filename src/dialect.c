/*
 * dialect.c: the two families of server rowq speaks to, MariaDB and
 * MySQL, and what each says differently (dialect.h has the table).
 *
 * The family is read from the server's greeting: MariaDB says so in its
 * version string ("10.11.6-MariaDB-0+deb12u1"), MySQL does not
 * ("9.7.4-2"); a server of neither family that speaks their protocol
 * (Percona Server, a proxy) is taken as MySQL, whose dialect is the
 * plainer one.  Nothing here talks to a server: it only writes SQL text
 * and answers questions, so that it can be tested without one.
 */
#include "rowq.h"
#include "dialect.h"

#include <stdlib.h>
#include <string.h>

static const char *const mariadb_idle_transaction[] = {
	"idle_transaction_timeout",
	"idle_write_transaction_timeout",
	"idle_readonly_transaction_timeout",
	NULL,
};

static const char *const mysql_idle_transaction[] = { NULL };

static const struct dialect mariadb = {
	.name = "MariaDB",
	.explain = "EXPLAIN ",
	.idle_transaction = mariadb_idle_transaction,
	.prepares_by_sql = true,
	.m_comments = true,
	.bulk_execute = true,
	.galera = true,
	.upsert_alias = false,
	.call_counts_last = false,
	.assigns_in_select = true,
	.simultaneous_assignment = "SIMULTANEOUS_ASSIGNMENT",
};

/*
 * MySQL: EXPLAIN's default format may be a tree (explain_format, TREE in
 * 9.x), so the table is asked for; PREPARE takes a string literal or a
 * user variable only, and EXECUTE's USING user variables only, so a
 * statement "prepared by SQL" would cost a SET in front of each EXECUTE:
 * rowq sends its text instead, which the server parses each time (about
 * a tenth more of the server's time for a `done`, measured on MariaDB).
 */
static const struct dialect mysql = {
	.name = "MySQL",
	.explain = "EXPLAIN FORMAT=TRADITIONAL ",
	.idle_transaction = mysql_idle_transaction,
	.prepares_by_sql = false,
	.m_comments = false,
	.bulk_execute = false,
	.galera = false,
	.upsert_alias = true,
	.call_counts_last = true,
	.assigns_in_select = false,
	.simultaneous_assignment = NULL,
};

const struct dialect *
dialect_mariadb(void)
{
	return &mariadb;
}

const struct dialect *
dialect_mysql(void)
{
	return &mysql;
}

/* The family of the server whose greeting says server_info. */
const struct dialect *
dialect_of(const char *server_info)
{
	if (server_info != NULL && strstr(server_info, "MariaDB") != NULL)
		return &mariadb;
	return &mysql;
}

/*
 * Bytes as a value in SQL text, read as a binary string in every context
 * (compared with a text column, a number, given to a function).  MariaDB
 * reads X'..' so; MySQL reads it as a number where a number is wanted
 * (X'313233' + 0 is 3224115 there, 123 on MariaDB), but not once cast.
 */
void
dialect_bytes(const struct dialect *d, struct buf *out, const void *bytes,
    size_t len)
{
	if (d->prepares_by_sql) {
		sql_hex(out, bytes, len);
		return;
	}
	buf_puts(out, "CAST(");
	sql_hex(out, bytes, len);
	buf_puts(out, " AS BINARY)");
}

/*
 * Make s the statement text (with a '?' for each value) under name, and
 * write into prepare what the session must run first, if anything (a
 * PREPARE; nothing where the text itself is sent).  -1 when the text
 * cannot be read apart (it then must not be used).
 */
int
dialect_stmt_init(struct dialect_stmt *s, const struct dialect *d,
    const char *name, const char *text, struct buf *prepare)
{
	struct sql_token *t = NULL;
	size_t n = 0;
	char err[128];

	memset(s, 0, sizeof(*s));
	/* As the server reads it: a '?' in a comment it runs counts. */
	if (sql_tokenize_server(text, 0, d->m_comments, &t, &n, err,
	    sizeof(err)) != 0)
		return -1;
	s->dialect = d;
	s->name = xstrdup(name);
	s->text = xstrdup(text);
	s->holes = xcalloc(n + 1, sizeof(*s->holes));
	for (size_t i = 0; i < n; i++)
		if (t[i].kind == SQL_TOKEN_PUNCT && t[i].len == 1 &&
		    text[t[i].start] == '?')
			s->holes[s->nholes++] = t[i].start;
	free(t);
	if (d->prepares_by_sql) {
		buf_printf(prepare, "PREPARE %s FROM ", name);
		sql_hex(prepare, text, strlen(text));
	}
	return 0;
}

void
dialect_stmt_free(struct dialect_stmt *s)
{
	free(s->name);
	free(s->text);
	free(s->holes);
	memset(s, 0, sizeof(*s));
}

/* One value as a literal; false when it cannot be written exactly. */
static bool
dialect_value(const struct dialect *d, struct buf *out, const struct value *v)
{
	switch (v->type) {
	case VALUE_NULL:
		buf_puts(out, "NULL");
		return true;
	case VALUE_INT:
		if (v->is_unsigned)
			buf_printf(out, "%llu", (unsigned long long)v->i);
		else
			buf_printf(out, "%lld", v->i);
		return true;
	case VALUE_BLOB:
		dialect_bytes(d, out, v->s, v->len);
		return true;
	case VALUE_SQL:
		buf_append(out, v->s, v->len);
		return true;
	case VALUE_TEXT:
		/*
		 * As a literal its character set and collation would be
		 * the connection's, not the binding's: only a value of
		 * ASCII letters and digits reads the same either way.
		 */
		if (!v->plain)
			break;
		buf_printf(out, "'%.*s'", (int)v->len, v->s);
		return true;
	}
	return false;
}

/*
 * Append the statement with these values (one statement, no ';'; as
 * text, a newline after it).  False
 * when a value cannot be written exactly or their number is not the
 * statement's: nothing is appended then.
 */
bool
dialect_stmt_execute(const struct dialect_stmt *s, struct buf *out,
    const struct value *values, size_t nvalues)
{
	size_t start = out->len, at = 0;

	if (s->text == NULL || nvalues != s->nholes)
		return false;
	if (s->dialect->prepares_by_sql) {
		buf_printf(out, "EXECUTE %s", s->name);
		for (size_t i = 0; i < nvalues; i++) {
			buf_puts(out, i == 0 ? " USING " : ", ");
			if (!dialect_value(s->dialect, out, &values[i]))
				goto refused;
		}
		return true;
	}
	for (size_t i = 0; i < nvalues; i++) {
		buf_append(out, s->text + at, s->holes[i] - at);
		if (!dialect_value(s->dialect, out, &values[i]))
			goto refused;
		at = s->holes[i] + 1;
	}
	/* A newline last: text that ends in a -- comment would take in
	 * the ';' and the statements that follow it. */
	buf_puts(out, s->text + at);
	buf_putc(out, '\n');
	return true;
refused:
	out->len = start;
	if (out->data != NULL)
		out->data[start] = '\0';
	return false;
}

/*
 * The SET that bounds a session's idleness: wait_timeout to the
 * expression wait_timeout, and where the server has them, its idle
 * transaction limits to transaction_s.
 */
void
dialect_session_idle(const struct dialect *d, struct buf *out,
    const char *wait_timeout, unsigned transaction_s)
{
	buf_puts(out, "SET SESSION ");
	if (wait_timeout != NULL)
		buf_printf(out, "wait_timeout = %s", wait_timeout);
	for (size_t i = 0; d->idle_transaction[i] != NULL; i++)
		buf_printf(out, "%s%s = %u", i > 0 || wait_timeout ? ", " : "",
		    d->idle_transaction[i], transaction_s);
}

/*
 * An upsert's new values in ON DUPLICATE KEY UPDATE: VALUES(col), which
 * MySQL deprecates (8.0.20) for an alias of the inserted row, which
 * MariaDB does not have.  dialect_upsert_alias goes right after the
 * VALUES list, dialect_upsert_value where the new value is read.
 */
#define DIALECT_UPSERT_ALIAS	"rowq_new"

void
dialect_upsert_alias(const struct dialect *d, struct buf *out)
{
	if (d->upsert_alias)
		buf_puts(out, " AS " DIALECT_UPSERT_ALIAS);
}

void
dialect_upsert_value(const struct dialect *d, struct buf *out,
    const char *column)
{
	if (d->upsert_alias)
		buf_printf(out, DIALECT_UPSERT_ALIAS ".%s", column);
	else
		buf_printf(out, "VALUES(%s)", column);
}

/*
 * The statement whose first row names the binary log's current file and
 * position: MySQL 8.2 renamed SHOW MASTER STATUS (and 8.4 removed it).
 */
const char *
dialect_binlog_position(const struct dialect *d, unsigned long version)
{
	if (d == &mysql && version >= 80200)
		return "SHOW BINARY LOG STATUS";
	return "SHOW MASTER STATUS";
}

/*
 * The errors a family numbers on its own (db.c sorts the ones both
 * share): an enum db_status, or -1 for one it does not know.  Their
 * numbers overlap between the families, so they are read only for the
 * family that sent them.
 */
#define MYSQL_ER_QUERY_TIMEOUT			3024
#define MYSQL_ER_SESSION_WAS_KILLED		3169
#define MYSQL_ER_CLIENT_INTERACTION_TIMEOUT	4031

/*
 * Whether error err, of this family's own numbers, is the statement's
 * and not its row's (db_error_in_statement): 1 or 0, -1 for a number it
 * does not know.
 */
#define MARIADB_ER_JSON_PATH_EOS		4041	/* .. 4046 */
#define MARIADB_ER_JSON_ONE_OR_ALL		4046
#define MARIADB_ER_JSON_PATH_EMPTY		4051
#define MYSQL_ER_INVALID_JSON_PATH		3143
#define MYSQL_ER_INVALID_TYPE_FOR_JSON		3146
#define MYSQL_ER_INVALID_JSON_PATH_WILDCARD	3149

int
dialect_statement_error(const struct dialect *d, unsigned err)
{
	if (d == &mariadb)
		return (err >= MARIADB_ER_JSON_PATH_EOS &&
		    err <= MARIADB_ER_JSON_ONE_OR_ALL) ||
		    err == MARIADB_ER_JSON_PATH_EMPTY ? 1 : -1;
	switch (err) {
	case MYSQL_ER_INVALID_JSON_PATH:	/* JSON_SET(j, '$x', ..) */
	case MYSQL_ER_INVALID_TYPE_FOR_JSON:	/* JSON_VALUE(?, ..) */
	case MYSQL_ER_INVALID_JSON_PATH_WILDCARD:
		return 1;
	default:
		return -1;
	}
}

int
dialect_error(const struct dialect *d, unsigned err)
{
	if (d != &mysql)
		return -1;
	switch (err) {
	case MYSQL_ER_QUERY_TIMEOUT:		/* max_execution_time */
		return DB_RETRY;
	case MYSQL_ER_SESSION_WAS_KILLED:	/* KILL of this session */
	case MYSQL_ER_CLIENT_INTERACTION_TIMEOUT: /* wait_timeout ended it */
		return DB_RECONNECT;
	default:
		return -1;
	}
}
