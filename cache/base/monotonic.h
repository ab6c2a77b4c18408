/*
 * monotonic.h - the clock for intervals: CLOCK_MONOTONIC, which no change
 * of the wall clock moves, for backoffs, deadlines and latencies (the
 * origin's retries and its tier's fallback time). Named after the clock
 * rather than "clock_", a prefix POSIX keeps for <time.h>.
 *
 * Layer: the base. Includes nothing else of tilefs (tests/check-layers).
 */
#ifndef TILEFS_MONOTONIC_H
#define TILEFS_MONOTONIC_H

#include <pthread.h>
#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC (since an unspecified start). */
uint64_t monotonic_ms(void);
/* Microseconds on the same clock. */
uint64_t monotonic_us(void);
/* Wait on COND (LOCK held) until it is signalled or MS milliseconds pass
 * (timed on CLOCK_REALTIME, a condition variable's clock by default). */
void cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, unsigned ms);

#endif
