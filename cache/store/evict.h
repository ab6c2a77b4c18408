/*
 * evict.h - the eviction policy's decisions, pure (no I/O, no locks): which
 * level eviction brings a cache down to, what a unit's count is when it is
 * fetched again, and whether a fetched unit is admitted into a full cache
 * or kept on probation. The index applies them (index_units.c), in the
 * transaction that stores a unit, so every process sharing a cache dir
 * follows the same rule over the same counts.
 *
 * POLICY (measured against LRU, 2Q-like segments and LIP/BIP with
 * tests/bench/evict_sim.py): in the spirit of TinyLFU's admission filter.
 * A unit's count (`hits`) is the number of its reads at least
 * EVICT_HIT_GAP_S apart, so one pass over a file counts once. Eviction
 * takes units on probation first, in the order they came whatever their
 * counts (one that came last goes last, while its reader may still be at
 * it), then admitted units read once, then the rest, least recently read
 * first within each. An evicted unit leaves a
 * ghost (its key, count and last read) in the index; fetched again, it
 * comes back with that count. Once the cache is full (past the level
 * eviction brings it down to), a fetched unit is admitted only if its
 * count beats the count of the admitted unit eviction would take next by
 * more than EVICT_ADMIT_MARGIN, or
 * if that unit has sat unread for EVICT_IDLE_FACTOR times longer than the
 * fetched unit's last reuse interval (a working set that moved on); else
 * it is stored on probation, served while it stays, and evicted before any
 * admitted unit. Within probation a read less than EVICT_HIT_GAP_S after
 * the unit's fetch leaves its time as it was, so probation leaves in the
 * order units came in: units fetched ahead of the readers stay while the
 * ones the readers just read go first (least recently read would take the
 * oldest fetched, the ones read next). A unit a hint fetched that goes on
 * probation is also kept for its readers (units.ahead): eviction passes
 * over it until it is read or EVICT_AHEAD_S old, taking admitted units
 * instead if it must, so what a hint fetches into a full cache is never
 * evicted before it is read and fetched twice (a unit fetched again at
 * once would look reused and be admitted over the part that fits, by
 * the idle rule: evict_sim.py --hint). The hint holds what is kept so to
 * the room eviction leaves below the bound (cache/engine/hint.c). A unit
 * read on probation that a hint's coming read wants again (a tile two
 * chips share) is kept the same way until that read, under an eighth of
 * the cache (index_units_wanted()), once the cache is full: while it has
 * room nothing is evicted, and the hint asks for nothing. Counts within
 * the margin keep the resident: over epochs in random order on a data set
 * larger than the cache, the cache keeps the part that fits instead of
 * cycling through all of it (LRU's 0.86x of epoch 1 fetched again, this
 * policy 0.52x in evict_sim.py, 0.56-0.60x on the bench); a scan of other
 * data passes on probation without flushing what is hot.
 *
 * Layer: the store. Includes cache/base/ and its own folder only; never the
 * origin, the engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_EVICT_H
#define TILEFS_EVICT_H

#include <stdbool.h>
#include <stdint.h>

/* Two reads of a unit count as two only this many seconds apart. */
#define EVICT_HIT_GAP_S 10
/* A fetched unit displaces the victim by its count only when the count is
 * more than this above the victim's. Counts are of reads EVICT_HIT_GAP_S
 * apart, so two units read once per epoch can differ by one when an epoch
 * lasts about the gap (one read late in an epoch and early in the next
 * counts once): with no margin, that noise alone admits a unit of the part
 * that does not fit in place of one that does, epoch after epoch. */
#define EVICT_ADMIT_MARGIN 1
/* A victim unread for this many times the candidate's last reuse interval
 * is colder than the candidate, whatever its count. */
#define EVICT_IDLE_FACTOR 4
/* A unit fetched ahead of its readers (a hint's) that does not get into a
 * full cache is kept for them, passed over by eviction, until it is read
 * (then it is on probation, as if a reader's miss had just fetched it) or
 * this many seconds old (its readers skipped it, or its mount died). */
#define EVICT_AHEAD_S 60
/* Ghosts kept, in bytes of the units they stand for, per byte cached. */
#define EVICT_GHOST_RATIO 2

/* What the index knows of a unit for the policy: its count and when it
 * was read last (Unix seconds). */
struct evict_count {
	int64_t hits;
	int64_t last_access;
};

/* The level eviction brings a cache bounded by LIMIT bytes down to, once
 * over it; past it, the cache is full for admission. */
uint64_t evict_target(uint64_t limit);

/* The count of a unit fetched NOW: 1 if never seen (GHOST NULL), else its
 * ghost's count, plus one if its last read is EVICT_HIT_GAP_S old. */
int64_t evict_hits_fetched(const struct evict_count *ghost, int64_t now);

/* Admit into a full cache, at NOW, a fetched unit with GHOST (NULL: never
 * seen before; its count as it was, before this fetch), where VICTIM is
 * the admitted unit eviction takes next (NULL: none)? */
bool evict_admit(const struct evict_count *ghost, const struct evict_count *victim,
		 int64_t now);

#endif
