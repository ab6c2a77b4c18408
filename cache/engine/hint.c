/*
 * hint.c - the coming reads as a prefetch plan (tilefs hint): a list of
 * entries (an object, and a pixel window of it or all of it) that readers
 * will read in about that order. A thread of the cache walks the list ahead
 * of them, opening each object and fetching the units of its entry in
 * background GETs (fetch.c's submit_runs(), as whole-object streaming
 * does), while the bytes of the entries between the readers' cursor and
 * its own stay under the hint's budget.
 *
 * Level 6 of the engine (engine_int.h): calls objects.c (each object
 * opened once, not once an entry), fetch.c and what lies under them;
 * cache.c makes and frees it, the FUSE front feeds it (cache_hint_set(),
 * cache_hint_read()).
 *
 * DESIGN. The entries form an array with three marks, each only growing
 * while one hint stands:
 *   settled <= cursor: entries below settled were counted read or skipped
 *           (a late read of a skipped one still counts it read);
 *   cursor: readers are past the entries below it. A read of a tile of
 *           the full-resolution image under an entry's window (any byte
 *           of its object, for a whole-object entry) near the cursor
 *           marks it read, and moves the cursor past it. Readers read
 *           roughly in order, several at once, and a DataLoader's workers
 *           a batch each: one starts the fourth batch while another reads
 *           the first. So entries behind the cursor stay unsettled for
 *           late reads for the slack: twice as far behind as a late read
 *           came in this hint, HINT_SLACK at least (slack());
 *   ahead:  the entry the thread takes next; those it took are done
 *           (fetched, or given up on). What the cursor passed is not
 *           fetched, unless reads came late in this hint: then, as far
 *           back as twice the furthest of them, the readers still to come
 *           want it, and a read later than any before sends the thread
 *           back to the first entry there neither read nor done (a
 *           DataLoader's first batches: the worker of the fourth moves
 *           the cursor past the first three before their readers' first
 *           reads come).
 *           bytes_ahead counts what was sent for the done entries at or
 *           past the cursor (what was cached already weighs nothing: it
 *           takes no room in the cache), and the thread takes an entry
 *           past the cursor only while it is below the budget, so at most
 *           one entry's bytes beyond it are fetched, and at most
 *           HINT_LOOKAHEAD entries ahead. An entry behind the cursor is
 *           one its readers want now: the budget does not hold it back.
 * A new hint replaces the array and bumps the generation: the thread drops
 * what it was resolving for the old one.
 *
 * LOCKS: h->lock protects what is marked so below. It is taken before
 * c->lock, never under it, and not held across I/O.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/log.h"
#include "cache/store/evict.h"
#include "cache/store/index.h"
#include "cache/tiff/select.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HINT_SLACK 64		/* entries behind the cursor unsettled, at least */
#define HINT_BEHIND 4096	/* entries behind the cursor a late read finds */
#define HINT_LOOKAHEAD 4096	/* entries past the thread a read may jump to */
#define HINT_WAIT_MS 200	/* how often a waiting thread looks at the hint again */
#define HINT_OBJECTS 32		/* objects the thread keeps open */
#define HINT_UNREAD_S 5		/* a unit kept for the readers this long
				   unread: most likely skipped */
#define HINT_NEAR 8		/* entries past the cursor a tile read
				   again is still taken for: readers at once */
#define HINT_AGAIN 256		/* entries past one read that may want its
				   unit again, and have it kept */

struct hint_entry {
	char *url, *log_name;		/* owned */
	char *etag;			/* owned; NULL: nothing listed */
	int64_t size;
	time_t mtime;
	uint64_t url_hash;
	unsigned line;
	bool window;
	uint64_t x, y, w, h;
	uint64_t bytes;			/* h->lock: what the thread sent for it,
					   counted in bytes_ahead once sent */
	bool read;			/* h->lock: a read was of it */
	bool done;			/* h->lock: the thread fetched it (or
					   gave up on it) */
};

struct hint {
	struct cache *cache;
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* a new hint, the cursor moved, or stop */
	pthread_t thread;
	bool started;			/* h->lock */
	atomic_bool stopping;
	_Atomic uint64_t generation;	/* bumped by each cache_hint_set() */
	atomic_size_t live;		/* entries in the hint, read without the lock */
	struct hint_entry *v;		/* h->lock */
	size_t n;			/* h->lock */
	size_t settled, cursor, ahead;	/* h->lock: see DESIGN */
	size_t lag;			/* h->lock: the furthest behind the
					   cursor a read found its entry */
	uint64_t bytes_ahead, budget;	/* h->lock */
	uint64_t fetched_bytes, skipped;	/* h->lock */
};

static uint64_t url_hash(const char *s)
{
	uint64_t x = 1469598103934665603ull;	/* FNV-1a */
	for (; *s; s++)
		x = (x ^ (unsigned char)*s) * 1099511628211ull;
	return x;
}

static void entries_free(struct hint_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].url);
		free(v[i].log_name);
		free(v[i].etag);
	}
	free(v);
}

struct hint *hint_new(struct cache *c)
{
	struct hint *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->cache = c;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->wake, NULL);
	return h;
}

/* Twice as far behind the cursor as a read came late in this hint, at
 * most HINT_BEHIND: what the cursor passed that readers may still read.
 * h->lock held. */
static size_t late_span(const struct hint *h)
{
	return 2 * h->lag < HINT_BEHIND ? 2 * h->lag : HINT_BEHIND;
}

/* How far behind the cursor entries stay unsettled (see DESIGN). h->lock
 * held. */
static size_t slack(const struct hint *h)
{
	size_t d = late_span(h);
	return d < HINT_SLACK ? HINT_SLACK : d;
}

/* Count entries below the cursor less the slack (below the cursor, if
 * ALL: the hint ends) that no read found as skipped. h->lock held. */
static void settle(struct hint *h, bool all)
{
	size_t d = slack(h);
	size_t upto = all ? h->cursor : h->cursor > d ? h->cursor - d : 0;
	for (; h->settled < upto; h->settled++)
		if (!h->v[h->settled].read)
			h->skipped++;
}

/* Put the cursor at TO (above it), taking the entries passed out of the
 * budget. h->lock held. */
static void cursor_move(struct hint *h, size_t to)
{
	for (size_t i = h->cursor; i < to && i < h->n; i++)
		if (h->v[i].done)
			h->bytes_ahead -= h->v[i].bytes;
	h->cursor = to;
	settle(h, false);
	pthread_cond_signal(&h->wake);
}

int cache_object_window_check(struct cache_object *obj, const struct hint_line *l,
			      char *why, size_t why_size)
{
	if (l->window && object_cut(obj) != 0) {
		snprintf(why, why_size, "the cache index cannot say how it is cut");
		return -EIO;
	}
	return !l->window || window_inside(&obj->layout, l->x, l->y, l->w, l->h, why, why_size) ?
		0 : -EINVAL;
}

/* How many bytes the thread may have ahead of the readers now, with
 * BUDGET asked for. Into a cache with room, BUDGET. Into a full cache,
 * what it fetches that does not get in is kept for its readers until read
 * (evict.h: EVICT_AHEAD_S), in room taken from the admitted units: at most
 * the room eviction leaves below the bound, so the part of a data set that
 * fits stays (a hint fetching into probation instead saw its units evicted
 * before their readers came, fetched them twice, and the second fetch
 * admitted them over the part that fits: tests/bench/evict_sim.py --hint);
 * and nothing while the units kept so on the cache dir (by every process)
 * that have waited HINT_UNREAD_S for their readers pass an eighth of the
 * bound: readers that skip what was fetched for them leave it kept until
 * it expires. (Readers read what is fetched for them within moments, and
 * their reads are written to the index within a second or two: counting
 * every unit kept would count what they read, at tens of MB/s, and stall
 * the hint for nothing.) SQLite reads: not under h->lock. */
static uint64_t ahead_cap(struct cache *c, uint64_t budget)
{
	uint64_t usage, kept, limit = c->cfg.size_limit;
	if (!limit || index_usage(c->index, &usage) != 0 || usage < evict_target(limit))
		return budget;
	uint64_t room = limit - evict_target(limit);
	if (index_ahead_bytes(c->index, HINT_UNREAD_S, &kept) != 0 || kept >= limit / 8)
		return 0;
	return budget < room ? budget : room;
}

/* Wait on COND (LOCK held) until signalled, or HINT_WAIT_MS at most. */
static void wait_a_while(pthread_cond_t *cond, pthread_mutex_t *lock)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += HINT_WAIT_MS * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cond, lock, &until);
}

/* Wait until background_room() allows one more background GET; false if
 * the hint changed from GEN or the thread is stopping. */
static bool hint_room(struct hint *h, uint64_t gen)
{
	struct cache *c = h->cache;

	for (;;) {
		if (atomic_load(&h->stopping) || atomic_load(&h->generation) != gen)
			return false;
		if (background_room(c))
			return true;
		pthread_mutex_lock(&c->lock);
		bool stopping = c->stopping;
		if (!stopping)
			wait_a_while(&c->work, &c->lock);
		pthread_mutex_unlock(&c->lock);
		if (stopping)
			return false;
	}
}

/* Fetch UNITS[0..n) of OBJ that are neither cached nor in flight, in
 * background GETs of at most STREAM_GET_MAX bytes each while the
 * background budget has room. Returns the bytes sent for. */
static uint64_t fetch_units(struct hint *h, uint64_t gen, struct cache_object *obj,
			    const struct extent *units, size_t n)
{
	struct cache *c = h->cache;
	struct inflight *batch[PREFETCH_MAX];
	uint64_t sent = 0;

	for (size_t i = 0; i < n && !cache_object_stale(obj);) {
		size_t first = i;
		uint64_t span = 0;
		if (!hint_room(h, gen))
			break;
		for (; i < n && i - first < PREFETCH_MAX && span < STREAM_GET_MAX; i++)
			span += units[i].len;
		size_t k = prefetch_entries(c, obj, units + first, i - first, true, batch);
		submit_runs(c, obj, batch, k, FETCH_FOR_HINT);
		pthread_mutex_lock(&c->lock);
		for (size_t j = 0; j < k; j++) {
			sent += batch[j]->unit.len;
			entry_unref(batch[j]);
		}
		pthread_mutex_unlock(&c->lock);
	}
	return sent;
}

/* Append X to W[0..*k) unless it is W's last unit or before it. */
static void push_unit(struct extent *w, size_t *k, struct extent x)
{
	if (*k == 0 || x.off > w[*k - 1].off)
		w[(*k)++] = x;
}

/*
 * A streamed object (PREFETCH_OBJECT) gets every unit whole: a reader's
 * page-aligned read of the first or last bytes of a tile, which takes a
 * few KiB of the unit before or after it, waits for that whole unit then
 * (read.c), unless it is on its way. So the units of a window of such an
 * object come with the unit before and the one after each run of them:
 * the stream would fetch those later, the readers want them now. *V (n
 * units, sorted and distinct) is replaced, sorted and distinct still.
 * 0 or -ENOMEM (*V unchanged).
 */
static int add_neighbours(const struct layout *l, struct extent **v, size_t *n)
{
	const struct extent *u = *v;
	size_t m = *n, k = 0;
	struct extent *w = malloc((3 * m + 1) * sizeof(*w));

	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < m; i++) {
		uint64_t end = u[i].off + u[i].len;
		if ((i == 0 || u[i - 1].off + u[i - 1].len != u[i].off) && u[i].off > 0)
			push_unit(w, &k, layout_unit_at(l, u[i].off - 1));
		push_unit(w, &k, u[i]);
		if ((i + 1 == m || u[i + 1].off != end) && end < l->object_size)
			push_unit(w, &k, layout_unit_at(l, end));
	}
	free(*v);
	*v = w;
	*n = k;
	return 0;
}

/*
 * Open the object of E (or take it from OPENED, where it stays) and fetch
 * the units of E: *bytes what they weigh, *sent what was sent for. 0, or
 * -errno when E cannot be fetched (logged).
 */
static int resolve(struct hint *h, uint64_t gen, const struct hint_entry *e,
		   struct cache_objects *opened, uint64_t *bytes, uint64_t *sent)
{
	struct cache *c = h->cache;
	struct selection sel = { .ifd = -1 };
	struct extent *v = NULL;
	size_t n = 0;
	char why[200];
	int err = 0;

	*bytes = *sent = 0;
	struct cache_listed listed = { e->etag ? e->etag : "", e->size, e->mtime };
	struct cache_object *obj;
	err = cache_objects_open(opened, c, e->url, e->log_name, e->etag ? &listed : NULL, &obj);
	if (err) {
		log_warn("hint: line %u: %s: cannot open (%s): skipped", e->line, e->log_name,
			 strerror(-err));
		return err;
	}
	err = object_cut(obj);	/* a version the open found cached: cut now */
	if (err)
		return err;
	if (e->window) {
		if (!window_inside(&obj->layout, e->x, e->y, e->w, e->h, why, sizeof(why))) {
			log_warn("hint: line %u: %s: %s: skipped", e->line, e->log_name, why);
			return -EINVAL;
		}
		sel.window = true;
		sel.x = e->x;
		sel.y = e->y;
		sel.w = e->w;
		sel.h = e->h;
	}
	err = selection_units(&obj->layout, &sel, &v, &n);
	if (err)
		return err;
	if (e->window) {
		/* the header unit is every window's, and the open brought it:
		   it weighs nothing ahead */
		size_t kept = 0;
		for (size_t i = 0; i < n; i++)
			if (v[i].off != 0)
				v[kept++] = v[i];
		n = kept;
		if (prefetch_policy(c) == PREFETCH_OBJECT &&
		    (err = add_neighbours(&obj->layout, &v, &n)) != 0) {
			free(v);
			return err;
		}
	}
	for (size_t i = 0; i < n; i++)
		*bytes += v[i].len;
	*sent = fetch_units(h, gen, obj, v, n);
	free(v);
	return 0;
}

/* Is the entry at h->ahead one to fetch now: in the hint, under the
 * budget and the lookahead (see DESIGN)? h->lock held. */
static bool next_due(const struct hint *h)
{
	return h->ahead < h->n && (h->ahead < h->cursor || (h->bytes_ahead < h->budget &&
							    h->ahead - h->cursor < HINT_LOOKAHEAD));
}

/* The hint thread: fetches the entries at h->ahead while the budget
 * allows (see DESIGN). */
static void *hint_thread(void *arg)
{
	struct hint *h = arg;
	struct cache_objects *opened = cache_objects_new(HINT_OBJECTS);

	if (!opened) {
		log_error("hint: out of memory: nothing is fetched ahead");
		return NULL;
	}
	pthread_mutex_lock(&h->lock);
	while (!atomic_load(&h->stopping)) {
		size_t keep = late_span(h);
		if (h->ahead + keep < h->cursor)
			h->ahead = h->cursor - keep;	/* passed: not fetched */
		while (h->ahead < h->n && (h->v[h->ahead].done || h->v[h->ahead].read))
			h->ahead++;	/* taken before a late read sent it back */
		if (!next_due(h)) {
			pthread_cond_wait(&h->wake, &h->lock);
			continue;
		}
		uint64_t budget = h->budget;
		pthread_mutex_unlock(&h->lock);	/* readers take it at every read */
		uint64_t cap = ahead_cap(h->cache, budget);
		pthread_mutex_lock(&h->lock);
		if (!next_due(h))
			continue;	/* changed meanwhile */
		if (h->ahead >= h->cursor && h->bytes_ahead >= cap) {
			/* looked at again as the readers move, or soon */
			wait_a_while(&h->wake, &h->lock);
			continue;
		}
		size_t i = h->ahead;
		uint64_t gen = atomic_load(&h->generation);
		struct hint_entry e = h->v[i];	/* its strings stay while gen does */
		e.url = strdup(e.url);
		e.log_name = strdup(e.log_name);
		e.etag = e.etag ? strdup(e.etag) : NULL;
		pthread_mutex_unlock(&h->lock);

		uint64_t bytes = 0, sent = 0;
		int err = e.url && e.log_name ? resolve(h, gen, &e, opened, &bytes, &sent) :
			  -ENOMEM;
		free(e.url);
		free(e.log_name);
		free(e.etag);

		pthread_mutex_lock(&h->lock);
		h->fetched_bytes += sent;
		if (atomic_load(&h->generation) != gen)
			continue;	/* a new hint */
		struct hint_entry *he = &h->v[i];
		he->done = true;
		he->bytes = err ? 0 : sent;	/* what is cached weighs nothing ahead */
		if (err && !he->read) {
			he->read = true;	/* counted once, here */
			h->skipped++;
		}
		if (i >= h->cursor)
			h->bytes_ahead += he->bytes;
		if (h->ahead == i)
			h->ahead = i + 1;	/* (else a late read sent it back) */
	}
	pthread_mutex_unlock(&h->lock);
	cache_objects_free(opened);
	return NULL;
}

int cache_hint_set(struct cache *c, const struct cache_hint_entry *v, size_t n, uint64_t budget)
{
	struct hint *h = c->hint;
	struct hint_entry *entries = n ? calloc(n, sizeof(*entries)) : NULL;
	int err = 0;

	if (n && !entries)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct hint_entry *e = &entries[i];
		e->url = strdup(v[i].url);
		e->log_name = strdup(v[i].log_name);
		if (v[i].listed && v[i].listed->etag && *v[i].listed->etag) {
			e->etag = strdup(v[i].listed->etag);
			e->size = v[i].listed->size;
			e->mtime = v[i].listed->mtime;
			if (!e->etag)
				err = -ENOMEM;
		}
		if (!e->url || !e->log_name)
			err = -ENOMEM;
		e->url_hash = e->url ? url_hash(e->url) : 0;
		e->line = v[i].line;
		e->window = v[i].window;
		e->x = v[i].x;
		e->y = v[i].y;
		e->w = v[i].w;
		e->h = v[i].h;
	}
	if (err) {
		entries_free(entries, n);
		return err;
	}
	pthread_mutex_lock(&h->lock);
	settle(h, true);
	entries_free(h->v, h->n);
	h->v = entries;
	h->n = n;
	h->settled = h->cursor = h->ahead = h->lag = 0;
	h->bytes_ahead = 0;
	h->budget = budget;
	atomic_fetch_add(&h->generation, 1);
	atomic_store(&h->live, n);
	if (n && !h->started && !atomic_load(&h->stopping)) {
		if (pthread_create(&h->thread, NULL, hint_thread, h) == 0) {
			pthread_setname_np(h->thread, "tilefs-hint");
			h->started = true;
		} else {
			err = -EAGAIN;
		}
	}
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	if (err)
		log_error("hint: cannot start its thread: nothing is fetched ahead");
	else
		log_info("hint: %zu entries, %" PRIu64 " MiB ahead at most", n, budget >> 20);
	return err;
}

/* Is a read at AT of E's object one of E's (read_at_window())? */
static bool entry_has(const struct hint_entry *e, const struct read_at *at)
{
	return !e->window || read_at_window(at, e->x, e->y, e->w, e->h);
}

/* The first entry of [FROM, TO) of the object URL (HASH) that AT is of
 * (NULL: any unread one, an open's); with UNREAD, the first unread one.
 * SIZE_MAX if none. h->lock held. */
static size_t entry_find(const struct hint *h, size_t from, size_t to, uint64_t hash,
			 const char *url, const struct read_at *at, bool unread)
{
	for (size_t i = from; i < to && i < h->n; i++) {
		const struct hint_entry *e = &h->v[i];
		if (e->url_hash == hash && strcmp(e->url, url) == 0 && !(unread && e->read) &&
		    (at ? entry_has(e, at) : !e->read))
			return i;
	}
	return SIZE_MAX;
}

/* A read came later than any before: send the thread back to the first
 * entry of the wider span behind the cursor it has not done and no read
 * has (see DESIGN). h->lock held. */
static void rewind_late(struct hint *h)
{
	size_t span = late_span(h);
	for (size_t i = h->cursor > span ? h->cursor - span : 0; i < h->ahead; i++)
		if (!h->v[i].done && !h->v[i].read) {
			h->ahead = i;
			pthread_cond_signal(&h->wake);
			return;
		}
}

/* Mark entry I read: past the cursor, move it; behind, note how late the
 * read came (slack()). h->lock held. */
static void entry_read(struct hint *h, size_t i)
{
	h->v[i].read = true;
	if (i < h->settled)
		h->skipped--;	/* counted before this late read */
	if (i + 1 > h->cursor) {
		cursor_move(h, i + 1);
	} else if (h->cursor - i > h->lag) {
		h->lag = h->cursor - i;
		rewind_late(h);
	}
}

/*
 * Mark the entry of OBJ a read at AT (NULL: an open, of any entry of OBJ)
 * is of as read, and move the cursor past it:
 *  - the first entry that has it from the unsettled ones (settled), if
 *    unread;
 *  - if that was a window already read, the read is of a tile two windows
 *    share: the next unread entry that has it, below HINT_NEAR past the
 *    cursor (several readers read at once), or none: never one further
 *    on, which would make the cursor run ahead of the readers;
 *  - a whole-object entry read again moves nothing;
 *  - a read no unsettled entry has, or only one past the readers' spread
 *    (the slack past the cursor), may have come later than the slack
 *    allowed: an unread entry up to HINT_BEHIND behind the cursor that
 *    has it takes it, and widens the slack.
 * A read of a fine tile (strips of a plain GeoTIFF, a row or a few each)
 * may be one the readers' buffers took beside a window they read: it is
 * taken for the first entry whose window holds it within at->margin,
 * among the entries just past the cursor only, and for nothing more if
 * that one was read.
 * In a full cache (c->full), returns 1 if an unread entry up to
 * HINT_AGAIN past the one the read is of has its tile too (a tile two
 * chips share: it would be evicted before that read), 0 if none has; -1
 * if the read is of no entry, or of a fine tile, or the cache has room
 * (nothing is evicted, so nothing need be kept: no cost to the reads).
 */
static int hint_match(struct cache *c, const struct cache_object *obj,
		       const struct read_at *at)
{
	struct hint *h = c->hint;
	uint64_t hash = url_hash(obj->url);
	pthread_mutex_lock(&h->lock);
	size_t to = at && at->fine ? h->cursor + HINT_SLACK :
		    (h->ahead > h->cursor ? h->ahead : h->cursor) + HINT_LOOKAHEAD;
	size_t i = entry_find(h, h->settled, to, hash, obj->url, at, false);
	if (at && (i == SIZE_MAX || i >= h->cursor + slack(h))) {
		size_t back = h->cursor > HINT_BEHIND ? h->cursor - HINT_BEHIND : 0;
		size_t late = entry_find(h, back, h->settled, hash, obj->url, at, true);
		if (late != SIZE_MAX)
			i = late;
	}
	size_t k = i;	/* the entry the read is of */
	if (i != SIZE_MAX && !h->v[i].read) {
		entry_read(h, i);
	} else if (i != SIZE_MAX && h->v[i].window && !at->fine) {
		size_t near = h->cursor + HINT_NEAR;
		size_t j = entry_find(h, i + 1, to < near ? to : near, hash, obj->url, at, true);
		if (j != SIZE_MAX)
			entry_read(h, k = j);
	}
	int again = k == SIZE_MAX || !at || at->fine || !atomic_load(&c->full) ? -1 :
		    entry_find(h, k + 1, k + 1 + HINT_AGAIN, hash, obj->url, at, true) != SIZE_MAX;
	pthread_mutex_unlock(&h->lock);
	return again;
}

void cache_hint_read(struct cache *c, const struct cache_object *obj, uint64_t off, size_t len)
{
	struct hint *h = c->hint;
	if (!h || atomic_load(&h->live) == 0 || len == 0 || !atomic_load(&obj->cut))
		return;	/* (a read that reached the cache cut it: object_cut()) */
	struct read_at at = read_at(&obj->layout, off, len);
	int again = at.tile || !obj->layout.map ? hint_match(c, obj, &at) : -1;
	if (again >= 0)
		want_again(c, obj->id, layout_unit_at(&obj->layout, off + len / 2).off, again);
}

void cache_hint_opened(struct cache *c, const struct cache_object *obj)
{
	struct hint *h = c->hint;
	if (h && atomic_load(&h->live) != 0)
		hint_match(c, obj, NULL);
}

void cache_hint_get_stats(struct cache *c, struct cache_hint_stats *out)
{
	struct hint *h = c->hint;
	memset(out, 0, sizeof(*out));
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	out->entries = h->n;
	out->position = h->cursor;
	out->fetched_bytes = h->fetched_bytes;
	out->skipped = h->skipped;
	pthread_mutex_unlock(&h->lock);
}

void cache_hint_stop(struct cache *c)
{
	struct hint *h = c->hint;
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	atomic_store(&h->stopping, true);
	bool started = h->started;
	h->started = false;
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	if (started)
		pthread_join(h->thread, NULL);
	pthread_mutex_lock(&h->lock);
	entries_free(h->v, h->n);
	h->v = NULL;
	h->n = 0;
	h->settled = h->cursor = h->ahead = h->lag = 0;
	atomic_store(&h->live, 0);
	pthread_mutex_unlock(&h->lock);
}

void hint_free(struct hint *h)
{
	if (!h)
		return;
	cache_hint_stop(h->cache);
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
