/*
 * monotonic.c - see monotonic.h: CLOCK_MONOTONIC in milli- and microseconds,
 * and a condition wait bounded in milliseconds.
 */
#include "cache/base/monotonic.h"

#include <time.h>

uint64_t monotonic_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t monotonic_ms(void)
{
	return monotonic_us() / 1000;
}

void cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, unsigned ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cond, lock, &until);
}
