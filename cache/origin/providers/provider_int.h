/*
 * provider_int.h - private to cache/origin/providers/: the table every
 * provider fills in, and the providers themselves. The public side is
 * provider.h; the helpers providers share for signing and listings are
 * bucket.h (this folder) and cache/origin's sigv4.h, xml.h and crypto.h,
 * included by the providers that use them.
 *
 * A provider's file (provider_<name>.c) defines its struct source subtype
 * (starting with struct source) and one const struct provider; nothing else
 * in it is visible outside the file.
 *
 * The files of this folder form a DAG (tests/check-calls): provider.c, the
 * registry, calls the providers through their tables; the providers call
 * bucket.c and answer.c; bucket.c calls answer.c; answer.c none of them.
 * The credential sources (aws_creds.c, aws_sts.c, azure_identity.c,
 * gcs_adc.c) and the Azure and GCS providers call oauth.c (OAuth2
 * requests), which calls renewal.c (renewing short-lived credentials), as
 * provider.c and the S3, Azure and GCS providers do; renewal.c calls none
 * of them.
 *
 * Layer: the origin's providers (cache/origin/providers/), over
 * cache/origin/. Includes cache/origin/, cache/base/ and its own folder
 * only; never the store, the TIFF layer, the engine or FUSE. Nothing
 * outside this folder includes it (tests/check-layers).
 */
#ifndef TILEFS_PROVIDER_INT_H
#define TILEFS_PROVIDER_INT_H

#include "cache/origin/providers/provider.h"

struct renewal;

struct provider {
	const char *name;
	/* Does SOURCE belong to this provider? */
	bool (*matches)(const char *source);
	/* Parse SOURCE and find credentials; on error return -EINVAL (or
	 * -EACCES for credentials) and write what to fix into err. */
	int (*open)(const char *source, const struct source_options *opts, struct source **out,
		    char *err, size_t err_size);
	void (*free)(struct source *src);
	/* See source_object_url(), source_listing_url() and
	 * source_parse_listing() in provider.h. */
	char *(*object_url)(struct source *src, const char *path);
	char *(*listing_url)(struct source *src, const char *dir, const char *cursor);
	int (*parse_listing)(struct source *src, const char *dir, const char *body, size_t len,
			     listing_entry_fn add, void *arg, char **next_cursor);
	/* See source_lists_deep(): the listing of every key below DIR, and
	 * its pages; NULL: the store cannot list so (plain HTTP). */
	char *(*deep_listing_url)(struct source *src, const char *dir, const char *names,
				  const char *cursor);
	int (*parse_deep_listing)(struct source *src, const char *dir, const char *body,
				  size_t len, listing_entry_fn add, void *arg, char **next_cursor);
	/* Sign each attempt of a request (see http.h); NULL: anonymous. */
	http_sign_fn sign;
	/* Read why a request failed from an error body (see http.h); NULL:
	 * the status alone. */
	http_describe_fn describe_error;
	/* Name the identity SRC's requests carry now into OUT (SIZE bytes):
	 * see source_identity_hash(). May be a secret (a SAS signature, a
	 * token): only ever hashed, never logged or stored. 0, or -EACCES
	 * when SRC has no credentials at hand to name (expired, not renewed). */
	int (*identity)(struct source *src, char *out, size_t size);
	/* Did the origin refuse the credentials as expired or revoked (see
	 * http.h)? NULL: credentials that do not expire. */
	http_rejected_fn credentials_rejected;
	/* The renewal of SRC's short-lived credentials (renewal.h), or NULL when
	 * they do not expire; NULL: never. Read by source_renewals(). */
	struct renewal *(*renewal)(struct source *src);
};

/*
 * The clouds' error bodies: <Error><Code>C</Code><Message>M</Message>
 * (S3, GCS's XML API, Azure Blob) give the reason "C: M" (or "C"), one
 * line of printable text (M's first line; other control characters become
 * spaces). A describe_error for every provider whose origin may answer so
 * (answer.c).
 */
bool provider_xml_error(const char *body, size_t len, char *reason, size_t size);

/* The providers, one file each (provider_<name>.c); provider.c tries them
 * in its own order. */
extern const struct provider provider_http;
extern const struct provider provider_s3;
extern const struct provider provider_azure;
extern const struct provider provider_gcs;

#endif
