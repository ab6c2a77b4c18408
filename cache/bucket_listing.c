/*
 * bucket_listing.c - see bucket_listing.h.
 */
#include "bucket_listing.h"
#include "log.h"
#include "xml.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 2048

/* Strip PREFIX and a trailing '/' from KEY in place; false if it is not a
 * single usable name below PREFIX. */
static bool relative_name(char *key, const char *prefix, bool url_encoded, bool *is_dir)
{
	if (url_encoded && url_decode(key) != 0)
		return false;
	size_t n = strlen(prefix);
	if (strncmp(key, prefix, n) != 0)
		return false;
	memmove(key, key + n, strlen(key + n) + 1);
	size_t len = strlen(key);
	*is_dir = len > 0 && key[len - 1] == '/';
	if (*is_dir)
		key[len - 1] = '\0';
	if (!key[0])
		return false;	/* the prefix itself, e.g. a "folder" marker object */
	if (!source_name_valid(key)) {
		log_info("skipping object whose name is not a valid path below %s", prefix);
		return false;
	}
	return true;
}

int bucket_listing_parse(const char *prefix, const char *body, size_t len,
			 listing_entry_fn add, void *arg, char **next_cursor)
{
	struct xml_span page = { body, len }, item;
	char key[KEY_MAX], value[64], truncated[16] = "";
	size_t pos = 0;
	bool is_dir;

	*next_cursor = NULL;
	if (!memmem(body, len, "ListBucketResult", 16))
		return -EIO;
	bool url_encoded = xml_text(page, "EncodingType", value, sizeof(value)) &&
			   strcmp(value, "url") == 0;
	while (xml_next(page, "Contents", &pos, &item)) {
		if (!xml_text(item, "Key", key, sizeof(key)) ||
		    !relative_name(key, prefix, url_encoded, &is_dir) || is_dir)
			continue;
		int64_t size = -1;
		if (xml_text(item, "Size", value, sizeof(value)))
			size = strtoll(value, NULL, 10);
		int err = add(arg, key, false, size);
		if (err)
			return err;
	}
	pos = 0;
	while (xml_next(page, "CommonPrefixes", &pos, &item)) {
		if (!xml_text(item, "Prefix", key, sizeof(key)) ||
		    !relative_name(key, prefix, url_encoded, &is_dir))
			continue;
		int err = add(arg, key, true, -1);
		if (err)
			return err;
	}
	if (xml_text(page, "IsTruncated", truncated, sizeof(truncated)) &&
	    strcmp(truncated, "true") == 0) {
		if (xml_text(page, "NextContinuationToken", key, sizeof(key)) ||
		    xml_text(page, "NextMarker", key, sizeof(key))) {
			*next_cursor = strdup(key);
			if (!*next_cursor)
				return -ENOMEM;
		} else {
			log_warn("a truncated listing page below '%s' gave no cursor; "
				 "showing the first page only", prefix);
		}
	}
	return 0;
}
