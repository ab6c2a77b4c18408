/*
 * xml.h - just enough XML for listing pages (S3 ListObjectsV2, Azure List
 * Blobs, GCS): find elements by name, take their text, decode entities,
 * read sizes and times.
 * Not a general parser: no attributes, namespaces are ignored by matching
 * local names, CDATA is not expected. Works on a bounded buffer, never
 * reads past it, and never allocates.
 * For cache/origin/providers/: the providers' listings and error bodies.
 *
 * Layer: the origin (cache/origin/), over cache/base/ and under its
 * providers. Includes cache/base/ and its own folder only; never the
 * providers (cache/origin/providers/), the store, the TIFF layer, the
 * engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_XML_H
#define TILEFS_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct xml_span {
	const char *p;		/* the element's content (between its tags) */
	size_t len;
};

/*
 * Find the next <NAME>...</NAME> in IN at or after *pos; set *out to its
 * content and advance *pos past it. Returns false when there is none.
 */
bool xml_next(struct xml_span in, const char *name, size_t *pos, struct xml_span *out);
/* The content of the first <NAME> in IN, entities decoded, into BUF (cut to
 * fit); returns false if absent. */
bool xml_text(struct xml_span in, const char *name, char *buf, size_t size);
/* The content of the first <NAME> in IN as a byte count (decimal digits
 * only, no sign, no overflow), or -1 (missing or anything else). */
int64_t xml_size(struct xml_span in, const char *name);
/* The content of the first <NAME> in IN as a time: ISO 8601 in UTC
 * ("2026-11-22T09:00:00.000Z": S3, GCS) or an HTTP date (Azure); 0 when
 * missing or anything else. */
time_t xml_time(struct xml_span in, const char *name);

#endif
