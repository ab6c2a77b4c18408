/*
 * read.c - cache_read(): each unit a read touches that is on its way (in
 * the table) is joined, asking the index nothing. Any other is looked up
 * first in the known map (known.c), the units this process has found
 * cached, each kept with the count of punches (store_punches()) made in
 * the cache dir before its row was seen. While that count has not moved,
 * no process can have evicted the unit (eviction drops the row before it
 * counts the punch of its bytes, unit.h invariant 3), so a hit asks the
 * index nothing. A unit not in the map, or seen before a punch since
 * counted, is looked up in the index and kept in the map. A file cached
 * before this process opened it has its first units loaded into the map
 * at its first read, in one query (object_cut()).
 *
 * A hit is read from the object's data file. The first read of a unit in
 * this process reads all of it and checks its CRC32C (a crash or power cut
 * can leave a data file behind its index row); later reads take just the
 * bytes asked for and, if a punch was counted since the row was seen, look
 * the row up again (unit.h invariant 4), so that a unit evicted meanwhile
 * by any process is never served.
 *
 * A miss becomes an in-flight entry (inflight.c), or joins one; the entries
 * this read made are claimed in the index (others' claims are waited for),
 * the prefetch policy and the readahead window add theirs, and fetch.c
 * sends them. The read then waits for its entries and copies their bytes.
 * A unit another process claimed is waited for here until it lands in the
 * index, or that process gives up and this one claims and fetches it; past
 * the claim wait, this one fetches it for its read alone and stores
 * nothing, as a live process's claim is never taken over (unit.h,
 * invariant 8).
 *
 * Level 5 of the engine (engine_int.h): calls stream.c (whole-object
 * prefetch), fetch.c and what lies under them.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/log.h"
#include "cache/store/index.h"
#include "cache/store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Copy PART of OBJ from a kept edge (in memory, else in the index) into
 * DST; 0, or -ENOENT. Takes c->lock. Edges are keyed by the object id, so
 * by version (invariant E3). */
static int edge_read(struct cache *c, const struct cache_object *obj, struct extent part,
		     char *dst)
{
	pthread_mutex_lock(&c->lock);
	bool found = edge_get(c, obj, part.off, (size_t)part.len, dst);
	pthread_mutex_unlock(&c->lock);
	if (found)
		return 0;
	if (obj->id < 0 || index_edge_get(c->index, obj->id, part.off, (size_t)part.len, dst) != 0)
		return -ENOENT;
	pthread_mutex_lock(&c->lock);
	c->stats.hits++;
	c->stats.bytes_served += part.len;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/*
 * Copy [part_off, part_off+part_len) of UNIT from the cache into DST.
 * 0 on a hit; -ENOENT (or another error, logged) means: fetch it.
 *
 * A unit known from an earlier read, with no punch counted since its row
 * was seen, is read without asking the index: its row still stands. Else
 * its row is looked up. Bytes not checked whole before are read whole and
 * checked; bytes read unchecked are served only if no punch was counted
 * since the row was seen, or the row is still the same (unit.h invariant 4).
 */
static int read_cached(struct cache *c, struct cache_object *obj, struct extent unit, char *dst,
		       uint64_t part_off, size_t part_len)
{
	struct known_unit k;
	struct index_unit u, again;
	if (obj->id < 0)
		return -ENOENT;
	uint64_t punches = store_punches(c->store);
	pthread_mutex_lock(&c->lock);
	bool known = known_get(c, obj->id, unit.off, &k);
	pthread_mutex_unlock(&c->lock);
	bool checked;
	if (known && k.punches == punches) {
		u = k.u;
		checked = k.checked;
	} else {
		int err = index_unit_find(c->index, obj->id, unit.off, &u);
		if (err)
			return err;
		if (u.len != unit.len) {
			index_unit_drop(c->index, u.id);	/* not this cut: its bytes are not ours */
			return -ENOENT;
		}
		pthread_mutex_lock(&c->lock);
		checked = known_put(c, &u, punches, false);
		pthread_mutex_unlock(&c->lock);
	}
	int err;
	if (!checked) {
		char *whole = malloc(u.len);
		if (!whole)
			return -ENOMEM;
		err = load_unit(c, obj, &u, punches, whole);
		if (!err)
			memcpy(dst, whole + (part_off - unit.off), part_len);
		free(whole);
	} else {
		err = store_read(c->store, obj->id, dst, part_len, part_off);
		if (err)
			index_unit_drop(c->index, u.id);	/* its bytes are gone */
	}
	if (err)
		return err;
	/* evicted while we read? (eviction drops the row before the bytes)
	   Bytes just checked against the row's checksum are right anyway. */
	if (checked && store_punches(c->store) != punches &&
	    (index_unit_find(c->index, obj->id, unit.off, &again) != 0 || again.id != u.id))
		return -ENOENT;
	pthread_mutex_lock(&c->lock);
	unit_read_now(c, u.id);
	c->stats.hits++;
	c->stats.bytes_served += part_len;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/*
 * PART of E's unit, whose bytes its fetch thread stored and whose buffer
 * it let go, read from the data file into DST: served only if no punch
 * was counted since before they were written (E5). Else waits for E to leave the
 * table: its unit is then cached, or given up. c->lock held (let go
 * meanwhile); returns whether PART was served.
 */
static bool read_written(struct cache *c, struct inflight *e, struct extent part, char *dst)
{
	e->refs++;
	pthread_mutex_unlock(&c->lock);
	bool served = store_read(c->store, e->obj->id, dst, (size_t)part.len, part.off) == 0 &&
		      store_punches(c->store) == e->written_punches;
	pthread_mutex_lock(&c->lock);
	if (served) {
		entry_joined(c, e);	/* read now, as by a reader that joined it */
		c->stats.bytes_served += part.len;
	}
	while (!served && table_find(c, e->obj->id, e->unit.off) == e)
		pthread_cond_wait(&c->changed, &c->lock);
	entry_unref(e);
	return served;
}

/* One cache_read() on its way. */
struct read_op {
	struct cache *c;
	struct cache_object *obj;
	uint64_t stream, off;
	size_t len;
	char *buf;
	enum prefetch_policy policy;	/* prefetch_policy() when it started */
	size_t n;			/* units the read touches */
	struct inflight **entries;	/* [n]: the entry part i waits for, or NULL */
	struct inflight **fetch;	/* [n + PREFETCH_MAX]: to fetch */
	size_t nfetch;
	struct inflight **others;	/* [n]: claimed by other processes */
	size_t nwait;
};

/* The part of unit UNIT that read R wants from P on: up to its end. */
static uint64_t part_end(const struct read_op *r, struct extent unit)
{
	return unit.off + unit.len < r->off + r->len ? unit.off + unit.len : r->off + r->len;
}

/* Serve the hits of R and find an entry for each miss (joining those in
 * flight). 0 or -ENOMEM (the entries found so far are still fetched). */
static int read_lookup(struct read_op *r)
{
	struct cache *c = r->c;
	struct cache_object *obj = r->obj;

	pthread_mutex_lock(&c->lock);
	uint64_t last_end = plan_stream(obj->streams, STREAMS, &obj->stream_clock, r->stream)->end;
	pthread_mutex_unlock(&c->lock);
	bool goes_on = r->off == last_end;
	bool reading = false;		/* an earlier unit of this read is wanted */
	uint64_t p = r->off;
	for (size_t i = 0; i < r->n; i++) {
		struct extent unit = layout_unit_at(&obj->layout, p);
		uint64_t end = part_end(r, unit);
		struct extent part = { p, end - p };
		char *dst = r->buf + (p - r->off);
		/* a streamed object gets every unit whole: no byte twice */
		bool sliver = r->policy != PREFETCH_OBJECT &&
			      plan_sliver(r->n, i, part.len, unit.len,
					  layout_is_tile(&obj->layout, p), goes_on, reading);
		reading |= !sliver;
		p = end;
		struct inflight *e = NULL;
		bool served = false;
		/* the table, then the cache; and if the cache misses, the
		   table once more: a unit on its way is joined without asking
		   the index, and one whose entry stored it and left the table
		   since the first look (E1) is found in the cache */
		for (int look = 0; look < 2; look++) {
			pthread_mutex_lock(&c->lock);	/* held on past the loop */
			while ((e = table_find(c, obj->id, unit.off)) && e->state == UNIT_FAILED)
				pthread_cond_wait(&c->changed, &c->lock);	/* (E1) */
			if (e && !e->buf && e->state == UNIT_READY) {	/* stored, its
								   buffer let go (E5, E6) */
				served = read_written(c, e, part, dst);
				c->stats.hits += served;	/* a stored unit */
				pthread_mutex_unlock(&c->lock);
				if (served)
					break;
				look = -1;	/* it has left the table: look anew */
				continue;
			}
			if (e || look == 1)
				break;
			pthread_mutex_unlock(&c->lock);
			served = read_cached(c, obj, unit, dst, part.off, (size_t)part.len) == 0 ||
				 (sliver && edge_read(c, obj, part, dst) == 0);
			if (served)
				break;
		}
		if (served)
			continue;
		if (e && e->state == UNIT_READY)
			c->stats.hits++;	/* stored, its bytes still in memory */
		if (!e && sliver)
			e = sliver_find(c, obj, part);
		if (e) {
			e->refs++;
			entry_joined(c, e);
		} else if (sliver) {
			e = sliver_new(c, obj, part);
			if (e)
				r->fetch[r->nfetch++] = e;
		} else {
			e = entry_new(c, obj, unit);
			if (e) {
				r->fetch[r->nfetch++] = e;
				c->stats.misses++;
			}
		}
		pthread_mutex_unlock(&c->lock);
		if (!e)
			return -ENOMEM;
		r->entries[i] = e;
	}
	return 0;
}

/* Claim R's misses in the index; leave to others what they claimed. */
static void read_claim(struct read_op *r)
{
	size_t kept = 0;
	for (size_t i = 0; i < r->nfetch; i++) {
		struct inflight *e = r->fetch[i];
		int rc = e->sliver ? 0 : entry_claim(r->c, r->obj, e);
		if (rc == -EBUSY || rc == -EEXIST)
			r->others[r->nwait++] = e;	/* another process has it */
		else
			r->fetch[kept++] = e;
	}
	r->nfetch = kept;
}

/* Add to R's fetches what the prefetch policy and the readahead window
 * want; they are fetched with the read's misses, in the same GETs. */
static void read_prefetch(struct read_op *r)
{
	struct cache *c = r->c;
	struct cache_object *obj = r->obj;
	size_t cap = r->n + PREFETCH_MAX, nmiss = r->nfetch;
	uint64_t budget = PLAN_PREFETCH_BYTES_MAX;
	enum prefetch_policy policy = r->policy;

	/* a streamed object: a miss, or any read of a tile (all hits, say,
	 * after a remount cut its stream short), sees to it that the rest is
	 * on its way; reading a header (an open for metadata) does not */
	if (policy == PREFETCH_OBJECT && !atomic_load(&obj->complete) &&
	    (nmiss > 0 || layout_is_tile(&obj->layout, r->off)))
		object_prefetch_start(c, obj);
	enum layout_relation relation;
	bool related_tiles = plan_related(policy, &relation);
	for (size_t i = 0; i < nmiss && related_tiles; i++) {
		if (r->fetch[i]->sliver)
			continue;
		struct extent related[PREFETCH_MAX];
		size_t room = cap - r->nfetch;
		size_t k = layout_related(&obj->layout, r->fetch[i]->unit.off, relation,
					  related, room < PREFETCH_MAX ? room : PREFETCH_MAX);
		k = plan_prefetch_fit(related, k, &budget);
		r->nfetch += prefetch_entries(c, obj, related, k, false, r->fetch + r->nfetch);
	}

	struct readahead_read rr = {
		.off = r->off, .end = r->off + r->len,
		.tile = layout_is_tile(&obj->layout, r->off),
		.block_size = obj->layout.block_size,
		.object_size = obj->version.size,
		.window_max = c->cfg.readahead_max,
	};
	pthread_mutex_lock(&c->lock);
	struct extent ra = plan_readahead(plan_stream(obj->streams, STREAMS, &obj->stream_clock,
						      r->stream), &rr);
	pthread_mutex_unlock(&c->lock);
	if (ra.len)
		log_debug("%s: reading ahead %" PRIu64 " bytes at %" PRIu64, obj->log_name, ra.len,
			  ra.off);
	uint64_t q = ra.off;
	size_t k = 0, room = cap - r->nfetch < PREFETCH_MAX ? cap - r->nfetch : PREFETCH_MAX;
	struct extent ahead[PREFETCH_MAX];
	while (q < ra.off + ra.len && k < room) {
		ahead[k] = layout_unit_at(&obj->layout, q);
		q = ahead[k].off + ahead[k].len;
		k++;
	}
	r->nfetch += prefetch_entries(c, obj, ahead, k, false, r->fetch + r->nfetch);
	if (q < ra.off + ra.len) {
		pthread_mutex_lock(&c->lock);
		/* the rest next time */
		plan_stream(obj->streams, STREAMS, &obj->stream_clock, r->stream)->ra_end = q;
		pthread_mutex_unlock(&c->lock);
	}
}

/*
 * Another process is fetching E's unit: wait for it to land in the index,
 * or claim it if that process gives up or dies; past claim_wait_s, fetch
 * it unclaimed, for this read alone (unit.h, invariant 8).
 */
static void wait_for_other(struct cache *c, struct cache_object *obj, struct inflight *e)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	int rounds = c->cfg.claim_wait_s * 200;

	for (int i = 0; i < rounds; i++, nanosleep(&pause, NULL)) {
		struct index_unit u;
		uint64_t punches = store_punches(c->store);
		if (index_unit_find(c->index, obj->id, e->unit.off, &u) == 0) {
			if (u.len == e->unit.len && load_unit(c, obj, &u, punches, e->buf) == 0) {
				pthread_mutex_lock(&c->lock);
				entry_settle(c, e, 0, false);
				c->stats.hits++;
				pthread_mutex_unlock(&c->lock);
				return;
			}
			if (u.len != e->unit.len)
				index_unit_drop(c->index, u.id);
			continue;
		}
		if (entry_claim(c, obj, e) == 0)
			break;	/* else still being fetched, or it just landed */
		if (i == rounds - 1)
			log_info("%s: waited %d s for another process's fetch of the unit at %" PRIu64
				 "; fetching it for this read, unstored", obj->log_name,
				 c->cfg.claim_wait_s, e->unit.off);
	}
	submit_runs(c, obj, &e, 1, FETCH_FOR_READER);	/* a demand entry: a reader waits */
}

static int entry_cmp(const void *a, const void *b)
{
	const struct inflight *x = *(struct inflight *const *)a, *y = *(struct inflight *const *)b;
	return x->unit.off < y->unit.off ? -1 : x->unit.off > y->unit.off;
}

/*
 * PART of R, in E's unit, whose bytes went to the data file as they came
 * and are not in memory (E6): read from there (read_written()), or, if a
 * punch was counted since, read anew once E has left the table. Returns
 * RESULT, or the error of that read. c->lock held (let go meanwhile).
 */
static ssize_t read_written_again(struct read_op *r, struct inflight *e, struct extent part,
				  ssize_t result)
{
	struct cache *c = r->c;
	char *dst = r->buf + (part.off - r->off);
	if (read_written(c, e, part, dst))
		return result;
	pthread_mutex_unlock(&c->lock);
	ssize_t got = cache_read(c, r->obj, r->stream, dst, (size_t)part.len, part.off);
	pthread_mutex_lock(&c->lock);
	return got == (ssize_t)part.len ? result : got < 0 ? got : -EIO;
}

/* Wait for R's entries and copy their bytes; drops R's refs. Returns
 * RESULT, or the first entry's error when RESULT was not one. */
static ssize_t read_collect(struct read_op *r, ssize_t result)
{
	struct cache *c = r->c;
	uint64_t p = r->off;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < r->n; i++) {
		struct extent unit = layout_unit_at(&r->obj->layout, p);
		uint64_t end = part_end(r, unit);
		struct inflight *e = r->entries[i];
		if (e) {
			while (e->state == UNIT_FETCHING)
				pthread_cond_wait(&c->changed, &c->lock);
			if (e->state == UNIT_READY && result >= 0 && e->buf) {
				memcpy(r->buf + (p - r->off), e->buf + (p - e->unit.off),
				       (size_t)(end - p));
				c->stats.bytes_served += end - p;
			} else if (e->state == UNIT_READY && result >= 0) {
				/* written as its bytes came (E6) */
				result = read_written_again(r, e, (struct extent){ p, end - p },
							    result);
			} else if (result >= 0) {
				result = e->err ? e->err : -EIO;
			}
			entry_unref(e);
		}
		p = end;
	}
	if (result < 0)
		c->stats.errors++;
	pthread_mutex_unlock(&c->lock);
	return result;
}

ssize_t cache_read(struct cache *c, struct cache_object *obj, uint64_t stream, char *buf,
		   size_t len, uint64_t off)
{
	uint64_t size = obj->version.size;
	if (off >= size)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	if (len == 0)
		return 0;
	int err = object_cut(obj);	/* its first read: from the index */
	if (err)
		return err;

	struct read_op r = { .c = c, .obj = obj, .stream = stream, .off = off, .len = len,
			     .buf = buf, .policy = prefetch_policy(c) };
	for (uint64_t p = off; p < off + len; r.n++) {
		struct extent unit = layout_unit_at(&obj->layout, p);
		p = unit.off + unit.len;
	}
	r.entries = calloc(r.n, sizeof(*r.entries));
	r.fetch = calloc(r.n + PREFETCH_MAX, sizeof(*r.fetch));
	r.others = calloc(r.n, sizeof(*r.others));
	ssize_t result = (ssize_t)len;
	if (!r.entries || !r.fetch || !r.others) {
		result = -ENOMEM;
		goto out;
	}

	if (read_lookup(&r) != 0)
		result = -ENOMEM;	/* still fetch what was started */
	read_claim(&r);
	read_prefetch(&r);
	qsort(r.fetch, r.nfetch, sizeof(*r.fetch), entry_cmp);
	submit_runs(c, obj, r.fetch, r.nfetch, FETCH_FOR_READER);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < r.nfetch; i++)
		if (r.fetch[i]->prefetch)
			entry_unref(r.fetch[i]);	/* nobody waits for it here */
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < r.nwait; i++)
		wait_for_other(c, obj, r.others[i]);
	result = read_collect(&r, result);
out:
	free(r.entries);
	free(r.fetch);
	free(r.others);
	return result;
}
