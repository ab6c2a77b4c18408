/*
 * azure_listing.h - pages of Azure's List Blobs (<EnumerationResults>:
 * <Blob> with <Name> and <Properties>, <BlobPrefix>, a <NextMarker>), one
 * level or, listed without a delimiter, every blob below a directory.
 *
 * Layer: the origin's providers (cache/origin/providers/), private to the
 * Azure provider; over cache/origin/ and cache/base/ (and answer.c's
 * name checks).
 */
#ifndef TILEFS_AZURE_LISTING_H
#define TILEFS_AZURE_LISTING_H

#include "cache/origin/providers/provider.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * Parse one List Blobs page of directory DIR (for messages), whose blobs
 * start with PREFIX: call add() with names relative to PREFIX (with DEEP,
 * paths, and a blob whose name ends in '/' a directory's marker); set
 * *next_cursor (caller frees) to its NextMarker. -EIO for a page that is
 * not a blob list, -ENOTSUP for a DEEP page with a BlobPrefix (the service
 * listed one level only), or add()'s error.
 */
int azure_listing_parse(const char *prefix, const char *dir, bool deep, const char *body,
			size_t len, listing_entry_fn add, void *arg, char **next_cursor);

#endif
