/*
 * Unit tests for the console's pure logic: HTML escaping, a key posted
 * back, a row's link, a form's bounds, HTTP Basic, sessions and CSRF
 * tokens, the wait after failed logins, the users file, the history and
 * its SVG chart.
 */
#include "rowq.h"
#include "console.h"
#include "runs.h"

#include <check.h>
#include "unit.h"
#include <stdlib.h>
#include <string.h>

static char *
escaped(const char *s, size_t n)
{
	struct buf b = { 0 };

	console_html_n(&b, s, n);
	return b.data ? buf_steal(&b) : xstrdup("");
}

START_TEST(test_html_escape)
{
	char *h = escaped("<script>alert('x\")</script>&", 28);

	ck_assert_str_eq(h, "&lt;script&gt;alert(&#39;x&quot;)&lt;/script&gt;"
	    "&amp;");
	free(h);
	/*
	 * Control characters but newline and tab become their pictures
	 * (U+2401, U+2400 for NUL, U+2421 for DEL): "victim\1" does not
	 * look like "victim "; bad UTF-8 becomes U+FFFD.
	 */
	h = escaped("a\x01" "b\n\xff" "c\0d\t\x7f", 10);
	ck_assert_str_eq(h, "a\xe2\x90\x81" "b\n\xef\xbf\xbd" "c\xe2\x90\x80"
	    "d\t\xe2\x90\xa1");
	free(h);
}
END_TEST

/* A key posted back: hex, two digits a byte, decoded to the very bytes. */
START_TEST(test_key_decode)
{
	struct buf hex = { 0 }, b = { 0 };

	buf_put_hex(&hex, "victim\x01\0\xff", 9);
	ck_assert_str_eq(hex.data, "76696374696d0100ff");
	ck_assert_int_eq(console_key_decode(hex.data, &b), 0);
	ck_assert_uint_eq(b.len, 9);
	ck_assert_mem_eq(b.data, "victim\x01\0\xff", 9);
	ck_assert_int_eq(console_key_decode("76696374696D", &b), 0);
	ck_assert_str_eq(b.data, "victim");
	/* The text shown is not a key: odd counts, other characters. */
	ck_assert_int_eq(console_key_decode("victim ", &b), -1);
	ck_assert_int_eq(console_key_decode("7", &b), -1);
	ck_assert_int_eq(console_key_decode("7g", &b), -1);
	ck_assert_int_eq(console_key_decode("", &b), -1);
	buf_free(&hex);
	buf_free(&b);
}
END_TEST

/*
 * A row's link carries the key's bytes, every one, in hex: a control
 * character, a zero byte and a key that is another's prefix each lead to
 * their own row; its text is escaped as any value.
 */
START_TEST(test_row_link)
{
	struct buf b = { 0 };

	console_row_href(&b, "jobs", "victim\x01", 7);
	ck_assert_str_eq(b.data, "/queue/jobs/row?key_hex=76696374696d01");
	buf_reset(&b);
	console_row_href(&b, "a.b", "\0\xff\n", 3);
	ck_assert_str_eq(b.data, "/queue/a.b/row?key_hex=00ff0a");
	buf_reset(&b);
	console_row_link(&b, "jobs", "<v>\x01", 4, "<v>\x01", 4);
	ck_assert_str_eq(b.data, "<a class=\"row\" href=\"/queue/jobs/row?"
	    "key_hex=3c763e01\">&lt;v&gt;\xe2\x90\x81</a>");
	buf_free(&b);
	/* Shown as text, or also as bytes. */
	ck_assert(row_story_printable("later", 5));
	ck_assert(row_story_printable("caf\xc3\xa9", 5));
	ck_assert(!row_story_printable("victim\x01", 7));
	ck_assert(!row_story_printable("a\0b", 3));
	ck_assert(!row_story_printable("\xff", 1));
}
END_TEST

START_TEST(test_url_part)
{
	struct buf b = { 0 };

	console_url_part(&b, "a b/<\"&x>-_.~");
	ck_assert_str_eq(b.data, "a%20b%2F%3C%22%26x%3E-_.~");
	buf_free(&b);
}
END_TEST

START_TEST(test_form)
{
	struct console_form f;
	const char *why = NULL;
	const char *body = "csrf=ab&key=1&key=2&error=a+b%2Fc&empty=&flag";

	ck_assert_int_eq(console_form_parse(body, strlen(body), &f, &why), 0);
	ck_assert_uint_eq(f.n, 6);
	ck_assert_str_eq(console_form_get(&f, "csrf"), "ab");
	ck_assert_str_eq(console_form_get(&f, "key"), "1");
	ck_assert_str_eq(f.value[2], "2");
	ck_assert_str_eq(console_form_get(&f, "error"), "a b/c");
	ck_assert_str_eq(console_form_get(&f, "empty"), "");
	ck_assert_str_eq(console_form_get(&f, "flag"), "");
	ck_assert_ptr_null(console_form_get(&f, "nosuch"));
	console_form_free(&f);
}
END_TEST

START_TEST(test_form_bounds)
{
	struct console_form f;
	const char *why = NULL;
	struct buf b = { 0 };

	ck_assert_int_eq(console_form_parse("a=%zz", 5, &f, &why), -1);
	ck_assert_str_eq(why, "a bad %-escape");
	ck_assert_int_eq(console_form_parse("a=%4", 4, &f, &why), -1);
	ck_assert_int_eq(console_form_parse("a=%00", 5, &f, &why), -1);
	ck_assert_str_eq(why, "a field too long, or with a NUL");
	buf_puts(&b, "a=");
	for (int i = 0; i <= CONSOLE_VALUE_MAX; i++)
		buf_putc(&b, 'x');
	ck_assert_int_eq(console_form_parse(b.data, b.len, &f, &why), -1);
	buf_reset(&b);
	for (int i = 0; i <= CONSOLE_FIELDS_MAX; i++)
		buf_puts(&b, "k=1&");
	ck_assert_int_eq(console_form_parse(b.data, b.len, &f, &why), -1);
	ck_assert_str_eq(why, "too many fields");
	ck_assert_uint_eq(f.n, 0);
	buf_free(&b);
}
END_TEST

START_TEST(test_basic)
{
	char *u = NULL, *p = NULL;

	/* alice:pa:ss */
	ck_assert_int_eq(console_basic_parse("Basic YWxpY2U6cGE6c3M=", &u, &p), 0);
	ck_assert_str_eq(u, "alice");
	ck_assert_str_eq(p, "pa:ss");
	free(u);
	free(p);
	ck_assert_int_eq(console_basic_parse("Bearer x", &u, &p), -1);
	ck_assert_int_eq(console_basic_parse("Basic !!!!", &u, &p), -1);
	/* no colon */
	ck_assert_int_eq(console_basic_parse("Basic YWxpY2U=", &u, &p), -1);
	ck_assert_int_eq(console_basic_parse(NULL, &u, &p), -1);
}
END_TEST

/* A user as the users file would give it, with its hash's digest. */
#define USER(n, r)	(&(struct console_user){ .name = (n), .role = (r), \
			    .tag = "digest" })

START_TEST(test_sessions)
{
	struct console_sessions *t = xcalloc(1, sizeof(*t));
	struct console_session *s, *s2;
	char token[CONSOLE_TOKEN_LEN + 1];
	int64_t now = 1000000;

	s = console_session_new(t, USER("alice", CONSOLE_OPERATOR), now);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(strlen(s->token), CONSOLE_TOKEN_LEN);
	ck_assert_uint_eq(strlen(s->csrf), CONSOLE_TOKEN_LEN);
	ck_assert_str_ne(s->token, s->csrf);
	snprintf(token, sizeof(token), "%s", s->token);
	ck_assert_ptr_eq(console_session_find(t, token, now + 1000), s);
	ck_assert(console_csrf_ok(s, s->csrf));
	ck_assert(!console_csrf_ok(s, token));
	ck_assert(!console_csrf_ok(s, ""));
	ck_assert(!console_csrf_ok(s, NULL));
	/* A token one character off, or cut short, finds nothing. */
	token[0] = token[0] == 'a' ? 'b' : 'a';
	ck_assert_ptr_null(console_session_find(t, token, now + 1000));
	ck_assert_ptr_null(console_session_find(t, "abc", now));
	ck_assert_ptr_null(console_session_find(t, NULL, now));
	/* Unused too long: gone. */
	s2 = console_session_new(t, USER("victor", CONSOLE_VIEWER), now);
	snprintf(token, sizeof(token), "%s", s2->token);
	ck_assert_ptr_null(console_session_find(t, token,
	    now + CONSOLE_SESSION_IDLE_MS + 1));
	ck_assert(!s2->used);
	/* Used all along, but too old: gone too. */
	s = console_session_new(t, USER("alice", CONSOLE_OPERATOR), now);
	snprintf(token, sizeof(token), "%s", s->token);
	for (int64_t t2 = now; t2 < now + CONSOLE_SESSION_MAX_MS;
	    t2 += CONSOLE_SESSION_IDLE_MS / 2)
		ck_assert_ptr_nonnull(console_session_find(t, token, t2));
	ck_assert_ptr_null(console_session_find(t, token,
	    now + CONSOLE_SESSION_MAX_MS));
	/* Ended: gone. */
	s = console_session_new(t, USER("alice", CONSOLE_OPERATOR), now);
	snprintf(token, sizeof(token), "%s", s->token);
	console_session_end(s);
	ck_assert_ptr_null(console_session_find(t, token, now));
	free(t);
}
END_TEST

START_TEST(test_sessions_full)
{
	struct console_sessions *t = xcalloc(1, sizeof(*t));
	struct console_session *a, *b0, *s;
	struct console_user u = { .role = CONSOLE_VIEWER, .tag = "digest" };
	size_t live = 0;

	/* One user's logins end their own oldest, never another's. */
	a = console_session_new(t, USER("a", CONSOLE_OPERATOR), 1000);
	b0 = console_session_new(t, USER("b", CONSOLE_VIEWER), 1500);
	for (int i = 1; i < 2 * CONSOLE_SESSIONS_MAX; i++)
		ck_assert_ptr_nonnull(console_session_new(t,
		    USER("b", CONSOLE_VIEWER), 2000 + i));
	ck_assert(a->used);
	ck_assert_str_eq(a->user, "a");
	ck_assert_ptr_nonnull(console_session_find(t, a->token, 5000));
	for (size_t i = 0; i < CONSOLE_SESSIONS_MAX; i++)
		live += t->s[i].used && strcmp(t->s[i].user, "b") == 0;
	ck_assert_uint_eq(live, CONSOLE_SESSIONS_PER_USER);
	ck_assert(b0->used_ms > 1500);
	/*
	 * Full, of a's one session and others' 16 each (the last user's
	 * 15): a new user's login takes the least recently used of those
	 * with the most, not a's.
	 */
	memset(t, 0, sizeof(*t));
	a = console_session_new(t, USER("a", CONSOLE_OPERATOR), 1000);
	for (int k = 1; k < CONSOLE_SESSIONS_MAX; k++) {
		snprintf(u.name, sizeof(u.name), "u%d",
		    (k - 1) / CONSOLE_SESSIONS_PER_USER);
		s = console_session_new(t, &u, 2000 + k);
		if (k == 1)
			b0 = s;
	}
	ck_assert_str_eq(a->user, "a");
	s = console_session_new(t, USER("c", CONSOLE_VIEWER), 9000);
	ck_assert(a->used);
	ck_assert_str_eq(a->user, "a");
	ck_assert_ptr_eq(s, b0);
	free(t);
}
END_TEST

START_TEST(test_sessions_recheck)
{
	struct console_sessions *t = xcalloc(1, sizeof(*t));
	struct console_users u = { 0 };
	struct buf why = { 0 };
	const char *text = "alice:$6$s$h:viewer\nbob:$6$t$h:operator\n";
	struct console_session *a, *b, *b2, *c;

	ck_assert_int_eq(console_users_parse(text, strlen(text), "u", &u,
	    &why), 0);
	/* Each user's digest of its hash: SHA-256, differing with the hash. */
	ck_assert_uint_eq(strlen(u.user[0].tag), CONSOLE_TAG_LEN);
	ck_assert_str_ne(u.user[0].tag, u.user[1].tag);
	/*
	 * alice was an operator; bob still is one, with the same password
	 * in one session and another in the other; carol is gone.
	 */
	a = console_session_new(t, USER("alice", CONSOLE_OPERATOR), 1000);
	b = console_session_new(t, &u.user[1], 1000);
	b2 = console_session_new(t, USER("bob", CONSOLE_OPERATOR), 1000);
	c = console_session_new(t, USER("carol", CONSOLE_VIEWER), 1000);
	ck_assert(console_session_current(b, &u));
	ck_assert(!console_session_current(b2, &u));
	console_sessions_recheck(t, &u);
	ck_assert(!a->used);
	ck_assert(b->used);
	ck_assert(!b2->used);
	ck_assert(!c->used);
	console_users_free(&u);
	free(t);
}
END_TEST

START_TEST(test_throttle)
{
	struct console_throttle *t = xcalloc(1, sizeof(*t));
	const char *a = "10.0.0.1", *b = "10.0.0.2";
	int64_t now = 100000;

	ck_assert_int_eq(console_throttle_wait(t, a, "alice", now), 0);
	console_throttle_failed(t, a, "alice", now);
	ck_assert_int_eq(console_throttle_wait(t, a, "alice", now), 1000);
	/* Another address, another name at the same address: no wait. */
	ck_assert_int_eq(console_throttle_wait(t, b, "alice", now), 0);
	ck_assert_int_eq(console_throttle_wait(t, a, "victor", now), 0);
	console_throttle_failed(t, a, "alice", now + 1000);
	ck_assert_int_eq(console_throttle_wait(t, a, "alice", now + 1000),
	    2000);
	/* victor's login there clears victor's, not alice's. */
	console_throttle_passed(t, a, "victor", now + 1500);
	ck_assert_int_eq(console_throttle_wait(t, a, "alice", now + 1500),
	    1500);
	for (int i = 0; i < 20; i++)
		console_throttle_failed(t, a, "alice", now + 2000);
	ck_assert_int_eq(console_throttle_wait(t, a, "alice", now + 2000),
	    CONSOLE_THROTTLE_CAP_MS);
	/* alice's name has failed 22 times: elsewhere too it waits... */
	ck_assert_int_eq(console_throttle_wait(t, b, "alice", now + 2000),
	    CONSOLE_THROTTLE_CAP_MS);
	/* ...but not where alice logged in lately. */
	console_throttle_passed(t, "10.0.0.3", "alice", now + 2000);
	ck_assert_int_eq(console_throttle_wait(t, "10.0.0.3", "alice",
	    now + 2000), 0);
	/* A login that passes clears its own pair only. */
	console_throttle_passed(t, a, "alice", now + 2000);
	ck_assert_int_eq(console_throttle_wait(t, a, "alice", now + 2000), 0);
	ck_assert_int_gt(console_throttle_wait(t, b, "alice", now + 2000), 0);
	/* Failures far apart are forgotten. */
	now += CONSOLE_THROTTLE_FORGET_MS + 60000;
	ck_assert_int_eq(console_throttle_wait(t, b, "alice", now), 0);
	console_throttle_failed(t, b, "alice", now);
	ck_assert_int_eq(console_throttle_wait(t, b, "alice", now), 1000);
	free(t);
}
END_TEST

/* A name's own wait begins past its free failures, from any address. */
START_TEST(test_throttle_name)
{
	struct console_throttle *t = xcalloc(1, sizeof(*t));
	int64_t now = 100000;
	char addr[32];

	for (int i = 0; i < CONSOLE_THROTTLE_NAME_FREE; i++) {
		snprintf(addr, sizeof(addr), "10.2.0.%d", i);
		console_throttle_failed(t, addr, "alice", now);
	}
	ck_assert_int_eq(console_throttle_wait(t, "10.9.9.9", "alice", now), 0);
	console_throttle_failed(t, "10.2.1.1", "alice", now);
	ck_assert_int_eq(console_throttle_wait(t, "10.9.9.9", "alice", now),
	    1000);
	console_throttle_failed(t, "10.2.1.2", "alice", now);
	ck_assert_int_eq(console_throttle_wait(t, "10.9.9.9", "alice", now),
	    2000);
	ck_assert_int_eq(console_throttle_wait(t, "10.9.9.9", "victor", now),
	    0);
	free(t);
}
END_TEST

/*
 * More keys than entries: a flood of names tried once does not push out
 * a name's long wait, and the table never grows.
 */
START_TEST(test_throttle_full)
{
	struct console_throttle *t = xcalloc(1, sizeof(*t));
	int64_t now = 100000;

	for (int i = 0; i < 6; i++)
		console_throttle_failed(t, "10.0.0.1", "alice", now);
	for (int i = 0; i < 4 * CONSOLE_THROTTLE_MAX; i++) {
		char name[32];
		snprintf(name, sizeof(name), "junk%d", i);
		console_throttle_failed(t, "10.0.0.1", name, now + 1);
	}
	ck_assert_int_eq(console_throttle_wait(t, "10.0.0.1", "alice", now),
	    32000);
	ck_assert_int_gt(console_throttle_wait(t, "10.0.0.1", "junk4095",
	    now + 1), 0);
	free(t);
}
END_TEST

static const char *const good_line =
    "alice:$y$j9T$yp0..EvY131rMy3ylDt7M1$6BwV47823PVp905H01UQRMc8XeCEBxqs6deQ14xkhh1:operator";

START_TEST(test_users_parse)
{
	struct console_users u;
	struct buf why = { 0 }, text = { 0 };

	buf_printf(&text, "# the console's users\n\n%s\r\nvictor:$6$salt$abc./:viewer\n",
	    good_line);
	ck_assert_int_eq(console_users_parse(text.data, text.len, "u", &u,
	    &why), 0);
	ck_assert_uint_eq(u.n, 2);
	ck_assert_str_eq(u.user[0].name, "alice");
	ck_assert_int_eq(u.user[0].role, CONSOLE_OPERATOR);
	ck_assert_str_eq(u.user[1].hash, "$6$salt$abc./");
	ck_assert_int_eq(u.user[1].role, CONSOLE_VIEWER);
	ck_assert(console_user_known(&u, "victor"));
	ck_assert(!console_user_known(&u, "mallory"));
	console_users_free(&u);
	buf_free(&text);
}
END_TEST

static void
users_refused(const char *text, const char *message)
{
	struct console_users u;
	struct buf why = { 0 };

	ck_assert_int_eq(console_users_parse(text, strlen(text), "u", &u,
	    &why), -1);
	ck_assert_str_eq(why.data, message);
	ck_assert_uint_eq(u.n, 0);
	buf_free(&why);
}

START_TEST(test_users_refused)
{
	users_refused("alice:$y$abc\n", "u:1: expected NAME:HASH:ROLE, as rowq "
	    "console-user prints it");
	users_refused("\nalice:5f4dcc3b5aa765d61d8327deb882cf99:viewer\n",
	    "u:2: not a crypt(3) hash of yescrypt, scrypt, bcrypt or SHA-512: "
	    "make the line with rowq console-user");
	users_refused("alice:$1$md5$xyz:viewer", "u:1: not a crypt(3) hash of "
	    "yescrypt, scrypt, bcrypt or SHA-512: make the line with rowq "
	    "console-user");
	users_refused("alice:plain:viewer", "u:1: not a crypt(3) hash of "
	    "yescrypt, scrypt, bcrypt or SHA-512: make the line with rowq "
	    "console-user");
	users_refused("alice:$6$s$h:admin", "u:1: the role is viewer or "
	    "operator");
	users_refused("al ice:$6$s$h:viewer", "u:1: the name is 1 to 64 "
	    "letters, digits, _ . @ and -");
	users_refused(":$6$s$h:viewer", "u:1: the name is 1 to 64 letters, "
	    "digits, _ . @ and -");
	users_refused("a:$6$s$h:viewer\na:$6$t$h:operator",
	    "u:2: the name is there twice");
	users_refused("a:$6$s$h<x:viewer", "u:1: not a crypt(3) hash of "
	    "yescrypt, scrypt, bcrypt or SHA-512: make the line with rowq "
	    "console-user");
}
END_TEST

START_TEST(test_login)
{
	struct console_users u = { 0 };
	struct buf hash = { 0 }, text = { 0 }, why = { 0 };

	ck_assert_int_eq(console_hash("correct horse", &hash), 0);
	ck_assert(strncmp(hash.data, "$y$", 3) == 0 ||
	    strncmp(hash.data, "$6$", 3) == 0);
	buf_printf(&text, "bob:%s:viewer\n", hash.data);
	ck_assert_int_eq(console_users_parse(text.data, text.len, "u", &u,
	    &why), 0);
	ck_assert_ptr_nonnull(console_login(&u, "bob", "correct horse"));
	ck_assert_ptr_null(console_login(&u, "bob", "correct hors"));
	ck_assert_ptr_null(console_login(&u, "bob", ""));
	ck_assert_ptr_null(console_login(&u, "nobody", "correct horse"));
	ck_assert(console_equal("abc", 3, "abc", 3));
	ck_assert(!console_equal("abc", 3, "abd", 3));
	ck_assert(!console_equal("abc", 3, "abcd", 4));
	console_users_free(&u);
	buf_free(&hash);
	buf_free(&text);
}
END_TEST

/*
 * Hashes of several costs: each user logs in with its own, and the file
 * knows each cost once, whatever the salt, so that every login hashes
 * the password once per cost.
 */
START_TEST(test_login_costs)
{
	struct console_users u = { 0 };
	struct buf hash = { 0 }, text = { 0 }, why = { 0 };
	/* crypt(3)'s of "pw": SHA-512 with two salts, and 10000 rounds. */
	const char *sha = "$6$salt1$DSD67iutyjMlwJnVPP5TKhhTiYnnapR7QOeTBEXa803"
	    "Zb7ffuF88m0w8n8yVPRGcbQC9cwDJ.YbKol47aGA761";
	const char *sha2 = "$6$salt2$STlSLiGQuYrnuYcegi42NTnIe1VA5MJNocrWMI37c"
	    "dMT61vjiBDMSTiNi.fF3Uku80bZOfm2.u.dDlc8T78GS1";
	const char *sha10k = "$6$rounds=10000$salt3$e60jzpPApjwCtQv2slKEQ6MQtc"
	    "EiV.mwEvF/W.u3mIQJv3Eljhys7IBBzftBOM29UNdlXewRyTk6fgN1PMvOP0";

	ck_assert_int_eq(console_hash("correct horse", &hash), 0);
	buf_printf(&text, "bob:%s:viewer\ns1:%s:viewer\ns2:%s:viewer\n"
	    "s3:%s:operator\n", hash.data, sha, sha2, sha10k);
	ck_assert_int_eq(console_users_parse(text.data, text.len, "u", &u,
	    &why), 0);
	ck_assert_uint_eq(u.ncost, 3);
	ck_assert_uint_eq(u.user[1].cost, u.user[2].cost);
	ck_assert_uint_ne(u.user[1].cost, u.user[3].cost);
	ck_assert_uint_ne(u.user[0].cost, u.user[1].cost);
	ck_assert_ptr_eq(console_login(&u, "bob", "correct horse"), &u.user[0]);
	ck_assert_ptr_eq(console_login(&u, "s1", "pw"), &u.user[1]);
	ck_assert_ptr_eq(console_login(&u, "s2", "pw"), &u.user[2]);
	ck_assert_ptr_eq(console_login(&u, "s3", "pw"), &u.user[3]);
	ck_assert_ptr_null(console_login(&u, "s1", "correct horse"));
	ck_assert_ptr_null(console_login(&u, "bob", "pw"));
	ck_assert_ptr_null(console_login(&u, "nobody", "pw"));
	console_users_free(&u);
	buf_free(&hash);
	buf_free(&text);
}
END_TEST

START_TEST(test_history)
{
	struct history_queue h = { .name = "email" };
	int64_t m = 29000000;

	/* The first reading sets the base: nothing counted yet. */
	history_add(&h, m, 100, 10, 1, -1);
	ck_assert_uint_eq(history_at(&h, m)->done, 0);
	history_add(&h, m, 150, 12, 1, 30);
	ck_assert_uint_eq(history_at(&h, m)->done, 50);
	ck_assert_uint_eq(history_at(&h, m)->retried, 2);
	ck_assert_int_eq(history_at(&h, m)->oldest_age_s, 30);
	history_add(&h, m, 160, 12, 1, 20);
	ck_assert_int_eq(history_at(&h, m)->oldest_age_s, 30);
	/* Two minutes on: the one between is zero, the new one counts. */
	history_add(&h, m + 2, 200, 12, 4, -1);
	ck_assert_uint_eq(history_at(&h, m + 1)->done, 0);
	ck_assert_int_eq(history_at(&h, m + 1)->oldest_age_s, -1);
	ck_assert_uint_eq(history_at(&h, m + 2)->done, 40);
	ck_assert_uint_eq(history_at(&h, m + 2)->failed, 3);
	ck_assert_uint_eq(history_at(&h, m)->done, 60);
	/* An hour back is forgotten; the future is not there. */
	ck_assert_ptr_null(history_at(&h, m + 2 - HISTORY_MINUTES));
	ck_assert_ptr_null(history_at(&h, m + 3));
	history_add(&h, m + 2 + HISTORY_MINUTES, 210, 12, 4, -1);
	ck_assert_ptr_null(history_at(&h, m + 2));
	ck_assert_uint_eq(history_at(&h, m + 2 + HISTORY_MINUTES)->done, 10);
	/* Counters that start again (a new daemon) count from zero. */
	history_add(&h, m + 2 + HISTORY_MINUTES, 5, 0, 0, -1);
	ck_assert_uint_eq(history_at(&h, m + 2 + HISTORY_MINUTES)->done, 15);
}
END_TEST

START_TEST(test_chart)
{
	struct history_queue h = { .name = "email" };
	struct buf b = { 0 };
	int64_t m = 29000000;

	history_add(&h, m - 3, 0, 0, 0, -1);
	history_add(&h, m - 2, 30, 0, 3, 5);
	history_add(&h, m, 90, 0, 3, 125);
	console_chart(&b, &h, m, false);
	ck_assert(strncmp(b.data, "<svg xmlns=\"http://www.w3.org/2000/svg\"",
	    39) == 0);
	ck_assert(strstr(b.data, "</svg>") != NULL);
	/* The scale: 60 rows a minute at most; the age's, 2m5s. */
	ck_assert(strstr(b.data, ">60/min</text>") != NULL);
	ck_assert(strstr(b.data, ">2m5s</text>") != NULL);
	ck_assert(strstr(b.data, "<polyline class=\"done\"") != NULL);
	ck_assert(strstr(b.data, "<polyline class=\"failed\"") != NULL);
	ck_assert(strstr(b.data, "<polyline class=\"age\"") != NULL);
	/* Nothing but the drawing: no script, no link out. */
	ck_assert(strstr(b.data, "<script") == NULL);
	ck_assert(strstr(b.data, "href") == NULL);
	buf_reset(&b);
	console_chart(&b, &h, m, true);
	ck_assert(strstr(b.data, "width=\"150\"") != NULL);
	ck_assert(strstr(b.data, "<text") == NULL);
	buf_free(&b);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("console");
	TCase *tc = tcase_create("console");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_html_escape);
	tcase_add_test(tc, test_url_part);
	tcase_add_test(tc, test_key_decode);
	tcase_add_test(tc, test_row_link);
	tcase_add_test(tc, test_form);
	tcase_add_test(tc, test_form_bounds);
	tcase_add_test(tc, test_basic);
	tcase_add_test(tc, test_sessions);
	tcase_add_test(tc, test_sessions_full);
	tcase_add_test(tc, test_sessions_recheck);
	tcase_add_test(tc, test_throttle);
	tcase_add_test(tc, test_throttle_name);
	tcase_add_test(tc, test_throttle_full);
	tcase_add_test(tc, test_users_parse);
	tcase_add_test(tc, test_users_refused);
	tcase_add_test(tc, test_login);
	tcase_add_test(tc, test_login_costs);
	tcase_add_test(tc, test_history);
	tcase_add_test(tc, test_chart);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
