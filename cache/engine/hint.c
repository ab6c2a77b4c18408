/*
 * hint.c - the coming reads as a prefetch plan (tilefs hint): a list of
 * entries (an object, and a pixel window of it or all of it) that readers
 * will read in about that order. A thread of the cache walks the list ahead
 * of them and hands each entry to one of its workers, which opens its
 * object and sends for the units of the entry in background GETs
 * (hint_fetch.c), while the bytes of the entries between the readers'
 * cursor and the thread's stay under the hint's budget. An open of an
 * object not cached waits a round trip, and a data set of small files is
 * an open an entry: the workers (one a connection) open that many at
 * once, so the hint gets ahead of readers that open a file each too. An
 * entry taken at or past the readers' cursor is opened in the background
 * (cache_object_open()), on the connections readers leave idle, so no
 * reader's request waits behind the hint's; one the readers have passed
 * already is one they want now, and is opened as a reader's open would
 * be. The entries of one object go to one
 * worker, which keeps it open: an order of a thousand windows of a dozen
 * scenes opens a dozen objects. An object the thread does not remember
 * handing out goes to the least busy worker (worker_for()), so a slow
 * open holds up no entry that another worker could take.
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
 * Level 7 of the engine (engine_int.h): calls hint_fetch.c, hint_plan.c
 * and what lies under them; cache.c makes and frees it, the FUSE front
 * feeds it (cache_hint_set(), cache_hint_read()).
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
 *   ahead:  the entry the thread takes next; those it took are taken (a
 *           worker has them) or done (fetched, or given up on), and
 *           hint_fetch() sends for a taken one while its plan's
 *           generation stands. What the cursor passed is not
 *           fetched, unless reads came late in this hint: then, as far
 *           back as twice the furthest of them, the readers still to come
 *           want it, and a read later than any before sends the thread
 *           back to the first entry there neither read, taken nor done (a
 *           DataLoader's first batches: the worker of the fourth moves
 *           the cursor past the first three before their readers' first
 *           reads come).
 *           bytes_ahead counts what was sent for the taken and done
 *           entries at or past the cursor, as it is sent (what was cached
 *           already weighs nothing: it takes no room in the cache), and
 *           the thread takes an entry past the cursor only while it is
 *           below its share, so beyond it at most what the workers' own
 *           entries bring (a GET of STREAM_GET_MAX each, and an open's
 *           first bytes) are fetched, and at most HINT_LOOKAHEAD entries
 *           ahead. An entry behind the cursor is
 *           one its readers want now: the budget does not hold it back.
 * A new hint replaces the plan's array and bumps its generation: the
 * workers drop what they were fetching for the old one.
 *
 * LOCKS: h->lock protects what is marked so below. It is taken before
 * c->lock, never under it, and not held across I/O.
 */
#include "cache/engine/engine_int.h"
#include "cache/engine/hint_plan.h"
#include "cache/base/log.h"
#include "cache/base/monotonic.h"
#include "cache/store/evict.h"
#include "cache/store/index.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HINT_CLIENTS_MAX 64	/* clients with a hint at once */
#define HINT_WAIT_MS 200	/* how often a waiting thread looks at the hint again */
#define HINT_WORKERS_MAX 32	/* workers, at most */
#define HINT_QUEUE 4		/* entries handed to a worker, not yet taken */
#define HINT_OBJECTS 8		/* objects a worker keeps open */
#define HINT_HOMES 256		/* objects whose worker the thread remembers */
#define HINT_UNREAD_S 5		/* a unit kept for the readers this long
				   unread: most likely skipped */

struct hint;

/* Entry I of plan P (generation GEN) handed to a worker: E, its strings
 * copied. */
struct hint_job {
	struct hint *h;
	struct hint_plan *p;
	uint64_t gen;
	size_t i;
	struct hint_entry e;
};

struct hint_worker {
	struct hint *h;
	pthread_t thread;
	pthread_cond_t wake;		/* a job, or stop */
	struct hint_job q[HINT_QUEUE];	/* h->lock: from q[head], n of them */
	size_t head, n;
	bool busy;			/* h->lock: on a job */
};

struct hint {
	struct cache *cache;
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* a new hint, a cursor moved, a worker
					   done, or stop */
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
	struct hint_worker workers[HINT_WORKERS_MAX];
	size_t nworkers;		/* started */
	struct {
		uint64_t url_hash;
		size_t worker;
	} homes[HINT_HOMES];		/* h->lock: the last objects handed out,
					   a ring of nhomes so far */
	size_t nhomes;
};

struct hint *hint_new(struct cache *c)
{
	struct hint *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->cache = c;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->wake, NULL);
	for (size_t i = 0; i < HINT_WORKERS_MAX; i++)
		pthread_cond_init(&h->workers[i].wake, NULL);
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

/* hint_fetch()'s questions, for the job J of a worker. */
static bool job_go_on(void *arg)
{
	struct hint_job *j = arg;
	return !atomic_load(&j->h->stopping) && atomic_load(&j->p->generation) == j->gen;
}

static void job_sent(void *arg, uint64_t bytes)
{
	struct hint_job *j = arg;
	pthread_mutex_lock(&j->h->lock);
	j->h->fetched_bytes += bytes;
	if (atomic_load(&j->p->generation) == j->gen)	/* else a new hint */
		plan_sent(j->p, j->i, bytes);
	pthread_mutex_unlock(&j->h->lock);
}

/* In a full cache, does an unread entry up to HINT_AGAIN past J's want
 * UNIT of OBJ, as hint_match() asks of a read? */
static bool job_again(void *arg, const struct cache_object *obj, struct extent unit)
{
	struct hint_job *j = arg;
	if (!atomic_load(&j->h->cache->full))
		return false;
	struct read_at at = read_at(&obj->layout, unit.off, unit.len);
	if (at.fine || (!at.tile && obj->layout.map))
		return false;
	pthread_mutex_lock(&j->h->lock);
	bool again = atomic_load(&j->p->generation) == j->gen &&
		     plan_wants_again(j->p, j->i, plan_url_hash(obj->url), obj->url, &at);
	pthread_mutex_unlock(&j->h->lock);
	return again;
}

static void job_free(struct hint_job *j)
{
	free(j->e.url);
	free(j->e.log_name);
	free(j->e.etag);
}

/* A worker: fetches the entries the hint's thread hands it, in turn. */
static void *hint_worker(void *arg)
{
	struct hint_worker *w = arg;
	struct hint *h = w->h;
	struct cache_objects *opened = cache_objects_new(HINT_OBJECTS);

	pthread_mutex_lock(&h->lock);
	while (!atomic_load(&h->stopping)) {
		if (!w->n) {
			pthread_cond_wait(&w->wake, &h->lock);
			continue;
		}
		struct hint_job j = w->q[w->head];
		w->head = (w->head + 1) % HINT_QUEUE;
		w->n--;
		w->busy = true;
		bool ahead = j.i >= j.p->cursor;	/* of the readers (see above) */
		pthread_mutex_unlock(&h->lock);
		struct hint_fetch_ops ops = { job_go_on, job_sent, job_again, &j };
		int err = !opened ? -ENOMEM :
			  job_go_on(&j) ? hint_fetch(h->cache, opened, &j.e, ahead, &ops) :
			  -ECANCELED;
		job_free(&j);
		pthread_mutex_lock(&h->lock);
		w->busy = false;
		if (atomic_load(&j.p->generation) == j.gen)	/* else a new hint */
			plan_done(j.p, j.i, err);
		pthread_cond_signal(&h->wake);	/* room in its queue */
	}
	while (w->n) {
		job_free(&w->q[w->head]);
		w->head = (w->head + 1) % HINT_QUEUE;
		w->n--;
	}
	pthread_mutex_unlock(&h->lock);
	cache_objects_free(opened);
	return NULL;
}

/* The worker for an entry of the object of URL_HASH: the one its last
 * entry was handed to, if remembered (it keeps the object open; *HOME
 * true), else the one with the fewest jobs. h->lock held. */
static struct hint_worker *worker_for(struct hint *h, uint64_t url_hash, bool *home)
{
	size_t known = h->nhomes < HINT_HOMES ? h->nhomes : HINT_HOMES;
	*home = true;
	for (size_t i = 0; i < known; i++)
		if (h->homes[i].url_hash == url_hash)
			return &h->workers[h->homes[i].worker];
	*home = false;
	size_t best = 0;
	for (size_t i = 1; i < h->nworkers; i++)
		if (h->workers[i].n + h->workers[i].busy <
		    h->workers[best].n + h->workers[best].busy)
			best = i;
	return &h->workers[best];
}

/* Remember W as the worker of the object of URL_HASH. h->lock held. */
static void home_set(struct hint *h, uint64_t url_hash, const struct hint_worker *w)
{
	h->homes[h->nhomes % HINT_HOMES].url_hash = url_hash;
	h->homes[h->nhomes % HINT_HOMES].worker = (size_t)(w - h->workers);
	h->nhomes++;
}

/* The hint's thread: hands the entry at each plan's p->ahead to a worker
 * while the plan's share of the budget allows (see DESIGN); the entries
 * of one object go to one worker, which keeps it open. */
static void *hint_thread(void *arg)
{
	struct hint *h = arg;

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
		turn = h->turn;
		struct hint_plan *p = plan_next(h, cap / (active ? active : 1));
		if (!p) {
			/* looked at again as the readers move, or soon */
			cond_wait_ms(&h->wake, &h->lock, HINT_WAIT_MS);
			continue;
		}
		const struct hint_entry *e = &p->v[p->ahead];
		bool home;
		struct hint_worker *w = worker_for(h, e->url_hash, &home);
		if (w->n == HINT_QUEUE) {
			h->turn = turn;	/* the same entry once it has room */
			pthread_cond_wait(&h->wake, &h->lock);
			continue;
		}
		if (!home)
			home_set(h, e->url_hash, w);
		struct hint_job *j = &w->q[(w->head + w->n) % HINT_QUEUE];
		*j = (struct hint_job){ h, p, atomic_load(&p->generation), p->ahead, *e };
		j->e.url = strdup(e->url);
		j->e.log_name = strdup(e->log_name);
		j->e.etag = e->etag ? strdup(e->etag) : NULL;
		if (!j->e.url || !j->e.log_name || (e->etag && !j->e.etag)) {
			job_free(j);
			plan_done(p, plan_take(p), -ENOMEM);
			continue;
		}
		plan_take(p);
		w->n++;
		pthread_cond_signal(&w->wake);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* Stop the hint's thread and its workers, once h->stopping is set. Not
 * under h->lock. */
static void threads_stop(struct hint *h)
{
	pthread_mutex_lock(&h->lock);
	pthread_cond_signal(&h->wake);
	for (size_t i = 0; i < h->nworkers; i++)
		pthread_cond_signal(&h->workers[i].wake);
	bool started = h->started;
	h->started = false;
	pthread_mutex_unlock(&h->lock);
	if (started)
		pthread_join(h->thread, NULL);
	for (size_t i = 0; i < h->nworkers; i++)
		pthread_join(h->workers[i].thread, NULL);
	h->nworkers = 0;
}

/* Start the hint's thread and its workers (one a connection). h->lock
 * held. 0 or -EAGAIN. */
static int threads_start(struct hint *h)
{
	size_t want = (size_t)http_connections(h->cache->http);
	want = want < 1 ? 1 : want > HINT_WORKERS_MAX ? HINT_WORKERS_MAX : want;
	h->nhomes = 0;		/* (the workers of before are gone) */
	for (size_t i = h->nworkers; i < want; i++) {	/* (some, if tried before) */
		struct hint_worker *w = &h->workers[i];
		w->h = h;
		if (pthread_create(&w->thread, NULL, hint_worker, w) != 0)
			break;
		char name[16];
		snprintf(name, sizeof(name), "tilefs-hint%zu", i);
		pthread_setname_np(w->thread, name);
		h->nworkers++;
	}
	if (!h->nworkers || pthread_create(&h->thread, NULL, hint_thread, h) != 0)
		return -EAGAIN;
	pthread_setname_np(h->thread, "tilefs-hint");
	h->started = true;
	return 0;
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
	if (!err && n && !h->started && !atomic_load(&h->stopping))
		err = threads_start(h);
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	plan_entries_free(entries, entries ? n : 0);
	if (err == -EAGAIN)
		log_error("hint: cannot start its threads: nothing is fetched ahead");
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
	atomic_store(&h->stopping, true);
	threads_stop(h);
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
	for (size_t i = 0; i < HINT_WORKERS_MAX; i++)
		pthread_cond_destroy(&h->workers[i].wake);
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
