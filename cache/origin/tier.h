/*
 * tier.h - a shared cache tier between tilefs and the store (README,
 * "Cluster"): an HTTP cache (nginx, configured by `tilefs tier-config`)
 * that receives the store's requests exactly as the store would (same path
 * and query, the store's Host, the same signed headers) and forwards what
 * it has not cached. Only where the connection goes changes, so a
 * signature made for the store verifies at the store, and the tier never
 * holds a credential of its own: it sees the ones each request carries.
 * An https:// tier is verified like a store, with its own CA bundle
 * (--tier-ca-file); providers/provider.c refuses an http:// tier for an
 * https store whose requests carry a credential a listener could reuse,
 * unless told the network is trusted.
 *
 * Tier headers (the store's Host, the secret) are for the tier alone: an
 * attempt through the tier follows no redirect (http.c sends the request
 * to the store directly instead).
 *
 * When the tier cannot be connected to, requests go to the store directly
 * for TIER_RETRY_S seconds, then the tier is tried again; the caller logs
 * the first failure after the tier last answered.
 *
 * Pure string work and atomics: no curl, no I/O. Used by providers/provider.c
 * (which requests are the store's) and http_attempt.c (where an attempt
 * connects). Includes url.h and cache/base only.
 *
 * Layer: the origin (cache/origin/), over cache/base/ and under its
 * providers. Includes cache/base/ and its own folder only; never the
 * providers (cache/origin/providers/), the store, the TIFF layer, the
 * engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_TIER_H
#define TILEFS_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIER_RETRY_S 30
#define TIER_SECRET_HEADER "X-Tilefs-Tier-Secret"
#define TIER_SECRET_MAX 128

struct tier;

/*
 * Parse URL (http:// or https://, host and port, no path beyond "/", no
 * user, no query), SECRET (NULL or printable ASCII without blanks, at
 * most TIER_SECRET_MAX bytes) and CA_FILE (NULL: the system's trust
 * store; only for an https:// URL) into *out (caller frees with
 * tier_free()). -EINVAL with what to fix in ERR.
 */
int tier_new(const char *url, const char *secret, const char *ca_file, struct tier **out,
	     char *err, size_t err_size);
void tier_free(struct tier *t);
/* The tier's URL, for log lines and messages (holds no secret). */
const char *tier_url(const struct tier *t);
/* Is the tier https:// (requests to it travel under TLS)? */
bool tier_tls(const struct tier *t);
/* The CA bundle that verifies the tier, or NULL (the system's). Borrowed. */
const char *tier_ca_file(const struct tier *t);

/* Should an attempt starting at NOW_MS (a monotonic clock) go to the tier? */
bool tier_usable(struct tier *t, uint64_t now_ms);
/*
 * The tier's URL for STORE_URL (the tier's scheme, host and port; the
 * store's path and query), caller frees; and the Host header line the
 * store expects ("Host: HOST[:PORT]", as written in STORE_URL) in
 * HOST_LINE. NULL when STORE_URL has no host or memory runs out.
 */
char *tier_request_url(const struct tier *t, const char *store_url, char *host_line,
		       size_t host_size);
/* "X-Tilefs-Tier-Secret: SECRET", or NULL without a secret. Borrowed. */
const char *tier_secret_line(const struct tier *t);
/*
 * An attempt through the tier could not connect at NOW_MS: go to the store
 * directly until TIER_RETRY_S later. True the first time since the tier
 * last answered (the caller logs then).
 */
bool tier_mark_down(struct tier *t, uint64_t now_ms);
/* A response came through the tier. True when it had been marked down
 * and reported (the caller logs that it answers again). */
bool tier_mark_up(struct tier *t);

#endif
