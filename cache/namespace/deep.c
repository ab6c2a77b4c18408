/*
 * deep.c - a directory's subtree from one listing of every key below it
 * (source_lists_deep(): a bucket listed without a delimiter), so a tree of
 * many folders is listed in a page per thousand names instead of a request
 * per folder, and with the ETags that vouch for the cached versions of its
 * files (cache_object_open()). Built detached, with no lock; listing.c
 * puts it in the tree. Above tree.c; listing.c calls it.
 *
 * A deep listing stops after the pages its caller allows (listing.c: fewer
 * for a listing made ahead of the readers) or half the bound on names.
 * The keys it has then are all those before the last one, in the store's
 * order, so each folder it saw is whole except the last key's folder and
 * that folder's ancestors: those are left to their own listings, the
 * rest counts as listed. Those left are cut: a lookup in one does not
 * wait for its whole listing (listing.c). Those of them that hold folders
 * are wide too: the keys a folder of each held, as far as listed, sizes
 * the runs its folders are listed in (listing.c).
 */
#include "cache/namespace/namespace_int.h"
#include "cache/namespace/namespace.h"
#include "cache/base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct deep_entry {
	char *path;
	bool is_dir;
	int64_t size;
	char *etag;			/* NULL: none listed */
	time_t mtime;
};

struct deep_list {
	struct deep_entry *v;
	size_t n, cap, max;
};

static int deep_add(void *arg, const struct listing_entry *e)
{
	struct deep_list *l = arg;
	if (l->n >= l->max)
		return -EFBIG;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct deep_entry *grown = realloc(l->v, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		l->v = grown;
		l->cap = cap;
	}
	struct deep_entry *d = &l->v[l->n];
	*d = (struct deep_entry){ strdup(e->name), e->is_dir, e->size,
				  e->etag[0] ? strdup(e->etag) : NULL, e->mtime };
	if (!d->path || (e->etag[0] && !d->etag)) {
		free(d->path);
		free(d->etag);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

/* Paths in tree order: part by part, each part as strcmp() orders names
 * (so every folder's names come sorted, each folder before what follows
 * it at its level) */
static int tree_order(const void *a, const void *b)
{
	const unsigned char *p = (const unsigned char *)((const struct deep_entry *)a)->path;
	const unsigned char *q = (const unsigned char *)((const struct deep_entry *)b)->path;
	for (; *p && *p == *q; p++, q++)
		;
	int x = *p == '/' ? 1 : *p ? *p + 1 : 0;	/* the end of a part first */
	int y = *q == '/' ? 1 : *q ? *q + 1 : 0;
	return x - y;
}

/* The child NAME of DIR, made at the end of its children if not there
 * (they come in order): a directory when IS_DIR. NULL when a node of the
 * other kind holds the name (the first one listed stays) or memory ran
 * out. */
static struct ns_node *child(struct namespace *ns, struct ns_deep *out, struct ns_node *dir,
			     const char *name, bool is_dir)
{
	struct ns_node *last = dir->nchildren ? dir->children[dir->nchildren - 1] : NULL;
	if (last && strcmp(last->name, name) == 0)
		return last->is_dir == is_dir ? last : NULL;
	struct ns_node *n = ns_node_new(ns, name, is_dir, dir);
	if (!n)
		return NULL;
	if (ns_child_insert(dir, n, dir->nchildren) != 0) {
		ns_node_free(ns, n);
		return NULL;
	}
	if (is_dir) {
		struct ns_node **grown = realloc(out->dirs, (out->ndirs + 1) * sizeof(*grown));
		if (!grown)
			return n;	/* left to its own listing */
		out->dirs = grown;
		out->dirs[out->ndirs++] = n;
	}
	return n;
}

/* Put entry E under OUT->top, with the folders on its path. */
static int place(struct namespace *ns, struct ns_deep *out, struct deep_entry *e)
{
	struct ns_node *dir = out->top;
	for (char *part = e->path;;) {
		char *slash = strchr(part, '/');
		if (slash)
			*slash = '\0';
		struct ns_node *n = child(ns, out, dir, part, slash || e->is_dir);
		if (slash)
			*slash = '/';
		if (!n)
			return 0;	/* a name both a file and a folder: skipped */
		if (!slash) {
			if (!n->is_dir) {
				n->listed_size = e->size;
				n->listed_mtime = e->mtime;
				n->listed_etag = e->etag;
				e->etag = NULL;
			}
			return 0;
		}
		dir = n;
		part = slash + 1;
	}
}

/* The files at any depth below N. */
static size_t files_below(const struct ns_node *n)
{
	size_t files = 0;
	for (size_t i = 0; i < n->nchildren; i++)
		files += n->children[i]->is_dir ? files_below(n->children[i]) : 1;
	return files;
}

/* The keys a folder of N held, on average, as far as listed (at least 1;
 * 0 if N has no folder). */
static uint32_t keys_a_folder(const struct ns_node *n)
{
	size_t dirs = 0;
	for (size_t i = 0; i < n->nchildren; i++)
		dirs += n->children[i]->is_dir;
	if (!dirs)
		return 0;
	size_t keys = files_below(n) / dirs;
	return keys < 1 ? 1 : keys > UINT32_MAX ? UINT32_MAX : (uint32_t)keys;
}

void ns_deep_free(struct namespace *ns, struct ns_deep *d)
{
	if (d->top)
		ns_node_free(ns, d->top);
	free(d->dirs);
	*d = (struct ns_deep){ 0 };
}

int ns_deep_fetch(struct namespace *ns, const char *dir_path, const char *names, int pages,
		  bool ahead, struct ns_deep *out)
{
	struct deep_list l = { .max = ns->max_names / 2 };
	*out = (struct ns_deep){ 0 };
	names = names ? names : "";
	struct ns_pages p = { .deep = true, .names = names, .background = ahead,
			      .max_pages = pages, .add = deep_add, .arg = &l };
	int err = ns_pages_fetch(ns, dir_path, &p);
	if (err && err != -E2BIG && err != -EFBIG)	/* the first ones, on a bound */
		goto out;
	bool whole = !err;
	err = 0;
	char *last = l.n ? strdup(l.v[l.n - 1].path) : NULL;	/* in the store's order */
	if (l.n && !last) {
		err = -ENOMEM;
		goto out;
	}
	qsort(l.v, l.n, sizeof(*l.v), tree_order);
	out->top = ns_node_new(ns, "", true, NULL);
	err = out->top ? 0 : -ENOMEM;
	for (size_t i = 0; i < l.n && !err; i++)
		err = place(ns, out, &l.v[i]);
	if (!err && !whole && last) {
		/* the last key's folders may have more keys after it: cut,
		 * and wide if they hold folders */
		struct ns_node *dir = out->top;
		time_t now = time(NULL);
		for (char *part = last, *slash;; part = slash + 1) {
			dir->keys_per_dir = keys_a_folder(dir);
			dir->cut = true;
			dir->listed_at = now;
			if (!(slash = strchr(part, '/')))
				break;
			*slash = '\0';
			if (!(dir = ns_child_find(dir, part, NULL)))
				break;
			for (size_t i = 0; i < out->ndirs; i++)
				if (out->dirs[i] == dir)
					out->dirs[i] = NULL;
		}
	}
	out->whole = whole;
	free(last);
	log_debug("listed /%s%s%s%s deep: %zu names%s", dir_path, dir_path[0] && names[0] ? "/" : "",
		  names, names[0] ? "*" : "", l.n, whole ? "" : " (the first ones)");
out:
	for (size_t i = 0; i < l.n; i++) {
		free(l.v[i].path);
		free(l.v[i].etag);
	}
	free(l.v);
	if (err)
		ns_deep_free(ns, out);
	return err;
}
