/*
 * warm.c - cache_warm() and cache_units_missing(), for tilefs warm: units
 * are claimed, fetched and stored from the calling thread (no in-flight
 * entries, no persist queue; a fetch thread stages the bytes on the data
 * file's page grid and writes them direct: stage.c), under the
 * same claims as a mount's reads, so the two never fetch one unit twice.
 * Every unit warmed is admitted, even into a full cache: a user who warms
 * a file wants it kept (cache/store/evict.h), and so are those of it the
 * persist thread stores for this process (the header its open fetched:
 * obj->kept).
 *
 * Level 7 of the engine (engine_int.h): calls persist.c (evict()), fetch.c
 * (pinned GETs) and what lies under them; no engine file calls it.
 */
#include "cache/engine/engine_int.h"
#include "cache/store/index.h"
#include "cache/store/store.h"
#include "cache/store/unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Units of the index read at a time by cache_units_missing(). */
#define MISSING_PAGE 4096

int cache_units_missing(struct cache *c, struct cache_object *obj,
			const struct extent *units, size_t n, bool *missing)
{
	/* before the index is read: a unit the persist thread stores later
	   is admitted, one stored before is found and kept below */
	atomic_store(&obj->kept, true);
	struct index_unit *have = NULL;
	size_t nhave = 0, j = 0;
	bool more = obj->id >= 0 && n > 0;	/* rows past the page */
	/* those found on probation, to keep */
	uint64_t *probation = calloc(n ? n : 1, sizeof(*probation));
	bool *kept = calloc(n ? n : 1, sizeof(*kept));
	size_t nprobation = 0;

	if (!probation || !kept || (more && !(have = malloc(MISSING_PAGE * sizeof(*have))))) {
		free(probation);
		free(kept);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		/* the rows from units[i] on, a page at a time: memory bounded by
		   the page, not by what is cached of the object */
		while (j < nhave && have[j].off < units[i].off)
			j++;
		if (j == nhave && more) {
			int err = index_units_from(c->index, obj->id, units[i].off, have,
						   MISSING_PAGE, &nhave);
			if (err) {
				free(probation);
				free(kept);
				free(have);
				return err;
			}
			more = nhave == MISSING_PAGE;
			j = 0;
		}
		missing[i] = !(j < nhave && have[j].off == units[i].off && have[j].len == units[i].len);
		if (!missing[i] && have[j].probation)
			probation[nprobation++] = units[i].off;
	}
	/* asked for: kept, even those a mount (or this warm's open) left on
	   probation; one evicted since it was read is missing after all */
	if (nprobation && index_units_keep(c->index, obj->id, probation, nprobation, kept) == 0)
		for (size_t i = 0, k = 0; i < n && k < nprobation; i++)
			if (!missing[i] && units[i].off == probation[k])
				missing[i] = !kept[k++];
	free(probation);
	free(kept);
	free(have);
	return 0;
}

/* A warm GET's stage (stage.c): its whole pages go direct, as nobody
 * reads them back soon. */
#define WARM_STAGE (1u << 20)

/*
 * GET UNITS[0..n) of OBJ (adjacent, all claimed by us) into their data
 * file and record them. Every claim is released (by the unit's row, or
 * here on failure).
 */
static int warm_run(struct cache *c, struct cache_object *obj, const struct extent *units,
		    size_t n, struct cache_warm_counts *out)
{
	uint64_t off = units[0].off, end = units[n - 1].off + units[n - 1].len;
	struct stage *sink = stage_new(c->store, obj->id, off, n, WARM_STAGE, true);
	struct http_request req;

	if (!sink) {
		for (size_t i = 0; i < n; i++)
			index_unclaim(c->index, obj->id, units[i].off);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		sink->units[i] = (struct index_unit_new){ .off = units[i].off,
							  .len = units[i].len };
	pinned_get(c, obj->url, obj->log_name, &obj->version, off, end - off, &req);
	req.sink = stage_take;
	req.sink_arg = sink;
	http_run(c->http, &req);
	int err = version_verdict(&obj->version, &req);
	if (!err)
		err = stage_flush(sink);
	if (err == -ESTALE)
		object_mark_stale(obj);
	if (err) {
		for (size_t i = 0; i < n; i++)
			unit_abandon(c->index, c->store, obj->id, units[i].off, units[i].len);
	} else {
		cache_count_fetched(c, req.body_len);
		/* each claim goes with its unit's row, or unit_record() drops it */
		unit_record(c->index, c->store, obj->id, sink->units, n, 0);
		for (size_t i = 0; i < n; i++) {
			if (!sink->units[i].err)
				out->fetched += units[i].len;
			else if (sink->units[i].err != -EBUSY)	/* -EBUSY: its claim went
							   with its object (dropped) */
				err = sink->units[i].err;
		}
	}
	stage_free(sink);
	return err;
}

/* GET the units of UNITS[0..n) that CLAIM says are ours (0), adjacent ones
 * in one GET of up to max_request bytes; after ERR (or the first error
 * here) their claims are released instead. The first error, or ERR. */
static int fetch_claimed(struct cache *c, struct cache_object *obj, const struct extent *units,
			 size_t n, const int *claim, struct cache_warm_counts *out, int err)
{
	for (size_t i = 0; i < n;) {
		if (claim[i] != 0) {
			i++;
			continue;
		}
		size_t j = i + 1;
		while (j < n && claim[j] == 0 && units[j].off == units[j - 1].off + units[j - 1].len &&
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
	return err;
}

/*
 * The units of OFFS[0..n) that another process held (claim[i] -EBUSY):
 * wait for it to store them or to let them go (a fetch that failed, the
 * claim an eviction takes), and claim them again, as a mount's read waits
 * (read.c), for about claim_wait_s. CLAIM gets the new results; still
 * -EBUSY if the other process holds them still (a live holder's claim is
 * never taken over: unit.h, invariant 8), or the index cannot tell.
 */
/*
 * Claim the units of UNITS[0..n) (OFFS: their offsets) a run at a time,
 * each run (adjacent units, up to max_request bytes) just before its GET,
 * and fetch those claimed: a claim is held for its GET, not while the
 * runs before it are fetched. CLAIM[i] gets each unit's claim result
 * (-ENOENT: not claimed, after an error). The first error.
 */
static int claim_and_fetch(struct cache *c, struct cache_object *obj, const struct extent *units,
			   const uint64_t *offs, size_t n, int *claim,
			   struct cache_warm_counts *out)
{
	int err = 0;
	for (size_t i = 0; i < n; i++)
		claim[i] = -ENOENT;
	for (size_t i = 0, j; i < n && !err; i = j) {
		for (j = i + 1; j < n && units[j].off == units[j - 1].off + units[j - 1].len &&
				units[j].off + units[j].len - units[i].off <= c->cfg.max_request;
		     j++)
			;
		err = index_claims(c->index, obj->id, offs + i, j - i, claim + i);
		err = fetch_claimed(c, obj, units + i, j - i, claim + i, out, err);
	}
	return err;
}

static size_t count_busy(const int *claim, size_t n)
{
	size_t nbusy = 0;
	for (size_t i = 0; i < n; i++)
		nbusy += claim[i] == -EBUSY;
	return nbusy;
}

static void wait_for_others(struct cache *c, const struct cache_object *obj,
			    const uint64_t *offs, size_t n, int *claim)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	size_t nbusy = count_busy(claim, n);

	if (nbusy == 0)
		return;		/* as a rule: nothing to wait for, nothing to allocate */
	uint64_t *busy = calloc(nbusy, sizeof(*busy));
	int *again = calloc(nbusy, sizeof(*again));

	for (int round = 0; busy && again && nbusy && round <= (c->cfg.claim_wait_s + 1) * 200;
	     round++) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (claim[i] == -EBUSY)
				busy[k++] = offs[i];
		nanosleep(&pause, NULL);
		if (index_claims(c->index, obj->id, busy, nbusy, again) != 0)
			break;
		k = 0;
		for (size_t i = 0; i < n && k < nbusy; i++)
			if (claim[i] == -EBUSY)
				claim[i] = again[k++];
		nbusy = count_busy(claim, n);
	}
	free(busy);
	free(again);
}

int cache_warm(struct cache *c, struct cache_object *obj, const struct extent *units, size_t n,
	       struct cache_warm_counts *out)
{
	if (obj->id < 0)
		return -ENOTSUP;	/* the origin gives no version to cache it by */
	atomic_store(&obj->kept, true);
	int err = object_cut(obj);
	if (err)
		return err;
	uint64_t *offs = calloc(n ? n : 1, sizeof(*offs));
	int *claim = calloc(n ? n : 1, sizeof(*claim));

	if (!offs || !claim) {
		free(offs);
		free(claim);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		offs[i] = units[i].off;
	/* ours first, then those another process held, once it is done */
	err = claim_and_fetch(c, obj, units, offs, n, claim, out);
	for (size_t i = 0; i < n; i++) {
		if (claim[i] == -EEXIST && !err)
			out->cached += units[i].len;
		if (claim[i] != -EBUSY)
			claim[i] = -EALREADY;	/* fetched or counted */
	}
	if (!err)
		wait_for_others(c, obj, offs, n, claim);
	for (size_t i = 0; i < n && !err; i++) {
		if (claim[i] == -EEXIST)
			out->cached += units[i].len;	/* the other process stored it */
		else if (claim[i] == -EBUSY)
			out->elsewhere += units[i].len;
	}
	err = fetch_claimed(c, obj, units, n, claim, out, err);
	/* what a user asks to warm is kept: those of its units that a mount
	   stored on probation meanwhile (cache/store/evict.h) are admitted too */
	if (!err)
		index_units_keep(c->index, obj->id, offs, n, NULL);
	free(offs);
	free(claim);
	if (!err)
		evict(c);
	return err;
}
