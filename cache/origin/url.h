/*
 * url.h - the URL helpers the origin layer shares: percent-encoding (as
 * Signature V4 and Azure want it), the path and query of a URL, and a URL
 * made safe for a log line. Pure string work: no I/O, no curl.
 *
 * Layer: the origin (cache/origin/), over cache/base/ and under its
 * providers. Includes cache/base/ and its own folder only; never the
 * providers (cache/origin/providers/), the store, the TIFF layer, the
 * engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_URL_H
#define TILEFS_URL_H

#include <stdbool.h>
#include <stddef.h>

/* Percent-encode S for a URL: everything but the unreserved characters
 * (and '/' when keep_slash), as Signature V4 also wants; caller frees. */
char *url_encode(const char *s, bool keep_slash);
/* Decode %XX in place; returns -EINVAL on a bad escape or an encoded NUL. */
int url_decode(char *s);
/* The path of URL (from the first '/' after the host, "/" if none) into
 * PATH, and a pointer to its query (after '?') or NULL. */
void url_split(const char *url, char *path, size_t path_size, const char **query);
/* Where URL's host (with its port, after any user@) starts, and in *LEN
 * its length (up to the path, query or fragment); NULL without "://". */
const char *url_host(const char *url, size_t *len);
/* URL without its query string and credentials, for log lines; caller frees. */
char *url_for_log(const char *url);

#endif
