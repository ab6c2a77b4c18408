/*
 * unit.c - see unit.h: the unit protocol's three steps (put, verify,
 * evict), each the one place that changes a unit's bytes and its index row
 * together; the invariants they keep are numbered in unit.h.
 */
#include "cache/store/unit.h"
#include "cache/store/crc32c.h"
#include "cache/store/index.h"
#include "cache/store/store.h"

#include <errno.h>
#include <unistd.h>

int unit_put(struct index *ix, struct store *st, int64_t object_id, uint64_t off, uint64_t len,
	     const void *bytes)
{
	struct index_unit_new v = { .off = off, .len = len };
	unit_put_many(ix, st, object_id, &v, &bytes, 1, 0);
	return v.err;
}

/* Record V[0..n) under the admission rule against LIMIT (0: none), and
 * give up those that failed. */
static void record(struct index *ix, struct store *st, int64_t object_id,
		   struct index_unit_new *v, size_t n, uint64_t limit)
{
	index_units_admit(ix, object_id, v, n, limit);
	for (size_t i = 0; i < n; i++)
		if (v[i].err && v[i].err != -EBUSY)
			unit_abandon(ix, st, object_id, v[i].off, v[i].len);
}

void unit_write(struct store *st, int64_t object_id, struct index_unit_new *v,
		const void *bytes)
{
	v->err = store_write(st, object_id, bytes, v->len, v->off, false);
	if (!v->err)
		v->crc = crc32c(0, bytes, v->len);
}

void unit_put_many(struct index *ix, struct store *st, int64_t object_id,
		   struct index_unit_new *v, const void *const *bytes, size_t n,
		   uint64_t admit_limit)
{
	for (size_t i = 0; i < n; i++)
		unit_write(st, object_id, &v[i], bytes[i]);
	record(ix, st, object_id, v, n, admit_limit);	/* abandons the failed writes too */
}

void unit_record(struct index *ix, struct store *st, int64_t object_id,
		 struct index_unit_new *v, size_t n, uint64_t admit_limit)
{
	record(ix, st, object_id, v, n, admit_limit);
}

void unit_abandon(struct index *ix, struct store *st, int64_t object_id, uint64_t off,
		  uint64_t len)
{
	/* not ours (never taken, or dropped with its object): whatever is
	   there is another's to keep or punch (invariant 8); ours, it stays
	   ours until the unclaim below, as no live holder's claim is taken */
	int ours = index_claim_ours(ix, object_id, off);
	if (ours == -EBUSY)
		return;
	/* a pinned file keeps them: they are this version's own bytes anyway;
	   not known ours (the index failed), left unpunched: bytes no row
	   names are never read */
	int hold = ours == 0 ? store_hold(st, object_id) : -1;
	if (hold >= 0) {
		store_punch(st, object_id, off, len);
		close(hold);
	}
	index_unclaim(ix, object_id, off);	/* ours alone, as index.h says */
}

int unit_verify(struct index *ix, struct store *st, const struct index_unit *u, void *dst,
		bool *dropped)
{
	int err = store_read(st, u->object_id, dst, u->len, u->off);
	struct index_unit now;

	*dropped = false;
	if (!err && crc32c(0, dst, u->len) == u->crc)
		return 0;
	err = err ? -EIO : -EBADMSG;
	/* evicted while we read it (row gone first), or really damaged: a row
	   is only worth its bytes, so a damaged one goes */
	if (index_unit_find(ix, u->object_id, u->off, &now) == 0 && now.id == u->id)
		*dropped = unit_evict(ix, st, &now, NULL) == 0;	/* as it is now:
							   kept or not */
	return err;
}

int unit_evict(struct index *ix, struct store *st, const struct index_unit *u, uint64_t *freed)
{
	int hold = store_hold(st, u->object_id);	/* invariant 6 */
	if (hold < 0 && hold != -ENOENT)
		return hold;
	uint64_t dropped = u->len;	/* bytes: the unit's, or the object's */
	int err = index_unit_evict(ix, u);
	if (!err) {
		store_punch(st, u->object_id, u->off, u->len);
		index_unclaim(ix, u->object_id, u->off);
	} else if (err == -EEXIST) {	/* sealed once: invariant 7 */
		err = index_object_evict(ix, u->object_id, &dropped);
		if (!err) {
			store_unlink(st, u->object_id);
			index_object_unclaim(ix, u->object_id);
		}
	}
	if (freed)
		*freed = err ? 0 : dropped;
	if (hold >= 0)
		close(hold);
	return err;
}
