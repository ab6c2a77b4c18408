/*
 * control.h - a running mount's control socket: `tilefs hint` hands the
 * mount the coming reads through it (the mount itself is read-only, so a
 * write or setxattr through it cannot carry them).
 *
 * The socket is CACHE_DIR/mounts/PID.hint.sock (the cache dir is private
 * to its owner); the mount's root directory names it in an extended
 * attribute (mount_config.hint_xattr). Only the mount's owner or root may
 * connect (SO_PEERCRED). A client sends one request and closes its write
 * side:
 *     "tilefs-hint order\n" ORDER      the hint of the client's process,
 *                                      dropped when that process exits;
 *                                      ORDER is the order file's bytes, at
 *                                      most HINT_ORDER_MAX (cache.h)
 *     "tilefs-hint order NAME\n" ORDER the hint of the client NAME (1 to
 *                                      64 of [A-Za-z0-9._-]), kept until
 *                                      NAME replaces or drops it
 *     "tilefs-hint clear[ NAME]\n"     drop the process's (NAME's) hint
 *     "tilefs-hint clear-all\n"        drop every client's hint
 * Each client's hint replaces only its own; the mount serves them all at
 * once (cache_hint_set()). The client reads one line back: "ok N\n" (N
 * entries) or "error: WHY\n", WHY
 * naming the order's line where one is at fault. The order is parsed as
 * hint_line_parse() says; its paths are relative to the mount (or
 * absolute, under it). The daemon reads nothing but the socket for the
 * caller.
 *
 * Layer: the FUSE front (fs/), over cache/ only.
 */
#ifndef TILEFS_CONTROL_H
#define TILEFS_CONTROL_H

#include <stddef.h>
#include <stdint.h>

struct cache;
struct namespace;
struct control;

/* Listen on CACHE's control socket for hints on the mount at MOUNTPOINT
 * (its real path), resolved in NS, each fetched BUDGET bytes ahead of the
 * readers at most; all borrowed until control_stop(). 0 or -errno
 * (logged). */
int control_start(struct namespace *ns, struct cache *cache, const char *mountpoint,
		  uint64_t budget, struct control **out);
/* The socket's path (borrowed until control_stop()). */
const char *control_socket_path(const struct control *ctl);
/* Stop listening, remove the socket, drop the hints; NULL is fine. */
void control_stop(struct control *ctl);

#endif
