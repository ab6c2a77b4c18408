/*
 * reach.h - whether the origin answers at all, as the fetch threads see
 * every attempt end: an origin that cannot be connected to, times out, or
 * answers 5xx, 429 or 408 says nothing about any object (an outage), and
 * what is cached is then served as it was last known (RFC 5861's
 * stale-if-error: docs/SEMANTICS.md, "When the origin is down"); any other
 * answer (2xx, 3xx, 401, 403, 404, 412, ...) is the origin speaking, and
 * ends an outage. An attempt that finds no origin at all (not resolved,
 * not connected) is an outage at once; a 5xx or 429 only once its request
 * has spent its retries (http.c). While the origin is down, a request that
 * finds no origin is not retried, so that bytes never cached fail fast;
 * nor is one whose caller has a cached answer to give
 * (http_request.stale_ok); and such a caller does not even ask, but for
 * one probe every REACH_PROBE_MS (reach_probe_due(), source_answer_stale()).
 *
 * Atomics only: any thread may ask and any fetch thread tell. The first
 * outage after an answer and the first answer after an outage are
 * reported once each (the caller logs them).
 *
 * Layer: the origin (cache/origin/), over cache/base/ only; never the
 * providers, the store, the TIFF layer, the engine or FUSE
 * (tests/check-layers).
 */
#ifndef TILEFS_REACH_H
#define TILEFS_REACH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define REACH_PROBE_MS 2000

struct reach {
	atomic_uint_fast64_t down_since_ms;	/* 0: up */
	atomic_uint_fast64_t probe_at_ms;	/* next probe due, while down */
	atomic_uint_fast64_t stale_answers;	/* served from the cache, unasked */
};

/* Is an attempt that ended with STATUS (0: no answer) and VERDICT (its
 * errno: -EAGAIN for what is retried) an outage, an answer, or neither
 * (-1, 1, 0: a TLS trust failure, a canceled request, a write error)? */
int reach_classify(long status, int verdict);

/* An attempt ended as reach_classify() says (NOW_MS: monotonic). True when
 * this changed the origin's state (down after an answer, or up after an
 * outage): the caller logs it once; *DOWN_FOR_MS gets how long an outage
 * that just ended lasted. */
bool reach_note(struct reach *r, int kind, uint64_t now_ms, uint64_t *down_for_ms);

/* Is the origin down now (its last attempt an outage)? */
bool reach_down(struct reach *r);

/* While down: true for one caller every REACH_PROBE_MS, which then sends
 * its request (a probe, in the background) instead of answering stale
 * unasked; false while up. */
bool reach_probe_due(struct reach *r, uint64_t now_ms);

/* Count an answer given from the cache because the origin was down. */
void reach_count_stale(struct reach *r);

#endif
