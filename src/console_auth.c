/*
 * console_auth.c: who may use the console.  The users file has one
 * "NAME:HASH:ROLE" a line (# comments and blank lines allowed), HASH
 * being crypt(3)'s (yescrypt, or another of the strong methods libcrypt
 * knows) and ROLE viewer or operator; `rowq console-user NAME` makes a
 * line.  The only includer of <crypt.h>.
 *
 * A password is checked by crypt itself, its result compared with the
 * stored hash in constant time.  Every login costs the same whatever the
 * name: the password is hashed once for each cost in the file (method
 * and parameters: SHA-512 takes milliseconds, yescrypt tens of them),
 * with the user's own hash for its cost and another user's for the
 * others, and with none of its own for a name that is not in the file;
 * so that the time taken does not tell which names exist, nor which
 * method a name's hash uses.  Passwords are never logged, and wiped from
 * memory after use.
 */
#include "console.h"

#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

/* The methods accepted: yescrypt, gost-yescrypt, scrypt, bcrypt, SHA-512/256. */
static const char *const console_methods[] = {
	"$y$", "$gy$", "$7$", "$2b$", "$2y$", "$6$", "$5$", NULL,
};

const char *
console_role_name(enum console_role r)
{
	return r == CONSOLE_OPERATOR ? "operator" : "viewer";
}

static bool
console_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > CONSOLE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789_.@-", s[i]) == NULL || s[i] == '\0')
			return false;
	return true;
}

/* A hash of a known method, in crypt's characters ('=' of rounds=N). */
static bool
console_hash_ok(const char *s, size_t n)
{
	bool known = false;

	for (size_t k = 0; console_methods[k] != NULL; k++)
		known |= n > strlen(console_methods[k]) &&
		    strncmp(s, console_methods[k],
		    strlen(console_methods[k])) == 0;
	if (!known || n >= CRYPT_OUTPUT_SIZE)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789./$=", s[i]) == NULL || s[i] == '\0')
			return false;
	return true;
}

/*
 * The digest of a user's hash that its sessions keep (console_session.c):
 * a new password has a new hash (and a new salt), so a new digest, and
 * the sessions of the old one end.  SHA-256 by crypt(3)'s $5$ with a salt
 * of its own: one-way, so that the sessions' memory, which the supervisor
 * shares with the console, holds nothing of the hash itself.  0, or -1
 * when libcrypt has no $5$.
 */
static int
console_hash_tag(const char *hash, char *out, size_t len)
{
	struct crypt_data *cd = xcalloc(1, sizeof(*cd));
	const char *h = crypt_rn(hash, "$5$rounds=1000$rowq.session$", cd,
	    (int)sizeof(*cd));
	const char *d = h != NULL && h[0] != '*' ? strrchr(h, '$') : NULL;
	int rc = -1;

	if (d != NULL && strlen(d + 1) < len) {
		snprintf(out, len, "%s", d + 1);
		rc = 0;
	}
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	return rc;
}

/*
 * What sets the work of hashing with hash: its method and parameters,
 * the hash less its salt and digest: "$y$j9T$" (yescrypt and its
 * parameters), "$2b$12$" (bcrypt and its cost), "$6$rounds=10000$" or
 * "$6$" (SHA-512, its rounds if not the default), "$7$" and the 11
 * characters of scrypt's N, r and p.
 */
static void
console_cost_of(const char *hash, struct buf *out)
{
	const char *p = strchr(hash + 1, '$'), *q;
	size_t n = p != NULL ? (size_t)(p + 1 - hash) : strlen(hash);

	buf_reset(out);
	buf_append(out, hash, n);
	if (p == NULL)
		return;
	if (strncmp(hash, "$7$", 3) == 0)
		buf_append(out, p + 1, strnlen(p + 1, 11));
	else if (strncmp(hash, "$5$", 3) == 0 || strncmp(hash, "$6$", 3) == 0) {
		if (strncmp(p + 1, "rounds=", 7) == 0 &&
		    (q = strchr(p + 1, '$')) != NULL)
			buf_append(out, p + 1, (size_t)(q + 1 - (p + 1)));
	} else if ((q = strchr(p + 1, '$')) != NULL)
		buf_append(out, p + 1, (size_t)(q + 1 - (p + 1)));
}

/* Each user's cost, and one user for each cost (console_users.cost). */
static void
console_users_costs(struct console_users *u)
{
	struct buf a = { 0 }, b = { 0 };

	u->cost = xcalloc(u->n ? u->n : 1, sizeof(*u->cost));
	for (size_t i = 0; i < u->n; i++) {
		size_t k;
		console_cost_of(u->user[i].hash, &a);
		for (k = 0; k < u->ncost; k++) {
			console_cost_of(u->user[u->cost[k]].hash, &b);
			if (strcmp(a.data, b.data) == 0)
				break;
		}
		if (k == u->ncost)
			u->cost[u->ncost++] = i;
		u->user[i].cost = k;
	}
	buf_free(&a);
	buf_free(&b);
}

/* One line, "NAME:HASH:ROLE"; NULL, or what is wrong with it. */
static const char *
console_users_line(const char *l, size_t n, struct console_users *u)
{
	const char *c1 = memchr(l, ':', n), *c2, *role;
	size_t rn;
	struct console_user *e;

	if (c1 == NULL || (c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 -
	    l))) == NULL)
		return "expected NAME:HASH:ROLE, as rowq console-user prints it";
	role = c2 + 1;
	rn = n - (size_t)(role - l);
	if (!console_name_ok(l, (size_t)(c1 - l)))
		return "the name is 1 to 64 letters, digits, _ . @ and -";
	if (!console_hash_ok(c1 + 1, (size_t)(c2 - c1 - 1)))
		return "not a crypt(3) hash of yescrypt, scrypt, bcrypt or "
		    "SHA-512: make the line with rowq console-user";
	if (!(rn == 6 && strncmp(role, "viewer", 6) == 0) &&
	    !(rn == 8 && strncmp(role, "operator", 8) == 0))
		return "the role is viewer or operator";
	for (size_t i = 0; i < u->n; i++)
		if (strlen(u->user[i].name) == (size_t)(c1 - l) &&
		    strncmp(u->user[i].name, l, (size_t)(c1 - l)) == 0)
			return "the name is there twice";
	if (u->n == CONSOLE_USERS_MAX)
		return "more users than the console takes (256)";
	u->user = xrealloc(u->user, (u->n + 1) * sizeof(*u->user));
	e = &u->user[u->n++];
	memset(e, 0, sizeof(*e));
	memcpy(e->name, l, (size_t)(c1 - l));
	e->hash = xstrndup(c1 + 1, (size_t)(c2 - c1 - 1));
	e->role = rn == 8 ? CONSOLE_OPERATOR : CONSOLE_VIEWER;
	if (console_hash_tag(e->hash, e->tag, sizeof(e->tag)) == -1)
		return "libcrypt has no SHA-256 ($5$) for the sessions' "
		    "digest of the hash";
	return NULL;
}

/*
 * The users in text, read from file (named in messages).  0, or -1 with
 * the first problem in why as "FILE:LINE: what is wrong"; nothing kept.
 */
int
console_users_parse(const char *text, size_t len, const char *file,
    struct console_users *u, struct buf *why)
{
	unsigned long line = 0;
	const char *p = text, *end = text + len;

	memset(u, 0, sizeof(*u));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t raw = nl ? (size_t)(nl - p) : (size_t)(end - p);
		size_t n = raw;
		const char *bad = NULL;
		line++;
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n > 0 && p[0] != '#')
			bad = console_users_line(p, n, u);
		if (bad != NULL) {
			buf_printf(why, "%s:%lu: %s", file, line, bad);
			console_users_free(u);
			return -1;
		}
		p += raw + (nl != NULL);
	}
	console_users_costs(u);
	return 0;
}

int
console_users_load(const char *path, struct console_users *u,
    struct buf *why)
{
	char *data = xmalloc(CONSOLE_USERS_FILE_MAX + 1);
	size_t len = 0;
	struct stat st;
	ssize_t n;
	int fd, rc = -1;

	memset(u, 0, sizeof(*u));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		buf_printf(why, "%s: %s", path, strerror(errno));
		free(data);
		return -1;
	}
	while (len <= CONSOLE_USERS_FILE_MAX &&
	    (n = read(fd, data + len, CONSOLE_USERS_FILE_MAX + 1 - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			break;
		len += (size_t)n;
	}
	if (n == -1)
		buf_printf(why, "%s: %s", path, strerror(errno));
	else if (len > CONSOLE_USERS_FILE_MAX)
		buf_printf(why, "%s: larger than %d bytes", path,
		    CONSOLE_USERS_FILE_MAX);
	else
		rc = console_users_parse(data, len, path, u, why);
	if (rc == 0 && fstat(fd, &st) == 0 && (st.st_mode & S_IROTH))
		log_warnx("%s: the console's users file is readable by "
		    "everyone (mode %04o): chmod o-r it", path,
		    (unsigned)(st.st_mode & 07777));
	close(fd);
	explicit_bzero(data, len);
	free(data);
	return rc;
}

void
console_users_free(struct console_users *u)
{
	for (size_t i = 0; i < u->n; i++)
		free(u->user[i].hash);
	free(u->user);
	free(u->cost);
	memset(u, 0, sizeof(*u));
}

/* Whether a and b are equal, in a time that depends on their lengths only. */
bool
console_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	volatile unsigned char d = alen != blen;
	size_t n = alen < blen ? alen : blen;

	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

/* Whether name is a user's (a name typed wrong may be a password: unlogged). */
bool
console_user_known(const struct console_users *u, const char *name)
{
	for (size_t i = 0; i < u->n; i++)
		if (strcmp(u->user[i].name, name) == 0)
			return true;
	return false;
}

/* A hash to check unknown names against, made once. */
static const char *
console_dummy_hash(void)
{
	static char dummy[CRYPT_OUTPUT_SIZE];
	struct buf b = { 0 };

	if (dummy[0] == '\0' && console_hash("not a password", &b) == 0)
		snprintf(dummy, sizeof(dummy), "%s", b.data);
	buf_free(&b);
	return dummy;
}

/*
 * The user with this name and password, or NULL.  The password is hashed
 * once for each cost of the file: with the user's own hash (its salt and
 * method) for its cost, whose result is compared in constant time, and
 * with another user's hash for each other cost, whose result is dropped;
 * an unknown name is hashed for every cost all the same (against a dummy
 * when the file has no user).
 */
const struct console_user *
console_login(const struct console_users *u, const char *name,
    const char *password)
{
	const struct console_user *found = NULL;
	struct crypt_data *cd = xcalloc(1, sizeof(*cd));
	const char *hash, *out;
	bool ok = false;

	for (size_t i = 0; i < u->n; i++)
		if (strcmp(u->user[i].name, name) == 0)
			found = &u->user[i];
	if (u->ncost == 0)
		(void)crypt_rn(password, console_dummy_hash(), cd,
		    (int)sizeof(*cd));
	for (size_t k = 0; k < u->ncost; k++) {
		bool own = found != NULL && found->cost == k;
		hash = own ? found->hash : u->user[u->cost[k]].hash;
		out = crypt_rn(password, hash, cd, (int)sizeof(*cd));
		if (own)
			ok = out != NULL && out[0] != '*' &&
			    console_equal(out, strlen(out), hash, strlen(hash));
	}
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	return ok ? found : NULL;
}

/* password's hash with a fresh salt: yescrypt, else SHA-512.  0, or -1. */
int
console_hash(const char *password, struct buf *out)
{
	static const char *const prefer[] = { "$y$", "$6$" };
	char setting[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data *cd = xcalloc(1, sizeof(*cd));
	const char *h = NULL;

	for (size_t k = 0; k < 2 && h == NULL; k++) {
		if (crypt_gensalt_rn(prefer[k], 0, NULL, 0, setting,
		    (int)sizeof(setting)) == NULL)
			continue;
		h = crypt_rn(password, setting, cd, (int)sizeof(*cd));
		if (h != NULL && h[0] == '*')
			h = NULL;
	}
	if (h != NULL)
		buf_puts(out, h);
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	return h != NULL ? 0 : -1;
}

/* One line of standard input, without its newline; echo off on a terminal. */
static int
console_read_password(const char *prompt, char *pw, size_t len)
{
	struct termios old, quiet;
	bool tty = isatty(0) && tcgetattr(0, &old) == 0;
	size_t n = 0;
	char c;
	ssize_t r;

	if (tty) {
		fputs(prompt, stderr);
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		(void)tcsetattr(0, TCSAFLUSH, &quiet);
	}
	while ((r = read(0, &c, 1)) == 1 && c != '\n')
		if (n + 1 < len)
			pw[n++] = c;
		else
			n = len;	/* too long: refused below */
	pw[n < len ? n : len - 1] = '\0';
	if (tty) {
		(void)tcsetattr(0, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	return (r == -1 || n >= len) ? -1 : 0;
}

/*
 * `rowq console-user NAME [--role viewer|operator]`: reads a password on
 * standard input (twice on a terminal) and prints the users file's line.
 */
int
console_user_command(int argc, char **argv)
{
	enum console_role role = CONSOLE_VIEWER;
	const char *name = NULL;
	char *pw = xmalloc(PASSWORD_MAX + 2), *again = xmalloc(PASSWORD_MAX + 2);
	struct buf hash = { 0 };
	int rc = ROWQ_EXIT_USAGE;

	for (int i = 1; i < argc; i++) {
		const char *r = NULL;
		if (strcmp(argv[i], "--role") == 0 && i + 1 < argc)
			r = argv[++i];
		else if (strncmp(argv[i], "--role=", 7) == 0)
			r = argv[i] + 7;
		else if (argv[i][0] != '-' && name == NULL) {
			name = argv[i];
			continue;
		} else {
			fprintf(stderr, "rowq: console-user: unexpected "
			    "argument %s\n", argv[i]);
			goto out;
		}
		if (strcmp(r, "viewer") == 0 || strcmp(r, "operator") == 0)
			role = strcmp(r, "operator") == 0 ? CONSOLE_OPERATOR :
			    CONSOLE_VIEWER;
		else {
			fprintf(stderr, "rowq: console-user: --role is viewer "
			    "or operator\n");
			goto out;
		}
	}
	if (name == NULL || !console_name_ok(name, strlen(name))) {
		fprintf(stderr, "rowq: console-user: name the user: 1 to 64 "
		    "letters, digits, _ . @ and -\n");
		goto out;
	}
	rc = ROWQ_EXIT_FAILURE;
	if (console_read_password("Password: ", pw, PASSWORD_MAX + 2) == -1 ||
	    strlen(pw) < 8) {
		fprintf(stderr, "rowq: console-user: a password of 8 to %d "
		    "bytes, on standard input\n", PASSWORD_MAX);
		goto out;
	}
	if (isatty(0) && (console_read_password("Again: ", again,
	    PASSWORD_MAX + 2) == -1 || strcmp(pw, again) != 0)) {
		fprintf(stderr, "rowq: console-user: the passwords differ\n");
		goto out;
	}
	if (console_hash(pw, &hash) == -1) {
		fprintf(stderr, "rowq: console-user: libcrypt made no hash\n");
		goto out;
	}
	printf("%s:%s:%s\n", name, hash.data, console_role_name(role));
	rc = ROWQ_EXIT_OK;
out:
	explicit_bzero(pw, PASSWORD_MAX + 2);
	explicit_bzero(again, PASSWORD_MAX + 2);
	free(pw);
	free(again);
	buf_free(&hash);
	return rc;
}
