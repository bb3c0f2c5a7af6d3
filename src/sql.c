/*
 * sql.c: named parameters to positional ones, and the claim clause.
 *
 * Statements in the configuration say `:id`, `:error`; MariaDB's prepared
 * statements take `?`.  The scanner below knows just enough of MariaDB's
 * lexical rules to leave string literals, quoted identifiers and comments
 * alone, so that `':x'`, `` `a:b` `` and `-- note: x` are not parameters
 * and `@v := 1` is an assignment.  Values are always bound, never spliced.
 */
#include "rowq.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SQL_PARAM_NAME_MAX	64

static bool
sql_ident_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool
sql_ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/*
 * Length of the string literal, quoted identifier or comment starting at s,
 * or 0 when s starts ordinary code.  Sets *unterminated when it runs off the
 * end of the text.
 */
static size_t
sql_skip(const char *s, bool *unterminated)
{
	size_t i;

	*unterminated = false;
	if (s[0] == '\'' || s[0] == '"' || s[0] == '`') {
		char q = s[0];
		for (i = 1; s[i] != '\0'; i++) {
			if (s[i] == '\\' && q != '`' && s[i + 1] != '\0')
				i++;
			else if (s[i] == q && s[i + 1] == q)
				i++;
			else if (s[i] == q)
				return i + 1;
		}
		*unterminated = true;
		return i;
	}
	if (s[0] == '#' || (s[0] == '-' && s[1] == '-' &&
	    (s[2] == '\0' || isspace((unsigned char)s[2]) ||
	    iscntrl((unsigned char)s[2])))) {
		i = strcspn(s, "\n");
		return s[i] == '\n' ? i + 1 : i;
	}
	if (s[0] == '/' && s[1] == '*') {
		const char *end = strstr(s + 2, "*/");
		if (end == NULL) {
			*unterminated = true;
			return strlen(s);
		}
		return (size_t)(end - s) + 2;
	}
	return 0;
}

/* True when nothing but white space and comments is left at s. */
static bool
sql_only_trailer(const char *s)
{
	bool unterminated;

	while (*s != '\0') {
		size_t n = sql_skip(s, &unterminated);
		if (n > 0 && s[0] != '\'' && s[0] != '"' && s[0] != '`')
			s += n;
		else if (isspace((unsigned char)*s) || *s == ';')
			s++;
		else
			return false;
	}
	return true;
}

void
sql_free(struct sql *q)
{
	size_t i;

	if (q->next != NULL) {
		sql_free(q->next);
		free(q->next);
	}
	free(q->text);
	free(q->positional);
	for (i = 0; i < q->nparams; i++)
		free(q->params[i]);
	free(q->params);
	free(q->where);
	memset(q, 0, sizeof(*q));
}

int
sql_compile(struct sql *q, const char *text, char *err, size_t errlen)
{
	struct buf out = { 0 };
	size_t i = 0;

	q->text = xstrdup(text);
	q->params = NULL;
	q->nparams = 0;
	while (text[i] != '\0') {
		bool unterminated;
		size_t n = sql_skip(text + i, &unterminated);

		if (unterminated) {
			snprintf(err, errlen, "unterminated %s",
			    text[i] == '/' ? "comment" : "quoted string");
			goto fail;
		}
		if (n > 0) {
			buf_append(&out, text + i, n);
			i += n;
			continue;
		}
		char c = text[i];
		if (c == '?') {
			snprintf(err, errlen, "positional '?' parameters are "
			    "not supported: name them, as in :id");
			goto fail;
		}
		if (c == ';') {
			if (!sql_only_trailer(text + i)) {
				snprintf(err, errlen, "one statement only: "
				    "text follows ';'");
				goto fail;
			}
			break;
		}
		if (c == ':' && text[i + 1] == ':') {
			buf_append(&out, "::", 2);
			i += 2;
			continue;
		}
		if (c == ':' && sql_ident_start(text[i + 1]) &&
		    (i == 0 || !sql_ident_char(text[i - 1]))) {
			size_t len = 1;
			while (sql_ident_char(text[i + 1 + len]))
				len++;
			if (len > SQL_PARAM_NAME_MAX) {
				snprintf(err, errlen, "parameter name longer "
				    "than %d characters", SQL_PARAM_NAME_MAX);
				goto fail;
			}
			q->params = xrealloc(q->params,
			    (q->nparams + 1) * sizeof(*q->params));
			q->params[q->nparams++] = xstrndup(text + i + 1, len);
			buf_putc(&out, '?');
			i += 1 + len;
			continue;
		}
		buf_putc(&out, c);
		i++;
	}
	/* Trailing white space would only make log lines and EXPLAIN ugly. */
	while (out.len > 0 && isspace((unsigned char)out.data[out.len - 1]))
		out.data[--out.len] = '\0';
	if (out.len == 0) {
		snprintf(err, errlen, "empty statement");
		goto fail;
	}
	q->positional = buf_steal(&out);
	return 0;
fail:
	buf_free(&out);
	{
		char *where = q->where;
		q->where = NULL;
		sql_free(q);
		q->where = where;
	}
	return -1;
}

/* Case-insensitive match of a whole word at s. */
static bool
sql_word_is(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && strncasecmp(s, word, len) == 0;
}

/*
 * A finishing statement (done, failed, retry.update, lease, requeue,
 * discard)
 * must return no rows: rowq reads none, and where one travels in front
 * of the next claim (batch 1) its rows would be taken for the claim's.
 * A `returning` in backquotes or quotes is a name or a string, not the
 * clause.
 */
int
sql_check_no_rows(const char *text, char *err, size_t errlen)
{
	static const char *const readers[] = { "SELECT", "WITH", "SHOW",
	    "EXPLAIN", "VALUES", "TABLE", NULL };
	struct sql_token *t = NULL;
	size_t n = 0;
	int rc = 0;

	if (sql_tokenize(text, &t, &n, err, errlen) != 0)
		return -1;
	for (size_t k = 0; n > 0 && readers[k] != NULL && rc == 0; k++)
		if (sql_token_is(text, &t[0], readers[k])) {
			snprintf(err, errlen, "a %s returns rows, and changes "
			    "none: done, failed, retry.update, lease, requeue "
			    "and discard statements are UPDATE, DELETE, INSERT, "
			    "REPLACE or CALL", readers[k]);
			rc = -1;
		}
	for (size_t i = 0; i < n && rc == 0; i++)
		if (sql_token_is(text, &t[i], "RETURNING")) {
			snprintf(err, errlen, "the statement returns rows "
			    "(RETURNING): rowq reads none from a finishing "
			    "statement; leave RETURNING out");
			rc = -1;
		}
	free(t);
	return rc;
}

/*
 * The select is written without LIMIT or a locking clause, since rowq adds
 * `LIMIT n FOR UPDATE SKIP LOCKED` itself.  Only the top level is checked:
 * a LIMIT inside a subquery is the user's business.
 */
int
sql_check_select(const char *text, char *err, size_t errlen)
{
	const char *prev = NULL;
	size_t prevlen = 0, i = 0;
	int depth = 0;
	bool first = true;

	while (text[i] != '\0') {
		bool unterminated;
		size_t n = sql_skip(text + i, &unterminated);

		if (unterminated) {
			snprintf(err, errlen, "unterminated quoted string "
			    "or comment");
			return -1;
		}
		if (n > 0) {
			i += n;
			continue;
		}
		if (text[i] == '(')
			depth++;
		else if (text[i] == ')')
			depth--;
		if (!sql_ident_char(text[i])) {
			i++;
			continue;
		}
		const char *w = text + i;
		size_t len = 0;
		while (sql_ident_char(w[len]))
			len++;
		i += len;
		if (first) {
			first = false;
			if (!sql_word_is(w, len, "SELECT") &&
			    !sql_word_is(w, len, "WITH")) {
				snprintf(err, errlen, "not a SELECT");
				return -1;
			}
		}
		if (depth == 0) {
			if (sql_word_is(w, len, "LIMIT")) {
				snprintf(err, errlen, "has LIMIT: rowq appends "
				    "LIMIT <batch> FOR UPDATE SKIP LOCKED "
				    "itself; use batch: to set the limit");
				return -1;
			}
			if ((prev != NULL && sql_word_is(prev, prevlen, "FOR") &&
			    (sql_word_is(w, len, "UPDATE") ||
			    sql_word_is(w, len, "SHARE"))) ||
			    (prev != NULL && sql_word_is(prev, prevlen, "LOCK") &&
			    sql_word_is(w, len, "IN")) ||
			    (prev != NULL && sql_word_is(prev, prevlen, "SKIP") &&
			    sql_word_is(w, len, "LOCKED")) ||
			    sql_word_is(w, len, "NOWAIT")) {
				snprintf(err, errlen, "has a locking clause: "
				    "rowq appends FOR UPDATE SKIP LOCKED itself");
				return -1;
			}
		}
		prev = w;
		prevlen = len;
	}
	if (first) {
		snprintf(err, errlen, "empty select");
		return -1;
	}
	return 0;
}

/*
 * Bytes as a hex literal, X'..', which holds nothing but hex digits and
 * which MariaDB reads as a binary string in every context: a statement's
 * text for PREPARE, a value that must not be spliced as it is.
 */
void
sql_hex(struct buf *out, const void *bytes, size_t len)
{
	buf_puts(out, "X'");
	buf_put_hex(out, bytes, len);
	buf_putc(out, '\'');
}

/*
 * The words MariaDB or MySQL reserve (either's, as of MariaDB 11.8 and
 * MySQL 9.7), which a name must be quoted to be: a column named Key or a
 * table named Set.  Sorted, for bsearch.
 */
static const char *const sql_reserved[] = {
	"ACCESSIBLE", "ADD", "ALL", "ALTER", "ANALYZE", "AND", "AS", "ASC",
	"ASENSITIVE", "BEFORE", "BETWEEN", "BIGINT", "BINARY", "BLOB", "BOTH",
	"BY", "CALL", "CASCADE", "CASE", "CHANGE", "CHAR", "CHARACTER",
	"CHECK", "COLLATE", "COLUMN", "CONDITION", "CONSTRAINT", "CONTINUE",
	"CONVERT", "CREATE", "CROSS", "CUBE", "CUME_DIST", "CURRENT_DATE",
	"CURRENT_ROLE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "CURRENT_USER",
	"CURSOR", "DATABASE", "DATABASES", "DAY_HOUR", "DAY_MICROSECOND",
	"DAY_MINUTE", "DAY_SECOND", "DEC", "DECIMAL", "DECLARE", "DEFAULT",
	"DELAYED", "DELETE", "DENSE_RANK", "DESC", "DESCRIBE", "DETERMINISTIC",
	"DISTINCT", "DISTINCTROW", "DIV", "DOUBLE", "DROP", "DUAL", "EACH",
	"ELSE", "ELSEIF", "EMPTY", "ENCLOSED", "ESCAPED", "EXCEPT", "EXISTS",
	"EXIT", "EXPLAIN", "FALSE", "FETCH", "FIRST_VALUE", "FLOAT", "FLOAT4",
	"FLOAT8", "FOR", "FORCE", "FOREIGN", "FROM", "FULLTEXT", "FUNCTION",
	"GENERAL", "GENERATED", "GET", "GRANT", "GROUP", "GROUPING", "GROUPS",
	"HAVING", "HIGH_PRIORITY", "HOUR_MICROSECOND", "HOUR_MINUTE",
	"HOUR_SECOND", "IF", "IGNORE", "IN", "INDEX", "INFILE", "INNER",
	"INOUT", "INSENSITIVE", "INSERT", "INT", "INT1", "INT2", "INT3",
	"INT4", "INT8", "INTEGER", "INTERSECT", "INTERVAL", "INTO", "IS",
	"ITERATE", "JOIN", "JSON_TABLE", "KEY", "KEYS", "KILL", "LAG",
	"LAST_VALUE", "LATERAL", "LEAD", "LEADING", "LEAVE", "LEFT", "LIKE",
	"LIMIT", "LINEAR", "LINES", "LOAD", "LOCALTIME", "LOCALTIMESTAMP",
	"LOCK", "LONG", "LONGBLOB", "LONGTEXT", "LOOP", "LOW_PRIORITY",
	"MATCH", "MAXVALUE", "MEDIUMBLOB", "MEDIUMINT", "MEDIUMTEXT",
	"MIDDLEINT", "MINUTE_MICROSECOND", "MINUTE_SECOND", "MOD", "MODIFIES",
	"NATURAL", "NO_WRITE_TO_BINLOG", "NOT", "NTH_VALUE", "NTILE", "NULL",
	"NUMERIC", "OF", "OFFSET", "ON", "OPTIMIZE", "OPTION", "OPTIONALLY",
	"OR", "ORDER", "OUT", "OUTER", "OUTFILE", "OVER", "PARTITION",
	"PERCENT_RANK", "POSITION", "PRECISION", "PRIMARY", "PROCEDURE",
	"PURGE", "RANGE", "RANK", "READ", "READ_WRITE", "READS", "REAL",
	"RECURSIVE", "REFERENCES", "REGEXP", "RELEASE", "RENAME", "REPEAT",
	"REPLACE", "REQUIRE", "RESIGNAL", "RESTRICT", "RETURN", "RETURNING",
	"REVOKE", "RIGHT", "RLIKE", "ROW", "ROW_NUMBER", "ROWNUM", "ROWS",
	"SCHEMA", "SCHEMAS", "SECOND_MICROSECOND", "SELECT", "SENSITIVE",
	"SEPARATOR", "SET", "SHOW", "SIGNAL", "SLOW", "SMALLINT", "SPATIAL",
	"SPECIFIC", "SQL", "SQL_BIG_RESULT", "SQL_CALC_FOUND_ROWS",
	"SQL_SMALL_RESULT", "SQLEXCEPTION", "SQLSTATE", "SQLWARNING", "SSL",
	"STARTING", "STORED", "STRAIGHT_JOIN", "SYSTEM", "TABLE", "TERMINATED",
	"THEN", "TINYBLOB", "TINYINT", "TINYTEXT", "TO", "TRAILING", "TRIGGER",
	"TRUE", "UNDO", "UNION", "UNIQUE", "UNLOCK", "UNSIGNED", "UPDATE",
	"USAGE", "USE", "USING", "UTC_DATE", "UTC_TIME", "UTC_TIMESTAMP",
	"VALUES", "VARBINARY", "VARCHAR", "VARCHARACTER", "VARYING", "VIRTUAL",
	"WHEN", "WHERE", "WHILE", "WINDOW", "WITH", "WRITE", "XOR",
	"YEAR_MONTH", "ZEROFILL",
};

static int
sql_reserved_cmp(const void *a, const void *b)
{
	return strcasecmp(a, *(const char *const *)b);
}

/*
 * A name for SQL to paste: as it is when the server reads it so (a word
 * of letters, digits, _ and $, not all digits, not a reserved word), in
 * backquotes otherwise, a backquote in it doubled.
 */
void
sql_ident(struct buf *out, const char *name)
{
	bool plain = name[0] != '\0', digits = true;

	for (const char *p = name; *p != '\0'; p++) {
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '$')
			plain = false;
		if (!isdigit((unsigned char)*p))
			digits = false;
	}
	if (plain && !digits && bsearch(name, sql_reserved,
	    sizeof(sql_reserved) / sizeof(sql_reserved[0]),
	    sizeof(sql_reserved[0]), sql_reserved_cmp) == NULL) {
		buf_puts(out, name);
		return;
	}
	buf_putc(out, '`');
	for (const char *p = name; *p != '\0'; p++) {
		if (*p == '`')
			buf_putc(out, '`');
		buf_putc(out, *p);
	}
	buf_putc(out, '`');
}

/* A newline first, so that a select ending in a -- comment still works. */
char *
sql_claim(const char *select, int batch)
{
	struct buf b = { 0 };

	buf_printf(&b, "%s\nLIMIT %d FOR UPDATE SKIP LOCKED", select, batch);
	return buf_steal(&b);
}

/*
 * The tokens of a statement, for code that needs its structure (cursor.c).
 * Built on sql_skip, so it agrees with sql_compile on what is a literal, a
 * quoted name and a comment.  Comments are dropped, except those the server
 * reads: an executable comment (opened by slash, star and '!' or "M!") runs
 * its contents, and one opened with '+' is an optimizer hint; they come
 * back whole as SQL_TOKEN_EXEC_COMMENT, so that a caller that rewrites the
 * statement can refuse to.
 */
static bool
sql_word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' ||
	    (unsigned char)c >= 0x80;
}

static size_t
sql_punct_len(const char *s)
{
	static const char *const ops[] = { "<=>", "->>", "<=", ">=", "<>",
	    "!=", "&&", "||", ":=", "<<", ">>", "->" };

	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (strncmp(s, ops[k], strlen(ops[k])) == 0)
			return strlen(ops[k]);
	return 1;
}

static size_t
sql_number_len(const char *s)
{
	size_t len = 0;

	while (isalnum((unsigned char)s[len]) || s[len] == '.' ||
	    ((s[len] == '+' || s[len] == '-') && len > 0 &&
	    (s[len - 1] == 'e' || s[len - 1] == 'E') &&
	    !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))))
		len++;
	return len;
}

/*
 * The opener of an executable comment at s: slash, star, '!' or "M!",
 * then the version it needs, if any (5 or 6 digits: 50100 is 5.1.0,
 * 100500 is MariaDB 10.5.0).  Returns the opener's length, 0 when s opens
 * no executable comment; *needs is the version, 0 for none.
 */
static size_t
sql_exec_opener(const char *s, unsigned long *needs)
{
	size_t i = 2, digits = 0;

	*needs = 0;
	if (s[0] != '/' || s[1] != '*')
		return 0;
	if (s[i] == 'M')
		i++;
	if (s[i] != '!')
		return 0;
	i++;
	while (isdigit((unsigned char)s[i + digits]) && digits < 6)
		*needs = *needs * 10 + (unsigned long)(s[i + digits++] - '0');
	/* Fewer than 5 digits are not a version but the code's own. */
	if (digits < 5) {
		*needs = 0;
		digits = 0;
	}
	return i + digits;
}

/*
 * server_version 0: an executable comment is one token, whole; else its
 * contents are read as the code they are on a server of that version
 * (mysql_get_server_version's form, 101100 for 10.11.0): the server runs
 * them when they need no version or one it has, and skips them as a
 * comment otherwise.  "M!" is MariaDB's own: m_comments says whether the
 * server runs it (dialect.h).  An optimizer hint (slash, star, '+') stays
 * one token either way.
 */
static int
sql_tokenize_as(const char *text, unsigned long server_version,
    bool m_comments, struct sql_token **out, size_t *ntokens, char *err,
    size_t errlen)
{
	struct sql_token *t = NULL;
	size_t n = 0, cap = 0, i = 0;
	int depth = 0;
	bool in_exec = false;

	while (text[i] != '\0') {
		bool unterminated;
		size_t len = sql_skip(text + i, &unterminated);
		enum sql_token_kind kind;
		char c = text[i];
		unsigned long needs;
		size_t opener;

		if (in_exec && c == '*' && text[i + 1] == '/') {
			in_exec = false;
			i += 2;
			continue;
		}
		if (unterminated) {
			snprintf(err, errlen, "unterminated %s",
			    c == '/' ? "comment" : "quoted string");
			free(t);
			return -1;
		}
		if (server_version > 0 && !in_exec &&
		    (opener = sql_exec_opener(text + i, &needs)) > 0) {
			if (needs > server_version ||
			    (!m_comments && text[i + 2] == 'M')) {
				i += len;	/* skipped as a comment */
				continue;
			}
			in_exec = true;
			i += opener;
			continue;
		}
		if (len > 0 && c == '/' && (text[i + 2] == '!' ||
		    text[i + 2] == '+' || (text[i + 2] == 'M' &&
		    text[i + 3] == '!')))
			kind = SQL_TOKEN_EXEC_COMMENT;
		else if (len > 0 && (c == '\'' || c == '"'))
			kind = SQL_TOKEN_STRING;
		else if (len > 0 && c == '`')
			kind = SQL_TOKEN_NAME;
		else if (len > 0) {		/* a comment */
			i += len;
			continue;
		} else if (isspace((unsigned char)c)) {
			i++;
			continue;
		} else if (isdigit((unsigned char)c) || (c == '.' &&
		    isdigit((unsigned char)text[i + 1]))) {
			kind = SQL_TOKEN_NUMBER;
			len = sql_number_len(text + i);
		} else if (sql_word_char(c)) {
			kind = SQL_TOKEN_WORD;
			for (len = 1; sql_word_char(text[i + len]); len++)
				;
		} else {
			kind = SQL_TOKEN_PUNCT;
			len = sql_punct_len(text + i);
		}
		if (n >= SQL_TOKENS_MAX) {
			snprintf(err, errlen, "longer than %d tokens",
			    SQL_TOKENS_MAX);
			free(t);
			return -1;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			t = xrealloc(t, cap * sizeof(*t));
		}
		if (c == ')' && kind == SQL_TOKEN_PUNCT)
			depth--;
		t[n++] = (struct sql_token){ kind, i, len, depth };
		if (c == '(' && kind == SQL_TOKEN_PUNCT)
			depth++;
		i += len;
	}
	*out = t;
	*ntokens = n;
	return 0;
}

int
sql_tokenize(const char *text, struct sql_token **out, size_t *ntokens,
    char *err, size_t errlen)
{
	return sql_tokenize_as(text, 0, true, out, ntokens, err, errlen);
}

int
sql_tokenize_server(const char *text, unsigned long server_version,
    bool m_comments, struct sql_token **out, size_t *ntokens, char *err,
    size_t errlen)
{
	return sql_tokenize_as(text, server_version ? server_version : ULONG_MAX,
	    m_comments, out, ntokens, err, errlen);
}

/* A word token, compared without regard to case. */
bool
sql_token_is(const char *text, const struct sql_token *t, const char *word)
{
	return (t->kind == SQL_TOKEN_WORD || t->kind == SQL_TOKEN_PUNCT) &&
	    strlen(word) == t->len && strncasecmp(text + t->start, word,
	    t->len) == 0;
}

/*
 * Tokens [from, to) as text: one space wherever the statement had white
 * space or a comment between two of them, nothing where it had none, so
 * that `a.b` and `f(x)` stay whole and no comment can swallow what a
 * caller appends.
 */
void
sql_tokens_text(struct buf *b, const char *text, const struct sql_token *t,
    size_t from, size_t to)
{
	for (size_t k = from; k < to; k++) {
		if (k > from && t[k - 1].start + t[k - 1].len < t[k].start)
			buf_putc(b, ' ');
		buf_append(b, text + t[k].start, t[k].len);
	}
}

/* ---- a statement's structure, for the readers that take one apart ---- */

/* Words that end a table reference: what follows is not an alias. */
static const char *const sql_clause_words[] = { "WHERE", "ORDER", "GROUP",
    "HAVING", "WINDOW", "LIMIT", "FOR", "UNION", "EXCEPT", "INTERSECT",
    "JOIN", "INNER", "LEFT", "RIGHT", "CROSS", "NATURAL", "STRAIGHT_JOIN",
    "FULL", "OUTER", "ON", "USING", "USE", "FORCE", "IGNORE", "PARTITION",
    "LOCK", "INTO", "PROCEDURE", "AS", NULL };

bool
sql_parse_is(const struct sql_parse *p, size_t i, const char *word)
{
	return i < p->n && sql_token_is(p->text, &p->t[i], word);
}

bool
sql_parse_is_name(const struct sql_parse *p, size_t i)
{
	return i < p->n && (p->t[i].kind == SQL_TOKEN_WORD ||
	    p->t[i].kind == SQL_TOKEN_NAME);
}

bool
sql_parse_clause_word(const struct sql_parse *p, size_t i)
{
	if (i >= p->n || p->t[i].kind != SQL_TOKEN_WORD)
		return false;
	for (size_t k = 0; sql_clause_words[k] != NULL; k++)
		if (sql_parse_is(p, i, sql_clause_words[k]))
			return true;
	return false;
}

/* A name without its backquotes (doubled ones undone), as the server sees it. */
char *
sql_parse_unquote(const struct sql_parse *p, size_t i)
{
	const struct sql_token *t = &p->t[i];
	const char *s = p->text + t->start;
	struct buf b = { 0 };

	if (t->kind != SQL_TOKEN_NAME)
		return xstrndup(s, t->len);
	for (size_t k = 1; k + 1 < t->len; k++) {
		buf_putc(&b, s[k]);
		if (s[k] == '`')
			k++;
	}
	if (b.data == NULL)
		buf_puts(&b, "");
	return buf_steal(&b);
}

/* Tokens [from, to) as sql_tokens_text writes them; the caller frees. */
char *
sql_parse_text(const struct sql_parse *p, size_t from, size_t to)
{
	struct buf b = { 0 };

	sql_tokens_text(&b, p->text, p->t, from, to);
	if (b.data == NULL)
		buf_puts(&b, "");
	return buf_steal(&b);
}

/*
 * Index hints after the table: (USE | FORCE | IGNORE) (INDEX | KEY)
 * [FOR JOIN | FOR ORDER BY | FOR GROUP BY] (names).  Returns the token
 * after them.
 */
size_t
sql_parse_skip_hints(const struct sql_parse *p, size_t i)
{
	while ((sql_parse_is(p, i, "USE") || sql_parse_is(p, i, "FORCE") ||
	    sql_parse_is(p, i, "IGNORE")) &&
	    (sql_parse_is(p, i + 1, "INDEX") || sql_parse_is(p, i + 1, "KEY"))) {
		i += 2;
		if (sql_parse_is(p, i, "FOR")) {
			i++;
			if (sql_parse_is(p, i, "ORDER") || sql_parse_is(p, i, "GROUP"))
				i++;
			i++;	/* JOIN, or the BY of ORDER BY */
		}
		if (!sql_parse_is(p, i, "("))
			return i;
		while (i < p->n && !(sql_parse_is(p, i, ")") && p->t[i].depth == 0))
			i++;
		if (i < p->n)
			i++;
	}
	return i;
}

