/*
 * json.c: a claimed row as one JSON object on one line.
 *
 * Handlers parse this with whatever their language offers, so it must be
 * valid JSON whatever the table holds: text that is not UTF-8 has each bad
 * byte replaced by U+FFFD, control characters (newlines, NUL) are escaped,
 * binary columns are base64, and SQL NULL is null.  Numbers that a
 * double cannot hold exactly (integers beyond 2^53 - 1, and DECIMAL
 * values, whose digits are their point) are strings: JavaScript and jq
 * read every JSON number as a double, and would round them.
 */
#include "rowq.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static size_t
json_utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and beyond U+10FFFF are not UTF-8. */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/*
 * Make b valid UTF-8 in place: each byte that does not start a valid
 * sequence becomes U+FFFD, so a cut in the middle of a character (a tail
 * of stderr, a capped stdout) or a handler's binary noise can always be
 * stored in a utf8mb4 column.  NUL bytes are kept: they are valid UTF-8.
 */
void
utf8_sanitize(struct buf *b)
{
	const unsigned char *s = (const unsigned char *)b->data;
	struct buf out = { 0 };
	size_t i = 0, n = b->len;

	if (s == NULL)
		return;
	while (i < n && json_utf8_len(s + i, n - i) > 0)
		i += json_utf8_len(s + i, n - i);
	if (i == n)
		return;		/* the common case: nothing to do */
	buf_append(&out, s, i);
	while (i < n) {
		size_t len = json_utf8_len(s + i, n - i);
		if (len == 0) {
			buf_append(&out, "\xef\xbf\xbd", 3);
			i++;
		} else {
			buf_append(&out, s + i, len);
			i += len;
		}
	}
	buf_free(b);
	*b = out;
}

void
json_string(struct buf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	buf_putc(b, '"');
	while (i < n) {
		unsigned char c = s[i];
		size_t len, run;

		/*
		 * Printable ASCII that needs no escape, in one append: a 16 MiB
		 * text column would otherwise cost 16 million calls.
		 */
		for (run = i; run < n && s[run] >= 0x20 && s[run] < 0x7f &&
		    s[run] != '"' && s[run] != '\\'; run++)
			;
		if (run > i) {
			buf_append(b, s + i, run - i);
			i = run;
			continue;
		}
		switch (c) {
		case '"':
			buf_append(b, "\\\"", 2);
			i++;
			continue;
		case '\\':
			buf_append(b, "\\\\", 2);
			i++;
			continue;
		case '\n':
			buf_append(b, "\\n", 2);
			i++;
			continue;
		case '\r':
			buf_append(b, "\\r", 2);
			i++;
			continue;
		case '\t':
			buf_append(b, "\\t", 2);
			i++;
			continue;
		default:
			break;
		}
		if (c < 0x20 || c == 0x7f) {
			buf_printf(b, "\\u%04x", c);
			i++;
			continue;
		}
		len = json_utf8_len(s + i, n - i);
		if (len == 0) {
			buf_append(b, "\\ufffd", 6);
			i++;
			continue;
		}
		buf_append(b, s + i, len);
		i += len;
	}
	buf_putc(b, '"');
}

static void
json_base64(struct buf *b, const unsigned char *s, size_t n)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	char chunk[4096];
	size_t k = 0;

	buf_putc(b, '"');
	/* Whole groups through a chunk: one append per 3 KiB, not per 3 bytes. */
	for (i = 0; i + 2 < n; i += 3) {
		chunk[k++] = tab[s[i] >> 2];
		chunk[k++] = tab[((s[i] & 3) << 4) | (s[i + 1] >> 4)];
		chunk[k++] = tab[((s[i + 1] & 15) << 2) | (s[i + 2] >> 6)];
		chunk[k++] = tab[s[i + 2] & 63];
		if (k == sizeof(chunk)) {
			buf_append(b, chunk, k);
			k = 0;
		}
	}
	buf_append(b, chunk, k);
	if (n - i == 1) {
		char q[4] = { tab[s[i] >> 2], tab[(s[i] & 3) << 4], '=', '=' };
		buf_append(b, q, 4);
	} else if (n - i == 2) {
		char q[4] = { tab[s[i] >> 2],
		    tab[((s[i] & 3) << 4) | (s[i + 1] >> 4)],
		    tab[(s[i + 1] & 15) << 2], '=' };
		buf_append(b, q, 4);
	}
	buf_putc(b, '"');
}

/* RFC 8259 number grammar: what the server prints is checked, not trusted. */
static bool
json_is_number(const char *s, size_t n)
{
	size_t i = 0, d;

	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0')
		i++;
	else if (i < n && s[i] >= '1' && s[i] <= '9')
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	else
		return false;
	if (i < n && s[i] == '.') {
		for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	return i == n;
}

/* |v| <= 2^53 - 1: an integer that every JSON reader keeps exactly. */
static bool
json_is_safe_integer(const char *s, size_t n)
{
	static const char max[] = "9007199254740991";

	if (n > 0 && s[0] == '-') {
		s++;
		n--;
	}
	return n < sizeof(max) - 1 ||
	    (n == sizeof(max) - 1 && memcmp(s, max, n) <= 0);
}

static bool
json_as_number(const struct column *col, const char *v, size_t n)
{
	if (!json_is_number(v, n))
		return false;
	if (col->kind == COLUMN_INTEGER)
		return json_is_safe_integer(v, n);
	return col->kind == COLUMN_NUMBER && !col->is_decimal;
}

void
json_row(struct buf *b, const struct column *cols, size_t ncols,
    const struct row *r)
{
	size_t i;

	buf_putc(b, '{');
	for (i = 0; i < ncols; i++) {
		const char *v = r->value[i];
		size_t n = r->len[i];

		if (i > 0)
			buf_putc(b, ',');
		json_string(b, cols[i].name, strlen(cols[i].name));
		buf_putc(b, ':');
		if (v == NULL)
			buf_append(b, "null", 4);
		else if (cols[i].kind == COLUMN_BINARY)
			json_base64(b, (const unsigned char *)v, n);
		else if (json_as_number(&cols[i], v, n))
			buf_append(b, v, n);
		else
			json_string(b, v, n);
	}
	buf_putc(b, '}');
}
