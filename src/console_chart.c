/*
 * console_chart.c: a queue's last hour as SVG, drawn here from its
 * history (history.c): rows done and failed per minute on one scale, the
 * oldest waiting row's age on its own.  Inline SVG, no script, nothing
 * fetched: the Content-Security-Policy holds.  The small one goes in the
 * Queues table, the large one on the queue's page.
 */
#include "console.h"

#include <string.h>

struct console_chart_size {
	int	w, h;		/* the drawing's */
	int	left, right, top, bottom;	/* margins */
};

static const struct console_chart_size console_chart_small = {
	150, 32, 1, 1, 2, 2,
};
static const struct console_chart_size console_chart_large = {
	720, 180, 44, 54, 16, 22,
};

/* A minute's value: 0 = done, 1 = failed, 2 = oldest age (-1: none). */
static long long
console_chart_value(const struct history_queue *h, int64_t minute, int which)
{
	const struct history_minute *m = history_at(h, minute);

	if (m == NULL)
		return which == 2 ? -1 : 0;
	if (which == 2)
		return m->oldest_age_s;
	return which == 0 ? (long long)m->done : (long long)m->failed;
}

static long long
console_chart_max(const struct history_queue *h, int64_t first, bool age)
{
	long long max = 0;

	for (int i = 0; i < HISTORY_MINUTES; i++)
		for (int which = age ? 2 : 0; which <= (age ? 2 : 1); which++) {
			long long v = console_chart_value(h, first + i, which);
			if (v > max)
				max = v;
		}
	return max;
}

/* One series as a polyline; an age series skips the minutes without one. */
static void
console_chart_line(struct buf *b, const struct console_chart_size *z,
    const struct history_queue *h, int64_t first, int which, long long max,
    const char *cls)
{
	int pw = z->w - z->left - z->right, ph = z->h - z->top - z->bottom;
	bool open = false;

	for (int i = 0; i < HISTORY_MINUTES; i++) {
		long long v = console_chart_value(h, first + i, which);
		double x = z->left + (double)pw * i / (HISTORY_MINUTES - 1);
		double y = z->top + ph - (max > 0 ? (double)ph * (double)v /
		    (double)max : 0);
		if (v < 0) {
			if (open)
				buf_puts(b, "\"/>");
			open = false;
			continue;
		}
		if (!open)
			buf_printf(b, "<polyline class=\"%s\" points=\"", cls);
		buf_printf(b, "%s%.1f,%.1f", open ? " " : "", x, y);
		open = true;
	}
	if (open)
		buf_puts(b, "\"/>");
}

void
console_chart(struct buf *b, const struct history_queue *h,
    int64_t now_minute, bool small)
{
	const struct console_chart_size *z = small ? &console_chart_small :
	    &console_chart_large;
	int64_t first = now_minute - HISTORY_MINUTES + 1;
	long long max = console_chart_max(h, first, false);
	long long amax = console_chart_max(h, first, true);
	int pw = z->w - z->left - z->right, ph = z->h - z->top - z->bottom;
	char d[32];

	buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
	    "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
	    "class=\"chart\"><title>rows done and failed per minute, and the "
	    "oldest age, over the last hour</title>", z->w, z->h, z->w, z->h);
	if (!small) {
		for (int k = 0; k <= 4; k++) {
			double y = z->top + (double)ph * k / 4;
			buf_printf(b, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" "
			    "x2=\"%d\" y2=\"%.1f\"/>", z->left, y, z->left + pw,
			    y);
		}
		buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%lld"
		    "/min</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">0"
		    "</text>", z->left - 4, z->top + 4, max, z->left - 4,
		    z->top + ph + 4);
		duration_format(amax * 1000, d, sizeof(d));
		buf_printf(b, "<text x=\"%d\" y=\"%d\">%s</text>", z->left + pw +
		    4, z->top + 4, amax > 0 ? d : "");
		buf_printf(b, "<text x=\"%d\" y=\"%d\">-60 min</text><text "
		    "x=\"%d\" y=\"%d\" text-anchor=\"end\">now</text>", z->left,
		    z->h - 6, z->left + pw, z->h - 6);
		buf_printf(b, "<text x=\"%d\" y=\"%d\" class=\"legend\">"
		    "<tspan fill=\"#1f7a4d\">done</tspan> <tspan "
		    "fill=\"#c0392b\">failed</tspan> <tspan fill=\"#5a6ec2\">"
		    "oldest age</tspan></text>", z->left + pw / 2 - 60, z->h - 6);
	}
	console_chart_line(b, z, h, first, 0, max, "done");
	console_chart_line(b, z, h, first, 1, max, "failed");
	if (amax > 0)
		console_chart_line(b, z, h, first, 2, amax, "age");
	buf_puts(b, "</svg>");
}
