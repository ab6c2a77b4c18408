/*
 * inodes.h - the inode numbers a mount gives the kernel: one per path the
 * kernel has looked up and not yet forgotten as often, so a path keeps its
 * number (and the kernel its cached pages) while the kernel knows it. The
 * root is INODES_ROOT, path "", and is never forgotten. Thread-safe.
 */
#ifndef TILEFS_INODES_H
#define TILEFS_INODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INODES_ROOT 1		/* FUSE_ROOT_ID */

struct inodes;

int inodes_new(struct inodes **out);
void inodes_free(struct inodes *t);

/* The number of PATH (relative, no leading '/'), counting one lookup: a
 * new one on its first. 0: out of memory. */
uint64_t inodes_lookup(struct inodes *t, const char *path);
/* Give PATH a new number at its next lookup; INO (PATH's now) lives on
 * until forgotten, for the files open on it. False for the root. */
bool inodes_retire(struct inodes *t, uint64_t ino);
/* Uncount N lookups of INO; at none left, its number is gone. */
void inodes_forget(struct inodes *t, uint64_t ino, uint64_t n);
/* INO's path, valid until INO is forgotten (the kernel sends nothing about
 * an inode it has forgotten). INO must be one inodes_lookup() gave, or the
 * root. */
const char *inodes_path(struct inodes *t, uint64_t ino);
/* Numbers given and not forgotten, the root included. */
size_t inodes_count(struct inodes *t);

#endif
