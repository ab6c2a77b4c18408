/*
 * objects.c - a bounded set of opened objects, by URL (see cache.h), for
 * a caller that opens object after object down a list: the hint's thread,
 * and the window checks of a new hint. An object is opened once and used
 * again until a read finds its version gone from the origin
 * (cache_object_stale()), so an order of a thousand chips over a dozen
 * files costs a dozen opens, not a thousand HEADs. What it fetches stays
 * pinned to the version (If-Match), so a changed object is found stale at
 * its first GET, never mixed; and what a reader is served is decided by
 * the reader's own open (the namespace's --ttl and proofs), not by these.
 * Where the cache has an opener (cache_set_opener()), objects are opened
 * through it: the namespace pins what it opens, as a reader's open does.
 *
 * Level 5 of the engine (engine_int.h): calls open.c and object.c.
 */
#include "cache/engine/engine_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cache_objects {
	size_t max, n;
	uint64_t clock;			/* bumped by each use */
	struct {
		char *url;		/* owned */
		struct cache_object *obj;	/* one reference */
		uint64_t used;		/* clock at its last use */
	} *v;
};

struct cache_objects *cache_objects_new(size_t max)
{
	struct cache_objects *s = calloc(1, sizeof(*s));
	if (!s || !(s->v = calloc(max ? max : 1, sizeof(*s->v)))) {
		free(s);
		return NULL;
	}
	s->max = max ? max : 1;
	return s;
}

/* The slot of URL in S, or s->n if none. */
static size_t slot_of(const struct cache_objects *s, const char *url)
{
	size_t i = 0;
	while (i < s->n && strcmp(s->v[i].url, url) != 0)
		i++;
	return i;
}

/* The object in slot I of S (s->n: none), marked used; NULL if none or
 * stale. */
static struct cache_object *use(struct cache_objects *s, size_t i)
{
	if (i == s->n || cache_object_stale(s->v[i].obj))
		return NULL;
	s->v[i].used = ++s->clock;
	return s->v[i].obj;
}

struct cache_object *cache_objects_get(struct cache_objects *s, const char *url)
{
	return use(s, slot_of(s, url));
}

int cache_objects_open(struct cache_objects *s, struct cache *c, const char *url,
		       const char *log_name, const struct cache_listed *listed, bool background,
		       struct cache_object **out)
{
	size_t slot = slot_of(s, url);
	*out = use(s, slot);
	if (*out)
		return 0;
	/* a stale one is opened again in its place; else a free slot, or
	   the least recently used */
	if (slot == s->n && s->n < s->max) {
		s->n++;
	} else if (slot == s->n) {
		slot = 0;
		for (size_t i = 1; i < s->n; i++)
			if (s->v[i].used < s->v[slot].used)
				slot = i;
	}
	struct cache_object *obj = NULL;
	char *copy = strdup(url);
	int err = !copy ? -ENOMEM :
		  c->opener ? c->opener(c->opener_arg, log_name, background, &obj) :
		  cache_object_open(c, url, log_name, listed, background, &obj);
	cache_object_unref(s->v[slot].obj);
	free(s->v[slot].url);
	s->v[slot].obj = err ? NULL : obj;
	s->v[slot].url = err ? NULL : copy;
	s->v[slot].used = ++s->clock;
	if (err) {
		free(copy);
		/* the slot stays empty: move the last one into it */
		s->v[slot] = s->v[--s->n];
		s->v[s->n].url = NULL;
		s->v[s->n].obj = NULL;
		return err;
	}
	*out = obj;
	return 0;
}

void cache_objects_free(struct cache_objects *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		cache_object_unref(s->v[i].obj);
		free(s->v[i].url);
	}
	free(s->v);
	free(s);
}
