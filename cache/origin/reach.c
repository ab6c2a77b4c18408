/*
 * reach.c - see reach.h: the origin's outage state, kept with atomics.
 */
#include "cache/origin/reach.h"

#include <errno.h>

int reach_classify(long status, int verdict)
{
	if (status >= 500 || status == 429 || status == 408)
		return -1;
	if (status > 0)
		return 1;	/* the origin spoke, whatever it said */
	/* no answer: connection refused or reset, timeout, name not resolved;
	   a TLS trust failure (-EPERM), a write error or a cancel is ours */
	return verdict == -EAGAIN || verdict == -EIO ? -1 : 0;
}

bool reach_note(struct reach *r, int kind, uint64_t now_ms, uint64_t *down_for_ms)
{
	if (kind < 0) {
		uint_fast64_t up = 0;
		atomic_store(&r->probe_at_ms, now_ms + REACH_PROBE_MS);
		return atomic_compare_exchange_strong(&r->down_since_ms, &up,
						      now_ms ? now_ms : 1);
	}
	if (kind == 0)
		return false;
	uint_fast64_t since = atomic_exchange(&r->down_since_ms, 0);
	if (since && down_for_ms)
		*down_for_ms = now_ms > since ? now_ms - since : 0;
	return since != 0;
}

bool reach_down(struct reach *r)
{
	return atomic_load(&r->down_since_ms) != 0;
}

bool reach_probe_due(struct reach *r, uint64_t now_ms)
{
	uint_fast64_t at = atomic_load(&r->probe_at_ms);
	return reach_down(r) && now_ms >= at &&
	       atomic_compare_exchange_strong(&r->probe_at_ms, &at, now_ms + REACH_PROBE_MS);
}

void reach_count_stale(struct reach *r)
{
	atomic_fetch_add(&r->stale_answers, 1);
}
