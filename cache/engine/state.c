/*
 * state.c - what every engine file may ask of the cache: its directory,
 * whether it reads uncached, the prefetch policy a read follows now (and
 * the policies' names), the mounted bytes that policy weighs, and the
 * counters.
 *
 * Level 0 of the engine (engine_int.h): calls no other engine file, so any
 * of them may call it.
 */
#include "cache/engine/engine_int.h"

#include <errno.h>
#include <string.h>

int cache_prefetch_parse(const char *name, enum prefetch_policy *out)
{
	static const char *const names[] = { "none", "neighbors", "row", "object", "auto" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0) {
			*out = (enum prefetch_policy)i;
			return 0;
		}
	return -EINVAL;
}

void cache_count_fetched(struct cache *c, uint64_t bytes)
{
	pthread_mutex_lock(&c->lock);
	c->stats.bytes_fetched += bytes;
	pthread_mutex_unlock(&c->lock);
}

void unit_read_now(struct cache *c, int64_t unit_id)
{
	/* a unit read in several reads in a row counts once */
	if (c->ntouched < TOUCH_MAX && (!c->ntouched || c->touched[c->ntouched - 1] != unit_id))
		c->touched[c->ntouched++] = unit_id;
}

void cache_set_mounted_bytes(struct cache *c, uint64_t bytes)
{
	atomic_store(&c->mounted_bytes, bytes);
}

enum prefetch_policy prefetch_policy(struct cache *c)
{
	if (c->cfg.prefetch != PREFETCH_AUTO)
		return c->cfg.prefetch;
	/* Under a tier, what a host asks for must depend on what its readers
	 * read and the file's cut alone: a stream cut short (an unmount, an
	 * eviction) would leave each host a different rest to ask the store
	 * for, and the first host would pay the store for whole files. */
	if (c->cfg.tier_keys)
		return PREFETCH_NONE;
	return atomic_load(&c->mounted_bytes) <= c->cfg.size_limit ? PREFETCH_OBJECT : PREFETCH_NONE;
}

const char *cache_dir(const struct cache *c)
{
	return c->cfg.dir;
}

bool cache_uncached(const struct cache *c)
{
	return !c->index;	/* the store layer's "no index" (index.h) */
}

void cache_get_stats(struct cache *c, struct cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	pthread_mutex_unlock(&c->lock);
}
