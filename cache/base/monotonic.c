/*
 * monotonic.c - see monotonic.h: CLOCK_MONOTONIC in milli- and microseconds.
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
