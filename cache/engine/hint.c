/*
 * hint.c - the coming reads as a prefetch plan (tilefs hint): a list of
 * entries (an object, and a pixel window of it or all of it) that readers
 * will read in about that order. A thread of the cache walks the list ahead
 * of them, opening each object and fetching the units of its entry in
 * background GETs (fetch.c's submit_runs(), as whole-object streaming
 * does), while the bytes of the entries between the readers' cursor and
 * its own stay under the hint's budget.
 *
 * Several clients hint at once (a process per GPU, each with its share of
 * the epoch): each client's hint is a plan of its own (hint_plan.h), which
 * its next hint replaces, and which it drops or the mount drops for it
 * (fs/control.c: when the process exits). The thread takes the plans in
 * turn, one entry of each that has one due, and each plan may have its
 * share of the budget ahead (the budget over the plans whose readers have
 * entries to come), so the budget holds for them all and no client's
 * order waits behind another's. A read is taken for the first plan with
 * an unread entry that has it.
 *
 * Level 6 of the engine (engine_int.h): calls objects.c (each object
 * opened once, not once an entry), fetch.c, hint_plan.c and what lies
 * under them; cache.c makes and frees it, the FUSE front feeds it
 * (cache_hint_set(), cache_hint_read()).
 *
 * DESIGN. The entries of a plan form an array with three marks, each only
 * growing while one hint stands:
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
 *           past the cursor only while it is below its share, so at most
 *           one entry's bytes beyond it are fetched, and at most
 *           HINT_LOOKAHEAD entries ahead. An entry behind the cursor is
 *           one its readers want now: the budget does not hold it back.
 * A new hint replaces the plan's array and bumps its generation: the
 * thread drops what it was resolving for the old one.
 *
 * LOCKS: h->lock protects what is marked so below. It is taken before
 * c->lock, never under it, and not held across I/O.
 */
#include "cache/engine/engine_int.h"
#include "cache/engine/hint_plan.h"
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

#define HINT_CLIENTS_MAX 64	/* clients with a hint at once */
#define HINT_WAIT_MS 200	/* how often a waiting thread looks at the hint again */
#define HINT_OBJECTS 32		/* objects the thread keeps open */
#define HINT_UNREAD_S 5		/* a unit kept for the readers this long
				   unread: most likely skipped */

struct hint {
	struct cache *cache;
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* a new hint, a cursor moved, or stop */
	pthread_t thread;
	bool started;			/* h->lock */
	atomic_bool stopping;
	atomic_size_t live;		/* entries of all plans, read without
					   the lock */
	struct hint_plan plans[HINT_CLIENTS_MAX];	/* h->lock (a plan's
					   generation is read without it) */
	size_t turn;			/* h->lock: the plan looked at first */
	uint64_t budget;		/* h->lock */
	uint64_t fetched_bytes;		/* h->lock */
	uint64_t skipped, reads;	/* h->lock: of the plans dropped */
};

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

/* Drop plan P: its entries counted (read or skipped) and freed, its slot
 * free. h->lock held. */
static void plan_drop(struct hint *h, struct hint_plan *p)
{
	plan_settle(p, true);
	h->skipped += p->skipped;
	h->reads += p->reads;
	p->skipped = p->reads = 0;
	plan_entries_free(p->v, p->n);
	plan_reset(p, NULL, 0);
	p->client[0] = '\0';
}

/* The plans whose readers have entries to come. h->lock held. */
static size_t plans_active(const struct hint *h)
{
	size_t k = 0;
	for (size_t i = 0; i < HINT_CLIENTS_MAX; i++)
		k += h->plans[i].cursor < h->plans[i].n;
	return k;
}

/* The entries of all plans. h->lock held. */
static size_t plans_entries(const struct hint *h)
{
	size_t n = 0;
	for (size_t i = 0; i < HINT_CLIENTS_MAX; i++)
		n += h->plans[i].n;
	return n;
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
 * plan P changed from GEN or the thread is stopping. */
static bool hint_room(struct hint *h, struct hint_plan *p, uint64_t gen)
{
	struct cache *c = h->cache;

	for (;;) {
		if (atomic_load(&h->stopping) || atomic_load(&p->generation) != gen)
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
static uint64_t fetch_units(struct hint *h, struct hint_plan *p, uint64_t gen,
			    struct cache_object *obj, const struct extent *units, size_t n)
{
	struct cache *c = h->cache;
	struct inflight *batch[PREFETCH_MAX];
	uint64_t sent = 0;

	for (size_t i = 0; i < n && !cache_object_stale(obj);) {
		size_t first = i;
		uint64_t span = 0;
		if (!hint_room(h, p, gen))
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
static int resolve(struct hint *h, struct hint_plan *p, uint64_t gen, const struct hint_entry *e,
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
	*sent = fetch_units(h, p, gen, obj, v, n);
	free(v);
	return 0;
}

/* The plan whose entry to fetch next, each plan in turn among those with
 * one due (SHARE bytes ahead each); NULL if none. h->lock held. */
static struct hint_plan *plan_next(struct hint *h, uint64_t share)
{
	for (size_t k = 0; k < HINT_CLIENTS_MAX; k++) {
		size_t i = (h->turn + k) % HINT_CLIENTS_MAX;
		struct hint_plan *p = &h->plans[i];
		if (p->n && plan_next_due(p, share)) {
			h->turn = i + 1;
			return p;
		}
	}
	return NULL;
}

/* The hint thread: fetches the entries at each plan's p->ahead while its
 * share of the budget allows (see DESIGN). */
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
		/* (with no plan's readers to come, entries behind their
		   cursors are still due: readers want them now) */
		size_t active = plans_active(h);
		uint64_t budget = h->budget;
		size_t turn = h->turn;
		bool due = plan_next(h, budget / (active ? active : 1));
		h->turn = turn;
		if (!due) {
			pthread_cond_wait(&h->wake, &h->lock);
			continue;
		}
		pthread_mutex_unlock(&h->lock);	/* readers take it at every read */
		uint64_t cap = ahead_cap(h->cache, budget);
		pthread_mutex_lock(&h->lock);
		active = plans_active(h);
		struct hint_plan *p = plan_next(h, cap / (active ? active : 1));
		if (!p) {
			/* looked at again as the readers move, or soon */
			wait_a_while(&h->wake, &h->lock);
			continue;
		}
		size_t i = p->ahead;
		uint64_t gen = atomic_load(&p->generation);
		struct hint_entry e = p->v[i];	/* its strings stay while gen does */
		e.url = strdup(e.url);
		e.log_name = strdup(e.log_name);
		e.etag = e.etag ? strdup(e.etag) : NULL;
		pthread_mutex_unlock(&h->lock);

		uint64_t bytes = 0, sent = 0;
		int err = e.url && e.log_name ? resolve(h, p, gen, &e, opened, &bytes, &sent) :
			  -ENOMEM;
		free(e.url);
		free(e.log_name);
		free(e.etag);

		pthread_mutex_lock(&h->lock);
		h->fetched_bytes += sent;
		if (atomic_load(&p->generation) == gen)	/* else a new hint */
			plan_done(p, i, sent, err);
	}
	pthread_mutex_unlock(&h->lock);
	cache_objects_free(opened);
	return NULL;
}

/* A copy of V[0..n) as the plan's entries; NULL: no memory. */
static struct hint_entry *entries_copy(const struct cache_hint_entry *v, size_t n)
{
	struct hint_entry *entries = calloc(n, sizeof(*entries));
	bool ok = entries != NULL;

	for (size_t i = 0; ok && i < n; i++) {
		struct hint_entry *e = &entries[i];
		e->url = strdup(v[i].url);
		e->log_name = strdup(v[i].log_name);
		if (v[i].listed && v[i].listed->etag && *v[i].listed->etag) {
			e->etag = strdup(v[i].listed->etag);
			e->size = v[i].listed->size;
			e->mtime = v[i].listed->mtime;
			ok = e->etag != NULL;
		}
		ok = ok && e->url && e->log_name;
		e->url_hash = e->url ? plan_url_hash(e->url) : 0;
		e->line = v[i].line;
		e->window = v[i].window;
		e->x = v[i].x;
		e->y = v[i].y;
		e->w = v[i].w;
		e->h = v[i].h;
	}
	if (!ok && entries) {
		plan_entries_free(entries, n);
		entries = NULL;
	}
	return entries;
}

/* The plan of CLIENT, or with NEW a free one; NULL if none. h->lock held. */
static struct hint_plan *plan_of(struct hint *h, const char *client, bool new)
{
	struct hint_plan *free_slot = NULL;
	for (size_t i = 0; i < HINT_CLIENTS_MAX; i++) {
		struct hint_plan *p = &h->plans[i];
		if (p->client[0] && strcmp(p->client, client) == 0)
			return p;
		if (!p->client[0] && !free_slot)
			free_slot = p;
	}
	return new ? free_slot : NULL;
}

int cache_hint_set(struct cache *c, const char *client, const struct cache_hint_entry *v,
		   size_t n, uint64_t budget)
{
	struct hint *h = c->hint;
	struct hint_entry *entries = NULL;
	int err = 0;

	if (client && strlen(client) >= HINT_CLIENT_MAX)
		return -ENAMETOOLONG;
	if (n && !(entries = entries_copy(v, n)))
		return -ENOMEM;
	pthread_mutex_lock(&h->lock);
	struct hint_plan *p = client ? plan_of(h, client, n != 0) : NULL;
	if (!client) {
		for (size_t i = 0; i < HINT_CLIENTS_MAX; i++)
			if (h->plans[i].client[0])
				plan_drop(h, &h->plans[i]);
	} else if (p && p->client[0]) {
		plan_drop(h, p);
	}
	if (n && !p) {
		err = -EUSERS;
	} else if (n) {
		snprintf(p->client, sizeof(p->client), "%s", client);
		plan_reset(p, entries, n);
		entries = NULL;
	}
	h->budget = budget;
	size_t clients = 0;
	for (size_t i = 0; i < HINT_CLIENTS_MAX; i++)
		clients += h->plans[i].n != 0;
	atomic_store(&h->live, plans_entries(h));
	if (!err && n && !h->started && !atomic_load(&h->stopping)) {
		if (pthread_create(&h->thread, NULL, hint_thread, h) == 0) {
			pthread_setname_np(h->thread, "tilefs-hint");
			h->started = true;
		} else {
			err = -EAGAIN;
		}
	}
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	plan_entries_free(entries, entries ? n : 0);
	if (err == -EAGAIN)
		log_error("hint: cannot start its thread: nothing is fetched ahead");
	else if (err == -EUSERS)
		log_warn("hint: %s: refused: %d clients have a hint already", client,
			 HINT_CLIENTS_MAX);
	else if (n)
		log_info("hint: %s: %zu entries; %zu clients, %" PRIu64 " MiB ahead at most "
			 "between them", client, n, clients, budget >> 20);
	else
		log_info("hint: %s dropped; %zu clients left", client ? client : "every hint",
			 clients);
	return err;
}

/*
 * Mark the entry of OBJ a read at AT (NULL: an open, of any entry of OBJ)
 * is of as read, and move its plan's cursor past it (hint_plan.c's
 * plan_match()):
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
 * The plans are asked in turn; the first that marks an entry read takes
 * the read (else the first that has it, read already).
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
	uint64_t hash = plan_url_hash(obj->url);
	struct hint_plan *of = NULL;
	size_t k = SIZE_MAX;

	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < HINT_CLIENTS_MAX; i++) {
		struct hint_plan *p = &h->plans[i];
		if (!p->n)
			continue;
		struct plan_match m = plan_match(p, hash, obj->url, at);
		if (m.moved)
			pthread_cond_signal(&h->wake);
		if (m.entry != SIZE_MAX && (!of || m.marked)) {
			of = p;
			k = m.entry;
		}
		if (m.marked)
			break;
	}
	int again = !of || !at || at->fine || !atomic_load(&c->full) ? -1 :
		    plan_wants_again(of, k, hash, obj->url, at);
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
	out->fetched_bytes = h->fetched_bytes;
	out->skipped = h->skipped;
	out->reads = h->reads;
	for (size_t i = 0; i < HINT_CLIENTS_MAX; i++) {
		const struct hint_plan *p = &h->plans[i];
		out->clients += p->n != 0;
		out->entries += p->n;
		out->position += p->cursor;
		out->skipped += p->skipped;
		out->reads += p->reads;
	}
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
	for (size_t i = 0; i < HINT_CLIENTS_MAX; i++)
		if (h->plans[i].client[0])
			plan_drop(h, &h->plans[i]);
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
