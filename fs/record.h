/*
 * record.h - `tilefs mount --record FILE`: what the mount's readers read,
 * in order, written as an order file (the format of tilefs hint and of
 * tilefs warm --from-file, cache.h), to replay on other machines or the
 * next run.
 *
 * One line per open of a file that read anything, written when it is
 * released (so in the order the readers finished with them): a tiled
 * TIFF whose reads read tiles of its full-resolution image gives
 * "PATH<TAB>X Y W H", the pixels of the smallest rectangle of tiles that
 * holds them all (clipped to the image); any other file, and a TIFF read
 * only in its header or overviews, "PATH" alone. A tile is read when a
 * read holds its middle byte, the hints' rule (hint_at.h): GDAL's buffered
 * read of one tile touches the edges of the tiles beside it, which a
 * replay of the record must not fetch. A path holding a tab or a
 * newline, or (without a window) ending in four numbers, cannot be written
 * unambiguously: it is left out, logged once.
 *
 * Layer: the FUSE front (fs/), over cache/ only.
 */
#ifndef TILEFS_RECORD_H
#define TILEFS_RECORD_H

#include <stddef.h>
#include <stdint.h>

struct cache_object;
struct record;
struct record_open;

/* Create FILE (mode 0600; an existing regular file of the daemon's user
 * is truncated; a symlink or another's file is refused). 0 or -errno,
 * logged. Freed with record_free(). */
int record_new(const char *file, struct record **out);
void record_free(struct record *r);

/* An open of the file at PATH (relative to the mount) of OBJ (borrowed
 * until record_close()); NULL when not recording or out of memory. */
struct record_open *record_open(struct record *r, const char *path,
				struct cache_object *obj);
/* The reader read LEN bytes at OFF through RO (NULL is fine). Takes no
 * lock: one open's reads may come from several threads, so the few fields
 * are atomic. */
void record_read(struct record_open *ro, uint64_t off, size_t len);
/* The open ended: write its line, free RO (NULL is fine). */
void record_close(struct record *r, struct record_open *ro);

#endif
