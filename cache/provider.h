/*
 * provider.h - the table every origin kind (HTTP(S) now; S3, Azure, GCS
 * later) fills in. Nothing outside a provider's own file knows which
 * provider is in use: callers parse SOURCE with source_open() and then only
 * call through struct source.
 */
#ifndef TILEFS_PROVIDER_H
#define TILEFS_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_request;
struct source;

/* One listing entry; size is -1 when the listing does not give it exactly. */
typedef int (*listing_entry_fn)(void *arg, const char *name, bool is_dir, int64_t size);

struct provider {
	const char *name;
	/* Does SOURCE belong to this provider? */
	bool (*matches)(const char *source);
	/* Parse SOURCE; on error return -EINVAL and write why into err. */
	int (*open)(const char *source, struct source **out, char *err, size_t err_size);
	void (*free)(struct source *src);
	/* URL of the object at PATH ("a/b.tif", no leading slash); caller frees. */
	char *(*object_url)(struct source *src, const char *path);
	/* URL of the listing of directory DIR ("" for the root, else "a/b"),
	 * continuing at CURSOR (NULL for the first page); caller frees. */
	char *(*listing_url)(struct source *src, const char *dir, const char *cursor);
	/* Parse one listing page; call add() for each entry; set *next_cursor
	 * (caller frees) when more pages follow. */
	int (*parse_listing)(struct source *src, const char *dir, const char *body, size_t len,
			     listing_entry_fn add, void *arg, char **next_cursor);
	/* Add credentials to req (may set req->headers, freed by
	 * source_request_done()). NULL: anonymous. */
	int (*authorize)(struct source *src, struct http_request *req);
};

/* Fields every provider's source starts with. */
struct source {
	const struct provider *provider;
	char *display;		/* SOURCE as the user wrote it, for messages */
};

/* Find the provider for SOURCE and open it. err gets a message on failure. */
int source_open(const char *source, struct source **out, char *err, size_t err_size);
void source_free(struct source *src);
char *source_object_url(struct source *src, const char *path);
char *source_listing_url(struct source *src, const char *dir, const char *cursor);
int source_parse_listing(struct source *src, const char *dir, const char *body, size_t len,
			 listing_entry_fn add, void *arg, char **next_cursor);
int source_authorize(struct source *src, struct http_request *req);
/* Free what source_authorize() attached to req. */
void source_request_done(struct source *src, struct http_request *req);

/* Is NAME usable as one path component (not empty, ".", "..", no '/')? */
bool source_name_valid(const char *name);

/* Percent-encode PATH for a URL, keeping '/'; caller frees. */
char *url_encode_path(const char *path);
/* Decode %XX in place; returns -EINVAL on a bad escape or an encoded NUL. */
int url_decode(char *s);
/* URL without its query string and credentials, for log lines; caller frees. */
char *url_for_log(const char *url);

extern const struct provider provider_http;

#endif
