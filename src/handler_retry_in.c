/*
 * handler_retry_in.c: a handler that knows when its row's next try should be (a
 * 429 with Retry-After, a greylist that lifts in five minutes) says so
 * with "retry-in N [message]": a pipe handler as its answer, an exec
 * handler as the last line of its stderr before it exits 75
 * (EX_TEMPFAIL).  N is seconds, or a duration such as 5m.  The try still
 * counts; worker_finish.c bounds the delay by retry.max_delay.
 *
 * A handler that knows that what it calls wants less (a 429 for the
 * whole account, not this row) says "throttle N [message]" as a pipe
 * handler's answer, or "throttle-in N [message]" as an exec handler's
 * last stderr line before exit 75: the row goes back without counting
 * as a try, and the queue (or the row's key) waits N (worker_limit.c).
 */
#include "handler.h"

#include <stdlib.h>
#include <string.h>

/*
 * Parse "WORD N [message]".  0 with *ms and *message (the text after
 * N, "" when none); 1 when the line is not a WORD line at all; -1
 * when it is one with a bad N.
 */
int
handler_word_parse(const char *line, const char *word, int64_t *ms,
    const char **message)
{
	size_t n = strlen(word);
	char number[32];
	const char *p, *end;

	if (strncmp(line, word, n) != 0 ||
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

int
retry_in_parse(const char *line, int64_t *ms, const char **message)
{
	return handler_word_parse(line, RETRY_IN_WORD, ms, message);
}

/*
 * The last line of an exec handler's stderr tail, if it is a WORD line
 * (RETRY_IN_WORD, THROTTLE_IN_WORD): *ms as above, its message copied
 * into message[len], and 0; else -1.  Only an exit 75 reads it, so an
 * older handler's chance line changes nothing.  The line is the tail's
 * whole last line, its message as long as the handler made it, as in a
 * pipe handler's answer.
 */
int
handler_stderr_word(const struct errsink *e, const char *word, int64_t *ms,
    char *message, size_t len)
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
	rc = handler_word_parse(line, word, ms, &msg) == 0 ? 0 : -1;
	if (rc == 0 && message != NULL)
		snprintf(message, len, "%s", msg);
	free(line);
	return rc;
}
