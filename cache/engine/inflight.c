/*
 * inflight.c - what this process is fetching: the table of in-flight units
 * (one entry per unit, invariant E1), the list of slivers being fetched,
 * and the edges kept of slivers and spills (E3). Every function here runs
 * with c->lock held.
 *
 * Level 2 of the engine (engine_int.h): calls object.c only.
 */
#include "cache/engine/engine_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static size_t table_slot(int64_t object_id, uint64_t off)
{
	uint64_t h = (uint64_t)object_id * 0x9e3779b97f4a7c15ull ^ (off >> 12) * 0xff51afd7ed558ccdull;
	return (size_t)(h >> 32) % TABLE_SIZE;
}

struct inflight *table_find(struct cache *c, int64_t object_id, uint64_t off)
{
	for (struct inflight *e = c->table[table_slot(object_id, off)]; e; e = e->table_next)
		if (e->obj->id == object_id && e->unit.off == off)
			return e;
	return NULL;
}

/* An entry for the bytes of EXTENT of OBJ, with REFS refs; NULL if no memory. */
static struct inflight *entry_alloc(struct cache_object *obj, struct extent extent, int refs)
{
	struct inflight *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->buf = malloc(extent.len ? extent.len : 1);
	if (!e->buf) {
		free(e);
		return NULL;
	}
	e->obj = cache_object_ref(obj);
	e->unit = extent;
	e->state = UNIT_FETCHING;
	e->refs = refs;
	return e;
}

struct inflight *entry_new(struct cache *c, struct cache_object *obj, struct extent unit)
{
	struct inflight *e = entry_alloc(obj, unit, 2);
	if (!e)
		return NULL;
	size_t slot = table_slot(obj->id, unit.off);
	e->table_next = c->table[slot];
	c->table[slot] = e;
	return e;
}

void entry_joined(struct cache *c, struct inflight *e)
{
	e->ahead = false;	/* nothing to keep it for now */
	if (e->stored_id > 0)
		unit_read_now(c, e->stored_id);
}

void table_remove(struct cache *c, struct inflight *e)
{
	struct inflight **link = &c->table[table_slot(e->obj->id, e->unit.off)];
	while (*link != e)
		link = &(*link)->table_next;
	*link = e->table_next;
	entry_unref(e);		/* the table's ref */
}

struct inflight *sliver_find(struct cache *c, const struct cache_object *obj, struct extent part)
{
	for (struct inflight *e = c->slivers; e; e = e->sliver_next)
		if (e->obj->id == obj->id && part.off >= e->unit.off &&
		    part.off + part.len <= e->unit.off + e->unit.len)
			return e;
	return NULL;
}

struct inflight *sliver_new(struct cache *c, struct cache_object *obj, struct extent part)
{
	struct inflight *e = entry_alloc(obj, part, 2);
	if (e) {
		e->sliver = true;
		e->sliver_next = c->slivers;
		c->slivers = e;
	}
	return e;
}

void entry_unref(struct inflight *e)
{
	assert(e->refs > 0);
	if (--e->refs > 0)
		return;
	cache_object_unref(e->obj);
	free(e->buf);
	free(e);
}

void entry_settle(struct cache *c, struct inflight *e, int err, bool persist)
{
	e->state = err ? UNIT_FAILED : UNIT_READY;
	e->err = err;
	if (e->sliver) {
		struct inflight **link = &c->slivers;
		while (*link != e)
			link = &(*link)->sliver_next;
		*link = e->sliver_next;
		pthread_cond_broadcast(&c->changed);
		entry_unref(e);		/* the list's ref */
		return;
	}
	e->persist = persist && !err;
	e->queue_next = NULL;
	*c->queue_end = e;
	c->queue_end = &e->queue_next;
	pthread_cond_broadcast(&c->changed);
	pthread_cond_signal(&c->work);
}

/* Copy [off, off+len) of OBJ from the edges in memory; false if none has it. */
bool edge_get(struct cache *c, const struct cache_object *obj, uint64_t off, size_t len, char *dst)
{
	for (size_t i = 0; i < EDGE_SLOTS; i++) {
		const struct edge *s = &c->edges[i];
		if (s->len && s->object_id == obj->id && off >= s->off &&
		    off + len <= s->off + s->len) {
			memcpy(dst, s->buf + (off - s->off), len);
			return true;
		}
	}
	return false;
}

size_t edge_head(struct cache *c, const struct cache_object *obj, uint64_t off, size_t max,
		 char *dst)
{
	const struct edge *best = NULL;
	size_t have = 0;
	for (size_t i = 0; i < EDGE_SLOTS; i++) {
		const struct edge *s = &c->edges[i];
		if (!s->len || s->object_id != obj->id || off < s->off || off >= s->off + s->len)
			continue;
		size_t n = (size_t)(s->off + s->len - off);
		n = n < max ? n : max;
		if (n > have) {
			best = s;
			have = n;
		}
	}
	if (best)
		memcpy(dst, best->buf + (off - best->off), have);
	return have;
}

size_t edge_tail(struct cache *c, const struct cache_object *obj, uint64_t end, size_t max,
		 char *dst_end)
{
	const struct edge *best = NULL;
	size_t have = 0;
	for (size_t i = 0; i < EDGE_SLOTS; i++) {
		const struct edge *s = &c->edges[i];
		if (!s->len || s->object_id != obj->id || end <= s->off || end > s->off + s->len)
			continue;
		size_t n = (size_t)(end - s->off);
		n = n < max ? n : max;
		if (n > have) {
			best = s;
			have = n;
		}
	}
	if (best)
		memcpy(dst_end - have, best->buf + (end - have - best->off), have);
	return have;
}

/* Keep LEN bytes at OFF of OBJ (at most PLAN_SLIVER_MAX) in memory, in
 * place of the oldest kept. */
static void edge_put(struct cache *c, const struct cache_object *obj, uint64_t off, size_t len,
		     const char *src)
{
	struct edge *s = &c->edges[c->next_edge++ % EDGE_SLOTS];
	s->object_id = obj->id;
	s->off = off;
	s->len = len;
	memcpy(s->buf, src, len);
}

void edge_keep(struct cache *c, const struct cache_object *obj, uint64_t off, size_t len,
	       const char *src)
{
	if (len == 0 || len > PLAN_SLIVER_MAX)
		return;
	edge_put(c, obj, off, len, src);
	if (obj->id <= 0 || c->nedges_to_keep >= EDGES_TO_KEEP_MAX)
		return;		/* nowhere to keep it, or the index is behind: memory only */
	struct edge *e = malloc(sizeof(*e));
	if (!e)
		return;
	e->object_id = obj->id;
	e->off = off;
	e->len = len;
	memcpy(e->buf, src, len);
	e->next = c->edges_to_keep;
	c->edges_to_keep = e;
	c->nedges_to_keep++;
	pthread_cond_signal(&c->work);
}
