/*
 * cache_admin.c - `tilefs cache COMMAND [--cache-dir DIR] [ARGS]`.
 *
 * These work on the index and the data files directly, through the same
 * unit protocol as a mount (cache/store/unit.h): unit_verify() checks a
 * unit and unit_evict() drops one, so a mount using the same cache dir at
 * the same time never reads bytes that change under a row, and simply
 * fetches again what was dropped. `stat` also reads the mounts' files
 * (cache/store/mounts.h).
 */
#include "tools/cache_admin.h"
#include "cache/store/index.h"
#include "cache/store/mounts.h"
#include "cache/origin/providers/provider.h"
#include "cache/store/store.h"
#include "cache/store/unit.h"
#include "tools/options.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXIT_USAGE 2
#define RECENT_MOUNTS 10		/* `stat` shows this many mounts */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tilefs cache COMMAND [--cache-dir DIR] [ARGS]\n"
		"\n"
		"Look at and manage a tilefs cache dir, whether or not a mount uses it.\n"
		"\n"
		"Commands:\n"
		"  stat              objects, units and bytes the cache holds, and the\n"
		"                    hits and misses of the last mounts that used it\n"
		"  ls [PATTERN]      each object: bytes cached of its size, units, version, URL\n"
		"  verify            read every unit and check its checksum; drop the bad ones\n"
		"                    (exit status 1 if any was bad)\n"
		"  evict PATTERN...  drop what is cached of the objects PATTERN matches\n"
		"  clear             drop every cached unit\n"
		"\n"
		"A PATTERN is a glob on the object's URL (without its query); one without\n"
		"\"://\" matches the end of the URL, so 't256.tif' and 'dir/*.tif' work.\n"
		"\n"
		"Options:\n"
		"  --cache-dir DIR   the cache (default: as tilefs mount)\n");
}

struct admin {
	const char *dir;
	struct index *ix;
	struct store *store;
};

/* Does URL (shown without its query as SHOWN) match PATTERN? */
static bool matches(const char *shown, const char *pattern)
{
	char glob[4200];
	if (!strstr(pattern, "://")) {
		snprintf(glob, sizeof(glob), "*/%s", pattern);
		pattern = glob;
	}
	return fnmatch(pattern, shown, 0) == 0;
}

/* Drop every unit of OBJECT_ID (a sealed file's go at once); adds what
 * went to *units, *bytes (a mount evicting meanwhile counts too), and to
 * *kept the units of a file a mount has open with passthrough (pinned). */
static int drop_object(struct admin *a, int64_t object_id, uint64_t *units, uint64_t *bytes,
		       uint64_t *kept)
{
	struct index_unit *v;
	size_t n;
	uint64_t units_before, bytes_before, units_after, bytes_after;
	int err = index_object_usage(a->ix, object_id, &units_before, &bytes_before);
	if (!err)
		err = index_units_of(a->ix, object_id, &v, &n);
	if (err)
		return err;
	for (size_t i = 0; !err && i < n; i++) {
		err = unit_evict(a->ix, a->store, &v[i], NULL);
		if (err == -ENOENT)
			err = 0;	/* gone already (with the rest of a sealed file) */
		else if (err == -EBUSY) {
			(*kept)++;
			err = 0;
		}
	}
	free(v);
	if (index_object_usage(a->ix, object_id, &units_after, &bytes_after) == 0) {
		*units += units_before > units_after ? units_before - units_after : 0;
		*bytes += bytes_before > bytes_after ? bytes_before - bytes_after : 0;
	}
	return err;
}

/* What the cache holds, then what its recent mounts did. OPEN_ERR: the
 * index could not be opened (said on stderr): only the mounts are told
 * (those that ran then read uncached), and the exit status is 1. */
static int cmd_stat(struct admin *a, int open_err)
{
	uint64_t objects, units, bytes;
	int err = open_err ? open_err : index_counts(a->ix, &objects, &units, &bytes);
	if (err && !open_err) {
		fprintf(stderr, "tilefs: cannot read the cache index: %s\n", strerror(-err));
		return 1;
	}
	if (err)
		printf("cache dir: %s\nindex: cannot be opened (%s): mounts read uncached\n",
		       a->dir, strerror(-err));
	else
		printf("cache dir: %s\nobjects: %" PRIu64 "\nunits: %" PRIu64 "\nbytes: %" PRIu64
		       "\n", a->dir, objects, units, bytes);

	struct mount_record recent[RECENT_MOUNTS];
	size_t n = 0;
	uint64_t hits = 0, misses = 0, passed = 0;
	mounts_recent(a->dir, recent, RECENT_MOUNTS, &n);
	for (size_t i = 0; i < n; i++) {
		hits += recent[i].hits;
		misses += recent[i].misses;
		passed += recent[i].passthrough_opens;
	}
	printf("recent mounts: %zu\nhits: %" PRIu64 "\nmisses: %" PRIu64
	       "\npassthrough opens: %" PRIu64 "\n", n, hits, misses, passed);
	for (size_t i = 0; i < n; i++) {
		const struct mount_record *m = &recent[i];
		char when[32];
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&m->updated));
		printf("mount %ld (%s%s, counted %s): %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
		       " passthrough opens, %" PRIu64 " bytes served, %" PRIu64 " fetched in %" PRIu64
		       " requests, %" PRIu64 " errors: %s on %s\n", m->pid,
		       m->running ? "running" : "ended", m->uncached ? ", uncached" : "", when,
		       m->hits, m->misses,
		       m->passthrough_opens, m->bytes_served, m->bytes_fetched, m->requests,
		       m->errors, m->source, m->mountpoint);
	}
	return err ? 1 : 0;
}

static int cmd_ls(struct admin *a, const char *pattern)
{
	struct index_listed *v;
	size_t n;
	int err = index_objects_all(a->ix, &v, &n);
	if (err) {
		fprintf(stderr, "tilefs: cannot read the cache index: %s\n", strerror(-err));
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		char *shown = url_for_log(v[i].url);
		if (shown && (!pattern || matches(shown, pattern)))
			printf("%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s\t%s\n", v[i].bytes,
			       v[i].object.size, v[i].units, v[i].object.version, shown);
		free(shown);
	}
	index_listed_free(v, n);
	return 0;
}

static int cmd_verify(struct admin *a)
{
	struct index_listed *v;
	size_t n;
	uint64_t checked = 0, bad = 0;
	int err = index_objects_all(a->ix, &v, &n);
	for (size_t i = 0; !err && i < n; i++) {
		struct index_unit *u;
		size_t nu;
		if (index_units_of(a->ix, v[i].object.id, &u, &nu) != 0)
			continue;
		for (size_t j = 0; j < nu; j++) {
			char *buf = malloc(u[j].len ? u[j].len : 1);
			bool dropped;
			if (!buf) {
				err = -ENOMEM;
				break;
			}
			int verr = unit_verify(a->ix, a->store, &u[j], buf, &dropped);
			free(buf);
			checked++;
			/* evicted meanwhile by a mount (row gone first)? then not bad */
			if (!verr || !dropped)
				continue;
			bad++;
			char *shown = url_for_log(v[i].url);
			printf("dropped: %s at %" PRIu64 " (%" PRIu64 " bytes): %s\n",
			       shown ? shown : "?", u[j].off, u[j].len,
			       verr == -EIO ? "unreadable" : "checksum mismatch");
			free(shown);
		}
		free(u);
	}
	index_listed_free(v, n);
	if (err) {
		fprintf(stderr, "tilefs: cannot verify the cache: %s\n", strerror(-err));
		return 1;
	}
	printf("verified %" PRIu64 " units: %" PRIu64 " bad, dropped\n", checked, bad);
	return bad ? 1 : 0;
}

/* evict (PATTERNS) or clear (npatterns == 0 and all). */
static int cmd_evict(struct admin *a, char **patterns, int npatterns, bool all)
{
	struct index_listed *v;
	size_t n;
	uint64_t objects = 0, units = 0, bytes = 0, kept = 0;
	int err = index_objects_all(a->ix, &v, &n);
	for (size_t i = 0; !err && i < n; i++) {
		char *shown = url_for_log(v[i].url);
		bool hit = all;
		for (int k = 0; shown && !hit && k < npatterns; k++)
			hit = matches(shown, patterns[k]);
		free(shown);
		if (!hit)
			continue;
		objects++;
		err = drop_object(a, v[i].object.id, &units, &bytes, &kept);
	}
	index_listed_free(v, n);
	if (err) {
		fprintf(stderr, "tilefs: cannot drop units: %s (run it again)\n", strerror(-err));
		return 1;
	}
	printf("dropped %" PRIu64 " units, %" PRIu64 " bytes, of %" PRIu64 " objects\n", units,
	       bytes, objects);
	if (kept)
		printf("kept %" PRIu64 " units of files open through a mount (read by FUSE "
		       "passthrough); they can go once those files are closed\n", kept);
	if (!all && objects == 0) {
		fprintf(stderr, "tilefs: no cached object matches\n");
		return 1;
	}
	return 0;
}

int cache_admin_main(int argc, char **argv)
{
	const char *cmd = NULL, *cache_dir = NULL;
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	int nargs = 0, status = EXIT_USAGE;
	struct admin a = { 0 };
	bool rebuilt;

	if (!args)
		return 1;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			status = 0;
			goto out;
		} else if (strcmp(argv[i], "--cache-dir") == 0 && i + 1 < argc) {
			cache_dir = argv[++i];
		} else if (strncmp(argv[i], "--cache-dir=", 12) == 0) {
			cache_dir = argv[i] + 12;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "tilefs: cache: unknown option '%s'\n", argv[i]);
			goto usage;
		} else if (!cmd) {
			cmd = argv[i];
		} else {
			args[nargs++] = argv[i];
		}
	}
	bool known = cmd && (strcmp(cmd, "stat") == 0 || strcmp(cmd, "ls") == 0 ||
			     strcmp(cmd, "verify") == 0 || strcmp(cmd, "evict") == 0 ||
			     strcmp(cmd, "clear") == 0);
	if (!known) {
		fprintf(stderr, cmd ? "tilefs: cache: unknown command '%s'\n" :
				      "tilefs: cache: which command?%s\n", cmd ? cmd : "");
		goto usage;
	}
	if ((strcmp(cmd, "evict") == 0) != (nargs > 0) && strcmp(cmd, "ls") != 0) {
		fprintf(stderr, "tilefs: cache %s: %s\n", cmd,
			nargs ? "takes no arguments" : "which objects? (a URL glob)");
		goto usage;
	}
	if (strcmp(cmd, "ls") == 0 && nargs > 1) {
		fprintf(stderr, "tilefs: cache ls: one PATTERN at most\n");
		goto usage;
	}

	char *dir = cache_dir ? strdup(cache_dir) : options_default_cache_dir();
	a.dir = dir;
	status = 1;
	int err = dir ? 0 : -ENOMEM;
	if (dir && options_check_cache_dir(dir) == -EPERM)
		goto close;	/* said what to fix */
	if (!err)
		err = index_open(dir, &a.ix, &rebuilt);
	if (!err)
		err = store_open(dir, index_instance(a.ix), &a.store);
	if (err) {
		fprintf(stderr, "tilefs: cannot open the cache in %s: %s\n", dir ? dir : "?",
			strerror(-err));
		if (dir && strcmp(cmd, "stat") == 0 && err != -ENOMEM && err != -EPERM)
			status = cmd_stat(&a, err);
	} else if (strcmp(cmd, "stat") == 0) {
		status = cmd_stat(&a, 0);
	} else if (strcmp(cmd, "ls") == 0) {
		status = cmd_ls(&a, nargs ? args[0] : NULL);
	} else if (strcmp(cmd, "verify") == 0) {
		status = cmd_verify(&a);
	} else {
		status = cmd_evict(&a, args, nargs, strcmp(cmd, "clear") == 0);
	}
close:
	if (a.store)
		store_close(a.store);
	if (a.ix)
		index_close(a.ix);
	free(dir);
	goto out;
usage:
	fprintf(stderr, "Try 'tilefs cache --help'.\n");
out:
	free(args);
	return status;
}
