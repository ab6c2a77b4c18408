/*
 * seal.c - cache_object_complete(), cache_object_seal(),
 * cache_object_pin(): an object whose units are all cached can be read by
 * the kernel straight from its data file (FUSE passthrough), with no
 * request to the daemon and no checksum on the way. So before that, a
 * process checks every unit of it against its checksum (holding a pin, so
 * that none changes meanwhile), syncs the file to disk, and seals it in
 * the index with the file's inode number and ctime. Any write or punch
 * since, by any process or by hand, moves the ctime: a file that still has
 * its stamp holds the bytes that were checked, whichever process checked
 * them and across a crash or a power cut (the seal commits after the
 * sync). A file whose stamp moved is checked again before the kernel reads
 * it. The seal goes with the first unit dropped, by any process
 * (cache/store/index.c), and eviction leaves a pinned file alone (unit.h,
 * invariant 6): a pinned sealed file is its object's bytes for as long as
 * the pin lasts.
 *
 * What is checked is exactly what is stamped: every unit is read through
 * the pinned descriptor, the one synced and stamped, never through the
 * store's own descriptors, which may name another file (one replaced or
 * unlinked since the store opened it).
 *
 * What the read path's checksums catch beyond this: bytes the disk itself
 * changes under an unchanged stamp (bit rot), which a local file would
 * serve too.
 *
 * DESIGN: a seal is asked for by an open (cache_object_pin()) and made on
 * the seal thread, one object at a time, off the persist thread. An open
 * asks when every unit of the object is cached, or on its way there: in
 * this process's in-flight table, fetched or being fetched, for the
 * persist thread to store (engine_int.h, invariant E1). Such an open marks
 * the object (seal_when_stored), and the persist thread queues its seal
 * once the last of those units has left the table (seal_stored()), so an
 * open that comes while the persist thread is behind is not forgotten.
 *
 * Level 2 of the engine (engine_int.h): calls known.c (load_unit()) and
 * object.c; the persist thread (persist.c) queues seals that wait for
 * units in flight, and cache.c starts the seal thread.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/log.h"
#include "cache/store/crc32c.h"
#include "cache/store/index.h"
#include "cache/store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOUCH_EVERY_S 10	/* units of a passed-through object: read times */
#define SEAL_PAGE 4096		/* units read from the index at a time */

bool cache_object_complete(struct cache *c, struct cache_object *obj)
{
	uint64_t units, bytes;

	if (atomic_load(&obj->complete))
		return true;
	/* an object's units are disjoint and cut one way (layout.h): all of
	   them are cached when their bytes add up to the object */
	if (obj->id < 0 || index_object_usage(c->index, obj->id, &units, &bytes) != 0 ||
	    bytes != obj->version.size)
		return false;
	atomic_store(&obj->complete, true);
	return true;
}

/* OBJ's data file, pinned, if it is sealed and has its stamp still; else
 * -ENOENT, or -errno. */
static int pin_sealed(struct cache *c, struct cache_object *obj)
{
	int pin = store_pin(c->store, obj->id);
	if (pin < 0)
		return pin;
	/* after the pin: see unit.h (6) */
	struct store_stamp now, sealed;
	int err = store_stamp(pin, &now);
	if (!err)
		err = index_sealed(c->index, obj->id, &sealed);
	if (!err && (now.ino != sealed.ino || now.ctime_ns != sealed.ctime_ns))
		err = -ENOENT;	/* written since: check it again */
	if (err) {
		close(pin);
		return err;
	}
	return pin;
}

int cache_object_seal(struct cache *c, struct cache_object *obj)
{
	uint64_t units, bytes;
	if (obj->id < 0 || index_object_usage(c->index, obj->id, &units, &bytes) != 0 ||
	    bytes != obj->version.size)
		return -ENOENT;
	int pin = pin_sealed(c, obj);
	if (pin >= 0) {
		close(pin);
		return 0;	/* sealed, and not written since */
	}
	pin = store_pin(c->store, obj->id);
	if (pin < 0)
		return pin;
	struct index_unit *v = malloc(SEAL_PAGE * sizeof(*v)), bad = { 0 };
	struct store_scan *scan = store_scan_open(pin);
	size_t n = 0, page = 0;
	uint64_t end = 0;	/* where the units checked so far end */
	int err = v && scan ? 0 : -ENOMEM;
	/* a page of rows at a time (memory bounded by the page, not by the
	   object): they must tile the object, each unit where the one before
	   ends (by offset), the last at its end */
	do {
		if (!err)
			err = index_units_from(c->index, obj->id, end, v, SEAL_PAGE, &page);
		for (size_t i = 0; !err && i < page; i++) {
			if (v[i].off != end) {
				err = -ENOENT;
				break;
			}
			end = v[i].off + v[i].len;
			/* through the pin: the file stamped below, whatever the
			   store's descriptors name */
			const char *got = store_scan_read(scan, v[i].off, v[i].len, &err);
			if (!err && crc32c(0, got, v[i].len) != v[i].crc)
				err = -EBADMSG;
			if (err)
				bad = v[i];
			n++;
		}
	} while (!err && page == SEAL_PAGE && end < obj->version.size);
	if (!err && end != obj->version.size)
		err = -ENOENT;
	struct store_stamp stamp;
	if (!err && fdatasync(pin) != 0)
		err = -errno;
	if (!err)
		err = store_stamp(pin, &stamp);
	if (!err)
		err = index_seal(c->index, obj->id, obj->version.size, &stamp);
	store_scan_close(scan);
	close(pin);
	/* a unit that fails its check is evicted the usual way (load_unit()
	   checks it again, through the store, and evicts it if it fails
	   there too); if it passes there, the store's descriptor and the
	   pinned one name different files, and the pinned one stays unsealed */
	char *buf = NULL;
	if (bad.id && (buf = malloc(bad.len)) &&
	    load_unit(c, obj, &bad, store_punches(c->store), buf) == 0)
		log_warn("%s: its data file differs at %" PRIu64 " from the one this process "
			 "reads (replaced?); not sealed", obj->log_name, bad.off);
	free(buf);
	free(v);
	if (err)
		log_debug("%s not sealed: %s", obj->log_name, strerror(-err));
	else
		log_debug("sealed %s (%zu units)", obj->log_name, n);
	return err;
}

/* Have the seal thread seal OBJ: queued once until the seal thread takes
 * it up (a request while it runs queues it again). c->lock held. */
static void seal_later_locked(struct cache *c, struct cache_object *obj)
{
	if (c->stopping || atomic_exchange(&obj->seal_queued, true))
		return;	/* stopping: the seal thread is gone, or going */
	struct object_job *job = calloc(1, sizeof(*job));
	if (!job) {
		atomic_store(&obj->seal_queued, false);
		return;
	}
	job->obj = cache_object_ref(obj);
	job->next = c->seals;
	c->seals = job;
	pthread_cond_signal(&c->seal_work);
}

static void seal_later(struct cache *c, struct cache_object *obj)
{
	pthread_mutex_lock(&c->lock);
	seal_later_locked(c, obj);
	pthread_mutex_unlock(&c->lock);
}

/*
 * Bytes of object ID in the in-flight table on their way to the index:
 * being fetched, or fetched for the persist thread to store. With MARK,
 * their objects are marked to be sealed once they are stored. c->lock
 * held; at most TABLE_SIZE slots and the entries in them.
 */
static uint64_t bytes_coming(struct cache *c, int64_t id, bool mark)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < TABLE_SIZE; i++) {
		for (struct inflight *e = c->table[i]; e; e = e->table_next) {
			if (e->obj->id != id || e->state == UNIT_FAILED ||
			    (e->state == UNIT_READY && !e->persist))
				continue;
			bytes += e->unit.len;
			if (mark)
				e->obj->seal_when_stored = true;
		}
	}
	return bytes;
}

/* An open found OBJ not all cached: if the rest is on its way (fetched or
 * being fetched by this process), have the persist thread queue its seal
 * once it is stored. */
static void seal_once_stored(struct cache *c, struct cache_object *obj)
{
	uint64_t units, bytes;

	pthread_mutex_lock(&c->lock);
	uint64_t coming = bytes_coming(c, obj->id, false);
	pthread_mutex_unlock(&c->lock);
	/* the index after the table: a unit leaves the table only once it is
	   in the index (or given up), so none is missed; one that moved in
	   between is counted twice, which at worst asks for a seal that
	   finds the object incomplete */
	if (!coming || index_object_usage(c->index, obj->id, &units, &bytes) != 0 ||
	    bytes + coming < obj->version.size)
		return;
	pthread_mutex_lock(&c->lock);
	if (!bytes_coming(c, obj->id, true))
		seal_later_locked(c, obj);	/* all stored meanwhile */
	pthread_mutex_unlock(&c->lock);
}

void seal_stored(struct cache *c, struct cache_object *const *objs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct cache_object *obj = objs[i];
		if (obj->seal_when_stored && !bytes_coming(c, obj->id, false)) {
			obj->seal_when_stored = false;
			seal_later_locked(c, obj);
		}
	}
}

/* Drop the first job of c->seals. c->lock held. */
static void seal_job_drop(struct cache *c)
{
	struct object_job *job = c->seals;
	c->seals = job->next;
	cache_object_unref(job->obj);
	free(job);
}

void *seal_thread(void *arg)
{
	struct cache *c = arg;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->seals && !c->stopping)
			pthread_cond_wait(&c->seal_work, &c->lock);
		if (c->stopping)
			break;
		struct cache_object *obj = cache_object_ref(c->seals->obj);
		seal_job_drop(c);	/* seal_later() adds at the head */
		/* taken up: an open from now on may ask again (it may find a
		   unit stored since this seal read the index) */
		atomic_store(&obj->seal_queued, false);
		pthread_mutex_unlock(&c->lock);
		/* sealed, or not: either may change (a unit evicted, fetched
		   again), and the next open that finds it unsealed asks again;
		   not all stored yet, it is sealed once it is */
		if (cache_object_seal(c, obj) == -ENOENT)
			seal_once_stored(c, obj);
		cache_object_unref(obj);
		pthread_mutex_lock(&c->lock);
	}
	while (c->seals)
		seal_job_drop(c);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int cache_object_pin(struct cache *c, struct cache_object *obj)
{
	if (obj->id < 0)
		return -ENOENT;
	if (!cache_object_complete(c, obj)) {
		seal_once_stored(c, obj);
		return -ENOENT;
	}
	int pin = pin_sealed(c, obj);
	if (pin == -ENOENT)
		seal_later(c, obj);
	return pin;
}

void cache_object_passed(struct cache *c, struct cache_object *obj)
{
	/* its reads will not reach cache_read(): keep its units recent (the
	   persist thread writes their read times) */
	int64_t now = time(NULL), last = atomic_load(&obj->touched_at);
	bool touch = now - last >= TOUCH_EVERY_S &&
		     atomic_compare_exchange_strong(&obj->touched_at, &last, now);
	pthread_mutex_lock(&c->lock);
	c->stats.passthrough_opens++;
	if (touch && c->ntouched_objects < TOUCH_OBJECTS_MAX)
		c->touched_objects[c->ntouched_objects++] = obj->id;
	pthread_mutex_unlock(&c->lock);
}
