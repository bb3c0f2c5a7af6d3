/*
 * buf.c: growable byte buffers and allocation that never returns NULL.
 *
 * rowq has nothing sensible to do when malloc fails in the middle of a row,
 * so allocation failure is fatal: the worker exits, its transaction rolls
 * back, and the supervisor restarts it.
 */
#include "rowq.h"

#include <stdlib.h>
#include <string.h>

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		fatal("malloc %zu bytes", n);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		fatal("calloc %zu x %zu bytes", n, size);
	return p;
}

void *
xrealloc(void *old, size_t n)
{
	void *p = realloc(old, n ? n : 1);

	if (p == NULL)
		fatal("realloc %zu bytes", n);
	return p;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

/* A copy of a value that may be NULL (an SQL NULL), as "" then. */
char *
xstrdup_or_empty(const char *s)
{
	return xstrdup(s != NULL ? s : "");
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

static void
buf_grow(struct buf *b, size_t more)
{
	size_t need = b->len + more + 1;

	if (need <= b->cap)
		return;
	if (need < b->len)
		fatalx("buffer size overflow");
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void
buf_append(struct buf *b, const void *p, size_t n)
{
	buf_grow(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void
buf_puts(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

void
buf_putc(struct buf *b, char c)
{
	buf_append(b, &c, 1);
}

/* Bytes as lowercase hex digits, two a byte. */
void
buf_put_hex(struct buf *b, const void *bytes, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = bytes;

	for (size_t i = 0; i < len; i++) {
		buf_putc(b, hex[p[i] >> 4]);
		buf_putc(b, hex[p[i] & 15]);
	}
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *
buf_steal(struct buf *b)
{
	char *p = b->data ? b->data : xstrdup("");

	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}
