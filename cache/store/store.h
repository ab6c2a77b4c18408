/*
 * store.h - the data files of the cache: one sparse file per cached object
 * version, holding each cached unit at the unit's own offset, under
 * CACHE_DIR/data-<instance>/<xx>/<object id>. Units are evicted by punching
 * holes, so an object's file only takes the space of the units it holds.
 *
 * Nothing here decides what is valid: the index does (a unit is valid only
 * while its row exists and its bytes match the row's checksum).
 *
 * CACHE_DIR/reserve is set aside while the disk has room (1/16 of the
 * file system, at most 4 MiB); on a full disk it is given back so that the
 * index can still commit the evictions that make room.
 *
 * Thread-safe. Open files are kept in a small table (closed least recently
 * used first), so any number of objects costs a bounded number of fds.
 *
 * No store: a cache whose index cannot be opened runs with ST NULL
 * (cache/engine/cache.c). Reads, writes, punches and unlinks then fail
 * with -ENODEV, pins and holds with -ENOENT (no file), and every
 * store_punches() is a new count.
 *
 * Layer: the store. Includes cache/base/ and its own folder only; never the
 * origin, the engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_STORE_H
#define TILEFS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* Open the store of database generation INSTANCE under DIR, removing data
 * directories of other generations. Caller frees with store_close(). */
int store_open(const char *dir, const char *instance, struct store **out);
void store_close(struct store *st);

/* Whole-buffer write/read of object OBJECT_ID's file at OFF; 0 or -errno
 * (-EIO for a short read). Writing creates the file.
 *
 * DIRECT: nobody is expected to read these bytes back soon. A write of at
 * least STORE_DIRECT_MIN whole pages whose buffer lies on the file's page
 * grid (BUF and OFF equal modulo STORE_ALIGN) then
 * writes those pages with O_DIRECT, where the file system takes it: they
 * skip the page cache, whose copy costs more CPU per byte than the rest of
 * a fetch (measured in the commit that chose it). Its edges, and every other write, go
 * through the page cache. A direct write and a buffered one never share a
 * page. Buffered writes into one file are made one at a time, as the
 * kernel would (store.c). */
#define STORE_ALIGN 4096u
#define STORE_DIRECT_MIN (64u << 10)
int store_write(struct store *st, int64_t object_id, const void *buf, size_t len, uint64_t off,
		bool direct);
int store_read(struct store *st, int64_t object_id, void *buf, size_t len, uint64_t off);
/* Give back the disk space of [off, off+len) of OBJECT_ID's file. Counts
 * a punch first (store_punches()); if it cannot be counted, the bytes
 * stay and that error is returned. */
int store_punch(struct store *st, int64_t object_id, uint64_t off, uint64_t len);
/*
 * Punches made so far in this cache dir by every process using it: a
 * counter in DIR/data-<instance>/punches (counters.h), raised before the
 * bytes go. Whoever reads the same count before looking a unit up and
 * after reading its bytes knows no bytes were punched in between. Where
 * the file cannot be read or was damaged, every call returns a new count
 * (so the answer is always "perhaps"), and store_punch() punches nothing.
 */
uint64_t store_punches(struct store *st);
/*
 * Remove OBJECT_ID's data file, counting a punch first (its bytes are gone
 * for whoever opens it next). The file lives on, unchanged, for whoever
 * has it open or mapped (the kernel, for a passthrough open: unit.h,
 * invariant 7); every process's store reopens its files before using
 * them again, so later writes go to a new file. 0 (also if there was no
 * file) or -errno.
 */
int store_unlink(struct store *st, int64_t object_id);

/*
 * Pins: a file open for reading elsewhere (the kernel reading it for a
 * FUSE passthrough open, tilefs sealing it) must never see its bytes
 * punched out. store_pin() opens OBJECT_ID's file read-only with a shared
 * flock(2): the pin lasts while that open file does (in any process, or in
 * the kernel), and dies with it. store_hold() takes the exclusive lock an
 * eviction holds while it drops a row and punches its bytes (unit.h,
 * invariant 6). Each returns the fd (close it to let go), -EBUSY if the
 * other kind is held, -ENOENT if the file does not exist, or -errno.
 */
int store_pin(struct store *st, int64_t object_id);
int store_hold(struct store *st, int64_t object_id);
/*
 * Reading the data file open on PIN (store_pin()) from its start to its
 * end, as a seal checks it: store_scan_read() gives the LEN bytes at OFF
 * (offsets rising), from a window of the file read STORE_WINDOW at a
 * time (no further than the file's end), with O_DIRECT where the file
 * system takes it, into one buffer for the whole file: no page cache page
 * is filled for it, and bytes still in the page cache are written out
 * first (the seal syncs them anyway). The
 * pointer lasts until the next call; NULL with *ERR set (-EIO for a file
 * that ends early, -ENOMEM, -errno). The scan sets O_DIRECT on
 * PIN's open file: give it a pin of its own.
 */
#define STORE_WINDOW (4u << 20)
struct store_scan;
struct store_scan *store_scan_open(int pin);	/* NULL: no memory */
const char *store_scan_read(struct store_scan *s, uint64_t off, size_t len, int *err);
void store_scan_close(struct store_scan *s);
/* What a data file is now, to tell later whether anything wrote it since
 * (any write or punch, by any process, moves its ctime): for seals
 * (index_seal()). store_stamp(): of the file open on FD; 0 or -errno. */
struct store_stamp {
	int64_t ino;
	int64_t ctime_ns;
};
int store_stamp(int fd, struct store_stamp *out);

/* Is ERR, from a write of the store or the index, a disk with no room
 * (-ENOSPC, or -EDQUOT: the user's quota)? */
bool store_full(int err);
/* Free the reserve (true if there was one) / make it again if it is gone. */
bool store_reserve_release(struct store *st);
void store_reserve_restore(struct store *st);

/*
 * The room the file system under the cache dir gives the cache, for
 * sizing it against its disk (cache_open()): DISK, what it could hold at
 * most (the free space, and what the cache takes already: DATA_BYTES of
 * units, the reserve, the index); RESERVE, the reserve's size; INDEX,
 * index.db and its -shm as they are, its WAL at its bound (SQLite's
 * checkpoint, about 4 MiB) or as it is if larger. Units get what DISK
 * holds beyond the other two. 0 or -errno.
 */
struct store_room {
	uint64_t disk;
	uint64_t reserve;
	uint64_t index;
};
int store_room(struct store *st, uint64_t data_bytes, struct store_room *out);

#endif
