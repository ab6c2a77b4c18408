/*
 * fetch.c - sending what is missing: claiming units in the index (so that
 * another process fetching a unit is waited for, not repeated), entries for
 * prefetched units, merging adjacent units into one ranged GET pinned to
 * the object's version, and settling the entries when the answer comes
 * (on a fetch thread). Slivers and the spill after a tile go into the
 * same GET and are kept as edges; a GET of a tile leaves out what edges
 * hold of it already (run_trim()), so a tile read tile by tile is fetched
 * once.
 *
 * Level 3 of the engine (engine_int.h): calls inflight.c, object.c and the
 * level 0 files; the read path, whole-object streaming, the open and warm
 * call it.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/log.h"
#include "cache/origin/providers/provider.h"
#include "cache/store/index.h"
#include "cache/store/store.h"
#include "cache/store/unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One GET of a run, or one of the parallel parts it is split into. */
struct fetch_part {
	struct http_request req;
	struct fetch_run *run;
};

/* Adjacent entries fetched together: one ranged GET, or a few parallel
 * ones over consecutive parts of the range (plan_parts()). */
struct fetch_run {
	struct cache *cache;
	struct cache_object *obj;	/* holds a ref */
	bool background;
	enum fetch_for why;
	/* NULL: the bytes go to the entries' buffers; else to their data
	   file as they come (E6), and write_err is the first write's error
	   (c->lock until the run settles) */
	struct stage *stage;
	int write_err;
	/* store_punches() before the first byte of the run is written: its
	   units' bytes are served from their data file only while the count
	   has not moved since (E5, E6) */
	uint64_t punches;
	uint64_t off, len;		/* the range, lead and spill included */
	uint64_t lead, spill;		/* bytes before the first unit and after
					   the last, for edges */
	char *lead_bytes, *spill_bytes;	/* the lead's and spill's bytes, if
					   short enough to keep (edge_keep()) */
	/* The parts may end on different fetch threads: parts_left counts
	   them down, and the part that takes it to 0 settles the run; err and
	   fetched are under c->lock until then. */
	atomic_size_t parts_left;
	int err;			/* the first part's error */
	uint64_t fetched;
	struct fetch_part *parts;
	size_t n;
	struct inflight *units[];	/* each holds a ref */
};

/* The one place a GET of an opened object's bytes is made: pinned to its
 * version (invariant E4). */
void pinned_get(struct cache *c, const char *url, const char *log_name, const struct version *v,
		uint64_t off, uint64_t len, struct http_request *req)
{
	memset(req, 0, sizeof(*req));
	req->url = url;
	req->log_name = log_name;
	req->off = off;
	req->len = len;
	version_pin(v, req);
	source_prepare(c->src, req);
}

int entry_claim(struct cache *c, struct cache_object *obj, struct inflight *e)
{
	pid_t holder;
	int rc = obj->id < 0 ? -ENOENT :
		 index_claim(c->index, obj->id, e->unit.off, &holder);
	if (rc == -EBUSY || rc == -EEXIST)
		return rc;
	e->claimed = rc == 0;	/* otherwise fetched for this read, not kept */
	return 0;
}

static void run_again(struct cache *c, struct cache_object *obj, struct inflight **units,
		      size_t n, enum fetch_for why, int err);

/* Every part of RUN has come back: settle its entries. */
static void run_finish(struct fetch_run *run)
{
	struct cache *c = run->cache;
	struct cache_object *obj = run->obj;
	int err = run->err;

	if (err == -ESTALE)
		object_mark_stale(obj);
	if (!err && run->stage && !run->write_err)
		run->write_err = stage_flush(run->stage);
	/* written as they came, and a write failed: its readers get them
	   from a GET into buffers instead (E6) */
	bool again = run->stage && run->write_err;
	if (again)
		run_again(c, obj, run->units, run->n, run->why, run->write_err);
	if (!run->stage)
		run->punches = store_punches(c->store);	/* written below */
	/* the bytes of the units kept go to their data file here (or went
	   as they came), on the fetch thread that has them, under their
	   claims (unit.h, invariant 1): the per-byte work of storing spreads
	   over the fetch threads, and the persist thread records rows only */
	for (size_t i = 0; !err && !again && obj->id > 0 && i < run->n; i++) {
		struct inflight *e = run->units[i];
		if (e->sliver || !e->claimed)
			continue;
		if (run->stage) {
			e->crc = run->stage->units[i].crc;
		} else {
			struct index_unit_new v = { .off = e->unit.off, .len = e->unit.len };
			unit_write(c->store, obj->id, &v, e->buf);
			e->crc = v.crc;
			e->write_err = v.err;
		}
		e->written = true;
	}
	bool whole = !err && !again;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < run->n; i++) {
		struct inflight *e = run->units[i];
		if (whole && e->sliver)
			edge_keep(c, obj, e->unit.off, e->unit.len, e->buf);
		if (!again)
			entry_settle(c, e, err, obj->id > 0);
		/* stored, and no reader waits (the table's ref and the run's
		   alone): its bytes are in the data file, the buffer can go (E5) */
		if (whole && e->written && !e->write_err && e->buf && e->refs == 2) {
			free(e->buf);
			e->buf = NULL;
		}
		if (whole && !e->buf)
			e->written_punches = run->punches;
		entry_unref(e);		/* the run's ref */
	}
	if (whole && run->lead_bytes)
		edge_keep(c, obj, run->off, run->lead, run->lead_bytes);
	if (whole && run->spill_bytes)
		edge_keep(c, obj, run->off + run->len - run->spill, run->spill, run->spill_bytes);
	c->stats.bytes_fetched += run->fetched;
	if (run->background) {
		c->background_bytes -= run->len;
		/* room for more: the persist thread's streams, and hints */
		pthread_cond_broadcast(&c->work);
	}
	pthread_mutex_unlock(&c->lock);
	free(run->lead_bytes);
	free(run->spill_bytes);
	free(run->parts);
	stage_free(run->stage);
	cache_object_unref(obj);
	free(run);
}

/* Copy what of [from, to) at SRC falls in [dst_off, dst_off + dst_len) to
 * DST, which holds that extent. */
static void copy_overlap(char *dst, uint64_t dst_off, uint64_t dst_len, const char *src,
			 uint64_t from, uint64_t to)
{
	uint64_t a = dst_off > from ? dst_off : from;
	uint64_t b = dst_off + dst_len < to ? dst_off + dst_len : to;
	if (dst && a < b)
		memcpy(dst + (a - dst_off), src + (a - from), b - a);
}

/* http_sink_fn of each part, on a fetch thread: its bytes go straight to
 * the entries they belong to (still fetching, so theirs alone: nobody
 * reads them yet), or through the run's stage to their data file (E6),
 * and to the lead and spill; those between units are dropped. */
static int part_take(void *arg, uint64_t at, const char *data, size_t len)
{
	struct fetch_part *part = arg;
	struct fetch_run *run = part->run;
	uint64_t from = part->req.off + at, to = from + len;

	if (run->stage) {	/* the run's one part (E6) */
		int err = stage_take(run->stage, at, data, len);
		if (err)
			return err;
	} else {
		for (size_t i = 0; i < run->n; i++) {
			struct inflight *e = run->units[i];
			copy_overlap(e->buf, e->unit.off, e->unit.len, data, from, to);
		}
	}
	copy_overlap(run->lead_bytes, run->off, run->lead, data, from, to);
	copy_overlap(run->spill_bytes, run->off + run->len - run->spill, run->spill, data, from, to);
	return 0;
}

/* http_done_fn of each part, on a fetch thread: the parts of one run may
 * end on different ones. */
static void part_done(struct http_request *req, void *arg)
{
	struct fetch_run *run = ((struct fetch_part *)arg)->run;
	struct cache *c = run->cache;
	/* a write's error, from the stage (E6): not the GET's */
	int err = req->sink_err ? 0 : version_verdict(&run->obj->version, req);

	pthread_mutex_lock(&c->lock);
	if (req->sink_err)
		run->write_err = req->sink_err;
	if (!err)
		run->fetched += req->body_len;
	if (err && (!run->err || err == -ESTALE))
		run->err = err;
	pthread_mutex_unlock(&c->lock);
	if (atomic_fetch_sub(&run->parts_left, 1) == 1)
		run_finish(run);
}

static void run_fail(struct cache *c, struct inflight **units, size_t n, int err)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		entry_settle(c, units[i], err, false);
	pthread_mutex_unlock(&c->lock);
}

/* *BUF: a buffer for a lead or spill of LEN bytes if it is short enough
 * to keep as an edge, else NULL; false if one was wanted and not had. */
static bool edge_buffer(uint64_t len, char **buf)
{
	*buf = len && len <= PLAN_SLIVER_MAX ? malloc(len) : NULL;
	return *buf || !len || len > PLAN_SLIVER_MAX;
}

/* The most bytes of OBJ from OFF on (at most MAX) that a kept edge holds,
 * in memory or else in the index, copied to DST. */
static size_t kept_head(struct cache *c, const struct cache_object *obj, uint64_t off, size_t max,
			char *dst)
{
	char edge[INDEX_EDGE_MAX];
	uint64_t at;
	pthread_mutex_lock(&c->lock);
	size_t have = edge_head(c, obj, off, max, dst);
	pthread_mutex_unlock(&c->lock);
	size_t held = have || !max || obj->id <= 0 ? 0 :
		      index_edge_span(c->index, obj->id, off, &at, edge);
	if (!held)
		return have;
	have = at + held - off < max ? (size_t)(at + held - off) : max;
	memcpy(dst, edge + (off - at), have);
	return have;
}

/* The most bytes of OBJ up to END (at most MAX) that a kept edge holds,
 * in memory or else in the index, copied so that they end at DST_END. */
static size_t kept_tail(struct cache *c, const struct cache_object *obj, uint64_t end, size_t max,
			char *dst_end)
{
	char edge[INDEX_EDGE_MAX];
	uint64_t at;
	pthread_mutex_lock(&c->lock);
	size_t have = edge_tail(c, obj, end, max, dst_end);
	pthread_mutex_unlock(&c->lock);
	size_t held = have || !max || obj->id <= 0 ? 0 :
		      index_edge_span(c->index, obj->id, end - 1, &at, edge);
	if (!held)
		return have;
	have = end - at < max ? (size_t)(end - at) : max;
	memcpy(dst_end - have, edge + (end - have - at), have);
	return have;
}

/* Fill the ends of the run UNITS[0..n) (PU: as plan.h sees them) with
 * what kept edges hold of them, and return the range its GET must still
 * bring (plan_trim(); len 0: none). Edges are keyed by the object id, so
 * they hold the version's own bytes (invariant E3). */
static struct extent run_trim(struct cache *c, const struct cache_object *obj,
			      struct inflight **units, const struct plan_unit *pu, size_t n)
{
	struct inflight *first = units[0], *last = units[n - 1];
	size_t first_max = first->unit.len < PLAN_SLIVER_MAX ? (size_t)first->unit.len :
							       PLAN_SLIVER_MAX;
	size_t last_max = last->unit.len < PLAN_SLIVER_MAX ? (size_t)last->unit.len :
							     PLAN_SLIVER_MAX;
	uint64_t head = first->sliver ? 0 : kept_head(c, obj, first->unit.off, first_max, first->buf);
	uint64_t tail = last->sliver ? 0 :
			kept_tail(c, obj, last->unit.off + last->unit.len, last_max,
				  last->buf + last->unit.len);
	return plan_trim(pu, n, head, tail);
}

/* Is the unit of OBJ holding byte AT in flight or known cached in this
 * process, or the byte kept in an edge in memory? (AFTER: the byte after
 * a run, whose edge would start at it; else the byte before one.) */
static bool held_beside(struct cache *c, const struct cache_object *obj, uint64_t at, bool after)
{
	struct extent unit = layout_unit_at(&obj->layout, at);
	struct known_unit k;
	char byte[1];
	pthread_mutex_lock(&c->lock);
	bool held = table_find(c, obj->id, unit.off) ||
		    (known_get(c, obj->id, unit.off, &k) && k.u.len == unit.len) ||
		    (after ? edge_head(c, obj, at, 1, byte) : edge_tail(c, obj, at + 1, 1, byte + 1));
	pthread_mutex_unlock(&c->lock);
	return held;
}

/* Every byte of UNITS[0..n) came from kept edges: settle them as fetched. */
static void run_kept(struct cache *c, struct cache_object *obj, struct inflight **units, size_t n)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		entry_settle(c, units[i], 0, obj->id > 0);
	pthread_mutex_unlock(&c->lock);
}

/* Run stages (stage.c) are on the page grid, written through the page
 * cache: the readers that wait for a streamed unit read it from there. */
#define RUN_STAGE (256u << 10)

/* The stage of a run of UNITS[0..n) of OBJ that GETs [OFF, END), if its
 * bytes are to go to their data file as they come (E6): one GET (ONE_PART)
 * that no reader waited for when it was sent, of every unit whole (no
 * kept edge filled an end), each claimed and not buffered (run_again()).
 * NULL: to the entries' buffers (also if the stage has no memory). */
static struct stage *run_stage(struct cache *c, struct cache_object *obj,
			       struct inflight **units, size_t n, bool one_part, uint64_t off,
			       uint64_t end)
{
	struct inflight *last = units[n - 1];
	bool to_file = one_part && obj->id > 0 && off <= units[0]->unit.off &&
		       end >= last->unit.off + last->unit.len;
	for (size_t i = 0; to_file && i < n; i++)
		to_file = units[i]->claimed && !units[i]->sliver && !units[i]->buffered;
	struct stage *s = to_file ? stage_new(c->store, obj->id, off, n, RUN_STAGE, false) : NULL;
	for (size_t i = 0; s && i < n; i++)
		s->units[i] = (struct index_unit_new){ .off = units[i]->unit.off,
						       .len = units[i]->unit.len };
	return s;
}

/* Writing the bytes of UNITS[0..n) of OBJ to their data file as they came
 * failed with ERR (a full disk, say): GET them again into buffers, for the
 * readers who wait (E6). They stay UNIT_FETCHING meanwhile. */
static void run_again(struct cache *c, struct cache_object *obj, struct inflight **units,
		      size_t n, enum fetch_for why, int err)
{
	/* once at info, then at debug: a full disk fails them all */
	enum log_level level = atomic_exchange(&c->stage_failed_logged, true) ? LOG_DEBUG :
										LOG_INFO;
	log_at(level, "%s: cannot write %zu units to the cache as they come (%s): "
	       "fetching them again into memory", obj->log_name, n, strerror(-err));
	char **bufs = calloc(n, sizeof(*bufs));
	size_t got = 0;
	while (bufs && got < n && (bufs[got] = malloc(units[got]->unit.len)))
		got++;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++) {
		units[i]->buffered = true;
		units[i]->buf = got == n ? bufs[i] : NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (got == n)
		submit_runs(c, obj, units, n, why);
	else
		run_fail(c, units, n, -ENOMEM);
	while (got < n && got > 0)
		free(bufs[--got]);
	free(bufs);
}

/* Fetch UNITS[0..n) (PU: the same, as plan.h sees them), in order in the
 * object, with one GET (of the gaps between them too), or with a few
 * parallel GETs of consecutive parts; what kept edges hold of the first
 * and last units is not fetched again. KEY, if not empty, is the range to
 * ask for (plan_tier_run()); it holds them all. */
static void run_submit(struct cache *c, struct cache_object *obj, struct inflight **units,
		       const struct plan_unit *pu, size_t n, bool background, enum fetch_for why,
		       struct extent key)
{
	struct inflight *last = units[n - 1];
	uint64_t off = units[0]->unit.off, end = last->unit.off + last->unit.len;
	/* under a tier, a GET's range depends on the cut alone */
	if (!c->cfg.tier_keys) {
		struct extent get = run_trim(c, obj, units, pu, n);
		if (!get.len) {
			run_kept(c, obj, units, n);
			return;
		}
		off = get.off;
		end = get.off + get.len;
	}
	/* tiles read for a reader: bring the rest of the last one's page too,
	 * and for a hint's readers the start of the first one's (their reads
	 * cross them; not when the object is streamed: the next tile comes
	 * whole), unless those bytes are held already */
	bool edges = (why == FETCH_FOR_READER && !background) || why == FETCH_FOR_HINT;
	bool tiles = edges && prefetch_policy(c) != PREFETCH_OBJECT;
	uint64_t spill = !tiles || last->sliver || end != last->unit.off + last->unit.len ||
			 !layout_is_tile(&obj->layout, last->unit.off) ?
			 0 : plan_spill(end, obj->version.size);
	if (spill && held_beside(c, obj, end, true))
		spill = 0;
	uint64_t lead = !tiles || why != FETCH_FOR_HINT || off != units[0]->unit.off ||
			!layout_is_tile(&obj->layout, off) ? 0 : off % PLAN_SLIVER_MAX;
	if (lead && held_beside(c, obj, off - 1, false))
		lead = 0;
	off -= lead;
	struct fetch_run *run = calloc(1, sizeof(*run) + n * sizeof(run->units[0]));
	if (key.len) {
		lead = units[0]->unit.off - key.off;
		spill = key.off + key.len - end;
		off = key.off;
	}
	end += spill;
	uint64_t part_ends[PLAN_PARTS_MAX];
	/* a key's parts depend on the key alone: not on the units in it, nor
	   on whether a reader waits */
	size_t nparts = key.len ? plan_parts(pu, 0, off, end - off, false, part_ends) :
				  plan_parts(pu, n, off, end - off, background, part_ends);

	if (!run || !edge_buffer(lead, &run->lead_bytes) || !edge_buffer(spill, &run->spill_bytes) ||
	    !(run->parts = calloc(nparts, sizeof(*run->parts)))) {
		if (run) {
			free(run->lead_bytes);
			free(run->spill_bytes);
			free(run->parts);
		}
		free(run);
		run_fail(c, units, n, -ENOMEM);
		return;
	}
	run->cache = c;
	run->obj = cache_object_ref(obj);
	run->n = n;
	run->background = background;
	run->why = why;
	run->punches = store_punches(c->store);
	run->stage = run_stage(c, obj, units, n, background && nparts == 1, off, end);
	run->off = off;
	run->len = end - off;
	run->lead = lead;
	run->spill = spill;
	atomic_init(&run->parts_left, nparts);
	pthread_mutex_lock(&c->lock);
	if (background)
		c->background_bytes += end - off;
	for (size_t i = 0; i < n; i++) {
		run->units[i] = units[i];
		units[i]->refs++;
		if (run->stage) {	/* a reader that joins it reads the file (E6) */
			free(units[i]->buf);
			units[i]->buf = NULL;
		}
	}
	pthread_mutex_unlock(&c->lock);
	/* the run is the fetch threads' once its first part is submitted */
	for (size_t k = 0, done = 0; k < nparts; k++) {
		uint64_t len = part_ends[k] - off - done;
		struct fetch_part *part = &run->parts[k];
		part->run = run;
		pinned_get(c, obj->url, obj->log_name, &obj->version, off + done, len, &part->req);
		part->req.sink = part_take;
		part->req.sink_arg = part;
		part->req.background = background;
		part->req.done = part_done;
		part->req.arg = part;
		done += len;
	}
	for (size_t k = 0; k < nparts; k++)
		http_submit(c->http, &run->parts[k].req);
}

/* plan_unit_at_fn over a cache object's cut. */
static struct extent unit_at(void *arg, uint64_t off)
{
	const struct cache_object *obj = arg;
	return layout_unit_at(&obj->layout, off);
}

/* Is UNIT of OBJ known cached: found in the index by this process, under
 * the punch count PUNCHES, and of this cut? c->lock held. */
static bool known_cached(struct cache *c, const struct cache_object *obj, struct extent unit,
			 uint64_t punches)
{
	struct known_unit k;
	return known_get(c, obj->id, unit.off, &k) && k.punches == punches && k.u.len == unit.len;
}

size_t prefetch_entries(struct cache *c, struct cache_object *obj, const struct extent *units,
			size_t n, bool ahead, struct inflight **out)
{
	uint64_t offs[PREFETCH_MAX];
	int claim[PREFETCH_MAX];
	size_t pick[PREFETCH_MAX], npick = 0, made = 0;

	if (obj->id < 0 || n > PREFETCH_MAX)
		return 0;	/* nowhere to keep them */
	/* what this process knows of needs no question to the index */
	uint64_t punches = store_punches(c->store);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		if (!table_find(c, obj->id, units[i].off) && !known_cached(c, obj, units[i], punches)) {
			pick[npick] = i;
			offs[npick++] = units[i].off;
		}
	pthread_mutex_unlock(&c->lock);
	/* the rest in one transaction: cached (-EEXIST), held (-EBUSY), ours */
	if (!npick || index_claims(c->index, obj->id, offs, npick, claim))
		return 0;
	pthread_mutex_lock(&c->lock);
	for (size_t j = 0; j < npick; j++) {
		struct extent unit = units[pick[j]];
		if (claim[j] != 0)
			continue;
		struct inflight *e = table_find(c, obj->id, unit.off) ? NULL : entry_new(c, obj, unit);
		if (!e) {
			claim[j] = -EALREADY;	/* to let go below */
			continue;
		}
		e->claimed = true;
		e->prefetch = true;
		e->ahead = ahead;
		c->stats.prefetched++;
		out[made++] = e;
	}
	pthread_mutex_unlock(&c->lock);
	for (size_t j = 0; j < npick; j++)
		if (claim[j] == -EALREADY)
			index_unclaim(c->index, obj->id, offs[j]);
	return made;
}

struct gap_check {
	struct cache *c;
	struct cache_object *obj;
};

/* plan_gap_fn: is a unit in [from, to) of the object cached, or being
 * fetched by this process? */
static bool gap_has_units(void *arg, uint64_t from, uint64_t to)
{
	struct gap_check *g = arg;
	struct cache *c = g->c;
	struct cache_object *obj = g->obj;

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

bool background_room(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	bool budget = c->background_bytes < c->background_budget;
	pthread_mutex_unlock(&c->lock);
	return budget && http_background_room(c->http) > 0;
}

/*
 * Fetch V[0..n) (claimed, sorted by offset) in runs (plan_run()); a GET
 * made only of prefetched units runs in the background. FOR_READER: a
 * reader waits, so a GET ending in a tile brings the rest of its last page
 * too.
 */
void submit_runs(struct cache *c, struct cache_object *obj, struct inflight **v, size_t n,
		 enum fetch_for why)
{
	struct plan_unit *pu = calloc(n ? n : 1, sizeof(*pu));
	struct gap_check g = { c, obj };

	if (!pu) {
		run_fail(c, v, n, -ENOMEM);
		return;
	}
	for (size_t i = 0; i < n; i++)
		pu[i] = (struct plan_unit){ v[i]->unit.off, v[i]->unit.len, v[i]->prefetch,
					    v[i]->sliver };
	for (size_t i = 0; i < n;) {
		bool demand;
		struct extent key = { 0, 0 };
		size_t j = c->cfg.tier_keys ?
			plan_tier_run(pu, i, n, obj->version.size, unit_at, obj, &demand, &key) :
			plan_run(pu, i, n, c->cfg.merge_gap, c->cfg.max_request, gap_has_units,
				 &g, &demand);
		run_submit(c, obj, v + i, pu + i, j - i, !demand, why, key);
		i = j;
	}
	free(pu);
}
