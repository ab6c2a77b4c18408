/*
 * private_dir.h - the rule for a cache dir: it belongs to the user who runs
 * tilefs and nobody else may write to it, so nothing in it (a symlink named
 * reserve or index.lock, a planted index.db) was put there by someone else.
 * A cache dir shared by a group is not supported: give each user a cache
 * dir of their own (each tilefs run as root shares /var/cache/tilefs).
 *
 * Layer: the base. Includes nothing else of tilefs (tests/check-layers).
 */
#ifndef TILEFS_PRIVATE_DIR_H
#define TILEFS_PRIVATE_DIR_H

#include <stddef.h>

/*
 * Open DIR (following a link to it, which its owner chose) as a directory
 * fd, close-on-exec, and check it: owned by the effective user, not
 * writable by group or others. Returns the fd (caller closes), or -errno:
 * -EPERM when the check fails, with what to fix in WHY (WHY_SIZE bytes,
 * for a message that starts with DIR).
 */
int private_dir_open(const char *dir, char *why, size_t why_size);

#endif
