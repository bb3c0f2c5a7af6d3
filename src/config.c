/*
 * config.c: load, validate and free the configuration: the top level,
 * database: (and the password it names), and include:.  The files that
 * help it are config_yaml.c (text to tree), config_walk.c (the walk with
 * a table of keys), config_queue.c (queues:), config_env.c (env:, user:,
 * group:); config.h is what they share.
 *
 * Every problem is logged as "FILE:LINE: KEY: what is wrong" and loading
 * goes on, so that one run of `rowq check` shows every mistake; in the end
 * any error means NULL and nothing kept.
 */
#include "config.h"
#include "schedule.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- database: ---- */

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
	WHOLE("host", hosts),
	FIELD(struct db_options, "port", unsigned, port, 1, 65535),
	FIELD(struct db_options, "user", string, user, 0, 0),
	FIELD(struct db_options, "password_file", path, password_file, 0, 0),
	FIELD(struct db_options, "credential", credential, credential, 0, 0),
	FIELD(struct db_options, "name", string, name, 0, 0),
	FIELD(struct db_options, "option_file", path, option_file, 0, 0),
	FIELD(struct db_options, "option_group", string, option_group, 0, 0),
	FIELD(struct db_options, "tls", tls, tls, 0, 0),
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

/*
 * Where the password came from, for the message when the server refuses
 * it: "FILE:LINE: database.password_file: the password from PATH".
 */
static void
config_password_source(struct load *ld, struct db_options *db,
    const struct node *k, const char *path, const char *file)
{
	char *where = config_where(ld, k->line, path);
	struct buf b = { 0 };

	buf_printf(&b, "%s: the password from %s", where, file);
	free(where);
	free(db->password_source);
	db->password_source = buf_steal(&b);
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
		config_password_source(ld, db, k, path, db->password_file);
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
		config_password_source(ld, db, k, path, file.data);
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
	config_hosts_port(db);
	/* The server would take TLS on its socket, but checks no name there. */
	if ((k = SEEN(db_fields, seen, "tls")) != NULL &&
	    SEEN(db_fields, seen, "host") == NULL) {
		config_path(path, sizeof(path), it->path, k->value);
		config_error(ld, k->line, path, "tls needs host: (a unix "
		    "socket stays on this machine)");
	}
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

/*
 * pause_table: a table name, or DATABASE.TABLE, spliced into the pause
 * statements (an identifier cannot be bound), so only the characters of
 * an unquoted identifier are taken.
 */
void
config_field_table(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "a table name");
	char shown[CONFIG_SHOW_MAX + 8];
	int dots = 0;

	(void)f;
	if (s == NULL)
		return;
	for (const char *c = s; *c != '\0'; c++)
		dots += *c == '.';
	if (*s == '\0' || strlen(s) > 129 || dots > 1 ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_$.") != strlen(s) || *s == '.' ||
	    s[strlen(s) - 1] == '.') {
		config_error(ld, it->value->line, it->path, "not a table name "
		    "(letters, digits, _ and $, or DATABASE.TABLE): %s",
		    config_show(s, shown, sizeof(shown)));
		return;
	}
	*(char **)dst = xstrdup(s);
}

/* log_format: plain (the default) or json: how lines look off the journal. */
static void
config_field_log_format(struct load *ld, const struct config_item *it,
    void *dst, const struct config_field *f)
{
	const char *s = config_scalar(ld, it, "plain or json");
	char shown[CONFIG_SHOW_MAX + 8];

	(void)f;
	if (s == NULL)
		return;
	if (strcmp(s, "json") == 0 || strcmp(s, "plain") == 0)
		*(bool *)dst = strcmp(s, "json") == 0;
	else
		config_error(ld, it->value->line, it->path, "expected plain or "
		    "json, not %s", config_show(s, shown, sizeof(shown)));
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
	ROW("pause_table", table, offsetof(struct config, pause_table), 0, 0,
	    true),
	ROW("daemons_table", table, offsetof(struct config, daemons_table), 0,
	    0, true),
	ROW("console", console, offsetof(struct config, console), 0, 0, true),
	ROW("log_format", log_format, offsetof(struct config, log_json), 0, 0,
	    true),
	ROW("on_failed", program, offsetof(struct config, on_failed), 0, 0,
	    true),
	ROW("limit_table", table, offsetof(struct config, limit_table), 0, 0,
	    true),
	ROW("env", env, offsetof(struct config, env), 0, 0, true),
	ROW("user", user, offsetof(struct config, user), 0, 0, true),
	ROW("group", group, offsetof(struct config, user), 0, 0, true),
	WHOLE("queues", queues),
	ROW("schedules", schedules, 0, 0, 0, true),
	ROW("schedule_table", table, offsetof(struct config, schedule_table),
	    0, 0, true),
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

/*
 * One load; what could be read is returned even when there were errors
 * (*broken then).
 */
static struct config *
config_load_with(const char *path, enum config_private private_files,
    bool *broken)
{
	struct load ld = { .private_files = private_files };
	struct config_file top = { .path = path };
	size_t i;

	ld.cfg = xcalloc(1, sizeof(*ld.cfg));
	ld.cfg->path = xstrdup(path);
	ld.cfg->stop_timeout_ms = 30 * 1000;
	config_file_load(&ld, path, false, 0);
	if (ld.nfiles > 0) {
		config_includes(&ld, &top);
		ld.file = &top;
		config_schedules_link(&ld);
		/* Unless a file was unreadable YAML, which may hold them. */
		if (ld.queue_entries == 0 && ld.schedule_entries == 0 &&
		    ld.unparsed == 0) {
			ld.file = &top;
			config_error(&ld, ld.queues_line > 0 ?
			    ld.queues_line : 1, "queues",
			    "no queue is defined");
		}
	}
	for (i = 0; i < ld.nincludes; i++)
		free(ld.includes[i].pattern);
	free(ld.includes);
	*broken = ld.errors > 0;
	return ld.cfg;
}

struct config *
config_load(const char *path)
{
	return config_load_private(path, CONFIG_PRIVATE_SKIP);
}

/* config_load, the console's own files read as private says. */
struct config *
config_load_private(const char *path, enum config_private private_files)
{
	bool broken;
	struct config *cfg = config_load_with(path, private_files, &broken);

	if (broken) {
		config_free(cfg);
		return NULL;
	}
	return cfg;
}

/*
 * config_load, but what could be read is returned even when there were
 * errors (*broken then), for `rowq status`, which finds the running
 * daemon's socket through it.  Nothing else of a broken one may be used.
 */
struct config *
config_load_any(const char *path, bool *broken)
{
	return config_load_with(path, CONFIG_PRIVATE_SKIP, broken);
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
	config_hosts_free(db);
	config_tls_free(&db->tls);
	free(db->user);
	if (db->password != NULL) {
		explicit_bzero(db->password, strlen(db->password));
		free(db->password);
	}
	free(db->password_file);
	free(db->password_source);
	free(db->credential);
	free(db->name);
	free(db->option_file);
	free(db->option_group);
	free(cfg->path);
	free(cfg->status_socket);
	free(cfg->metrics);
	free(cfg->metrics_textfile);
	free(cfg->pause_table);
	free(cfg->daemons_table);
	config_console_free(&cfg->console);
	free(cfg->limit_table);
	config_env_free(&cfg->env);
	config_user_free(&cfg->user);
	config_program_free(&cfg->on_failed);
	config_schedules_free(cfg);
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

const struct program *
config_on_failed(const struct config *cfg, const struct queue *q)
{
	if (q->on_failed.argv != NULL)
		return &q->on_failed;
	return cfg->on_failed.argv != NULL ? &cfg->on_failed : NULL;
}

const struct handler_user *
config_handler_user(const struct config *cfg, const struct queue *q)
{
	if (q->user.name != NULL)
		return &q->user;
	return cfg->user.name != NULL ? &cfg->user : NULL;
}
