/*
 * http_share.c - see http_int.h: how a client's connections are shared
 * between demand requests (readers) and background ones (prefetch, hints,
 * listings made ahead): which fetch thread a request goes to, when a
 * background request may start, and the room its producers see.
 *
 * DESIGN: a background request starts only on half of its fetcher's
 * connections, or on all those demand requests have left idle lately
 * (background_cap()), and never on the client's last few free ones
 * (pool_spare(), pool_take()), whichever fetcher has them; a demand
 * request goes to a fetcher with a connection free (share_pick()), so it
 * starts at once. A fetcher whose background requests wait for the pool
 * is woken when another frees a connection (share_wake()).
 */
#include "cache/origin/http_int.h"
#include "cache/base/monotonic.h"

#include <pthread.h>
#include <stdatomic.h>

/* How long a burst of demand requests keeps background ones off its
 * connections: one to two windows. */
#define PEAK_WINDOW_MS 1000

/* How many background requests may be in flight now: half the connections,
 * or more, those left when the most demand requests in flight at once
 * lately are set aside. Readers that come and go in bursts (a loader's
 * workers, a reader of several tiles at once) find as many connections
 * free when they come back; a background request started meanwhile would
 * hold one for its whole GET. (The pool keeps a few spare besides:
 * pool_take().) */
static int background_cap(struct fetcher *c)
{
	uint64_t now = monotonic_ms();
	int demand = c->nactive - c->nactive_background;
	if (now - c->peak_since_ms >= PEAK_WINDOW_MS) {
		c->demand_peak_prev = c->demand_peak;
		c->demand_peak = demand;
		c->peak_since_ms = now;
	}
	int busy = c->demand_peak > c->demand_peak_prev ? c->demand_peak : c->demand_peak_prev;
	int idle = c->max_connections - busy;
	int half = c->max_connections / 2 > 0 ? c->max_connections / 2 : 1;
	return idle > half ? idle : half;
}

void share_publish_room(struct fetcher *c)
{
	int room = background_cap(c) - c->nactive_background - c->nqueued_background;
	pthread_mutex_lock(&c->lock);
	for (struct http_request *req = c->submitted; req; req = req->next)
		room -= req->background;
	c->background_room = room > 0 ? room : 0;
	pthread_mutex_unlock(&c->lock);
}

/* The connections of the whole client that background requests leave
 * free, for a demand request that comes: a sixteenth of them, 2 at least
 * (of at most 3, all but one: the background's when idle). */
static int pool_spare(const struct http_client *cl)
{
	int n = cl->cfg.max_connections;
	int spare = n / 16 > 2 ? n / 16 : 2;
	return spare < n ? spare : n - 1;
}

/* Count one more request on a connection if a background one may start:
 * the client's connections in use stay below all but pool_spare(). (The
 * fetcher that took it starts its request, which counts it again, then
 * gives this back; meanwhile the count is one too high, never too low, so
 * fetch threads starting background requests at once never take the
 * spare.) */
static bool pool_take(struct http_client *cl)
{
	int limit = cl->cfg.max_connections - pool_spare(cl);
	int n = atomic_load(&cl->active);
	while (n < limit)
		if (atomic_compare_exchange_weak(&cl->active, &n, n + 1))
			return true;
	return false;
}

struct http_request *share_next_background(struct fetcher *c)
{
	if (!c->background || c->nactive_background >= background_cap(c) ||
	    c->nactive >= c->max_connections)
		return NULL;
	/* said before it looks, so a connection freed after it looked wakes
	   it (share_wake()) */
	atomic_store(&c->pool_wait, true);
	if (!pool_take(c->client))
		return NULL;
	atomic_store(&c->pool_wait, false);
	struct http_request *req = c->background;
	c->background = req->next;
	if (!c->background)
		c->background_tail = NULL;
	c->nqueued_background--;
	return req;
}

void share_started(struct fetcher *c)
{
	atomic_fetch_sub(&c->client->active, 1);	/* pool_take()'s */
}

void share_wake(struct fetcher *c)
{
	struct http_client *cl = c->client;
	for (int i = 0; i < cl->nfetchers; i++) {
		struct fetcher *f = &cl->fetchers[i];
		if (f != c && atomic_load(&f->pool_wait) && atomic_exchange(&f->pool_wait, false))
			curl_multi_wakeup(f->multi);
	}
}

long share_poll_wait(struct fetcher *c, long wait)
{
	if ((c->demand_peak || c->demand_peak_prev) && wait > PEAK_WINDOW_MS)
		return PEAK_WINDOW_MS;
	return wait;
}

/* F's part of http_background_room(). */
static int fetcher_room(struct fetcher *f)
{
	pthread_mutex_lock(&f->lock);
	int room = f->background_room;
	pthread_mutex_unlock(&f->lock);
	return room;
}

int http_background_room(struct http_client *c)
{
	int room = 0;
	for (int i = 0; i < c->nfetchers; i++)
		room += fetcher_room(&c->fetchers[i]);
	int pool = c->cfg.max_connections - pool_spare(c) - atomic_load(&c->active);
	return room < pool ? room : pool > 0 ? pool : 0;
}

struct fetcher *share_pick(struct http_client *c, const struct http_request *req)
{
	unsigned first = atomic_fetch_add(&c->next, 1) % (unsigned)c->nfetchers;
	struct fetcher *best = NULL;
	int best_score = 0;

	for (int i = 0; i < c->nfetchers; i++) {
		struct fetcher *f = &c->fetchers[(first + (unsigned)i) % (unsigned)c->nfetchers];
		int score = req->background ? -fetcher_room(f) :
			    atomic_load(&f->load) +
			    (atomic_load(&f->busy) >= f->max_connections ? 1 << 20 : 0);
		if (!best || score < best_score) {
			best = f;
			best_score = score;
		}
	}
	return best;
}
