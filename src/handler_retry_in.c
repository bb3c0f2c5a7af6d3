/*
 * handler_retry_in.c: a handler that knows when its row's next try should be (a
 * 429 with Retry-After, a greylist that lifts in five minutes) says so
 * with "retry-in N [message]": a pipe handler as its answer, an exec
 * handler as the last line of its stderr before it exits 75
 * (EX_TEMPFAIL).  N is seconds, or a duration such as 5m.  The try still
 * counts; worker_finish.c bounds the delay by retry.max_delay.
 */
#include "handler.h"

#include <string.h>

#define RETRY_IN_WORD	"retry-in"

/*
 * Parse "retry-in N [message]".  0 with *ms and *message (the text after
 * N, "" when none); 1 when the line is not a retry-in line at all; -1
 * when it is one with a bad N.
 */
int
retry_in_parse(const char *line, int64_t *ms, const char **message)
{
	size_t n = strlen(RETRY_IN_WORD);
	char number[32];
	const char *p, *end;

	if (strncmp(line, RETRY_IN_WORD, n) != 0 ||
	    (line[n] != ' ' && line[n] != '\0'))
		return 1;
	p = line + n;
	while (*p == ' ')
		p++;
	end = p + strcspn(p, " ");
	if (end == p || (size_t)(end - p) >= sizeof(number))
		return -1;
	memcpy(number, p, (size_t)(end - p));
	number[end - p] = '\0';
	if (duration_parse(number, ms) == -1 || *ms < 0)
		return -1;
	while (*end == ' ')
		end++;
	*message = end;
	return 0;
}

/*
 * The last line of an exec handler's stderr tail, if it asks for a
 * delay: *ms as above and 0; else -1.  Only an exit 75 reads it, so an
 * older handler's chance line changes nothing.
 */
int
retry_in_from_stderr(const struct errsink *e, int64_t *ms)
{
	const char *t = e->tail.data, *msg;
	size_t n = e->tail.len, start;
	/*
	 * Zeroed for scan-build, which cannot tell that strncmp matched
	 * "retry-in" only in a line at least that long, and so reports the
	 * byte after it as uninitialized in retry_in_parse.
	 */
	char line[128] = "";

	while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r'))
		n--;
	if (n == 0)
		return -1;
	for (start = n; start > 0 && t[start - 1] != '\n'; start--)
		;
	if (n - start >= sizeof(line))
		return -1;
	memcpy(line, t + start, n - start);
	line[n - start] = '\0';
	return retry_in_parse(line, ms, &msg) == 0 ? 0 : -1;
}
