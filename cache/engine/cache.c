/*
 * cache.c - opening and closing the cache (index, store, persist thread),
 * its counters, and the set of units checked since this process started.
 * The read path starts in read.c; engine_int.h lists the engine's files
 * and the invariants they keep.
 */
#include "cache/engine/engine_int.h"
#include "cache/store/index.h"
#include "cache/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool verified_has(struct cache *c, int64_t id)
{
	for (size_t i = (size_t)id & (VERIFIED_SLOTS - 1);; i = (i + 1) & (VERIFIED_SLOTS - 1)) {
		if (c->verified[i] == id)
			return true;
		if (c->verified[i] == 0)
			return false;
	}
}

void verified_add(struct cache *c, int64_t id)
{
	if (c->nverified >= VERIFIED_SLOTS / 2) {
		/* full: forget all; units are simply checked again */
		memset(c->verified, 0, VERIFIED_SLOTS * sizeof(*c->verified));
		c->nverified = 0;
	}
	size_t i = (size_t)id & (VERIFIED_SLOTS - 1);
	while (c->verified[i] != 0 && c->verified[i] != id)
		i = (i + 1) & (VERIFIED_SLOTS - 1);
	if (c->verified[i] == 0) {
		c->verified[i] = id;
		c->nverified++;
	}
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
	return atomic_load(&c->mounted_bytes) <= c->cfg.size_limit ? PREFETCH_OBJECT : PREFETCH_NONE;
}

const char *cache_dir(const struct cache *c)
{
	return c->cfg.dir;
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
	c->verified = calloc(VERIFIED_SLOTS, sizeof(*c->verified));
	c->edges = calloc(EDGE_SLOTS, sizeof(*c->edges));
	if (!c->verified || !c->edges) {
		free(c->edges);
		err = -ENOMEM;
		goto fail_verified;
	}
	err = index_open(cfg->dir, &c->index, &rebuilt);
	if (err)
		goto fail_index;
	err = store_open(cfg->dir, index_instance(c->index), &c->store);
	if (err)
		goto fail_store;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->changed, NULL);
	pthread_cond_init(&c->work, NULL);
	if (pthread_create(&c->persister, NULL, persist_thread, c) != 0) {
		err = -EAGAIN;
		goto fail_thread;
	}
	*out = c;
	return 0;

fail_thread:
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->changed);
	pthread_mutex_destroy(&c->lock);
	store_close(c->store);
fail_store:
	index_close(c->index);
fail_index:
	free(c->edges);
	free(c->verified);
fail_verified:
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
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->persister, NULL);
	store_close(c->store);
	index_close(c->index);
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->changed);
	pthread_mutex_destroy(&c->lock);
	free(c->edges);
	free(c->verified);
	free(c);
}

void cache_get_stats(struct cache *c, struct cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	pthread_mutex_unlock(&c->lock);
}
