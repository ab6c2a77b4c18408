/*
 * mounts.h - CACHE_DIR/mounts/: a file per mount that used the cache dir,
 * holding its counters, so `tilefs cache stat` can tell what recent mounts
 * did. The mount writes its own file (fs/metrics.c, by the path
 * mounts_file() gives); this module names the files, reads them back and
 * removes those of mounts long gone.
 *
 * ON DISK: CACHE_DIR/mounts/PID.prom, PID the mount's process id, in
 * Prometheus text format (the same text as --metrics-file). The mount
 * rewrites it every few seconds by renaming a temporary file over it (so a
 * reader never sees half of one; the temporary's name does not end in
 * ".prom" and readers skip it), and a last time at unmount with tilefs_up 0.
 * Of its lines a reader takes only these, and ignores the rest:
 *
 *   tilefs_mount_info{source="S",mountpoint="M",...,pid="PID"} 1
 *       labels escaped as Prometheus does (\\, \" and \n); a file without
 *       a pid > 0 here that is a process id (fits pid_t) is skipped
 *   tilefs_up 1|0
 *   tilefs_start_time_seconds T
 *   tilefs_cache_uncached 1|0 (1: it read everything uncached, its cache
 *       index could not be opened)
 *   tilefs_requests_total, tilefs_cache_hits_total, tilefs_cache_misses_total,
 *   tilefs_served_bytes_total, tilefs_fetched_bytes_total, tilefs_errors_total,
 *   tilefs_passthrough_opens_total
 *
 * The file's mtime is when the counters were last written. A mount is
 * running while its file says tilefs_up 1 and process PID is alive; one
 * that ended (tilefs_up 0) or died without unmounting (a dead PID) is
 * stopped. The file of a dead PID unchanged for 7 days is removed
 * (mounts_prune(), at the start of every mount).
 *
 * Layer: the store. Includes cache/base/ and its own folder only; never the
 * origin, the engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_MOUNTS_H
#define TILEFS_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* CACHE_DIR/mounts into BUF (SIZE bytes). 0, or -ENAMETOOLONG. */
int mounts_dir(const char *cache_dir, char *buf, size_t size);
/* CACHE_DIR/mounts/PID.prom, the file of the mount PID, into BUF (SIZE
 * bytes). 0, or -ENAMETOOLONG. */
int mounts_file(const char *cache_dir, pid_t pid, char *buf, size_t size);

/* Remove the files of mounts long gone (dead PID, 7 days unchanged). */
void mounts_prune(const char *cache_dir);

/* What a mount's file says. */
struct mount_record {
	long pid;
	bool running;
	time_t started, updated;
	char source[1024], mountpoint[1024];
	uint64_t requests, hits, misses, bytes_served, bytes_fetched, errors, passthrough_opens;
	bool uncached;			/* it could not open the cache index */
};

/* The mounts that have used CACHE_DIR, most recently updated first: at most
 * MAX into OUT, *n of them. 0 or -errno; no mounts/ folder is no mounts. */
int mounts_recent(const char *cache_dir, struct mount_record *out, size_t max, size_t *n);

#endif
