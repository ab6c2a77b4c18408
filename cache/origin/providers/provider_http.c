/*
 * provider_http.c - plain HTTP(S) origins: SOURCE is a URL prefix; objects
 * are URLs below it; directories are listed from the HTML index pages that
 * nginx (autoindex) and Apache (mod_autoindex) serve.
 */
#include "cache/origin/providers/provider_int.h"
#include "cache/base/log.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct http_source {
	struct source base;
	char *prefix;		/* scheme://host[:port]/path/ (always ends in '/') */
	char *prefix_path;	/* /path/ */
	char *query;		/* "?..." from SOURCE, appended to every URL, or "" */
};

static bool http_matches(const char *text)
{
	return strncasecmp(text, "http://", 7) == 0 || strncasecmp(text, "https://", 8) == 0;
}

static void http_free(struct source *src)
{
	struct http_source *h = (struct http_source *)src;
	free(h->prefix);
	free(h->prefix_path);
	free(h->query);
	free(h->base.display);
	free(h);
}

static int http_open(const char *text, const struct source_options *opts, struct source **out,
		     char *err, size_t err_size)
{
	CURLU *u = curl_url();
	char *host = NULL, *path = NULL, *query = NULL, *scheme = NULL, *port = NULL;
	struct http_source *h = NULL;
	int rc = -EINVAL;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, text, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0]) {
		char *shown = url_for_log(text);
		snprintf(err, err_size, "'%s' is not a valid URL", shown ? shown : "?");
		free(shown);
		goto out;
	}
	curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	curl_url_get(u, CURLUPART_PATH, &path, 0);
	curl_url_get(u, CURLUPART_QUERY, &query, 0);

	h = calloc(1, sizeof(*h));
	if (!h) {
		rc = -ENOMEM;
		goto out;
	}
	h->base.provider = &provider_http;
	h->base.display = url_for_log(text);
	h->base.credentials = "";
	/* a query on every URL is a token as a rule (it is never logged) */
	if (query && query[0])
		h->base.reusable = "the query string of SOURCE";
	(void)opts;
	size_t plen = strlen(path);
	bool slash = plen > 0 && path[plen - 1] == '/';
	h->prefix_path = malloc(plen + 2);
	if (h->prefix_path)
		snprintf(h->prefix_path, plen + 2, "%s%s", path, slash ? "" : "/");
	size_t n = strlen(scheme) + strlen(host) + (port ? strlen(port) : 0) + plen + 8;
	h->prefix = malloc(n);
	if (h->prefix)
		snprintf(h->prefix, n, "%s://%s%s%s%s", scheme, host, port ? ":" : "",
			 port ? port : "", h->prefix_path ? h->prefix_path : "");
	h->query = malloc(query ? strlen(query) + 2 : 1);
	if (h->query)
		snprintf(h->query, query ? strlen(query) + 2 : 1, "%s%s", query ? "?" : "",
			 query ? query : "");
	if (!h->prefix || !h->prefix_path || !h->query || !h->base.display) {
		http_free(&h->base);
		rc = -ENOMEM;
		goto out;
	}
	*out = &h->base;
	rc = 0;
out:
	curl_free(host);
	curl_free(path);
	curl_free(query);
	curl_free(scheme);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

/* prefix + encoded(path) + tail + query; caller frees. */
static char *join_url(struct http_source *h, const char *path, const char *tail)
{
	char *enc = url_encode(path, true);
	if (!enc)
		return NULL;
	size_t n = strlen(h->prefix) + strlen(enc) + strlen(tail) + strlen(h->query) + 1;
	char *url = malloc(n);
	if (url)
		snprintf(url, n, "%s%s%s%s", h->prefix, enc, tail, h->query);
	free(enc);
	return url;
}

static char *http_object_url(struct source *src, const char *path)
{
	return join_url((struct http_source *)src, path, "");
}

static char *http_listing_url(struct source *src, const char *dir, const char *cursor)
{
	(void)cursor;	/* index pages are never split */
	return join_url((struct http_source *)src, dir, dir[0] ? "/" : "");
}

/* Replace the few entities index pages use in attribute values, in place. */
static void html_unescape(char *s)
{
	static const struct { const char *name; char c; } entities[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' },
		{ "&quot;", '"' }, { "&#39;", '\'' }, { "&#x27;", '\'' },
	};
	char *o = s;
	for (char *p = s; *p;) {
		bool done = false;
		for (size_t i = 0; *p == '&' && i < sizeof(entities) / sizeof(entities[0]); i++) {
			size_t n = strlen(entities[i].name);
			if (strncmp(p, entities[i].name, n) == 0) {
				*o++ = entities[i].c;
				p += n;
				done = true;
				break;
			}
		}
		if (!done)
			*o++ = *p++;
	}
	*o = '\0';
}

/* The exact size nginx prints after the link ("  12-Mar-2026 10:00   1234"). */
static int64_t size_after_link(const char *p, const char *end)
{
	const char *eol = memchr(p, '\n', (size_t)(end - p));
	if (!eol)
		eol = end;
	const char *q = eol;
	while (q > p && isspace((unsigned char)q[-1]))
		q--;
	const char *digits = q;
	while (digits > p && isdigit((unsigned char)digits[-1]))
		digits--;
	if (digits == q || (digits > p && !isspace((unsigned char)digits[-1])) || q - digits > 18)
		return -1;
	int64_t size = 0;	/* not strtoll: the body need not end in a NUL */
	for (const char *d = digits; d < q; d++)
		size = size * 10 + (*d - '0');
	return size;
}

/* Days from 1970-01-01 to Y-M-D of the proleptic Gregorian calendar
 * (H. Hinnant's days_from_civil): no timegm(), no TZ. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The unsigned number of exactly WIDTH digits at P (P + WIDTH <= END), or
 * -1. */
static int digits_at(const char *p, const char *end, int width)
{
	int v = 0;
	if (end - p < width)
		return -1;
	for (int i = 0; i < width; i++) {
		if (!isdigit((unsigned char)p[i]))
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

/*
 * The time an index page prints at P, read as UTC; 0 if there is none.
 * nginx autoindex prints "22-Nov-2026 09:14" (UTC unless
 * autoindex_localtime is on), Apache's mod_autoindex "2026-11-22 09:14"
 * (2.4) or nginx's form (2.2), in the server's local time; either may add
 * ":SS". A listing's mtime is then only as fine as a minute.
 */
static time_t date_at(const char *p, const char *end)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	int y, mon = 0, d;
	const char *t;

	if ((y = digits_at(p, end, 4)) >= 0 && end - p >= 10 && p[4] == '-' && p[7] == '-') {
		mon = digits_at(p + 5, end, 2);
		d = digits_at(p + 8, end, 2);
		t = p + 10;
	} else if ((d = digits_at(p, end, 2)) >= 0 && end - p >= 11 && p[2] == '-' &&
		   p[6] == '-' && (y = digits_at(p + 7, end, 4)) >= 0) {
		for (int i = 0; i < 12; i++)
			if (memcmp(p + 3, months + 3 * i, 3) == 0)
				mon = i + 1;
		t = p + 11;
	} else {
		return 0;
	}
	if (end - t < 6 || *t != ' ' || t[3] != ':')
		return 0;
	int h = digits_at(t + 1, end, 2), min = digits_at(t + 4, end, 2), sec = 0;
	if (end - t >= 9 && t[6] == ':' && digits_at(t + 7, end, 2) >= 0)
		sec = digits_at(t + 7, end, 2);
	if (y < 1970 || mon < 1 || mon > 12 || d < 1 || d > 31 || h < 0 || h > 23 || min < 0 ||
	    min > 59 || sec < 0 || sec > 60)
		return 0;
	return (time_t)(days_from_civil(y, mon, d) * 86400 + h * 3600 + min * 60 + sec);
}

/* The first date on the rest of the line at P, within END: what nginx and
 * Apache print after an entry's link. At most 512 bytes are looked at. */
static time_t date_after_link(const char *p, const char *end)
{
	if (end - p > 512)
		end = p + 512;
	for (; p < end && *p != '\n'; p++) {
		if (!isdigit((unsigned char)*p))
			continue;
		time_t t = date_at(p, end);
		if (t)
			return t;
		while (p + 1 < end && isdigit((unsigned char)p[1]))
			p++;	/* not from the middle of a number */
	}
	return 0;
}

/*
 * Turn an href into an entry name relative to the listed directory, or
 * return false for links that are not entries (sorting, parent, elsewhere).
 */
static bool href_to_name(struct http_source *h, const char *dir, char *href, bool *is_dir)
{
	char *cut = strpbrk(href, "?#");
	if (cut)
		*cut = '\0';
	char *name = href;
	if (strstr(href, "://")) {
		size_t n = strlen(h->prefix);
		if (strncmp(href, h->prefix, n) != 0)
			return false;
		name = href + n;
		goto relative_to_prefix;
	}
	if (href[0] == '/') {
		size_t n = strlen(h->prefix_path);
		if (strncmp(href, h->prefix_path, n) != 0)
			return false;
		name = href + n;
		goto relative_to_prefix;
	}
	goto check;
relative_to_prefix:
	if (dir[0]) {
		size_t n = strlen(dir);
		if (strncmp(name, dir, n) != 0 || name[n] != '/')
			return false;
		name += n + 1;
	}
check:
	if (!name[0])
		return false;
	size_t len = strlen(name);
	*is_dir = name[len - 1] == '/';
	if (*is_dir)
		name[len - 1] = '\0';
	memmove(href, name, strlen(name) + 1);
	return url_decode(href) == 0 && href[0];
}

/* The first NEEDLE in [p, end), or NULL. memchr() stops at what it finds
 * (ASan's memmem() checks the whole haystack on every call, which would
 * make the page quadratic again under the sanitizers). */
static const char *find(const char *p, const char *end, const char *needle)
{
	size_t n = strlen(needle);
	while (p && (size_t)(end - p) >= n) {
		p = memchr(p, needle[0], (size_t)(end - p) - n + 1);
		if (!p || memcmp(p, needle, n) == 0)
			return p;
		p++;
	}
	return NULL;
}

/*
 * Every search is bounded by the next "href=", so a page is read a few
 * times at most, however its links are broken (a link without "</a>" once
 * made this quadratic).
 */
static int http_parse_listing(struct source *src, const char *dir, const char *body, size_t len,
			      listing_entry_fn add, void *arg, char **next_cursor)
{
	struct http_source *h = (struct http_source *)src;
	const char *end = body + len, *next = find(body, end, "href=");
	char href[4096];

	*next_cursor = NULL;
	while (next) {
		const char *a = next + 5;
		next = find(a, end, "href=");
		char quote = a < end ? *a : 0;
		if (quote != '"' && quote != '\'')
			continue;
		const char *v = a + 1;
		const char *close = memchr(v, quote, (size_t)(end - v));
		if (!close)
			break;
		const char *p = close + 1;
		if (next && next < p)	/* "href=" inside the value */
			next = find(p, end, "href=");
		const char *entry_end = next ? next : end;
		size_t n = (size_t)(close - v);
		if (n == 0 || n >= sizeof(href))
			continue;
		memcpy(href, v, n);
		href[n] = '\0';
		html_unescape(href);
		if (href[0] == '.' && (href[1] == '.' || href[1] == '/' || !href[1]))
			continue;
		bool is_dir;
		if (!href_to_name(h, dir, href, &is_dir))
			continue;
		if (!source_name_valid(href)) {
			log_info("skipping listing entry that is not a valid file name in %s/",
				 dir[0] ? dir : ".");
			continue;
		}
		const char *link_end = find(p, entry_end, "</a>");
		int64_t size = -1;
		time_t mtime = 0;
		if (!is_dir && link_end) {
			size = size_after_link(link_end + 4, entry_end);
			mtime = date_after_link(link_end + 4, entry_end);
		}
		struct listing_entry e = { .name = href, .is_dir = is_dir, .size = size, .etag = "",
					   .mtime = mtime };
		int rc = add(arg, &e);
		if (rc)
			return rc;
	}
	return 0;
}

/* See source_identity_hash(): a query on SOURCE is a token, as a rule. */
static int http_identity(struct source *src, char *out, size_t size)
{
	struct http_source *h = (struct http_source *)src;
	snprintf(out, size, "%s%s", h->query[0] ? "http " : "anonymous", h->query);
	return 0;
}

const struct provider provider_http = {
	.name = "http",
	.matches = http_matches,
	.open = http_open,
	.free = http_free,
	.object_url = http_object_url,
	.listing_url = http_listing_url,
	.parse_listing = http_parse_listing,
	.sign = NULL,
	/* a plain URL may well be a public bucket's object */
	.describe_error = provider_xml_error,
	.identity = http_identity,
};
