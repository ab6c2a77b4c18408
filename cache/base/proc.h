/*
 * proc.h - questions about other processes on this machine, for the
 * cross-process parts of a cache dir: a claim in the index and a mount's
 * file under CACHE_DIR/mounts/ both name a pid, and are stale once it is gone.
 *
 * Layer: the base. Includes nothing else of tilefs (tests/check-layers).
 */
#ifndef TILEFS_PROC_H
#define TILEFS_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* Is process PID alive (even if we may not signal it)? False for pid <= 0. */
bool proc_alive(pid_t pid);

#endif
