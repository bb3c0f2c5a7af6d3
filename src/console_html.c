/*
 * console_html.c: what every console page shares: HTML escaping, the
 * page's frame (title, menu, who is logged in), and the style sheet and
 * the script, served from the binary itself (nothing comes from
 * elsewhere; the Content-Security-Policy allows nothing else).
 *
 * Every value a page shows goes through console_html: row values and
 * error texts come from handlers and the application, and are taken for
 * hostile.  Bytes that are not UTF-8 become U+FFFD, control characters
 * but newline and tab their pictures (U+2400 and on: "victim\1" is shown
 * as victim and a visible SOH, not as "victim ").  A key that a form
 * posts back is not its text but its bytes in hex (console_key_decode),
 * compared byte for byte.
 */
#include "console.h"

#include <string.h>

const char console_css[] =
"body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232b;"
"background:#f5f6f8}\n"
"header{background:#1d2b3a;color:#fff;padding:.5em 1.2em;display:flex;"
"gap:1.2em;align-items:center;flex-wrap:wrap}\n"
"header a{color:#cfe3ff;text-decoration:none}header a.on{color:#fff;"
"font-weight:600}\n"
"header .who{margin-left:auto;color:#9fb3c8}\n"
"header form{display:inline;margin:0}\n"
"main{padding:1em 1.2em}\n"
"h1{font-size:1.3em;margin:.2em 0 .6em}h2{font-size:1.05em;"
"margin:1.4em 0 .5em}\n"
"table{border-collapse:collapse;background:#fff;width:100%}\n"
"th,td{border-bottom:1px solid #e3e6ea;padding:.35em .6em;text-align:left;"
"vertical-align:top}\n"
"th{background:#eef1f4;font-weight:600;white-space:nowrap}\n"
"td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\n"
"td.v{font-family:ui-monospace,monospace;font-size:13px;white-space:pre-wrap;"
"word-break:break-all;max-width:40em}\n"
"table.row{width:auto;min-width:30em}table.row th{width:12em}\n"
".bad{color:#b42318;font-weight:600}.ok{color:#067647}.muted{color:#6b7785}\n"
".tag{display:inline-block;padding:0 .45em;border-radius:.6em;"
"font-size:12px;background:#fde7c7;color:#7a4a00}\n"
".tag.gone{background:#f3d4d1;color:#8a1c12}.tag.live{background:#d3f0df;"
"color:#0b5a33}\n"
"button,input[type=submit]{font:inherit;padding:.25em .8em;border:1px solid "
"#8b98a8;border-radius:4px;background:#fff;cursor:pointer}\n"
"button.danger{border-color:#b42318;color:#b42318}\n"
"input[type=text],input[type=password]{font:inherit;padding:.25em .4em;"
"border:1px solid #b8c2cc;border-radius:4px}\n"
".bar{display:flex;gap:.8em;align-items:center;flex-wrap:wrap;"
"margin:.6em 0}\n"
".note{background:#fff7e6;border:1px solid #f5c77e;padding:.6em .8em;"
"margin:.6em 0}\n"
".login{max-width:22em;margin:4em auto;background:#fff;padding:1.5em;"
"border:1px solid #e3e6ea}\n"
".login label{display:block;margin:.6em 0 .2em}\n"
".login input{width:100%;box-sizing:border-box}\n"
"pre{background:#fff;border:1px solid #e3e6ea;padding:.5em;"
"white-space:pre-wrap;word-break:break-all}\n"
"svg{background:#fff;border:1px solid #e3e6ea}\n"
"svg .grid{stroke:#eceff2}svg .done{stroke:#1f7a4d;fill:none;"
"stroke-width:1.5}\n"
"svg .failed{stroke:#c0392b;fill:none;stroke-width:1.5}\n"
"svg .age{stroke:#5a6ec2;fill:none;stroke-width:1.5;stroke-dasharray:4 2}\n"
"svg text{font-size:10px;fill:#6b7785}\n";

/*
 * Refresh every 5 s where the page asks, unless the user is filling in a
 * form there; and select every row's box.
 */
const char console_js[] =
"(function(){\n"
"var b=document.body;\n"
"function busy(){var a=document.activeElement;\n"
"if(a&&(a.tagName==='INPUT'||a.tagName==='BUTTON'))return true;\n"
"if(document.querySelector('input[type=checkbox]:checked'))return true;\n"
"return Array.prototype.some.call(document.querySelectorAll("
"'input[type=text]'),function(i){return i.value!=='';});}\n"
"function tick(){if(busy())setTimeout(tick,5000);else location.reload();}\n"
"if(b.dataset.refresh)setTimeout(tick,5000);\n"
"var all=document.getElementById('all');\n"
"if(all){all.addEventListener('change',function(){\n"
"document.querySelectorAll('input[name=key_hex]').forEach(function(c){"
"c.checked=all.checked;});});}\n"
"})();\n";

void
console_html_n(struct buf *b, const char *s, size_t n)
{
	struct buf t = { 0 };

	buf_append(&t, s != NULL ? s : "", s != NULL ? n : 0);
	utf8_sanitize(&t);
	for (size_t i = 0; i < t.len; i++) {
		unsigned char c = (unsigned char)t.data[i];
		switch (c) {
		case '&':
			buf_puts(b, "&amp;");
			break;
		case '<':
			buf_puts(b, "&lt;");
			break;
		case '>':
			buf_puts(b, "&gt;");
			break;
		case '"':
			buf_puts(b, "&quot;");
			break;
		case '\'':
			buf_puts(b, "&#39;");
			break;
		case '\n':
		case '\t':
			buf_putc(b, (char)c);
			break;
		default:
			if (c < ' ' || c == 0x7f) {
				/* U+2400 + c, U+2421 for DEL, in UTF-8. */
				buf_puts(b, "\xe2\x90");
				buf_putc(b, (char)(c == 0x7f ? 0xa1 :
				    0x80 + c));
			} else
				buf_putc(b, (char)c);
		}
	}
	buf_free(&t);
}

void
console_html(struct buf *b, const char *s)
{
	console_html_n(b, s, s != NULL ? strlen(s) : 0);
}

/* A value as one part of a URL's path or query: all but [A-Za-z0-9-_.~] %-escaped. */
void
console_url_part(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-_.~", c) != NULL)
			buf_putc(b, (char)c);
		else
			buf_printf(b, "%%%02X", c);
	}
}

/* A queue's href: /queue/NAME, with what follows. */
void
console_queue_href(struct buf *b, const char *queue, const char *then)
{
	buf_puts(b, "/queue/");
	console_url_part(b, queue);
	buf_puts(b, then);
}

/* A link to a queue's page, <a href="/queue/NAME">NAME</a>, escaped. */
void
console_queue_link(struct buf *b, const char *queue)
{
	buf_puts(b, "<a href=\"");
	console_queue_href(b, queue, "\">");
	console_html(b, queue);
	buf_puts(b, "</a>");
}

static int
console_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * A key as a form posts it back, hex digits two a byte (buf_put_hex on
 * the page), into its bytes in out; -1 when it is not that: an odd
 * count, or a character not a hex digit.  An empty key is refused too.
 */
int
console_key_decode(const char *hex, struct buf *out)
{
	size_t n = strlen(hex);

	buf_reset(out);
	if (n == 0 || n % 2 != 0)
		return -1;
	for (size_t i = 0; i < n; i += 2) {
		int hi = console_hex_digit((unsigned char)hex[i]);
		int lo = console_hex_digit((unsigned char)hex[i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		buf_putc(out, (char)(hi << 4 | lo));
	}
	return 0;
}

static void
console_menu_item(struct buf *b, const char *href, const char *label,
    const char *path)
{
	bool on = strcmp(href, "/") == 0 ? strcmp(path, "/") == 0 ||
	    strncmp(path, "/queue/", 7) == 0 : strncmp(path, href,
	    strlen(href)) == 0;

	buf_printf(b, "<a href=\"%s\"%s>%s</a>", href, on ? " class=\"on\"" :
	    "", label);
}

/* The page up to its content: the menu, who is logged in, log out. */
void
console_page_begin(struct buf *b, const struct console_request *r,
    const char *title, bool refresh)
{
	buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
	    "<meta charset=\"utf-8\"><meta name=\"viewport\" "
	    "content=\"width=device-width\"><title>");
	console_html(b, title);
	buf_puts(b, " - rowq</title><link rel=\"stylesheet\" "
	    "href=\"/static/console.css\"></head>\n");
	buf_printf(b, "<body%s>\n<header><strong>rowq</strong>",
	    refresh ? " data-refresh=\"1\"" : "");
	if (r->authed) {
		console_menu_item(b, "/", "Queues", r->path);
		if (r->c->cfg->nschedules > 0)
			console_menu_item(b, "/schedules", "Schedules", r->path);
		console_menu_item(b, "/daemons", "Daemons", r->path);
		console_menu_item(b, "/actions", "Actions", r->path);
		buf_puts(b, "<span class=\"who\">");
		console_html(b, r->user);
		buf_printf(b, " (%s)</span>", console_role_name(r->role));
		if (r->session != NULL) {
			buf_puts(b, "<form method=\"post\" action=\"/logout\">"
			    "<input type=\"hidden\" name=\"csrf\" value=\"");
			console_html(b, r->session->csrf);
			buf_puts(b, "\"><button type=\"submit\">Log out"
			    "</button></form>");
		}
	}
	buf_puts(b, "</header>\n<main>\n");
}

void
console_page_end(struct buf *b)
{
	buf_puts(b, "</main>\n<script src=\"/static/console.js\"></script>\n"
	    "</body></html>\n");
}
