/*
 * persist.c - the persist thread: it takes settled entries off the queue,
 * records each fetched unit in the index (unit_record(), which releases
 * the claims; one index transaction for the units of an object settled
 * together), its bytes in the data file already (written by the fetch
 * thread that settled it, or here for an entry settled elsewhere),
 * releases the claims of units not kept, takes entries out of the
 * in-flight table (then queues the seals that opens asked for once those
 * units were stored: seal_stored()),
 * evicts while the cache is over its bound, flushes the read times of hit
 * units and writes kept edges to the index, and, when idle, lets
 * whole-object streaming (stream.c) send its next GETs.
 *
 * DESIGN: one thread, so index writes are batched off the read path; a
 * warm's threads evict too, one evictor at a time on a cache dir
 * (evict_lock in the process, index_evictor_begin() between processes),
 * under the protocol of cache/store/unit.h (invariant 3).
 *
 * Level 5 of the engine (engine_int.h): calls stream.c, seal.c, fetch.c
 * and what lies under them; cache.c starts its thread, and warm.c calls
 * evict().
 */
#include "cache/engine/engine_int.h"
#include "cache/base/log.h"
#include "cache/base/monotonic.h"
#include "cache/store/evict.h"
#include "cache/store/index.h"
#include "cache/store/store.h"
#include "cache/store/unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EVICT_BATCH 64
#define EVICT_SKIP 64	/* pinned files passed over in one round */
#define PERSIST_BATCH 64	/* settled entries stored at once */
#define DISK_FULL_EVERY_MS 60000	/* "cache disk is full" at most this often */

/* The log's "cache disk is full" lines, of every cache of the process (one
 * log); the log's lock guards it. */
static struct log_every disk_full_said = LOG_EVERY_INIT;

/* Write the read times of the units read since the last time (the hits
 * of read.c, batched here off the read path), which also ends what was
 * kept for a hint's readers that have read it (evict.h); then keep what a
 * hint's coming reads want again (want_again()). */
static void flush_touched(struct cache *c)
{
	int64_t ids[TOUCH_MAX], objects[TOUCH_OBJECTS_MAX];
	struct index_unit_at wanted[TOUCH_MAX];
	pthread_mutex_lock(&c->lock);
	size_t n = c->ntouched, nobj = c->ntouched_objects, nwanted = c->nwanted;
	memcpy(ids, c->touched, n * sizeof(ids[0]));
	memcpy(objects, c->touched_objects, nobj * sizeof(objects[0]));
	memcpy(wanted, c->wanted, nwanted * sizeof(wanted[0]));
	c->ntouched = c->ntouched_objects = c->nwanted = 0;
	pthread_mutex_unlock(&c->lock);
	if (n)
		index_units_touch(c->index, ids, n);
	for (size_t i = 0; i < nobj; i++)
		index_object_touch(c->index, objects[i]);
	if (nwanted)	/* after the reads that end what was kept */
		index_units_wanted(c->index, wanted, nwanted, c->cfg.size_limit / 8);
}

void want_again(struct cache *c, int64_t object_id, uint64_t off, bool keep)
{
	if (!c->cfg.size_limit || object_id < 0)
		return;	/* a cache with no bound evicts nothing */
	pthread_mutex_lock(&c->lock);
	/* read while in flight: the flush may come before it is stored, so
	   it is stored kept (persist()); the flush, if after, changes nothing */
	struct inflight *e = keep ? table_find(c, object_id, off) : NULL;
	if (e)
		e->wanted = true;
	if (c->nwanted < TOUCH_MAX)
		c->wanted[c->nwanted++] = (struct index_unit_at){ object_id, off, keep };
	pthread_mutex_unlock(&c->lock);
}

/* The bytes the index holds, and those of them not on probation (admitted
 * units, and edges). */
static int levels(struct cache *c, uint64_t *usage, uint64_t *held)
{
	uint64_t probation;
	int err = index_usage_parts(c->index, usage, &probation);
	*held = err || probation > *usage ? *usage : *usage - probation;
	return err;
}

/* One pass of evict_locked(): ADMITTED, admitted units only, while what is
 * not on probation is over TARGET; else every unit in order, while the
 * cache is over TARGET (probation only down to LIMIT). */
static void evict_pass(struct cache *c, bool admitted, uint64_t limit, uint64_t target)
{
	uint64_t usage, held;
	struct index_unit victims[EVICT_BATCH];
	int64_t pinned[EVICT_SKIP];
	size_t npinned = 0;

	while (levels(c, &usage, &held) == 0 && (admitted ? held : usage) > target) {
		size_t n = 0;
		if (index_eviction_candidates(c->index, admitted, pinned, npinned, victims,
					      EVICT_BATCH, &n) != 0 || n == 0)
			return;
		for (size_t i = 0; i < n && (admitted ? held : usage) > target; i++) {
			if (victims[i].probation && usage <= limit)
				return;	/* the rest of probation stays, for now */
			uint64_t freed;
			int err = unit_evict(c->index, c->store, &victims[i], &freed);
			if (err == -EBUSY) {	/* pinned, or being fetched */
				if (npinned == EVICT_SKIP)
					return;	/* later */
				if (!npinned || pinned[npinned - 1] != victims[i].object_id)
					pinned[npinned++] = victims[i].object_id;
				continue;
			}
			if (err == -ENOENT)
				continue;	/* another process evicted it */
			if (err)
				return;		/* the index cannot change now: later */
			pthread_mutex_lock(&c->lock);
			c->stats.evicted += freed;
			pthread_mutex_unlock(&c->lock);
			if (levels(c, &usage, &held) != 0)
				return;
		}
	}
}

/*
 * Drop units, least valuable first (index_eviction_candidates()). First
 * admitted units, while what is not on probation is over
 * evict_target(LIMIT), 95%: a unit admitted into a full cache takes its
 * victim's place at once, and probation keeps the room above the target
 * for the units just fetched. Then, while the cache holds more than LIMIT:
 * units on probation only down to LIMIT, so that they leave one by one,
 * oldest first, and each stays for a while after it is stored (its
 * reader's next reads find it); admitted units, if probation ran out (its
 * units are kept for their readers, or pinned), in a burst, down to the
 * target. Units of a pinned file (read by passthrough) are passed over, up
 * to EVICT_SKIP such files a pass. One evictor at a time on a cache dir
 * (evict_to()): two would take each other's hold on a file for a pin and
 * pass over its units, evicting what comes next in order instead. Each
 * stops at the usage the index holds, not at a count of its own (a unit
 * freed by a process that evicts without the lock, or in the window
 * between two, counts too).
 */
static void evict_locked(struct cache *c, uint64_t limit)
{
	uint64_t usage, held, target = evict_target(limit);

	if (levels(c, &usage, &held) != 0 || (usage <= limit && held <= target))
		return;
	/* units read since the last flush are no longer kept for their
	   readers: written first, or eviction would pass over them and take
	   admitted units instead (at tens of MB a second of hinted reads) */
	flush_touched(c);
	evict_pass(c, true, limit, target);
	evict_pass(c, false, limit, target);
}

static void evict_to(struct cache *c, uint64_t limit)
{
	pthread_mutex_lock(&c->evict_lock);
	int other = index_evictor_begin(c->index);
	if (other != -EBUSY)	/* -EBUSY: another process evicts, to the same
				   usage the index holds */
		evict_locked(c, limit);
	if (!other)
		index_evictor_end(c->index);
	pthread_mutex_unlock(&c->evict_lock);
}

void evict(struct cache *c)
{
	uint64_t usage, held, limit = c->cfg.size_limit;
	/* whoever evicts: another process may, for this cache dir */
	if (limit && levels(c, &usage, &held) == 0)
		atomic_store(&c->full, usage >= evict_target(limit));
	evict_to(c, limit);
}

/* The disk is full: give back the reserve, then evict a tenth. Said once
 * a minute at most, with how many times it was full in between. */
static void make_room(struct cache *c)
{
	unsigned long again;
	if (log_every_due(&disk_full_said, monotonic_ms(), DISK_FULL_EVERY_MS, &again)) {
		if (again)
			log_warn("cache disk is full (and %lu more time%s in the last %d s): "
				 "evicting, serving from the network meanwhile", again,
				 again == 1 ? "" : "s", DISK_FULL_EVERY_MS / 1000);
		else
			log_warn("cache disk is full: evicting, serving from the network "
				 "meanwhile");
	}
	c->disk_full_logged = true;	/* until a unit is stored again */
	store_reserve_release(c->store);
	uint64_t usage;
	if (index_usage(c->index, &usage) == 0 && usage > 0)
		evict_to(c, usage - usage / 10);
}

/*
 * Store the fetched units of entries V[0..n) of one object, under their
 * claims (invariant 1 of unit.h), in one index transaction; release the
 * claims of units not kept.
 */
static void persist(struct cache *c, struct inflight **v, size_t n)
{
	struct cache_object *obj = v[0]->obj;
	struct index_unit_new rec[PERSIST_BATCH];
	struct inflight *of[PERSIST_BATCH];	/* rec[i]'s entry */
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct inflight *e = v[i];
		if (e->persist && e->claimed) {
			pthread_mutex_lock(&c->lock);
			/* read under the lock: a reader may join it still */
			bool ahead = e->ahead, wanted = e->wanted;
			pthread_mutex_unlock(&c->lock);
			of[k] = e;
			rec[k] = (struct index_unit_new){ .off = e->unit.off, .len = e->unit.len,
							  .ahead = ahead, .wanted = wanted };
			if (e->written) {	/* by the fetch thread */
				rec[k].crc = e->crc;
				rec[k].err = e->write_err;
			} else {
				unit_write(c->store, obj->id, &rec[k], e->buf);
			}
			k++;
		} else if (e->claimed) {
			index_unclaim(c->index, obj->id, e->unit.off);
		}
	}
	/* admitted, or on probation in a full cache (cache/store/evict.h),
	   or kept for the readers a hint fetched it for, unless a warm asked
	   for the object */
	uint64_t punches = store_punches(c->store);
	unit_record(c->index, c->store, obj->id, rec, k,
		    atomic_load(&obj->kept) ? 0 : c->cfg.size_limit);
	bool stored = false, full = false;
	int err = 0;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < k; i++) {
		/* bytes this process checksummed and wrote: its reads of them
		   need no whole read and check (unlike a unit found cached) */
		struct index_unit u = { .id = rec[i].id, .object_id = obj->id, .off = rec[i].off,
					.len = rec[i].len, .crc = rec[i].crc };
		if (rec[i].err == 0 && u.id > 0)
			known_put(c, &u, punches, true);
		/* recorded kept for its readers: one that reads it from the
		   table from now on, or did since its flag was taken above,
		   lets go of it as a read of it cached does (read.c) */
		if (rec[i].err == 0 && u.id > 0 && rec[i].ahead) {
			of[i]->stored_id = u.id;
			if (!of[i]->ahead)
				unit_read_now(c, u.id);
		}
	}
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < k; i++) {
		stored |= rec[i].err == 0;
		full |= store_full(rec[i].err);
		if (rec[i].err && rec[i].err != -EBUSY)	/* -EBUSY: the claim passed
							   to another process: its bytes now */
			err = rec[i].err;
	}
	if (full)
		make_room(c);
	else if (err)
		log_warn("cannot cache a unit of %s: %s", obj->log_name, strerror(-err));
	if (stored && c->disk_full_logged) {
		c->disk_full_logged = false;
		store_reserve_restore(c->store);
	}
}

/* Write the edges waiting for the index, in one transaction. */
static void keep_edges(struct cache *c)
{
	struct index_edge v[EDGES_TO_KEEP_MAX];
	size_t n = 0;
	pthread_mutex_lock(&c->lock);
	struct edge *first = c->edges_to_keep;
	c->edges_to_keep = NULL;
	c->nedges_to_keep = 0;
	pthread_mutex_unlock(&c->lock);
	for (struct edge *e = first; e && n < EDGES_TO_KEEP_MAX; e = e->next)
		v[n++] = (struct index_edge){ e->object_id, e->off, e->buf, e->len };
	index_edges_put(c->index, v, n);
	while (first) {
		struct edge *next = first->next;
		free(first);
		first = next;
	}
}

/* Store or release the settled entries V[0..n) (consecutive entries of one
 * object together), then take them out of the table (invariants E1, E2),
 * and queue the seals opens asked for once they are stored.
 * Called and returns with c->lock held. */
static void settled(struct cache *c, struct inflight **v, size_t n)
{
	struct cache_object *objs[PERSIST_BATCH];
	size_t nobjs = 0;

	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && v[j]->obj == v[i]->obj; j++)
			;
		persist(c, v + i, j - i);
		objs[nobjs++] = cache_object_ref(v[i]->obj);	/* outlives its entries */
	}
	evict(c);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		table_remove(c, v[i]);	/* later reads find it in the index */
	pthread_cond_broadcast(&c->changed);	/* reads waiting for a failed one */
	seal_stored(c, objs, nobjs);
	for (size_t i = 0; i < nobjs; i++)
		cache_object_unref(objs[i]);
}

void *persist_thread(void *arg)
{
	struct cache *c = arg;
	time_t last_flush = time(NULL);

	pthread_mutex_lock(&c->lock);
	for (;;) {
		struct inflight *e = c->queue_head;
		if (!e && c->stopping) {
			while (c->jobs)
				job_done(&c->jobs);
			break;
		}
		if (atomic_exchange(&c->room_wanted, false)) {
			pthread_mutex_unlock(&c->lock);
			make_room(c);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		if (c->edges_to_keep) {
			pthread_mutex_unlock(&c->lock);
			keep_edges(c);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		if (!e && c->jobs && !c->jobs_off && c->background_bytes < c->background_budget) {
			c->stepping = true;
			pthread_mutex_unlock(&c->lock);
			int busy = job_step(c);
			pthread_mutex_lock(&c->lock);
			c->stepping = false;
			pthread_cond_broadcast(&c->changed);
			if (busy == -EAGAIN && !c->queue_head && !c->stopping) {
				/* the readers hold the connections: look again
				   when something settles, or soon */
				cond_wait_ms(&c->work, &c->lock, 50);
			}
		} else if (!e) {
			cond_wait_ms(&c->work, &c->lock, 1000);
		} else {
			struct inflight *batch[PERSIST_BATCH];
			size_t n = 0;
			for (; e && n < PERSIST_BATCH; e = e->queue_next)
				batch[n++] = e;
			c->queue_head = e;
			if (!c->queue_head)
				c->queue_end = &c->queue_head;
			settled(c, batch, n);
		}
		if (time(NULL) != last_flush || c->ntouched >= TOUCH_MAX / 2) {
			last_flush = time(NULL);
			pthread_mutex_unlock(&c->lock);
			flush_touched(c);
			pthread_mutex_lock(&c->lock);
		}
	}
	pthread_mutex_unlock(&c->lock);
	keep_edges(c);
	flush_touched(c);
	unsigned long again = log_every_take(&disk_full_said);
	if (again)
		log_warn("cache disk was full %lu more time%s since it was last said", again,
			 again == 1 ? "" : "s");
	return NULL;
}
