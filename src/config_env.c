/*
 * config_env.c: env:, user: and group:, what handlers run with, at the
 * top level (for every queue) and in a queue (for its own).  A user is
 * looked up, and the switch to it tried, when the file is loaded.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

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
void
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

void
config_field_user(struct load *ld, const struct config_item *it, void *dst,
    const struct config_field *f)
{
	struct handler_user *u = dst;

	(void)f;
	if (config_scalar(ld, it, "a user name") != NULL)
		u->name = xstrdup(it->value->value);
}

void
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
void
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

void
config_user_free(struct handler_user *u)
{
	free(u->name);
	free(u->group);
	free(u->home);
	free(u->groups);
}

void
config_env_free(struct env_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->vars[i].name);
		free(l->vars[i].value);
	}
	free(l->vars);
}

