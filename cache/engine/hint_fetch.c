/*
 * hint_fetch.c - one entry of a hint fetched: its object opened (or taken
 * from the caller's set of opened objects), the units of its window or of
 * the whole object that are neither cached nor in flight sent for in
 * background GETs (fetch.c's submit_runs(), as whole-object streaming
 * does) while the background budget has room.
 *
 * Level 6 of the engine (engine_int.h): calls objects.c, fetch.c and what
 * lies under them; hint.c's workers call it, one entry each at a time.
 */
#include "cache/engine/engine_int.h"
#include "cache/engine/hint_plan.h"
#include "cache/base/log.h"
#include "cache/base/monotonic.h"
#include "cache/tiff/select.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ROOM_WAIT_MS 200	/* how often a wait for room looks again */

/* Wait until background_room() allows one more background GET; false if
 * OPS say to stop, or the cache stops. */
static bool room(struct cache *c, const struct hint_fetch_ops *ops)
{
	for (;;) {
		if (!ops->go_on(ops->arg))
			return false;
		if (background_room(c))
			return true;
		pthread_mutex_lock(&c->lock);
		bool stopping = c->stopping;
		if (!stopping)
			cond_wait_ms(&c->work, &c->lock, ROOM_WAIT_MS);
		pthread_mutex_unlock(&c->lock);
		if (stopping)
			return false;
	}
}

/* Fetch UNITS[0..n) of OBJ that are neither cached nor in flight, in
 * background GETs of at most STREAM_GET_MAX bytes each while the
 * background budget has room, telling OPS what each sent for. A unit a
 * coming entry wants again (OPS) is stored kept for that read, as one a
 * read had in flight is (want_again()): kept from the start, a read of it
 * cannot let it go before the hint says to keep it. */
static void fetch_units(struct cache *c, struct cache_object *obj, const struct extent *units,
			size_t n, const struct hint_fetch_ops *ops)
{
	struct inflight *batch[PREFETCH_MAX];

	for (size_t i = 0; i < n && !cache_object_stale(obj);) {
		size_t first = i;
		uint64_t span = 0, sent = 0;
		if (!room(c, ops))
			break;
		for (; i < n && i - first < PREFETCH_MAX && span < STREAM_GET_MAX; i++)
			span += units[i].len;
		size_t k = prefetch_entries(c, obj, units + first, i - first, true, batch);
		bool again[PREFETCH_MAX];
		for (size_t j = 0; j < k; j++)
			again[j] = ops->again(ops->arg, obj, batch[j]->unit);
		pthread_mutex_lock(&c->lock);
		for (size_t j = 0; j < k; j++)
			batch[j]->wanted |= again[j];
		pthread_mutex_unlock(&c->lock);
		submit_runs(c, obj, batch, k, FETCH_FOR_HINT);
		pthread_mutex_lock(&c->lock);
		for (size_t j = 0; j < k; j++) {
			sent += batch[j]->unit.len;
			entry_unref(batch[j]);
		}
		pthread_mutex_unlock(&c->lock);
		if (sent)
			ops->sent(ops->arg, sent);
	}
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

int hint_fetch(struct cache *c, struct cache_objects *opened, const struct hint_entry *e,
	       bool ahead, const struct hint_fetch_ops *ops)
{
	struct selection sel = { .ifd = -1 };
	struct extent *v = NULL;
	size_t n = 0;
	char why[200];
	int err = 0;

	struct cache_listed listed = { e->etag ? e->etag : "", e->size, e->mtime };
	struct cache_object *obj;
	bool open_now = !cache_objects_get(opened, e->url);
	err = cache_objects_open(opened, c, e->url, e->log_name, e->etag ? &listed : NULL, ahead,
				 &obj);
	if (err) {
		log_warn("hint: line %u: %s: cannot open (%s): skipped", e->line, e->log_name,
			 strerror(-err));
		return err;
	}
	/* the units the open stored weigh as fetched (a small file: all of
	   its tiles); the header is every window's and weighs nothing */
	if (open_now && obj->opened_bytes)
		ops->sent(ops->arg, obj->opened_bytes);
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
	fetch_units(c, obj, v, n, ops);
	free(v);
	return 0;
}
