/*
 * azure_listing.c - see azure_listing.h.
 */
#include "cache/origin/providers/azure_listing.h"
#include "cache/base/log.h"
#include "cache/origin/url.h"
#include "cache/origin/xml.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define AZURE_NAME_MAX 4096		/* a <Name> as listed (blob names: 1024 chars) */
#define AZURE_MARKER_MAX 4096		/* a <NextMarker> */

/* Is the opening tag of the element whose content is S marked
 * Encoded="true" (a name with characters XML cannot carry, %-encoded)? */
static bool name_encoded(struct xml_span item, struct xml_span s)
{
	const char *lt = s.p;
	while (lt > item.p && *lt != '<')
		lt--;
	return memmem(lt, (size_t)(s.p - lt), "Encoded=\"true\"", 14) != NULL;
}

/*
 * The name of a <Blob> or <BlobPrefix> (*IS_DIR) ITEM relative to the listed
 * directory (whose blobs start with PREFIX), into NAME (SIZE bytes); false
 * to skip it. DEEP (a listing without delimiter): a path, and a blob whose
 * name ends in '/' a directory's marker (*IS_DIR set).
 */
static bool entry_name(struct xml_span item, const char *prefix, const char *dir, bool deep,
		       bool *is_dir, char *name, size_t size)
{
	struct xml_span raw;
	size_t pos = 0, n = strlen(prefix);

	if (!xml_next(item, "Name", &pos, &raw) || raw.len >= size) {
		log_info("skipping a listing entry without a name or with one too long in /%s", dir);
		return false;
	}
	xml_text(item, "Name", name, size);
	if (name_encoded(item, raw) && url_decode(name) != 0) {
		log_info("skipping a listing entry with a bad encoded name in /%s", dir);
		return false;
	}
	if (strncmp(name, prefix, n) != 0) {
		log_info("skipping a listing entry outside the listed prefix in /%s", dir);
		return false;
	}
	memmove(name, name + n, strlen(name + n) + 1);
	size_t len = strlen(name);
	if ((*is_dir || deep) && len > 0 && name[len - 1] == '/') {
		name[--len] = '\0';
		*is_dir = true;
	}
	if (len == 0)
		return false;	/* the directory's own marker blob */
	if (!(deep ? source_path_valid(name) : source_name_valid(name))) {
		log_info("skipping listing entry that is not a valid file name in /%s", dir);
		return false;
	}
	return true;
}

/* What <Properties> says of a blob: its Content-Length, Etag (into ETAG,
 * 128 bytes, which E's etag points to) and Last-Modified. */
static void entry_properties(struct xml_span item, struct listing_entry *e, char *etag)
{
	struct xml_span props;
	size_t pos = 0;
	if (!xml_next(item, "Properties", &pos, &props))
		return;
	e->size = xml_size(props, "Content-Length");
	xml_text(props, "Etag", etag, 128);
	e->mtime = xml_time(props, "Last-Modified");
}

int azure_listing_parse(const char *prefix, const char *dir, bool deep, const char *body,
			size_t len, listing_entry_fn add, void *arg, char **next_cursor)
{
	struct xml_span doc = { body, len }, results, blobs, item, raw;
	size_t pos = 0;
	char *name = NULL;
	int rc = -ENOMEM;

	*next_cursor = NULL;
	if (!xml_next(doc, "EnumerationResults", &pos, &results)) {
		log_warn("listing of /%s: the answer is not an Azure blob list", dir);
		return -EIO;
	}
	name = malloc(AZURE_NAME_MAX);
	if (!name)
		goto out;
	rc = 0;
	pos = 0;
	if (xml_next(results, "Blobs", &pos, &blobs)) {
		static const char *const kinds[] = { "Blob", "BlobPrefix" };
		size_t first = 0;
		if (deep && xml_next(blobs, "BlobPrefix", &first, &item))
			rc = -ENOTSUP;	/* the service listed one level only */
		for (int k = 0; k < 2 && !rc; k++) {
			size_t at = 0;
			while (!rc && xml_next(blobs, kinds[k], &at, &item)) {
				bool is_dir = k == 1;
				if (!entry_name(item, prefix, dir, deep, &is_dir, name,
						AZURE_NAME_MAX))
					continue;
				char etag[128] = "";
				struct listing_entry e = { .name = name, .is_dir = is_dir,
							   .size = -1, .etag = etag };
				if (!is_dir)
					entry_properties(item, &e, etag);
				rc = add(arg, &e);
			}
		}
	}
	if (rc)
		goto out;
	pos = 0;
	if (xml_next(results, "NextMarker", &pos, &raw) && raw.len > 0) {
		if (raw.len >= AZURE_MARKER_MAX) {
			log_warn("listing of /%s: continuation marker too long", dir);
			rc = -EIO;
			goto out;
		}
		char *marker = malloc(AZURE_MARKER_MAX);
		if (!marker) {
			rc = -ENOMEM;
			goto out;
		}
		xml_text(results, "NextMarker", marker, AZURE_MARKER_MAX);
		*next_cursor = marker;
	}
out:
	free(name);
	return rc;
}

