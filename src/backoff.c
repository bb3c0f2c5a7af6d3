/*
 * backoff.c: how long to wait after a failure, as pure functions of counts,
 * so that tests can check them without sleeping.
 */
#include "rowq.h"

#include <fcntl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* base * 2^(failures-1), capped; 0 failures means no wait. */
int64_t
backoff_capped_ms(int64_t base_ms, int64_t max_ms, int failures)
{
	int64_t d = base_ms;

	if (failures <= 0)
		return 0;
	for (int i = 1; i < failures && d < max_ms; i++)
		d *= 2;
	return d < max_ms ? d : max_ms;
}

/*
 * The delay before try `attempt + 1`, after try `attempt` (from 1) failed.
 * Jitter is "full jitter": uniform in [0, delay], so that a burst of rows
 * that failed together (a gateway outage) does not come back together.
 */
int64_t
backoff_retry_delay_ms(const struct retry_policy *p, int attempt,
    uint64_t random)
{
	int64_t d;

	if (attempt < 1)
		attempt = 1;
	switch (p->backoff) {
	case BACKOFF_FIXED:
		d = p->delay_ms;
		break;
	case BACKOFF_LINEAR:
		d = p->delay_ms > p->max_delay_ms / attempt ?
		    p->max_delay_ms : p->delay_ms * attempt;
		break;
	case BACKOFF_EXPONENTIAL:
	default:
		d = backoff_capped_ms(p->delay_ms, p->max_delay_ms, attempt);
		break;
	}
	if (d > p->max_delay_ms)
		d = p->max_delay_ms;
	if (p->jitter && d > 0)
		d = (int64_t)(random % ((uint64_t)d + 1));
	return d;
}

/* Randomness for jitter only: never for anything secret. */
uint64_t
backoff_random(void)
{
	static uint64_t state;

	if (state == 0) {
		struct timespec ts;
		if (getrandom(&state, sizeof(state), GRND_NONBLOCK) !=
		    (ssize_t)sizeof(state)) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			state = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
		}
		state |= 1;
	}
	/* xorshift64* */
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 0x2545F4914F6CDD1DULL;
}
