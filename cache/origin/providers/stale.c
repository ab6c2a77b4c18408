/*
 * stale.c - see provider.h: source_answer_stale(), whether a caller with
 * a cached answer (an open of a proved version, a directory listed
 * before) gives it unasked while the origin is down (cache/origin/reach.h),
 * and the probe, a signed HEAD sent in the background when one is due,
 * whose answer ends the outage. The engine's opens and the namespace's
 * listings both ask it.
 */
#include "cache/origin/providers/provider.h"
#include "cache/base/monotonic.h"
#include "cache/origin/http.h"
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

static void probe_send(struct source *src, struct http_client *http, const char *url)
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
	source_prepare(src, &p->req);
	http_submit(http, &p->req);
}

bool source_answer_stale(struct source *src, struct http_client *http, const char *url)
{
	struct reach *r = http_reach(http);
	if (!reach_down(r))
		return false;
	if (reach_probe_due(r, monotonic_ms()))
		probe_send(src, http, url);
	reach_count_stale(r);
	return true;
}
