/*
 * hint.h - `tilefs hint [--client NAME] MOUNTPOINT ORDER_FILE|-|--clear`:
 * hand a running mount the reads to come, in order, as the hint of the
 * client NAME, so that it fetches ahead of its readers (cache_hint_set()),
 * through the mount's control socket (fs/control.h).
 */
#ifndef TILEFS_HINT_H
#define TILEFS_HINT_H

#include <stdint.h>

/* Extended attribute of a mount's root directory: the path of its control
 * socket. The mount command gives this name to the FUSE front (struct
 * mount_config, fs/mount.h), which answers it, and hint reads it. */
#define HINT_XATTR_SOCKET "user.tilefs.hint_socket"

/* --hint-budget when not given: 1/32 of a cache of CACHE_SIZE bytes, at
 * most 1 GiB. */
uint64_t hint_default_budget(uint64_t cache_size);

/* ARGV after "hint". Returns the exit status. */
int hint_main(int argc, char **argv);

#endif
