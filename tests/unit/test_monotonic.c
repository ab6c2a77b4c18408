/* test_monotonic.c - the base's interval clock: CLOCK_MONOTONIC in ms and
 * us, never going back, and at least as far on as a sleep. */
#include "cache/base/monotonic.h"
#include "check.h"

#include <stdint.h>
#include <time.h>

static uint64_t reference_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int main(void)
{
	uint64_t before = reference_us();
	uint64_t us = monotonic_us(), ms = monotonic_ms();
	uint64_t after = reference_us();
	CHECK(before <= us && us <= after, "us on CLOCK_MONOTONIC: %llu in [%llu, %llu]",
	      (unsigned long long)us, (unsigned long long)before, (unsigned long long)after);
	CHECK(before / 1000 <= ms && ms <= after / 1000, "ms on the same clock: %llu",
	      (unsigned long long)ms);

	int backwards = 0;
	uint64_t last = monotonic_us();
	for (int i = 0; i < 100000; i++) {
		uint64_t now = monotonic_us();
		backwards += now < last;
		last = now;
	}
	CHECK(backwards == 0, "never goes back (%d times)", backwards);

	/* a sleep lasts at least what was asked: a lower bound, whatever the load */
	uint64_t start = monotonic_ms();
	struct timespec nap = { 0, 50 * 1000000L };
	while (nanosleep(&nap, &nap) != 0)
		;
	uint64_t slept = monotonic_ms() - start;
	CHECK(slept >= 49, "a 50 ms sleep moves it on: %llu ms", (unsigned long long)slept);
	return check_done();
}
