/*
 * inodes.h - the inode numbers a mount gives the kernel. Numbers are
 * counted up from INODES_ROOT + 1 in the order paths are first looked up:
 * they say nothing of the daemon's memory, which every user of an
 * allow_other mount can see them. The root is INODES_ROOT, path "", and is
 * never forgotten.
 *
 * A path keeps its number for the life of the mount, across the kernel
 * forgetting it (so `find`, `du`, rsync and tar, which tell files apart
 * by number, see one file), with two exceptions: inodes_retire() gives a
 * path a new number (a new version of an object opened while an older one
 * is still open, fs/mount.c), which it keeps from then on; and when the
 * numbers of forgotten paths take more than INODES_FORGOTTEN_BYTES, the
 * longest forgotten one is dropped, and its path numbered anew at its
 * next lookup. A number is never given twice in a mount. Thread-safe.
 */
#ifndef TILEFS_INODES_H
#define TILEFS_INODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INODES_ROOT 1		/* FUSE_ROOT_ID */
/* Memory kept for the numbers of forgotten paths (an entry and its path):
 * about a million paths of 60 bytes. */
#define INODES_FORGOTTEN_BYTES (128u << 20)

struct inodes;

int inodes_new(struct inodes **out);
void inodes_free(struct inodes *t);

/* The number of PATH (relative, no leading '/'), counting one lookup: its
 * own number if it ever had one (see above), else the next. 0: out of
 * memory. */
uint64_t inodes_lookup(struct inodes *t, const char *path);
/* Give INO's path a new number at its next lookup; INO lives on until
 * forgotten, for the files open on it. False for the root, or a number not
 * held. */
bool inodes_retire(struct inodes *t, uint64_t ino);
/* An open of INO reads the object version VERSION (fs/mount.c): the
 * kernel's page cache of INO may hold its pages from now on. True if the
 * opens of INO since the kernel last forgot it all read VERSION (its pages
 * may be kept), false if one read another version, or none was noted. */
bool inodes_pages_of(struct inodes *t, uint64_t ino, int64_t version);
/* Uncount N lookups of INO; at none left, the kernel holds it no more. */
void inodes_forget(struct inodes *t, uint64_t ino, uint64_t n);
/* INO's path, valid until INO is forgotten (the kernel sends nothing about
 * an inode it has forgotten). NULL for a number not given in this mount. */
const char *inodes_path(struct inodes *t, uint64_t ino);
/* Numbers the kernel holds (looked up and not forgotten), the root
 * included. */
size_t inodes_count(struct inodes *t);

#endif
