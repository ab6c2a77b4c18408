/*
 * mount_lookup.h - the tilefs mount a path is in, and what the mount says
 * of itself: its mountpoint, who mounted it, its cache dir and its source.
 * The commands that take a path in a mount where they would take a cache
 * dir or a SOURCE (warm, cache, hint, inspect) find the mount here, one
 * way.
 *
 * The mount is believed only when the kernel says so: the path is on FUSE
 * and its line of /proc/self/mountinfo (found by device number) has type
 * fuse.tilefs. Its root answers HINT_XATTR_SOCKET (tools/hint.h) with its
 * control socket, CACHE_DIR/mounts/PID.hint.sock (fs/control.c), which
 * names its cache dir and process; CACHE_DIR/mounts/PID.prom
 * (cache/store/mounts.h) names its source.
 */
#ifndef TILEFS_MOUNT_LOOKUP_H
#define TILEFS_MOUNT_LOOKUP_H

#include <stddef.h>
#include <sys/types.h>

#define MOUNT_LOOKUP_PATH 4200		/* bytes of a path below */

/* A tilefs mount as mount_lookup() finds it. */
struct mount_found {
	char mountpoint[MOUNT_LOOKUP_PATH];	/* as the kernel shows it */
	char rel[MOUNT_LOOKUP_PATH];	/* the path given, relative to it ("": the root) */
	uid_t owner;			/* who mounted it */
	char cache_dir[MOUNT_LOOKUP_PATH];
	long pid;			/* the mount's process */
	char source[1024];		/* without secrets (a query string); "": unknown */
};

/*
 * Is FD (a file opened O_PATH) on a tilefs mount? Then 0, *OWNER the user
 * who mounted it and, unless MOUNTPOINT is NULL, its mountpoint in
 * MOUNTPOINT (SIZE bytes); else -ENOENT.
 */
int mount_lookup_fd(int fd, uid_t *owner, char *mountpoint, size_t size);

/*
 * The control socket's path of the mount whose root is ROOT into PATH
 * (SIZE bytes, NUL-terminated). 0, or -errno of getxattr (-ENODATA: it
 * has none; -EACCES: another user's mount).
 */
int mount_lookup_socket(const char *root, char *path, size_t size);

/*
 * The tilefs mount, of the caller's or root's, that PATH is in (the
 * mountpoint or any path in it) into *OUT. 0; or -ENOENT when PATH is not
 * in a tilefs mount, -EACCES when it is another user's, another -errno when
 * the mount names no cache dir, each with a message for the user in WHY
 * (naming PATH). A mount whose source cannot be read leaves OUT->source
 * empty and still returns 0: its cache dir is known.
 */
int mount_lookup(const char *path, struct mount_found *out, char *why, size_t why_size);

struct options;

/*
 * O->source, when it is no URL (no "://") but a path in a tilefs mount,
 * becomes that mount's source and O->cache_dir its cache dir (an explicit
 * --cache-dir naming another dir is refused). O->paths are relative to
 * the path given, or absolute under the mountpoint; none, and the path
 * given is below the mountpoint: that path. 0 (a URL, or resolved), or
 * the exit status after a message on stderr naming CMD.
 */
int mount_lookup_options(struct options *o, const char *cmd);

#endif
