/*
 * ahead.c - work ahead of the readers (ns_revalidate_ahead() of
 * namespace.h): the queue of what listings showed that readers will
 * likely want, the threads that do it in the background, and their start
 * and stop. Three kinds of node are queued:
 *  - files a listing showed that may have a version cached: checked as
 *    their first open would, so after a remount readers do not wait a
 *    round trip per file;
 *  - directories never listed beside one a reader entered (a tree walked
 *    by find or os.walk, or a data set of a folder per sample read by a
 *    DataLoader): listed, many at once, so a walk does not wait a round
 *    trip per folder. A listing ahead queues its files, not the
 *    directories beside it: only a reader's walk spreads further, so what
 *    is listed ahead stays within a level of where readers are;
 *  - the other files of a sample's directory (a patch's bands: a folder
 *    below the root of at most AHEAD_SIBLINGS small files and nothing
 *    else) when a reader opens one of them: opened at once, fetched whole
 *    if not cached, so the reader's next opens find them on their way or
 *    here.
 *    A reader of one band of each patch pays for the others: at most
 *    AHEAD_SIBLINGS - 1 files of cache_whole_size() each a directory.
 *    They go in a queue of their own (soon_head), taken first: a reader
 *    waits for them now.
 * Each node is queued once a queue (ahead_done, soon_done), at most
 * AHEAD_MAX at once in the first.
 * Above listing.c, validate.c and tree.c, whose functions it calls;
 * namespace.c queues after each fresh listing (ns_ahead_queue()).
 *
 * DESIGN: the queue (ns->ahead_head .. ahead_tail) and the flag that stops
 * the threads live in struct namespace under ns->lock; the threads wait on
 * ns->ahead_work. Each queued file carries a hold (ns_node_hold()), so a
 * later listing that retires it cannot free it while queued: the thread
 * that takes it gives the hold back, and ns_stop_ahead() gives back those
 * of files left in the queue. A thread checks a file as its first open
 * would (ns_file_validate_held()), with the lock dropped while it asks.
 */
#include "cache/namespace/namespace.h"
#include "cache/namespace/namespace_int.h"
#include "cache/engine/cache.h"
#include "cache/base/log.h"
#include "cache/origin/providers/provider.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define AHEAD_MAX 10000		/* nodes queued at once */
#define AHEAD_SIBLINGS 16	/* entries of a directory that is a sample */

/* Queue N (held until a thread takes it); ns->lock held. */
static void queue(struct namespace *ns, struct ns_node *n)
{
	n->ahead_done = true;
	ns_node_hold(n, 1);
	if (ns->ahead_tail)
		ns->ahead_tail->ahead_next = n;
	else
		ns->ahead_head = n;
	ns->ahead_tail = n;
	ns->ahead_len++;
	pthread_cond_signal(&ns->ahead_work);
}

void ns_ahead_queue(struct namespace *ns, struct ns_node *dir, bool walked)
{
	if (ns->ahead_stopping || !ns->nahead || ns->ttl_s == 0)
		return;	/* (ns_stop_ahead() clears nahead only once stopping) */
	for (size_t i = 0; i < dir->nchildren && ns->ahead_len < AHEAD_MAX; i++) {
		struct ns_node *n = dir->children[i];
		if (!n->is_dir && !n->ahead_done && !n->obj && !n->listed_etag)
			queue(ns, n);
	}
	struct ns_node *up = walked ? dir->parent : NULL;
	for (size_t i = 0; up && i < up->nchildren && ns->ahead_len < AHEAD_MAX; i++) {
		struct ns_node *n = up->children[i];
		if (n->is_dir && !n->ahead_done && !n->listed && !n->busy && !n->fixed)
			queue(ns, n);
	}
}

void ns_ahead_siblings(struct namespace *ns, struct ns_node *file)
{
	struct ns_node *dir = file->parent;
	if (ns->ahead_stopping || !ns->nahead || ns->ttl_s == 0 || !dir || dir == ns->root ||
	    dir->siblings_done || !dir->listed || dir->nchildren > AHEAD_SIBLINGS)
		return;
	dir->siblings_done = true;
	uint64_t whole = cache_whole_size(ns->cache);
	for (size_t i = 0; i < dir->nchildren; i++) {	/* a sample: small files only */
		const struct ns_node *n = dir->children[i];
		if (n->is_dir || n->listed_size < 0 || (uint64_t)n->listed_size > whole)
			return;
	}
	for (size_t i = 0; i < dir->nchildren; i++) {
		struct ns_node *n = dir->children[i];
		if (n == file || n->obj || n->soon_done)
			continue;
		n->soon_done = true;
		ns_node_hold(n, 1);
		if (ns->soon_tail)
			ns->soon_tail->soon_next = n;
		else
			ns->soon_head = n;
		ns->soon_tail = n;
		pthread_cond_signal(&ns->ahead_work);
	}
}

/* Open N, queued and held, as its reader's open would, unless one did
 * meanwhile; ns->lock held (dropped while asking). */
static void ahead_open(struct namespace *ns, struct ns_node *n)
{
	bool unchanged;
	if (!n->obj && !n->busy && ns_in_tree(n) && ns_file_validate_held(ns, n, &unchanged) != 0)
		log_debug("open ahead of %s failed; its open will ask again", n->name);
}

/* List the directory N, queued and held, unless a reader did meanwhile;
 * ns->lock held (dropped while listing). */
static void ahead_list(struct namespace *ns, struct ns_node *n)
{
	bool fresh = false;
	if (n->listed || n->busy || !ns_in_tree(n))
		return;
	if (ns_dir_refresh(ns, n, &fresh) == 0 && fresh)
		ns_ahead_queue(ns, n, false);
}

/* Revalidate N, queued and held, if a version of it is cached and none is
 * pinned yet; ns->lock held (dropped while asking). */
static void ahead_one(struct namespace *ns, struct ns_node *n)
{
	if (n->obj || n->busy || !ns_in_tree(n))
		return;
	char *path = ns_node_path(n);
	char *url = n->url ? strdup(n->url) : path ? source_object_url(ns->src, path) : NULL;
	free(path);
	if (!url)
		return;
	pthread_mutex_unlock(&ns->lock);
	bool known = cache_object_known(ns->cache, url);
	free(url);
	pthread_mutex_lock(&ns->lock);
	bool unchanged;
	if (known && !n->obj && ns_in_tree(n) && ns_file_validate_held(ns, n, &unchanged) != 0)
		log_debug("revalidation ahead of %s failed; its open will ask again", n->name);
}

static void *ahead_thread(void *arg)
{
	struct namespace *ns = arg;
	pthread_mutex_lock(&ns->lock);
	for (;;) {
		while (!ns->soon_head && !ns->ahead_head && !ns->ahead_stopping)
			pthread_cond_wait(&ns->ahead_work, &ns->lock);
		if (ns->ahead_stopping)
			break;
		struct ns_node *n = ns->soon_head;
		if (n) {
			ns->soon_head = n->soon_next;
			if (!ns->soon_head)
				ns->soon_tail = NULL;
			n->soon_next = NULL;
			ahead_open(ns, n);
		} else {
			n = ns->ahead_head;
			ns->ahead_head = n->ahead_next;
			if (!ns->ahead_head)
				ns->ahead_tail = NULL;
			ns->ahead_len--;
			n->ahead_next = NULL;
			if (n->is_dir)
				ahead_list(ns, n);
			else
				ahead_one(ns, n);
		}
		ns_node_hold(n, -1);
		if (!ns->ahead_head && !ns->soon_head)
			ns_names_shed(ns);	/* what the queues kept in use */
		ns_reap(ns);
	}
	pthread_mutex_unlock(&ns->lock);
	return NULL;
}

int ns_revalidate_ahead(struct namespace *ns, int threads)
{
	if (threads <= 0 || !ns->cache)
		return 0;
	ns->ahead = calloc((size_t)threads, sizeof(*ns->ahead));
	if (!ns->ahead)
		return -ENOMEM;
	for (; ns->nahead < threads; ns->nahead++)
		if (pthread_create(&ns->ahead[ns->nahead], NULL, ahead_thread, ns) != 0)
			break;
		else
			pthread_setname_np(ns->ahead[ns->nahead], "tilefs-ahead");
	return ns->nahead ? 0 : -EAGAIN;
}

void ns_stop_ahead(struct namespace *ns)
{
	pthread_mutex_lock(&ns->lock);
	ns->ahead_stopping = true;
	pthread_cond_broadcast(&ns->ahead_work);
	pthread_mutex_unlock(&ns->lock);
	for (int i = 0; i < ns->nahead; i++)
		pthread_join(ns->ahead[i], NULL);
	free(ns->ahead);
	ns->ahead = NULL;
	ns->nahead = 0;
	pthread_mutex_lock(&ns->lock);
	while (ns->ahead_head) {
		struct ns_node *n = ns->ahead_head;
		ns->ahead_head = n->ahead_next;
		n->ahead_next = NULL;
		ns_node_hold(n, -1);
	}
	ns->ahead_tail = NULL;
	ns->ahead_len = 0;
	while (ns->soon_head) {
		struct ns_node *n = ns->soon_head;
		ns->soon_head = n->soon_next;
		n->soon_next = NULL;
		ns_node_hold(n, -1);
	}
	ns->soon_tail = NULL;
	ns_reap(ns);
	pthread_mutex_unlock(&ns->lock);
}
