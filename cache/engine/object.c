/*
 * object.c - cache objects: one open version of one object, shared by every
 * file handle, in-flight entry and fetch that reads it (reference counted).
 *
 * Level 1 of the engine (engine_int.h): calls version.c only.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/log.h"

#include <assert.h>
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
	return obj->layout.map != NULL;
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

const struct layout *cache_object_layout(const struct cache_object *obj)
{
	return &obj->layout;
}
