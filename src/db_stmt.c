/*
 * db_stmt.c: prepared statements --- prepare, bind, execute, fetch every
 * row as text --- for the database layer (db.h); the text protocol and
 * the connection's errors are db.c's.
 *
 * Every value is bound and fetched as text, BIT as its raw bytes turned
 * into a number (db_bit_value), so that a row reads the same whichever
 * protocol brought it.
 */
#include "rowq.h"
#include "db.h"
#include "db_private.h"
#include "dialect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Fetch buffer per column; longer values are fetched a second time. */
#define DB_FETCH_CHUNK		256

static void
db_stmt_bind_results(struct db_stmt *s, MYSQL_FIELD *fields)
{
	size_t n = s->ncols;

	s->results = xcalloc(n, sizeof(*s->results));
	s->fetchbuf = xcalloc(n, DB_FETCH_CHUNK);
	s->lengths = xcalloc(n, sizeof(*s->lengths));
	s->nulls = xcalloc(n, sizeof(*s->nulls));
	s->errors = xcalloc(n, sizeof(*s->errors));
	s->is_bit = xcalloc(n, sizeof(*s->is_bit));
	for (size_t i = 0; i < n; i++) {
		MYSQL_BIND *b = &s->results[i];
		s->is_bit[i] = fields[i].type == MYSQL_TYPE_BIT;
		/*
		 * Every value as text; BIT as its raw bytes, most significant
		 * first, which db_stmt_copy_row turns into a number (the
		 * library's own BIT to integer conversion swaps the bytes).
		 */
		b->buffer_type = MYSQL_TYPE_STRING;
		b->buffer = s->fetchbuf + i * DB_FETCH_CHUNK;
		b->buffer_length = DB_FETCH_CHUNK;
		b->length = &s->lengths[i];
		b->is_null = &s->nulls[i];
		b->error = &s->errors[i];
	}
}

struct db_stmt *
db_prepare(struct db *db, const char *sql, enum db_status *status)
{
	struct db_stmt *s = xcalloc(1, sizeof(*s));
	MYSQL_RES *meta;

	s->db = db;
	s->stmt = mysql_stmt_init(db->mysql);
	if (s->stmt == NULL) {
		*status = db_fail_mysql(db);
		free(s);
		return NULL;
	}
	if (mysql_stmt_prepare(s->stmt, sql, (unsigned long)strlen(sql)) != 0) {
		/*
		 * A prepare runs nothing, so a refused one leaves the
		 * transaction as it was: no statement to find that out.
		 */
		*status = db_note_error(db, mysql_stmt_errno(s->stmt),
		    mysql_stmt_error(s->stmt));
		db_stmt_free(s);
		return NULL;
	}
	s->nparams = mysql_stmt_param_count(s->stmt);
	s->params = xcalloc(s->nparams ? s->nparams : 1, sizeof(*s->params));
	meta = mysql_stmt_result_metadata(s->stmt);
	if (meta != NULL) {
		s->ncols = mysql_num_fields(meta);
		s->cols = db_columns(mysql_fetch_fields(meta), s->ncols);
		db_stmt_bind_results(s, mysql_fetch_fields(meta));
		mysql_free_result(meta);
	}
	*status = DB_OK;
	return s;
}

void
db_stmt_free(struct db_stmt *s)
{
	if (s == NULL)
		return;
	if (s->stmt)
		mysql_stmt_close(s->stmt);
	free(s->params);
	columns_free(s->cols, s->ncols);
	free(s->results);
	free(s->fetchbuf);
	free(s->lengths);
	free(s->nulls);
	free(s->errors);
	free(s->is_bit);
	free(s);
}

size_t
db_stmt_nparams(const struct db_stmt *s)
{
	return s->nparams;
}

const struct column *
db_stmt_columns(const struct db_stmt *s, size_t *n)
{
	*n = s->ncols;
	return s->cols;
}

/*
 * The name of the table column that the i-th column of a select is,
 * whatever its alias, appended to name; false when it is none (an
 * expression) or the server does not say.
 */
bool
db_stmt_column_origin(const struct db_stmt *s, size_t i, struct buf *name)
{
	MYSQL_RES *meta = mysql_stmt_result_metadata(s->stmt);
	const MYSQL_FIELD *f;
	bool found = false;

	if (meta == NULL)
		return false;
	f = mysql_fetch_fields(meta);
	if (i < mysql_num_fields(meta) && f[i].org_name != NULL &&
	    f[i].org_name[0] != '\0') {
		buf_puts(name, f[i].org_name);
		found = true;
	}
	mysql_free_result(meta);
	return found;
}

static enum db_status
db_stmt_bind(struct db_stmt *s, const struct value *v, size_t n)
{
	if (n != s->nparams)
		return db_fail(s->db, 0, "parameter count mismatch"),
		    DB_FATAL;
	memset(s->params, 0, s->nparams * sizeof(*s->params));
	for (size_t i = 0; i < n; i++) {
		MYSQL_BIND *b = &s->params[i];
		switch (v[i].type) {
		case VALUE_NULL:
			b->buffer_type = MYSQL_TYPE_NULL;
			break;
		case VALUE_INT:
			b->buffer_type = MYSQL_TYPE_LONGLONG;
			b->buffer = (void *)&v[i].i;
			b->is_unsigned = v[i].is_unsigned;
			break;
		case VALUE_TEXT:
		case VALUE_BLOB:
			b->buffer_type = v[i].type == VALUE_TEXT ?
			    MYSQL_TYPE_STRING : MYSQL_TYPE_BLOB;
			b->buffer = (void *)(v[i].s ? v[i].s : "");
			b->buffer_length = (unsigned long)v[i].len;
			break;
		case VALUE_SQL:
			return db_fail(s->db, 0, "an expression of rowq's "
			    "cannot be bound"), DB_FATAL;
		}
	}
	if (n > 0 && mysql_stmt_bind_param(s->stmt, s->params) != 0)
		return db_fail_stmt(s);
	return DB_OK;
}

static enum db_status
db_stmt_execute(struct db_stmt *s, const struct value *v, size_t n)
{
	enum db_status st;

	if ((st = db_stmt_bind(s, v, n)) != DB_OK)
		return st;
	if (mysql_stmt_execute(s->stmt) != 0)
		return db_fail_stmt(s);
	return DB_OK;
}

/*
 * The rows a statement changed, from the result it is at: none for a
 * result set (my_ulonglong -1).
 */
static unsigned long long
db_stmt_changed(struct db_stmt *s)
{
	my_ulonglong n = mysql_stmt_affected_rows(s->stmt);

	return n == (my_ulonglong)-1 ? 0 : (unsigned long long)n;
}

/*
 * A CALL's procedure may return result sets, one for each SELECT it
 * runs, before the status of the CALL itself: all are read and dropped,
 * or the connection is out of sync (2014) for the next statement.
 * *affected adds what each changed; *rows says whether any was a result
 * set.
 */
static enum db_status
db_stmt_rest(struct db_stmt *s, unsigned long long *affected, bool *rows)
{
	while (mysql_stmt_more_results(s->stmt)) {
		int r = mysql_stmt_next_result(s->stmt);
		if (r > 0)
			return db_fail_stmt(s);
		if (r < 0)
			break;
		*affected += db_stmt_changed(s);
		if (mysql_stmt_field_count(s->stmt) > 0) {
			*rows = true;
			mysql_stmt_free_result(s->stmt);
		}
	}
	return DB_OK;
}

/*
 * A value read back as text (NULL: SQL NULL), bound as its column's type:
 * an integer as one when it reads as one, a binary column's bytes as a
 * blob, the rest as text.
 */
void
db_value_of_column(struct value *v, const struct column *col, const char *s,
    size_t len)
{
	char *end;

	memset(v, 0, sizeof(*v));
	if (s == NULL) {
		v->type = VALUE_NULL;
		return;
	}
	if (col->kind == COLUMN_INTEGER) {
		errno = 0;
		if (col->is_unsigned)
			v->i = (long long)strtoull(s, &end, 10);
		else
			v->i = strtoll(s, &end, 10);
		if (errno == 0 && end != s && *end == '\0') {
			v->type = VALUE_INT;
			v->is_unsigned = col->is_unsigned;
			return;
		}
	}
	v->type = col->kind == COLUMN_BINARY ? VALUE_BLOB : VALUE_TEXT;
	v->s = s;
	v->len = len;
}

/*
 * Run a prepared statement with these values; *affected is the rows it
 * changed.  A CALL's count is what the server says of it: on MariaDB
 * what its statements changed, on MySQL what its last one did
 * (dialect.h), which for a procedure that ends with a SELECT is
 * nothing: there a CALL that returned a result set counts as having
 * changed a row, since the server does not say.
 */
enum db_status
db_stmt_exec(struct db_stmt *s, const struct value *v, size_t n,
    unsigned long long *affected)
{
	unsigned long long changed;
	bool rows = false;
	enum db_status st;

	if ((st = db_stmt_execute(s, v, n)) != DB_OK)
		return st;
	changed = db_stmt_changed(s);
	if (s->ncols > 0 || mysql_stmt_field_count(s->stmt) > 0) {
		rows = true;
		mysql_stmt_free_result(s->stmt);
	}
	st = db_stmt_rest(s, &changed, &rows);
	if (changed == 0 && rows && s->ncols == 0 &&
	    db_dialect(s->db)->call_counts_last)
		changed = 1;
	if (affected)
		*affected = changed;
	return st;
}

/*
 * The AUTO_INCREMENT value the statement's last execute generated (of a
 * multi-row INSERT, its first row's), as the server answered it; 0: none.
 * Unlike LAST_INSERT_ID(), never an earlier statement's.
 */
unsigned long long
db_stmt_insert_id(struct db_stmt *s)
{
	return (unsigned long long)mysql_stmt_insert_id(s->stmt);
}

/* Copy the current row out of the fetch buffers. */
static enum db_status
db_stmt_copy_row(struct db_stmt *s, struct rowset *rs)
{
	struct row *r = rowset_add(rs, s->ncols);

	for (size_t i = 0; i < s->ncols; i++) {
		unsigned long len = s->lengths[i];
		if (s->nulls[i])
			continue;
		if (s->is_bit[i]) {
			db_bit_value(r, i, s->results[i].buffer, len);
			continue;
		}
		r->value[i] = xmalloc((size_t)len + 1);
		r->len[i] = len;
		if (len <= DB_FETCH_CHUNK) {
			memcpy(r->value[i], s->results[i].buffer, len);
		} else {
			MYSQL_BIND b = { 0 };
			unsigned long got = 0;
			b.buffer_type = MYSQL_TYPE_STRING;
			b.buffer = r->value[i];
			b.buffer_length = len + 1;
			b.length = &got;
			if (mysql_stmt_fetch_column(s->stmt, &b, (unsigned)i, 0))
				return db_fail_stmt(s);
		}
		r->value[i][len] = '\0';
	}
	return DB_OK;
}

/*
 * Execute a statement that returns rows and copy them all into rs.  The
 * whole result is read before the first row is handled, as the connection
 * cannot run the finishing statements while a result is still streaming.
 */
enum db_status
db_stmt_fetch_all(struct db_stmt *s, const struct value *v, size_t n,
    struct rowset *rs)
{
	enum db_status st;
	int rc;

	if ((st = db_stmt_execute(s, v, n)) != DB_OK)
		return st;
	if (mysql_stmt_bind_result(s->stmt, s->results) != 0 ||
	    mysql_stmt_store_result(s->stmt) != 0) {
		st = db_fail_stmt(s);
		mysql_stmt_free_result(s->stmt);
		return st;
	}
	while ((rc = mysql_stmt_fetch(s->stmt)) == 0 ||
	    rc == MYSQL_DATA_TRUNCATED) {
		if ((st = db_stmt_copy_row(s, rs)) != DB_OK)
			break;
	}
	if (st == DB_OK && rc == 1)
		st = db_fail_stmt(s);
	mysql_stmt_free_result(s->stmt);
	return st;
}
