/*
 * bucket_listing.h - one page of a ListBucketResult, the listing format of
 * S3 (ListObjectsV2) and of Google Cloud Storage's XML API: objects
 * (<Contents><Key>, <Size>), directories (<CommonPrefixes><Prefix>), and
 * the cursor of the next page (NextContinuationToken or NextMarker).
 */
#ifndef TILEFS_BUCKET_LISTING_H
#define TILEFS_BUCKET_LISTING_H

#include "provider.h"

/*
 * Parse BODY listed with PREFIX (keys start with it: "" or "a/b/"); call
 * add() with names relative to PREFIX. Keys are URL-decoded when the page
 * says <EncodingType>url</EncodingType>. *next_cursor (caller frees) is set
 * when the page is truncated.
 */
int bucket_listing_parse(const char *prefix, const char *body, size_t len,
			 listing_entry_fn add, void *arg, char **next_cursor);

#endif
