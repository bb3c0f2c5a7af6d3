/*
 * handler_identity.c: who handlers run as, and the capabilities that takes.
 *
 * With user: (and group:), a handler's child switches to that user before
 * exec, as a mail server's delivery agent does: setgroups, setresgid,
 * setresuid, in that order, all three ids of each, so that the handler
 * can never switch back.  It then reads none of what only rowq's user
 * can: the credential, the password file, a private config, and rowq's
 * memory.
 *
 * A rowq that is not root needs CAP_SETUID and CAP_SETGID for the switch,
 * and CAP_KILL to signal (time out, stop) a handler of another user.  The
 * supervisor keeps what it was given; a worker keeps only these three,
 * and only when its queue has a user: (CAP_KILL alone in its effective
 * set: the two others are raised in the handler's child, just before the
 * switch); any other worker drops every capability.  Nothing is ever
 * passed on to a handler: the ambient set is cleared, and what a
 * non-root user's child still holds after the switch is dropped before
 * exec.
 */
#include "handler.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

/* The user this worker's handlers run as, or NULL: set once per worker. */
const struct handler_user *child_user;

#define CAP_BIT(c)	(1U << (c))	/* all three are below 32 */

struct caps {
	uint32_t	effective, permitted, inheritable;
};

static int
caps_get(struct caps *c)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) == -1)
		return -1;
	/* Capabilities 32 and above matter to no switch: seen as "some". */
	c->effective = d[0].effective | (d[1].effective ? 1U << 31 : 0);
	c->permitted = d[0].permitted | (d[1].permitted ? 1U << 31 : 0);
	c->inheritable = d[0].inheritable | (d[1].inheritable ? 1U << 31 : 0);
	return 0;
}

/* Only the low word: every capability rowq keeps is below 32. */
static int
caps_set(const struct caps *c)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	d[0].effective = c->effective;
	d[0].permitted = c->permitted;
	d[0].inheritable = c->inheritable;
	return (int)syscall(SYS_capset, &h, d);
}

/*
 * Switch to u: raise CAP_SETUID and CAP_SETGID from the permitted set if
 * they are there (a root rowq has them anyway), then groups, gid, uid,
 * and drop whatever capabilities are left.  Only system calls: it runs in
 * a vfork child.  Returns 0, or -1 with errno set and *step naming the
 * call that failed.
 */
int
identity_switch(const struct handler_user *u, const char **step)
{
	struct caps c;

	if (caps_get(&c) == 0) {
		c.effective |= c.permitted &
		    (CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETGID));
		(void)caps_set(&c);
	}
	*step = "setgroups";
	if (syscall(SYS_setgroups, (size_t)u->ngroups, u->groups) == -1)
		return -1;
	*step = "setresgid";
	if (syscall(SYS_setresgid, u->gid, u->gid, u->gid) == -1)
		return -1;
	*step = "setresuid";
	if (syscall(SYS_setresuid, u->uid, u->uid, u->uid) == -1)
		return -1;
	/* From root, the switch cleared them; from another user, it did not. */
	c = (struct caps){ 0 };
	*step = "capset";
	if (caps_get(&c) == 0 && (c.permitted | c.effective | c.inheritable) &&
	    caps_set(&(struct caps){ 0 }) == -1)
		return -1;
	return 0;
}

static const char *const identity_steps[] = {
	"setgroups", "setresgid", "setresuid", "capset",
};

/*
 * Try the switch to u in a child, as config load and `rowq check` do, so
 * that a user: rowq cannot switch to is refused at once, with the reason,
 * rather than at every row.  Returns 0, or -1 with the reason in why.
 */
int
identity_try(const struct handler_user *u, char *why, size_t len)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid == -1) {
		snprintf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		const char *step = "";
		if (identity_switch(u, &step) == 0)
			_exit(0);
		/* The step and errno, in one exit status. */
		int k = 0;
		while (k < 3 && strcmp(identity_steps[k], step) != 0)
			k++;
		_exit(k * 64 + (errno < 64 ? errno : 0));
	}
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR) {
			snprintf(why, len, "waitpid: %s", strerror(errno));
			return -1;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (!WIFEXITED(status)) {
		snprintf(why, len, "the trial switch died of signal %d",
		    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		return -1;
	}
	int e = WEXITSTATUS(status) % 64;
	snprintf(why, len, "%s: %s%s", identity_steps[WEXITSTATUS(status) / 64],
	    strerror(e),
	    e == EPERM && geteuid() != 0 ? " (rowq needs CAP_SETUID, "
	    "CAP_SETGID and CAP_KILL for user:, see rowq.yaml(5))" :
	    e == EINVAL ? " (the user is not mapped in rowq's user "
	    "namespace: PrivateUsers=no)" : "");
	return -1;
}

/*
 * A worker's capabilities, once, before its first handler: the ambient set
 * cleared (it would pass to every handler), and the rest dropped but what
 * handlers of user u need.  Without capabilities (the usual case, and
 * under the default units, which also refuse capset) there is nothing to
 * do.  A root rowq without user: keeps root's: its handlers run as root,
 * as they always have.
 */
void
identity_worker_init(const struct handler_user *u)
{
	struct caps c;
	uint32_t keep = CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETGID) |
	    CAP_BIT(CAP_KILL);

	child_user = u;
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (caps_get(&c) == -1 || (c.permitted | c.inheritable) == 0)
		return;
	if (geteuid() == 0 && u == NULL)
		return;
	struct caps want = { 0 };
	if (u != NULL) {
		want.permitted = c.permitted & keep;
		want.effective = want.permitted & CAP_BIT(CAP_KILL);
	}
	if (caps_set(&want) == -1)
		log_warn("dropping capabilities");
}
