/*
 * fuzz_manifest.c - libFuzzer target for manifests, the files --list
 * (mount) and --from-file (warm) read (ns_load_manifest(),
 * cache/namespace/namespace.c): relative paths or full URLs, one per line.
 * The input is one manifest, loaded for an HTTP and an S3 source. The tree
 * it gives must hold valid names only, each directory's in strictly
 * ascending order, each file with a URL (a URL line's is fetched as given);
 * a refused manifest's message must be printable and show neither a
 * line's query (from its first '?': a signed URL's is a credential) nor a
 * URL's user:password@. Every node is freed with the namespace. Anything
 * else (a crash, a sanitizer report, a leak) is a bug. Seeds:
 * tests/fuzz/seeds/fuzz_manifest/. Built and run by tests/fuzz/run.
 */
#include "cache/base/log.h"
#include "cache/engine/cache.h"
#include "cache/namespace/namespace.h"
#include "cache/origin/providers/provider.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PATH_MAX_LEN 8192	/* a manifest line's bound (namespace.c) */
#define DEPTH_MAX 4200		/* enough for "a/a/a/..." in one line */

static const char *const sources[] = {
	"http://127.0.0.1:8080/eo/",
	"s3://bucket/prefix",
};
#define NSOURCES (sizeof(sources) / sizeof(sources[0]))

static char manifest_path[64];

static void manifest_remove(void)
{
	unlink(manifest_path);
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* A directory's entries, as ns_readdir() gave them (with the
 * namespace's lock held: looked into only after it returns). */
struct entries {
	size_t n, cap;
	char **names;
	bool *is_dir;
};

static int entry_add(void *arg, const char *name, const struct ns_attr *attr)
{
	struct entries *e = arg;
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 16;
		char **names = realloc(e->names, cap * sizeof(*names));
		if (!names)
			abort();
		e->names = names;
		bool *is_dir = realloc(e->is_dir, cap * sizeof(*is_dir));
		if (!is_dir)
			abort();
		e->is_dir = is_dir;
		e->cap = cap;
	}
	if (!(e->names[e->n] = strdup(name)))
		abort();
	e->is_dir[e->n++] = attr->is_dir;
	return 0;
}

/* Walk the directory at PATH (LEN bytes, room for a line more) below. */
static void walk(struct namespace *ns, char *path, size_t len, int depth)
{
	struct entries e = { 0 };

	if (depth > DEPTH_MAX || ns_readdir(ns, path, 0, entry_add, &e) != 0)
		abort();
	for (size_t i = 0; i < e.n; i++) {
		const char *name = e.names[i];
		size_t n = strlen(name);
		if (!source_name_valid(name) || (i > 0 && strcmp(e.names[i - 1], name) >= 0))
			abort();	/* a bad name, or not in order */
		if (len + 1 + n > PATH_MAX_LEN)
			abort();	/* longer than any line */
		size_t at = len ? len + 1 : 0;
		if (len)
			path[len] = '/';
		memcpy(path + at, name, n + 1);
		if (e.is_dir[i]) {
			walk(ns, path, at + n, depth + 1);
		} else {
			struct cache_listed listed;
			char etag[128];
			char *url = ns_url(ns, path, &listed, etag);
			if (!url || !strstr(url, "://"))
				abort();
			free(url);
		}
		path[len] = '\0';
	}
	for (size_t i = 0; i < e.n; i++)
		free(e.names[i]);
	free(e.names);
	free(e.is_dir);
}

/*
 * Does the message ERR show a line's query (anything from its '?') or a
 * URL's user:password@? What it shows of the line is quoted: "... line N:
 * 'SHOWN' is not a usable file path (WHY)", maybe cut to fit.
 */
static bool shows_secret(const char *err)
{
	const char *open = strstr(err, ": '"), *close = strstr(err, "' is not a usable");
	if (!open)
		return true;	/* not the message a bad line gets */
	if (!close || close < open + 3)
		close = err + strlen(err);	/* cut to fit ERR */
	const char *shown = open + 3;
	size_t len = (size_t)(close - shown);
	if (memchr(shown, '?', len))
		return true;
	const char *scheme = memmem(shown, len, "://", 3);
	if (!scheme)
		return false;
	const char *authority = scheme + 3;
	size_t n = 0;
	while (authority + n < close && authority[n] != '/' && authority[n] != '#')
		n++;
	return memchr(authority, '@', n) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct source *src[NSOURCES];
	FILE *f;

	if (!src[0]) {
		struct source_options opts = { .no_sign_request = true };
		char err[256];
		int fd;
		log_set_level(LOG_ERROR);
		if (log_set_file("/dev/null") < 0)
			abort();
		for (size_t i = 0; i < NSOURCES; i++)
			if (source_open(sources[i], &opts, &src[i], err, sizeof(err)) != 0)
				abort();
		snprintf(manifest_path, sizeof(manifest_path), "/tmp/tilefs-fuzz-manifest-XXXXXX");
		if ((fd = mkstemp(manifest_path)) < 0)
			abort();
		close(fd);
		atexit(manifest_remove);
	}
	if (!(f = fopen(manifest_path, "w")) || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	for (size_t i = 0; i < NSOURCES; i++) {
		struct namespace *ns;
		char err[1024] = "";	/* as fs/main.c and tools/warm.c */
		if (ns_new(src[i], NULL, NULL, 60, &ns) != 0)
			abort();
		if (ns_load_manifest(ns, manifest_path, err, sizeof(err)) == 0) {
			char *path = malloc(PATH_MAX_LEN + 1);
			if (!path)
				abort();
			path[0] = '\0';
			walk(ns, path, 0, 0);
			free(path);
		} else if (!printable(err) || shows_secret(err)) {
			abort();
		}
		ns_free(ns);
	}
	if (ns_nodes_alive() != 0)
		abort();	/* a node outlived its namespace */
	return 0;
}
