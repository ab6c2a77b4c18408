/*
 * version.h - an object version as the engine pins it: every GET for an
 * open object carries If-Match (its ETag) or If-Unmodified-Since (its
 * Last-Modified, when it has no ETag), and every answer is checked against
 * it. Pure: tests/unit/test_version.c.
 *
 * Layer: the engine. Includes the origin's request only.
 */
#ifndef TILEFS_VERSION_H
#define TILEFS_VERSION_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/origin/http.h"

struct version {
	char etag[128];			/* "" when the origin gives none */
	char last_modified[64];		/* "" when the origin gives none */
	uint64_t size;
};

/* Do A and B name the same version: the same ETag, not empty, each with or
 * without its double quotes (a listing may give them bare)? */
bool etag_same(const char *a, const char *b);

/* The version ANSWER (a HEAD or GET that succeeded) names. */
void version_of_answer(struct version *v, const struct http_request *answer);

/* Make REQ ask for V only (its header values borrow V's strings). */
void version_pin(const struct version *v, struct http_request *req);

/*
 * What REQ's outcome means for a read of V: 0, -ESTALE when the origin no
 * longer has V (404: gone; 416: shrunk; 412, or an answer naming another
 * ETag, Last-Modified or size: changed; an answer without the ETag V has:
 * not V as far as anyone can tell), or REQ's other error.
 */
int version_verdict(const struct version *v, const struct http_request *req);

#endif
