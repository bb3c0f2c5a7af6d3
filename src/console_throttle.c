/*
 * console_throttle.c: the wait that failed logins impose, kept per name
 * tried and address it came from, and per name across addresses.
 *
 * A wait per address alone was everyone's behind that address: a guesser
 * locked out the others there (a proxy's users, all of them), and any
 * login that passed there cleared the guesser's wait.  So:
 *
 * - (address, name): each failure doubles the wait before the next try
 *   of that name from that address, 1 s, 2 s, 4 s ... up to
 *   CONSOLE_THROTTLE_CAP_MS; a login of that name that passes there clears
 *   it, and nothing else does.  Another name at the same address, or the
 *   same name elsewhere, is not held back.
 * - the name alone: its failures from every address count, and past
 *   CONSOLE_THROTTLE_NAME_FREE of them each doubles a wait of its own
 *   before any try of the name, which slows a guesser who spreads over
 *   many addresses.  An address where the name logged in within
 *   CONSOLE_THROTTLE_TRUST_MS does not wait for it, so that such a
 *   guesser does not lock the user out from where they work.
 *
 * Failures CONSOLE_THROTTLE_FORGET_MS apart are forgotten.  The table is
 * bounded; when it is full, the entry that tells least goes: one
 * forgotten, else the one with the fewest failures and the oldest use,
 * so that a flood of names tried once does not push out a name's long
 * wait.  Unknown names are kept as known ones are: the answers do not
 * say which names exist.
 */
#include "console.h"

#include <string.h>

/* An entry's key: addr "" for the name's own, across addresses. */
static bool
console_throttle_is(const struct console_throttle_entry *e, const char *addr,
    const char *user)
{
	return e->used && strcmp(e->addr, addr) == 0 &&
	    strncmp(e->user, user, CONSOLE_NAME_MAX) == 0;
}

static struct console_throttle_entry *
console_throttle_find(const struct console_throttle *t, const char *addr,
    const char *user)
{
	for (size_t i = 0; i < CONSOLE_THROTTLE_MAX; i++)
		if (console_throttle_is(&t->e[i], addr, user))
			return (struct console_throttle_entry *)&t->e[i];
	return NULL;
}

/* Whether the name of e logged in from its address lately. */
static bool
console_throttle_trusted(const struct console_throttle_entry *e, int64_t now)
{
	return e->passed_ms != 0 && now - e->passed_ms <=
	    CONSOLE_THROTTLE_TRUST_MS;
}

/* Whether e remembers nothing that still counts at now. */
static bool
console_throttle_forgotten(const struct console_throttle_entry *e,
    int64_t now)
{
	return now - e->last_ms > CONSOLE_THROTTLE_FORGET_MS &&
	    !console_throttle_trusted(e, now);
}

/* When e was last of use: its last failure, or its last login. */
static int64_t
console_throttle_seen(const struct console_throttle_entry *e)
{
	return e->last_ms > e->passed_ms ? e->last_ms : e->passed_ms;
}

/*
 * The entry to take for a new key: a free one, else the one worth least,
 * never keep (the other entry of the failure being counted).
 */
static struct console_throttle_entry *
console_throttle_victim(struct console_throttle *t, int64_t now,
    const struct console_throttle_entry *keep)
{
	struct console_throttle_entry *pick = NULL;

	for (size_t i = 0; i < CONSOLE_THROTTLE_MAX; i++) {
		struct console_throttle_entry *e = &t->e[i];
		if (e == keep)
			continue;
		if (!e->used || console_throttle_forgotten(e, now))
			return e;
		if (pick == NULL || e->failures < pick->failures ||
		    (e->failures == pick->failures &&
		    console_throttle_seen(e) < console_throttle_seen(pick)))
			pick = e;
	}
	return pick;
}

static struct console_throttle_entry *
console_throttle_get(struct console_throttle *t, const char *addr,
    const char *user, int64_t now, const struct console_throttle_entry *keep)
{
	struct console_throttle_entry *e = console_throttle_find(t, addr,
	    user);

	if (e == NULL) {
		e = console_throttle_victim(t, now, keep);
		memset(e, 0, sizeof(*e));
		e->used = true;
		snprintf(e->addr, sizeof(e->addr), "%s", addr);
		snprintf(e->user, sizeof(e->user), "%s", user);
	}
	return e;
}

/* The wait after failures, of which the first free ones cost none. */
static int64_t
console_throttle_doubled(int failures, int free)
{
	int64_t wait = 1000;

	if (failures <= free)
		return 0;
	for (int i = free + 1; i < failures && wait < CONSOLE_THROTTLE_CAP_MS;
	    i++)
		wait *= 2;
	return wait < CONSOLE_THROTTLE_CAP_MS ? wait : CONSOLE_THROTTLE_CAP_MS;
}

/*
 * How long a try of user's name from addr must wait; 0: none.  The
 * longer of the two waits, the name's own only where the name has not
 * logged in lately.
 */
int64_t
console_throttle_wait(const struct console_throttle *t, const char *addr,
    const char *user, int64_t now)
{
	const struct console_throttle_entry *pair, *name;
	int64_t wait = 0;

	pair = console_throttle_find(t, addr, user);
	name = console_throttle_find(t, "", user);
	if (pair != NULL && pair->until_ms > now)
		wait = pair->until_ms - now;
	if (name != NULL && name->until_ms - now > wait && (pair == NULL ||
	    !console_throttle_trusted(pair, now)))
		wait = name->until_ms - now;
	return wait;
}

static void
console_throttle_count(struct console_throttle_entry *e, int free,
    int64_t now)
{
	if (now - e->last_ms > CONSOLE_THROTTLE_FORGET_MS)
		e->failures = 0;
	if (e->failures < CONSOLE_THROTTLE_CAP_FAILURES)
		e->failures++;
	e->until_ms = now + console_throttle_doubled(e->failures, free);
	e->last_ms = now;
}

/* A login of user's name from addr failed. */
void
console_throttle_failed(struct console_throttle *t, const char *addr,
    const char *user, int64_t now)
{
	struct console_throttle_entry *pair = console_throttle_get(t, addr,
	    user, now, NULL);

	console_throttle_count(pair, 0, now);
	console_throttle_count(console_throttle_get(t, "", user, now, pair),
	    CONSOLE_THROTTLE_NAME_FREE, now);
}

/*
 * A login of user's name from addr passed: that pair's wait ends, and
 * the address is trusted for the name; the name's own count stays.
 */
void
console_throttle_passed(struct console_throttle *t, const char *addr,
    const char *user, int64_t now)
{
	struct console_throttle_entry *e = console_throttle_get(t, addr, user,
	    now, NULL);

	e->failures = 0;
	e->until_ms = 0;
	e->passed_ms = now;
}
