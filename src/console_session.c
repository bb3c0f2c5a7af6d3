/*
 * console_session.c: a login's session and its CSRF token (the wait
 * after failed logins is console_throttle.c's).
 *
 * A session is two random tokens: one in the cookie, one in every form
 * (the CSRF token, which a page of another site cannot read, so cannot
 * send).  A session unused for CONSOLE_SESSION_IDLE_MS, or older than
 * CONSOLE_SESSION_MAX_MS, is gone; a user holds CONSOLE_SESSIONS_PER_USER
 * at most, a new one ending their own least recently used, and when the
 * table is full the least recently used of the users that hold the most
 * goes (console_session_slot).  Tokens are compared in constant time.
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

/* How many live sessions user has. */
static size_t
console_sessions_of(const struct console_sessions *t, const char *user,
    int64_t now)
{
	size_t n = 0;

	for (size_t i = 0; i < CONSOLE_SESSIONS_MAX; i++)
		n += console_session_live(&t->s[i], now) &&
		    strcmp(t->s[i].user, user) == 0;
	return n;
}

/*
 * The slot for a new session of user: user's own least recently used
 * when it has CONSOLE_SESSIONS_PER_USER already; else a free one (or
 * one past its time); else, every slot taken, the least recently used
 * session of the users that have the most.  So a user who logs in again
 * and again ends their own sessions, never another's, and a full table
 * takes from the users that hold most of it.
 */
static struct console_session *
console_session_slot(struct console_sessions *t, const char *user,
    int64_t now)
{
	struct console_session *pick = NULL;
	size_t most = 0;
	bool full = console_sessions_of(t, user, now) >=
	    CONSOLE_SESSIONS_PER_USER;

	for (size_t i = 0; i < CONSOLE_SESSIONS_MAX; i++) {
		struct console_session *s = &t->s[i];
		size_t n;
		if (!console_session_live(s, now)) {
			if (!full)
				return s;
			continue;
		}
		if (full && strcmp(s->user, user) != 0)
			continue;
		n = full ? 0 : console_sessions_of(t, s->user, now);
		if (pick == NULL || n > most || (n == most &&
		    s->used_ms < pick->used_ms)) {
			pick = s;
			most = n;
		}
	}
	return pick;
}

/*
 * A new session for user, bound to its role and its hash's digest; NULL
 * when no random bytes could be had.
 */
struct console_session *
console_session_new(struct console_sessions *t, const struct console_user *u,
    int64_t now)
{
	struct console_session *pick = console_session_slot(t, u->name, now);

	if (pick == NULL)
		return NULL;
	memset(pick, 0, sizeof(*pick));
	if (console_random_hex(pick->token, CONSOLE_TOKEN_BYTES) == -1 ||
	    console_random_hex(pick->csrf, CONSOLE_TOKEN_BYTES) == -1) {
		memset(pick, 0, sizeof(*pick));
		return NULL;
	}
	snprintf(pick->user, sizeof(pick->user), "%s", u->name);
	snprintf(pick->tag, sizeof(pick->tag), "%s", u->tag);
	pick->role = u->role;
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
 * Whether s is still its user's as the users file says: the name there,
 * with the same role and the same hash (a new password ends it).
 */
bool
console_session_current(const struct console_session *s,
    const struct console_users *u)
{
	for (size_t k = 0; k < u->n; k++)
		if (strcmp(u->user[k].name, s->user) == 0)
			return u->user[k].role == s->role &&
			    console_equal(u->user[k].tag,
			    strlen(u->user[k].tag), s->tag, strlen(s->tag));
	return false;
}

/*
 * After the users file is read again (a console started anew): the
 * sessions of users no longer in it, or whose role or password changed,
 * end.
 */
void
console_sessions_recheck(struct console_sessions *t,
    const struct console_users *u)
{
	for (size_t i = 0; i < CONSOLE_SESSIONS_MAX; i++) {
		struct console_session *s = &t->s[i];
		if (!s->used || console_session_current(s, u))
			continue;
		log_info("%s's session ends: no longer a user with that role "
		    "and password", s->user);
		console_session_end(s);
	}
}

bool
console_csrf_ok(const struct console_session *s, const char *token)
{
	return token != NULL && s->csrf[0] != '\0' &&
	    console_equal(s->csrf, strlen(s->csrf), token, strlen(token));
}
