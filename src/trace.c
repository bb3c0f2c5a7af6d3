/*
 * trace.c: W3C trace context (traceparent_column:).  A row may carry the
 * traceparent of the request that queued it; rowq passes it on to the
 * handler (TRACEPARENT for exec handlers; pipe handlers read the column
 * in the row's JSON) and logs its trace id (TRACE_ID=), so that the
 * handler's spans join that trace without an SDK in rowq.  A value that
 * is not a traceparent is not passed on: a handler must never see a
 * header it would reject or, worse, misparse.
 */
#include "rowq.h"

#include <string.h>

static bool
trace_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool
trace_zero(const char *s, size_t n)
{
	return strspn(s, "0") >= n;
}

/*
 * "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>", lower case,
 * neither id all zeros; a later version may add "-..." after the flags,
 * version ff is invalid (W3C Trace Context, traceparent).  On success the
 * trace id goes into trace_id (33 bytes).
 */
bool
trace_parse(const char *s, size_t len, char *trace_id)
{
	if (s == NULL || len < TRACEPARENT_LEN || len > TRACEPARENT_MAX)
		return false;
	if (!trace_hex(s, 2) || memcmp(s, "ff", 2) == 0 || s[2] != '-' ||
	    !trace_hex(s + 3, 32) || trace_zero(s + 3, 32) || s[35] != '-' ||
	    !trace_hex(s + 36, 16) || trace_zero(s + 36, 16) ||
	    s[52] != '-' || !trace_hex(s + 53, 2))
		return false;
	if (memcmp(s, "00", 2) == 0 ? len != TRACEPARENT_LEN :
	    len > TRACEPARENT_LEN && s[TRACEPARENT_LEN] != '-')
		return false;
	for (size_t i = TRACEPARENT_LEN; i < len; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	memcpy(trace_id, s + 3, 32);
	trace_id[32] = '\0';
	return true;
}
