/*
 * known.c - the units this process found cached (the known map): each
 * kept with the punch count read before its row was seen, and whether its
 * bytes were read whole and matched the row's checksum; and load_unit(),
 * which reads a cached unit whole, checks it and keeps it as known.
 *
 * Level 0 of the engine (engine_int.h): calls no other engine file. The
 * read path (read.c), the open (open.c) and the seal (seal.c) use it.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/log.h"
#include "cache/store/unit.h"

#include <errno.h>
#include <inttypes.h>

static struct known_unit *known_slot(struct cache *c, int64_t object_id, uint64_t off)
{
	uint64_t h = ((uint64_t)object_id * 0x9e3779b97f4a7c15ull) ^ (off * 0xff51afd7ed558ccdull);
	return &c->known[(h >> 32) & (KNOWN_SLOTS - 1)];
}

bool known_get(struct cache *c, int64_t object_id, uint64_t off, struct known_unit *out)
{
	const struct known_unit *k = known_slot(c, object_id, off);
	if (k->u.id == 0 || k->u.object_id != object_id || k->u.off != off)
		return false;
	*out = *k;
	return true;
}

bool known_put(struct cache *c, const struct index_unit *u, uint64_t punches, bool checked)
{
	struct known_unit *k = known_slot(c, u->object_id, u->off);
	/* a unit's id is never reused: checked once, its bytes are known good */
	checked |= k->u.id == u->id && k->checked;
	k->u = *u;
	k->punches = punches;
	k->checked = checked;
	return checked;
}

int load_unit(struct cache *c, struct cache_object *obj, const struct index_unit *u,
	      uint64_t punches, char *dst)
{
	bool dropped;
	int err = unit_verify(c->index, c->store, u, dst, &dropped);

	if (dropped)
		log_warn("cached bytes of %s at %" PRIu64 " are %s; fetching them again",
			 obj->log_name, u->off, err == -EIO ? "unreadable" : "damaged (checksum)");
	if (err)
		return -EIO;
	pthread_mutex_lock(&c->lock);
	known_put(c, u, punches, true);
	pthread_mutex_unlock(&c->lock);
	return 0;
}
