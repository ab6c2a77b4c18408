/*
 * warm_list.c - see warm_list.h. Globs are listed from the last directory
 * before their first wildcard, a level of the tree at a time (its
 * directories at once), through the namespace (so with a mount's listing
 * cache and --from-file manifests alike).
 */
#include "tools/warm_list.h"
#include "cache/namespace/namespace.h"
#include "cache/origin/providers/provider.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WALK_THREADS 16			/* directories listed at once */

int warm_shard_parse(const char *text, struct warm_shard *out, char *err, size_t err_size)
{
	long i, n;
	char tail;
	if (sscanf(text, "%ld/%ld%c", &i, &n, &tail) != 2 || n < 1 || i < 1 || i > n ||
	    n > 1000000) {
		snprintf(err, err_size, "--shard: '%s' is not I/N with 1 <= I <= N "
			 "(e.g. 1/4 .. 4/4)", text);
		return -EINVAL;
	}
	out->index = i;
	out->count = n;
	return 0;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* Deterministic shard of PATH: FNV-1a, so every machine agrees. */
static bool in_shard(const struct warm_shard *shard, const char *path)
{
	if (!shard->count)
		return true;
	uint64_t h = 1469598103934665603ull;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (long)(h % (uint64_t)shard->count) == shard->index - 1;
}

/* What one listing adds to. */
struct listing {
	struct warm_list *list;		/* lock */
	struct namespace *ns;
	const struct warm_shard *shard;
	pthread_mutex_t lock;
};

static int file_add_locked(struct listing *g, const char *path)
{
	struct warm_list *l = g->list;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct warm_file *grown = realloc(l->files, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		l->files = grown;
		l->cap = cap;
	}
	struct warm_file *f = &l->files[l->n];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);		/* its URL once listing is over (ns->lock) */
	if (!f->path)
		return -ENOMEM;
	l->n++;
	return 0;
}

static int file_add(struct listing *g, const char *path)
{
	if (!in_shard(g->shard, path))
		return 0;
	pthread_mutex_lock(&g->lock);
	int err = file_add_locked(g, path);
	pthread_mutex_unlock(&g->lock);
	return err;
}

struct walk {
	struct listing *g;
	const char *dir;		/* being listed, "" for the root */
	const char *pattern;		/* NULL: take every file */
	char **subdirs;
	size_t nsubdirs;
	int err;
};

static int walk_entry(void *arg, const char *name, const struct ns_attr *attr)
{
	struct walk *k = arg;
	char path[4096];
	snprintf(path, sizeof(path), "%s%s%s", k->dir, k->dir[0] ? "/" : "", name);
	if (attr->is_dir) {
		char **grown = realloc(k->subdirs, (k->nsubdirs + 1) * sizeof(*grown));
		char *copy = strdup(path);
		if (!grown || !copy) {
			free(copy);
			if (grown)
				k->subdirs = grown;
			k->err = -ENOMEM;
			return 1;
		}
		k->subdirs = grown;
		k->subdirs[k->nsubdirs++] = copy;
		return 0;
	}
	if (!k->pattern || fnmatch(k->pattern, path, FNM_PATHNAME) == 0)
		k->err = file_add(k->g, path);
	return k->err != 0;
}

/* One level of the tree, its directories listed by up to WALK_THREADS
 * threads at once. */
struct level {
	struct listing *g;
	const char *pattern;
	char **dirs;
	size_t n;
	pthread_mutex_t lock;
	size_t next;			/* lock, like what follows */
	char **sub;			/* the next level's directories */
	size_t nsub;
	int err;
};

static void dirs_free(char **dirs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(dirs[i]);
	free(dirs);
}

/* Move K's subdirectories to the next level (V->lock held). A directory
 * without any has no array of them (K->subdirs NULL): nothing to move. */
static int level_take(struct level *v, struct walk *k)
{
	if (!k->nsubdirs)
		return 0;
	char **grown = realloc(v->sub, (v->nsub + k->nsubdirs + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	v->sub = grown;
	memcpy(v->sub + v->nsub, k->subdirs, k->nsubdirs * sizeof(*grown));
	v->nsub += k->nsubdirs;
	k->nsubdirs = 0;
	return 0;
}

static void *level_worker(void *arg)
{
	struct level *v = arg;

	for (;;) {
		pthread_mutex_lock(&v->lock);
		size_t i = v->next++;
		bool stop = v->err || i >= v->n;
		pthread_mutex_unlock(&v->lock);
		if (stop)
			return NULL;
		struct walk k = { .g = v->g, .dir = v->dirs[i], .pattern = v->pattern };
		int err = ns_readdir(v->g->ns, k.dir, 0, walk_entry, &k);
		if (!err)
			err = k.err;
		pthread_mutex_lock(&v->lock);
		if (!err)
			err = level_take(v, &k);
		if (err && !v->err)
			v->err = err;
		pthread_mutex_unlock(&v->lock);
		dirs_free(k.subdirs, k.nsubdirs);	/* those not taken */
	}
}

/*
 * Add the files under DIR (matching PATTERN, if any), a level at a time:
 * a listing is a request, and one directory after the other a deep tree
 * would cost a round trip each.
 */
static int walk(struct listing *g, const char *dir, const char *pattern)
{
	char **dirs = malloc(sizeof(*dirs));
	size_t n = 1;
	int err = 0;

	if (!dirs || !(dirs[0] = strdup(dir))) {
		free(dirs);
		return -ENOMEM;
	}
	while (n > 0 && !err) {
		struct level v = { .g = g, .pattern = pattern, .dirs = dirs, .n = n };
		pthread_t t[WALK_THREADS];
		size_t started = 0;
		pthread_mutex_init(&v.lock, NULL);
		while (n > 1 && started < WALK_THREADS && started < n &&
		       pthread_create(&t[started], NULL, level_worker, &v) == 0)
			started++;
		level_worker(&v);	/* this thread too (alone for one directory) */
		for (size_t i = 0; i < started; i++)
			pthread_join(t[i], NULL);
		pthread_mutex_destroy(&v.lock);
		dirs_free(dirs, n);
		err = v.err;
		dirs = v.sub;
		n = v.nsub;
	}
	dirs_free(dirs, n);	/* the level after an error */
	return err;
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct warm_file *)a)->path, ((const struct warm_file *)b)->path);
}

int warm_list_files(struct warm_list *l, struct namespace *ns, const struct source *src,
		    char *const *patterns, size_t npatterns, const struct warm_shard *shard)
{
	struct listing g = { .list = l, .ns = ns, .shard = shard,
			     .lock = PTHREAD_MUTEX_INITIALIZER };
	char msg[1024];
	const char *all = "";
	const char *const *pats = npatterns ? (const char *const *)patterns : &all;

	for (size_t i = 0; i < (npatterns ? npatterns : 1); i++) {
		const char *pat = pats[i];
		while (*pat == '/')
			pat++;
		size_t before = l->n;
		int err;
		if (has_glob(pat)) {
			/* list from the last directory before the first wildcard */
			char dir[4096];
			size_t lit = strcspn(pat, "*?[");
			snprintf(dir, sizeof(dir), "%.*s", (int)lit, pat);
			char *slash = strrchr(dir, '/');
			if (slash)
				*slash = '\0';
			else
				dir[0] = '\0';
			err = walk(&g, dir, pat);
		} else {
			struct ns_attr attr;
			char path[4096];
			snprintf(path, sizeof(path), "%s", pat);
			while (path[0] && path[strlen(path) - 1] == '/')
				path[strlen(path) - 1] = '\0';
			err = ns_getattr(ns, path, &attr);
			if (!err && attr.is_dir)
				err = walk(&g, path, NULL);
			else if (!err)
				err = file_add(&g, path);
		}
		if (err == -ENOENT || err == -ENOTDIR) {
			fprintf(stderr, "tilefs: warm: '%s': no such file or directory under %s\n",
				pat, src->display);
			return 1;
		}
		if (err) {
			ns_list_error(ns, err, NULL, msg, sizeof(msg));
			fprintf(stderr, "tilefs: %s\n", msg);
			return 1;
		}
		if (l->n == before && has_glob(pat) && !shard->count) {
			fprintf(stderr, "tilefs: warm: '%s' matches no file under %s\n", pat,
				src->display);
			return 1;
		}
	}
	/* a file two patterns name is warmed once */
	if (l->n)
		qsort(l->files, l->n, sizeof(*l->files), file_cmp);
	size_t kept = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (kept && strcmp(l->files[kept - 1].path, l->files[i].path) == 0) {
			free(l->files[i].path);
			free(l->files[i].url);
			continue;
		}
		l->files[kept++] = l->files[i];
	}
	l->n = kept;
	for (size_t i = 0; i < l->n; i++) {
		struct warm_file *f = &l->files[i];
		char etag[128];
		f->url = ns_url(ns, f->path, &f->listed, etag);
		f->listed.etag = f->url ? strdup(f->listed.etag) : NULL;
		if (!f->listed.etag)
			return 1;
	}
	return 0;
}

void warm_list_release(struct warm_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->files[i].path);
		free(l->files[i].url);
		free((char *)l->files[i].listed.etag);
	}
	free(l->files);
	memset(l, 0, sizeof(*l));
}

static int window_cmp(const void *a, const void *b)
{
	const struct warm_window *x = a, *y = b;
	return strcmp(x->path, y->path);
}

int warm_order_load(const char *path, struct warm_order *o, int *manifest_fd, char *err,
		    size_t err_size)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int rc = 0;

	memset(o, 0, sizeof(*o));
	*manifest_fd = -1;
	if (!f) {
		rc = -errno;
		snprintf(err, err_size, "cannot read the order %s: %s", path, strerror(errno));
		return rc;
	}
	int fd = memfd_create("tilefs-order", MFD_CLOEXEC);
	FILE *manifest = fd >= 0 ? fdopen(dup(fd), "we") : NULL;
	if (!manifest) {
		rc = -errno;
		snprintf(err, err_size, "cannot read the order %s: %s", path, strerror(errno));
		goto out;
	}
	for (ssize_t len; (len = getline(&line, &cap, f)) >= 0;) {
		struct hint_line l;
		char why[300];
		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len >= HINT_LINE_MAX || (size_t)len != strlen(line)) {
			snprintf(err, err_size, "%s line %u: %s", path, lineno,
				 len >= HINT_LINE_MAX ? "too long" : "a NUL byte");
			rc = -EINVAL;
			break;
		}
		int got = hint_line_parse(line, &l, why, sizeof(why));
		if (got < 0) {
			snprintf(err, err_size, "%s line %u: %s", path, lineno, why);
			rc = got;
			break;
		}
		if (got == 0) {
			fputc('\n', manifest);
			continue;
		}
		if (o->n == HINT_ENTRIES_MAX) {
			snprintf(err, err_size, "%s line %u: more than %d entries", path, lineno,
				 HINT_ENTRIES_MAX);
			rc = -EINVAL;
			break;
		}
		if (o->n == o->cap) {
			size_t grown = o->cap ? 2 * o->cap : 64;
			struct warm_window *v = realloc(o->v, grown * sizeof(*v));
			if (!v) {
				rc = -ENOMEM;
				snprintf(err, err_size, "out of memory");
				break;
			}
			o->v = v;
			o->cap = grown;
		}
		/* the manifest's relative paths take no "./" */
		while (l.path[0] == '.' && l.path[1] == '/')
			l.path += 2;
		struct warm_window *wnd = &o->v[o->n];
		*wnd = (struct warm_window){ .path = strdup(l.path), .whole = !l.window,
					     .x = l.x, .y = l.y, .w = l.w, .h = l.h };
		if (!wnd->path) {
			rc = -ENOMEM;
			snprintf(err, err_size, "out of memory");
			break;
		}
		o->n++;
		fprintf(manifest, "%s\n", l.path);
	}
	if (!rc && ferror(f)) {
		rc = -EIO;
		snprintf(err, err_size, "cannot read the order %s", path);
	}
	if (fclose(manifest) != 0 && !rc) {
		rc = -EIO;
		snprintf(err, err_size, "cannot copy the order %s", path);
	}
	if (!rc)
		qsort(o->v, o->n, sizeof(*o->v), window_cmp);
out:
	free(line);
	fclose(f);
	if (rc) {
		if (fd >= 0)
			close(fd);
		warm_order_release(o);
		return rc;
	}
	*manifest_fd = fd;
	return 0;
}

void warm_order_find(const struct warm_order *o, const char *path, size_t *first, size_t *n)
{
	size_t lo = 0, hi = o->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(o->v[mid].path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	for (hi = lo; hi < o->n && strcmp(o->v[hi].path, path) == 0; hi++)
		;
	*n = hi - lo;
}

void warm_order_release(struct warm_order *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i].path);
	free(o->v);
	memset(o, 0, sizeof(*o));
}
