/*
 * cache.c - see cache.h.
 *
 * DESIGN: a read looks up each unit it touches in the index. A hit is read
 * from the object's data file; the first read of a unit in this process
 * reads all of it and checks its CRC32C (a crash or power cut can leave a
 * data file behind its index row), later reads take just the bytes asked
 * for, then look the row up again so that a unit evicted meanwhile by any
 * process (row deleted, then hole punched) is never served.
 *
 * A miss becomes an `inflight` entry in this process's table, so other
 * threads wanting the same unit wait on it instead of fetching. The owner
 * claims the unit in the index (claims table) so other processes wait too;
 * adjacent claimed units go out as one ranged GET. The fetch thread fills
 * the entries and wakes the readers; the persist thread then writes each
 * unit to its data file, records it in the index (which releases the
 * claim), and evicts while the cache is over its bound.
 *
 * Bytes of a unit are written only by a process holding its claim, and
 * eviction punches them out only under a claim too (see index.c), so a
 * row never points at bytes that change underneath it.
 *
 * Locks: c->lock protects the inflight table and queue, entry states and
 * refs, touch buffer, verified set and stats. It is not held across I/O.
 */
#include "cache/engine/cache.h"
#include "cache/store/crc32c.h"
#include "cache/origin/http.h"
#include "cache/store/index.h"
#include "cache/tiff/layout.h"
#include "cache/base/log.h"
#include "cache/origin/provider.h"
#include "cache/store/store.h"
#include "cache/tiff/tiff.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TABLE_SIZE 1024
#define TOUCH_MAX 4096
#define VERIFIED_SLOTS (1u << 18)	/* ids of units checked since start */
#define EVICT_BATCH 64
#define PREFETCH_MAX 512		/* units one read may add */
#define PARSE_FETCHES_MAX 16		/* GETs the TIFF parser may cause */
#define PARSE_CHUNK (1u << 20)		/* bytes each of them asks for */
#define READAHEAD_SLACK (64u << 10)	/* a skip this small is still sequential */
#define READAHEAD_OVERLAP 8192		/* and so is a step back this small */
#define READAHEAD_TILE_TRIGGER (4u << 20) /* sequential tile bytes before readahead */
#define READAHEAD_READS 16		/* or this many reads in a row */
#define READAHEAD_START (1u << 20)
#define SLIVER_MAX 16384		/* more than any reader's buffer alignment */
#define EDGE_SLOTS 256			/* slivers kept, over all objects */
#define BACKGROUND_BUDGET (64u << 20)	/* whole-object prefetch bytes in flight */
#define JOB_BATCH 64
#define STREAMS 8			/* readers of one object told apart */

/*
 * Readers align their reads to their buffer size (stdio, GDAL: 4 or 8
 * KiB), so a read of one tile also asks for the bytes it shares with each
 * neighbour's buffer. Those few bytes of a tile nobody wants are fetched
 * alone (a sliver, in the same GET as the tile) and kept here, with the
 * bytes up to the next 16 KiB boundary after each tile fetched for a
 * reader, rather than fetching the neighbour whole.
 */
struct edge {
	int64_t object_id;
	uint64_t off;
	size_t len;			/* 0: empty slot */
	char buf[SLIVER_MAX];
};

/* One reader's sequential reads of an object (readahead). */
struct stream {
	uint64_t id;			/* the reader (0: free) */
	uint64_t used;			/* stream_clock when last read */
	uint64_t end, bytes, reads;	/* its run of sequential reads */
	uint64_t ra_end, ra_window;	/* read ahead up to; next window */
};

struct cache_object {
	atomic_int refs;
	struct cache *cache;
	int64_t id;			/* index id; < 0: not in the index, so
					   served from the origin, never cached */
	char *url, *log_name;
	char version[192];
	char etag[128];			/* "" when the origin gives none */
	uint64_t size;
	time_t mtime;
	char last_modified[64];		/* "" when the origin gives none */
	struct layout layout;		/* read-only once opened */
	atomic_bool stale;
	atomic_bool whole_queued;	/* PREFETCH_OBJECT has started on it */
	bool added;			/* this open put it in the index */
	struct stream streams[STREAMS];	/* protected by cache->lock */
	uint64_t stream_clock;		/* protected by cache->lock */
};

enum unit_state { UNIT_FETCHING, UNIT_READY, UNIT_FAILED };

struct inflight {
	struct inflight *table_next;	/* protected by c->lock */
	struct inflight *queue_next;	/* protected by c->lock */
	struct cache_object *obj;	/* holds a ref */
	struct extent unit;
	char *buf;			/* unit.len bytes */
	enum unit_state state;		/* protected by c->lock */
	int err;			/* set with state */
	int refs;			/* protected by c->lock */
	bool persist;			/* write to store and index */
	bool claimed;			/* holds the index claim */
	bool prefetch;			/* no reader asked for it (yet) */
	bool sliver;			/* part of a unit, for one read only: in
					   c->slivers while fetched, never persisted */
	struct inflight *sliver_next;	/* protected by c->lock */
};

/* A whole object being prefetched by the persist thread. */
struct object_job {
	struct object_job *next;	/* protected by c->lock */
	struct cache_object *obj;	/* holds a ref */
	uint64_t cursor;		/* persist thread only */
};

struct cache {
	struct cache_config cfg;
	struct source *src;
	struct http_client *http;
	struct index *index;
	struct store *store;
	pthread_t persister;
	pthread_mutex_t lock;
	pthread_cond_t changed;		/* an entry left UNIT_FETCHING */
	pthread_cond_t work;		/* the persist queue grew, or stop */
	struct inflight *table[TABLE_SIZE];
	struct inflight *queue_head, *queue_tail;
	bool stopping;
	int64_t touched[TOUCH_MAX];
	size_t ntouched;
	int64_t *verified;		/* open addressing, 0 = empty */
	size_t nverified;
	bool disk_full_logged;
	struct object_job *jobs;	/* PREFETCH_OBJECT queue */
	struct edge *edges;		/* EDGE_SLOTS, round robin */
	struct inflight *slivers;	/* being fetched, for other readers to join */
	size_t next_edge;
	uint64_t background_bytes;	/* in background GETs */
	struct cache_stats stats;
};

struct fetch_run {
	struct http_request req;
	struct cache *cache;
	struct cache_object *obj;
	bool background;
	uint64_t spill;			/* bytes after the last unit, for edges */
	size_t n;
	struct inflight *units[];
};

/* ---- small helpers ---- */

static size_t table_slot(int64_t object_id, uint64_t off)
{
	uint64_t h = (uint64_t)object_id * 0x9e3779b97f4a7c15ull ^ (off >> 12) * 0xff51afd7ed558ccdull;
	return (size_t)(h >> 32) % TABLE_SIZE;
}

/* c->lock held */
static bool verified_has(struct cache *c, int64_t id)
{
	for (size_t i = (size_t)id & (VERIFIED_SLOTS - 1);; i = (i + 1) & (VERIFIED_SLOTS - 1)) {
		if (c->verified[i] == id)
			return true;
		if (c->verified[i] == 0)
			return false;
	}
}

/* c->lock held */
static void verified_add(struct cache *c, int64_t id)
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

/* ---- objects ---- */

struct cache_object *cache_object_ref(struct cache_object *obj)
{
	atomic_fetch_add(&obj->refs, 1);
	return obj;
}

void cache_object_unref(struct cache_object *obj)
{
	if (!obj || atomic_fetch_sub(&obj->refs, 1) != 1)
		return;
	layout_release(&obj->layout);
	free(obj->url);
	free(obj->log_name);
	free(obj);
}

uint64_t cache_object_size(const struct cache_object *obj)
{
	return obj->size;
}

time_t cache_object_mtime(const struct cache_object *obj)
{
	return obj->mtime;
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

const char *cache_dir(const struct cache *c)
{
	return c->cfg.dir;
}

bool cache_object_added(const struct cache_object *obj)
{
	return obj->added;
}

bool cache_object_stale(const struct cache_object *obj)
{
	return atomic_load(&obj->stale);
}

/* ---- inflight entries ---- */

/* c->lock held */
static struct inflight *table_find(struct cache *c, int64_t object_id, uint64_t off)
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

/* c->lock held; the table's ref is one of the two an entry starts with */
static struct inflight *entry_new(struct cache *c, struct cache_object *obj, struct extent unit)
{
	struct inflight *e = entry_alloc(obj, unit, 2);
	if (!e)
		return NULL;
	size_t slot = table_slot(obj->id, unit.off);
	e->table_next = c->table[slot];
	c->table[slot] = e;
	return e;
}

/* c->lock held: a sliver of OBJ being fetched that holds PART, or NULL */
static struct inflight *sliver_find(struct cache *c, const struct cache_object *obj,
				    struct extent part)
{
	for (struct inflight *e = c->slivers; e; e = e->sliver_next)
		if (e->obj->id == obj->id && part.off >= e->unit.off &&
		    part.off + part.len <= e->unit.off + e->unit.len)
			return e;
	return NULL;
}

/* c->lock held: a sliver (PART of a unit): the list's ref and the creator's */
static struct inflight *sliver_new(struct cache *c, struct cache_object *obj, struct extent part)
{
	struct inflight *e = entry_alloc(obj, part, 2);
	if (e) {
		e->sliver = true;
		e->sliver_next = c->slivers;
		c->slivers = e;
	}
	return e;
}

/* c->lock held */
static void entry_unref(struct inflight *e)
{
	if (--e->refs > 0)
		return;
	cache_object_unref(e->obj);
	free(e->buf);
	free(e);
}

/* c->lock held: settle an entry and hand it to the persist thread */
static void entry_settle(struct cache *c, struct inflight *e, int err, bool persist)
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
	if (c->queue_tail)
		c->queue_tail->queue_next = e;
	else
		c->queue_head = e;
	c->queue_tail = e;
	pthread_cond_broadcast(&c->changed);
	pthread_cond_signal(&c->work);
}

/* c->lock held: copy [off, off+len) of OBJ from a kept sliver, if any */
static bool edge_get(struct cache *c, const struct cache_object *obj, uint64_t off, size_t len,
		     char *dst)
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

/* c->lock held: keep a sliver of OBJ (at most SLIVER_MAX bytes) */
static void edge_put(struct cache *c, const struct cache_object *obj, uint64_t off, size_t len,
		     const char *src)
{
	if (len == 0 || len > SLIVER_MAX)
		return;
	struct edge *s = &c->edges[c->next_edge++ % EDGE_SLOTS];
	s->object_id = obj->id;
	s->off = off;
	s->len = len;
	memcpy(s->buf, src, len);
}

/*
 * Write UNIT of object OBJECT_ID, whose claim we hold, to its data file and
 * record it in the index (which releases the claim). On failure the bytes
 * are punched out and the claim released, unless it passed to another
 * process (-EBUSY: its bytes now). 0 or -errno.
 */
static int unit_store(struct cache *c, int64_t object_id, struct extent unit, const char *bytes)
{
	int err = store_write(c->store, object_id, bytes, unit.len, unit.off);
	if (!err)
		err = index_unit_add(c->index, object_id, unit.off, unit.len,
				     crc32c(0, bytes, unit.len));
	if (err && err != -EBUSY) {
		store_punch(c->store, object_id, unit.off, unit.len);
		index_unclaim(c->index, object_id, unit.off);
	}
	return err;
}

/* ---- reading cached units ---- */

/* Read all of unit U into DST and check its checksum; 0 or -errno. */
static int load_unit(struct cache *c, struct cache_object *obj, const struct index_unit *u,
		     char *dst)
{
	int err = store_read(c->store, obj->id, dst, u->len, u->off);
	if (err || crc32c(0, dst, u->len) != u->crc) {
		/* evicted while we read it (row gone first), or really damaged:
		   a row is only worth its bytes, so a damaged one goes */
		struct index_unit now;
		if (index_unit_find(c->index, obj->id, u->off, &now) == 0 && now.id == u->id) {
			log_warn("cached bytes of %s at %" PRIu64 " are %s; fetching them again",
				 obj->log_name, u->off, err ? "unreadable" : "damaged (checksum)");
			index_unit_drop(c->index, u->id);
		}
		err = -EIO;
	}
	if (!err) {
		pthread_mutex_lock(&c->lock);
		verified_add(c, u->id);
		pthread_mutex_unlock(&c->lock);
	}
	return err;
}

/*
 * Copy [part_off, part_off+part_len) of UNIT from the cache into DST.
 * 0 on a hit; -ENOENT (or another error, logged) means: fetch it.
 */
static int read_cached(struct cache *c, struct cache_object *obj, struct extent unit,
		       char *dst, uint64_t part_off, size_t part_len)
{
	struct index_unit u, again;
	if (obj->id < 0)
		return -ENOENT;
	int err = index_unit_find(c->index, obj->id, unit.off, &u);

	if (err)
		return err;
	if (u.len != unit.len) {
		index_unit_drop(c->index, u.id);
		return -ENOENT;
	}
	pthread_mutex_lock(&c->lock);
	bool checked = verified_has(c, u.id);
	pthread_mutex_unlock(&c->lock);
	if (!checked) {
		char *whole = malloc(u.len);
		if (!whole)
			return -ENOMEM;
		err = load_unit(c, obj, &u, whole);
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
	/* evicted while we read? (eviction drops the row before the bytes) */
	if (index_unit_find(c->index, obj->id, unit.off, &again) != 0 || again.id != u.id)
		return -ENOENT;
	pthread_mutex_lock(&c->lock);
	if (c->ntouched < TOUCH_MAX)
		c->touched[c->ntouched++] = u.id;
	c->stats.hits++;
	c->stats.bytes_served += part_len;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* ---- fetching ---- */

/* Does REQ's answer come from OBJ's version? */
static bool answer_matches(const struct cache_object *obj, const struct http_request *req)
{
	return !((obj->etag[0] && req->etag[0] && strcmp(obj->etag, req->etag) != 0) ||
		 (!obj->etag[0] && strcmp(obj->last_modified, req->last_modified) != 0) ||
		 (req->object_size != UINT64_MAX && req->object_size != obj->size));
}

static void run_done(struct http_request *req, void *arg)
{
	struct fetch_run *run = arg;
	struct cache *c = run->cache;
	struct cache_object *obj = run->obj;
	/* gone (404) or shrunk (416) since it was opened: that version is stale */
	int err = req->err == -ERANGE || req->err == -ENOENT ? -ESTALE : req->err;

	if (!err && !answer_matches(obj, req))
		err = -ESTALE;
	if (err == -ESTALE) {
		atomic_store(&obj->stale, true);
		log_error("%s changed on the origin since it was opened; reopen it", obj->log_name);
	}
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < run->n; i++) {
		struct inflight *e = run->units[i];
		if (!err)
			memcpy(e->buf, req->body + (e->unit.off - req->off), e->unit.len);
		if (!err && e->sliver)
			edge_put(c, obj, e->unit.off, e->unit.len, e->buf);
		entry_settle(c, e, err, obj->id > 0);
		entry_unref(e);		/* the run's ref */
	}
	if (!err && run->spill)
		edge_put(c, obj, req->off + req->len - run->spill, run->spill,
			 req->body + req->len - run->spill);
	if (!err)
		c->stats.bytes_fetched += req->body_len;
	if (run->background) {
		c->background_bytes -= req->len;
		pthread_cond_signal(&c->work);	/* room for more */
	}
	pthread_mutex_unlock(&c->lock);
	free(req->body);
	cache_object_unref(obj);
	free(run);
}

/* Fetch UNITS[0..n), in order in the object, with one GET (of the gaps
 * between them too). */
static void run_submit(struct cache *c, struct cache_object *obj, struct inflight **units,
		       size_t n, bool background, bool for_reader)
{
	struct fetch_run *run = calloc(1, sizeof(*run) + n * sizeof(run->units[0]));
	uint64_t off = units[0]->unit.off;
	uint64_t end = units[n - 1]->unit.off + units[n - 1]->unit.len;
	/* a tile read for a reader: bring the rest of its last page too */
	uint64_t spill = !for_reader || background || units[n - 1]->sliver ||
			 !layout_is_tile(&obj->layout, units[n - 1]->unit.off) ? 0 :
			 (SLIVER_MAX - end % SLIVER_MAX) % SLIVER_MAX;
	if (spill > obj->size - end)
		spill = obj->size - end;
	end += spill;
	int err = -ENOMEM;

	if (run)
		run->req.body = malloc(end - off);
	if (!run || !run->req.body)
		goto fail;
	run->cache = c;
	run->obj = cache_object_ref(obj);
	run->n = n;
	run->background = background;
	run->spill = spill;
	pthread_mutex_lock(&c->lock);
	if (background)
		c->background_bytes += end - off;
	for (size_t i = 0; i < n; i++) {
		run->units[i] = units[i];
		units[i]->refs++;
	}
	pthread_mutex_unlock(&c->lock);
	run->req.url = obj->url;
	run->req.log_name = obj->log_name;
	run->req.off = off;
	run->req.len = end - off;
	run->req.background = background;
	run->req.if_match = obj->etag[0] ? obj->etag : NULL;
	run->req.if_unmodified_since = obj->etag[0] ? NULL : obj->last_modified;
	run->req.done = run_done;
	run->req.arg = run;
	source_prepare(c->src, &run->req);
	http_submit(c->http, &run->req);
	return;
fail:
	if (run)
		free(run->req.body);
	free(run);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		entry_settle(c, units[i], err, false);
	pthread_mutex_unlock(&c->lock);
}

/*
 * Another process is fetching E's unit: wait for it to land in the index,
 * or take the claim over if that process dies or takes too long.
 */
static void wait_for_other(struct cache *c, struct cache_object *obj, struct inflight *e)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	int rounds = c->cfg.claim_wait_s * 200;

	for (int i = 0; i < rounds; i++, nanosleep(&pause, NULL)) {
		struct index_unit u;
		pid_t holder;
		if (index_unit_find(c->index, obj->id, e->unit.off, &u) == 0) {
			if (u.len == e->unit.len && load_unit(c, obj, &u, e->buf) == 0) {
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
		int rc = index_claim(c->index, obj->id, e->unit.off, c->cfg.claim_wait_s, &holder);
		if (rc == -EBUSY || rc == -EEXIST)
			continue;	/* still being fetched, or it just landed */
		e->claimed = rc == 0;
		break;
	}
	run_submit(c, obj, &e, 1, false, true);
}

/* Start fetching UNIT of OBJ ahead of any read, unless it is cached, in
 * flight, or claimed by another process. Returns the new entry (its
 * creator's ref is the caller's) or NULL. */
static struct inflight *prefetch_entry(struct cache *c, struct cache_object *obj,
				       struct extent unit)
{
	struct index_unit u;
	pid_t holder;

	if (obj->id < 0)
		return NULL;	/* nowhere to keep it */
	pthread_mutex_lock(&c->lock);
	bool busy = table_find(c, obj->id, unit.off) != NULL;
	pthread_mutex_unlock(&c->lock);
	if (busy || index_unit_find(c->index, obj->id, unit.off, &u) == 0 ||
	    index_claim(c->index, obj->id, unit.off, c->cfg.claim_wait_s, &holder) != 0)
		return NULL;
	pthread_mutex_lock(&c->lock);
	struct inflight *e = table_find(c, obj->id, unit.off) ? NULL : entry_new(c, obj, unit);
	if (e) {
		e->claimed = true;
		e->prefetch = true;
		c->stats.prefetched++;
	}
	pthread_mutex_unlock(&c->lock);
	if (!e)
		index_unclaim(c->index, obj->id, unit.off);
	return e;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct inflight *x = *(struct inflight *const *)a, *y = *(struct inflight *const *)b;
	return x->unit.off < y->unit.off ? -1 : x->unit.off > y->unit.off;
}

/* Is a unit in [from, to) of OBJ cached, or being fetched by this process?
 * Then a GET across that gap would fetch it again. */
static bool gap_has_units(struct cache *c, struct cache_object *obj, uint64_t from, uint64_t to)
{
	for (uint64_t p = from; p < to;) {
		struct extent unit = layout_unit_at(&obj->layout, p);
		struct index_unit u;
		pthread_mutex_lock(&c->lock);
		bool busy = table_find(c, obj->id, unit.off) != NULL;
		pthread_mutex_unlock(&c->lock);
		if (busy || (obj->id >= 0 && index_unit_find(c->index, obj->id, unit.off, &u) == 0))
			return true;
		p = unit.off + unit.len;
	}
	return false;
}

/*
 * Fetch ENTRIES[0..n) (claimed, sorted by offset): units at most merge_gap
 * apart share one GET, up to max_request bytes, unless the gap holds units
 * cached or in flight (they would be fetched again); a GET made only of
 * prefetched units runs in the background. FOR_READER: a reader waits, so
 * a GET ending in a tile brings the rest of its last page too.
 */
static void submit_runs(struct cache *c, struct cache_object *obj, struct inflight **v, size_t n,
			bool for_reader)
{
	for (size_t i = 0; i < n;) {
		uint64_t start = v[i]->unit.off, end = start + v[i]->unit.len;
		bool demand = !v[i]->prefetch;
		size_t j = i + 1;
		while (j < n && v[j]->unit.off - end <= c->cfg.merge_gap &&
		       v[j]->unit.off + v[j]->unit.len - start <= c->cfg.max_request &&
		       !(v[j]->unit.off > end && !v[j]->sliver && !v[j - 1]->sliver &&
			 gap_has_units(c, obj, end, v[j]->unit.off))) {
			end = v[j]->unit.off + v[j]->unit.len;
			demand |= !v[j]->prefetch;
			j++;
		}
		run_submit(c, obj, v + i, j - i, !demand, for_reader);
		i = j;
	}
}

/* c->lock held: STREAM's state in OBJ (taking the least recently used). */
static struct stream *stream_of(struct cache_object *obj, uint64_t stream)
{
	struct stream *s = &obj->streams[0];
	for (size_t i = 0; i < STREAMS; i++) {
		if (obj->streams[i].id == stream) {
			s = &obj->streams[i];
			break;
		}
		if (obj->streams[i].used < s->used)
			s = &obj->streams[i];
	}
	if (s->id != stream)
		*s = (struct stream){ .id = stream };
	s->used = ++obj->stream_clock;
	return s;
}

/*
 * Note a read of [off, end) of OBJ by STREAM and say what to read ahead of
 * it, if anything. Reads that follow each other (small forward skips
 * allowed, such as GDAL's tile leaders) for long enough open a window that
 * doubles each time it is topped up; any other read closes it. Tiles need
 * a longer run than blocks (4 MiB or 16 reads), so that a chip over two or
 * three tiles of a row is not taken for a scan.
 */
static struct extent readahead_plan(struct cache *c, struct cache_object *obj, uint64_t stream,
				    uint64_t off, uint64_t end)
{
	struct extent ra = { 0, 0 };
	bool tile = layout_is_tile(&obj->layout, off);
	uint64_t trigger = tile ? READAHEAD_TILE_TRIGGER : 2 * obj->layout.block_size;

	pthread_mutex_lock(&c->lock);
	struct stream *s = stream_of(obj, stream);
	/* the kernel reads whole pages: a read may start in the page the
	   previous one ended in */
	if (off + READAHEAD_OVERLAP >= s->end && off <= s->end + READAHEAD_SLACK) {
		s->bytes += end - off;
		s->reads++;
	} else {
		s->bytes = end - off;
		s->reads = 1;
		s->ra_window = 0;
		s->ra_end = 0;
	}
	s->end = end;
	if (c->cfg.readahead_max && s->reads >= 2 &&
	    (s->bytes >= trigger || s->reads >= READAHEAD_READS)) {
		if (s->ra_window == 0)
			s->ra_window = READAHEAD_START < c->cfg.readahead_max ?
					 READAHEAD_START : c->cfg.readahead_max;
		if (s->ra_end < end + s->ra_window / 2 && end < obj->size) {
			ra.off = s->ra_end > end ? s->ra_end : end;
			uint64_t to = obj->size - end > s->ra_window ? end + s->ra_window : obj->size;
			ra.len = to > ra.off ? to - ra.off : 0;
			s->ra_end = to;
			s->ra_window = s->ra_window * 2 < c->cfg.readahead_max ?
					 s->ra_window * 2 : c->cfg.readahead_max;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return ra;
}

/* Queue OBJ for whole-object prefetch by the persist thread, once. */
static void object_prefetch_start(struct cache *c, struct cache_object *obj)
{
	struct object_job *job;

	if (obj->id < 0 || atomic_exchange(&obj->whole_queued, true))
		return;
	job = calloc(1, sizeof(*job));
	if (!job)
		return;
	job->obj = cache_object_ref(obj);
	pthread_mutex_lock(&c->lock);
	struct object_job **link = &c->jobs;
	while (*link)
		link = &(*link)->next;
	*link = job;
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->lock);
}

ssize_t cache_read(struct cache *c, struct cache_object *obj, uint64_t stream, char *buf,
		   size_t len, uint64_t off)
{
	if (off >= obj->size)
		return 0;
	if (len > obj->size - off)
		len = (size_t)(obj->size - off);
	if (len == 0)
		return 0;

	size_t n = 0, nfetch = 0, nwait = 0;
	for (uint64_t p = off; p < off + len; n++) {
		struct extent unit = layout_unit_at(&obj->layout, p);
		p = unit.off + unit.len;
	}
	pthread_mutex_lock(&c->lock);
	bool goes_on = off == stream_of(obj, stream)->end;	/* from where its last read ended */
	pthread_mutex_unlock(&c->lock);
	struct inflight **entries = calloc(n, sizeof(*entries));
	struct inflight **fetch = calloc(n + PREFETCH_MAX, sizeof(*fetch));
	struct inflight **others = calloc(n, sizeof(*others));
	ssize_t result = (ssize_t)len;
	if (!entries || !fetch || !others) {
		result = -ENOMEM;
		goto out;
	}

	/* hits, and entries for the misses (joining those already in flight) */
	uint64_t p = off;
	bool reading = false;		/* an earlier unit of this read is wanted */
	for (size_t i = 0; i < n; i++) {
		struct extent unit = layout_unit_at(&obj->layout, p);
		uint64_t part_end = unit.off + unit.len < off + len ? unit.off + unit.len : off + len;
		size_t part_len = (size_t)(part_end - p);
		/* Readers read in aligned buffers, so a read of one tile may
		   start in the tile before it (when it does not go on from the
		   last read) or end in the tile after it: those few bytes (not
		   all of that tile) are what the alignment asked for. */
		bool sliver = n > 1 && part_len < SLIVER_MAX && part_len < unit.len &&
			      layout_is_tile(&obj->layout, p) &&
			      ((i == 0 && !goes_on) || (i == n - 1 && reading));
		reading |= !sliver;
		if (read_cached(c, obj, unit, buf + (p - off), p, part_len) == 0) {
			p = part_end;
			continue;
		}
		pthread_mutex_lock(&c->lock);
		struct inflight *e = table_find(c, obj->id, unit.off);
		if (!e && sliver && edge_get(c, obj, p, part_len, buf + (p - off))) {
			pthread_mutex_unlock(&c->lock);
			p = part_end;
			continue;
		}
		struct inflight *joined = !e && sliver ?
					  sliver_find(c, obj, (struct extent){ p, part_len }) : NULL;
		if (e || joined) {
			e = e ? e : joined;
			e->refs++;
		} else if (sliver) {
			e = sliver_new(c, obj, (struct extent){ p, part_len });
			if (e)
				fetch[nfetch++] = e;
		} else {
			e = entry_new(c, obj, unit);
			if (e) {
				fetch[nfetch++] = e;
				c->stats.misses++;
			}
		}
		pthread_mutex_unlock(&c->lock);
		if (!e) {
			result = -ENOMEM;	/* still fetch what was started */
			break;
		}
		entries[i] = e;
		p = part_end;
	}

	/* claim our misses in the index; leave to others what they claimed */
	size_t kept = 0;
	for (size_t i = 0; i < nfetch; i++) {
		pid_t holder;
		if (fetch[i]->sliver) {
			fetch[kept++] = fetch[i];
			continue;
		}
		int rc = obj->id < 0 ? -ENOENT :
			 index_claim(c->index, obj->id, fetch[i]->unit.off, c->cfg.claim_wait_s,
				     &holder);
		if (rc == -EBUSY || rc == -EEXIST) {
			others[nwait++] = fetch[i];	/* another process has it */
			continue;
		}
		fetch[i]->claimed = rc == 0;
		fetch[kept++] = fetch[i];
	}
	nfetch = kept;

	/* what the prefetch policy and the readahead window add */
	size_t nall = nfetch;
	for (size_t i = 0; i < nfetch && c->cfg.prefetch != PREFETCH_NONE; i++) {
		if (fetch[i]->sliver)
			continue;
		if (c->cfg.prefetch == PREFETCH_OBJECT) {
			object_prefetch_start(c, obj);
			break;
		}
		struct extent related[PREFETCH_MAX];
		size_t room = n + PREFETCH_MAX - nall;
		size_t k = layout_related(&obj->layout, fetch[i]->unit.off, c->cfg.prefetch, related,
					  room < PREFETCH_MAX ? room : PREFETCH_MAX);
		for (size_t j = 0; j < k; j++) {
			struct inflight *e = prefetch_entry(c, obj, related[j]);
			if (e)
				fetch[nall++] = e;
		}
	}
	struct extent ra = readahead_plan(c, obj, stream, off, off + len);
	if (ra.len)
		log_debug("%s: reading ahead %" PRIu64 " bytes at %" PRIu64, obj->log_name, ra.len,
			  ra.off);
	uint64_t q = ra.off;
	while (q < ra.off + ra.len && nall < n + PREFETCH_MAX) {
		struct extent unit = layout_unit_at(&obj->layout, q);
		struct inflight *e = prefetch_entry(c, obj, unit);
		if (e)
			fetch[nall++] = e;
		q = unit.off + unit.len;
	}
	if (q < ra.off + ra.len) {
		pthread_mutex_lock(&c->lock);
		stream_of(obj, stream)->ra_end = q;	/* the rest next time */
		pthread_mutex_unlock(&c->lock);
	}
	qsort(fetch, nall, sizeof(*fetch), entry_cmp);
	submit_runs(c, obj, fetch, nall, true);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < nall; i++)
		if (fetch[i]->prefetch)
			entry_unref(fetch[i]);	/* nobody waits for it here */
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < nwait; i++)
		wait_for_other(c, obj, others[i]);

	pthread_mutex_lock(&c->lock);
	p = off;
	for (size_t i = 0; i < n; i++) {
		struct extent unit = layout_unit_at(&obj->layout, p);
		uint64_t part_end = unit.off + unit.len < off + len ? unit.off + unit.len : off + len;
		struct inflight *e = entries[i];
		if (e) {
			while (e->state == UNIT_FETCHING)
				pthread_cond_wait(&c->changed, &c->lock);
			if (e->state == UNIT_READY && result >= 0) {
				memcpy(buf + (p - off), e->buf + (p - e->unit.off), (size_t)(part_end - p));
				c->stats.bytes_served += part_end - p;
			} else if (result >= 0) {
				result = e->err ? e->err : -EIO;
			}
			entry_unref(e);
		}
		p = part_end;
	}
	if (result < 0)
		c->stats.errors++;
	pthread_mutex_unlock(&c->lock);
out:
	free(entries);
	free(fetch);
	free(others);
	return result;
}

/* ---- the persist thread ---- */

/* Drop units, least valuable first, until the cache is within its bound. */
static void evict(struct cache *c)
{
	uint64_t usage;
	struct index_unit victims[EVICT_BATCH];

	if (index_usage(c->index, &usage) != 0 || usage <= c->cfg.size_limit)
		return;
	uint64_t target = c->cfg.size_limit - c->cfg.size_limit / 20;
	while (usage > target) {
		size_t n = 0;
		if (index_eviction_candidates(c->index, victims, EVICT_BATCH, &n) != 0 || n == 0)
			break;
		for (size_t i = 0; i < n && usage > target; i++) {
			/* the row goes, under a claim: readers recheck the row after
			   reading, and nobody writes the unit while we punch */
			int err = index_unit_evict(c->index, &victims[i]);
			if (err == -ENOENT)
				continue;	/* another process evicted it */
			if (err)
				return;		/* the index cannot change now: later */
			store_punch(c->store, victims[i].object_id, victims[i].off, victims[i].len);
			index_unclaim(c->index, victims[i].object_id, victims[i].off);
			usage -= victims[i].len < usage ? victims[i].len : usage;
			pthread_mutex_lock(&c->lock);
			c->stats.evicted += victims[i].len;
			pthread_mutex_unlock(&c->lock);
		}
	}
}

/* The disk is full: give back the reserve, then evict a tenth. */
static void make_room(struct cache *c)
{
	if (!c->disk_full_logged)
		log_warn("cache disk is full: evicting, serving from the network meanwhile");
	c->disk_full_logged = true;
	store_reserve_release(c->store);
	uint64_t usage;
	if (index_usage(c->index, &usage) == 0 && usage > 0) {
		uint64_t saved = c->cfg.size_limit;
		c->cfg.size_limit = usage - usage / 10;
		evict(c);
		c->cfg.size_limit = saved;
	}
}

/*
 * Write a fetched unit to its data file, then record it in the index. Only
 * under the unit's claim: without it another process may be writing or
 * evicting the same bytes.
 */
static void persist(struct cache *c, struct inflight *e)
{
	struct cache_object *obj = e->obj;

	if (!e->claimed)
		return;
	int err = unit_store(c, obj->id, e->unit, e->buf);
	if (err == -EBUSY)
		return;		/* the claim passed to another process: its bytes now */
	if (err) {
		if (err == -ENOSPC || err == -EDQUOT)
			make_room(c);
		else
			log_warn("cannot cache a unit of %s: %s", obj->log_name, strerror(-err));
		return;
	}
	if (c->disk_full_logged) {
		c->disk_full_logged = false;
		store_reserve_restore(c->store);
	}
}

static void flush_touched(struct cache *c)
{
	int64_t ids[TOUCH_MAX];
	pthread_mutex_lock(&c->lock);
	size_t n = c->ntouched;
	memcpy(ids, c->touched, n * sizeof(ids[0]));
	c->ntouched = 0;
	pthread_mutex_unlock(&c->lock);
	if (n)
		index_units_touch(c->index, ids, n);
}

/* Drop the first object job. c->lock held. */
static void job_done(struct cache *c)
{
	struct object_job *job = c->jobs;
	c->jobs = job->next;
	cache_object_unref(job->obj);
	free(job);
}

/* Prefetch the next units of the first whole-object job, if the
 * background budget has room. */
static void job_step(struct cache *c)
{
	struct inflight *batch[JOB_BATCH];
	size_t n = 0;
	uint64_t bytes = 0;

	pthread_mutex_lock(&c->lock);
	struct object_job *job = c->jobs;
	bool room = c->background_bytes < BACKGROUND_BUDGET;
	pthread_mutex_unlock(&c->lock);
	if (!job || !room)
		return;
	struct cache_object *obj = job->obj;
	while (job->cursor < obj->size && n < JOB_BATCH && bytes < c->cfg.max_request &&
	       !cache_object_stale(obj)) {
		struct extent unit = layout_unit_at(&obj->layout, job->cursor);
		struct inflight *e = prefetch_entry(c, obj, unit);
		if (e) {
			batch[n++] = e;
			bytes += unit.len;
		}
		job->cursor = unit.off + unit.len;
	}
	submit_runs(c, obj, batch, n, false);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		entry_unref(batch[i]);
	if (job->cursor >= obj->size || cache_object_stale(obj))
		job_done(c);
	pthread_mutex_unlock(&c->lock);
}

static void *persist_thread(void *arg)
{
	struct cache *c = arg;
	time_t last_flush = time(NULL);

	pthread_mutex_lock(&c->lock);
	for (;;) {
		struct inflight *e = c->queue_head;
		if (!e && c->stopping) {
			while (c->jobs)
				job_done(c);
			break;
		}
		if (!e && c->jobs && c->background_bytes < BACKGROUND_BUDGET) {
			pthread_mutex_unlock(&c->lock);
			job_step(c);
			pthread_mutex_lock(&c->lock);
		} else if (!e) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			pthread_cond_timedwait(&c->work, &c->lock, &until);
		} else {
			c->queue_head = e->queue_next;
			if (!c->queue_head)
				c->queue_tail = NULL;
			pthread_mutex_unlock(&c->lock);
			if (e->persist) {
				persist(c, e);
				evict(c);
			} else if (e->claimed) {
				index_unclaim(c->index, e->obj->id, e->unit.off);
			}
			pthread_mutex_lock(&c->lock);
			/* out of the table: later reads find it in the index */
			struct inflight **link = &c->table[table_slot(e->obj->id, e->unit.off)];
			while (*link != e)
				link = &(*link)->table_next;
			*link = e->table_next;
			entry_unref(e);
		}
		if (time(NULL) != last_flush || c->ntouched >= TOUCH_MAX / 2) {
			last_flush = time(NULL);
			pthread_mutex_unlock(&c->lock);
			flush_touched(c);
			pthread_mutex_lock(&c->lock);
		}
	}
	pthread_mutex_unlock(&c->lock);
	flush_touched(c);
	return NULL;
}

/* ---- warming ---- */

const struct layout *cache_object_layout(const struct cache_object *obj)
{
	return &obj->layout;
}

int cache_units_missing(struct cache *c, const struct cache_object *obj,
			const struct extent *units, size_t n, bool *missing)
{
	struct index_unit *have = NULL;
	size_t nhave = 0, j = 0;
	int err = obj->id < 0 ? 0 : index_units_of(c->index, obj->id, &have, &nhave);

	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		while (j < nhave && have[j].off < units[i].off)
			j++;
		missing[i] = !(j < nhave && have[j].off == units[i].off && have[j].len == units[i].len);
	}
	free(have);
	return 0;
}

/*
 * GET UNITS[0..n) of OBJ (adjacent, all claimed by us) and store them, from
 * the calling thread: no inflight entries, no copy into them, no persist
 * queue. Every claim is released (by the index row, or here on failure).
 */
static int warm_run(struct cache *c, struct cache_object *obj, const struct extent *units,
		    size_t n, struct cache_warm_counts *out)
{
	uint64_t off = units[0].off, end = units[n - 1].off + units[n - 1].len;
	struct http_request req = {
		.url = obj->url, .log_name = obj->log_name, .off = off, .len = end - off,
		.if_match = obj->etag[0] ? obj->etag : NULL,
		.if_unmodified_since = obj->etag[0] ? NULL : obj->last_modified,
	};
	int err = (req.body = malloc(req.len)) ? 0 : -ENOMEM;
	size_t i = 0;

	if (!err) {
		source_prepare(c->src, &req);
		err = http_run(c->http, &req);
		if (err == -ERANGE || err == -ENOENT || (!err && !answer_matches(obj, &req)))
			err = -ESTALE;
	}
	if (err == -ESTALE) {
		atomic_store(&obj->stale, true);
		log_error("%s changed on the origin since it was opened; reopen it", obj->log_name);
	}
	if (!err) {
		pthread_mutex_lock(&c->lock);
		c->stats.bytes_fetched += req.body_len;
		pthread_mutex_unlock(&c->lock);
	}
	while (!err && i < n) {
		/* the unit's claim goes with its row, or unit_store() drops it */
		err = unit_store(c, obj->id, units[i], req.body + (units[i].off - off));
		if (err == -EBUSY)
			err = 0;	/* taken over as stale: another process's bytes now */
		else if (!err)
			out->fetched += units[i].len;
		i++;
	}
	for (; i < n; i++)
		index_unclaim(c->index, obj->id, units[i].off);
	free(req.body);
	return err;
}

int cache_warm(struct cache *c, struct cache_object *obj, const struct extent *units, size_t n,
	       struct cache_warm_counts *out)
{
	bool *mine = calloc(n ? n : 1, sizeof(*mine));
	int err = 0;

	if (!mine)
		return -ENOMEM;
	if (obj->id < 0) {
		free(mine);
		return -ENOTSUP;	/* the origin gives no version to cache it by */
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct index_unit u;
		pid_t holder;
		int rc = index_unit_find(c->index, obj->id, units[i].off, &u) == 0 &&
				 u.len == units[i].len ? -EEXIST :
			 index_claim(c->index, obj->id, units[i].off, c->cfg.claim_wait_s, &holder);
		if (rc == -EEXIST)
			out->cached += units[i].len;
		else if (rc == -EBUSY)
			out->elsewhere += units[i].len;	/* another process is fetching it */
		else if (rc)
			err = rc;
		else
			mine[i] = true;
	}
	/* adjacent claimed units share a GET of up to max_request bytes */
	for (size_t i = 0; i < n;) {
		if (!mine[i]) {
			i++;
			continue;
		}
		size_t j = i + 1;
		while (j < n && mine[j] && units[j].off == units[j - 1].off + units[j - 1].len &&
		       units[j].off + units[j].len - units[i].off <= c->cfg.max_request)
			j++;
		int rc = err ? 0 : warm_run(c, obj, units + i, j - i, out);
		if (err)
			for (size_t k = i; k < j; k++)
				index_unclaim(c->index, obj->id, units[k].off);
		if (rc && !err)
			err = rc;
		i = j;
	}
	free(mine);
	if (!err)
		evict(c);
	return err;
}

/* ---- opening objects ---- */

static struct cache_object *object_new(struct cache *c, int64_t id, const char *url,
				       const char *log_name, const struct http_request *req,
				       const char *version, uint64_t size)
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
	obj->cache = c;
	obj->id = id;
	obj->size = size;
	snprintf(obj->version, sizeof(obj->version), "%s", version);
	snprintf(obj->etag, sizeof(obj->etag), "%s", req->etag);
	snprintf(obj->last_modified, sizeof(obj->last_modified), "%s", req->last_modified);
	obj->mtime = req->last_modified[0] ? curl_getdate(req->last_modified, NULL) : 0;
	if (obj->mtime < 0)
		obj->mtime = 0;
	return obj;
}

/* The claims-table key of "probing URL": negative, so never an object id. */
static int64_t url_claim_key(const char *url)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)url; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return -(int64_t)(h >> 1) - 1;
}

/*
 * Nothing of URL is cached: become the one process that probes it, or wait
 * while another does. Returns true if we hold the probe claim; sets *known
 * when the other process's probe recorded the object meanwhile.
 */
static bool probe_claim(struct cache *c, const char *url, struct index_object *latest,
			bool *known)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	int64_t key = url_claim_key(url);

	for (int i = 0; i < c->cfg.claim_wait_s * 200; i++) {
		pid_t holder;
		int rc = index_claim(c->index, key, 0, c->cfg.claim_wait_s, &holder);
		if (rc == 0 && index_object_latest(c->index, url, latest) == 0) {
			/* probed by another process just before our claim */
			index_unclaim(c->index, key, 0);
			*known = true;
			return false;
		}
		if (rc != -EBUSY)
			return rc == 0;
		nanosleep(&pause, NULL);
		if (index_object_latest(c->index, url, latest) == 0) {
			*known = true;
			return false;
		}
	}
	return false;
}

/*
 * The bytes fetched while opening an object: its first header_len bytes,
 * and whatever more the TIFF parser asked for. Every unit they cover is
 * stored once the object's layout is known.
 */
struct fetched {
	struct cache *cache;
	const char *url, *log_name;
	const char *etag, *last_modified;
	uint64_t size;
	size_t n;
	struct {
		uint64_t off;
		size_t len;
		char *buf;
	} range[PARSE_FETCHES_MAX];
};

static void fetched_release(struct fetched *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->range[i].buf);
	f->n = 0;
}

/* The end of the bytes fetched from OFF on, without a gap (OFF: none). */
static uint64_t fetched_end(const struct fetched *f, uint64_t off)
{
	for (size_t i = 0; i < f->n; i++)
		if (off >= f->range[i].off && off < f->range[i].off + f->range[i].len) {
			off = f->range[i].off + f->range[i].len;
			i = (size_t)-1;		/* look again from there */
		}
	return off;
}

/* Copy [off, off+len) from what was fetched; false if some is missing. */
static bool fetched_copy(const struct fetched *f, char *dst, uint64_t off, size_t len)
{
	while (len > 0) {
		size_t i = 0;
		while (i < f->n && !(off >= f->range[i].off && off < f->range[i].off + f->range[i].len))
			i++;
		if (i == f->n)
			return false;
		size_t take = (size_t)(f->range[i].off + f->range[i].len - off);
		if (take > len)
			take = len;
		if (dst) {
			memcpy(dst, f->range[i].buf + (off - f->range[i].off), take);
			dst += take;
		}
		off += take;
		len -= take;
	}
	return true;
}

/* tiff_read_fn: serve the parser from what was fetched, fetching more
 * (pinned to the version opened) in chunks of PARSE_CHUNK. */
static int fetched_read(void *arg, void *buf, size_t len, uint64_t off)
{
	struct fetched *f = arg;

	if (off > f->size || len > f->size - off)
		return -ERANGE;
	if (fetched_copy(f, buf, off, len))
		return 0;
	if (f->n == PARSE_FETCHES_MAX)
		return -E2BIG;
	uint64_t start = fetched_end(f, off);	/* past what is there already */
	uint64_t end = off + len - start > PARSE_CHUNK ? off + len : start + PARSE_CHUNK;
	if (end > f->size)
		end = f->size;
	struct http_request req = {
		.url = f->url, .log_name = f->log_name, .off = start, .len = end - start,
		.if_match = f->etag[0] ? f->etag : NULL,
		.if_unmodified_since = f->etag[0] ? NULL : f->last_modified,
	};
	req.body = malloc(req.len);
	if (!req.body)
		return -ENOMEM;
	source_prepare(f->cache->src, &req);
	int err = http_run(f->cache->http, &req);
	if (!err && req.object_size != UINT64_MAX && req.object_size != f->size)
		err = -ESTALE;
	if (err == -ENOENT || err == -ERANGE)
		err = -ESTALE;
	if (err) {
		free(req.body);
		return err;
	}
	f->range[f->n].off = start;
	f->range[f->n].len = req.body_len;
	f->range[f->n].buf = req.body;
	f->n++;
	pthread_mutex_lock(&f->cache->lock);
	f->cache->stats.bytes_fetched += req.body_len;
	pthread_mutex_unlock(&f->cache->lock);
	return fetched_copy(f, buf, off, len) ? 0 : -EIO;
}

/* Store every unit of OBJ that the fetched bytes cover whole. */
static void store_fetched(struct cache *c, struct cache_object *obj, const struct fetched *f)
{
	if (obj->id < 0)
		return;
	for (size_t i = 0; i < f->n; i++) {
		uint64_t end = f->range[i].off + f->range[i].len;
		for (uint64_t p = f->range[i].off; p < end;) {
			struct extent unit = layout_unit_at(&obj->layout, p);
			p = unit.off + unit.len;
			char *bytes = malloc(unit.len ? unit.len : 1);
			pid_t holder;
			if (!bytes)
				return;
			if (fetched_copy(f, bytes, unit.off, unit.len) &&
			    index_claim(c->index, obj->id, unit.off, c->cfg.claim_wait_s, &holder) == 0)
				unit_store(c, obj->id, unit, bytes);
			free(bytes);
		}
	}
}

/* Run REQ (reset) against URL: a HEAD, or a GET of its first LEN bytes
 * into a buffer the caller frees (req->body). */
static int probe_run(struct cache *c, const char *url, const char *log_name, uint64_t len,
		     struct http_request *req)
{
	memset(req, 0, sizeof(*req));
	req->url = url;
	req->log_name = log_name;
	req->head = len == 0;
	req->len = len;
	if (len && !(req->body = malloc(len)))
		return -ENOMEM;
	source_prepare(c->src, req);
	return http_run(c->http, req);
}

/* GET the first header_len bytes of URL into F (an empty object: HEAD). */
static int fetch_first(struct cache *c, const char *url, const char *log_name,
		       struct http_request *req, struct fetched *f)
{
	int err = probe_run(c, url, log_name, c->cfg.header_len, req);
	if (err == -ERANGE) {
		free(req->body);
		err = probe_run(c, url, log_name, 0, req);
	}
	if (!err && req->body_len > 0) {
		f->range[0].off = 0;
		f->range[0].len = req->body_len;
		f->range[0].buf = req->body;
		f->n = 1;
		pthread_mutex_lock(&c->lock);
		c->stats.bytes_fetched += req->body_len;
		pthread_mutex_unlock(&c->lock);
	} else {
		free(req->body);
	}
	req->body = NULL;
	return err;
}

/* Parse what F holds (fetching more if needed) into an encoded tile map
 * (*blob NULL: not a usable TIFF, which is logged when it claims to be). */
static int parse_tiles(struct cache *c, struct fetched *f, void **blob, size_t *blob_len)
{
	struct tiff_map *map = NULL;
	char why[160];

	*blob = NULL;
	*blob_len = 0;
	int err = tiff_map_parse(fetched_read, f, f->size, &map, why, sizeof(why));
	if (err == -EINVAL || err == -E2BIG)
		log_warn("%s: not a usable TIFF (%s); caching it as plain bytes", f->log_name,
			 err == -E2BIG ? "its IFDs are scattered over too many places" : why);
	if (err == -EINVAL || err == -E2BIG || err == -ENOTSUP)
		return 0;
	if (err)
		return err;
	err = tiff_map_encode(map, blob, blob_len);
	tiff_map_free(map);
	return err;
}

/* Cut OBJ as the index row FOUND and BLOB say (BLOB NULL: plain bytes;
 * LEGACY: plain blocks). */
static void object_layout(struct cache_object *obj, const struct index_object *found,
			  const void *blob, size_t blob_len, bool legacy)
{
	struct tiff_map *map = NULL;
	if (legacy) {
		layout_init_blocks(&obj->layout, obj->size, found->block_size);
		return;
	}
	if (blob && tiff_map_decode(blob, blob_len, obj->size, &map) != 0)
		log_warn("%s: the cached tile map is damaged; reading it as plain bytes",
			 obj->log_name);
	if (layout_init(&obj->layout, obj->size, found->block_size, found->header_len, map) != 0)
		layout_init_blocks(&obj->layout, obj->size, found->block_size);
}

/* The version REQ's answer names (its ETag, else "lm:" Last-Modified);
 * -EIO if it did not say how large the object is. */
static int answer_version(const struct http_request *req, const char *log_name, char *version,
			  size_t len)
{
	if (req->object_size == UINT64_MAX) {
		log_error("%s: the origin did not say how large it is", log_name);
		return -EIO;
	}
	if (req->etag[0])
		snprintf(version, len, "%s", req->etag);
	else
		snprintf(version, len, "lm:%s", req->last_modified);
	return 0;
}

int cache_object_open(struct cache *c, const char *url, const char *log_name,
		      struct cache_object **out)
{
	static atomic_llong next_uncached_id = -1;
	struct index_object latest, found = { 0 };
	struct http_request req;
	struct fetched f = { .cache = c, .url = url, .log_name = log_name };
	char version[192];
	void *blob = NULL;
	size_t blob_len = 0;
	bool legacy = false, created = false;
	int err;

	bool known = index_object_latest(c->index, url, &latest) == 0;
	bool claimed = !known && probe_claim(c, url, &latest, &known);
	if (known)
		err = probe_run(c, url, log_name, 0, &req);	/* just check it is current */
	else
		err = fetch_first(c, url, log_name, &req, &f);
	if (!err)
		err = answer_version(&req, log_name, version, sizeof(version));
	if (err)
		goto fail;

	bool current = known && strcmp(latest.version, version) == 0 &&
		       latest.size == req.object_size;
	if (known && !current) {
		/* changed on the origin: read the new version's header */
		log_info("%s changed on the origin", log_name);
		err = fetch_first(c, url, log_name, &req, &f);
		if (!err)
			err = answer_version(&req, log_name, version, sizeof(version));
		if (err)
			goto fail;
	}
	f.size = req.object_size;
	f.etag = req.etag;
	f.last_modified = req.last_modified;

	found.size = req.object_size;
	found.block_size = c->cfg.block_size;
	found.header_len = c->cfg.header_len;
	snprintf(found.version, sizeof(found.version), "%s", version);
	if (current) {
		found = latest;
		err = index_object_map(c->index, found.id, &found.header_len, &blob, &blob_len);
		legacy = err == -ENOENT;
		if (err && !legacy) {
			/* cannot tell how others cut it: read it uncached */
			found.id = atomic_fetch_sub(&next_uncached_id, 1);
			legacy = true;
		}
	} else {
		err = parse_tiles(c, &f, &blob, &blob_len);
		if (err)
			goto fail;
		if (!req.etag[0] && !req.last_modified[0]) {
			/* nothing tells one version from the next: never cache it */
			log_warn("%s: the origin gives neither ETag nor Last-Modified; reading it uncached",
				 log_name);
			found.id = atomic_fetch_sub(&next_uncached_id, 1);
		} else if (index_object_add(c->index, url, &found, blob, blob_len, &created) != 0) {
			log_warn("%s: the cache index cannot record it; reading it uncached", log_name);
			found.id = atomic_fetch_sub(&next_uncached_id, 1);
		} else if (!created) {
			/* another process added it first: cut it as it did */
			free(blob);
			blob = NULL;
			err = index_object_map(c->index, found.id, &found.header_len, &blob, &blob_len);
			legacy = err == -ENOENT;
		}
		/* an older version's units are left to eviction: open files of
		   this or another process may still read them */
	}

	struct cache_object *obj = object_new(c, found.id, url, log_name, &req, version,
					      req.object_size);
	err = -ENOMEM;
	if (!obj)
		goto fail;
	object_layout(obj, &found, blob, blob_len, legacy);
	obj->added = created;
	store_fetched(c, obj, &f);
	if (claimed)
		index_unclaim(c->index, url_claim_key(url), 0);
	fetched_release(&f);
	free(blob);
	*out = obj;
	return 0;
fail:
	if (claimed)
		index_unclaim(c->index, url_claim_key(url), 0);
	fetched_release(&f);
	free(blob);
	pthread_mutex_lock(&c->lock);
	c->stats.errors++;
	pthread_mutex_unlock(&c->lock);
	return err;
}

/* ---- the cache ---- */

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
