/*
 * unit.h - the unit protocol: how a unit's bytes and its index row change
 * together, written once for every process that stores, checks or evicts
 * units (the engine, tilefs warm, tilefs cache).
 *
 * A unit is an extent [off, off+len) of one object version. Its bytes live
 * in the object's data file (store.h), its row in the index (index.h). These
 * hold across every tilefs process sharing a cache dir:
 *
 *   (1) A unit's bytes are written only by the holder of its claim
 *       (index_claim(), unit_put()): one fetch, never two threads of one
 *       process at once, nor a fetch while its own process evicts it.
 *   (2) A unit's row is added only after its bytes are in the data file,
 *       only while its writer still holds the claim (one held too long may
 *       have been taken over), and adding it releases the claim
 *       (unit_put(), unit_put_many() or unit_record() -> index_units_add()).
 *   (3) Eviction deletes the row and claims the unit in one transaction,
 *       then punches the bytes out (counting the punch first:
 *       store_punches(); a punch that cannot be counted is not made),
 *       then releases the claim (unit_evict()). So no row ever points at
 *       bytes that are changing.
 *   (4) A reader that read a unit's bytes without checking them against
 *       the checksum serves them only if no punch was counted since before
 *       it found the row, or if looking the row up again finds the same row
 *       (same id): a unit evicted meanwhile is never served
 *       (cache/engine/read.c).
 *   (5) A unit whose bytes fail their checksum while its row stands is
 *       evicted, and fetched again by whoever wants it (unit_verify()).
 *   (6) No unit of a pinned data file is evicted (store_pin()): eviction
 *       holds the file's exclusive lock from before it drops the row until
 *       the bytes are punched (unit_evict()), and fails with -EBUSY if the
 *       file is pinned. A pinned file's bytes therefore never change:
 *       writes only ever put an object version's own bytes at their own
 *       offsets. Dropping a row breaks the object's seal (index_seal()).
 *   (7) A data file once sealed is never punched, as the kernel may map
 *       it still (a passthrough file mmap()ed stays mapped after its
 *       close, and its pin goes with the close): such an object is
 *       evicted whole, claimed whole (its units with a row and without)
 *       and its rows, seal and edges dropped in one transaction
 *       (index_object_evict()), then its file unlinked (counting a punch:
 *       store_unlink()), then the claims released. A mapping keeps the old
 *       file's bytes; later writes, claimed after the unlink, go to a new
 *       file.
 *   (8) A claim names one holder (an open index: claims.holder, whose
 *       lock on index.lock its process holds while it has the index open)
 *       and is never taken over while that holder lives, however long it
 *       holds the claim; a dead holder's is taken over (index_claim(),
 *       index_holder_alive()). Only its holder records the unit
 *       (index_units_add()), releases the claim (index_unclaim(),
 *       index_object_unclaim()) or, giving the unit up, punches it
 *       (unit_abandon(), which checks index_claim_ours() first). So from a
 *       claim to its release nothing but its holder writes, records or
 *       punches the unit, and the claim is a proof that lasts: the bytes
 *       its holder wrote are still there until it records the unit
 *       (read.c's read_written()), and no late write, record, punch or
 *       release of a holder can land under another's claim or row. A
 *       reader that will not wait for another process's claim any longer
 *       (its claim wait) fetches the unit for itself and stores nothing.
 *       A release the index would not write (a full or failing disk)
 *       counts as released for its own holder alone, which takes the
 *       claim again at its next claim of the unit, or of any unit of an
 *       object released whole (index_claims.c); other holders still see
 *       it held.
 *
 * Layer: the store. Includes cache/base/ and its own folder only; never the
 * origin, the engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_UNIT_H
#define TILEFS_UNIT_H

#include "cache/store/index.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/*
 * Write BYTES (LEN of them) as the unit at OFF of OBJECT_ID, whose claim
 * the caller holds, then record it (which releases the claim). On failure
 * the bytes are punched out and the claim released, unless it passed to
 * another process (-EBUSY: its bytes now). 0 or -errno (-ENOSPC, -EDQUOT:
 * the disk is full).
 */
int unit_put(struct index *ix, struct store *st, int64_t object_id, uint64_t off, uint64_t len,
	     const void *bytes);
/* The same for units of one object, recorded in one index transaction:
 * V[i] says where (off, len; crc is computed here), BYTES[i] holds its
 * bytes, and V[i].err gets its result. ADMIT_LIMIT > 0: a cache of that
 * bound admits them or keeps them on probation (index_units_admit()). */
void unit_put_many(struct index *ix, struct store *st, int64_t object_id,
		   struct index_unit_new *v, const void *const *bytes, size_t n,
		   uint64_t admit_limit);

/*
 * Write BYTES (v->len of them) as the unit at v->off of OBJECT_ID, whose
 * claim the caller holds (invariant 1), into its data file, without
 * recording it: v->err gets the result and v->crc the bytes' crc32c().
 * unit_record() records it (or gives it up, when v->err is set). Any
 * thread, while the claim is held: the bytes travel through the page
 * cache once, on the thread that has them.
 */
void unit_write(struct store *st, int64_t object_id, struct index_unit_new *v,
		const void *bytes);

/*
 * The same as unit_put_many() for units of OBJECT_ID whose bytes the caller
 * has written already (unit_write() or store_write(), under their claims),
 * V[i].crc being their crc32c(): recorded in one index transaction (under
 * ADMIT_LIMIT, as unit_put_many()), V[i].err each one's result. A V[i]
 * whose err is set on entry is not recorded but given up.
 */
void unit_record(struct index *ix, struct store *st, int64_t object_id,
		 struct index_unit_new *v, size_t n, uint64_t admit_limit);

/* Give up the claimed unit at OFF (LEN bytes): punch out whatever of it was
 * written (unless its file is pinned), release the claim; nothing at all
 * if this process does not hold the claim (invariant 8). */
void unit_abandon(struct index *ix, struct store *st, int64_t object_id, uint64_t off,
		  uint64_t len);

/*
 * Read all of unit U into DST (u->len bytes) and check it against U's
 * checksum. 0: good. -EIO: unreadable, -EBADMSG: damaged; then, if U's row
 * still stands (it was not evicted while we read), *dropped is set, so the
 * caller can say so, and U is evicted (if the index is too busy for that
 * now, its bytes stay damaged and are found so again next time).
 */
int unit_verify(struct index *ix, struct store *st, const struct index_unit *u, void *dst,
		bool *dropped);

/* Evict U (invariants 3, 6 and 7), and with it every unit of its object if
 * the object was ever sealed; *FREED (if not NULL) gets the bytes dropped.
 * 0, -ENOENT if its row was gone already (its bytes are then left alone),
 * -EBUSY if its data file is pinned (or, sealed, has a unit claimed), or
 * the index's error (nothing changed). */
int unit_evict(struct index *ix, struct store *st, const struct index_unit *u, uint64_t *freed);

#endif
