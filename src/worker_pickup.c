/*
 * worker_pickup.c: ready_at:, how long a row waited to be picked up:
 * from the moment its ready_at column says it became ready to the claim
 * that took it, into rowq_pickup_delay_seconds.
 *
 * The column is the server's: a number of Unix seconds (BIGINT, as
 * retry_at often is), or a DATETIME/TIMESTAMP as the server shows it, in
 * the session's time zone.  Both are read against the server's own clock,
 * not this host's: on each connection (and every PICKUP_CLOCK_EVERY_MS)
 * the worker asks the server for its time and its time zone's offset, so
 * that neither a skewed host clock nor a server in another zone bends
 * the figures.  Without ready_at: no statement, no figure.
 */
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Time zones change (DST): the offset is asked again this often. */
#define PICKUP_CLOCK_EVERY_MS	(10 * 60 * 1000)

/*
 * The moment a ready_at value means, in Unix microseconds (UTC): a
 * number is Unix seconds; text is "YYYY-MM-DD HH:MM:SS[.ffffff]" in a
 * zone tz_offset_s east of UTC.  -1 when it is neither.
 */
int64_t
pickup_ready_us(const char *v, size_t len, int64_t tz_offset_s)
{
	char text[64], *end;
	struct tm tm = { 0 };
	int frac_at = 0, n;

	if (v == NULL || len == 0 || len >= sizeof(text))
		return -1;
	memcpy(text, v, len);
	text[len] = '\0';
	double secs = strtod(text, &end);
	if (*end == '\0' && end != text)
		return secs < 0 ? -1 : (int64_t)(secs * 1e6);
	if (sscanf(text, "%4d-%2d-%2d %2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
	    &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return -1;
	int64_t us = 0;
	if (text[n] == '.') {
		frac_at = n + 1;
		for (int i = 0, scale = 100000; i < 6; i++, scale /= 10) {
			char c = text[frac_at + i];
			if (c < '0' || c > '9')
				break;
			us += (c - '0') * scale;
		}
	} else if (text[n] != '\0')
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	return ((int64_t)t - tz_offset_s) * 1000000 + us;
}

/* The server's clock, against ours, for the rows' ready_at values. */
void
pickup_clock_read(struct worker *w)
{
	struct rowset rs = { 0 };
	struct column *cols = NULL;
	size_t ncols = 0;

	if (w->q->ready_at.name == NULL)
		return;
	w->clock.known = false;
	if (db_query(w->db, "SELECT UNIX_TIMESTAMP(NOW(6)), "
	    "TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())", &rs, &cols,
	    &ncols) == DB_OK && ncols == 2 && rs.nrows == 1 &&
	    rs.rows[0].value[0] != NULL && rs.rows[0].value[1] != NULL) {
		double server_s = strtod(rs.rows[0].value[0], NULL);
		w->clock.skew_us = (int64_t)(server_s * 1e6) - wall_ms() * 1000;
		w->clock.tz_offset_s = atoll(rs.rows[0].value[1]);
		w->clock.read_ms = now_ms();
		w->clock.known = true;
	}
	rowset_free(&rs, ncols);
	columns_free(cols, ncols);
}

/* The claimed rows' pickup delays, by the server's clock. */
void
pickup_note(struct worker *w)
{
	const struct turn *t = &w->turn;
	int i = t->ready_index;

	if (i < 0 || w->args->stats == NULL)
		return;
	if (w->clock.known && now_ms() - w->clock.read_ms > PICKUP_CLOCK_EVERY_MS)
		pickup_clock_read(w);
	if (!w->clock.known)
		return;
	int64_t server_now = wall_ms() * 1000 + w->clock.skew_us;
	for (size_t k = 0; k < t->rows.nrows; k++) {
		const struct row *r = &t->rows.rows[k];
		int64_t ready = pickup_ready_us(r->value[i], r->len[i],
		    w->q->times_utc ? 0 : w->clock.tz_offset_s);
		if (ready >= 0)
			histogram_add(&w->args->stats->pickup,
			    server_now > ready ? server_now - ready : 0);
	}
}
