/*
 * bucket.h - what the S3 and GCS providers share: SOURCE's BUCKET/PREFIX,
 * key URLs, listing URLs and ListBucketResult pages (S3's ListObjectsV2 and
 * GCS's XML API: <Contents><Key>/<Size>, <CommonPrefixes><Prefix>, a
 * NextContinuationToken or NextMarker cursor), and V4 signing of one
 * attempt. Providers keep what differs: hosts, credentials, flavours.
 * Used by provider_s3.c and provider_gcs.c alone; below them, it calls only
 * answer.c of its folder.
 *
 * Layer: the origin's providers (cache/origin/providers/), over
 * cache/origin/. Includes cache/origin/, cache/base/ and its own folder
 * only; never the store, the TIFF layer, the engine or FUSE
 * (tests/check-layers).
 */
#ifndef TILEFS_BUCKET_H
#define TILEFS_BUCKET_H

#include "cache/origin/providers/provider.h"
#include "cache/origin/sigv4.h"

struct curl_slist;

/* Split "scheme://BUCKET/PREFIX" (SCHEME_LEN bytes of "scheme://") into
 * BUCKET and PREFIX ("" or ending in '/'); both caller frees. -EINVAL
 * (message in err) for a missing or unusable bucket name. */
int bucket_parse(const char *text, size_t scheme_len, char **bucket, char **prefix, char *err,
		 size_t err_size);
/* BASE_URL + "/" + the encoded key PREFIX + PATH; caller frees. */
char *bucket_object_url(const char *base_url, const char *prefix, const char *path);
/* The key prefix a directory lists under: PREFIX + DIR + "/" ("" dir:
 * PREFIX), + NAMES (source_deep_listing_url(); ""). False if it does not
 * fit in SIZE bytes. */
bool bucket_dir_prefix(const char *prefix, const char *dir, const char *names, char *out,
		       size_t size);
/*
 * BASE_URL + "?" + FIXED ("" or "k=v&..."), "&prefix=" + the encoded
 * DIR_PREFIX, then
 * "&PAGE_PARAM=N" when page_size > 0 and "&CURSOR_PARAM=" + the encoded
 * CURSOR when given; caller frees.
 */
char *bucket_listing_url(const char *base_url, const char *fixed, const char *dir_prefix,
			 const char *page_param, long page_size, const char *cursor_param,
			 const char *cursor);

/*
 * Parse BODY listed with PREFIX (keys start with it: "" or "a/b/"); call
 * add() with names relative to PREFIX. Keys are URL-decoded when the page
 * says <EncodingType>url</EncodingType>. *next_cursor (caller frees) is set
 * when the page is truncated.
 */
int bucket_listing_parse(const char *prefix, const char *body, size_t len,
			 listing_entry_fn add, void *arg, char **next_cursor);
/* The same for a page listed without a delimiter: names are paths below
 * PREFIX, and marker objects ("a/") directories (source_lists_deep()). */
int bucket_deep_listing_parse(const char *prefix, const char *body, size_t len,
			      listing_entry_fn add, void *arg, char **next_cursor);

/*
 * Sign attempt A now with V4 (flavour F, CRED, REGION, SERVICE) for HOST,
 * also signing and sending the EXTRA headers, and append the headers to
 * send (Authorization, date, payload hash, session token, EXTRA).
 */
int bucket_sign(const struct sigv4_flavor *f, const struct sigv4_credentials *cred,
		const char *host, const char *region, const char *service,
		const struct http_attempt *a, const struct sigv4_header *extra, size_t nextra,
		struct curl_slist **headers);

#endif
