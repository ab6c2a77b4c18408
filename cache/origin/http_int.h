/*
 * http_int.h - private to cache/origin: what http.c (the fetch threads and
 * their queues) and http_attempt.c (one attempt of a request) share.
 * http.c calls http_attempt.c, never the other way: the clock both need
 * is cache/base/monotonic.h.
 *
 * Layer: the origin (cache/origin/), over cache/base/ and under its
 * providers. Includes cache/base/ and its own folder only; never the
 * providers (cache/origin/providers/), the store, the TIFF layer, the
 * engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_HTTP_INT_H
#define TILEFS_HTTP_INT_H

#include "cache/origin/http.h"

#include <curl/curl.h>

/*
 * A fresh easy handle for the next attempt of REQ under CFG, configured and
 * signed: in req->easy, its header list in req->sent_headers (both undone
 * by attempt_release()). 0 or -errno.
 */
int attempt_prepare(const struct http_config *cfg, struct http_request *req);
void attempt_release(struct http_request *req);

/* Judge a finished attempt (CODE: curl's result): 0 done, -EAGAIN retry, or
 * a final -errno. Fills req->error with the reason. */
int attempt_verdict(struct http_request *req, CURLcode code);

#endif
