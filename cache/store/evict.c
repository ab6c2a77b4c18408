/*
 * evict.c - see evict.h: the eviction policy's decisions, pure.
 */
#include "cache/store/evict.h"

uint64_t evict_target(uint64_t limit)
{
	return limit - limit / 20;
}

int64_t evict_hits_fetched(const struct evict_count *ghost, int64_t now)
{
	if (!ghost)
		return 1;
	return ghost->hits + (ghost->last_access < now - EVICT_HIT_GAP_S);
}

bool evict_admit(const struct evict_count *ghost, const struct evict_count *victim,
		 int64_t now)
{
	if (!victim)
		return true;	/* nothing admitted to displace */
	if (!ghost)
		return false;	/* never seen: a scan, or the first pass */
	if (ghost->hits > victim->hits + EVICT_ADMIT_MARGIN)
		return true;
	/* within the margin, or fewer: the resident stays, unless the set moved
	   on from it (its idle time dwarfs the candidate's reuse interval;
	   whole seconds, so at least one) */
	int64_t interval = now - ghost->last_access;
	if (interval < 1)
		interval = 1;
	return now - victim->last_access > EVICT_IDLE_FACTOR * interval;
}
