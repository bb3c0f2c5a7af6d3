/*
 * config_walk.c: the tree of a file walked with one table of keys per
 * mapping (struct config_field): each key's parser fills its member of
 * the struct, unknown keys get a "did you mean", duplicates and missing
 * keys are said.  The parsers of plain values (numbers, durations,
 * booleans, strings, file names) are here; rowq's own keys are in
 * config.c, config_queue.c and config_env.c.
 *
 * Every problem is logged as "FILE:LINE: KEY: what is wrong" and loading
 * goes on, so that one run of `rowq check` shows every mistake.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_SUGGEST_MAX	2	/* edit distance for "did you mean" */

/* ---- messages ---- */

void
config_error(struct load *ld, unsigned long line, const char *path,
    const char *fmt, ...)
{
	char msg[CONFIG_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (path[0] != '\0')
		log_error("%s:%lu: %s: %s", ld->file->path, line, path, msg);
	else
		log_error("%s:%lu: %s", ld->file->path, line, msg);
	ld->errors++;
}

/* A bad value quoted back: short, and with no control characters. */
const char *
config_show(const char *s, char *out, size_t len)
{
	size_t i, o = 0;

	out[o++] = '"';
	for (i = 0; s[i] != '\0' && o + 6 < len && i < CONFIG_SHOW_MAX; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else
			out[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	if (s[i] != '\0') {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o++] = '"';
	out[o] = '\0';
	return out;
}

void
config_path(char *out, size_t len, const char *parent, const char *key)
{
	if (parent[0] == '\0')
		snprintf(out, len, "%s", key);
	else
		snprintf(out, len, "%s.%s", parent, key);
}

/* "FILE:LINE: PATH", kept in the config for messages after loading. */
char *
config_where(struct load *ld, unsigned long line, const char *path)
{
	struct buf b = { 0 };

	buf_printf(&b, "%s:%lu", ld->file->path, line);
	if (path != NULL)
		buf_printf(&b, ": %s", path);
	return buf_steal(&b);
}

/* ---- scalar values ---- */

/*
 * The value as a non-empty string, or NULL (error logged) when it is
 * something else.  `what` names what was expected, for the message.
 */
const char *
config_scalar(struct load *ld, const struct config_item *it, const char *what)
{
	const struct node *v = it->value;

	if (v->kind == NODE_INVALID)
		return NULL;
	if (v->kind != NODE_SCALAR || config_node_null(v)) {
		config_error(ld, v->line, it->path, "expected %s, not %s",
		    what, config_node_kind_name(v));
		return NULL;
	}
	return v->value;
}

static int
config_integer(struct load *ld, const struct config_item *it,
    const struct config_field *f, long long *out)
{
	const char *s = config_scalar(ld, it, "a whole number");
	char shown[CONFIG_SHOW_MAX + 8], *end;
	long long v;

	if (s == NULL)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (!(isdigit((unsigned char)s[0]) || (s[0] == '-' &&
	    isdigit((unsigned char)s[1]))) || *end != '\0') {
		config_error(ld, it->value->line, it->path,
		    "not a whole number: %s",
		    config_show(s, shown, sizeof(shown)));
		return -1;
	}
	/* Only digits are left in s: it can be shown as it is. */
	if (errno == ERANGE || v < f->min || v > f->max) {
		if (f->max == INT64_MAX)
			config_error(ld, it->value->line, it->path,
			    "must be at least %lld, not %.40s",
			    (long long)f->min, s);
		else
			config_error(ld, it->value->line, it->path,
			    "must be from %lld to %lld, not %.40s",
			    (long long)f->min, (long long)f->max, s);
		return -1;
	}
	*out = v;
	return 0;
}

void
config_field_int(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	long long v;

	if (config_integer(ld, it, f, &v) == 0)
		*(int *)dst = (int)v;
}

void
config_field_long(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	long long v;

	if (config_integer(ld, it, f, &v) == 0)
		*(long *)dst = (long)v;
}

void
config_field_unsigned(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	long long v;

	if (config_integer(ld, it, f, &v) == 0)
		*(unsigned *)dst = (unsigned)v;
}

void
config_field_duration(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a duration");
	char shown[CONFIG_SHOW_MAX + 8], min[32];
	int64_t ms;

	if (s == NULL)
		return;
	if (duration_parse(s, &ms) == -1) {
		config_error(ld, it->value->line, it->path,
		    "not a duration: %s", config_show(s, shown, sizeof(shown)));
		return;
	}
	if (ms < f->min) {
		duration_format(f->min, min, sizeof(min));
		if (f->min == 1)
			config_error(ld, it->value->line, it->path,
			    "must be more than 0");
		else
			config_error(ld, it->value->line, it->path,
			    "must be at least %s, not %s", min, s);
		return;
	}
	*(int64_t *)dst = ms;
}

void
config_field_bool(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "true or false");
	char shown[CONFIG_SHOW_MAX + 8];

	(void)f;
	if (s == NULL)
		return;
	if (strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0)
		*(bool *)dst = true;
	else if (strcasecmp(s, "false") == 0 || strcasecmp(s, "no") == 0)
		*(bool *)dst = false;
	else
		config_error(ld, it->value->line, it->path,
		    "expected true or false, not %s",
		    config_show(s, shown, sizeof(shown)));
}

void
config_field_string(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a string");

	(void)f;
	if (s != NULL)
		*(char **)dst = xstrdup(s);
}

/* A file name, relative to the directory of the file that names it. */
void
config_field_path(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a file name");
	struct buf b = { 0 };

	(void)f;
	if (s == NULL)
		return;
	if (s[0] != '/')
		buf_puts(&b, ld->file->dir);
	buf_puts(&b, s);
	*(char **)dst = buf_steal(&b);
}


/* ---- walking a mapping with a table of keys ---- */

/* Edit distance with transpositions, for "did you mean". */
static size_t
config_distance(const char *a, const char *b)
{
	size_t d[QUEUE_NAME_MAX + 1][QUEUE_NAME_MAX + 1];
	size_t i, j, la = strlen(a), lb = strlen(b);

	if (la > QUEUE_NAME_MAX || lb > QUEUE_NAME_MAX)
		return SIZE_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t v = d[i - 1][j - 1] + cost;
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

static void
config_unknown(struct load *ld, const struct node *key, const char *parent,
    const struct config_field *fields, size_t nfields)
{
	const char *best = NULL;
	size_t i, bestd = CONFIG_SUGGEST_MAX + 1;
	char path[CONFIG_PATH_MAX];

	for (i = 0; i < nfields; i++) {
		size_t d = config_distance(key->value, fields[i].name);
		if (d < bestd) {
			bestd = d;
			best = fields[i].name;
		}
	}
	config_path(path, sizeof(path), parent, key->value);
	if (best != NULL)
		config_error(ld, key->line, path, "unknown key: did you mean "
		    "%s?", best);
	else
		config_error(ld, key->line, path, "unknown key");
}

/* The key node of a mapping's entry, or NULL. */
const struct node *
config_lookup(const struct node *map, const char *name)
{
	size_t i;

	for (i = 0; i + 1 < map->nitems; i += 2)
		if (map->items[i]->kind == NODE_SCALAR &&
		    strcmp(map->items[i]->value, name) == 0)
			return map->items[i];
	return NULL;
}

bool
config_expect_mapping(struct load *ld, const struct config_item *it)
{
	if (it->value->kind == NODE_MAPPING)
		return true;
	if (it->value->kind != NODE_INVALID)
		config_error(ld, it->value->line, it->path,
		    "expected a mapping, not %s",
		    config_node_kind_name(it->value));
	return false;
}

/*
 * Parse each entry of a mapping with the field of the same name, into
 * base + field offset.  seen[i] is set to the key of fields[i] when it is
 * present, for the caller's checks across keys.  Returns -1 when the value
 * is not a mapping.
 */
int
config_walk(struct load *ld, const struct config_item *it,
    const struct config_field *fields, size_t nfields, void *base,
    const struct node **seen)
{
	const struct node *map = it->value;
	size_t i, f;

	if (!config_expect_mapping(ld, it))
		return -1;
	for (i = 0; i + 1 < map->nitems; i += 2) {
		const struct node *k = map->items[i];
		char path[CONFIG_PATH_MAX];

		if (k->kind != NODE_SCALAR) {
			if (k->kind != NODE_INVALID)
				config_error(ld, k->line, it->path, "a key "
				    "must be a string, not %s",
				    config_node_kind_name(k));
			continue;
		}
		for (f = 0; f < nfields; f++)
			if (strcmp(k->value, fields[f].name) == 0)
				break;
		if (f == nfields) {
			config_unknown(ld, k, it->path, fields, nfields);
			continue;
		}
		config_path(path, sizeof(path), it->path, k->value);
		if (seen[f] != NULL) {
			config_error(ld, k->line, path, "duplicate key (first "
			    "at line %lu)", seen[f]->line);
			continue;
		}
		seen[f] = k;
		if (fields[f].main_only && ld->file->included) {
			config_error(ld, k->line, path, "not allowed in an "
			    "included file, which may only add queues:");
			continue;
		}
		struct config_item child = {
			.key = k,
			.value = map->items[i + 1],
			.path = path,
			.parent = map,
		};
		fields[f].parse(ld, &child, (char *)base + fields[f].offset,
		    &fields[f]);
	}
	return 0;
}

size_t
config_field_index(const struct config_field *fields, size_t nfields,
    const char *name)
{
	size_t i;

	for (i = 0; i < nfields; i++)
		if (strcmp(fields[i].name, name) == 0)
			return i;
	abort();	/* a typo in this file */
}

/* Logs, for each required key that is absent, that it is missing. */
void
config_require(struct load *ld, const struct config_item *it,
    const struct config_field *fields, size_t nfields,
    const struct node **seen, const char *const *names)
{
	unsigned long line = it->key != NULL ? it->key->line : 1;

	for (; *names != NULL; names++)
		if (seen[config_field_index(fields, nfields, *names)] == NULL)
			config_error(ld, line, it->path, "missing required key "
			    "%s", *names);
}
