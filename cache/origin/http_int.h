/*
 * http_int.h - private to cache/origin: what http.c (the fetch threads and
 * their queues), http_share.c (how they share the connections) and
 * http_attempt.c (one attempt of a request) share. http.c calls the other
 * two, never the other way: the clock they need is cache/base/monotonic.h.
 *
 * Layer: the origin (cache/origin/), over cache/base/ and under its
 * providers. Includes cache/base/ and its own folder only; never the
 * providers (cache/origin/providers/), the store, the TIFF layer, the
 * engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_HTTP_INT_H
#define TILEFS_HTTP_INT_H

#include "cache/origin/http.h"
#include "cache/origin/reach.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

/* One fetch thread: its own multi handle, queues and connections. */
struct fetcher {
	struct http_client *client;
	int index;			/* in client->fetchers, for its name */
	int max_connections;		/* its share of the client's */
	CURLM *multi;			/* this thread only */
	pthread_t thread;
	pthread_mutex_t lock;
	struct http_request *submitted;	/* protected by lock, LIFO */
	bool stopping;			/* protected by lock */
	int background_room;		/* protected by lock: its part of
					   http_background_room() */
	atomic_int load;		/* requests submitted to it, not done */
	atomic_int busy;		/* nactive, for share_pick() */
	atomic_bool pool_wait;		/* background requests wait for the
					   pool (pool_take()) */
	struct http_request *delayed;	/* this thread only: in backoff */
	struct http_request *active;	/* this thread only: on the multi */
	struct http_request *background, *background_tail; /* this thread only:
					   background requests not started yet */
	int nactive, nactive_background; /* this thread only */
	int nqueued_background;		/* this thread only: in `background` */
	int demand_peak, demand_peak_prev; /* this thread only: the most demand
					   requests in flight at once in this
					   and the last window */
	uint64_t peak_since_ms;		/* this thread only: this window's start */
	uint64_t rng;			/* this thread only */
};

struct http_client {
	struct http_config cfg;		/* set at start, read-only after */
	int nfetchers;			/* read-only */
	struct fetcher *fetchers;	/* read-only array */
	atomic_uint next;		/* round robin among equally loaded */
	atomic_int active;		/* requests on connections, all fetchers
					   (pool_take()) */
	pthread_mutex_t stats_lock;
	struct http_stats stats;	/* protected by stats_lock */
	struct reach reach;		/* does the origin answer? (atomics) */
};

/* http_share.c, for the fetch threads (C: the caller's own fetcher) and
 * the submitters. */
/* The fetcher REQ should go to: the one with the fewest requests in
 * flight, among those with a connection free if any (for a background
 * request, the most room for it, so it starts there at once). */
struct fetcher *share_pick(struct http_client *client, const struct http_request *req);
/* The next background request C may start now, taken off c->background
 * and counted on a connection of the client until share_started(); NULL
 * if none may. */
struct http_request *share_next_background(struct fetcher *c);
void share_started(struct fetcher *c);
/* Say how many more background requests would start on C now
 * (http_background_room()). */
void share_publish_room(struct fetcher *c);
/* C freed a connection: wake the other fetch threads whose background
 * requests wait for one. */
void share_wake(struct fetcher *c);
/* How long C's thread may sleep, WAIT at most: while a demand peak is
 * remembered, no longer than a window, so the room it gives back is
 * published. */
long share_poll_wait(struct fetcher *c, long wait);

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
