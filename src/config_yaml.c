/*
 * config_yaml.c: a configuration file's text as a tree of nodes; the only
 * includer of <yaml.h>.
 *
 * A file is read whole (it is small and bounded) and turned into the tree
 * by libyaml's event parser, which config_walk.c then walks.  The event
 * parser, rather than libyaml's document loader, lets us refuse aliases
 * before they are expanded (a few lines of anchors and aliases can stand
 * for gigabytes: "billion laughs") and bound nesting and scalar size
 * while reading.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#define CONFIG_NODES_MAX	100000	/* values in one file */

static struct node *
config_node_new(enum node_kind kind, unsigned long line)
{
	struct node *n = xcalloc(1, sizeof(*n));

	n->kind = kind;
	n->line = line;
	return n;
}

/* Recursion is bounded by CONFIG_DEPTH_MAX. */
void
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
bool
config_node_null(const struct node *n)
{
	return n->kind == NODE_SCALAR && (n->value[0] == '\0' ||
	    (n->plain && (strcmp(n->value, "~") == 0 ||
	    strcmp(n->value, "null") == 0 || strcmp(n->value, "Null") == 0 ||
	    strcmp(n->value, "NULL") == 0)));
}

const char *
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

/*
 * An anchor is refused as an alias is: it exists only to be aliased, and
 * one rule is easier to keep than two.  The value itself is kept, so that
 * the rest of it is checked.
 */
static void
config_builder_anchor(struct builder *b, unsigned long line,
    const yaml_char_t *anchor)
{
	if (anchor != NULL)
		config_builder_error(b, line, "anchor &%s: anchors and "
		    "aliases are not allowed", (const char *)anchor);
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
		config_builder_error(b, line, "alias *%s: anchors and "
		    "aliases are not allowed", (const char *)ev->data.alias.anchor);
		return config_builder_add(b,
		    config_node_new(NODE_INVALID, line));
	case YAML_SCALAR_EVENT:
		config_builder_anchor(b, line, ev->data.scalar.anchor);
		return config_builder_scalar(b, ev);
	case YAML_SEQUENCE_START_EVENT:
		config_builder_anchor(b, line, ev->data.sequence_start.anchor);
		return config_builder_add(b,
		    config_node_new(NODE_SEQUENCE, line));
	case YAML_MAPPING_START_EVENT:
		config_builder_anchor(b, line, ev->data.mapping_start.anchor);
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

/* libyaml's word for ": " inside a plain value, such as a statement. */
static bool
config_mapping_value_problem(const yaml_parser_t *p)
{
	return p->problem != NULL &&
	    strstr(p->problem, "mapping values are not allowed") != NULL;
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
	    "and YAML indents with spaces only" :
	    config_mapping_value_problem(p) ? "; a value holding \": \" "
	    "(a colon and a space) must be quoted, or written as a block "
	    "after |" : "");
}

/*
 * Turn a file's text into a tree.  Returns -1 when the file cannot be
 * read to its end (errors logged); otherwise *rootp is the top node, or
 * NULL for an empty file.  Refused aliases leave stand-ins and count as
 * errors, but the rest of the file is still checked.
 */
int
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
