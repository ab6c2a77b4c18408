/*
 * sigv4.h - Signature Version 4 request signing (AWS4-HMAC-SHA256), used
 * by S3 and, with its own names (GOOG4-HMAC-SHA256, x-goog-, goog4_request),
 * by Google Cloud Storage's HMAC keys. Pure computation: no I/O, no clock.
 * For cache/origin/providers/: only the providers (through bucket.c) sign.
 *
 * Layer: the origin (cache/origin/), over cache/base/ and under its
 * providers. Includes cache/base/ and its own folder only; never the
 * providers (cache/origin/providers/), the store, the TIFF layer, the
 * engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_SIGV4_H
#define TILEFS_SIGV4_H

#include <stdbool.h>
#include <stddef.h>

/* The naming of one flavour of the algorithm. */
struct sigv4_flavor {
	const char *algorithm;		/* "AWS4-HMAC-SHA256" */
	const char *key_prefix;		/* "AWS4" */
	const char *terminator;		/* "aws4_request" */
	const char *header_prefix;	/* "x-amz" */
};

extern const struct sigv4_flavor sigv4_aws, sigv4_goog;

struct sigv4_credentials {
	const char *access_key;
	const char *secret_key;
	const char *session_token;	/* NULL if none */
};

struct sigv4_header {
	const char *name;
	const char *value;
};

struct sigv4_input {
	const char *method;
	const char *canonical_uri;	/* path, already URI-encoded */
	const char *query;		/* raw query without '?', or NULL */
	const struct sigv4_header *headers;	/* must include host */
	size_t nheaders;
	const char *payload_hash;	/* hex SHA-256 of the body; NULL: empty body */
	bool payload_header;		/* also send and sign <prefix>-content-sha256 */
	const char *timestamp;		/* "20150830T123600Z" */
	const char *region, *service;
};

#define SIGV4_CREQ_MAX 8192

struct sigv4_output {
	char canonical_request[SIGV4_CREQ_MAX];
	char string_to_sign[512];
	char signed_headers[1024];
	char signature[65];
	char authorization[1536];
	/* headers the caller must send besides its own: date, token, payload */
	char date_header[192];
	char token_header[2200];	/* "" when no session token */
	char payload_header[192];	/* "" unless input.payload_header */
};

/* Sign; 0, or -ENAMETOOLONG when the request does not fit the bounds. */
int sigv4_sign(const struct sigv4_flavor *f, const struct sigv4_credentials *cred,
	       const struct sigv4_input *in, struct sigv4_output *out);

/* Remove "." and ".." segments and repeated slashes from a raw path, in place. */
void sigv4_normalize_path(char *path);

#endif
