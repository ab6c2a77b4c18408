/*
 * fuzz_listing.c - libFuzzer target for the listing parsers of every
 * provider (cache/origin): nginx and Apache index pages (http), S3 and GCS
 * ListBucketResult (bucket.c), Azure EnumerationResults. The input is one
 * listing page's body, and every parser reads it, at the root and in a
 * subdirectory. Each entry reported must be a valid name, and a cursor a
 * short string; anything else (a crash, a sanitizer report, a leak, a
 * timeout: the HTML parser was once quadratic) is a bug. Seeds:
 * tests/fuzz/seeds/fuzz_listing/. Built and run by tests/fuzz/run.
 */
#include "cache/base/log.h"
#include "cache/origin/providers/provider.h"

#include <stdlib.h>
#include <string.h>

static const char *const sources[] = {
	"http://127.0.0.1:8080/eo/",
	"s3://bucket/prefix",
	"gs://bucket/prefix",
	"az://account/container/prefix",
};
#define NSOURCES (sizeof(sources) / sizeof(sources[0]))

static int check_entry(void *arg, const struct listing_entry *e)
{
	if (!source_name_valid(e->name) || e->size < -1 || !e->etag || strlen(e->etag) > 127 ||
	    e->mtime < 0 || (e->is_dir && (e->size != -1 || e->etag[0])))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct source *src[NSOURCES];
	static const char *const dirs[] = { "", "sub/dir" };

	if (!src[0]) {
		struct source_options opts = { .no_sign_request = true };
		char err[256];
		log_set_level(LOG_ERROR);
		if (log_set_file("/dev/null") < 0)
			abort();
		for (size_t i = 0; i < NSOURCES; i++)
			if (source_open(sources[i], &opts, &src[i], err, sizeof(err)) != 0)
				abort();
	}
	/* an exact copy (the transport's body is not NUL-terminated either),
	   so a read past the end is ASan's to see */
	char *body = malloc(size ? size : 1);
	if (!body)
		return 0;
	memcpy(body, data, size);
	for (size_t i = 0; i < NSOURCES; i++) {
		for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
			char *next = NULL;
			source_parse_listing(src[i], dirs[d], body, size, check_entry, NULL, &next);
			if (next && strlen(next) > size)
				abort();	/* a cursor comes from the page */
			free(next);
		}
	}
	free(body);
	return 0;
}
