/*
 * console_session.c: a login's session, its CSRF token, and the wait
 * that failed logins impose on the client that made them.
 *
 * A session is two random tokens: one in the cookie, one in every form
 * (the CSRF token, which a page of another site cannot read, so cannot
 * send).  A session unused for CONSOLE_SESSION_IDLE_MS, or older than
 * CONSOLE_SESSION_MAX_MS, is gone; when the table is full the least
 * recently used goes.  Tokens are compared in constant time.
 *
 * Each failed login doubles the wait before the client's next try (1 s,
 * 2 s, 4 s ... up to CONSOLE_THROTTLE_CAP_MS); a try within it is
 * refused without checking the password.  A login that passes forgets
 * the client's failures.
 */
#include "console.h"

#include <string.h>
#include <sys/random.h>

/* nbytes random bytes as 2 * nbytes hex digits and a NUL.  0, or -1. */
int
console_random_hex(char *out, size_t nbytes)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[64];
	size_t got = 0;

	if (nbytes > sizeof(r))
		return -1;
	while (got < nbytes) {
		ssize_t n = getrandom(r + got, nbytes - got, 0);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	for (size_t i = 0; i < nbytes; i++) {
		out[2 * i] = hex[r[i] >> 4];
		out[2 * i + 1] = hex[r[i] & 15];
	}
	out[2 * nbytes] = '\0';
	explicit_bzero(r, sizeof(r));
	return 0;
}

static bool
console_session_live(const struct console_session *s, int64_t now)
{
	return s->used && now - s->used_ms < CONSOLE_SESSION_IDLE_MS &&
	    now - s->created_ms < CONSOLE_SESSION_MAX_MS && now >= s->created_ms;
}

/* A new session for user; NULL when no random bytes could be had. */
struct console_session *
console_session_new(struct console_sessions *t, const char *user,
    enum console_role role, int64_t now)
{
	struct console_session *pick = &t->s[0];

	for (size_t i = 0; i < CONSOLE_SESSIONS_MAX; i++) {
		struct console_session *s = &t->s[i];
		if (!console_session_live(s, now)) {
			pick = s;
			break;
		}
		if (s->used_ms < pick->used_ms)
			pick = s;
	}
	memset(pick, 0, sizeof(*pick));
	if (console_random_hex(pick->token, CONSOLE_TOKEN_BYTES) == -1 ||
	    console_random_hex(pick->csrf, CONSOLE_TOKEN_BYTES) == -1) {
		memset(pick, 0, sizeof(*pick));
		return NULL;
	}
	snprintf(pick->user, sizeof(pick->user), "%s", user);
	pick->role = role;
	pick->created_ms = pick->used_ms = now;
	pick->used = true;
	return pick;
}

/*
 * The live session of this cookie token, its use noted; NULL if none.
 * Every entry is compared, in constant time each.
 */
struct console_session *
console_session_find(struct console_sessions *t, const char *token,
    int64_t now)
{
	struct console_session *found = NULL;
	size_t n;

	if (token == NULL || (n = strlen(token)) != CONSOLE_TOKEN_LEN)
		return NULL;
	for (size_t i = 0; i < CONSOLE_SESSIONS_MAX; i++) {
		struct console_session *s = &t->s[i];
		if (console_equal(s->token, strlen(s->token), token, n) &&
		    s->used)
			found = s;
	}
	if (found == NULL)
		return NULL;
	if (!console_session_live(found, now)) {
		console_session_end(found);
		return NULL;
	}
	found->used_ms = now;
	return found;
}

void
console_session_end(struct console_session *s)
{
	explicit_bzero(s, sizeof(*s));
}

/*
 * After the users file is read again (a console started anew): the
 * sessions of users no longer in it, or whose role changed, end.
 */
void
console_sessions_recheck(struct console_sessions *t,
    const struct console_users *u)
{
	for (size_t i = 0; i < CONSOLE_SESSIONS_MAX; i++) {
		struct console_session *s = &t->s[i];
		bool keep = false;
		if (!s->used)
			continue;
		for (size_t k = 0; k < u->n; k++)
			keep |= strcmp(u->user[k].name, s->user) == 0 &&
			    u->user[k].role == s->role;
		if (!keep) {
			log_info("%s's session ends: no longer a user with "
			    "that role", s->user);
			console_session_end(s);
		}
	}
}

bool
console_csrf_ok(const struct console_session *s, const char *token)
{
	return token != NULL && s->csrf[0] != '\0' &&
	    console_equal(s->csrf, strlen(s->csrf), token, strlen(token));
}

static struct console_throttle_entry *
console_throttle_entry(const struct console_throttle *t, const char *addr)
{
	for (size_t i = 0; i < CONSOLE_THROTTLE_MAX; i++)
		if (t->e[i].addr[0] != '\0' && strcmp(t->e[i].addr, addr) == 0)
			return (struct console_throttle_entry *)&t->e[i];
	return NULL;
}

/* How long the client at addr must wait before its next try; 0: none. */
int64_t
console_throttle_wait(const struct console_throttle *t, const char *addr,
    int64_t now)
{
	const struct console_throttle_entry *e = console_throttle_entry(t, addr);

	return e != NULL && e->until_ms > now ? e->until_ms - now : 0;
}

void
console_throttle_failed(struct console_throttle *t, const char *addr,
    int64_t now)
{
	struct console_throttle_entry *e = console_throttle_entry(t, addr);
	int64_t wait = 1000;

	if (e == NULL) {
		/* A free entry, or the one of the client quiet the longest. */
		e = &t->e[0];
		for (size_t i = 0; i < CONSOLE_THROTTLE_MAX; i++) {
			if (t->e[i].addr[0] == '\0') {
				e = &t->e[i];
				break;
			}
			if (t->e[i].last_ms < e->last_ms)
				e = &t->e[i];
		}
		memset(e, 0, sizeof(*e));
		snprintf(e->addr, sizeof(e->addr), "%s", addr);
	}
	/* Failures long past are forgotten. */
	if (now - e->last_ms > 15 * CONSOLE_THROTTLE_CAP_MS)
		e->failures = 0;
	e->failures++;
	for (int i = 1; i < e->failures && wait < CONSOLE_THROTTLE_CAP_MS; i++)
		wait *= 2;
	if (wait > CONSOLE_THROTTLE_CAP_MS)
		wait = CONSOLE_THROTTLE_CAP_MS;
	e->until_ms = now + wait;
	e->last_ms = now;
}

void
console_throttle_passed(struct console_throttle *t, const char *addr)
{
	struct console_throttle_entry *e = console_throttle_entry(t, addr);

	if (e != NULL)
		memset(e, 0, sizeof(*e));
}
