/*
 * validate.c - the version a file of the tree has pinned through the
 * cache: whether it is still current (checked within the ttl, or named by
 * a listing younger than it), and asking the cache for the current one
 * when it is not (cache_object_open(), a HEAD or a conditional request).
 * Calls tree.c only; namespace.c and ahead.c call it.
 */
#include "cache/namespace/namespace.h"
#include "cache/namespace/namespace_int.h"
#include "cache/engine/cache.h"
#include "cache/origin/providers/provider.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What N's last listing said of N; its etag points into N (ns->lock
 * held while it is used). */
static struct cache_listed listed_of(const struct ns_node *n)
{
	return (struct cache_listed){ n->listed_etag ? n->listed_etag : "", n->listed_size,
				      n->listed_mtime };
}

/* ns->lock held */
bool ns_listing_disagrees(const struct ns_node *n)
{
	if (n->listed_size >= 0 && (uint64_t)n->listed_size != cache_object_size(n->obj))
		return true;
	struct cache_listed l = listed_of(n);
	return n->listed_etag && !cache_object_listed(n->obj, &l);
}

/* Is the listing that showed N younger than the ttl (its directory's, or
 * the deep listing that stopped within it)? ns->lock held. */
static bool listing_fresh(const struct namespace *ns, const struct ns_node *n)
{
	const struct ns_node *dir = n->parent;
	return dir && (dir->listed || dir->cut) && time(NULL) - dir->listed_at < ns->ttl_s;
}

/* ns->lock held */
bool ns_listed_copy(const struct namespace *ns, const struct ns_node *n, struct cache_listed *out,
		    char *etag)
{
	if (!listing_fresh(ns, n))
		return false;
	*out = listed_of(n);
	snprintf(etag, 128, "%s", out->etag);
	out->etag = etag;
	return true;
}

/* Is N's pinned version still current: checked within the ttl, or named
 * by a listing younger than it? ns->lock held. */
static bool pinned_current(const struct namespace *ns, const struct ns_node *n)
{
	if (!n->obj || cache_object_stale(n->obj) || n->outdated)
		return false;
	if (time(NULL) - n->validated_at < ns->ttl_s)
		return true;
	struct cache_listed l = listed_of(n);
	return listing_fresh(ns, n) && cache_object_listed(n->obj, &l);
}

/* ns->lock held (dropped while asking), and a hold on N */
int ns_file_validate_held(struct namespace *ns, struct ns_node *n, bool background,
			  bool *unchanged)
{
	for (;;) {
		if (pinned_current(ns, n)) {
			*unchanged = true;
			return 0;
		}
		if (!n->busy)
			break;
		pthread_cond_wait(&ns->done, &ns->lock);
	}
	n->busy = true;
	struct cache_listed listed;
	char etag[128];
	bool fresh = ns_listed_copy(ns, n, &listed, etag);
	char *path = ns_node_path(n);
	char *url = n->url ? strdup(n->url) : path ? source_object_url(ns->src, path) : NULL;
	pthread_mutex_unlock(&ns->lock);

	struct cache_object *obj = NULL;
	int err = url ? cache_object_open(ns->cache, url, path, fresh ? &listed : NULL, background,
					  &obj) : -ENOMEM;
	free(url);
	free(path);

	pthread_mutex_lock(&ns->lock);
	if (!err) {
		*unchanged = cache_object_same(n->obj, obj);
		if (!*unchanged && n->obj && cache_object_shared(n->obj)) {
			cache_object_unref(n->older);	/* the oldest: readers keep their refs */
			n->older = n->obj;		/* still open somewhere */
		} else {
			cache_object_unref(n->obj);
		}
		n->obj = obj;
		n->validated_at = time(NULL);
		n->outdated = false;
	}
	n->busy = false;
	pthread_cond_broadcast(&ns->done);
	return err;
}

/* ns->lock held (dropped while asking) */
int ns_file_validate(struct namespace *ns, struct ns_node *n, bool background, bool *unchanged)
{
	ns_node_hold(n, 1);
	int err = ns_file_validate_held(ns, n, background, unchanged);
	ns_node_hold(n, -1);
	return err;
}
