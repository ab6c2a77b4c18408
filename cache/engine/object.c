/*
 * object.c - cache objects: one open version of one object, shared by every
 * file handle, in-flight entry and fetch that reads it (reference counted),
 * and object_cut(): how a cached version is cut, read from the index at
 * its first use rather than at its open.
 *
 * Why at first use: a mount opens (checks) every cached file a listing
 * shows (revalidation ahead), and a file's cut holds about 40 bytes per
 * tile (layout.h); a cache of a million tiles would cost the daemon 40 MB
 * before any read. Cut at first use, it costs that only for the files
 * readers read.
 *
 * Level 1 of the engine (engine_int.h): calls version.c and known.c.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/log.h"
#include "cache/store/store.h"
#include "cache/tiff/tiff.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct cache_object *object_new(struct cache *c, int64_t id, const char *url,
				const char *log_name, const struct version *v, time_t mtime)
{
	struct cache_object *obj = calloc(1, sizeof(*obj));
	if (!obj)
		return NULL;
	obj->url = strdup(url);
	obj->log_name = strdup(log_name);
	if (!obj->url || !obj->log_name) {
		free(obj->url);
		free(obj->log_name);
		free(obj);
		return NULL;
	}
	atomic_init(&obj->refs, 1);
	atomic_init(&obj->stale, false);
	atomic_init(&obj->whole_queued, false);
	atomic_init(&obj->complete, false);
	atomic_init(&obj->cut, false);
	pthread_mutex_init(&obj->cut_lock, NULL);
	obj->cache = c;
	obj->id = id;
	obj->version = *v;
	obj->mtime = mtime;
	return obj;
}

void object_mark_stale(struct cache_object *obj)
{
	atomic_store(&obj->stale, true);
	log_error("%s changed on the origin since it was opened; reopen it", obj->log_name);
}

struct cache_object *cache_object_ref(struct cache_object *obj)
{
	int before = atomic_fetch_add(&obj->refs, 1);
	assert(before > 0);
	(void)before;
	return obj;
}

void cache_object_unref(struct cache_object *obj)
{
	if (!obj)
		return;
	int before = atomic_fetch_sub(&obj->refs, 1);
	assert(before > 0);
	if (before != 1)
		return;
	layout_release(&obj->layout);
	pthread_mutex_destroy(&obj->cut_lock);
	free(obj->url);
	free(obj->log_name);
	free(obj);
}

uint64_t cache_object_size(const struct cache_object *obj)
{
	return obj->version.size;
}

time_t cache_object_mtime(const struct cache_object *obj)
{
	return obj->mtime;
}

bool listed_names(const struct cache_listed *listed, const char *etag, uint64_t size)
{
	return listed && listed->size >= 0 && (uint64_t)listed->size == size &&
	       etag_same(etag, listed->etag);
}

bool cache_object_listed(const struct cache_object *obj, const struct cache_listed *listed)
{
	return listed_names(listed, obj->version.etag, obj->version.size);
}

bool cache_object_same(const struct cache_object *a, const struct cache_object *b)
{
	return a && b && a->id == b->id;
}

bool cache_object_shared(const struct cache_object *obj)
{
	return atomic_load(&obj->refs) > 1;
}

bool cache_object_tiled(const struct cache_object *obj)
{
	return obj->tiled;
}

int64_t cache_object_id(const struct cache_object *obj)
{
	return obj->id;
}

bool cache_object_added(const struct cache_object *obj)
{
	return obj->added;
}

bool cache_object_stale(const struct cache_object *obj)
{
	return atomic_load(&obj->stale);
}

const struct layout *cache_object_layout(struct cache_object *obj)
{
	return object_cut(obj) == 0 ? &obj->layout : NULL;
}

/* Keep the first KNOWN_LOAD_MAX cached units of OBJ (cut) as known, not
 * yet checked, so that its first reads need no index query each: one query
 * now instead, of a bounded page of rows (the known map holds KNOWN_SLOTS
 * units of all objects anyway). A failure only means queries later. */
static void known_load(struct cache *c, const struct cache_object *obj)
{
	size_t n;
	struct index_unit *v = malloc(KNOWN_LOAD_MAX * sizeof(*v));
	uint64_t punches = store_punches(c->store);
	if (!v || index_units_from(c->index, obj->id, 0, v, KNOWN_LOAD_MAX, &n) != 0) {
		free(v);
		return;
	}
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++) {
		struct extent unit = layout_unit_at(&obj->layout, v[i].off);
		if (unit.off == v[i].off && unit.len == v[i].len)	/* else: not this cut */
			known_put(c, &v[i], punches, false);
	}
	pthread_mutex_unlock(&c->lock);
	free(v);
}

/* Cut OBJ as the index says (obj->legacy, obj->tiled and its tile map). */
static int cut_from_index(struct cache *c, struct cache_object *obj)
{
	uint64_t header_len = obj->header_len;
	void *blob = NULL;
	size_t blob_len = 0;
	struct tiff_map *map = NULL;

	if (obj->legacy) {
		layout_init_blocks(&obj->layout, obj->version.size, obj->block_size);
		return 0;
	}
	if (obj->tiled) {
		int err = index_object_map(c->index, obj->id, &header_len, &blob, &blob_len);
		if (err) {
			log_warn("%s: cannot read how the cache index cuts it (%s)", obj->log_name,
				 strerror(-err));
			return err == -ENOMEM ? err : -EIO;
		}
	}
	if (blob && tiff_map_decode(blob, blob_len, obj->version.size, &map) != 0)
		log_warn("%s: the cached tile map is damaged; reading it as plain bytes",
			 obj->log_name);
	free(blob);
	/* the map is taken over, even on failure */
	return layout_init(&obj->layout, obj->version.size, obj->block_size, header_len, map);
}

int object_cut(struct cache_object *obj)
{
	if (atomic_load_explicit(&obj->cut, memory_order_acquire))
		return 0;
	struct cache *c = obj->cache;
	int err = 0;
	pthread_mutex_lock(&obj->cut_lock);
	if (!atomic_load_explicit(&obj->cut, memory_order_relaxed)) {
		err = cut_from_index(c, obj);
		if (!err) {
			known_load(c, obj);
			atomic_store_explicit(&obj->cut, true, memory_order_release);
		}
	}
	pthread_mutex_unlock(&obj->cut_lock);
	return err;
}
