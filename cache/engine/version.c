/*
 * version.c - see version.h. Level 0 of the engine (engine_int.h): pure,
 * calls no other engine file.
 */
#include "cache/engine/version.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ETAG without one pair of surrounding double quotes: *len bytes from the
 * returned pointer. */
static const char *etag_bare(const char *etag, size_t *len)
{
	size_t n = strlen(etag);
	if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
		*len = n - 2;
		return etag + 1;
	}
	*len = n;
	return etag;
}

bool etag_same(const char *a, const char *b)
{
	size_t alen, blen;
	const char *abare = etag_bare(a, &alen), *bbare = etag_bare(b, &blen);
	return alen > 0 && alen == blen && memcmp(abare, bbare, alen) == 0;
}

void version_of_answer(struct version *v, const struct http_request *answer)
{
	snprintf(v->etag, sizeof(v->etag), "%s", answer->etag);
	snprintf(v->last_modified, sizeof(v->last_modified), "%s", answer->last_modified);
	v->size = answer->object_size;
}

void version_pin(const struct version *v, struct http_request *req)
{
	req->if_match = v->etag[0] ? v->etag : NULL;
	req->if_unmodified_since = v->etag[0] ? NULL : v->last_modified;
}

int version_verdict(const struct version *v, const struct http_request *req)
{
	if (req->err == -ENOENT || req->err == -ERANGE)
		return -ESTALE;
	if (req->err)
		return req->err;
	/* an answer without the ETag the version has cannot be tied to it
	   (RFC 9110: a 206 carries the ETag a 200 would) */
	if ((v->etag[0] && strcmp(v->etag, req->etag) != 0) ||
	    (!v->etag[0] && strcmp(v->last_modified, req->last_modified) != 0) ||
	    (req->object_size != UINT64_MAX && req->object_size != v->size))
		return -ESTALE;
	return 0;
}
