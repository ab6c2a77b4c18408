/*
 * url.c - see url.h.
 */
#include "cache/origin/url.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *url_encode(const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(strlen(s) * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p) || (keep_slash && *p == '/')) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int url_decode(char *s)
{
	char *o = s;
	for (char *p = s; *p; p++) {
		if (*p != '%') {
			*o++ = *p;
			continue;
		}
		int hi = hex_value(p[1]), lo = hi < 0 ? -1 : hex_value(p[2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return -EINVAL;
		*o++ = (char)(hi << 4 | lo);
		p += 2;
	}
	*o = '\0';
	return 0;
}

void url_split(const char *url, char *path, size_t path_size, const char **query)
{
	size_t host_len;
	const char *host = url_host(url, &host_len);
	const char *p = host && host[host_len] == '/' ? host + host_len : "/";
	size_t n = strcspn(p, "?#");
	snprintf(path, path_size, "%.*s", (int)n, p);
	*query = p[n] == '?' ? p + n + 1 : NULL;
}

/* The host of the authority that starts at AUTHORITY (after any user@),
 * its length in *LEN. */
static const char *authority_host(const char *authority, size_t *len)
{
	size_t n = strcspn(authority, "/?#");
	const char *at = memchr(authority, '@', n);
	if (!at) {
		*len = n;
		return authority;
	}
	*len = n - (size_t)(at + 1 - authority);
	return at + 1;	/* drop user:password@ */
}

const char *url_host(const char *url, size_t *len)
{
	const char *scheme = strstr(url, "://");
	return scheme ? authority_host(scheme + 3, len) : NULL;
}

char *url_for_log(const char *url)
{
	const char *scheme = strstr(url, "://");
	if (scheme && url + strcspn(url, "?#") < scheme)
		scheme = NULL;	/* "://" in a query ("a.tif?sig=S&u=https://..."): no scheme */
	size_t prefix = scheme ? (size_t)(scheme + 3 - url) : 0, n;
	/* text without a scheme ("user:pw@host/...") loses its user@ too */
	const char *host = authority_host(url + prefix, &n);
	while (memchr(host, '@', n))	/* "user:p@ss@host": up to the last '@' */
		host = authority_host(host, &n);
	size_t rest = strcspn(host, "?#");
	char *out = malloc(prefix + rest + 1);
	if (!out)
		return NULL;
	memcpy(out, url, prefix);
	memcpy(out + prefix, host, rest);
	out[prefix + rest] = '\0';
	return out;
}
