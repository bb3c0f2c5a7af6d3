/*
 * config.h: what the files that load the configuration share: the tree
 * a YAML file becomes (config_yaml.c), the typed walk over it with one
 * table of keys per mapping (config_walk.c), and the parsers of rowq's
 * own keys (config.c, config_queue.c, config_env.c; config_columns.c
 * checks a queue against its columns).
 *
 * To add a key: a row in its mapping's table (FIELD), a member in its
 * struct in rowq.h, a default where the struct is made.
 */
#ifndef CONFIG_H
#define CONFIG_H

#include "rowq.h"

#define CONFIG_PATH_MAX		256	/* "queues.email.retry.delay" */
#define CONFIG_MSG_MAX		1024
#define CONFIG_SHOW_MAX		60	/* bytes of a bad value quoted back */
#define QUEUE_NAME_MAX		64

#define NELEMS(a)	(sizeof(a) / sizeof((a)[0]))

/* ---- the tree a file becomes (config_yaml.c) ---- */

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

/* ---- one config_load() ---- */

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
	enum config_private	 private_files;	/* the console's */
	int			 errors;
	size_t			 queue_entries;	/* valid or not */
	size_t			 schedule_entries; /* valid or not */
	bool			 too_many_queues; /* said so once */
	size_t			 unparsed;	/* files with syntax errors */
	unsigned long		 queues_line;	/* of the main file's queues: */
	struct config_include	*includes;
	size_t			 nincludes;
	dev_t			 dev[CONFIG_FILES_MAX];
	ino_t			 ino[CONFIG_FILES_MAX];
	size_t			 nfiles;
};

/* ---- the walk's tables of keys (config_walk.c) ---- */

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

/* The key node of fields' name as config_walk saw it, or NULL. */
#define SEEN(fields, seen, name) \
	((seen)[config_field_index((fields), NELEMS(fields), (name))])

/* config_yaml.c: a file's text as a tree of nodes */
int		 config_parse(struct load *, const char *data, size_t len,
		    struct node **rootp);
void		 config_node_free(struct node *);
bool		 config_node_null(const struct node *);
const char	*config_node_kind_name(const struct node *);

/* config_walk.c: messages */
void		 config_error(struct load *, unsigned long, const char *,
		    const char *, ...) __attribute__((format(printf, 4, 5)));
const char	*config_show(const char *s, char *out, size_t len);
void		 config_path(char *out, size_t len, const char *parent,
		    const char *key);
char		*config_where(struct load *, unsigned long line,
		    const char *path);

/* config_walk.c: scalars, and the parsers of the plain types */
const char	*config_scalar(struct load *, const struct config_item *,
		    const char *what);
void		 config_field_int(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_field_long(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_field_unsigned(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);
void		 config_field_duration(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);
void		 config_field_bool(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_field_string(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);
void		 config_field_path(struct load *, const struct config_item *,
		    void *, const struct config_field *);

/* config.c: a table's name, spliced into rowq's own statements */
void		 config_field_table(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);

/* config_walk.c: a mapping walked with a table of keys */
const struct node *config_lookup(const struct node *map, const char *name);
bool		 config_expect_mapping(struct load *,
		    const struct config_item *);
int		 config_walk(struct load *, const struct config_item *,
		    const struct config_field *, size_t nfields, void *base,
		    const struct node **seen);
size_t		 config_field_index(const struct config_field *,
		    size_t nfields, const char *name);
void		 config_require(struct load *, const struct config_item *,
		    const struct config_field *, size_t nfields,
		    const struct node **seen, const char *const *names);

/* config_queue.c: queues: and each queue's keys */
void		 config_field_queues(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);
void		 config_field_statement(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);
/* A statement or a list of them (done:, failed:, retry.update:, ...). */
void		 config_field_statements(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);
bool		 config_queue_name_ok(const char *);
void		 config_queue_free(struct queue *);
void		 config_field_program(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);

/* config_retry.c: a queue's retry: */
void		 config_field_retry(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);

/* config_schedule.c: schedules: and each schedule's keys */
void		 config_field_schedules(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);

/* config_limit.c: limit: and workers: {min, max} */
void		 config_field_rate(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_field_limit(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_limit_defaults(struct limit_policy *);
void		 config_limit_free(struct limit_policy *);
void		 config_field_workers(struct load *,
		    const struct config_item *, void *,
		    const struct config_field *);

/* config_env.c: env:, user:, group:, at the top and in a queue */
void		 config_field_env(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_field_user(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_field_group(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_user_resolve(struct load *, struct handler_user *,
		    const struct node *ukey, const struct node *gkey,
		    const char *parent);
void		 config_user_free(struct handler_user *);
void		 config_env_free(struct env_list *);

/* config_hosts.c: database.host:, one or a list */
void		 config_field_hosts(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_hosts_port(struct db_options *);
void		 config_hosts_free(struct db_options *);

/* config_tls.c: database.tls: */
void		 config_field_tls(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_tls_free(struct db_tls *);

/* config_console.c: console: */
void		 config_field_console(struct load *, const struct config_item *,
		    void *, const struct config_field *);
void		 config_console_free(struct console_options *);

/* config_columns.c: the {column}s of a handler's argument */
int		 config_placeholder(const char *s, size_t *pos,
		    const char **name, size_t *len, const char **what);

#endif /* CONFIG_H */
