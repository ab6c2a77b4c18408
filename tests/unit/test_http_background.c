/*
 * test_http_background.c - how the HTTP client shares its connections
 * between background requests (prefetch) and demand requests (readers),
 * against the scripted origin (origin_server.h), which holds the GETs of
 * one offset until the test lets them go:
 *
 *   idle readers   with no demand request lately, background requests
 *                  take every connection but the client's spare (2 of 8),
 *                  whichever fetch thread has them (not only half of
 *                  each thread's share)
 *   demand first   the spare is left for readers: a demand request made
 *                  while they are held is served at once, on a thread
 *                  with a connection free
 *   room           http_background_room() is 0 while background requests
 *                  hold the connections they may have, and comes back when
 *                  they end
 *
 * with one fetch thread and with two (each with half the connections).
 * Every wait is for an event, bounded by ORIGIN_WAIT_S.
 */
#include "cache/origin/http.h"
#include "check.h"
#include "origin_server.h"

#define CONNECTIONS 8
#define OBJECT_SIZE 8192

struct done_count {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done, failed;
};

static void count_done(struct http_request *req, void *arg)
{
	struct done_count *d = arg;
	pthread_mutex_lock(&d->lock);
	d->done++;
	d->failed += req->err != 0;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

/* Wait until the origin holds N GETs; the number it holds then. */
static size_t wait_held(struct origin_server *s, size_t n)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ORIGIN_WAIT_S;
	pthread_mutex_lock(&s->lock);
	while (s->held < n && pthread_cond_timedwait(&s->changed, &s->lock, &until) == 0)
		;
	size_t held = s->held;
	pthread_mutex_unlock(&s->lock);
	return held;
}

static int wait_done(struct done_count *d, int n)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ORIGIN_WAIT_S;
	pthread_mutex_lock(&d->lock);
	while (d->done < n && pthread_cond_timedwait(&d->cond, &d->lock, &until) == 0)
		;
	int done = d->done;
	pthread_mutex_unlock(&d->lock);
	return done;
}

/* Wait until http_background_room() is at least N; its value then. */
static int wait_room(struct http_client *http, int n)
{
	int room = 0;
	for (int i = 0; i < ORIGIN_WAIT_S * 20 && (room = http_background_room(http)) < n; i++)
		usleep(50000);
	return room;
}

/* GET bytes OFF..OFF+LEN-1 of URL into BODY as a reader would. */
static int demand_get(struct http_client *http, const char *url, uint64_t off, char *body,
		      size_t len)
{
	struct http_request req;
	memset(&req, 0, sizeof(req));
	req.url = url;
	req.log_name = url;
	req.off = off;
	req.len = len;
	req.body = body;
	return http_run(http, &req);
}

/* The whole story with THREADS fetch threads, against the origin S
 * serving the objects at URL. */
static void story(struct origin_server *s, char url[][64], int threads)
{
	const int spare = 2;		/* the client's, whatever the threads */
	struct http_config cfg;
	http_config_defaults(&cfg);
	cfg.max_connections = CONNECTIONS;
	cfg.fetch_threads = threads;
	/* a held GET is never timed out and tried again while the test runs */
	cfg.deadline_floor_ms = 2 * ORIGIN_WAIT_S * 1000;
	cfg.stall_timeout_s = 2 * ORIGIN_WAIT_S;
	struct http_client *http = http_client_new(&cfg);
	CHECK(http != NULL, "%d fetch thread%s: the client starts", threads,
	      threads > 1 ? "s" : "");
	/* a first answer tells curl the origin's protocol (HTTP/1.1: one
	   request per connection), so that it opens new connections at once */
	char dbody[1024];
	CHECK(demand_get(http, url[1], 0, dbody, sizeof(dbody)) == 0, "a first GET");
	CHECK(wait_room(http, CONNECTIONS - spare) == CONNECTIONS - spare,
	      "with nothing in flight lately, the room for background requests is every "
	      "connection but the spare (%d)", http_background_room(http));

	/* one background GET of each object, all held by the origin */
	pthread_mutex_lock(&s->lock);
	size_t logged = s->nlog;
	pthread_mutex_unlock(&s->lock);
	origin_hold(s, 0);
	static struct http_request bg[CONNECTIONS];
	static char body[CONNECTIONS][1024];
	struct done_count d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
	for (int i = 0; i < CONNECTIONS; i++) {
		bg[i].url = url[i];
		bg[i].log_name = url[i];
		bg[i].background = true;
		bg[i].off = 0;
		bg[i].len = sizeof(body[i]);
		bg[i].body = body[i];
		bg[i].done = count_done;
		bg[i].arg = &d;
		http_submit(http, &bg[i]);
	}
	size_t held = wait_held(s, (size_t)(CONNECTIONS - spare));
	CHECK(held == (size_t)(CONNECTIONS - spare), "idle readers: background GETs take %d "
	      "of %d connections (held %zu)", CONNECTIONS - spare, CONNECTIONS, held);

	CHECK(http_background_room(http) == 0, "no room for more background requests "
	      "meanwhile (%d)", http_background_room(http));
	/* a reader now: served at once, on the connection left free */
	int err = demand_get(http, url[0], 4096, dbody, sizeof(dbody));
	char want[OBJECT_SIZE];
	origin_pattern(want, OBJECT_SIZE, 0);
	CHECK(err == 0 && memcmp(dbody, want + 4096, sizeof(dbody)) == 0,
	      "a demand GET made while background GETs are held is served (err %d)", err);
	pthread_mutex_lock(&s->lock);
	size_t served = s->nlog - logged;
	pthread_mutex_unlock(&s->lock);
	CHECK(served == 1, "before any background GET was let go (%zu answered)", served);
	usleep(200000);	/* a last GET started now would be seen held */
	pthread_mutex_lock(&s->lock);
	held = s->held;
	pthread_mutex_unlock(&s->lock);
	CHECK(held == (size_t)(CONNECTIONS - spare), "the last background GETs wait, leaving "
	      "the spare for readers (held %zu)", held);

	origin_release(s);
	CHECK(wait_done(&d, CONNECTIONS) == CONNECTIONS && d.failed == 0,
	      "every background GET ends well once let go (%d done, %d failed)", d.done, d.failed);
	CHECK(wait_room(http, 1) > 0, "the room comes back (%d)", http_background_room(http));

	http_client_free(http);
}

int main(void)
{
	static struct origin_server s;
	CHECK(origin_start(&s) == 0, "the origin starts");
	static char url[CONNECTIONS][64];
	char path[16];
	for (int i = 0; i < CONNECTIONS; i++) {
		snprintf(path, sizeof(path), "/b%d", i);
		origin_put(&s, path, OBJECT_SIZE, (uint32_t)i, "\"e\"");
		snprintf(url[i], sizeof(url[i]), "http://127.0.0.1:%d/b%d", s.port, i);
	}
	story(&s, url, 1);
	story(&s, url, 2);
	origin_stop(&s);
	return check_done();
}
