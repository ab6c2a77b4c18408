/*
 * store.h - the data files of the cache: one sparse file per cached object
 * version, holding each cached unit at the unit's own offset, under
 * CACHE_DIR/data-<instance>/<xx>/<object id>. Units are evicted by punching
 * holes, so an object's file only takes the space of the units it holds.
 *
 * Nothing here decides what is valid: the index does (a unit is valid only
 * while its row exists and its bytes match the row's checksum).
 */
#ifndef TILEFS_STORE_H
#define TILEFS_STORE_H

#include <stddef.h>
#include <stdint.h>

struct store;

/* Open the store of database generation INSTANCE under DIR, removing data
 * directories of other generations. Caller frees with store_close(). */
int store_open(const char *dir, const char *instance, struct store **out);
void store_close(struct store *st);

/* Open (creating) the data file of OBJECT_ID; caller closes the fd. */
int store_object_open(struct store *st, int64_t object_id, int *fd);
int store_object_remove(struct store *st, int64_t object_id);
/* Give back the disk space of [off, off+len) of OBJECT_ID's file. */
int store_punch(struct store *st, int64_t object_id, uint64_t off, uint64_t len);

/* Whole-buffer pwrite/pread; 0 or -errno (-EIO for a short read). */
int store_write(int fd, const void *buf, size_t len, uint64_t off);
int store_read(int fd, void *buf, size_t len, uint64_t off);

#endif
