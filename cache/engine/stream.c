/*
 * stream.c - whole-object prefetch (--prefetch object, and auto while the
 * mounted bytes fit in the cache): a read of a tile queues its object once
 * (object_prefetch_start()), and the persist thread, when it has nothing
 * to store, sends the next units of the first object queued in background
 * GETs of at most STREAM_GET_MAX bytes while background_room() allows
 * (job_step()).
 *
 * Level 4 of the engine (engine_int.h): calls fetch.c and what lies under
 * it; the persist thread (persist.c) runs it, the read path starts it.
 */
#include "cache/engine/engine_int.h"

#include <errno.h>
#include <stdlib.h>

#define JOB_BATCH 64		/* units one step adds at most */

void object_prefetch_start(struct cache *c, struct cache_object *obj)
{
	struct object_job *job;

	if (obj->id < 0 || atomic_exchange(&obj->whole_queued, true))
		return;
	job = calloc(1, sizeof(*job));
	if (!job)
		return;
	job->obj = cache_object_ref(obj);
	pthread_mutex_lock(&c->lock);
	struct object_job **link = &c->jobs;
	while (*link)
		link = &(*link)->next;
	*link = job;
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->lock);
}

void cache_stop_prefetch(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	c->jobs_off = true;
	while (c->stepping)
		pthread_cond_wait(&c->changed, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

void job_done(struct object_job **list)
{
	struct object_job *job = *list;
	*list = job->next;
	cache_object_unref(job->obj);
	free(job);
}

int job_step(struct cache *c)
{
	struct extent units[JOB_BATCH];
	struct inflight *batch[JOB_BATCH];
	size_t k = 0;
	uint64_t bytes = 0;

	pthread_mutex_lock(&c->lock);
	struct object_job *job = c->jobs;
	pthread_mutex_unlock(&c->lock);
	if (!job)
		return 0;
	if (!background_room(c))
		return -EAGAIN;
	struct cache_object *obj = job->obj;
	while (job->cursor < obj->version.size && k < JOB_BATCH && bytes < STREAM_GET_MAX &&
	       !cache_object_stale(obj)) {
		units[k] = layout_unit_at(&obj->layout, job->cursor);
		bytes += units[k].len;
		job->cursor = units[k].off + units[k].len;
		k++;
	}
	size_t n = prefetch_entries(c, obj, units, k, false, batch);
	submit_runs(c, obj, batch, n, FETCH_FOR_STREAM);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < n; i++)
		entry_unref(batch[i]);
	if (job->cursor >= obj->version.size || cache_object_stale(obj))
		job_done(&c->jobs);
	pthread_mutex_unlock(&c->lock);
	return 0;
}
