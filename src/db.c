/*
 * db.c: everything rowq says to MariaDB; with db_stmt.c, db_bulk.c and
 * db_connect.c, the only includers of <mysql.h>.
 *
 * Each worker owns one connection, opened after the fork, in READ COMMITTED
 * with autocommit off: the claim opens a transaction implicitly, and READ
 * COMMITTED takes no gap locks, so an application's INSERT into the queue
 * table never waits for a worker.  Errors are sorted into the classes of
 * enum db_status here, and nowhere else looks at error numbers.
 */
#include "rowq.h"
#include "db.h"
#include "db_private.h"
#include "dialect.h"

#include <errno.h>
#include <poll.h>
#include <mysqld_error.h>
#include <errmsg.h>
#include <stdlib.h>
#include <string.h>

/* Fetch buffer per column; longer values are fetched a second time. */
#define DB_FETCH_CHUNK		256

static enum db_status
db_classify(const struct db *db, unsigned err)
{
	int own = dialect_error(db_dialect(db), err);

	if (own >= 0)
		return (enum db_status)own;
	switch (err) {
	case 0:
		return DB_OK;
	case ER_LOCK_DEADLOCK:
	case ER_LOCK_TABLE_FULL:	/* rolled back whole; a retry may fit */
	case ER_LOCK_WAIT_TIMEOUT:
	case ER_QUERY_INTERRUPTED:
	case ER_STATEMENT_TIMEOUT:
		return DB_RETRY;
	case ER_ACCESS_DENIED_ERROR:
	case ER_DBACCESS_DENIED_ERROR:
	case ER_BAD_DB_ERROR:
		return DB_CONFIG;
	case ER_SERVER_SHUTDOWN:
	case ER_CONNECTION_KILLED:
	case ER_NEW_ABORTING_CONNECTION:
		return DB_RECONNECT;
	/*
	 * The server turned read-only (a switchover, a demoted primary):
	 * the transaction's rows stay as they were, and the next connection
	 * goes to a host that is writable (db_connect.c).
	 */
	case ER_OPTION_PREVENTS_STATEMENT:	/* 1290: --read-only */
	case ER_READ_ONLY_MODE:			/* 1836 */
		return DB_RECONNECT;
	default:
		/* 2000-2999 are the client library's: the link is suspect. */
		if (err >= 2000 && err < 3000)
			return DB_RECONNECT;
		return DB_FATAL;
	}
}

/*
 * After a server error, find out whether the transaction survived it.
 * An error packet carries no status flags, so the client's
 * SERVER_STATUS_IN_TRANS still says what the last statement that
 * succeeded left.  Most errors roll back only their statement; some roll
 * back the whole transaction (a deadlock, 1206 lock table full, 1205
 * under innodb_rollback_on_timeout, a procedure's own ROLLBACK), and what
 * follows then runs in a fresh transaction without the earlier rows'
 * locks.  One statement that touches no table refreshes the flags; if it
 * fails too, the transaction counts as gone (db_in_transaction).
 */
static void
db_refresh_status(struct db *db)
{
	MYSQL_RES *res;

	db->status_known = mysql_query(db->mysql, "DO 0") == 0;
	if (db->status_known && (res = mysql_store_result(db->mysql)) != NULL)
		mysql_free_result(res);
}

/* The error, classified and kept for db_error; nothing sent. */
enum db_status
db_note_error(struct db *db, unsigned err, const char *msg)
{
	db->errnum = err;
	/* 0: rowq's own finding, with no server error number to give. */
	if (err == 0)
		snprintf(db->error, sizeof(db->error), "%s", msg);
	else
		snprintf(db->error, sizeof(db->error), "%s (%u)", msg, err);
	return db_classify(db, err);
}

enum db_status
db_fail(struct db *db, unsigned err, const char *msg)
{
	enum db_status st = db_note_error(db, err, msg);

	/* The server answered (not 0, not the client library's 2000s). */
	if ((st == DB_RETRY || st == DB_FATAL) && err != 0 &&
	    (err < 2000 || err >= 3000))
		db_refresh_status(db);
	return st;
}

/*
 * Whether a transaction is open on the connection, as the last statement
 * left it; after a failed statement, whether the transaction survived it
 * (db_refresh_status).  False when that could not be found out.
 */
bool
db_in_transaction(const struct db *db)
{
	unsigned int status = 0;

	if (db->mysql == NULL || !db->status_known ||
	    mariadb_get_infov(db->mysql, MARIADB_CONNECTION_SERVER_STATUS,
	    &status) != 0)
		return false;
	return (status & SERVER_STATUS_IN_TRANS) != 0;
}

enum db_status
db_fail_mysql(struct db *db)
{
	return db_fail(db, mysql_errno(db->mysql), mysql_error(db->mysql));
}

enum db_status
db_fail_stmt(struct db_stmt *s)
{
	return db_fail(s->db, mysql_stmt_errno(s->stmt), mysql_stmt_error(s->stmt));
}

const char *
db_error(const struct db *db)
{
	return db->error;
}

unsigned
db_errno(const struct db *db)
{
	return db->errnum;
}

/* The last statement named a table that does not exist. */
bool
db_no_such_table(const struct db *db)
{
	return db->errnum == ER_NO_SUCH_TABLE;
}

/* The last statement named a column that does not exist. */
bool
db_no_such_column(const struct db *db)
{
	return db->errnum == ER_BAD_FIELD_ERROR;
}

/* The last statement needed a privilege the user lacks. */
bool
db_denied(const struct db *db)
{
	return db->errnum == ER_TABLEACCESS_DENIED_ERROR ||
	    db->errnum == ER_DBACCESS_DENIED_ERROR ||
	    db->errnum == ER_SPECIFIC_ACCESS_DENIED_ERROR;
}

/*
 * The supervisor initialises libmariadb, and through it OpenSSL, before it
 * forks the first worker, though it never connects itself: a worker that
 * did it on its own would map about 2 MiB of libcrypto's pages that the
 * initialisation runs through, each worker again.  Forked, they start with
 * the work done and those pages counted once, in the supervisor.  If it
 * fails here, each process tries again at its first connection.
 */
void
db_library_init(void)
{
	if (mysql_library_init(0, NULL, NULL) != 0)
		log_warnx("cannot initialise libmariadb; each worker will try "
		    "on its own");
}

/*
 * Whether the server sent something nobody asked for, or closed the
 * connection: between statements it says nothing unless it is killing
 * the session (KILL, an idle timeout, a shutdown), and the transaction
 * and its row locks go with it.
 */
bool
db_link_closed(const struct db *db)
{
	struct pollfd p = { .events = POLLIN | POLLRDHUP };

	if (db == NULL || db->mysql == NULL)
		return true;
	p.fd = (int)mysql_get_socket(db->mysql);
	if (p.fd < 0)
		return true;
	return poll(&p, 1, 0) != 0;
}

/*
 * Whether the last error (a DB_FATAL) is the statement's own, the same
 * whatever the row it runs for: its syntax, a name the server does not
 * know, arguments that do not fit, a privilege, a JSON path that is no
 * path.  The others are the row's (data too long, a duplicate key, a
 * NULL where none may be): another row may well pass.
 */
bool
db_error_in_statement(const struct db *db)
{
	int own = dialect_statement_error(db_dialect(db), db->errnum);

	if (own >= 0)
		return own == 1;
	switch (db->errnum) {
	case ER_PARSE_ERROR:
	case ER_BAD_FIELD_ERROR:
	case ER_NON_UNIQ_ERROR:
	case ER_NO_SUCH_TABLE:
	case ER_UNKNOWN_TABLE:
	case ER_SP_DOES_NOT_EXIST:
	case ER_FUNCTION_NOT_DEFINED:
	case ER_SP_WRONG_NO_OF_ARGS:
	case ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT:
	case ER_WRONG_PARAMETERS_TO_NATIVE_FCT:
	case ER_WRONG_PARAMETERS_TO_STORED_FCT:
	case ER_WRONG_ARGUMENTS:
	case ER_WRONG_VALUE_COUNT_ON_ROW:
	case ER_OPERAND_COLUMNS:
	case ER_UPDATE_TABLE_USED:
	case ER_NON_UPDATABLE_TABLE:
	case ER_VIEW_INVALID:
	case ER_TABLEACCESS_DENIED_ERROR:
	case ER_COLUMNACCESS_DENIED_ERROR:
	case ER_PROCACCESS_DENIED_ERROR:
		return true;
	default:
		return false;
	}
}

/*
 * What the server's family says differently (dialect.h), as its greeting
 * said on connecting; MariaDB's before any connection.
 */
const struct dialect *
db_dialect(const struct db *db)
{
	return db != NULL && db->dialect != NULL ? db->dialect :
	    dialect_mariadb();
}

/* The server's version as 101100 for 10.11.0, for reading its SQL. */
unsigned long
db_server_version(struct db *db)
{
	return mysql_get_server_version(db->mysql);
}

void
db_close(struct db *db)
{
	if (db == NULL)
		return;
	if (db->mysql)
		mysql_close(db->mysql);
	free(db);
}

enum db_status
db_commit(struct db *db)
{
	if (mysql_commit(db->mysql) != 0)
		return db_fail_mysql(db);
	db->status_known = true;
	return DB_OK;
}

enum db_status
db_rollback(struct db *db)
{
	if (mysql_rollback(db->mysql) != 0)
		return db_fail_mysql(db);
	db->status_known = true;
	return DB_OK;
}

static enum column_kind
db_column_kind(const MYSQL_FIELD *f)
{
	switch (f->type) {
	case MYSQL_TYPE_TINY:
	case MYSQL_TYPE_SHORT:
	case MYSQL_TYPE_INT24:
	case MYSQL_TYPE_LONG:
	case MYSQL_TYPE_LONGLONG:
	case MYSQL_TYPE_YEAR:
	case MYSQL_TYPE_BIT:
		return COLUMN_INTEGER;
	case MYSQL_TYPE_DECIMAL:
	case MYSQL_TYPE_NEWDECIMAL:
	case MYSQL_TYPE_FLOAT:
	case MYSQL_TYPE_DOUBLE:
		return COLUMN_NUMBER;
	case MYSQL_TYPE_STRING:
	case MYSQL_TYPE_VAR_STRING:
	case MYSQL_TYPE_VARCHAR:
	case MYSQL_TYPE_TINY_BLOB:
	case MYSQL_TYPE_MEDIUM_BLOB:
	case MYSQL_TYPE_LONG_BLOB:
	case MYSQL_TYPE_BLOB:
	case MYSQL_TYPE_GEOMETRY:
		/* Charset 63 is "binary": bytes, not text. */
		return f->charsetnr == 63 ? COLUMN_BINARY : COLUMN_TEXT;
	default:
		return COLUMN_TEXT;
	}
}

struct column *
db_columns(MYSQL_FIELD *fields, size_t n)
{
	struct column *cols = xcalloc(n, sizeof(*cols));

	for (size_t i = 0; i < n; i++) {
		cols[i].name = xstrdup(fields[i].name);
		cols[i].kind = db_column_kind(&fields[i]);
		cols[i].is_unsigned = (fields[i].flags & UNSIGNED_FLAG) != 0;
		cols[i].is_decimal = fields[i].type == MYSQL_TYPE_NEWDECIMAL ||
		    fields[i].type == MYSQL_TYPE_DECIMAL;
		cols[i].nullable = (fields[i].flags & NOT_NULL_FLAG) == 0;
	}
	return cols;
}

void
columns_free(struct column *cols, size_t n)
{
	if (cols == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(cols[i].name);
	free(cols);
}

struct row *
rowset_add(struct rowset *rs, size_t ncols)
{
	struct row *r;

	if (rs->nrows == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 4;
		rs->rows = xrealloc(rs->rows, rs->cap * sizeof(*rs->rows));
	}
	r = &rs->rows[rs->nrows++];
	r->value = xcalloc(ncols, sizeof(*r->value));
	r->len = xcalloc(ncols, sizeof(*r->len));
	return r;
}

/* A row's values; a row taken out of its rowset (value NULL) has none. */
void
row_free(struct row *r, size_t ncols)
{
	if (r->value != NULL)
		for (size_t c = 0; c < ncols; c++)
			free(r->value[c]);
	free(r->value);
	free(r->len);
	r->value = NULL;
	r->len = NULL;
}

void
rowset_clear(struct rowset *rs, size_t ncols)
{
	for (size_t i = 0; i < rs->nrows; i++)
		row_free(&rs->rows[i], ncols);
	rs->nrows = 0;
}

/* The rows and the array that held them: the set is empty again. */
void
rowset_free(struct rowset *rs, size_t ncols)
{
	rowset_clear(rs, ncols);
	free(rs->rows);
	memset(rs, 0, sizeof(*rs));
}

/* BIT arrives as raw bytes, most significant first: keep it as a number. */
void
db_bit_value(struct row *r, size_t i, const unsigned char *raw,
    unsigned long len)
{
	unsigned long long v = 0;
	char num[32];

	for (unsigned long k = 0; k < len && k < 8; k++)
		v = v << 8 | raw[k];
	int k = snprintf(num, sizeof(num), "%llu", v);
	r->value[i] = xstrndup(num, (size_t)k);
	r->len[i] = (size_t)k;
}

/* Copy a text-protocol result into rs, every value as its text. */
static void
db_copy_result(MYSQL_RES *res, struct rowset *rs, size_t keep)
{
	const MYSQL_FIELD *f = mysql_fetch_fields(res);
	size_t n = mysql_num_fields(res) < keep ? mysql_num_fields(res) : keep;
	MYSQL_ROW mrow;

	while ((mrow = mysql_fetch_row(res)) != NULL) {
		unsigned long *lens = mysql_fetch_lengths(res);
		struct row *r = rowset_add(rs, n);
		for (size_t i = 0; i < n; i++) {
			if (mrow[i] == NULL)
				continue;
			if (f[i].type == MYSQL_TYPE_BIT) {
				db_bit_value(r, i, (unsigned char *)mrow[i],
				    lens[i]);
				continue;
			}
			r->value[i] = xstrndup(mrow[i], lens[i]);
			r->len[i] = lens[i];
		}
	}
}

enum db_status
db_query(struct db *db, const char *sql, struct rowset *rs,
    struct column **cols, size_t *ncols)
{
	MYSQL_RES *res;
	size_t n;

	*cols = NULL;
	*ncols = 0;
	if (mysql_query(db->mysql, sql) != 0)
		return db_fail_mysql(db);
	res = mysql_store_result(db->mysql);
	if (res == NULL)
		return mysql_field_count(db->mysql) == 0 ? DB_OK :
		    db_fail_mysql(db);
	n = mysql_num_fields(res);
	*cols = db_columns(mysql_fetch_fields(res), n);
	*ncols = n;
	db_copy_result(res, rs, mysql_num_fields(res));
	mysql_free_result(res);
	return DB_OK;
}

/* Run a statement that returns no rows and takes no values. */
enum db_status
db_run(struct db *db, const char *sql)
{
	MYSQL_RES *res;

	if (mysql_query(db->mysql, sql) != 0)
		return db_fail_mysql(db);
	if ((res = mysql_store_result(db->mysql)) != NULL)
		mysql_free_result(res);
	return DB_OK;
}

/*
 * Run a statement that takes no values, as text, and read all its
 * results: *affected is what the last one changed (for a CALL, the
 * procedure's last statement, as ROW_COUNT() would say).
 */
enum db_status
db_run_count(struct db *db, const char *sql, unsigned long long *affected)
{
	MYSQL_RES *res;
	int rc;

	*affected = 0;
	if (mysql_query(db->mysql, sql) != 0)
		return db_fail_mysql(db);
	for (;;) {
		if ((res = mysql_store_result(db->mysql)) != NULL)
			mysql_free_result(res);
		else if (mysql_field_count(db->mysql) == 0 &&
		    mysql_affected_rows(db->mysql) != (my_ulonglong)-1)
			*affected = mysql_affected_rows(db->mysql);
		if ((rc = mysql_next_result(db->mysql)) > 0)
			return db_fail_mysql(db);
		if (rc < 0)
			return DB_OK;
	}
}

/*
 * Read what is left of a multi-statement's results, so the link is clean;
 * a statement after the select (a SAVEPOINT) can fail too.
 */
static enum db_status
db_rest_of_results(struct db *db)
{
	int rc;

	while (mysql_more_results(db->mysql)) {
		if ((rc = mysql_next_result(db->mysql)) > 0)
			return db_fail_mysql(db);
		if (rc < 0)
			break;
		MYSQL_RES *res = mysql_store_result(db->mysql);
		if (res != NULL)
			mysql_free_result(res);
	}
	return DB_OK;
}

/*
 * SELECT * and an ALTER TABLE: the columns are not those checked.  Their
 * types count too: a key that became VARCHAR bound as an integer would
 * make `WHERE id = 7` match '007' as well as '7'.
 */
static bool
db_same_columns(MYSQL_RES *res, const struct column *cols, size_t ncols,
    size_t more)
{
	const MYSQL_FIELD *f = mysql_fetch_fields(res);

	if (mysql_num_fields(res) != ncols + more)
		return false;
	for (size_t i = 0; i < ncols; i++)
		if (strcmp(f[i].name, cols[i].name) != 0 ||
		    db_column_kind(&f[i]) != cols[i].kind ||
		    ((f[i].flags & UNSIGNED_FLAG) != 0) != cols[i].is_unsigned)
			return false;
	return true;
}

/*
 * The current result of a multi-statement, read and kept in r: the first
 * row's first DB_AHEAD_VALUES columns as integers, or the rows changed.
 */
static void
db_keep_result(struct db *db, struct db_ahead_result *r)
{
	MYSQL_RES *res = mysql_store_result(db->mysql);
	MYSQL_ROW row;

	memset(r, 0, sizeof(*r));
	if (res == NULL) {
		if (mysql_field_count(db->mysql) == 0 &&
		    mysql_affected_rows(db->mysql) != (my_ulonglong)-1)
			r->affected = mysql_affected_rows(db->mysql);
		/* A LAST_INSERT_ID(expr) of the statement's (limit.c). */
		r->insert_id = mysql_insert_id(db->mysql);
		return;
	}
	if ((row = mysql_fetch_row(res)) != NULL) {
		unsigned n = mysql_num_fields(res);
		r->row = true;
		for (unsigned i = 0; i < DB_AHEAD_VALUES; i++) {
			r->null[i] = i >= n || row[i] == NULL;
			r->value[i] = r->null[i] ? 0 : strtoll(row[i], NULL, 10);
		}
	}
	mysql_free_result(res);
}

/*
 * Run n statements that take no values, as one text, and keep what each
 * gave in r[n] (db_keep_result).  The server runs nothing after one that
 * fails: its error is returned.
 */
enum db_status
db_run_results(struct db *db, const char *sql, int n,
    struct db_ahead_result *r)
{
	int rc;

	if (mysql_query(db->mysql, sql) != 0)
		return db_fail_mysql(db);
	for (int i = 0;; i++) {
		if (i < n)
			db_keep_result(db, &r[i]);
		else {
			MYSQL_RES *res = mysql_store_result(db->mysql);
			if (res != NULL)
				mysql_free_result(res);
		}
		if ((rc = mysql_next_result(db->mysql)) > 0)
			return db_fail_mysql(db);
		if (rc < 0)
			return DB_OK;
	}
}

/*
 * Read the results of what ahead asked for, in front of a select (more:
 * a statement follows the front) or alone, the COMMIT last.  Returns
 * false at the first statement that failed, whose error the connection
 * holds; ahead says how far the server got.
 */
static bool
db_ahead_read(struct db *db, struct db_ahead *ahead, bool more)
{
	if (ahead->finish) {
		/* A list's SAVEPOINT went first: the list's first is next. */
		if (ahead->finish_rest > 0 &&
		    mysql_next_result(db->mysql) != 0)
			return false;
		ahead->first_ran = true;
		ahead->affected = (unsigned long long)
		    mysql_affected_rows(db->mysql);
		for (; ahead->rest_ran < ahead->finish_rest; ahead->rest_ran++)
			if (mysql_next_result(db->mysql) != 0)
				return false;
		ahead->finished = true;
		if (mysql_next_result(db->mysql) != 0)
			return false;
	}
	if (ahead->runs) {
		ahead->runs_ran = true;
		if (mysql_next_result(db->mysql) != 0)
			return false;
	}
	for (int i = 0; i < ahead->nextra && i < DB_AHEAD_EXTRA_MAX; i++) {
		if (i == ahead->nbefore && ahead->commit) {
			ahead->committed = true;
			if (mysql_next_result(db->mysql) != 0)
				return false;
		}
		db_keep_result(db, &ahead->extra[i]);
		ahead->extra_ran = i + 1;
		if (mysql_next_result(db->mysql) != 0)
			return false;
	}
	if (ahead->commit && ahead->nbefore >= ahead->nextra) {
		/* Its result is the current one: it went through. */
		ahead->committed = true;
		/* Alone, nothing follows it: -1, no more results. */
		if (mysql_next_result(db->mysql) != (more ? 0 : -1))
			return false;
	}
	return true;
}

/*
 * A result that was not there (fewer results than the statements sent:
 * mysql_next_result gave -1, with no error), or the server's error.
 * Either way not DB_OK: a text that does not match what was meant to be
 * sent is a fault of rowq's, not an empty claim.
 */
static enum db_status
db_fail_results(struct db *db)
{
	enum db_status st = db_fail_mysql(db);

	if (st == DB_OK) {
		(void)db_fail(db, 0, "the results did not match the statements "
		    "sent");
		st = DB_FATAL;
	}
	return st;
}

/*
 * What ahead asks for with no select behind it: a finishing statement,
 * the run log's INSERT, and the COMMIT last, as db_select sends them in
 * front of its select, in one round trip.
 */
enum db_status
db_run_front(struct db *db, const char *sql, struct db_ahead *ahead)
{
	enum db_status st;

	/* Read right only with the COMMIT last. */
	if (!ahead->commit || ahead->nextra > 0) {
		(void)db_fail(db, 0, "a front without its COMMIT last");
		return DB_FATAL;
	}
	if (mysql_query(db->mysql, sql) != 0)
		return db_fail_mysql(db);
	if (db_ahead_read(db, ahead, false))
		return DB_OK;
	st = db_fail_results(db);
	(void)db_rest_of_results(db);
	return st;
}

/*
 * Run a select that takes no parameters, as text, and copy its rows into
 * rs; their columns must be cols, those the select had when prepared.
 * What ahead asks for comes first in sql, in the same round trip: a
 * finishing statement (the last turn's `done`, as text; or a list, its
 * SAVEPOINT first and finish_rest statements after it), the run log's
 * INSERT (worker_runs.c), then "COMMIT;",
 * so that the transaction that finished the last rows ends and the next
 * one opens with the select; a limit's statements (worker_limit.c) go
 * around the COMMIT (nbefore of them before it), each kept in
 * ahead->extra.  Statements that return no rows may follow
 * the select.  The server runs nothing after a statement that fails, so
 * ahead says how far it got (the finishing statement ran, the COMMIT went
 * through), and the error is the first failed statement's.
 */
enum db_status
db_select(struct db *db, const char *sql, struct db_ahead *ahead,
    const struct column *cols, size_t ncols, struct rowset *rs)
{
	MYSQL_RES *res;
	enum db_status st = DB_OK;

	if (mysql_query(db->mysql, sql) != 0)
		return db_fail_mysql(db);
	if (!db_ahead_read(db, ahead, true))
		return db_fail_results(db);
	res = mysql_store_result(db->mysql);
	if (res == NULL) {
		st = db_fail_mysql(db);
		if (st == DB_OK) {	/* a statement that returns no rows */
			(void)db_fail(db, 0, "the select returned no result");
			st = DB_FATAL;
		}
	} else if (!db_same_columns(res, cols, ncols,
	    (size_t)ahead->ride_columns)) {
		/* Prepare and check them again. */
		db_fail(db, 0, "the select's columns changed since it was "
		    "prepared (ALTER TABLE?)");
		st = DB_RECONNECT;
	} else {
		db_copy_result(res, rs, ncols);
		ahead->selected = true;
	}
	if (res != NULL)
		mysql_free_result(res);
	for (int i = 0; st == DB_OK && i < ahead->nbehind &&
	    i < DB_AHEAD_BEHIND_MAX; i++) {
		if (mysql_next_result(db->mysql) != 0)
			return db_fail_results(db);
		db_keep_result(db, &ahead->behind[i]);
		ahead->behind_ran = i + 1;
	}
	if (st == DB_OK)
		st = db_rest_of_results(db);
	else
		(void)db_rest_of_results(db);
	return st;
}
