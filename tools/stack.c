/*
 * stack.c - see stack.h.
 */
#include "tools/stack.h"
#include "cache/engine/cache.h"
#include "cache/namespace/namespace.h"
#include "cache/origin/http.h"
#include "cache/origin/providers/provider.h"
#include "cache/base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a read waits for another process's fetch of a unit before it
 * fetches the unit for itself (unit.h, invariant 8): 30 s, or
 * TILEFS_CLAIM_WAIT_S (1 to 3600), which the tests set short. */
static int claim_wait_s(void)
{
	const char *v = getenv("TILEFS_CLAIM_WAIT_S");
	char *end;
	long s = v ? strtol(v, &end, 10) : 0;
	return v && *v && !*end && s >= 1 && s <= 3600 ? (int)s : 30;
}

int stack_init(struct stack *s, const struct options *o, char *err, size_t err_size)
{
	memset(s, 0, sizeof(*s));
	struct source_options so = options_source(o);
	return source_open(o->source, &so, &s->src, err, err_size);
}

int stack_start(struct stack *s, const struct options *o, const struct stack_tuning *t,
		char *err, size_t err_size)
{
	err[0] = '\0';
	struct http_config hc;
	options_http(o, t->connections, &hc);
	s->http = http_client_new(&hc);
	if (!s->http) {
		snprintf(err, err_size, "cannot start the fetch threads");
		return -EAGAIN;
	}
	s->cache_size = o->cache_size ? o->cache_size : options_default_cache_size(o->cache_dir);
	struct cache_config cc = {
		.dir = o->cache_dir,
		.size_limit = s->cache_size,
		.block_size = o->block_size,
		.header_len = o->header_size,
		.max_request = t->max_request,
		.merge_gap = t->merge_gap,
		.readahead_max = t->readahead_max,
		.prefetch = t->prefetch,
		.claim_wait_s = claim_wait_s(),
		.tier_keys = o->tier != NULL,
		.uncached_ok = t->uncached_ok,
		.fit_disk = t->fit_disk,
		.size_given = o->cache_size != 0,
	};
	int rc = cache_open(&cc, s->src, s->http, &s->cache);
	if (rc) {
		snprintf(err, err_size, "cannot open the cache in %s: %s", o->cache_dir,
			 strerror(-rc));
		return rc;
	}
	s->cache_size = cache_size_limit(s->cache);
	rc = ns_new(s->src, s->http, s->cache, t->listing_ttl_s, &s->ns);
	if (!rc) {
		ns_set_max_names(s->ns, (size_t)o->max_names);
		cache_set_opener(s->cache, ns_cache_opener, s->ns);
	}
	if (!rc && t->ahead_threads && ns_revalidate_ahead(s->ns, t->ahead_threads) != 0)
		log_warn("cannot start revalidating ahead: each file's first open asks");
	return rc;
}

void stack_release(struct stack *s)
{
	if (s->ns)
		ns_stop_ahead(s->ns);	/* its HEADs need the client */
	if (s->cache)
		cache_stop_prefetch(s->cache);	/* its stream GETs need the client */
	http_client_free(s->http);	/* before the cache: fetches settle into it */
	if (s->cache)
		cache_set_opener(s->cache, NULL, NULL);
	ns_free(s->ns);
	cache_close(s->cache);
	source_free(s->src);
	memset(s, 0, sizeof(*s));
}
