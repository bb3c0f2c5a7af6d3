/*
 * handler_retry_in.c: a handler that knows when its row's next try should be (a
 * 429 with Retry-After, a greylist that lifts in five minutes) says so
 * with "retry-in N [message]": a pipe handler as its answer, an exec
 * handler as the last line of its stderr before it exits 75
 * (EX_TEMPFAIL).  N is seconds, or a duration such as 5m.  The try still
 * counts; worker_finish.c bounds the delay by retry.max_delay.
 */
#include "handler.h"

#include <stdlib.h>
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
 * older handler's chance line changes nothing.  The line is the tail's
 * whole last line, its message as long as the handler made it, as in a
 * pipe handler's answer.
 */
int
retry_in_from_stderr(const struct errsink *e, int64_t *ms)
{
	const char *t = e->tail.data, *msg;
	size_t n = e->tail.len, start;
	char *line;
	int rc;

	while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r'))
		n--;
	if (n == 0)
		return -1;
	for (start = n; start > 0 && t[start - 1] != '\n'; start--)
		;
	line = xstrndup(t + start, n - start);
	rc = retry_in_parse(line, ms, &msg) == 0 ? 0 : -1;
	free(line);
	return rc;
}
