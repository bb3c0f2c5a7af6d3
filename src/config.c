/*
 * config.c: load, validate and free the configuration; the only includer
 * of <yaml.h>.
 *
 * A file is read whole (it is small and bounded), turned into a tree of
 * nodes by libyaml's event parser, and the tree is then walked with one
 * table of keys per mapping.  The event parser, rather than libyaml's
 * document loader, lets us refuse aliases before they are expanded (a few
 * lines of anchors and aliases can stand for gigabytes: "billion laughs")
 * and bound nesting and scalar size while reading.
 *
 * Every problem is logged as "FILE:LINE: KEY: what is wrong" and loading
 * goes on, so that one run of `rowq check` shows every mistake; in the end
 * any error means NULL and nothing kept.
 */
#include "rowq.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <pwd.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#define CONFIG_NODES_MAX	100000	/* values in one file */
#define CONFIG_PATH_MAX		256	/* "queues.email.retry.delay" */
#define CONFIG_MSG_MAX		1024
#define CONFIG_SHOW_MAX		60	/* bytes of a bad value quoted back */
#define CONFIG_SUGGEST_MAX	2	/* edit distance for "did you mean" */
#define QUEUE_NAME_MAX		64

#define NELEMS(a)	(sizeof(a) / sizeof((a)[0]))

const char *const config_builtin_params[] = {
	"attempt",	/* this try, from 1 */
	"delay",	/* seconds until the next try */
	"error",	/* the handler's message */
	"output",	/* the handler's standard output */
	"lease",	/* this claim's token: queues with lease: only */
	"duration",	/* the lease's duration in seconds: lease only */
	NULL,
};

/* ---- the tree that libyaml's events build ---- */

enum node_kind {
	NODE_SCALAR,
	NODE_MAPPING,
	NODE_SEQUENCE,
	NODE_INVALID,	/* stands in for a refused alias, already reported */
};

struct node {
	enum node_kind	 kind;
	unsigned long	 line;		/* 1-based */
	char		*value;		/* scalar: NUL-terminated */
	bool		 plain;		/* scalar: unquoted, so ~ means null */
	struct node    **items;		/* mapping: key, value, key, value... */
	size_t		 nitems;
	size_t		 cap;
};

/* One file being loaded. */
struct config_file {
	const char	*path;		/* as it appears in messages */
	char		*dir;		/* "" or a prefix ending in '/' */
	bool		 included;
};

/* A pattern from include:, expanded once the main file is done. */
struct config_include {
	char		*pattern;
	unsigned long	 line;
};

/* Everything one config_load() call needs. */
struct load {
	struct config		*cfg;
	const struct config_file *file;
	int			 errors;
	size_t			 queue_entries;	/* valid or not */
	bool			 too_many_queues; /* said so once */
	size_t			 unparsed;	/* files with syntax errors */
	unsigned long		 queues_line;	/* of the main file's queues: */
	struct config_include	*includes;
	size_t			 nincludes;
	dev_t			 dev[CONFIG_FILES_MAX];
	ino_t			 ino[CONFIG_FILES_MAX];
	size_t			 nfiles;
};

/* A key, its value, where it is, and the mapping it is in. */
struct config_item {
	const struct node	*key;		/* NULL at a file's top */
	const struct node	*value;
	const char		*path;		/* "queues.email.retry.delay" */
	const struct node	*parent;
};

/*
 * One key of a mapping: how to parse it, and where into the struct.  The
 * parser gets the struct's address plus offset, and logs what is wrong.
 */
struct config_field {
	const char	*name;
	void		(*parse)(struct load *, const struct config_item *,
			    void *, const struct config_field *);
	size_t		 offset;
	int64_t		 min, max;	/* integers and durations */
	bool		 main_only;	/* not in included files */
};

/*
 * Table rows: the key, its parser (config_field_PARSE), the member it
 * fills and the bounds of integers and durations.  WHOLE rows get the
 * whole struct, for keys that fill more than one member.
 */
#define ROW(key, parse, offset, min, max, main_only)			\
	{ (key), config_field_##parse, (offset), (min), (max), (main_only) }
#define FIELD(type, key, parse, member, min, max)			\
	{ (key), config_field_##parse, offsetof(type, member), (min),	\
	    (max), false }
#define WHOLE(key, parse)						\
	{ (key), config_field_##parse, 0, 0, 0, false }

/* ---- messages ---- */

static void	config_error(struct load *, unsigned long, const char *,
		    const char *, ...) __attribute__((format(printf, 4, 5)));

static void
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
static const char *
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

static void
config_path(char *out, size_t len, const char *parent, const char *key)
{
	if (parent[0] == '\0')
		snprintf(out, len, "%s", key);
	else
		snprintf(out, len, "%s.%s", parent, key);
}

/* "FILE:LINE: PATH", kept in the config for messages after loading. */
static char *
config_where(struct load *ld, unsigned long line, const char *path)
{
	struct buf b = { 0 };

	buf_printf(&b, "%s:%lu", ld->file->path, line);
	if (path != NULL)
		buf_printf(&b, ": %s", path);
	return buf_steal(&b);
}

/* ---- building the tree from events ---- */

static struct node *
config_node_new(enum node_kind kind, unsigned long line)
{
	struct node *n = xcalloc(1, sizeof(*n));

	n->kind = kind;
	n->line = line;
	return n;
}

/* Recursion is bounded by CONFIG_DEPTH_MAX. */
static void
config_node_free(struct node *n)
{
	size_t i;

	if (n == NULL)
		return;
	for (i = 0; i < n->nitems; i++)
		config_node_free(n->items[i]);
	free(n->items);
	free(n->value);
	free(n);
}

static void
config_node_append(struct node *parent, struct node *child)
{
	if (parent->nitems == parent->cap) {
		parent->cap = parent->cap == 0 ? 8 : parent->cap * 2;
		parent->items = xrealloc(parent->items,
		    parent->cap * sizeof(*parent->items));
	}
	parent->items[parent->nitems++] = child;
}

/* A YAML null: nothing, or an unquoted ~ or null. */
static bool
config_node_null(const struct node *n)
{
	return n->kind == NODE_SCALAR && (n->value[0] == '\0' ||
	    (n->plain && (strcmp(n->value, "~") == 0 ||
	    strcmp(n->value, "null") == 0 || strcmp(n->value, "Null") == 0 ||
	    strcmp(n->value, "NULL") == 0)));
}

static const char *
config_node_kind_name(const struct node *n)
{
	switch (n->kind) {
	case NODE_MAPPING:
		return "a mapping";
	case NODE_SEQUENCE:
		return "a sequence";
	default:
		return config_node_null(n) ? "an empty value" : "a string";
	}
}

struct builder {
	struct load	*ld;
	struct node	*root;
	struct node	*stack[CONFIG_DEPTH_MAX];
	size_t		 depth;
	size_t		 nnodes;
	int		 documents;
};

/*
 * The key path to where the parser is, for errors found while building.
 * A collection on the stack is already the last item of the one below it;
 * only the innermost one may be waiting for a value.
 */
static void
config_builder_path(const struct builder *b, char *out, size_t len)
{
	size_t i, o = 0;

	out[0] = '\0';
	for (i = 0; i < b->depth && o < len; i++) {
		const struct node *n = b->stack[i], *k;
		bool inner = i + 1 == b->depth;

		if (n->kind == NODE_SEQUENCE) {
			o += (size_t)snprintf(out + o, len - o, "[%zu]",
			    inner ? n->nitems : n->nitems - 1);
			continue;
		}
		if (inner && n->nitems % 2 == 0)
			break;
		/*
		 * Below the top, the collection above is this mapping's last
		 * item: its value (an even count), or its key (an odd count:
		 * a mapping or sequence as a key, `{{a: b}: c}`), which has
		 * no name to show.
		 */
		if (!inner && n->nitems % 2 == 1) {
			o += (size_t)snprintf(out + o, len - o, "%s?",
			    o == 0 ? "" : ".");
			continue;
		}
		k = n->items[inner ? n->nitems - 1 : n->nitems - 2];
		o += (size_t)snprintf(out + o, len - o, "%s%s",
		    o == 0 ? "" : ".", k->kind == NODE_SCALAR ? k->value : "?");
	}
}

static void	config_builder_error(struct builder *, unsigned long,
		    const char *, ...) __attribute__((format(printf, 3, 4)));

static void
config_builder_error(struct builder *b, unsigned long line, const char *fmt,
    ...)
{
	char path[CONFIG_PATH_MAX], msg[CONFIG_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	config_builder_path(b, path, sizeof(path));
	config_error(b->ld, line, path, "%s", msg);
}

/* Returns -1 when the file can be read no further. */
static int
config_builder_add(struct builder *b, struct node *n)
{
	if (++b->nnodes > CONFIG_NODES_MAX) {
		config_builder_error(b, n->line, "more than %d values in one "
		    "file", CONFIG_NODES_MAX);
		config_node_free(n);
		return -1;
	}
	bool collection = n->kind == NODE_MAPPING || n->kind == NODE_SEQUENCE;

	if (collection && b->depth == CONFIG_DEPTH_MAX) {
		config_builder_error(b, n->line, "nested more than %d levels "
		    "deep", CONFIG_DEPTH_MAX);
		config_node_free(n);
		return -1;
	}
	if (b->depth == 0)
		b->root = n;
	else
		config_node_append(b->stack[b->depth - 1], n);
	if (collection)
		b->stack[b->depth++] = n;
	return 0;
}

static int
config_builder_scalar(struct builder *b, const yaml_event_t *ev)
{
	unsigned long line = ev->start_mark.line + 1;
	size_t len = ev->data.scalar.length;
	struct node *n;

	if (len > CONFIG_SCALAR_MAX) {
		config_builder_error(b, line, "value longer than %d bytes",
		    CONFIG_SCALAR_MAX);
		return -1;
	}
	if (memchr(ev->data.scalar.value, '\0', len) != NULL) {
		config_builder_error(b, line, "value contains a NUL character");
		return config_builder_add(b,
		    config_node_new(NODE_INVALID, line));
	}
	n = config_node_new(NODE_SCALAR, line);
	n->value = xstrndup((const char *)ev->data.scalar.value, len);
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	return config_builder_add(b, n);
}

static int
config_builder_event(struct builder *b, const yaml_event_t *ev)
{
	unsigned long line = ev->start_mark.line + 1;

	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++b->documents > 1) {
			config_builder_error(b, line, "a second YAML document: "
			    "a configuration file holds one");
			return -1;
		}
		return 0;
	case YAML_ALIAS_EVENT:
		/* Reported, and replaced by a stand-in so that we go on. */
		config_builder_error(b, line, "alias *%s: aliases are not "
		    "allowed", (const char *)ev->data.alias.anchor);
		return config_builder_add(b,
		    config_node_new(NODE_INVALID, line));
	case YAML_SCALAR_EVENT:
		return config_builder_scalar(b, ev);
	case YAML_SEQUENCE_START_EVENT:
		return config_builder_add(b,
		    config_node_new(NODE_SEQUENCE, line));
	case YAML_MAPPING_START_EVENT:
		return config_builder_add(b,
		    config_node_new(NODE_MAPPING, line));
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		b->depth--;
		return 0;
	default:
		return 0;
	}
}

/* 1-based line of a byte offset. */
static unsigned long
config_line_of(const char *data, size_t len, size_t offset)
{
	unsigned long line = 1;
	size_t i;

	for (i = 0; i < offset && i < len; i++)
		if (data[i] == '\n')
			line++;
	return line;
}

static bool
config_line_has_tab(const char *data, size_t len, unsigned long line)
{
	size_t i = 0;
	unsigned long l = 1;

	for (; i < len && l < line; i++)
		if (data[i] == '\n')
			l++;
	for (; i < len && data[i] != '\n'; i++)
		if (data[i] == '\t')
			return true;
	return false;
}

static void
config_syntax_error(struct load *ld, const yaml_parser_t *p,
    const char *data, size_t len)
{
	char context[160] = "";
	unsigned long line;

	if (p->error == YAML_MEMORY_ERROR)
		fatalx("%s: out of memory", ld->file->path);
	if (p->error == YAML_READER_ERROR) {
		size_t at = p->problem_offset < len ? p->problem_offset : len;
		/* libyaml points at a bad trailing byte: show the first. */
		if (strstr(p->problem, "trailing") != NULL)
			while (at > 0 &&
			    ((unsigned char)data[at] & 0xc0) != 0xc0)
				at--;
		line = config_line_of(data, len, at);
		if (strstr(p->problem, "UTF-8") != NULL)
			config_error(ld, line, "", "not UTF-8 text (byte "
			    "0x%02x): a configuration file must be UTF-8",
			    at < len ? (unsigned char)data[at] : 0);
		else
			config_error(ld, line, "", "%s (U+%04X)", p->problem,
			    (unsigned)p->problem_value);
		return;
	}
	line = p->problem_mark.line + 1;
	if (p->context != NULL && p->context_mark.line + 1 != line)
		snprintf(context, sizeof(context), " (%s at line %lu)",
		    p->context, (unsigned long)p->context_mark.line + 1);
	config_error(ld, line, "", "syntax error: %s%s%s",
	    p->problem != NULL ? p->problem : "unknown problem", context,
	    config_line_has_tab(data, len, line) ? "; the line has a tab, "
	    "and YAML indents with spaces only" : "");
}

/*
 * Turn a file's text into a tree.  Returns -1 when the file cannot be
 * read to its end (errors logged); otherwise *rootp is the top node, or
 * NULL for an empty file.  Refused aliases leave stand-ins and count as
 * errors, but the rest of the file is still checked.
 */
static int
config_parse(struct load *ld, const char *data, size_t len,
    struct node **rootp)
{
	struct builder b = { .ld = ld };
	yaml_parser_t p;
	yaml_event_t ev;
	bool end = false;
	int rc = 0;

	/*
	 * YAML allows a byte order mark, and some editors write one; libyaml
	 * skips it only when it detects the encoding itself, which it must
	 * not do here (UTF-16 is no configuration of ours).
	 */
	if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0) {
		data += 3;
		len -= 3;
	}
	if (!yaml_parser_initialize(&p))
		fatalx("%s: out of memory", ld->file->path);
	yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
	yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
	while (!end && rc == 0) {
		if (!yaml_parser_parse(&p, &ev)) {
			config_syntax_error(ld, &p, data, len);
			rc = -1;
			break;
		}
		end = ev.type == YAML_STREAM_END_EVENT;
		rc = config_builder_event(&b, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	if (rc == -1) {
		config_node_free(b.root);
		return -1;
	}
	*rootp = b.root;
	return 0;
}

/* ---- scalar values ---- */

/*
 * The value as a non-empty string, or NULL (error logged) when it is
 * something else.  `what` names what was expected, for the message.
 */
static const char *
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

static void
config_field_int(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	long long v;

	if (config_integer(ld, it, f, &v) == 0)
		*(int *)dst = (int)v;
}

static void
config_field_long(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	long long v;

	if (config_integer(ld, it, f, &v) == 0)
		*(long *)dst = (long)v;
}

static void
config_field_unsigned(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	long long v;

	if (config_integer(ld, it, f, &v) == 0)
		*(unsigned *)dst = (unsigned)v;
}

static void
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

static void
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

static void
config_field_string(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a string");

	(void)f;
	if (s != NULL)
		*(char **)dst = xstrdup(s);
}

/* A file name, relative to the directory of the file that names it. */
static void
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

/* A systemd credential: a plain file name in $CREDENTIALS_DIRECTORY. */
static void
config_field_credential(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a credential name");
	char shown[CONFIG_SHOW_MAX + 8];

	(void)f;
	if (s == NULL)
		return;
	if (strchr(s, '/') != NULL || strcmp(s, ".") == 0 ||
	    strcmp(s, "..") == 0) {
		config_error(ld, it->value->line, it->path,
		    "a credential is a name, not a path: %s",
		    config_show(s, shown, sizeof(shown)));
		return;
	}
	*(char **)dst = xstrdup(s);
}

static void
config_field_backoff(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	static const char *const names[] = {
		[BACKOFF_FIXED] = "fixed",
		[BACKOFF_LINEAR] = "linear",
		[BACKOFF_EXPONENTIAL] = "exponential",
	};
	const char *s = config_scalar(ld, it, "fixed, linear or exponential");
	char shown[CONFIG_SHOW_MAX + 8];
	size_t i;

	(void)f;
	if (s == NULL)
		return;
	for (i = 0; i < NELEMS(names); i++)
		if (strcmp(s, names[i]) == 0) {
			*(enum backoff_kind *)dst = (enum backoff_kind)i;
			return;
		}
	config_error(ld, it->value->line, it->path,
	    "expected fixed, linear or exponential, not %s",
	    config_show(s, shown, sizeof(shown)));
}

/* A statement with :name parameters. */
static void
config_field_statement(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "an SQL statement");
	struct sql *q = dst;
	char err[CONFIG_MSG_MAX];

	(void)f;
	if (s == NULL)
		return;
	q->where = config_where(ld, it->key->line, it->path);
	if (sql_compile(q, s, err, sizeof(err)) == -1)
		config_error(ld, it->value->line, it->path, "%s", err);
}

/* The select: no LIMIT, no locking clause, no parameters. */
static void
config_field_select(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a SELECT statement");
	struct sql *q = dst;
	char err[CONFIG_MSG_MAX];

	(void)f;
	if (s == NULL)
		return;
	if (sql_check_select(s, err, sizeof(err)) == -1) {
		config_error(ld, it->value->line, it->path, "%s", err);
		return;
	}
	q->where = config_where(ld, it->key->line, it->path);
	if (sql_compile(q, s, err, sizeof(err)) == -1)
		config_error(ld, it->value->line, it->path, "%s", err);
	else if (q->nparams > 0)
		config_error(ld, it->value->line, it->path, ":%s: the select "
		    "takes no parameters (only done, failed, retry.update and "
		    "lease.claim do)", q->params[0]);
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
static const struct node *
config_lookup(const struct node *map, const char *name)
{
	size_t i;

	for (i = 0; i + 1 < map->nitems; i += 2)
		if (map->items[i]->kind == NODE_SCALAR &&
		    strcmp(map->items[i]->value, name) == 0)
			return map->items[i];
	return NULL;
}

static bool
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
static int
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

static size_t
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
static void
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

#define SEEN(fields, seen, name) \
	((seen)[config_field_index((fields), NELEMS(fields), (name))])

/* ---- retry: and lease: ---- */

static const struct config_field retry_fields[] = {
	FIELD(struct retry_policy, "max_attempts", int, max_attempts,
	    1, INT_MAX),
	FIELD(struct retry_policy, "attempts_column", string, attempts_column,
	    0, 0),
	FIELD(struct retry_policy, "backoff", backoff, backoff, 0, 0),
	FIELD(struct retry_policy, "delay", duration, delay_ms, 0, 0),
	FIELD(struct retry_policy, "max_delay", duration, max_delay_ms, 0, 0),
	FIELD(struct retry_policy, "jitter", bool, jitter, 0, 0),
	FIELD(struct retry_policy, "update", statement, update, 0, 0),
};

/*
 * max_attempts stays 0 here when absent: the queue's checks, which know
 * whether there is a failed: statement, turn that into the default or
 * into "unlimited".
 */
static void
config_field_retry(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	static const char *const required[] = {
		"attempts_column", "update", NULL
	};
	const struct node *seen[NELEMS(retry_fields)] = { 0 };
	struct retry_policy *r = dst;
	const struct node *k;
	char path[CONFIG_PATH_MAX], d[32], md[32];

	(void)f;
	if (config_walk(ld, it, retry_fields, NELEMS(retry_fields), r,
	    seen) == -1)
		return;
	r->enabled = true;
	config_require(ld, it, retry_fields, NELEMS(retry_fields), seen,
	    required);
	if ((k = SEEN(retry_fields, seen, "attempts_column")) != NULL) {
		config_path(path, sizeof(path), it->path, "attempts_column");
		r->attempts_where = config_where(ld, k->line, path);
	}
	if ((k = SEEN(retry_fields, seen, "max_attempts")) != NULL &&
	    config_lookup(it->parent, "failed") == NULL) {
		config_path(path, sizeof(path), it->path, "max_attempts");
		config_error(ld, k->line, path, "max_attempts needs a failed "
		    "statement to run after the last attempt");
	}
	/* A long delay: alone is no mistake; max_delay follows it up. */
	if (SEEN(retry_fields, seen, "max_delay") == NULL) {
		if (r->max_delay_ms < r->delay_ms)
			r->max_delay_ms = r->delay_ms;
	} else if (r->max_delay_ms < r->delay_ms) {
		k = SEEN(retry_fields, seen, "max_delay");
		config_path(path, sizeof(path), it->path, "max_delay");
		duration_format(r->delay_ms, d, sizeof(d));
		duration_format(r->max_delay_ms, md, sizeof(md));
		config_error(ld, k->line, path, "%s is shorter than delay (%s)",
		    md, d);
	}
}

static const struct config_field lease_fields[] = {
	FIELD(struct lease_policy, "claim", statement, claim, 0, 0),
	FIELD(struct lease_policy, "renew", statement, renew, 0, 0),
	FIELD(struct lease_policy, "duration", duration, duration_ms, 3000, 0),
};

static void
config_field_lease(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	static const char *const required[] = { "claim", "duration", NULL };
	const struct node *seen[NELEMS(lease_fields)] = { 0 };
	struct lease_policy *l = dst;

	(void)f;
	if (config_walk(ld, it, lease_fields, NELEMS(lease_fields), l,
	    seen) == -1)
		return;
	l->enabled = true;
	config_require(ld, it, lease_fields, NELEMS(lease_fields), seen,
	    required);
}

/* ---- a queue ---- */

/*
 * The next {column} in an argument, from *pos on: 1 with the name, 0 at
 * the end, or -1 with *what set when the braces are malformed.  {{ and }}
 * stand for literal braces.
 */
static int
config_placeholder(const char *s, size_t *pos, const char **name,
    size_t *len, const char **what)
{
	size_t i = *pos, j;

	for (; s[i] != '\0'; i++) {
		if ((s[i] == '{' && s[i + 1] == '{') ||
		    (s[i] == '}' && s[i + 1] == '}')) {
			i++;
			continue;
		}
		if (s[i] == '}') {
			*what = "a lone } (write }} for a literal brace)";
			return -1;
		}
		if (s[i] != '{')
			continue;
		for (j = i + 1; s[j] != '\0' && s[j] != '}' && s[j] != '{'; j++)
			;
		if (s[j] != '}') {
			*what = "an unclosed { (write {{ for a literal brace)";
			return -1;
		}
		if (j == i + 1) {
			*what = "an empty {}";
			return -1;
		}
		*name = s + i + 1;
		*len = j - i - 1;
		*pos = j + 1;
		return 1;
	}
	*pos = i;
	return 0;
}

static void
config_argv(struct load *ld, const struct config_item *it, struct queue *q,
    enum handler_kind kind)
{
	const struct node *v = it->value;
	char path[CONFIG_PATH_MAX], shown[CONFIG_SHOW_MAX + 8];
	const char *name, *what;
	size_t i, pos, len;
	int r;

	if (v->kind != NODE_SEQUENCE || v->nitems == 0) {
		if (v->kind != NODE_INVALID)
			config_error(ld, v->line, it->path, "expected a "
			    "sequence such as [/usr/bin/program, \"{id}\"], "
			    "not %s", v->kind == NODE_SEQUENCE ?
			    "an empty one" : config_node_kind_name(v));
		return;
	}
	if (v->nitems > ARGV_MAX) {
		config_error(ld, v->line, it->path, "more than %d arguments",
		    ARGV_MAX);
		return;
	}
	if (q->argv != NULL) {
		config_error(ld, it->key->line, it->path, "a queue has one "
		    "handler: exec or pipe, not both");
		return;
	}
	q->handler = kind;
	q->argv = xcalloc(v->nitems + 1, sizeof(*q->argv));
	q->argv_where = config_where(ld, it->key->line, it->path);
	for (i = 0; i < v->nitems; i++) {
		const struct node *a = v->items[i];
		snprintf(path, sizeof(path), "%s[%zu]", it->path, i);
		if (a->kind != NODE_SCALAR) {
			if (a->kind != NODE_INVALID)
				config_error(ld, a->line, path, "expected a "
				    "string, not %s", config_node_kind_name(a));
			q->argv[i] = xstrdup("");
			continue;
		}
		q->argv[i] = xstrdup(a->value);
		if (i == 0 && a->value[0] == '\0')
			config_error(ld, a->line, path, "an empty program "
			    "name");
		pos = 0;
		while ((r = config_placeholder(a->value, &pos, &name, &len,
		    &what)) == 1)
			;
		if (r == -1)
			config_error(ld, a->line, path, "%s in %s", what,
			    config_show(a->value, shown, sizeof(shown)));
	}
}

static void
config_field_exec(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	(void)f;
	config_argv(ld, it, dst, HANDLER_EXEC);
}

static void
config_field_pipe(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	(void)f;
	config_argv(ld, it, dst, HANDLER_PIPE);
}

/* key: is a column name; where it was said is kept for later checks. */
static void
config_field_key(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	struct queue *q = dst;

	(void)f;
	if (config_scalar(ld, it, "a column name") == NULL)
		return;
	q->key_column = xstrdup(it->value->value);
	q->key_where = config_where(ld, it->key->line, it->path);
}

/* age: a column of the select that says since when the row waits. */
static void
config_field_age(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	struct queue *q = dst;

	(void)f;
	if (config_scalar(ld, it, "a column name") == NULL)
		return;
	q->age_column = xstrdup(it->value->value);
	q->age_where = config_where(ld, it->key->line, it->path);
}

/* ---- env:, user:, group: for handlers ---- */

#define ENV_VARS_MAX	256

/*
 * Names a queue may not pass or set: rowq's own (ROWQ_*), systemd's to
 * rowq alone, and where rowq's password is.
 */
static const char *
config_env_refused(const char *name)
{
	if (strncmp(name, "ROWQ_", 5) == 0)
		return "rowq sets ROWQ_ variables itself";
	if (strcmp(name, "NOTIFY_SOCKET") == 0 ||
	    strncmp(name, "WATCHDOG_", 9) == 0 ||
	    strncmp(name, "LISTEN_", 7) == 0)
		return "only rowq talks to systemd";
	if (strcmp(name, "CREDENTIALS_DIRECTORY") == 0 ||
	    strcmp(name, "MYSQL_PWD") == 0)
		return "it leads to rowq's database password; give the "
		    "handler a secret of its own";
	return NULL;
}

static void
config_env_add(struct load *ld, struct env_list *l, const struct node *n,
    const char *path, const char *value)
{
	const char *name = n->value, *why;
	size_t len = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789_");
	char shown[CONFIG_SHOW_MAX + 8];

	if (len == 0 || name[len] != '\0' || isdigit((unsigned char)name[0])) {
		config_error(ld, n->line, path, "%s is not a variable name: "
		    "use letters, digits and _, not starting with a digit",
		    config_show(name, shown, sizeof(shown)));
		return;
	}
	if ((why = config_env_refused(name)) != NULL) {
		config_error(ld, n->line, path, "%s: not for handlers: %s",
		    name, why);
		return;
	}
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->vars[i].name, name) == 0) {
			config_error(ld, n->line, path, "%s is named twice",
			    name);
			return;
		}
	if (l->n == ENV_VARS_MAX) {
		config_error(ld, n->line, path, "more than %d variables",
		    ENV_VARS_MAX);
		return;
	}
	l->vars = xrealloc(l->vars, (l->n + 1) * sizeof(*l->vars));
	l->vars[l->n].name = xstrdup(name);
	l->vars[l->n].value = value != NULL ? xstrdup(value) : NULL;
	l->n++;
}

/*
 * env: a sequence of NAME (passed from rowq's environment when it is set
 * there) and NAME: value (set to that value).
 */
static void
config_field_env(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const struct node *v = it->value;
	struct env_list *l = dst;
	char path[CONFIG_PATH_MAX];

	(void)f;
	if (v->kind != NODE_SEQUENCE) {
		if (v->kind != NODE_INVALID)
			config_error(ld, v->line, it->path, "expected a "
			    "sequence such as [PYTHONPATH, {APP_ENV: "
			    "production}], not %s", config_node_kind_name(v));
		return;
	}
	for (size_t i = 0; i < v->nitems; i++) {
		const struct node *e = v->items[i];
		snprintf(path, sizeof(path), "%s[%zu]", it->path, i);
		if (e->kind == NODE_SCALAR && !config_node_null(e)) {
			config_env_add(ld, l, e, path, NULL);
			continue;
		}
		if (e->kind != NODE_MAPPING) {
			if (e->kind != NODE_INVALID)
				config_error(ld, e->line, path, "expected NAME "
				    "or NAME: value, not %s",
				    config_node_kind_name(e));
			continue;
		}
		for (size_t k = 0; k + 1 < e->nitems; k += 2) {
			const struct node *name = e->items[k];
			const struct node *val = e->items[k + 1];
			if (name->kind != NODE_SCALAR ||
			    val->kind != NODE_SCALAR) {
				if (name->kind != NODE_INVALID &&
				    val->kind != NODE_INVALID)
					config_error(ld, name->line, path,
					    "expected NAME: value, with a "
					    "string value");
				continue;
			}
			config_env_add(ld, l, name, path,
			    config_node_null(val) ? "" : val->value);
		}
	}
}

static void
config_field_user(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	struct handler_user *u = dst;

	(void)f;
	if (config_scalar(ld, it, "a user name") != NULL)
		u->name = xstrdup(it->value->value);
}

static void
config_field_group(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	struct handler_user *u = dst;

	(void)f;
	if (config_scalar(ld, it, "a group name") != NULL)
		u->group = xstrdup(it->value->value);
}

/*
 * Look user: and group: up, with the user's supplementary groups, and
 * try the switch in a child: a user rowq cannot become is refused now,
 * with the reason, not at every row.  key is user:'s key, path its
 * parent's.
 */
static void
config_user_resolve(struct load *ld, struct handler_user *u,
    const struct node *ukey, const struct node *gkey, const char *parent)
{
	char path[CONFIG_PATH_MAX], why[256];
	struct passwd *pw;
	struct group *gr;

	if (u->name == NULL) {
		if (gkey != NULL) {
			config_path(path, sizeof(path), parent, "group");
			config_error(ld, gkey->line, path, "group: needs user:");
		}
		return;
	}
	config_path(path, sizeof(path), parent, "user");
	errno = 0;
	if ((pw = getpwnam(u->name)) == NULL) {
		config_error(ld, ukey->line, path, "no such user: %s%s%s",
		    u->name, errno != 0 ? ": " : "",
		    errno != 0 ? strerror(errno) : "");
		free(u->name);
		u->name = NULL;
		return;
	}
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	u->home = xstrdup(pw->pw_dir);
	if (u->group != NULL) {
		errno = 0;
		if ((gr = getgrnam(u->group)) == NULL) {
			config_path(path, sizeof(path), parent, "group");
			config_error(ld, gkey->line, path, "no such group: %s",
			    u->group);
			return;
		}
		u->gid = gr->gr_gid;
	}
	int n = 16;
	u->groups = xcalloc((size_t)n, sizeof(*u->groups));
	if (getgrouplist(u->name, u->gid, u->groups, &n) == -1) {
		u->groups = xrealloc(u->groups, (size_t)n * sizeof(*u->groups));
		if (getgrouplist(u->name, u->gid, u->groups, &n) == -1)
			n = 0;
	}
	u->ngroups = n > 0 ? n : 1;
	if (n <= 0)
		u->groups[0] = u->gid;
	if (identity_try(u, why, sizeof(why)) == -1)
		config_error(ld, ukey->line, path, "cannot run handlers as %s: "
		    "%s", u->name, why);
}

static void
config_user_free(struct handler_user *u)
{
	free(u->name);
	free(u->group);
	free(u->home);
	free(u->groups);
}

static void
config_env_free(struct env_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->vars[i].name);
		free(l->vars[i].value);
	}
	free(l->vars);
}

/* To add a queue key: a field here, a member in struct queue, a default. */
static const struct config_field queue_fields[] = {
	FIELD(struct queue, "workers", int, workers, 1, WORKERS_MAX),
	FIELD(struct queue, "select", select, select, 0, 0),
	WHOLE("key", key),
	FIELD(struct queue, "batch", int, batch, 1, BATCH_MAX),
	WHOLE("exec", exec),
	WHOLE("pipe", pipe),
	FIELD(struct queue, "timeout", duration, timeout_ms, 1, 0),
	FIELD(struct queue, "done", statement, done, 0, 0),
	FIELD(struct queue, "retry", retry, retry, 0, 0),
	FIELD(struct queue, "failed", statement, failed, 0, 0),
	FIELD(struct queue, "idle", duration, idle_ms, 0, 0),
	FIELD(struct queue, "max_jobs", long, max_jobs, 0, INT64_MAX),
	FIELD(struct queue, "lease", lease, lease, 0, 0),
	WHOLE("age", age),
	FIELD(struct queue, "failed_count", select, failed_count, 0, 0),
	FIELD(struct queue, "alert_age", duration, alert_age_ms, 1, 0),
	FIELD(struct queue, "env", env, env, 0, 0),
	FIELD(struct queue, "user", user, user, 0, 0),
	FIELD(struct queue, "group", group, user, 0, 0),
};

static void
config_queue_defaults(struct queue *q)
{
	memset(q, 0, sizeof(*q));
	q->workers = 1;
	q->batch = 1;
	q->handler = HANDLER_EXEC;
	q->timeout_ms = 30 * 1000;
	q->idle_ms = 2 * 1000;
	q->retry.backoff = BACKOFF_EXPONENTIAL;
	q->retry.delay_ms = 10 * 1000;
	q->retry.max_delay_ms = 3600 * 1000;
	q->retry.jitter = true;
}

static void
config_queue_checks(struct load *ld, const struct config_item *it,
    struct queue *q, const struct node **seen)
{
	static const char *const required[] = { "select", "done", NULL };
	const struct node *exec = SEEN(queue_fields, seen, "exec");
	const struct node *pipe = SEEN(queue_fields, seen, "pipe");

	config_require(ld, it, queue_fields, NELEMS(queue_fields), seen,
	    required);
	if (exec == NULL && pipe == NULL)
		config_error(ld, it->key->line, it->path, "missing exec: or "
		    "pipe:, the handler");
	if (SEEN(queue_fields, seen, "failed") == NULL &&
	    SEEN(queue_fields, seen, "retry") == NULL)
		config_error(ld, it->key->line, it->path, "neither retry nor "
		    "failed: a failing row would be claimed again at once, "
		    "forever");
	/*
	 * With failed:, 5 tries by default.  Without it there is no last
	 * attempt, so max_attempts stays 0: retry for ever.
	 */
	if (q->retry.enabled && q->retry.max_attempts == 0 &&
	    SEEN(queue_fields, seen, "failed") != NULL)
		q->retry.max_attempts = 5;
	/*
	 * A lease is renewed only while its row's handler runs: the other
	 * rows of a batch would sit leased and unrenewed meanwhile.
	 */
	if (q->lease.enabled && q->batch > 1)
		config_error(ld, SEEN(queue_fields, seen, "batch")->line,
		    it->path, "batch: %d with lease: a lease queue handles one "
		    "row at a time; use batch: 1 (or leave it out)", q->batch);
	config_user_resolve(ld, &q->user, SEEN(queue_fields, seen, "user"),
	    SEEN(queue_fields, seen, "group"), it->path);
}

static bool
config_queue_name_ok(const char *s)
{
	size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789_-");

	return n > 0 && n <= QUEUE_NAME_MAX && s[n] == '\0';
}

static void
config_queue_parse(struct load *ld, const struct node *key,
    const struct node *value, const char *parent)
{
	const struct node *seen[NELEMS(queue_fields)] = { 0 };
	struct config *cfg = ld->cfg;
	char path[CONFIG_PATH_MAX], shown[CONFIG_SHOW_MAX + 8];
	struct queue *q;
	size_t i;

	ld->queue_entries++;
	if (key->kind != NODE_SCALAR || !config_queue_name_ok(key->value)) {
		if (key->kind != NODE_INVALID)
			config_error(ld, key->line, parent, "%s is not a queue "
			    "name: use 1 to %d letters, digits, _ and -",
			    key->kind == NODE_SCALAR ? config_show(key->value,
			    shown, sizeof(shown)) : config_node_kind_name(key),
			    QUEUE_NAME_MAX);
		return;
	}
	config_path(path, sizeof(path), parent, key->value);
	for (i = 0; i < cfg->nqueues; i++)
		if (strcmp(cfg->queues[i].name, key->value) == 0) {
			config_error(ld, key->line, path, "queue defined "
			    "twice: first at %s", cfg->queues[i].where);
			return;
		}
	if (cfg->nqueues == QUEUES_MAX) {
		if (!ld->too_many_queues)
			config_error(ld, key->line, path, "more than %d queues",
			    QUEUES_MAX);
		ld->too_many_queues = true;
		return;
	}
	cfg->queues = xrealloc(cfg->queues,
	    (cfg->nqueues + 1) * sizeof(*cfg->queues));
	q = &cfg->queues[cfg->nqueues++];
	config_queue_defaults(q);
	q->name = xstrdup(key->value);
	q->where = config_where(ld, key->line, NULL);

	struct config_item it = {
		.key = key, .value = value, .path = path, .parent = NULL,
	};
	if (config_walk(ld, &it, queue_fields, NELEMS(queue_fields), q,
	    seen) == 0)
		config_queue_checks(ld, &it, q, seen);
}

static void
config_field_queues(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const struct node *map = it->value;
	size_t i;

	(void)dst;
	(void)f;
	if (!ld->file->included)
		ld->queues_line = it->key->line;
	if (config_node_null(map))
		return;		/* queues: with none yet is fine */
	if (!config_expect_mapping(ld, it))
		return;
	for (i = 0; i + 1 < map->nitems; i += 2)
		config_queue_parse(ld, map->items[i], map->items[i + 1],
		    it->path);
}

/* ---- database: ---- */

/*
 * Read a password file whole, strip one trailing newline.  The password
 * is never logged; errors name only the file.
 */
static char *
config_read_password(struct load *ld, const struct config_item *it,
    const char *file)
{
	char buf[PASSWORD_MAX + 2];	/* a newline, and one byte too many */
	struct stat st;
	size_t len = 0;
	ssize_t n;
	int fd;

	/*
	 * A process holding the password is not dumpable: a handler that
	 * runs as the same user cannot then read rowq's memory, environ or
	 * descriptors through /proc (nor ptrace it), and no core dump
	 * carries the password.  Workers inherit this with the fork.
	 */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		config_error(ld, it->key->line, it->path, "%s: %s", file,
		    strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == 0 && (st.st_mode & S_IROTH))
		log_warnx("%s: the password file is readable by everyone "
		    "(mode %04o): chmod o-r it", file,
		    (unsigned)(st.st_mode & 07777));
	while (len < sizeof(buf) &&
	    (n = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			config_error(ld, it->key->line, it->path, "%s: %s",
			    file, strerror(errno));
			close(fd);
			explicit_bzero(buf, sizeof(buf));
			return NULL;
		}
		len += (size_t)n;
	}
	close(fd);
	if (len > 0 && len <= PASSWORD_MAX + 1 && buf[len - 1] == '\n')
		len--;
	if (len > PASSWORD_MAX || memchr(buf, '\0', len) != NULL) {
		config_error(ld, it->key->line, it->path, "%s: %s", file,
		    len > PASSWORD_MAX ? "longer than a password can be" :
		    "contains a NUL byte");
		explicit_bzero(buf, sizeof(buf));
		return NULL;
	}
	char *password = xstrndup(buf, len);
	explicit_bzero(buf, sizeof(buf));
	return password;
}

static const struct config_field db_fields[] = {
	FIELD(struct db_options, "socket", string, socket, 0, 0),
	FIELD(struct db_options, "host", string, host, 0, 0),
	FIELD(struct db_options, "port", unsigned, port, 1, 65535),
	FIELD(struct db_options, "user", string, user, 0, 0),
	FIELD(struct db_options, "password_file", path, password_file, 0, 0),
	FIELD(struct db_options, "credential", credential, credential, 0, 0),
	FIELD(struct db_options, "name", string, name, 0, 0),
	FIELD(struct db_options, "option_file", path, option_file, 0, 0),
	FIELD(struct db_options, "option_group", string, option_group, 0, 0),
};

/* Two keys that exclude each other: report at the second. */
static bool
config_exclusive(struct load *ld, const struct config_item *it,
    const struct node *a, const struct node *b)
{
	char path[CONFIG_PATH_MAX];
	const struct node *later;

	if (a == NULL || b == NULL)
		return false;
	later = a->line > b->line ? a : b;
	config_path(path, sizeof(path), it->path, later->value);
	config_error(ld, later->line, path, "%s and %s exclude each other",
	    a->value, b->value);
	return true;
}

static void
config_db_password(struct load *ld, const struct config_item *it,
    struct db_options *db, const struct node **seen)
{
	const struct node *k;
	char path[CONFIG_PATH_MAX];
	struct buf file = { 0 };
	const char *dir;

	if ((k = SEEN(db_fields, seen, "password_file")) != NULL &&
	    db->password_file != NULL) {
		config_path(path, sizeof(path), it->path, k->value);
		struct config_item pit = { .key = k, .path = path };
		db->password = config_read_password(ld, &pit,
		    db->password_file);
	}
	if ((k = SEEN(db_fields, seen, "credential")) != NULL &&
	    db->credential != NULL) {
		config_path(path, sizeof(path), it->path, k->value);
		if ((dir = getenv("CREDENTIALS_DIRECTORY")) == NULL ||
		    dir[0] == '\0') {
			config_error(ld, k->line, path,
			    "$CREDENTIALS_DIRECTORY is not set: credential: "
			    "works under systemd's LoadCredential=; elsewhere "
			    "use password_file:");
			return;
		}
		buf_printf(&file, "%s/%s", dir, db->credential);
		struct config_item pit = { .key = k, .path = path };
		db->password = config_read_password(ld, &pit, file.data);
		buf_free(&file);
	}
}

static void
config_field_database(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const struct node *seen[NELEMS(db_fields)] = { 0 };
	struct db_options *db = dst;
	const struct node *k;
	char path[CONFIG_PATH_MAX];
	int fd;

	(void)f;
	if (config_walk(ld, it, db_fields, NELEMS(db_fields), db, seen) == -1)
		return;
	config_exclusive(ld, it, SEEN(db_fields, seen, "socket"),
	    SEEN(db_fields, seen, "host"));
	if ((k = SEEN(db_fields, seen, "port")) != NULL &&
	    SEEN(db_fields, seen, "host") == NULL) {
		config_path(path, sizeof(path), it->path, k->value);
		config_error(ld, k->line, path, "port needs host:");
	}
	if (db->host != NULL && db->port == 0)
		db->port = 3306;
	if (!config_exclusive(ld, it, SEEN(db_fields, seen, "password_file"),
	    SEEN(db_fields, seen, "credential")))
		config_db_password(ld, it, db, seen);
	/* The client library would skip a missing option file quietly. */
	if ((k = SEEN(db_fields, seen, "option_file")) != NULL &&
	    db->option_file != NULL) {
		config_path(path, sizeof(path), it->path, k->value);
		if ((fd = open(db->option_file, O_RDONLY | O_CLOEXEC)) == -1)
			config_error(ld, k->line, path, "%s: %s",
			    db->option_file, strerror(errno));
		else
			close(fd);
	}
}

/* ---- the top level and include: ---- */

/* Glob characters in the directory part are meant literally. */
static void
config_include_add(struct load *ld, const struct node *n)
{
	struct buf b = { 0 };
	const char *s;

	if (n->value[0] != '/')
		for (s = ld->file->dir; *s != '\0'; s++) {
			if (strchr("*?[]\\", *s) != NULL)
				buf_putc(&b, '\\');
			buf_putc(&b, *s);
		}
	buf_puts(&b, n->value);
	ld->includes = xrealloc(ld->includes,
	    (ld->nincludes + 1) * sizeof(*ld->includes));
	ld->includes[ld->nincludes].pattern = buf_steal(&b);
	ld->includes[ld->nincludes].line = n->line;
	ld->nincludes++;
}

static void
config_field_include(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const struct node *v = it->value;
	char path[CONFIG_PATH_MAX];
	size_t i;

	(void)dst;
	(void)f;
	if (v->kind == NODE_SEQUENCE) {
		for (i = 0; i < v->nitems; i++) {
			snprintf(path, sizeof(path), "%s[%zu]", it->path, i);
			struct config_item item = { .value = v->items[i],
			    .path = path };
			if (config_scalar(ld, &item, "a file name pattern") !=
			    NULL)
				config_include_add(ld, v->items[i]);
		}
	} else if (config_scalar(ld, it, "a file name pattern or a sequence "
	    "of them") != NULL)
		config_include_add(ld, v);
}

/* Only queues: may appear in an included file. */
static const struct config_field top_fields[] = {
	ROW("database", database, offsetof(struct config, db), 0, 0, true),
	ROW("stop_timeout", duration, offsetof(struct config, stop_timeout_ms),
	    0, 0, true),
	ROW("include", include, 0, 0, 0, true),
	ROW("status_socket", path, offsetof(struct config, status_socket), 0, 0,
	    true),
	ROW("metrics", string, offsetof(struct config, metrics), 0, 0, true),
	ROW("metrics_textfile", path, offsetof(struct config, metrics_textfile),
	    0, 0, true),
	ROW("env", env, offsetof(struct config, env), 0, 0, true),
	ROW("user", user, offsetof(struct config, user), 0, 0, true),
	ROW("group", group, offsetof(struct config, user), 0, 0, true),
	WHOLE("queues", queues),
};

static void
config_top(struct load *ld, const struct node *root)
{
	const struct node *seen[NELEMS(top_fields)] = { 0 };
	struct config_item it = { .value = root, .path = "" };

	if (root == NULL || config_node_null(root))
		return;		/* an empty file */
	if (root->kind != NODE_MAPPING) {
		if (root->kind != NODE_INVALID)
			config_error(ld, root->line, "", "expected a mapping "
			    "of keys such as queues:, not %s",
			    config_node_kind_name(root));
		return;
	}
	if (config_walk(ld, &it, top_fields, NELEMS(top_fields), ld->cfg,
	    seen) == 0)
		config_user_resolve(ld, &ld->cfg->user,
		    SEEN(top_fields, seen, "user"),
		    SEEN(top_fields, seen, "group"), "");
}

/* Where relative names in a file start from: "" or "DIR/". */
static char *
config_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash == NULL ? xstrdup("") :
	    xstrndup(path, (size_t)(slash - path) + 1);
}

/* A file that cannot be read: named by the include: that found it. */
static void
config_read_error(struct load *ld, const char *path, unsigned long from_line,
    const char *what)
{
	if (ld->file != NULL)
		log_error("%s:%lu: include: %s: %s", ld->file->path, from_line,
		    path, what);
	else
		log_error("%s: %s", path, what);
	ld->errors++;
}

/*
 * Read a whole file, at most CONFIG_FILE_MAX bytes.  Returns the text, or
 * NULL when it cannot be read (error logged) or has been read already:
 * two patterns may match one file, and a main file may match its own
 * include:.
 */
static char *
config_read(struct load *ld, const char *path, unsigned long from_line,
    size_t *lenp)
{
	char what[128], *data;
	struct stat st;
	size_t i, len;
	FILE *f;

	if ((f = fopen(path, "re")) == NULL) {
		config_read_error(ld, path, from_line, strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &st) == -1) {
		config_read_error(ld, path, from_line, strerror(errno));
		fclose(f);
		return NULL;
	}
	for (i = 0; i < ld->nfiles; i++)
		if (ld->dev[i] == st.st_dev && ld->ino[i] == st.st_ino) {
			fclose(f);
			return NULL;
		}
	what[0] = '\0';
	if (!S_ISREG(st.st_mode))
		snprintf(what, sizeof(what), "not a regular file");
	else if (st.st_size > CONFIG_FILE_MAX)
		snprintf(what, sizeof(what), "larger than %d bytes",
		    CONFIG_FILE_MAX);
	else if (ld->nfiles == CONFIG_FILES_MAX)
		snprintf(what, sizeof(what), "more than %d configuration "
		    "files", CONFIG_FILES_MAX);
	if (what[0] != '\0') {
		config_read_error(ld, path, from_line, what);
		fclose(f);
		return NULL;
	}
	ld->dev[ld->nfiles] = st.st_dev;
	ld->ino[ld->nfiles] = st.st_ino;
	ld->nfiles++;
	/* One byte more than allowed, in case it grew since fstat. */
	data = xmalloc(CONFIG_FILE_MAX + 2);
	len = fread(data, 1, CONFIG_FILE_MAX + 1, f);
	if (ferror(f) || len > CONFIG_FILE_MAX) {
		if (!ferror(f))
			snprintf(what, sizeof(what), "larger than %d bytes",
			    CONFIG_FILE_MAX);
		config_read_error(ld, path, from_line, ferror(f) ?
		    strerror(errno) : what);
		fclose(f);
		free(data);
		return NULL;
	}
	fclose(f);
	data[len] = '\0';
	*lenp = len;
	return data;
}

static void
config_file_load(struct load *ld, const char *path, bool included,
    unsigned long from_line)
{
	struct config_file file = { .path = path, .included = included };
	const struct config_file *saved = ld->file;
	struct node *root = NULL;
	size_t len;
	char *data;

	data = config_read(ld, path, from_line, &len);
	if (data == NULL)
		return;
	file.dir = config_dirname(path);
	ld->file = &file;
	if (config_parse(ld, data, len, &root) == 0)
		config_top(ld, root);
	else
		ld->unparsed++;
	config_node_free(root);
	free(data);
	free(file.dir);
	ld->file = saved;
}

/* glob(3) reports unreadable directories here; missing ones are fine. */
static int config_glob_errno;

static int
config_glob_error(const char *path, int error)
{
	(void)path;
	if (error == ENOENT || error == ENOTDIR)
		return 0;
	config_glob_errno = error;
	return 1;
}

static void
config_includes(struct load *ld, const struct config_file *top)
{
	size_t i, j;
	glob_t g;
	int r;

	for (i = 0; i < ld->nincludes; i++) {
		const struct config_include *inc = &ld->includes[i];

		ld->file = top;
		config_glob_errno = 0;
		r = glob(inc->pattern, 0, config_glob_error, &g);
		if (r == GLOB_NOMATCH)
			continue;
		if (r != 0) {
			config_error(ld, inc->line, "include", "%s: %s",
			    inc->pattern, r == GLOB_NOSPACE ? "out of memory" :
			    strerror(config_glob_errno));
			if (r != GLOB_NOSPACE)
				globfree(&g);
			continue;
		}
		for (j = 0; j < g.gl_pathc; j++)
			config_file_load(ld, g.gl_pathv[j], true, inc->line);
		globfree(&g);
	}
	ld->file = NULL;
}

struct config *
config_load(const char *path)
{
	struct load ld = { 0 };
	struct config_file top = { .path = path };
	size_t i;

	ld.cfg = xcalloc(1, sizeof(*ld.cfg));
	ld.cfg->path = xstrdup(path);
	ld.cfg->stop_timeout_ms = 30 * 1000;
	config_file_load(&ld, path, false, 0);
	if (ld.nfiles > 0) {
		config_includes(&ld, &top);
		/* Unless a file was unreadable YAML, which may hold them. */
		if (ld.queue_entries == 0 && ld.unparsed == 0) {
			ld.file = &top;
			config_error(&ld, ld.queues_line > 0 ?
			    ld.queues_line : 1, "queues",
			    "no queue is defined");
		}
	}
	for (i = 0; i < ld.nincludes; i++)
		free(ld.includes[i].pattern);
	free(ld.includes);
	if (ld.errors > 0) {
		config_free(ld.cfg);
		return NULL;
	}
	return ld.cfg;
}

static void
config_queue_free(struct queue *q)
{
	char **a;

	free(q->name);
	free(q->where);
	sql_free(&q->select);
	free(q->key_column);
	free(q->key_where);
	if (q->argv != NULL)
		for (a = q->argv; *a != NULL; a++)
			free(*a);
	free(q->argv);
	free(q->argv_where);
	sql_free(&q->done);
	free(q->retry.attempts_column);
	free(q->retry.attempts_where);
	sql_free(&q->retry.update);
	sql_free(&q->failed);
	sql_free(&q->lease.claim);
	sql_free(&q->lease.renew);
	free(q->age_column);
	free(q->age_where);
	sql_free(&q->failed_count);
	config_env_free(&q->env);
	config_user_free(&q->user);
}

void
config_free(struct config *cfg)
{
	struct db_options *db;
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->nqueues; i++)
		config_queue_free(&cfg->queues[i]);
	free(cfg->queues);
	db = &cfg->db;
	free(db->socket);
	free(db->host);
	free(db->user);
	if (db->password != NULL) {
		explicit_bzero(db->password, strlen(db->password));
		free(db->password);
	}
	free(db->password_file);
	free(db->credential);
	free(db->name);
	free(db->option_file);
	free(db->option_group);
	free(cfg->path);
	free(cfg->status_socket);
	free(cfg->metrics);
	free(cfg->metrics_textfile);
	config_env_free(&cfg->env);
	config_user_free(&cfg->user);
	free(cfg);
}

struct queue *
config_queue(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nqueues; i++)
		if (strcmp(cfg->queues[i].name, name) == 0)
			return &cfg->queues[i];
	return NULL;
}

const struct handler_user *
config_handler_user(const struct config *cfg, const struct queue *q)
{
	if (q->user.name != NULL)
		return &q->user;
	return cfg->user.name != NULL ? &cfg->user : NULL;
}

/* ---- checks against the select's columns ---- */

static bool
config_in(const char *name, size_t len, char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strlen(list[i]) == len && strncmp(list[i], name, len) == 0)
			return true;
	return false;
}

static bool
config_builtin(const struct queue *q, const char *name)
{
	size_t i;

	for (i = 0; config_builtin_params[i] != NULL; i++)
		if (strcmp(config_builtin_params[i], name) == 0)
			return (strcmp(name, "lease") != 0 &&
			    strcmp(name, "duration") != 0) || q->lease.enabled;
	return false;
}

static int
config_check_statement(const struct queue *q, const struct sql *s,
    char *const *columns, size_t ncolumns, const char *cols,
    const char *builtins)
{
	size_t i, j;
	int problems = 0;

	for (i = 0; i < s->nparams; i++) {
		const char *p = s->params[i];
		for (j = 0; j < i; j++)
			if (strcmp(s->params[j], p) == 0)
				break;
		if (j < i)
			continue;	/* said already */
		bool column = config_in(p, strlen(p), columns, ncolumns);
		if (column && config_builtin(q, p)) {
			/*
			 * The column would be bound in the built-in's place:
			 * with SELECT * on a lease table, every renewal would
			 * look for the lease the row held when claimed.
			 */
			log_error("%s: :%s is both a column of the select and "
			    "a built-in parameter, which the column would "
			    "hide: alias the column in the select (%s AS "
			    "row_%s)", s->where != NULL ? s->where : q->name,
			    p, p, p);
			problems++;
			continue;
		}
		if (column || config_builtin(q, p))
			continue;
		log_error("%s: :%s is not a column of the select (columns: %s) "
		    "nor a built-in (%s)", s->where != NULL ? s->where :
		    q->name, p, cols, builtins);
		problems++;
	}
	return problems;
}

static int
config_check_column(const struct queue *q, const char *where,
    const char *name, char *const *columns, size_t ncolumns,
    const char *cols)
{
	if (name == NULL || config_in(name, strlen(name), columns, ncolumns))
		return 0;
	log_error("%s: %s is not a column of the select (columns: %s)",
	    where != NULL ? where : q->name, name, cols);
	return 1;
}

static int
config_check_argv(const struct queue *q, char *const *columns,
    size_t ncolumns, const char *cols)
{
	const char *name, *what;
	size_t i, pos, len;
	int r, problems = 0;
	const char *where = q->argv_where != NULL ? q->argv_where : q->name;

	for (i = 0; q->argv != NULL && q->argv[i] != NULL; i++) {
		pos = 0;
		while ((r = config_placeholder(q->argv[i], &pos, &name, &len,
		    &what)) == 1)
			if (q->handler == HANDLER_PIPE) {
				/* One process serves many rows: no row to fill in. */
				log_error("%s[%zu]: {%.*s}: a pipe handler's "
				    "arguments are fixed for its life; the row "
				    "comes on stdin", where, i, (int)len, name);
				problems++;
			} else if (!config_in(name, len, columns, ncolumns)) {
				log_error("%s[%zu]: {%.*s} is not a column of "
				    "the select (columns: %s)", where, i,
				    (int)len, name, cols);
				problems++;
			}
		if (r == -1) {
			log_error("%s[%zu]: %s", where, i, what);
			problems++;
		}
	}
	return problems;
}

int
config_check_columns(const struct queue *q, char *const *columns,
    size_t ncolumns)
{
	struct buf cols = { 0 }, builtins = { 0 };
	const struct sql *stmts[5];
	size_t i, n = 0;
	int problems = 0;

	for (i = 0; i < ncolumns; i++)
		buf_printf(&cols, "%s%s", i > 0 ? ", " : "", columns[i]);
	if (ncolumns == 0)
		buf_puts(&cols, "none");
	for (i = 0; config_builtin_params[i] != NULL; i++)
		if (config_builtin(q, config_builtin_params[i]))
			buf_printf(&builtins, "%s:%s", i > 0 ? " " : "",
			    config_builtin_params[i]);
	stmts[n++] = &q->done;
	stmts[n++] = &q->failed;
	if (q->retry.enabled)
		stmts[n++] = &q->retry.update;
	if (q->lease.enabled) {
		stmts[n++] = &q->lease.claim;
		stmts[n++] = &q->lease.renew;
	}
	for (i = 0; i < n; i++)
		problems += config_check_statement(q, stmts[i], columns,
		    ncolumns, cols.data, builtins.data);
	problems += config_check_column(q, q->key_where, q->key_column,
	    columns, ncolumns, cols.data);
	problems += config_check_column(q, q->age_where, q->age_column,
	    columns, ncolumns, cols.data);
	if (q->retry.enabled)
		problems += config_check_column(q, q->retry.attempts_where,
		    q->retry.attempts_column, columns, ncolumns, cols.data);
	problems += config_check_argv(q, columns, ncolumns, cols.data);
	buf_free(&cols);
	buf_free(&builtins);
	return problems;
}

/*
 * A {column} that begins an argument hands the row's value to the
 * handler's option parser: a recipient "-oProxyCommand=..." is an option,
 * not an address.  Only a "--" before it makes it an operand.  Unsigned
 * integers cannot begin with '-'; every other value can.  A warning, not
 * a refusal: the handler may parse no options at all.
 */
void
config_warn_option_args(const struct queue *q, const struct column *cols,
    size_t ncols)
{
	const char *where = q->argv_where != NULL ? q->argv_where : q->name;

	if (q->handler != HANDLER_EXEC || q->argv == NULL)
		return;
	for (size_t i = 1; q->argv[i] != NULL; i++) {
		const char *a = q->argv[i], *end;

		if (strcmp(a, "--") == 0)
			return;
		if (a[0] != '{' || a[1] == '{' || (end = strchr(a, '}')) == NULL)
			continue;
		size_t len = (size_t)(end - a - 1);
		for (size_t c = 0; c < ncols; c++)
			if (strlen(cols[c].name) == len &&
			    memcmp(cols[c].name, a + 1, len) == 0 &&
			    !(cols[c].kind == COLUMN_INTEGER &&
			    cols[c].is_unsigned))
				log_warnx("%s[%zu]: {%.*s} can begin with '-', "
				    "and the handler would take the value for "
				    "an option: put \"--\" before it (if the "
				    "program accepts one), or text before the "
				    "value in the same argument", where, i,
				    (int)len, a + 1);
	}
}
