/*
 * reason.c: :reason, why a row's try did not succeed, as the finishing
 * statement is told.  rowq's own values name what it saw (the handler
 * said never, the tries ran out, the timeout, ...); a handler may name
 * its own with a message that begins "reason=NAME" (a pipe handler's
 * "fail" or "retry" answer, an exec handler's last stderr line).  Pure
 * functions: worker_finish.c asks them, the unit tests check them.
 */
#include "handler.h"

#include <string.h>

/* rowq's own values, which a handler's name may not take. */
static const char *const reason_builtins[] = {
	REASON_PERMANENT, REASON_EXHAUSTED, REASON_TIMEOUT, REASON_ERROR,
	REASON_LEASE_LOST, REASON_REFUSED, NULL,
};

bool
reason_is_builtin(const char *name, size_t len)
{
	for (size_t i = 0; reason_builtins[i] != NULL; i++)
		if (strlen(reason_builtins[i]) == len &&
		    memcmp(reason_builtins[i], name, len) == 0)
			return true;
	return false;
}

/*
 * A handler's own reason: a message that begins "reason=NAME", NAME of a
 * lowercase letter and up to REASON_NAME_MAX - 1 more lowercase letters,
 * digits or '_', followed by a space or the end.  Copies NAME into
 * name[REASON_NAME_MAX + 1] and returns 0; returns -1 when the message
 * names none, or a name of rowq's own (which the handler cannot claim:
 * "exhausted" from a handler would hide that it had tries left).
 */
int
reason_parse(const char *message, char *name)
{
	static const char prefix[] = "reason=";
	const char *p;
	size_t n;

	name[0] = '\0';
	if (message == NULL ||
	    strncmp(message, prefix, sizeof(prefix) - 1) != 0)
		return -1;
	p = message + sizeof(prefix) - 1;
	if (*p < 'a' || *p > 'z')
		return -1;
	for (n = 1; (p[n] >= 'a' && p[n] <= 'z') ||
	    (p[n] >= '0' && p[n] <= '9') || p[n] == '_'; n++)
		if (n >= REASON_NAME_MAX)
			return -1;
	if ((p[n] != ' ' && p[n] != '\0') || reason_is_builtin(p, n))
		return -1;
	memcpy(name, p, n);
	name[n] = '\0';
	return 0;
}

/*
 * An exec handler's own reason: its last stderr line, when that begins
 * "reason=NAME" (any exit but 0: 65 says never, others a failed try).
 */
int
reason_from_stderr(const struct errsink *e, char *name)
{
	const char *t = e->tail.data;
	size_t n = e->tail.len, start;
	char line[REASON_NAME_MAX + sizeof("reason=") + 1];

	name[0] = '\0';
	if (t == NULL)
		return -1;	/* nothing on stderr */
	while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r'))
		n--;
	for (start = n; start > 0 && t[start - 1] != '\n'; start--)
		;
	/* Only the name's part of the line matters. */
	n -= start;
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	memcpy(line, t + start, n);
	line[n] = '\0';
	return reason_parse(line, name);
}

/*
 * The reason a finishing statement is told, once it is known which one
 * runs: DONE ran done; FAILED_NEVER failed because the handler said
 * never; FAILED_LAST failed because the try that failed was the last (or
 * the queue retries none); RETRY retry.update.  In failed the reason
 * says why the row ends (the handler said never: its name or
 * "permanent"; no try left: "exhausted", whatever failed the last try,
 * which :error tells); in retry.update why this try failed ("timeout",
 * the handler's name, or "error").
 */
const char *
reason_of(enum reason_step step, const struct handler_result *res)
{
	bool named = res->reason[0] != '\0';

	switch (step) {
	case REASON_STEP_DONE:
		return "";
	case REASON_STEP_FAILED_NEVER:
		return named ? res->reason : REASON_PERMANENT;
	case REASON_STEP_FAILED_LAST:
		return REASON_EXHAUSTED;
	case REASON_STEP_RETRY:
		if (res->outcome == OUTCOME_FAILED)
			/* No failed: statement: never retries too. */
			return named ? res->reason : REASON_PERMANENT;
		if (res->timed_out)
			return REASON_TIMEOUT;
		return named ? res->reason : REASON_ERROR;
	}
	return REASON_ERROR;
}
