/*
 * bucket.c - see bucket.h.
 */
#include "cache/origin/providers/bucket.h"
#include "cache/base/log.h"
#include "cache/origin/xml.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int bucket_parse(const char *text, size_t scheme_len, char **bucket, char **prefix, char *err,
		 size_t err_size)
{
	const char *rest = text + scheme_len;
	size_t blen = strcspn(rest, "/");
	const char *p = rest + blen;
	while (*p == '/')
		p++;
	size_t plen = strlen(p);
	bool slash = plen == 0 || p[plen - 1] == '/';

	*bucket = NULL;
	*prefix = NULL;
	if (blen == 0 || strcspn(rest, "?#@ ") < blen) {
		snprintf(err, err_size, "'%s' is not %.*sBUCKET/PREFIX", text, (int)scheme_len, text);
		return -EINVAL;
	}
	*bucket = strndup(rest, blen);
	*prefix = malloc(plen + 2);
	if (!*bucket || !*prefix) {
		free(*bucket);
		free(*prefix);
		*bucket = *prefix = NULL;
		return -ENOMEM;
	}
	snprintf(*prefix, plen + 2, "%s%s", p, slash ? "" : "/");
	return 0;
}

char *bucket_object_url(const char *base_url, const char *prefix, const char *path)
{
	size_t n = strlen(prefix) + strlen(path) + 1;
	char *key = malloc(n);
	if (!key)
		return NULL;
	snprintf(key, n, "%s%s", prefix, path);
	char *enc = url_encode(key, true);
	free(key);
	if (!enc)
		return NULL;
	n = strlen(base_url) + strlen(enc) + 2;
	char *url = malloc(n);
	if (url)
		snprintf(url, n, "%s/%s", base_url, enc);
	free(enc);
	return url;
}

bool bucket_dir_prefix(const char *prefix, const char *dir, const char *names, char *out,
		       size_t size)
{
	int n = snprintf(out, size, "%s%s%s%s", prefix, dir, dir[0] ? "/" : "", names);
	return n >= 0 && (size_t)n < size;
}

char *bucket_listing_url(const char *base_url, const char *fixed, const char *dir_prefix,
			 const char *page_param, long page_size, const char *cursor_param,
			 const char *cursor)
{
	char pages[64] = "";
	char *enc_prefix = url_encode(dir_prefix, false);
	char *enc_cursor = cursor ? url_encode(cursor, false) : NULL;
	char *url = NULL;

	if (enc_prefix && (!cursor || enc_cursor)) {
		if (page_size > 0)
			snprintf(pages, sizeof(pages), "&%s=%ld", page_param, page_size);
		size_t n = strlen(base_url) + strlen(fixed) + strlen(enc_prefix) + strlen(pages) +
			   strlen(cursor_param) + (enc_cursor ? strlen(enc_cursor) : 0) + 16;
		url = malloc(n);
		if (url)
			snprintf(url, n, "%s?%s%sprefix=%s%s%s%s%s%s", base_url, fixed,
				 fixed[0] ? "&" : "", enc_prefix, pages,
				 enc_cursor ? "&" : "", enc_cursor ? cursor_param : "",
				 enc_cursor ? "=" : "", enc_cursor ? enc_cursor : "");
	}
	free(enc_prefix);
	free(enc_cursor);
	return url;
}

#define KEY_MAX 2048

/* Strip PREFIX and a trailing '/' from KEY in place; false if it is not a
 * usable name below PREFIX (a single name, or with DEEP a path). */
static bool relative_name(char *key, const char *prefix, bool url_encoded, bool deep,
			  bool *is_dir)
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
	if (!(deep ? source_path_valid(key) : source_name_valid(key))) {
		log_info("skipping object whose name is not a valid path below %s", prefix);
		return false;
	}
	return true;
}

/* bucket_listing_parse(), or with DEEP bucket_deep_listing_parse(). */
static int listing_parse(const char *prefix, bool deep, const char *body, size_t len,
			 listing_entry_fn add, void *arg, char **next_cursor)
{
	struct xml_span page = { body, len }, item;
	char key[KEY_MAX], value[64], truncated[16] = "", last[KEY_MAX] = "";
	size_t pos = 0;
	bool is_dir;

	*next_cursor = NULL;
	if (!memmem(body, len, "ListBucketResult", 16))
		return -EIO;
	bool url_encoded = xml_text(page, "EncodingType", value, sizeof(value)) &&
			   strcmp(value, "url") == 0;
	while (xml_next(page, "Contents", &pos, &item)) {
		if (!xml_text(item, "Key", key, sizeof(key)))
			continue;
		memcpy(last, key, sizeof(last));
		if (url_encoded && url_decode(last) != 0)
			last[0] = '\0';
		if (!relative_name(key, prefix, url_encoded, deep, &is_dir))
			continue;
		if (is_dir) {
			/* a folder's marker object: a folder, when listed deep */
			struct listing_entry e = { .name = key, .is_dir = true, .size = -1,
						   .etag = "" };
			int err = deep ? add(arg, &e) : 0;
			if (err)
				return err;
			continue;
		}
		char etag[128] = "";
		xml_text(item, "ETag", etag, sizeof(etag));
		struct listing_entry e = { .name = key, .size = xml_size(item, "Size"),
					   .etag = etag, .mtime = xml_time(item, "LastModified") };
		int err = add(arg, &e);
		if (err)
			return err;
	}
	pos = 0;
	if (deep && xml_next(page, "CommonPrefixes", &pos, &item))
		return -ENOTSUP;	/* the store listed one level only */
	pos = 0;
	while (xml_next(page, "CommonPrefixes", &pos, &item)) {
		if (!xml_text(item, "Prefix", key, sizeof(key)) ||
		    !relative_name(key, prefix, url_encoded, deep, &is_dir))
			continue;
		struct listing_entry e = { .name = key, .is_dir = true, .size = -1, .etag = "" };
		int err = add(arg, &e);
		if (err)
			return err;
	}
	if (xml_text(page, "IsTruncated", truncated, sizeof(truncated)) &&
	    strcmp(truncated, "true") == 0) {
		const char *cursor = NULL;
		if (xml_text(page, "NextContinuationToken", key, sizeof(key)) ||
		    xml_text(page, "NextMarker", key, sizeof(key)))
			cursor = key;
		else if (last[0])
			cursor = last;	/* a marker listing without a delimiter gives
					   no NextMarker: the next page starts after
					   the last key (S3's ListObjects rule) */
		if (cursor) {
			*next_cursor = strdup(cursor);
			if (!*next_cursor)
				return -ENOMEM;
		} else {
			log_warn("a truncated listing page below '%s' gave no cursor; "
				 "showing the first page only", prefix);
		}
	}
	return 0;
}

int bucket_listing_parse(const char *prefix, const char *body, size_t len,
			 listing_entry_fn add, void *arg, char **next_cursor)
{
	return listing_parse(prefix, false, body, len, add, arg, next_cursor);
}

int bucket_deep_listing_parse(const char *prefix, const char *body, size_t len,
			      listing_entry_fn add, void *arg, char **next_cursor)
{
	return listing_parse(prefix, true, body, len, add, arg, next_cursor);
}

int bucket_sign(const struct sigv4_flavor *f, const struct sigv4_credentials *cred,
		const char *host, const char *region, const char *service,
		const struct http_attempt *a, const struct sigv4_header *extra, size_t nextra,
		struct curl_slist **headers)
{
	struct sigv4_header h[8];
	char path[4096], stamp[32], line[1600];
	const char *query;
	size_t nh = 0;

	if (nextra > 7)
		return -E2BIG;
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	url_split(a->url, path, sizeof(path), &query);
	h[nh++] = (struct sigv4_header){ "host", host };
	for (size_t i = 0; i < nextra; i++)
		h[nh++] = extra[i];

	struct sigv4_input in = {
		.method = a->method, .canonical_uri = path, .query = query,
		.headers = h, .nheaders = nh, .payload_header = true,
		.timestamp = stamp, .region = region, .service = service,
	};
	struct sigv4_output *out = malloc(sizeof(*out));
	if (!out)
		return -ENOMEM;
	int err = sigv4_sign(f, cred, &in, out);
	if (!err) {
		snprintf(line, sizeof(line), "Authorization: %s", out->authorization);
		*headers = curl_slist_append(*headers, line);
		*headers = curl_slist_append(*headers, out->date_header);
		*headers = curl_slist_append(*headers, out->payload_header);
		if (out->token_header[0])
			*headers = curl_slist_append(*headers, out->token_header);
		for (size_t i = 0; i < nextra; i++) {
			snprintf(line, sizeof(line), "%s: %s", extra[i].name, extra[i].value);
			*headers = curl_slist_append(*headers, line);
		}
	}
	memset(out, 0, sizeof(*out));
	free(out);
	return err;
}
