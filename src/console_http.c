/*
 * console_http.c: the console's HTTP server, libmicrohttpd (mhd.h) in
 * the console child's own loop (epoll mode, one thread), over HTTPS when
 * console.tls: gives a certificate (TLS 1.2 and 1.3, or 1.3 alone).
 *
 * Every request is bounded before a page sees it: the URL, the headers
 * (the library's memory limit per connection answers 413 or 431 past
 * it), the query's values and the body, each past its bound answered 4xx
 * and dropped.  Clients are cut after CONSOLE_CLIENT_TIMEOUT_S idle, or
 * once their request has taken CONSOLE_REQUEST_MS to arrive however
 * steadily it trickles; at most CONSOLE_CLIENTS_MAX are served at once,
 * CONSOLE_CLIENTS_PER_ADDR of one address (mhd_guard.c).  Then who asks:
 * a session cookie (the login form), or HTTP Basic for scripts; neither,
 * and a page sends the browser to /login, /api/ answers 401.  A POST
 * that a browser says comes from another site's page is refused (403),
 * the login's too.  A POST other than the login's needs a session and
 * its CSRF token in the form (403 without): Basic, which a browser may
 * send by itself, changes nothing.  Every answer carries the security
 * headers (a strict Content-Security-Policy with nothing from elsewhere,
 * no framing, no sniffing, no caching).
 */
#include "rowq.h"
#include "console.h"
#include "mhd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONSOLE_CLIENTS_MAX		128
#define CONSOLE_CLIENTS_PER_ADDR	32	/* a proxy's users share one */
#define CONSOLE_CLIENT_TIMEOUT_S	10
#define CONSOLE_REQUEST_MS		10000	/* for a request to arrive */
/* Headers and URL of one request, the library's limit. */
#define CONSOLE_CONN_MEMORY		(32 * 1024)
#define CONSOLE_COOKIE			"rowq_session"

/*
 * GnuTLS's priorities for console.tls.min_version: its defaults, less
 * every version but TLS 1.3 and (for "1.2") 1.2; 1.0 and 1.1, which
 * GnuTLS would speak, never.
 */
#define CONSOLE_TLS12	"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define CONSOLE_TLS13	"NORMAL:-VERS-ALL:+VERS-TLS1.3"

static const char console_csp[] =
    "default-src 'none'; style-src 'self'; script-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'";

struct console_http {
	struct MHD_Daemon	*mhd;
	struct mhd_guard	 guard;
	struct console		*c;
	bool			 tls;
};

/*
 * One request as it comes in: its body, bounded; and, for one suspended
 * until a child is done (console_bulk.c), where its answer sends it.
 */
struct console_upload {
	struct buf	 body;
	bool		 too_big;
	bool		 resumed;
	char		 later[CONSOLE_URL_MAX + 64];
};

/* ---- pure helpers (unit-tested) ---- */

static int
console_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A form value %-decoded ('+' a space), into out; -1 for a bad escape. */
static int
console_unescape(const char *s, size_t n, struct buf *out)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '+')
			buf_putc(out, ' ');
		else if (s[i] != '%')
			buf_putc(out, s[i]);
		else if (i + 2 < n && console_hex(s[i + 1]) >= 0 &&
		    console_hex(s[i + 2]) >= 0) {
			buf_putc(out, (char)(console_hex(s[i + 1]) * 16 +
			    console_hex(s[i + 2])));
			i += 2;
		} else
			return -1;
	}
	if (out->data == NULL)
		buf_puts(out, "");
	return 0;
}

/*
 * An application/x-www-form-urlencoded body into its fields: at most
 * CONSOLE_FIELDS_MAX, each value at most CONSOLE_VALUE_MAX bytes, no NUL.
 * 0, or -1 with why (nothing kept).
 */
int
console_form_parse(const char *s, size_t len, struct console_form *f,
    const char **why)
{
	size_t at = 0;

	memset(f, 0, sizeof(*f));
	while (at < len) {
		const char *amp = memchr(s + at, '&', len - at);
		size_t end = amp ? (size_t)(amp - s) : len;
		const char *eq = memchr(s + at, '=', end - at);
		size_t klen = eq ? (size_t)(eq - (s + at)) : end - at;
		struct buf k = { 0 }, v = { 0 };

		if (end > at) {
			if (f->n == CONSOLE_FIELDS_MAX) {
				*why = "too many fields";
				goto bad;
			}
			if (console_unescape(s + at, klen, &k) == -1 ||
			    console_unescape(eq ? eq + 1 : s + end, eq ?
			    end - (size_t)(eq + 1 - s) : 0, &v) == -1) {
				*why = "a bad %-escape";
				buf_free(&k);
				buf_free(&v);
				goto bad;
			}
			if (v.len > CONSOLE_VALUE_MAX || k.len > 64 ||
			    strlen(k.data) != k.len || strlen(v.data) != v.len) {
				*why = "a field too long, or with a NUL";
				buf_free(&k);
				buf_free(&v);
				goto bad;
			}
			f->name = xrealloc(f->name, (f->n + 1) *
			    sizeof(*f->name));
			f->value = xrealloc(f->value, (f->n + 1) *
			    sizeof(*f->value));
			f->name[f->n] = buf_steal(&k);
			f->value[f->n] = buf_steal(&v);
			f->n++;
		}
		at = end + 1;
	}
	return 0;
bad:
	console_form_free(f);
	return -1;
}

const char *
console_form_get(const struct console_form *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->name[i], name) == 0)
			return f->value[i];
	return NULL;
}

void
console_form_free(struct console_form *f)
{
	for (size_t i = 0; i < f->n; i++) {
		explicit_bzero(f->value[i], strlen(f->value[i]));
		free(f->name[i]);
		free(f->value[i]);
	}
	free(f->name);
	free(f->value);
	memset(f, 0, sizeof(*f));
}

/*
 * "Basic BASE64(user:password)" into user and password (caller frees
 * both); -1 when it is not that, or longer than a login can be.
 */
int
console_basic_parse(const char *header, char **user, char **password)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct buf out = { 0 };
	unsigned acc = 0;
	int bits = 0;
	const char *p, *colon;

	if (header == NULL || strncasecmp(header, "Basic ", 6) != 0 ||
	    strlen(header) > 4 * (CONSOLE_NAME_MAX + PASSWORD_MAX) / 3 + 16)
		return -1;
	for (p = header + 6; *p == ' '; p++)
		;
	for (; *p != '\0' && *p != '='; p++) {
		const char *c = strchr(b64, *p);
		if (c == NULL || *p == '\0') {
			buf_free(&out);
			return -1;
		}
		acc = acc << 6 | (unsigned)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf_putc(&out, (char)(acc >> bits & 0xff));
		}
	}
	if (out.data == NULL || (colon = memchr(out.data, ':', out.len)) ==
	    NULL || strlen(out.data) != out.len) {
		if (out.data != NULL)
			explicit_bzero(out.data, out.len);
		buf_free(&out);
		return -1;
	}
	*user = xstrndup(out.data, (size_t)(colon - out.data));
	*password = xstrdup(colon + 1);
	explicit_bzero(out.data, out.len);
	buf_free(&out);
	return 0;
}

/* ---- the request ---- */

/* A query argument, if the request has it (bounded before any page runs). */
const char *
console_query(const struct console_request *r, const char *name)
{
	return mhd.lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
	    name);
}

struct console_query_bounds {
	size_t	n;
	bool	bad;
};

static enum MHD_Result
console_query_count(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct console_query_bounds *b = cls;

	(void)kind;
	if (++b->n > CONSOLE_QUERY_MAX || strlen(key) > 64 ||
	    (value != NULL && strlen(value) > CONSOLE_VALUE_MAX))
		b->bad = true;
	return MHD_YES;
}

static void
console_client(struct MHD_Connection *conn, char *out, size_t len)
{
	const union MHD_ConnectionInfo *i = mhd.get_connection_info(conn,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = i ? i->client_addr : NULL;

	snprintf(out, len, "?");
	if (sa != NULL && sa->sa_family == AF_INET)
		(void)inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->
		    sin_addr, out, (socklen_t)len);
	else if (sa != NULL && sa->sa_family == AF_INET6)
		(void)inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->
		    sin6_addr, out, (socklen_t)len);
}

/* Basic credentials, checked (and counted against the client if wrong). */
static void
console_basic(struct console_request *r, const char *header)
{
	struct console *c = r->c;
	char *user = NULL, *password = NULL;
	const struct console_user *u;

	if (console_basic_parse(header, &user, &password) == -1)
		return;
	snprintf(r->tried, sizeof(r->tried), "%s", user);
	if (console_throttle_wait(c->throttle, r->client, user,
	    now_ms()) > 0) {
		r->throttled = true;
	} else if ((u = console_login(&c->users, user, password)) != NULL) {
		r->authed = true;
		snprintf(r->user, sizeof(r->user), "%s", u->name);
		r->role = u->role;
		console_throttle_passed(c->throttle, r->client, user, now_ms());
	} else {
		console_throttle_failed(c->throttle, r->client, user,
		    now_ms());
		log_warnx("HTTP Basic login failed for %s from %s",
		    console_user_known(&c->users, user) ? user :
		    "an unknown name", r->client);
	}
	explicit_bzero(password, strlen(password));
	free(password);
	free(user);
}

/* Who asks: a session cookie, else HTTP Basic, else nobody. */
static void
console_who(struct console_request *r)
{
	const char *cookie = mhd.lookup_connection_value(r->conn,
	    MHD_COOKIE_KIND, CONSOLE_COOKIE);
	const char *basic = mhd.lookup_connection_value(r->conn,
	    MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	r->session = console_session_find(r->c->sessions, cookie, wall_ms());
	/* The users file may have changed since the session began. */
	if (r->session != NULL && !console_session_current(r->session,
	    &r->c->users)) {
		log_info("%s's session ends: no longer a user with that role "
		    "and password", r->session->user);
		console_session_end(r->session);
		r->session = NULL;
	}
	if (r->session != NULL) {
		r->authed = true;
		snprintf(r->user, sizeof(r->user), "%s", r->session->user);
		r->role = r->session->role;
		return;
	}
	if (basic != NULL)
		console_basic(r, basic);
}

/* ---- the answer ---- */

static enum MHD_Result
console_send(struct console_http *h, struct MHD_Connection *conn,
    struct console_reply *rep)
{
	struct MHD_Response *resp;
	enum MHD_Result rc;

	resp = mhd.create_response_from_buffer(rep->body.len,
	    rep->body.data ? rep->body.data : "", MHD_RESPMEM_MUST_COPY);
	if (resp == NULL)
		return MHD_NO;
	mhd.add_response_header(resp, "Content-Type", rep->type ? rep->type :
	    "text/html; charset=utf-8");
	mhd.add_response_header(resp, "Content-Security-Policy", console_csp);
	mhd.add_response_header(resp, "X-Frame-Options", "DENY");
	mhd.add_response_header(resp, "X-Content-Type-Options", "nosniff");
	mhd.add_response_header(resp, "Referrer-Policy", "no-referrer");
	mhd.add_response_header(resp, "Cache-Control", rep->cacheable ?
	    "private, max-age=3600" : "no-store");
	if (h->tls)
		mhd.add_response_header(resp, "Strict-Transport-Security",
		    "max-age=31536000");
	if (rep->location[0] != '\0')
		mhd.add_response_header(resp, "Location", rep->location);
	if (rep->cookie[0] != '\0')
		mhd.add_response_header(resp, "Set-Cookie", rep->cookie);
	if (rep->allow != NULL)
		mhd.add_response_header(resp, "Allow", rep->allow);
	if (rep->challenge)
		mhd.add_response_header(resp, "WWW-Authenticate",
		    "Basic realm=\"rowq console\", charset=\"UTF-8\"");
	if (rep->retry_after_s > 0) {
		char n[24];
		snprintf(n, sizeof(n), "%ld", rep->retry_after_s);
		mhd.add_response_header(resp, "Retry-After", n);
	}
	rc = mhd.queue_response(conn, rep->status, resp);
	mhd.destroy_response(resp);
	return rc;
}

/* The session cookie for s, or one that ends it (s NULL). */
void
console_reply_cookie(struct console_reply *rep, const struct console *c,
    const struct console_session *s)
{
	snprintf(rep->cookie, sizeof(rep->cookie), "%s=%s; Path=/; HttpOnly; "
	    "SameSite=Strict%s%s", CONSOLE_COOKIE, s ? s->token : "",
	    c->http->tls ? "; Secure" : "", s ? "" : "; Max-Age=0");
}

/* A short plain answer: an error, mostly. */
void
console_reply_text(struct console_reply *rep, unsigned status,
    const char *text)
{
	rep->status = status;
	rep->type = "text/plain; charset=utf-8";
	buf_reset(&rep->body);
	buf_puts(&rep->body, text);
	buf_putc(&rep->body, '\n');
}

/*
 * Whether a POST comes from another site's page, as the browser says:
 * Sec-Fetch-Site other than same-origin (or none: the user's own doing),
 * else, from a browser too old to send it, an Origin whose host is not
 * the Host asked for (the scheme is left out: a proxy in front may speak
 * HTTPS for a console that speaks HTTP).  A client that sends neither, a
 * script, is no page of another site.  The login form needs this (it has
 * no session, so no CSRF token): a page the operator opens must not
 * spend the wait of the console's users with wrong passwords.
 */
static bool
console_cross_site(const struct console_request *r)
{
	const char *site = mhd.lookup_connection_value(r->conn,
	    MHD_HEADER_KIND, "Sec-Fetch-Site");
	const char *origin = mhd.lookup_connection_value(r->conn,
	    MHD_HEADER_KIND, "Origin");
	const char *host = mhd.lookup_connection_value(r->conn,
	    MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *o;

	if (site != NULL)
		return strcmp(site, "same-origin") != 0 &&
		    strcmp(site, "none") != 0;
	if (origin == NULL)
		return false;
	if ((o = strstr(origin, "://")) == NULL || host == NULL)
		return true;
	return strcasecmp(o + 3, host) != 0;
}

/* The checks of a request before its page: bounds, who, CSRF. */
static bool
console_admit(struct console_request *r, struct console_upload *up,
    struct console_reply *rep)
{
	struct console_query_bounds qb = { 0 };
	const char *why = NULL;

	if (strlen(r->path) > CONSOLE_URL_MAX) {
		console_reply_text(rep, MHD_HTTP_URI_TOO_LONG, "URL too long");
		return false;
	}
	mhd.get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND,
	    console_query_count, &qb);
	if (qb.bad) {
		console_reply_text(rep, MHD_HTTP_BAD_REQUEST, "too many query "
		    "arguments, or one too long");
		return false;
	}
	if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0 &&
	    strcmp(r->method, "POST") != 0) {
		console_reply_text(rep, MHD_HTTP_METHOD_NOT_ALLOWED,
		    "GET, HEAD or POST");
		rep->allow = "GET, HEAD, POST";
		return false;
	}
	if (strcmp(r->method, "POST") == 0 && console_cross_site(r)) {
		console_reply_text(rep, MHD_HTTP_FORBIDDEN, "a POST from "
		    "another site's page is refused: use the console's own "
		    "pages");
		return false;
	}
	if (up->too_big) {
		console_reply_text(rep, MHD_HTTP_CONTENT_TOO_LARGE,
		    "request body too large");
		return false;
	}
	if (strcmp(r->method, "POST") == 0 && console_form_parse(up->body.data ?
	    up->body.data : "", up->body.len, &r->form, &why) == -1) {
		console_reply_text(rep, MHD_HTTP_BAD_REQUEST, why);
		return false;
	}
	if (strncmp(r->path, "/static/", 8) == 0 ||
	    strcmp(r->path, "/login") == 0)
		return true;
	console_who(r);
	if (r->throttled) {
		console_reply_text(rep, MHD_HTTP_TOO_MANY_REQUESTS, "too many "
		    "failed logins of this name: wait, then try again");
		rep->retry_after_s = (long)(console_throttle_wait(
		    r->c->throttle, r->client, r->tried, now_ms()) + 999) /
		    1000;
		return false;
	}
	if (!r->authed) {
		if (strncmp(r->path, "/api/", 5) == 0 ||
		    strcmp(r->method, "POST") == 0) {
			console_reply_text(rep, MHD_HTTP_UNAUTHORIZED,
			    "log in: the form at /login, or HTTP Basic");
			rep->challenge = true;
		} else {
			rep->status = MHD_HTTP_SEE_OTHER;
			snprintf(rep->location, sizeof(rep->location),
			    "/login");
		}
		return false;
	}
	if (strcmp(r->method, "POST") == 0 && r->session == NULL) {
		console_reply_text(rep, MHD_HTTP_FORBIDDEN, "a change needs a "
		    "login session (POST /login) and its CSRF token, not HTTP "
		    "Basic");
		return false;
	}
	if (strcmp(r->method, "POST") == 0 && !console_csrf_ok(r->session,
	    console_form_get(&r->form, "csrf"))) {
		console_reply_text(rep, MHD_HTTP_FORBIDDEN, "missing or wrong "
		    "CSRF token: reload the page and try again");
		return false;
	}
	return true;
}

static enum MHD_Result
console_answer(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_size, void **con_cls)
{
	struct console_http *h = cls;
	struct console_upload *up = *con_cls;
	struct console_request r = { .c = h->c, .conn = conn, .path = url,
	    .method = method, .upload = up };
	struct console_reply rep = { .status = MHD_HTTP_OK };
	enum MHD_Result rc;

	(void)version;
	if (up == NULL) {
		*con_cls = xcalloc(1, sizeof(*up));
		return MHD_YES;
	}
	/* Back from console_http_resume: the answer its caller left. */
	if (up->resumed) {
		console_redirect(&rep, up->later);
		rc = console_send(h, conn, &rep);
		buf_free(&rep.body);
		return rc;
	}
	if (*upload_size != 0) {
		if (up->body.len + *upload_size > CONSOLE_BODY_MAX)
			up->too_big = true;
		else
			buf_append(&up->body, upload_data, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	mhd_guard_answering(conn);
	console_client(conn, r.client, sizeof(r.client));
	if (console_admit(&r, up, &rep))
		console_route(&r, &rep);
	if (strcmp(method, "HEAD") == 0)
		buf_reset(&rep.body);
	rc = rep.suspended ? MHD_YES : console_send(h, conn, &rep);
	console_form_free(&r.form);
	buf_free(&rep.body);
	return rc;
}

static void
console_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode why)
{
	struct console_upload *up = *con_cls;

	(void)cls;
	(void)why;
	mhd_guard_completed(conn);
	if (up != NULL) {
		if (up->body.data != NULL)
			explicit_bzero(up->body.data, up->body.len);
		buf_free(&up->body);
		free(up);
	}
	*con_cls = NULL;
}

/* A PEM file whole, for the library; NULL (logged) when unreadable. */
static char *
console_read_pem(const char *path)
{
	struct buf b = { 0 };
	char chunk[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd == -1) {
		log_error("tls: %s: %s", path, strerror(errno));
		return NULL;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 && b.len < 1 << 20)
		buf_append(&b, chunk, (size_t)n);
	close(fd);
	if (n == -1 || b.data == NULL) {
		log_error("tls: %s: %s", path, n == -1 ?
		    strerror(errno) : "empty");
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

struct console_http *
console_http_start(struct console *c)
{
	const struct console_options *o = &c->cfg->console;
	struct sockaddr_storage ss;
	struct console_http *h;
	char *cert = NULL, *key = NULL;
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;

	if (mhd_address(o->listen, &ss) == -1) {
		log_error("not an address HOST:PORT: %s", o->listen);
		return NULL;
	}
	if (mhd_load("console") == -1)
		return NULL;
	h = xcalloc(1, sizeof(*h));
	h->c = c;
	if (o->tls_cert != NULL) {
		if (mhd.is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			log_error("tls: this libmicrohttpd has no "
			    "TLS");
			free(h);
			return NULL;
		}
		cert = console_read_pem(o->tls_cert);
		key = console_read_pem(o->tls_key);
		if (cert == NULL || key == NULL) {
			free(cert);
			free(key);
			free(h);
			return NULL;
		}
		flags |= MHD_USE_TLS;
		h->tls = true;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	mhd_guard_init(&h->guard, "console", CONSOLE_CLIENTS_MAX,
	    CONSOLE_CLIENTS_PER_ADDR, CONSOLE_REQUEST_MS);
	h->mhd = mhd.start_daemon(flags, 0, NULL, NULL, console_answer, h,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONSOLE_CLIENTS_MAX,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONSOLE_CLIENT_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONSOLE_CONN_MEMORY,
	    MHD_OPTION_NOTIFY_COMPLETED, console_completed, h,
	    MHD_OPTION_NOTIFY_CONNECTION, mhd_guard_notify, &h->guard,
	    h->tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, cert,
	    MHD_OPTION_HTTPS_MEM_KEY, key,
	    MHD_OPTION_HTTPS_PRIORITIES, o->tls_min_version == 13 ?
	    CONSOLE_TLS13 : CONSOLE_TLS12,
	    MHD_OPTION_END);
	if (key != NULL)
		explicit_bzero(key, strlen(key));
	free(cert);
	free(key);
	if (h->mhd == NULL) {
		log_error("cannot listen on %s: %s", o->listen,
		    strerror(errno));
		mhd_guard_free(&h->guard);
		free(h);
		return NULL;
	}
	(void)fcntl(console_http_fd(h), F_SETFD, FD_CLOEXEC);
	log_info("serving %s://%s/", h->tls ? "https" : "http",
	    o->listen);
	return h;
}

/*
 * r's answer comes later: its connection is set aside (the library
 * neither reads it nor times it out) until console_http_resume.
 */
void
console_http_suspend(struct console_request *r)
{
	mhd.suspend_connection(r->conn);
}

/*
 * The request set aside by console_http_suspend is answered: a redirect
 * to location, sent when the library next runs (console_http_run).
 */
void
console_http_resume(void *conn, void *upload, const char *location)
{
	struct console_upload *up = upload;

	up->resumed = true;
	snprintf(up->later, sizeof(up->later), "%s", location);
	mhd.resume_connection(conn);
}

int
console_http_fd(const struct console_http *h)
{
	return mhd_epoll_fd(h->mhd);
}

void
console_http_run(struct console_http *h)
{
	(void)mhd.run(h->mhd);
}

/*
 * The library's timers and the guard's: idle clients cut (mhd_timers),
 * and those whose request is too long in coming (mhd_guard_timers).
 */
void
console_http_timers(struct console_http *h, int64_t now, int64_t *next)
{
	mhd_guard_timers(&h->guard, now, next);
	mhd_timers(h->mhd, now, next);
}
