/*
 * warm.c - `tilefs warm [OPTIONS] SOURCE|MOUNTPOINT [PATH_OR_GLOB...]`:
 * fill the cache dir a mount uses, without a mount (a MOUNTPOINT names the
 * source and cache dir of a running mount: tools/mount_lookup.h).
 *
 * Three steps. List (tools/warm_list.c): SOURCE's listings (or
 * --from-file) give the files, the patterns and --shard keep some. Plan:
 * each file is opened as a mount opens it (its header fetched and its tile
 * map parsed, or both read from the index), the selection names the units
 * wanted (cache/tiff/select.c) and the index says which of them are cached
 * already. Fetch: --jobs workers take the missing
 * units in chunks and fetch them through the cache (cache_warm()), which
 * claims each unit first: a mount fetching on the same cache dir and this
 * warm never fetch one unit twice, and what is stored is a hit for the
 * mount at once. Each file then cached whole is sealed (checked, synced,
 * stamped: cache_object_seal()), so a mount's kernel reads it by
 * passthrough from its first open. An interrupted warm keeps what it
 * fetched, so running it again fetches only the rest.
 */
#include "tools/warm.h"
#include "cache/engine/cache.h"
#include "cache/tiff/layout.h"
#include "cache/tiff/select.h"
#include "cache/base/human.h"
#include "cache/base/log.h"
#include "cache/namespace/namespace.h"
#include "cache/origin/providers/provider.h"
#include "cache/tiff/tiff.h"
#include "tools/mount_lookup.h"
#include "tools/options.h"
#include "tools/stack.h"
#include "tools/warm_list.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130
#define CHUNK_MAX (16u << 20)		/* bytes a worker asks cache_warm() for */
#define CHUNK_MIN (1u << 20)		/* ... when there is little to fetch */
#define PROGRESS_TTY_S 1
#define PROGRESS_PLAIN_S 5

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tilefs warm [OPTIONS] SOURCE [PATH_OR_GLOB...]\n"
		"       tilefs warm [OPTIONS] MOUNTPOINT [PATH_OR_GLOB...]\n"
		"\n"
		"Fetch files of SOURCE into the cache dir, without mounting, so that a\n"
		"mount of SOURCE using that cache dir reads them without a request (after\n"
		"a selection, a reader may still fetch the few KB of unselected tiles its\n"
		"aligned buffers touch). Safe while such a mount runs: no unit is fetched\n"
		"twice. What is cached already is skipped, so a warm that was interrupted\n"
		"resumes when run again.\n"
		"\n"
		"MOUNTPOINT, a running tilefs mount of yours or root's (or a path in it):\n"
		"warm its SOURCE into its cache dir. Credentials come from your\n"
		"environment, as for a mount; give again the options that say how to\n"
		"reach SOURCE (--endpoint, --region, ...; --from-file for a mount's\n"
		"--list), and the whole SOURCE if a token in its query string is needed\n"
		"(the mount keeps none).\n"
		"\n"
		"PATH_OR_GLOB is a path under SOURCE ('a/b.tif'), a directory (all files\n"
		"under it) or a glob ('2024/*/B04.tif'; '*' does not cross '/'). None:\n"
		"every file under SOURCE. Under a MOUNTPOINT: relative to the path\n"
		"given, or absolute under the mountpoint.\n"
		"\n"
		"What to fetch of each file (default: all of it; the options add up):\n"
		"  --header-only, --overviews, --ifd N, --window X,Y,W,H\n"
		"\n"
		"Options:\n");
	options_usage(out, OPTIONS_WARM);
	fprintf(out,
		"\n"
		"Exit status: 0 all selected files warmed, 1 some failed (each is named)\n"
		"or the selection does not fit the cache, 2 usage, 130 interrupted.\n"
		"\n"
		"Example:\n"
		"  tilefs warm s3://bucket/scenes/ '2024/*.tif' --cache-dir /nvme/tilefs \\\n"
		"      --cache-size 200G --jobs 32\n"
		"  tilefs mount s3://bucket/scenes/ /mnt/scenes --cache-dir /nvme/tilefs\n"
		"  tilefs warm /mnt/scenes '2025/*.tif' --overviews\n");
}

/* One file to warm. */
struct item {
	const char *path;		/* borrowed from warm->files */
	const char *url;
	const struct cache_listed *listed;	/* borrowed from warm->files */
	struct cache_object *obj;	/* once planned */
	struct extent *units;		/* the missing units wanted, by offset */
	size_t nunits;
	uint64_t want, cached;		/* bytes selected; of them cached at planning */
	uint64_t opened;		/* of those, what opening it fetched now */
	size_t next_unit;		/* fetch cursor (warm->lock) */
	int err;			/* first failure (warm->lock) */
	bool excluded;			/* --partial: does not fit */
	size_t chunks_left;		/* taken and not finished (warm->lock) */
};

struct warm {
	struct options *o;
	struct selection sel;
	struct stack stack;		/* source, fetch thread, cache, namespace */
	struct warm_shard shard;
	struct warm_list files;
	struct warm_order order;	/* --from-file's windows */
	struct item *items;		/* one per file */
	size_t n;
	uint64_t chunk;			/* see choose_chunk() */

	pthread_mutex_t lock;
	pthread_cond_t wake;		/* progress: stop */
	size_t next_item;		/* planning or fetching cursor */
	bool planning, finished;
	/* progress, under lock */
	size_t planned, files_done, failures;
	uint64_t total, done, fetched, cached, elsewhere;
	struct timespec started;
};

static atomic_bool interrupted;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&interrupted, true);
}

/* ---- sizes and times for people ---- */


static double seconds_since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* What went wrong with a file, for its one failure line. */
static const char *failure_text(int err)
{
	switch (err) {
	case -ENOENT:
		return "not found on the origin";
	case -EACCES:
		return "access denied";
	case -ESTALE:
		return "changed on the origin while warming (run again)";
	case -ENOSPC:
	case -EDQUOT:
		return "no room left on the cache disk";
	case -ENOTSUP:
		return "the origin gives neither ETag nor Last-Modified, so it cannot be cached";
	case -EIO:
		return "the origin did not answer or failed (see the messages above)";
	default:
		return strerror(-err);
	}
}

/* ---- parsing the selection ---- */

static int parse_selection(struct warm *w, char *err, size_t err_size)
{
	struct options *o = w->o;
	struct selection *s = &w->sel;

	s->header_only = o->header_only;
	s->overviews = o->overviews;
	s->ifd = o->ifd;
	if (o->window) {
		unsigned long long v[4];
		char tail;
		if (strspn(o->window, "0123456789,") != strlen(o->window) ||
		    sscanf(o->window, "%llu,%llu,%llu,%llu%c", &v[0], &v[1], &v[2], &v[3],
			   &tail) != 4 || v[2] == 0 || v[3] == 0) {
			snprintf(err, err_size, "--window: '%s' is not X,Y,W,H in pixels "
				 "(W and H above 0), e.g. 0,0,1024,1024", o->window);
			return -EINVAL;
		}
		s->window = true;
		s->x = v[0];
		s->y = v[1];
		s->w = v[2];
		s->h = v[3];
	}
	if (o->shard)
		return warm_shard_parse(o->shard, &w->shard, err, err_size);
	return 0;
}

/* ---- listing ---- */

/* The files to warm, one item each. 0, or 1 after saying why on stderr
 * (out of memory: silently, as when a URL cannot be made). */
static int list_files(struct warm *w)
{
	if (warm_list_files(&w->files, w->stack.ns, w->stack.src, w->o->paths, w->o->npaths,
			    &w->shard) != 0)
		return 1;
	w->items = calloc(w->files.n ? w->files.n : 1, sizeof(*w->items));
	if (!w->items)
		return 1;
	w->n = w->files.n;
	for (size_t i = 0; i < w->n; i++) {
		w->items[i].path = w->files.files[i].path;
		w->items[i].url = w->files.files[i].url;
		w->items[i].listed = &w->files.files[i].listed;
	}
	return 0;
}

/* ---- planning ---- */

static int extent_cmp(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The units of IT's object the selection wants (for --from-file, of the
 * windows its lines give), sorted and distinct:
 * *units (caller frees) and *n. */
static int select_units(const struct warm *w, struct item *it, struct extent **units, size_t *n)
{
	const struct layout *l = cache_object_layout(it->obj);
	if (!l)
		return -EIO;	/* the index cannot say how it is cut (logged) */
	const struct selection *s = &w->sel;
	const struct tiff_map *m = l->map;

	if (s->ifd >= 0 && m && (uint32_t)s->ifd >= m->nifd)
		fprintf(stderr, "tilefs: warm: %s has no IFD %ld (it has %u): warming the rest\n",
			it->path, s->ifd, m->nifd);
	size_t first, nwin;
	warm_order_find(&w->order, it->path, &first, &nwin);
	for (size_t i = first; i < first + nwin; i++)
		if (w->order.v[i].whole)
			nwin = 0;	/* a line asks for all of it */
	if (nwin == 0)
		return selection_units(l, s, units, n);
	/* --from-file's windows of this file, each with the options' parts */
	struct extent *all = NULL;
	size_t nall = 0;
	for (size_t i = first; i < first + nwin; i++) {
		const struct warm_window *wnd = &w->order.v[i];
		struct selection one = *s;
		struct extent *v, *grown;
		size_t k;
		one.window = true;
		one.x = wnd->x;
		one.y = wnd->y;
		one.w = wnd->w;
		one.h = wnd->h;
		int err = selection_units(l, &one, &v, &k);
		grown = err ? NULL : realloc(all, (nall + k + 1) * sizeof(*all));
		if (!grown) {
			if (!err)
				free(v);
			free(all);
			return err ? err : -ENOMEM;
		}
		all = grown;
		if (k)
			memcpy(all + nall, v, k * sizeof(*v));
		nall += k;
		free(v);
	}
	qsort(all, nall, sizeof(*all), extent_cmp);
	size_t kept = 0;
	for (size_t i = 0; i < nall; i++)
		if (!kept || all[kept - 1].off != all[i].off)
			all[kept++] = all[i];
	*units = all;
	*n = kept;
	return 0;
}

/* Note IT failed (named once, on stderr) unless it already had. */
static void item_fail(struct warm *w, struct item *it, int err)
{
	pthread_mutex_lock(&w->lock);
	bool first = it->err == 0;
	if (first) {
		it->err = err;
		w->failures++;
	}
	pthread_mutex_unlock(&w->lock);
	if (first) {
		if (isatty(STDERR_FILENO))
			fprintf(stderr, "\r\033[K");
		fprintf(stderr, "tilefs: warm: %s: %s\n", it->path, failure_text(err));
	}
}

/* Open IT and find the units it still needs. */
static void plan_item(struct warm *w, struct item *it)
{
	struct extent *units = NULL;
	size_t n = 0;
	bool *missing = NULL;
	int err = cache_object_open(w->stack.cache, it->url, it->path, it->listed, false, &it->obj);

	if (!err)
		err = select_units(w, it, &units, &n);
	if (!err && !(missing = calloc(n ? n : 1, sizeof(*missing))))
		err = -ENOMEM;
	if (!err)
		err = cache_object_id(it->obj) < 0 ? -ENOTSUP :
		      cache_units_missing(w->stack.cache, it->obj, units, n, missing);
	if (err) {
		free(units);
		free(missing);
		item_fail(w, it, err);
		return;
	}
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		it->want += units[i].len;
		if (missing[i])
			units[kept++] = units[i];
		else
			it->cached += units[i].len;
	}
	free(missing);
	it->units = units;
	it->nunits = kept;
	if (cache_object_added(it->obj))
		it->opened = it->cached;	/* nothing was cached before this open */
}

static void *plan_worker(void *arg)
{
	struct warm *w = arg;
	for (;;) {
		pthread_mutex_lock(&w->lock);
		size_t i = w->next_item++;
		pthread_mutex_unlock(&w->lock);
		if (i >= w->n || atomic_load(&interrupted))
			return NULL;
		plan_item(w, &w->items[i]);
		pthread_mutex_lock(&w->lock);
		w->planned++;
		pthread_mutex_unlock(&w->lock);
	}
}

/* ---- fetching ---- */

/* Take the next chunk of missing units: *it and units [*first, *first+*n). */
static bool take_chunk(struct warm *w, struct item **it, size_t *first, size_t *n)
{
	pthread_mutex_lock(&w->lock);
	for (; w->next_item < w->n; w->next_item++) {
		struct item *x = &w->items[w->next_item];
		if (x->err || x->excluded || x->next_unit >= x->nunits)
			continue;
		uint64_t bytes = 0;
		size_t k = x->next_unit;
		while (k < x->nunits && (k == x->next_unit || bytes + x->units[k].len <= w->chunk)) {
			bytes += x->units[k].len;
			k++;
		}
		*it = x;
		*first = x->next_unit;
		*n = k - x->next_unit;
		x->next_unit = k;
		x->chunks_left++;
		pthread_mutex_unlock(&w->lock);
		return true;
	}
	pthread_mutex_unlock(&w->lock);
	return false;
}

static void *fetch_worker(void *arg)
{
	struct warm *w = arg;
	struct item *it;
	size_t first, n;

	while (!atomic_load(&interrupted) && take_chunk(w, &it, &first, &n)) {
		struct cache_warm_counts got = { 0 };
		int err = cache_warm(w->stack.cache, it->obj, it->units + first, n, &got);
		if (err)
			item_fail(w, it, err);
		pthread_mutex_lock(&w->lock);
		w->fetched += got.fetched;
		w->cached += got.cached;
		w->elsewhere += got.elsewhere;
		w->done += got.fetched + got.cached + got.elsewhere;
		bool done = --it->chunks_left == 0 && it->next_unit >= it->nunits && !it->err;
		if (done)
			w->files_done++;
		pthread_mutex_unlock(&w->lock);
		if (done)
			cache_object_seal(w->stack.cache, it->obj);
	}
	return NULL;
}

/*
 * Large GETs pay the origin's first-byte latency less often, but there
 * must be enough of them to keep every job busy: about two chunks per job,
 * from 1 to 16 MiB.
 */
static void choose_chunk(struct warm *w)
{
	uint64_t missing = 0;
	for (size_t i = 0; i < w->n; i++)
		if (!w->items[i].err && !w->items[i].excluded)
			missing += w->items[i].want - w->items[i].cached;
	w->chunk = missing / (2 * (uint64_t)w->o->jobs);
	if (w->chunk > CHUNK_MAX)
		w->chunk = CHUNK_MAX;
	if (w->chunk < CHUNK_MIN)
		w->chunk = CHUNK_MIN;
}

/* Run FN on --jobs threads until each returns. */
static int run_workers(struct warm *w, void *(*fn)(void *))
{
	long jobs = w->o->jobs;
	pthread_t *t = calloc((size_t)jobs, sizeof(*t));
	long started = 0;
	if (!t)
		return -ENOMEM;
	pthread_mutex_lock(&w->lock);
	w->next_item = 0;
	pthread_mutex_unlock(&w->lock);
	while (started < jobs && pthread_create(&t[started], NULL, fn, w) == 0)
		started++;
	for (long i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	return started ? 0 : -EAGAIN;
}

/* ---- progress ---- */

static void progress_line(struct warm *w, bool tty)
{
	char a[32], b[32], r[32];
	double s = seconds_since(&w->started);

	pthread_mutex_lock(&w->lock);
	if (w->planning) {
		fprintf(stderr, "%sreading headers: %zu of %zu files%s", tty ? "\r\033[K" : "",
			w->planned, w->n, tty ? "" : "\n");
	} else {
		double rate = s > 0 ? (double)w->fetched / s : 0;
		uint64_t left = w->total > w->done ? w->total - w->done : 0;
		char eta[32] = "-";
		if (rate > 0) {
			unsigned long e = (unsigned long)((double)left / rate);
			snprintf(eta, sizeof(eta), "%lu:%02lu:%02lu", e / 3600, e / 60 % 60, e % 60);
		}
		fprintf(stderr, "%swarming: %zu of %zu files, %s of %s, %s/s, ETA %s%s",
			tty ? "\r\033[K" : "", w->files_done, w->n,
			human_bytes(w->done, a, sizeof(a)), human_bytes(w->total, b, sizeof(b)),
			human_bytes((uint64_t)rate, r, sizeof(r)), eta, tty ? "" : "\n");
	}
	pthread_mutex_unlock(&w->lock);
	fflush(stderr);
}

static void *progress_thread(void *arg)
{
	struct warm *w = arg;
	bool tty = isatty(STDERR_FILENO);
	int every = tty ? PROGRESS_TTY_S : PROGRESS_PLAIN_S;

	pthread_mutex_lock(&w->lock);
	while (!w->finished) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += every;
		if (pthread_cond_timedwait(&w->wake, &w->lock, &until) == 0 || w->finished)
			continue;
		pthread_mutex_unlock(&w->lock);
		progress_line(w, tty);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	if (tty)
		fprintf(stderr, "\r\033[K");
	return NULL;
}

/* ---- the command ---- */

/* Within --cache-size? Refuse, or with --partial leave out what does not fit. */
static int check_size(struct warm *w, uint64_t limit)
{
	uint64_t total = 0;
	char a[32], b[32], c[32];
	for (size_t i = 0; i < w->n; i++)
		if (!w->items[i].err)
			total += w->items[i].want;
	if (total <= limit)
		return 0;
	if (!w->o->partial) {
		fprintf(stderr, "tilefs: warm: the selection is %s but the cache may hold %s; "
			"give a larger --cache-size, select less, or add --partial to warm "
			"the files that fit\n", human_bytes(total, a, sizeof(a)),
			human_bytes(limit, b, sizeof(b)));
		return 1;
	}
	uint64_t kept = 0;
	size_t left_out = 0;
	for (size_t i = 0; i < w->n; i++) {
		struct item *it = &w->items[i];
		if (it->err)
			continue;
		if (kept + it->want <= limit)
			kept += it->want;
		else {
			it->excluded = true;
			left_out++;
		}
	}
	fprintf(stderr, "tilefs: warm: the selection is %s but the cache may hold %s: "
		"warming %s, leaving out %zu files (--partial)\n", human_bytes(total, a, sizeof(a)),
		human_bytes(limit, b, sizeof(b)), human_bytes(kept, c, sizeof(c)), left_out);
	return 0;
}

static void print_dry_run(struct warm *w)
{
	uint64_t fetch = 0, cached = 0;
	size_t files = 0;
	for (size_t i = 0; i < w->n; i++) {
		struct item *it = &w->items[i];
		if (it->err || it->excluded)
			continue;
		uint64_t missing = it->want - it->cached;
		printf("%s\t%" PRIu64 " bytes to fetch, %" PRIu64 " cached\n", it->path, missing,
		       it->cached);
		fetch += missing;
		cached += it->cached;
		files++;
	}
	char a[32], b[32];
	printf("dry run: %zu files, %" PRIu64 " bytes to fetch (%s), %" PRIu64
	       " bytes cached (%s)\n", files, fetch, human_bytes(fetch, a, sizeof(a)), cached,
	       human_bytes(cached, b, sizeof(b)));
}

static void print_summary(struct warm *w)
{
	char a[32], b[32], r[32];
	double s = seconds_since(&w->started);
	size_t files = 0, left_out = 0;
	uint64_t cached = w->cached + w->elsewhere, fetched = w->fetched;
	for (size_t i = 0; i < w->n; i++) {
		files += !w->items[i].excluded;
		left_out += w->items[i].excluded;
		cached += w->items[i].cached - w->items[i].opened;
		fetched += w->items[i].opened;
	}
	printf("warmed %zu of %zu files: %s fetched, %s already cached, %zu failed",
	       w->files_done, files, human_bytes(fetched, a, sizeof(a)),
	       human_bytes(cached, b, sizeof(b)), w->failures);
	if (left_out)
		printf(", %zu left out (--partial)", left_out);
	printf(", in %.1f s (%s/s)\n", s,
	       human_bytes(s > 0 ? (uint64_t)((double)fetched / s) : 0, r, sizeof(r)));
	if (atomic_load(&interrupted))
		printf("interrupted: run the same command again to fetch the rest\n");
}

static void warm_release(struct warm *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free(w->items[i].units);
		cache_object_unref(w->items[i].obj);
	}
	free(w->items);
	warm_list_release(&w->files);
	warm_order_release(&w->order);
	stack_release(&w->stack);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
}

int warm_main(int argc, char **argv)
{
	struct options o;
	struct warm w = { .o = &o };
	char err_text[1024] = "";
	int status = 1;

	if (options_parse(&o, OPTIONS_WARM, argc, argv, err_text, sizeof(err_text)) != 0 ||
	    (!o.help && parse_selection(&w, err_text, sizeof(err_text)) != 0)) {
		fprintf(stderr, "tilefs: %s\nTry 'tilefs warm --help'.\n", err_text);
		options_release(&o);
		return EXIT_USAGE;
	}
	if (o.help) {
		usage(stdout);
		options_release(&o);
		return 0;
	}
	if ((status = mount_lookup_options(&o, "warm")) != 0) {
		options_release(&o);
		return status;
	}
	status = 1;
	log_set_level(o.log_level);
	if (o.log_file && log_set_file(o.log_file) != 0) {
		fprintf(stderr, "tilefs: cannot write the log %s\n", o.log_file);
		options_release(&o);
		return 1;
	}
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.wake, NULL);
	clock_gettime(CLOCK_MONOTONIC, &w.started);

	int err = stack_init(&w.stack, &o, err_text, sizeof(err_text));
	if (err) {
		fprintf(stderr, "tilefs: %s\n%s", err_text,
			err == -EINVAL ? "Try 'tilefs warm --help'.\n" : "");
		status = err == -EINVAL ? EXIT_USAGE : 1;
		goto out;
	}
	if (options_make_cache_dir(o.cache_dir) != 0)
		goto out;
	struct stack_tuning tuning = {
		.connections = o.jobs,
		.max_request = CHUNK_MAX,
		.merge_gap = 0,			/* never a byte not selected */
		.readahead_max = 0,
		.prefetch = PREFETCH_NONE,
		.listing_ttl_s = 86400,
	};
	err = stack_start(&w.stack, &o, &tuning, err_text, sizeof(err_text));
	if (!err && o.from_file) {
		/* an order file (tilefs hint's format): its paths are the tree,
		   as a manifest's; its windows select per file */
		int fd;
		err = warm_order_load(o.from_file, &w.order, &fd, err_text, sizeof(err_text));
		if (!err) {
			char manifest[64];
			snprintf(manifest, sizeof(manifest), "/proc/self/fd/%d", fd);
			err = ns_load_manifest(w.stack.ns, manifest, err_text, sizeof(err_text));
			close(fd);
			char *at = err ? strstr(err_text, manifest) : NULL;
			if (at) {
				char rest[1024];
				snprintf(rest, sizeof(rest), "%s", at + strlen(manifest));
				snprintf(at, sizeof(err_text) - (size_t)(at - err_text), "%s%s",
					 o.from_file, rest);
			}
		}
	}
	if (err) {
		fprintf(stderr, "tilefs: %s\n", err_text[0] ? err_text : strerror(-err));
		goto out;
	}

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (list_files(&w) != 0)
		goto out;
	pthread_t progress;
	w.planning = true;
	bool progress_on = pthread_create(&progress, NULL, progress_thread, &w) == 0;
	run_workers(&w, plan_worker);
	pthread_mutex_lock(&w.lock);
	w.planning = false;
	pthread_mutex_unlock(&w.lock);

	int refused = atomic_load(&interrupted) ? 0 : check_size(&w, w.stack.cache_size);
	if (!refused && !o.dry_run && !atomic_load(&interrupted)) {
		pthread_mutex_lock(&w.lock);
		for (size_t i = 0; i < w.n; i++) {
			struct item *it = &w.items[i];
			if (it->err || it->excluded)
				continue;
			w.total += it->want;
			w.done += it->cached;
			if (it->nunits == 0)
				w.files_done++;		/* nothing to fetch */
		}
		pthread_mutex_unlock(&w.lock);
		choose_chunk(&w);
		run_workers(&w, fetch_worker);
		/* the files cached whole before (fetch_worker() seals the others) */
		for (size_t i = 0; i < w.n && !atomic_load(&interrupted); i++)
			if (!w.items[i].err && !w.items[i].excluded && w.items[i].nunits == 0)
				cache_object_seal(w.stack.cache, w.items[i].obj);
	}
	if (progress_on) {
		pthread_mutex_lock(&w.lock);
		w.finished = true;
		pthread_cond_signal(&w.wake);
		pthread_mutex_unlock(&w.lock);
		pthread_join(progress, NULL);
	}
	if (o.dry_run && !atomic_load(&interrupted))
		print_dry_run(&w);
	else if (!refused)
		print_summary(&w);
	status = atomic_load(&interrupted) ? EXIT_INTERRUPTED : refused || w.failures ? 1 : 0;
out:
	warm_release(&w);
	options_release(&o);
	return status;
}
