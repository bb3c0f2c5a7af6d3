/*
 * console_search.c: a queue's search, /queue/NAME/search: the rows its
 * select returns whose column equals a value, each linked to its page
 * (console_row.c).  A plain read, which locks no row, of the select as
 * a derived table:
 *
 *   SELECT * FROM (select) AS rowq_search WHERE rowq_search.C = ? LIMIT 50
 *
 * which the server narrows by an index when C is the key (as `rowq show`
 * reads a row) or leads an index of the select's own table (the server's
 * information_schema says so, of the column of that name; a select on a
 * join is not trusted to).  Any other column is compared in the
 * select's first CONSOLE_SEARCH_SCAN rows only, a bounded scan, and the
 * page says which of the three it did.
 */
#include "rowq.h"
#include "console.h"
#include "db.h"
#include "check_shape.h"

#include <string.h>
#include <strings.h>

#define CONSOLE_SEARCH_ROWS	50	/* rows shown at most */
#define CONSOLE_SEARCH_SCAN	10000	/* rows of the select compared */

enum console_search_how { SEARCH_KEY, SEARCH_INDEX, SEARCH_SCAN };

/*
 * Whether column leads an index of the select's table, the only table
 * it reads.  False when it cannot be told: a bounded scan, then.
 */
static bool
console_search_indexed(struct db *db, const struct queue *q,
    const char *column)
{
	static const char sql[] =
	    "SELECT 1 FROM information_schema.STATISTICS "
	    "WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? "
	    "AND COLUMN_NAME = ? AND SEQ_IN_INDEX = 1 LIMIT 1";
	struct plan_shape sh;
	struct value v[3];
	struct rowset rs = { 0 };
	struct db_stmt *s;
	enum db_status st;
	bool found = false;

	plan_shape(q->select.positional, db_dialect(db), db_server_version(db),
	    NULL, &sh);
	if (sh.table[0] == '\0' || sh.join)
		return false;
	v[0] = (struct value){ .type = sh.schema[0] ? VALUE_TEXT : VALUE_NULL,
	    .s = sh.schema, .len = strlen(sh.schema) };
	v[1] = (struct value){ .type = VALUE_TEXT, .s = sh.table,
	    .len = strlen(sh.table) };
	v[2] = (struct value){ .type = VALUE_TEXT, .s = column,
	    .len = strlen(column) };
	if ((s = db_prepare(db, sql, &st)) == NULL)
		return false;
	found = db_stmt_fetch_all(s, v, 3, &rs) == DB_OK && rs.nrows > 0;
	rowset_free(&rs, 1);
	db_stmt_free(s);
	return found;
}

/* The form: a column of the select's, and the value it must equal. */
static void
console_search_form(struct buf *b, const struct queue *q,
    const struct column *cols, size_t ncols, const char *column,
    const char *value)
{
	buf_puts(b, "<form method=\"get\" class=\"bar\" id=\"search\" "
	    "action=\"/queue/");
	console_url_part(b, q->name);
	buf_puts(b, "/search\"><select name=\"column\" id=\"search-column\">");
	for (size_t c = 0; c < ncols; c++) {
		buf_puts(b, "<option value=\"");
		console_html(b, cols[c].name);
		buf_printf(b, "\"%s>", column != NULL &&
		    strcmp(column, cols[c].name) == 0 ? " selected" : "");
		console_html(b, cols[c].name);
		buf_puts(b, "</option>");
	}
	buf_puts(b, "</select> = <input type=\"text\" name=\"value\" "
	    "id=\"search-value\" value=\"");
	console_html(b, value);
	buf_puts(b, "\"> <button type=\"submit\" id=\"search-go\">Search"
	    "</button></form>");
}

/* What the page says of how it searched. */
static void
console_search_said(struct buf *b, enum console_search_how how,
    const char *column, size_t found)
{
	buf_puts(b, "<p class=\"muted\" id=\"search-how\">");
	buf_printf(b, "%zu row%s%s; ", found, found == 1 ? "" : "s",
	    found >= CONSOLE_SEARCH_ROWS ? " (the first ones)" : "");
	console_html(b, column);
	if (how == SEARCH_KEY)
		buf_puts(b, " is the key: compared as rowq show finds a "
		    "row");
	else if (how == SEARCH_INDEX)
		buf_puts(b, " leads an index of the select's table: compared "
		    "by that index");
	else
		buf_printf(b, " leads no index the select is known to use: "
		    "compared in the first %d rows the select returns only",
		    CONSOLE_SEARCH_SCAN);
	buf_puts(b, ". Read without locks.</p>");
}

/* The rows of q's select whose column equals value, shown; or why not. */
static void
console_search_run(struct db *db, struct buf *b, const struct queue *q,
    const char *column, const char *value, bool is_key)
{
	enum console_search_how how = is_key ? SEARCH_KEY :
	    console_search_indexed(db, q, column) ? SEARCH_INDEX : SEARCH_SCAN;
	struct value v = { .type = VALUE_TEXT, .s = value,
	    .len = strlen(value) };
	struct buf sql = { 0 };
	struct rowset rs = { 0 };
	struct db_stmt *s;
	const struct column *cols = NULL;
	size_t ncols = 0;
	enum db_status st = DB_OK;

	buf_printf(&sql, "SELECT * FROM (\n%s\n", q->select.positional);
	if (how == SEARCH_SCAN)
		buf_printf(&sql, "LIMIT %d\n", CONSOLE_SEARCH_SCAN);
	buf_puts(&sql, ") AS rowq_search WHERE rowq_search.");
	failed_quote(&sql, column);
	buf_printf(&sql, " = ? LIMIT %d", CONSOLE_SEARCH_ROWS);
	if ((s = db_prepare(db, sql.data, &st)) != NULL) {
		cols = db_stmt_columns(s, &ncols);
		st = db_stmt_fetch_all(s, &v, 1, &rs);
	}
	if (s == NULL || st != DB_OK) {
		buf_puts(b, "<p class=\"bad\">");
		console_html(b, db_error(db));
		buf_puts(b, "</p>");
	} else {
		console_search_said(b, how, column, rs.nrows);
		console_rows_table(b, cols, ncols, &rs, NULL, "found", q->name,
		    q->key_column);
	}
	rowset_free(&rs, ncols);
	db_stmt_free(s);
	buf_free(&sql);
}

/* GET /queue/NAME/search[?column=C&value=V] */
void
console_search_page(struct console_request *r, struct console_reply *rep,
    const struct queue *q)
{
	const char *column = console_query(r, "column");
	const char *value = console_query(r, "value");
	struct buf *b = &rep->body;
	struct db *db = console_db(r->c);
	const struct column *cols = NULL, *col = NULL;
	struct db_stmt *probe = NULL;
	size_t ncols = 0;
	enum db_status st;

	if (db == NULL || (probe = db_prepare(db, q->select.positional,
	    &st)) == NULL) {
		console_reply_text(rep, 503, db ? db_error(db) :
		    "the database does not answer");
		return;
	}
	/* The select's columns, as the server describes them: no row read. */
	cols = db_stmt_columns(probe, &ncols);
	for (size_t c = 0; column != NULL && c < ncols; c++)
		if (strcmp(cols[c].name, column) == 0)
			col = &cols[c];
	if (column != NULL && col == NULL) {
		console_reply_text(rep, 400, "no such column in the select");
		db_stmt_free(probe);
		return;
	}
	console_page_begin(b, r, "Search", false);
	buf_puts(b, "<h1>Search the rows of ");
	console_queue_link(b, q->name);
	buf_puts(b, "</h1>");
	console_search_form(b, q, cols, ncols, column, value);
	if (col != NULL)
		console_search_run(db, b, q, col->name, value ? value : "",
		    q->key_column != NULL ? strcasecmp(col->name,
		    q->key_column) == 0 : col == &cols[0]);
	console_page_end(b);
	db_stmt_free(probe);
}
