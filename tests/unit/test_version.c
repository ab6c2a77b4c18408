/* test_version.c - pinning a GET to an object version, and the verdict on
 * its answer: what is stale (gone, shrunk, changed) and what is not. */
#include "cache/engine/version.h"
#include "check.h"

#include <errno.h>
#include <string.h>

static struct http_request answer(const char *etag, const char *lm, uint64_t size, int err)
{
	struct http_request r;
	memset(&r, 0, sizeof(r));
	snprintf(r.etag, sizeof(r.etag), "%s", etag);
	snprintf(r.last_modified, sizeof(r.last_modified), "%s", lm);
	r.object_size = size;
	r.err = err;
	return r;
}

int main(void)
{
	const char *lm = "Mon, 23 Nov 2026 10:00:00 GMT";
	struct http_request a = answer("\"abc\"", lm, 1000, 0), req;
	struct version v;
	version_of_answer(&v, &a);
	CHECK(strcmp(v.etag, "\"abc\"") == 0 && v.size == 1000, "a version is what the answer names");

	memset(&req, 0, sizeof(req));
	version_pin(&v, &req);
	CHECK(req.if_match && strcmp(req.if_match, "\"abc\"") == 0 && !req.if_unmodified_since,
	      "with an ETag: If-Match");
	struct http_request b = answer("", lm, 1000, 0);
	struct version w;
	version_of_answer(&w, &b);
	memset(&req, 0, sizeof(req));
	version_pin(&w, &req);
	CHECK(!req.if_match && req.if_unmodified_since && strcmp(req.if_unmodified_since, lm) == 0,
	      "without: If-Unmodified-Since");

	struct http_request r = answer("\"abc\"", lm, 1000, 0);
	CHECK(version_verdict(&v, &r) == 0, "the same version");
	r = answer("", lm, 1000, 0);
	CHECK(version_verdict(&v, &r) == -ESTALE, "no ETag where the version has one: stale");
	r = answer("", "", UINT64_MAX, 0);
	CHECK(version_verdict(&v, &r) == -ESTALE, "nor one that names nothing");
	struct http_request bare = answer("", "", 1000, 0);
	struct version nothing;
	version_of_answer(&nothing, &bare);
	CHECK(version_verdict(&nothing, &r) == 0,
	      "an answer that names nothing, of a version named by nothing: not stale");
	r = answer("\"abd\"", lm, 1000, 0);
	CHECK(version_verdict(&v, &r) == -ESTALE, "another ETag is stale");
	r = answer("\"abc\"", lm, 999, 0);
	CHECK(version_verdict(&v, &r) == -ESTALE, "another size is stale");
	r = answer("", "Tue, 24 Nov 2026 10:00:00 GMT", 1000, 0);
	CHECK(version_verdict(&w, &r) == -ESTALE, "no ETag: another Last-Modified is stale");
	r = answer("", "", 0, -ENOENT);
	CHECK(version_verdict(&v, &r) == -ESTALE, "404: gone, stale");
	r = answer("", "", 0, -ERANGE);
	CHECK(version_verdict(&v, &r) == -ESTALE, "416: shrunk, stale");
	r = answer("", "", 0, -ESTALE);
	CHECK(version_verdict(&v, &r) == -ESTALE, "412 stays stale");
	r = answer("", "", 0, -EIO);
	CHECK(version_verdict(&v, &r) == -EIO, "other errors stay what they are");
	r = answer("", "", 0, -EACCES);
	CHECK(version_verdict(&v, &r) == -EACCES, "even 403");
	CHECK(etag_same("\"0x1FF5\"", "0x1FF5") && etag_same("0x1FF5", "\"0x1FF5\"") &&
	      etag_same("\"abc\"", "\"abc\""), "ETags with and without quotes are the same");
	CHECK(!etag_same("\"abc\"", "\"abd\"") && !etag_same("\"abc\"", "abc\"") &&
	      !etag_same("W/\"abc\"", "\"abc\""), "another ETag, a stray quote, a weak one: not");
	CHECK(!etag_same("", "") && !etag_same("\"\"", "") && !etag_same("lm:x", ""),
	      "an empty ETag names no version");
	return check_done();
}
