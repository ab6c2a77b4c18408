/*
 * cache_admin.c - `tilefs cache COMMAND [MOUNTPOINT | --cache-dir DIR]
 * [--json] [ARGS]` (a mount's cache dir: tools/mount_lookup.h).
 *
 * These work on the index and the data files directly, through the same
 * unit protocol as a mount (cache/store/unit.h): unit_verify() checks a
 * unit and unit_evict() drops one, so a mount using the same cache dir at
 * the same time never reads bytes that change under a row, and simply
 * fetches again what was dropped. `stat` also reads the mounts' files
 * (cache/store/mounts.h).
 */
#include "tools/cache_admin.h"
#include "cache/base/human.h"
#include "cache/store/index.h"
#include "cache/store/mounts.h"
#include "cache/origin/providers/provider.h"
#include "cache/store/store.h"
#include "cache/store/unit.h"
#include "tools/mount_lookup.h"
#include "tools/options.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define EXIT_USAGE 2
#define RECENT_MOUNTS 10		/* `stat` shows this many mounts */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tilefs cache COMMAND [MOUNTPOINT | --cache-dir DIR] [--json] [ARGS]\n"
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
		"MOUNTPOINT: a running tilefs mount of yours or root's, or a path in it;\n"
		"its cache dir is the one meant (with every object in it, whichever mount\n"
		"cached it). Before a PATTERN it starts with '/' or '.', as\n"
		"'tilefs cache ls /mnt/eo' or 'tilefs cache evict . 2024/*.tif'.\n"
		"\n"
		"A PATTERN is a glob on the object's URL (without its query); one without\n"
		"\"://\" matches the end of the URL, so 't256.tif' and 'dir/*.tif' work.\n"
		"\n"
		"Options:\n"
		"  --cache-dir DIR   the cache (default: as tilefs mount)\n"
		"  --json            stat: one JSON object; ls: a JSON array of objects;\n"
		"                    sizes in bytes\n"
		"\n"
		"Examples:\n"
		"  tilefs cache stat /mnt/eo\n"
		"  tilefs cache ls /mnt/eo '*.tif' --json\n"
		"  tilefs cache clear --cache-dir /nvme/tilefs\n");
}

/* S as a JSON string on stdout. */
static void json_string(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

struct admin {
	const char *dir;
	bool json;
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

/* stat --json: one object, sizes in bytes; null counts when the index
 * could not be opened (INDEX_ERR). */
static void stat_json(const struct admin *a, int index_err, uint64_t objects, uint64_t units,
		      uint64_t bytes, const struct mount_record *recent, size_t n)
{
	printf("{\"cache_dir\": ");
	json_string(a->dir);
	printf(", \"index_error\": ");
	if (index_err)
		json_string(strerror(-index_err));
	else
		printf("null");
	if (index_err)
		printf(", \"objects\": null, \"units\": null, \"bytes\": null");
	else
		printf(", \"objects\": %" PRIu64 ", \"units\": %" PRIu64 ", \"bytes\": %" PRIu64,
		       objects, units, bytes);
	printf(", \"recent_mounts\": [");
	for (size_t i = 0; i < n; i++) {
		const struct mount_record *m = &recent[i];
		printf("%s{\"pid\": %ld, \"running\": %s, \"uncached\": %s, \"started\": %lld, "
		       "\"updated\": %lld, \"source\": ", i ? ", " : "", m->pid,
		       m->running ? "true" : "false", m->uncached ? "true" : "false",
		       (long long)m->started, (long long)m->updated);
		json_string(m->source);
		printf(", \"mountpoint\": ");
		json_string(m->mountpoint);
		printf(", \"hits\": %" PRIu64 ", \"misses\": %" PRIu64 ", \"passthrough_opens\": %"
		       PRIu64 ", \"served_bytes\": %" PRIu64 ", \"fetched_bytes\": %" PRIu64
		       ", \"requests\": %" PRIu64 ", \"errors\": %" PRIu64 "}", m->hits, m->misses,
		       m->passthrough_opens, m->bytes_served, m->bytes_fetched, m->requests,
		       m->errors);
	}
	printf("]}\n");
}

/* What the cache holds, then what its recent mounts did. OPEN_ERR: the
 * index could not be opened (said on stderr): only the mounts are told
 * (those that ran then read uncached), and the exit status is 1. */
static int cmd_stat(struct admin *a, int open_err)
{
	uint64_t objects = 0, units = 0, bytes = 0;
	char h1[32], h2[32];
	int err = open_err ? open_err : index_counts(a->ix, &objects, &units, &bytes);
	if (err && !open_err) {
		fprintf(stderr, "tilefs: cannot read the cache index: %s\n", strerror(-err));
		return 1;
	}
	struct mount_record recent[RECENT_MOUNTS];
	size_t n = 0;
	uint64_t hits = 0, misses = 0, passed = 0;
	mounts_recent(a->dir, recent, RECENT_MOUNTS, &n);
	if (a->json) {
		stat_json(a, err, objects, units, bytes, recent, n);
		return err ? 1 : 0;
	}
	if (err)
		printf("cache dir: %s\nindex: cannot be opened (%s): mounts read uncached\n",
		       a->dir, strerror(-err));
	else
		printf("cache dir: %s\nobjects: %" PRIu64 "\nunits: %" PRIu64 "\nbytes: %s\n",
		       a->dir, objects, units, human_bytes(bytes, h1, sizeof(h1)));
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
		       " passthrough opens, %s served, %s fetched in %" PRIu64 " requests, %" PRIu64
		       " errors: %s on %s\n", m->pid,
		       m->running ? "running" : "ended", m->uncached ? ", uncached" : "", when,
		       m->hits, m->misses, m->passthrough_opens,
		       human_bytes(m->bytes_served, h1, sizeof(h1)),
		       human_bytes(m->bytes_fetched, h2, sizeof(h2)), m->requests,
		       m->errors, m->source, m->mountpoint);
	}
	return err ? 1 : 0;
}

/* ls: a header and a line per object (sizes for people), or --json an
 * array (sizes in bytes). A PATTERN matching nothing is exit status 1. */
static int cmd_ls(struct admin *a, const char *pattern)
{
	struct index_listed *v;
	size_t n, shown_n = 0;
	int err = index_objects_all(a->ix, &v, &n);
	if (err) {
		fprintf(stderr, "tilefs: cannot read the cache index: %s\n", strerror(-err));
		return 1;
	}
	char **shown = calloc(n ? n : 1, sizeof(*shown));
	int version_w = 7;			/* strlen("VERSION") */
	for (size_t i = 0; shown && i < n; i++) {
		shown[i] = url_for_log(v[i].url);
		if (shown[i] && pattern && !matches(shown[i], pattern)) {
			free(shown[i]);
			shown[i] = NULL;
		}
		if (!shown[i])
			continue;
		shown_n++;
		int w = (int)strlen(v[i].object.version);
		version_w = w > version_w ? (w < 64 ? w : 64) : version_w;
	}
	if (a->json)
		printf("[");
	else if (shown_n)
		printf("%-10s  %-10s  %7s  %-*s  %s\n", "CACHED", "SIZE", "UNITS", version_w,
		       "VERSION", "URL");
	for (size_t i = 0, k = 0; shown && i < n; i++) {
		char h1[32], h2[32];
		if (!shown[i])
			continue;
		if (a->json) {
			printf("%s{\"url\": ", k++ ? ",\n " : "");
			json_string(shown[i]);
			printf(", \"size\": %" PRIu64 ", \"cached_bytes\": %" PRIu64 ", \"units\": %"
			       PRIu64 ", \"version\": ", v[i].object.size, v[i].bytes, v[i].units);
			json_string(v[i].object.version);
			printf("}");
		} else {
			printf("%-10s  %-10s  %7" PRIu64 "  %-*s  %s\n",
			       human_bytes(v[i].bytes, h1, sizeof(h1)),
			       human_bytes(v[i].object.size, h2, sizeof(h2)), v[i].units,
			       version_w, v[i].object.version, shown[i]);
		}
		free(shown[i]);
	}
	if (a->json)
		printf("]\n");
	free(shown);
	index_listed_free(v, n);
	if (!shown) {
		fprintf(stderr, "tilefs: cache ls: %s\n", strerror(ENOMEM));
		return 1;
	}
	if (pattern && !shown_n) {
		fprintf(stderr, "tilefs: no cached object matches '%s'\n", pattern);
		return 1;
	}
	return 0;
}

static int cmd_verify(struct admin *a)
{
	struct index_listed *v;
	size_t n;
	uint64_t checked = 0, checked_bytes = 0, bad = 0;
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
			checked_bytes += u[j].len;
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
	char h[32];
	printf("checked %" PRIu64 " units (%s) of %zu objects in %s: ", checked,
	       human_bytes(checked_bytes, h, sizeof(h)), n, a->dir);
	if (bad)
		printf("%" PRIu64 " bad, dropped (they will be fetched again)\n", bad);
	else
		printf("all good\n");
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
	char h[32];
	printf("dropped %" PRIu64 " bytes (%s): %" PRIu64 " units of %" PRIu64 " objects\n",
	       bytes, human_bytes(bytes, h, sizeof(h)), units, objects);
	if (kept)
		printf("kept %" PRIu64 " units of files open through a mount (read by FUSE "
		       "passthrough); they can go once those files are closed\n", kept);
	if (!all && objects == 0) {
		fprintf(stderr, "tilefs: no cached object matches\n");
		return 1;
	}
	return 0;
}

/* Does ARG, the first after a command taking PATTERNs, name a path (a
 * mount) rather than a PATTERN? A pattern starting with '/' matches no
 * URL (see matches()), one with "./" never would. */
static bool path_like(const char *arg)
{
	return arg[0] == '/' || strcmp(arg, ".") == 0 || strcmp(arg, "..") == 0 ||
	       strncmp(arg, "./", 2) == 0 || strncmp(arg, "../", 3) == 0;
}

/* The cache dir of the mount PATH is in, into *DIR (caller frees). 0, or
 * the exit status after a message. */
static int mount_cache_dir(const char *path, char **dir)
{
	struct mount_found *m = malloc(sizeof(*m));
	char why[MOUNT_LOOKUP_PATH + 200];
	int err = m ? mount_lookup(path, m, why, sizeof(why)) : -ENOMEM;
	if (err == -ENOENT)
		fprintf(stderr, "tilefs: cache: %s\nTry 'tilefs cache --help'.\n", why);
	else if (err)
		fprintf(stderr, "tilefs: cache: %s\n", err == -ENOMEM ? strerror(ENOMEM) : why);
	if (!err && !(*dir = strdup(m->cache_dir)))
		err = -ENOMEM;
	free(m);
	return err == -ENOENT ? EXIT_USAGE : err ? 1 : 0;
}

int cache_admin_main(int argc, char **argv)
{
	const char *cmd = NULL, *cache_dir = NULL;
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	char *dir = NULL;
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
		} else if (strcmp(argv[i], "--json") == 0) {
			a.json = true;
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
	bool patterns = strcmp(cmd, "ls") == 0 || strcmp(cmd, "evict") == 0;
	/* the mount: the one argument of a command taking no PATTERN, or a
	   path before the PATTERNs */
	const char *mount = nargs && (!patterns || path_like(args[0])) ? args[0] : NULL;
	if (!patterns && nargs > 1) {
		fprintf(stderr, "tilefs: cache %s: takes no arguments but a MOUNTPOINT\n", cmd);
		goto usage;
	}
	if (mount && cache_dir) {
		fprintf(stderr, "tilefs: cache %s: a MOUNTPOINT or --cache-dir, not both\n", cmd);
		goto usage;
	}
	char **pats = args + (mount ? 1 : 0);
	int npats = nargs - (mount ? 1 : 0);
	if (strcmp(cmd, "evict") == 0 && npats == 0) {
		fprintf(stderr, "tilefs: cache evict: which objects? (a URL glob)\n");
		goto usage;
	}
	if (strcmp(cmd, "ls") == 0 && npats > 1) {
		fprintf(stderr, "tilefs: cache ls: one PATTERN at most\n");
		goto usage;
	}
	if (a.json && strcmp(cmd, "stat") != 0 && strcmp(cmd, "ls") != 0) {
		fprintf(stderr, "tilefs: cache %s: --json is for stat and ls\n", cmd);
		goto usage;
	}

	if (mount && (status = mount_cache_dir(mount, &dir)) != 0)
		goto out;
	if (!mount)
		dir = cache_dir ? strdup(cache_dir) : options_default_cache_dir();
	a.dir = dir;
	status = 1;
	int err = dir ? 0 : -ENOMEM;
	struct stat st;
	if (dir && stat(dir, &st) != 0 && errno == ENOENT) {
		/* one message: nothing was cached there, and where to look */
		fprintf(stderr, "tilefs: cache: no cache dir %s%s\n", dir, cache_dir || mount ? "" :
			" (the default): name a mount ('tilefs cache stat /mnt/eo') or "
			"--cache-dir DIR");
		goto close;
	}
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
		status = cmd_ls(&a, npats ? pats[0] : NULL);
	} else if (strcmp(cmd, "verify") == 0) {
		status = cmd_verify(&a);
	} else {
		status = cmd_evict(&a, pats, npats, strcmp(cmd, "clear") == 0);
	}
close:
	if (a.store)
		store_close(a.store);
	if (a.ix)
		index_close(a.ix);
	goto out;
usage:
	fprintf(stderr, "Try 'tilefs cache --help'.\n");
out:
	free(dir);
	free(args);
	return status;
}
