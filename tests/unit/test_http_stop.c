/*
 * test_http_stop.c - http_client_free() finishes every request, those a
 * done() submits while the fetch threads stop included (issue 54: an
 * engine's run whose writes failed GETs its units again from its done(),
 * and a retry submitted to a fetch thread past its last look at its queue
 * was never finished, its waiters left waiting):
 *
 *   in flight      a GET the origin holds when the client is freed ends
 *                  with -ECANCELED
 *   retries        its done() submits a retry, whose done() submits
 *                  another: each ends, once, with -ECANCELED, before
 *                  http_client_free() returns
 *
 * with one fetch thread (the retry lands on the thread that ran its
 * done(), already past its queue) and with two.
 */
#include "cache/origin/http.h"
#include "check.h"
#include "origin_server.h"

#define OBJECT_SIZE 8192
#define RETRIES 3		/* requests after the first */

struct chain {
	struct http_client *http;
	pthread_mutex_t lock;
	struct http_request req[1 + RETRIES];
	char body[1 + RETRIES][1024];
	int done[1 + RETRIES];		/* lock: done() calls of each */
	int err[1 + RETRIES];		/* lock: the error each ended with */
};

static void retry_done(struct http_request *req, void *arg)
{
	struct chain *k = arg;
	int i = (int)(req - k->req);
	pthread_mutex_lock(&k->lock);
	k->done[i]++;
	k->err[i] = req->err;
	pthread_mutex_unlock(&k->lock);
	/* what a run does when its GET fails while its writes failed: GET
	   again, from done() */
	if (i < RETRIES)
		http_submit(k->http, &k->req[i + 1]);
}

static void story(struct origin_server *s, const char *url, int threads)
{
	struct http_config cfg;
	http_config_defaults(&cfg);
	cfg.max_connections = 4;
	cfg.fetch_threads = threads;
	/* the held GET is not timed out and tried again while the test runs */
	cfg.deadline_floor_ms = 2 * ORIGIN_WAIT_S * 1000;
	cfg.stall_timeout_s = 2 * ORIGIN_WAIT_S;
	static struct chain k;
	memset(&k, 0, sizeof(k));
	pthread_mutex_init(&k.lock, NULL);
	k.http = http_client_new(&cfg);
	CHECK(k.http != NULL, "%d fetch thread%s: the client starts", threads,
	      threads > 1 ? "s" : "");
	if (!k.http)
		return;
	for (int i = 0; i <= RETRIES; i++) {
		struct http_request *req = &k.req[i];
		req->url = url;
		req->log_name = url;
		req->off = 0;
		req->len = sizeof(k.body[i]);
		req->body = k.body[i];
		req->done = retry_done;
		req->arg = &k;
	}
	origin_hold(s, 0);
	http_submit(k.http, &k.req[0]);
	CHECK(origin_wait_held(s), "the origin holds the GET");
	http_client_free(k.http);
	origin_release(s);

	pthread_mutex_lock(&k.lock);
	CHECK(k.done[0] == 1 && k.err[0] == -ECANCELED,
	      "the GET in flight ends once, cancelled (%d done, err %d)", k.done[0], k.err[0]);
	for (int i = 1; i <= RETRIES; i++)
		CHECK(k.done[i] == 1 && k.err[i] == -ECANCELED,
		      "retry %d, submitted from a done() while the client stops, ends once, "
		      "cancelled, before http_client_free() returns (%d done, err %d)", i,
		      k.done[i], k.err[i]);
	pthread_mutex_unlock(&k.lock);
	pthread_mutex_destroy(&k.lock);
}

int main(void)
{
	static struct origin_server s;
	CHECK(origin_start(&s) == 0, "the origin starts");
	origin_put(&s, "/s", OBJECT_SIZE, 1, "\"e\"");
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/s", s.port);
	story(&s, url, 1);
	story(&s, url, 2);
	origin_stop(&s);
	return check_done();
}
