/*
 * metrics.h - a running mount's counters (requests, bytes, hits, misses,
 * errors, retries, in-flight requests, request latency) in Prometheus text
 * format. A thread rewrites them every few seconds into
 * CACHE_DIR/mounts/PID.prom (a part of the cache dir's format, described
 * and read back in cache/store/mounts.h, for `tilefs cache stat`), and
 * into --metrics-file; with
 * --metrics-port it also answers GET /metrics, on 127.0.0.1 or the
 * --metrics-address (any other than a loopback address serves the
 * network).
 */
#ifndef TILEFS_METRICS_H
#define TILEFS_METRICS_H

#include <stddef.h>

struct cache;
struct http_client;
struct metrics;
struct source;

#define METRICS_PERIOD_S 5

struct metrics_config {
	const char *cache_dir;
	const char *file;		/* --metrics-file, or NULL */
	int port;			/* --metrics-port, 0: none */
	const char *address;		/* --metrics-address, an IP literal;
					   NULL: 127.0.0.1 */
	const char *source;		/* for the tilefs_mount_info labels */
	struct source *src;		/* its credentials' renewals; borrowed
					   until metrics_stop() */
	const char *mountpoint;
};

/* Start writing (and serving) CACHE's and HTTP's counters, both borrowed
 * until metrics_stop(). On failure, err says what to fix. */
int metrics_start(const struct metrics_config *cfg, struct cache *cache, struct http_client *http,
		  struct metrics **out, char *err, size_t err_size);
/* Write the counters a last time (marked as stopped), then free. */
void metrics_stop(struct metrics *m);

#endif
