/*
 * stale.c - what is answered from the cache while the origin is down
 * (cache/origin/reach.h): cache_answer_stale() says whether a caller
 * with a cached answer (an open of a proved version, a directory listed
 * before) gives it unasked, and sends a probe to the origin in the
 * background when one is due; any answer to the probe ends the outage.
 *
 * Level 0 of the engine (engine_int.h): calls the origin only.
 */
#include "cache/engine/engine_int.h"
#include "cache/base/monotonic.h"
#include "cache/origin/http.h"
#include "cache/origin/providers/provider.h"
#include "cache/origin/reach.h"

#include <stdlib.h>
#include <string.h>

/* A probe: a HEAD of a URL, signed as any request, with its own copy of
 * the URL; it frees itself when done. */
struct probe {
	struct http_request req;
	char url[];
};

static void probe_done(struct http_request *req, void *arg)
{
	(void)req;
	free(arg);
}

static void probe_send(struct cache *c, const char *url)
{
	size_t n = strlen(url) + 1;
	struct probe *p = calloc(1, sizeof(*p) + n);
	if (!p)
		return;
	memcpy(p->url, url, n);
	p->req.url = p->url;
	p->req.log_name = "a probe of the origin";
	p->req.head = true;
	p->req.stale_ok = true;	/* one attempt */
	p->req.done = probe_done;
	p->req.arg = p;
	source_prepare(c->src, &p->req);
	http_submit(c->http, &p->req);
}

bool cache_answer_stale(struct cache *c, const char *url)
{
	struct reach *r = http_reach(c->http);
	if (!reach_down(r))
		return false;
	if (reach_probe_due(r, monotonic_ms()))
		probe_send(c, url);
	reach_count_stale(r);
	return true;
}

void cache_count_stale(struct cache *c)
{
	reach_count_stale(http_reach(c->http));
}
