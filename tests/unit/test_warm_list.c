/*
 * test_warm_list.c - the first step of tilefs warm (tools/warm_list.c):
 * which files a glob, a directory, or nothing names, listed a level of
 * the tree at a time, over a namespace taken from a manifest (no request
 * is made: the source's host takes no connection). Every walk lists
 * directories with no subdirectories, whose (empty) list of them is moved
 * to the next level: under SANITIZE=undefined, the check of that move
 * (issue 54: a memcpy() from NULL of 0 bytes).
 *
 *   glob        "*" + "/" + "*.tif" names the files one level down, in path order
 *   directory   "b" names every file under b, however deep
 *   nothing     every file, each once, in path order
 *   no match    a glob naming no file is an error (1)
 */
#include "tools/warm_list.h"
#include "cache/namespace/namespace.h"
#include "cache/origin/http.h"
#include "cache/origin/providers/provider.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The files of L, their paths joined by spaces, into BUF. */
static const char *joined(const struct warm_list *l, char *buf, size_t size)
{
	buf[0] = '\0';
	for (size_t i = 0; i < l->n; i++) {
		size_t len = strlen(buf);
		snprintf(buf + len, size - len, "%s%s", len ? " " : "", l->files[i].path);
	}
	return buf;
}

/* List PATTERNS[0..n) of NS over SRC: warm_list_files()'s result, the
 * paths in GOT. */
static int list(struct namespace *ns, const struct source *src, char *const *patterns,
		size_t n, char *got, size_t size)
{
	struct warm_list l = { 0 };
	struct warm_shard all = { 0, 0 };
	int rc = warm_list_files(&l, ns, src, patterns, n, &all);
	joined(&l, got, size);
	bool urls = true;
	for (size_t i = 0; !rc && i < l.n; i++)
		urls = urls && l.files[i].url && strstr(l.files[i].url, l.files[i].path);
	if (!urls)
		snprintf(got, size, "(a file without its URL)");
	warm_list_release(&l);
	return rc;
}

int main(void)
{
	/* port 1: nothing answers there, and nothing should be asked */
	struct source_options opts = { 0 };
	struct source *src = NULL;
	char err[256];
	int rc = source_open("http://127.0.0.1:1/data/", &opts, &src, err, sizeof(err));
	CHECK(rc == 0, "an HTTP source opens (%s)", rc ? err : "");
	struct http_config cfg;
	http_config_defaults(&cfg);
	cfg.retries = 0;
	struct http_client *http = http_client_new(&cfg);
	struct namespace *ns = NULL;
	CHECK(src && http && ns_new(src, http, NULL, 3600, &ns) == 0, "a namespace");
	if (!ns)
		return check_done();

	char manifest[] = "/tmp/tilefs-warm-list-XXXXXX";
	int fd = mkstemp(manifest);
	const char *lines = "top.tif\na/x.tif\na/y.tif\nb/c/z.tif\nb/w.tif\n";
	CHECK(fd >= 0 && write(fd, lines, strlen(lines)) == (ssize_t)strlen(lines),
	      "a manifest written");
	if (fd >= 0)
		close(fd);
	rc = ns_load_manifest(ns, manifest, err, sizeof(err));
	CHECK(rc == 0, "the namespace takes the manifest (%s)", rc ? err : "");
	unlink(manifest);

	char got[512];
	char *glob[] = { "*/*.tif" };
	rc = list(ns, src, glob, 1, got, sizeof(got));
	CHECK(rc == 0 && strcmp(got, "a/x.tif a/y.tif b/w.tif") == 0,
	      "a glob names the files one level down, each with its URL (%d: %s)", rc, got);

	char *dir[] = { "b" };
	rc = list(ns, src, dir, 1, got, sizeof(got));
	CHECK(rc == 0 && strcmp(got, "b/c/z.tif b/w.tif") == 0,
	      "a directory names every file under it (%d: %s)", rc, got);

	rc = list(ns, src, NULL, 0, got, sizeof(got));
	CHECK(rc == 0 && strcmp(got, "a/x.tif a/y.tif b/c/z.tif b/w.tif top.tif") == 0,
	      "no pattern names every file, in path order (%d: %s)", rc, got);

	char *twice[] = { "a", "a/*.tif", "b/c" };
	rc = list(ns, src, twice, 3, got, sizeof(got));
	CHECK(rc == 0 && strcmp(got, "a/x.tif a/y.tif b/c/z.tif") == 0,
	      "a file two patterns name is named once (%d: %s)", rc, got);

	char *none[] = { "a/*.jp2" };
	rc = list(ns, src, none, 1, got, sizeof(got));
	CHECK(rc == 1, "a glob that names no file is an error (%d: %s)", rc, got);

	ns_free(ns);
	http_client_free(http);
	source_free(src);
	return check_done();
}
