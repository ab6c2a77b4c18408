/*
 * provider.h - an origin, whatever kind it is (plain HTTP(S), S3, Azure
 * Blob, GCS): the public contract of the providers. Callers parse SOURCE
 * with source_open() and then only call source_*(); nothing outside
 * cache/origin/providers/ knows which provider is in use. The providers'
 * table and what they share is in provider_int.h, private to this folder
 * (as curl's lib/vtls/ has vtls.h for everyone and vtls_int.h for the
 * backends).
 *
 * Defined in provider.c (the registry, above every provider) but for
 * source_name_valid(), in answer.c (below them).
 *
 * Layer: the origin's providers (cache/origin/providers/), over
 * cache/origin/. Includes only cache/origin's public headers (http.h,
 * url.h) and cache/base/; never curl, OpenSSL, the signing helpers
 * (sigv4.h, bucket.h, xml.h, crypto.h), the store, the TIFF layer, the
 * engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_PROVIDER_H
#define TILEFS_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cache/origin/http.h"
#include "cache/origin/url.h"	/* for callers that log URLs */

struct provider;
struct source;

/* What the command line says about the origin beyond SOURCE. */
struct source_options {
	const char *endpoint;		/* S3-compatible or emulator endpoint URL */
	const char *region;		/* S3 region (default: AWS_REGION, us-east-1) */
	const char *profile;		/* S3: the AWS profile to use, over
					   AWS_PROFILE and the environment's
					   keys; NULL: none named */
	bool virtual_hosted;		/* S3: bucket in the host name with --endpoint */
	bool no_sign_request;		/* anonymous access to public data */
	bool requester_pays;		/* S3: x-amz-request-payer */
	long page_size;			/* objects per listing page (0: server's) */
	const char *tier;		/* URL of a shared cache tier (tier.h) */
	const char *tier_secret;	/* sent to the tier alone, or NULL */
	const char *tier_ca_file;	/* verifies an https:// tier, or NULL */
	bool tier_allow_http;		/* an http:// tier may see a reusable
					   credential (a trusted network) */
};

/*
 * One listing entry. size is -1 when the listing does not give it exactly;
 * etag is "" and mtime 0 when it gives none. A file's ETag is the one a
 * HEAD of it would answer, maybe without the quotes (version.h's
 * etag_same() compares them).
 */
struct listing_entry {
	const char *name;
	bool is_dir;
	int64_t size;
	const char *etag;
	time_t mtime;
};
typedef int (*listing_entry_fn)(void *arg, const struct listing_entry *e);

/* Fields every provider's source starts with. */
struct source {
	const struct provider *provider;
	char *display;		/* SOURCE without secrets, for messages */
	const char *credentials;	/* where the credentials came from, for
					   messages ("" when anonymous) */
	const char *reusable;	/* NULL, or what every request carries that
				   whoever sees it could send again in other
				   requests (a bearer token, a SAS, a token in
				   the query; not a signature that binds one
				   request), for messages: set by the provider */
	char *origin;		/* scheme://host:port of the source's own URLs,
				   set by source_open(): the only place that
				   gets credentials (see source_prepare()) */
	struct tier *tier;	/* --tier, or NULL: where requests to origin
				   go (see source_prepare()) */
};

/* Find the provider for SOURCE and open it into *out (caller frees with
 * source_free()). On failure err gets a message naming what to fix:
 * -EINVAL for SOURCE or an option, among them an http:// --tier for an
 * https store whose requests carry a reusable credential (without
 * tier_allow_http), which would cross the network in clear. */
int source_open(const char *source, const struct source_options *opts, struct source **out,
		char *err, size_t err_size);
void source_free(struct source *src);
/* URL of the object at PATH ("a/b.tif", no leading slash); caller frees. */
char *source_object_url(struct source *src, const char *path);
/* URL of the listing of directory DIR ("" for the root, else "a/b"),
 * continuing at CURSOR (NULL for the first page); caller frees. */
char *source_listing_url(struct source *src, const char *dir, const char *cursor);
/* Parse one listing page; call add() for each entry; set *next_cursor
 * (caller frees) when more pages follow. */
int source_parse_listing(struct source *src, const char *dir, const char *body, size_t len,
			 listing_entry_fn add, void *arg, char **next_cursor);
/*
 * Can SRC list every object below a directory at once, subdirectories'
 * included (a bucket listed without a delimiter: S3, GCS, Azure)? Then
 * source_deep_listing_url() and source_parse_deep_listing() are as the two
 * above, but each entry's name is a path below DIR ("a/b.tif", every part
 * a valid name), in the store's key order; a directory's marker object
 * ("a/") comes as a directory entry. Plain HTTP cannot: NULL, -ENOTSUP.
 * A NAMES prefix ("" for all) lists only the paths below DIR that start
 * so: the subtrees of a run of DIR's folders (names "S2A_patch_01", for
 * the folders S2A_patch_0100 to S2A_patch_0199).
 */
bool source_lists_deep(const struct source *src);
char *source_deep_listing_url(struct source *src, const char *dir, const char *names,
			      const char *cursor);
int source_parse_deep_listing(struct source *src, const char *dir, const char *body, size_t len,
			      listing_entry_fn add, void *arg, char **next_cursor);
/*
 * Make REQ carry SRC's credentials (sets req->sign and req->signer) when,
 * and only when, req->url (set before) has the scheme, host and port of
 * SRC's own URLs and no user name; any other URL (a full URL from a --list
 * manifest, say) is fetched anonymously. The same requests, signed or not,
 * go through SRC's cache tier when it has one (sets req->tier).
 */
void source_prepare(struct source *src, struct http_request *req);

/*
 * The origin is down (cache/origin/reach.h, as HTTP's fetch threads see
 * it): a caller that has a cached answer about URL (a directory listed
 * before, a version this identity proved) gives it unasked; this counts
 * it and, when one is due, sends a probe of URL (a HEAD, prepared as
 * above) in the background, whose answer ends the outage (stale.c).
 * False while the origin answers: ask it, with http_request.stale_ok, so
 * that an outage found then is not retried either.
 */
bool source_answer_stale(struct source *src, struct http_client *http, const char *url);

/*
 * The identity SRC's own requests carry now, as an opaque name for the
 * cache index (cache/store/index.h, proofs): 32 lowercase hex digits of
 * SHA-256 over SALT (the index's proof salt), a newline and the name of
 * the principal the store will see, into OUT. The name comes from what
 * the credential in use says of itself, or what the endpoint that issued
 * it vouches for, with that endpoint; never from where it was found:
 *   S3: a role's ARN, whole, where the issuer names it (STS's
 *     AssumedRoleUser without its session, a container endpoint's
 *     RoleArn, the instance profile and role of the instance metadata
 *     service); else the access key id in use (static keys,
 *     credential_process, EKS Pod Identity: a new key proves again).
 *   Azure: Shared Key, the account; a SAS, its sig=; a bearer token, the
 *     tenant and object (tid, oid, else appid) its claims name, else the
 *     endpoint and client id that chose it (oauth.h, principals).
 *   GCS: the HMAC access id; a service account's client_email (its file,
 *     with its token_uri, or the metadata server's
 *     service-accounts/default/email, with the server: none for a
 *     workload identity pool); an authorized user's client_id with its
 *     account (or its refresh token); a pasted bearer token itself.
 *   HTTP(S): a query string on SOURCE (a token), as a rule.
 *   Else "anonymous".
 * The name may be a secret: the hash is salted and one-way, and the name
 * never leaves this call. 0; -EACCES when SRC has no credentials at hand
 * now (expired and not renewed), or a name too long to hash whole (64
 * KiB): OUT is then untouched, and nothing may be proved or served as
 * proved.
 */
#define SOURCE_IDENTITY_LEN 32
int source_identity_hash(struct source *src, const char *salt,
			 char out[SOURCE_IDENTITY_LEN + 1]);

/*
 * The identity, as source_identity_hash() names it, of the principal
 * whose credentials signed REQ (prepared by source_prepare(), run, err 0):
 * the one whose request succeeded, which a proof names. Short-lived
 * credentials change under a request (a renewal between two attempts):
 * the signer said which credential signed the attempt that succeeded
 * (http_request.credential), and it is named only while that credential
 * is still the one in place. An unsigned request (a URL not SRC's own)
 * names SRC's identity now, as anyone may read what it read. 0; -ESTALE
 * when the credential that signed has been renewed since (nothing may be
 * proved then: the next open asks again); else as source_identity_hash().
 */
int source_identity_signed(struct source *src, const char *salt, const struct http_request *req,
			   char out[SOURCE_IDENTITY_LEN + 1]);

/* What the renewal of SRC's short-lived credentials has done, for the
 * metrics; all zero for credentials that do not expire. Nothing secret. */
struct source_renewals {
	uint64_t renewed;	/* renewals that succeeded */
	uint64_t failed;	/* renewals that failed (each is retried) */
	bool expired;		/* the credentials have expired and cannot be
				   renewed: reads fail with EACCES */
};
void source_renewals(struct source *src, struct source_renewals *out);

/* Is NAME usable as one path component (not empty, ".", "..", no '/', no
 * control character: bytes below 0x20 and 0x7f)? A name refused for its
 * control characters is logged once, escaped (\n, \x1b). */
bool source_name_valid(const char *name);
/* Is PATH valid names joined by single '/' ("a/b.tif")? */
bool source_path_valid(const char *path);

#endif
