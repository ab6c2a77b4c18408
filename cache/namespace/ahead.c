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
 *    They go in a queue of their own (NS_SOON), taken first: a reader
 *    waits for them now.
 * Each node is queued once a queue (queued[]), at most AHEAD_MAX at once
 * in NS_AHEAD. Files (opens and checks, sent as a reader's open would)
 * take at most half the threads, so that readers find connections for
 * their own; the others list folders, in background requests that the
 * HTTP client starts on the connections readers leave idle (http.h), as
 * many at once as the round trip asks for a walk to go at its pace.
 * Above listing.c, validate.c and tree.c, whose functions it calls;
 * namespace.c queues after each fresh listing (ns_ahead_queue()).
 *
 * DESIGN: the queues (ns->queues[]) and the flag that stops
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

/* Put N in queue K, held until a thread takes it; ns->lock held. */
static void queue(struct namespace *ns, enum ns_queue_kind k, struct ns_node *n)
{
	struct ns_queue *q = &ns->queues[k];
	n->queued[k] = true;
	ns_node_hold(n, 1);
	if (q->tail)
		q->tail->queue_next[k] = n;
	else
		q->head = n;
	q->tail = n;
	q->len++;
	pthread_cond_signal(&ns->ahead_work);
}

/* The first node of queue K, taken out (its hold is the caller's); NULL
 * if none. ns->lock held. */
static struct ns_node *unqueue(struct namespace *ns, enum ns_queue_kind k)
{
	struct ns_queue *q = &ns->queues[k];
	struct ns_node *n = q->head;
	if (!n)
		return NULL;
	q->head = n->queue_next[k];
	if (!q->head)
		q->tail = NULL;
	q->len--;
	n->queue_next[k] = NULL;
	return n;
}

/* Queue DIR's folders never listed, to be listed ahead; ns->lock held. */
static void queue_folders(struct namespace *ns, struct ns_node *dir)
{
	size_t *len = &ns->queues[NS_AHEAD].len;
	for (size_t i = 0; i < dir->nchildren && *len < AHEAD_MAX; i++) {
		struct ns_node *n = dir->children[i];
		if (n->is_dir && !n->queued[NS_AHEAD] && !n->listed && !n->busy && !n->fixed)
			queue(ns, NS_AHEAD, n);
	}
}

void ns_ahead_queue(struct namespace *ns, struct ns_node *dir, bool walked)
{
	if (ns->ahead_stopping || !ns->nahead || ns->ttl_s == 0)
		return;	/* (ns_stop_ahead() clears nahead only once stopping) */
	size_t *len = &ns->queues[NS_AHEAD].len;
	for (size_t i = 0; i < dir->nchildren && *len < AHEAD_MAX; i++) {
		struct ns_node *n = dir->children[i];
		if (!n->is_dir && !n->queued[NS_AHEAD] && !n->obj && !n->listed_etag)
			queue(ns, NS_AHEAD, n);
	}
	struct ns_node *up = walked ? dir->parent : NULL;
	if (up && up->cut && !up->listed)
		up->entered = true;	/* the rest of them, once it is listed whole */
	if (up)
		queue_folders(ns, up);
}

void ns_ahead_relist(struct namespace *ns, struct ns_node *dir)
{
	if (!ns->ahead_stopping && ns->nahead && !dir->queued[NS_AHEAD] && !dir->busy)
		queue(ns, NS_AHEAD, dir);
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
		if (n != file && !n->obj && !n->queued[NS_SOON])
			queue(ns, NS_SOON, n);
	}
}

/* Open N, queued and held, as its reader's open would, unless one did
 * meanwhile; ns->lock held (dropped while asking). */
static void ahead_open(struct namespace *ns, struct ns_node *n)
{
	bool unchanged;
	if (!n->obj && !n->busy && ns_in_tree(n) &&
	    ns_file_validate_held(ns, n, false, &unchanged) != 0)
		log_debug("open ahead of %s failed; its open will ask again", n->name);
}

/* List the directory N, queued and held, unless a reader did meanwhile;
 * ns->lock held (dropped while listing). */
static void ahead_list(struct namespace *ns, struct ns_node *n)
{
	bool fresh = false;
	if (ns_dir_fresh(ns, n) || n->busy || !ns_in_tree(n))
		return;
	if (n->parent && n->parent->keys_per_dir && !n->nchildren) {
		/* with the folders after it, in one listing */
		if (ns_dir_list_run(ns, n) != 0)
			log_debug("listing ahead of a run from %s failed; its readers will list it",
				  n->name);
		return;
	}
	if (ns_dir_refresh(ns, n, true, &fresh) != 0 || !fresh)
		return;
	ns_ahead_queue(ns, n, false);
	if (n->entered && n->listed) {
		n->entered = false;	/* as a reader's walk into one of them */
		queue_folders(ns, n);
	}
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
	if (known && !n->obj && ns_in_tree(n) &&
	    ns_file_validate_held(ns, n, false, &unchanged) != 0)
		log_debug("revalidation ahead of %s failed; its open will ask again", n->name);
}

/* The next node a thread may take now, out of its queue (*SOON: of
 * NS_SOON); NULL if none: the queues are empty, or hold files first while
 * ns->ahead_files_max threads work on files. ns->lock held. */
static struct ns_node *next_job(struct namespace *ns, bool *soon)
{
	bool files = ns->ahead_files < ns->ahead_files_max;
	const struct ns_node *head = ns->queues[NS_AHEAD].head;
	*soon = files && ns->queues[NS_SOON].head;
	if (*soon)
		return unqueue(ns, NS_SOON);
	return head && (head->is_dir || files) ? unqueue(ns, NS_AHEAD) : NULL;
}

static void *ahead_thread(void *arg)
{
	struct namespace *ns = arg;
	pthread_mutex_lock(&ns->lock);
	for (;;) {
		struct ns_node *n = NULL;
		bool soon;
		while (!ns->ahead_stopping && !(n = next_job(ns, &soon)))
			pthread_cond_wait(&ns->ahead_work, &ns->lock);
		if (ns->ahead_stopping)
			break;
		if (n->is_dir) {
			ahead_list(ns, n);
			if (n->cut)	/* queued again when a lookup finds it behind */
				n->queued[NS_AHEAD] = false;
		} else {
			ns->ahead_files++;
			if (soon)
				ahead_open(ns, n);
			else
				ahead_one(ns, n);
			ns->ahead_files--;
			pthread_cond_signal(&ns->ahead_work);	/* one held back by it */
		}
		ns_node_hold(n, -1);
		if (!ns->queues[NS_SOON].head && !ns->queues[NS_AHEAD].head)
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
	ns->ahead_files_max = (threads + 1) / 2;
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
	for (int k = 0; k < NS_QUEUES; k++)
		for (struct ns_node *n; (n = unqueue(ns, k));)
			ns_node_hold(n, -1);
	ns_reap(ns);
	pthread_mutex_unlock(&ns->lock);
}
