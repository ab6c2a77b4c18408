/*
 * warm.c - cache_warm() and cache_units_missing(), for tilefs warm: units
 * are claimed, fetched and stored from the calling thread (no in-flight
 * entries, no copy into them, no persist queue), under the same claims as a
 * mount's reads, so the two never fetch one unit twice.
 */
#include "cache/engine/engine_int.h"
#include "cache/store/index.h"
#include "cache/store/unit.h"

#include <errno.h>
#include <stdlib.h>

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

/*
 * GET UNITS[0..n) of OBJ (adjacent, all claimed by us) and store them.
 * Every claim is released (by the unit's row, or here on failure).
 */
static int warm_run(struct cache *c, struct cache_object *obj, const struct extent *units,
		    size_t n, struct cache_warm_counts *out)
{
	uint64_t off = units[0].off, end = units[n - 1].off + units[n - 1].len;
	struct http_request req;
	size_t i = 0;

	pinned_get(c, obj->url, obj->log_name, &obj->version, off, end - off, &req);
	int err = (req.body = malloc(req.len)) ? 0 : -ENOMEM;
	if (!err) {
		http_run(c->http, &req);
		err = version_verdict(&obj->version, &req);
	}
	if (err == -ESTALE)
		object_mark_stale(obj);
	if (!err)
		cache_count_fetched(c, req.body_len);
	while (!err && i < n) {
		/* the unit's claim goes with its row, or unit_put() drops it */
		err = unit_put(c->index, c->store, obj->id, units[i].off, units[i].len,
			       req.body + (units[i].off - off));
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
	if (obj->id < 0)
		return -ENOTSUP;	/* the origin gives no version to cache it by */
	bool *mine = calloc(n ? n : 1, sizeof(*mine));
	int err = 0;

	if (!mine)
		return -ENOMEM;
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
