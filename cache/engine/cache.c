/*
 * cache.c - opening and closing the cache: the index, the store, the
 * persist thread (persist.c), the seal thread (seal.c) and the hint
 * (hint.c), whose thread starts with the first hint.
 *
 * The top of the engine (engine_int.h lists its files by level): it starts
 * the threads, which run the files below it, so no engine file calls it.
 * The read path starts in read.c.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/human.h"
#include "cache/base/log.h"
#include "cache/origin/providers/provider.h"
#include "cache/store/index.h"
#include "cache/store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* the least size_limit fit_disk() leaves: the least --cache-size */
#define FIT_MIN (1u << 20)


/*
 * Size the cache against its disk, before its threads start: if the size
 * limit, the reserve and the index are more than the file system holds
 * for the cache (store_room()), warn, naming them, and keep at most what
 * it holds for units (at least FIT_MIN), so that eviction, not a full
 * disk, bounds the cache. Units are written before eviction makes room
 * for them: the readahead window and the background GETs in flight are
 * cut to a quarter of that, or they alone would fill the disk.
 */
static void fit_disk(struct cache *c)
{
	struct store_room room;
	uint64_t data = 0;
	if (index_usage(c->index, &data) != 0 || store_room(c->store, data, &room) != 0)
		return;
	uint64_t over = room.reserve + room.index + LOG_RESERVE;	/* a log there */
	if (c->cfg.size_limit <= room.disk && room.disk - c->cfg.size_limit >= over)
		return;
	uint64_t fit = room.disk > over + FIT_MIN ? room.disk - over : FIT_MIN;
	char want[32], reserve[32], index[32], disk[32], used[32];
	log_warn("%s %s, with the cache's reserve (%s) and index (%s), is more than the "
		 "cache disk holds for it (%s): using %s", c->cfg.size_given ? "--cache-size" :
		 "the default cache size", human_bytes(c->cfg.size_limit, want, sizeof(want)),
		 human_bytes(room.reserve, reserve, sizeof(reserve)),
		 human_bytes(room.index, index, sizeof(index)),
		 human_bytes(room.disk, disk, sizeof(disk)), human_bytes(fit, used, sizeof(used)));
	c->cfg.size_limit = fit;
	if (c->cfg.readahead_max > fit / 4)
		c->cfg.readahead_max = fit / 4;
	uint64_t budget = fit / 4 > STREAM_GET_MAX ? fit / 4 : STREAM_GET_MAX;
	if (c->background_budget > budget)
		c->background_budget = budget;
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
	c->background_budget = (uint64_t)STREAM_GET_MAX * http_connections(http);
	c->queue_end = &c->queue_head;
	atomic_init(&c->mounted_bytes, UINT64_MAX);
	c->known = calloc(KNOWN_SLOTS, sizeof(*c->known));
	c->edges = calloc(EDGE_SLOTS, sizeof(*c->edges));
	c->hint = hint_new(c);
	if (!c->known || !c->edges || !c->hint) {
		free(c->edges);
		hint_free(c->hint);
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
	if (c->index && cfg->fit_disk && cfg->size_limit)
		fit_disk(c);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->evict_lock, NULL);
	pthread_cond_init(&c->changed, NULL);
	pthread_cond_init(&c->work, NULL);
	pthread_cond_init(&c->seal_work, NULL);
	if (pthread_create(&c->persister, NULL, persist_thread, c) != 0) {
		err = -EAGAIN;
		goto fail_thread;
	}
	pthread_setname_np(c->persister, "tilefs-persist");	/* for top -H, perf */
	if (pthread_create(&c->sealer, NULL, seal_thread, c) != 0) {
		pthread_mutex_lock(&c->lock);
		c->stopping = true;
		pthread_cond_signal(&c->work);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->persister, NULL);
		err = -EAGAIN;
		goto fail_thread;
	}
	pthread_setname_np(c->sealer, "tilefs-seal");
	*out = c;
	return 0;

fail_thread:
	pthread_cond_destroy(&c->seal_work);
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->changed);
	pthread_mutex_destroy(&c->evict_lock);
	pthread_mutex_destroy(&c->lock);
	store_close(c->store);
	index_close(c->index);
fail_index:
	hint_free(c->hint);
	free(c->edges);
	free(c->known);
fail_known:
	free(c);
	return err;
}

uint64_t cache_size_limit(const struct cache *c)
{
	return c->cfg.size_limit;
}

void cache_set_opener(struct cache *c, cache_open_fn fn, void *arg)
{
	c->opener = fn;
	c->opener_arg = arg;
}

void cache_close(struct cache *c)
{
	if (!c)
		return;
	hint_free(c->hint);	/* its thread opens objects and fetches */
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
	pthread_mutex_destroy(&c->evict_lock);
	pthread_mutex_destroy(&c->lock);
	free(c->edges);
	free(c->known);
	free(c);
}
