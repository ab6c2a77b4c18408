/*
 * counters.h - the shared counters of a data directory: how many punches
 * and how many unlinks every process using the cache dir has made (unit.h,
 * invariants 3, 4 and 7). A reader that reads the same count before it
 * looks a unit's row up and after it read the unit's bytes knows that no
 * bytes were punched in between.
 *
 * ON DISK: data-<instance>/punches, 0600, two native-endian 64-bit words
 * (punches, unlinks), raised under an exclusive flock(2) of the file.
 * A new file, or one found shorter than two words, starts at random
 * values, never at 0, so a count read before it was damaged cannot come
 * back by chance.
 *
 * The file is read with pread(2), never mapped: anyone may truncate it (its
 * owner, a restore tool, a damaged disk), and a mapped page past the end
 * of a file is a SIGBUS. Each read also checks, with fstat(2), that the
 * file open is still the one in the directory (a file replaced or removed
 * keeps its old counts for whoever has it open, and a restored copy may
 * hold a count seen before): a process that finds its file replaced opens
 * the new one and moves both counts to new random values, so no count read
 * from the old file can match. Whenever the counts cannot be read (the
 * file is not a regular file, unreadable, replaced by something else),
 * every call returns a count never returned before: the answer is always
 * "perhaps punched", so every cached read is checked in the index.
 *
 * Thread-safe. Layer: the store. Includes cache/base/ and its own folder
 * only; never the origin, the engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_COUNTERS_H
#define TILEFS_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

struct counters;

enum counter { COUNTER_PUNCHES, COUNTER_UNLINKS };

/* The counters of the directory open on DIR_FD (borrowed until
 * counters_close()); WHERE names it in messages. The file is created if
 * missing. Only -ENOMEM fails: a file that cannot be used now is logged,
 * and tried again at each call. Caller frees with counters_close(). */
int counters_open(int dir_fd, const char *where, struct counters **out);
void counters_close(struct counters *ct);

/* The count of WHICH now: equal to an earlier answer only if no punch
 * (unlink) was counted since, by any process. */
uint64_t counters_get(struct counters *ct, enum counter which);

/* Count a punch if PUNCH, an unlink if UNLINK. 0, or -errno if it could
 * not be counted (logged): then the caller must not punch the bytes out,
 * as other processes would not know. */
int counters_add(struct counters *ct, bool punch, bool unlink);

#endif
