/*
 * reload.c: SIGHUP.  The file is read again in the supervisor (file reads
 * only) and checked against the database in a child (check_child.c), so that
 * the loop goes on meanwhile; a configuration that fails either keeps the
 * old workers, and says why in STATUS= and `rowq status` (bgpd's
 * reconfigure(): "config file has errors, not reloading").  One that
 * passes becomes a new generation: its workers start while the old ones
 * finish their rows.
 */
#include "rowq.h"
#include "supervisor.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

/* A reload's database check that takes longer than this has failed. */
#define RELOAD_CHECK_MAX_MS	120000

static void
reload_done(struct supervisor *s, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record the outcome of a reload, and tell systemd it is over. */
static void
reload_done(struct supervisor *s, bool ok, const char *fmt, ...)
{
	struct reload_result *r = &s->last_reload;
	va_list ap;

	r->wall_ms = wall_ms();
	r->ok = ok;
	r->generation = s->current->number;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	if (ok)
		s->reloads_ok++;
	else
		s->reloads_failed++;
	if (ok)
		log_info("reload: generation %d started; the old workers finish "
		    "their rows", r->generation);
	else
		log_error("reload failed, old workers kept (generation %d): %s",
		    r->generation, r->message);
	s->status_dirty = true;
	notify_ready();
}

/*
 * Start a reload: parse the new configuration here (file reads only), and
 * check it against the database in a child (check_child.c), so that the loop
 * goes on meanwhile.  A bad one changes nothing.
 */
void
reload_begin(struct supervisor *s)
{
	char first[sizeof(s->last_reload.message)];
	struct checker how = {
		.name = "reload check",
		.close_fd = s->sigfd,
		.error = s->shared->check_error,
		.errlen = sizeof(s->shared->check_error),
	};
	struct config *cfg;
	pid_t pid;

	s->reload_wanted = false;
	notify_reloading();
	log_info("reloading %s", s->opts->config_path);
	log_capture(first, sizeof(first));
	cfg = config_load_private(s->opts->config_path, s->opts->drain ?
	    CONFIG_PRIVATE_SKIP : CONFIG_PRIVATE_READ);
	log_capture(NULL, 0);
	if (cfg == NULL) {
		reload_done(s, false, "%s", first[0] ? first :
		    "configuration errors");
		return;
	}
	if (s->ngens >= GENERATIONS_MAX) {
		config_free(cfg);
		reload_done(s, false, "%d generations are still retiring",
		    s->ngens);
		return;
	}
	s->shared->check_error[0] = '\0';
	pid = checker_start(cfg, &how);
	if (pid == -1) {
		log_warn("fork for the reload check");
		config_free(cfg);
		reload_done(s, false, "cannot fork the check: %s",
		    strerror(errno));
		return;
	}
	s->check_pid = pid;
	s->check_cfg = cfg;
	s->check_started_ms = now_ms();
}

/*
 * The new generation starts; the old workers finish their rows and go,
 * each within its own generation's stop_timeout, and those waiting to
 * restart are not needed any more.  An old generation goes with its last
 * slot.
 */
static void
reload_apply(struct supervisor *s, struct config *cfg)
{
	struct generation *old = s->current;

	generation_start(s, cfg);
	generation_release(s, old);	/* if it had no slot at all */
	for (int i = 0; i < s->nslots; i++) {
		struct slot *sl = &s->slots[i];
		if (sl->state == SLOT_FREE || sl->gen == s->current)
			continue;
		(void)supervisor_retire_slot(s, sl);
	}
	supervisor_fill(s);
}

/* The check child is done: apply the new configuration, or keep the old. */
void
reload_checked(struct supervisor *s, int status)
{
	struct config *cfg = s->check_cfg;
	const char *msg = s->shared->check_error;
	char why[128];
	enum check_verdict verdict = checker_verdict(status);

	s->check_cfg = NULL;
	if (s->stopping) {
		config_free(cfg);
		return;
	}
	if (verdict == CHECK_PASSED) {
		reload_apply(s, cfg);
		reload_done(s, true, "generation %d", s->current->number);
		return;
	}
	config_free(cfg);
	switch (verdict) {
	case CHECK_PROBLEMS:
		reload_done(s, false, "%s", msg[0] ? msg : "check failed");
		break;
	case CHECK_UNREACHABLE:
		reload_done(s, false, "database unreachable: %s",
		    msg[0] ? msg : "no reason given");
		break;
	default:
		supervisor_describe_death(status, why, sizeof(why));
		reload_done(s, false, "the check ended badly (%s)", why);
		break;
	}
}

/* A check that hangs (a database that accepts and never answers) fails. */
void
reload_watch(struct supervisor *s, int64_t now, int64_t *next)
{
	int64_t deadline = s->check_started_ms + RELOAD_CHECK_MAX_MS;

	if (s->check_pid == 0)
		return;
	if (now >= deadline) {
		log_warnx("reload check still running after %ds: killing it",
		    RELOAD_CHECK_MAX_MS / 1000);
		(void)kill(s->check_pid, SIGKILL);
		s->check_started_ms = now;	/* once; the reap ends it */
	} else if (deadline < *next)
		*next = deadline;
}
