/*
 * cache.c - opening and closing the cache (index, store, persist thread),
 * its counters, and the units this process found cached (the known map).
 * The read path starts in read.c; engine_int.h lists the engine's files
 * and the invariants they keep.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/log.h"
#include "cache/store/index.h"
#include "cache/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct known_unit *known_slot(struct cache *c, int64_t object_id, uint64_t off)
{
	uint64_t h = ((uint64_t)object_id * 0x9e3779b97f4a7c15ull) ^ (off * 0xff51afd7ed558ccdull);
	return &c->known[(h >> 32) & (KNOWN_SLOTS - 1)];
}

bool known_get(struct cache *c, int64_t object_id, uint64_t off, struct known_unit *out)
{
	const struct known_unit *k = known_slot(c, object_id, off);
	if (k->u.id == 0 || k->u.object_id != object_id || k->u.off != off)
		return false;
	*out = *k;
	return true;
}

bool known_put(struct cache *c, const struct index_unit *u, uint64_t punches, bool checked)
{
	struct known_unit *k = known_slot(c, u->object_id, u->off);
	/* a unit's id is never reused: checked once, its bytes are known good */
	checked |= k->u.id == u->id && k->checked;
	k->u = *u;
	k->punches = punches;
	k->checked = checked;
	return checked;
}

void cache_count_fetched(struct cache *c, uint64_t bytes)
{
	pthread_mutex_lock(&c->lock);
	c->stats.bytes_fetched += bytes;
	pthread_mutex_unlock(&c->lock);
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

int cache_open(const struct cache_config *cfg, struct source *src, struct http_client *http,
	       struct cache **out)
{
	struct cache *c = calloc(1, sizeof(*c));
	bool rebuilt;
	int err;

	if (!c)
		return -ENOMEM;
	c->cfg = *cfg;
	c->src = src;
	c->http = http;
	c->queue_end = &c->queue_head;
	atomic_init(&c->mounted_bytes, UINT64_MAX);
	c->known = calloc(KNOWN_SLOTS, sizeof(*c->known));
	c->edges = calloc(EDGE_SLOTS, sizeof(*c->edges));
	if (!c->known || !c->edges) {
		free(c->edges);
		err = -ENOMEM;
		goto fail_known;
	}
	err = index_open(cfg->dir, &c->index, &rebuilt);
	if (!err) {
		err = store_open(cfg->dir, index_instance(c->index), &c->store);
		if (err) {
			index_close(c->index);
			c->index = NULL;
		}
	}
	/* index_open() tried again what may pass: this will not. A busy or
	   locked index (another process: -EAGAIN, -EBUSY) fails the start,
	   saying so, as does a cache dir that is not private (-EPERM) */
	if (err && cfg->uncached_ok && err != -ENOMEM && err != -EPERM && err != -EAGAIN &&
	    err != -EBUSY) {
		log_error("cannot open the cache in %s (%s): reading every file from the origin, "
			  "uncached", cfg->dir, strerror(-err));
		err = 0;
	}
	if (err)
		goto fail_index;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->changed, NULL);
	pthread_cond_init(&c->work, NULL);
	pthread_cond_init(&c->seal_work, NULL);
	if (pthread_create(&c->persister, NULL, persist_thread, c) != 0) {
		err = -EAGAIN;
		goto fail_thread;
	}
	if (pthread_create(&c->sealer, NULL, seal_thread, c) != 0) {
		pthread_mutex_lock(&c->lock);
		c->stopping = true;
		pthread_cond_signal(&c->work);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->persister, NULL);
		err = -EAGAIN;
		goto fail_thread;
	}
	*out = c;
	return 0;

fail_thread:
	pthread_cond_destroy(&c->seal_work);
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->changed);
	pthread_mutex_destroy(&c->lock);
	store_close(c->store);
	index_close(c->index);
fail_index:
	free(c->edges);
	free(c->known);
fail_known:
	free(c);
	return err;
}

void cache_close(struct cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_cond_signal(&c->work);
	pthread_cond_signal(&c->seal_work);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->sealer, NULL);
	pthread_join(c->persister, NULL);
	store_close(c->store);
	index_close(c->index);
	pthread_cond_destroy(&c->seal_work);
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->changed);
	pthread_mutex_destroy(&c->lock);
	free(c->edges);
	free(c->known);
	free(c);
}

void cache_get_stats(struct cache *c, struct cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	pthread_mutex_unlock(&c->lock);
}
