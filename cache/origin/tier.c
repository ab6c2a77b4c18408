/*
 * tier.c - see tier.h.
 *
 * down_until_ms and reported are read and written by whichever thread
 * runs an attempt (a fetch thread, or one calling http_fetch_once()),
 * hence atomics; everything else is set by tier_new() and read-only after.
 */
#include "cache/origin/tier.h"
#include "cache/origin/url.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct tier {
	char *url;			/* as given, without a trailing '/' */
	char *secret_line;		/* "X-Tilefs-Tier-Secret: ..." or NULL */
	char *ca_file;			/* --tier-ca-file, or NULL */
	bool tls;			/* https:// */
	_Atomic uint64_t down_until_ms;	/* 0: up */
	atomic_bool reported;		/* the outage was logged */
};

int tier_new(const char *url, const char *secret, const char *ca_file, struct tier **out,
	     char *err, size_t err_size)
{
	*out = NULL;
	bool https = strncasecmp(url, "https://", 8) == 0;
	if (!https && strncasecmp(url, "http://", 7) != 0) {
		snprintf(err, err_size, "--tier: '%s' is not an http:// or https:// URL", url);
		return -EINVAL;
	}
	const char *host = url + (https ? 8 : 7);
	size_t host_len = strcspn(host, "/?#@");
	const char *rest = host + host_len;
	if (host_len == 0 || *rest == '?' || *rest == '#' || *rest == '@' ||
	    (*rest == '/' && rest[1])) {
		snprintf(err, err_size, "--tier: '%s' must be scheme://host[:port] (no path, "
			 "user or query)", url);
		return -EINVAL;
	}
	if (secret) {
		size_t n = strlen(secret);
		bool ok = n > 0 && n <= TIER_SECRET_MAX;
		for (const char *p = secret; ok && *p; p++)
			ok = *p > ' ' && *p < 0x7f;
		if (!ok) {
			snprintf(err, err_size, "--tier-secret: 1 to %d printable characters, no blanks",
				 TIER_SECRET_MAX);
			return -EINVAL;
		}
	}
	if (ca_file && !https) {
		snprintf(err, err_size, "--tier-ca-file is for an https:// tier; '%s' is http://", url);
		return -EINVAL;
	}
	struct tier *t = calloc(1, sizeof(*t));
	if (!t)
		goto nomem;
	t->tls = https;
	t->url = strndup(url, (size_t)(rest - url));
	if (!t->url || (ca_file && !(t->ca_file = strdup(ca_file))))
		goto nomem;
	if (secret) {
		size_t n = sizeof(TIER_SECRET_HEADER) + 2 + strlen(secret);
		t->secret_line = malloc(n);
		if (!t->secret_line)
			goto nomem;
		snprintf(t->secret_line, n, TIER_SECRET_HEADER ": %s", secret);
	}
	*out = t;
	return 0;
nomem:
	tier_free(t);
	snprintf(err, err_size, "out of memory");
	return -ENOMEM;
}

void tier_free(struct tier *t)
{
	if (!t)
		return;
	free(t->url);
	if (t->secret_line)
		explicit_bzero(t->secret_line, strlen(t->secret_line));
	free(t->secret_line);
	free(t->ca_file);
	free(t);
}

const char *tier_url(const struct tier *t)
{
	return t->url;
}

bool tier_tls(const struct tier *t)
{
	return t->tls;
}

const char *tier_ca_file(const struct tier *t)
{
	return t->ca_file;
}

bool tier_usable(struct tier *t, uint64_t now_ms)
{
	uint64_t until = atomic_load_explicit(&t->down_until_ms, memory_order_relaxed);
	return until == 0 || now_ms >= until;
}

char *tier_request_url(const struct tier *t, const char *store_url, char *host_line,
		       size_t host_size)
{
	size_t host_len;
	const char *host = url_host(store_url, &host_len);
	if (!host)
		return NULL;
	const char *path = host + host_len;
	if (host_len == 0 || (size_t)snprintf(host_line, host_size, "Host: %.*s",
					      (int)host_len, host) >= host_size)
		return NULL;
	size_t n = strlen(t->url) + strlen(path) + 2;
	char *out = malloc(n);
	if (out)
		snprintf(out, n, "%s%s%s", t->url, *path == '/' ? "" : "/", path);
	return out;
}

const char *tier_secret_line(const struct tier *t)
{
	return t->secret_line;
}

bool tier_mark_down(struct tier *t, uint64_t now_ms)
{
	uint64_t until = now_ms + TIER_RETRY_S * 1000ull;
	atomic_store_explicit(&t->down_until_ms, until ? until : 1, memory_order_relaxed);
	return !atomic_exchange(&t->reported, true);
}

bool tier_mark_up(struct tier *t)
{
	atomic_store_explicit(&t->down_until_ms, 0, memory_order_relaxed);
	return atomic_load_explicit(&t->reported, memory_order_relaxed) &&
	       atomic_exchange(&t->reported, false);
}
