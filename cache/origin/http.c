/*
 * http.c - see http.h: the fetch threads, their queues, retries and the
 * tier's fallback; one attempt of a request is http_attempt.c's.
 *
 * DESIGN: a client runs one or more fetch threads (struct fetcher), one
 * per HTTP_FETCHER_CONNECTIONS connections: TLS, curl and the store's
 * writes cost a core per few hundred MB/s, so one thread would cap a mount
 * at one core's worth of bytes, and a mount's busiest thread is its
 * ceiling. Whatever the cores: on a machine of fewer, the threads share
 * them at no cost measured (the commit that made them), and each thread's share
 * of the work stays small enough to grow with a machine of more. Each fetcher owns
 * a curl multi handle, its easy handles and its share of the connections;
 * nothing of one fetcher is touched by another (but the counts
 * http_share.c keeps of them). A submitter picks a fetcher
 * (share_pick()), appends the request to that fetcher's `submitted` under
 * its lock and calls curl_multi_wakeup(). The fetcher moves submitted
 * requests to its multi handle (or to `delayed` while a backoff runs),
 * drives transfers with curl_multi_poll(), and calls done() for finished
 * requests: done() and sinks run on whichever fetch thread ran the request.
 * Background requests (prefetch) wait in `background` until http_share.c
 * lets them start, on connections demand requests leave idle. Stopping,
 * each fetcher fails what it holds with -ECANCELED; a done() run then may
 * submit again (a retry) to a fetcher already ended, so once all are
 * joined http_client_free() fails what was submitted since, on its own
 * thread (fetchers_cancel_late()): every request gets its done().
 *
 * LOCKS: each fetcher's lock guards its `submitted`, `stopping` and
 * `background_room`; the client's stats_lock guards the counters. Both
 * are leaves (neither is taken under the other), and done() and the
 * signer run with neither held. What http_share.c reads across threads
 * (each fetcher's `load`, `busy` and `pool_wait`, the client's `active`)
 * is atomic.
 */
#include "cache/origin/http.h"
#include "cache/origin/http_int.h"
#include "cache/origin/reach.h"
#include "cache/origin/tier.h"
#include "cache/base/log.h"
#include "cache/base/monotonic.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* Connections a fetch thread serves at least: more threads than the
 * connections / this would each hold too few to keep a host busy. */
#define HTTP_FETCHER_CONNECTIONS 4
#define HTTP_FETCHERS_MAX 64

void http_config_defaults(struct http_config *cfg)
{
	cfg->ca_file = NULL;
	cfg->retries = HTTP_RETRIES_DEFAULT;
	cfg->max_connections = HTTP_CONNECTIONS_DEFAULT;
	cfg->connect_timeout_s = 10;
	cfg->stall_timeout_s = 30;
	cfg->backoff_base_ms = 100;
	cfg->backoff_max_ms = 10000;
	cfg->max_body = 64u << 20;
	cfg->total_timeout_ms = 0;
	cfg->deadline_floor_ms = 15000;
	cfg->min_rate = 16384;
	cfg->fetch_threads = 0;
}

const double http_latency_bounds[HTTP_LATENCY_BUCKETS - 1] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

static uint64_t next_random(struct fetcher *c)
{
	/* xorshift64*: jitter only, not security */
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 2685821657736338717ull;
}

/* Start the next attempt of REQ on the multi handle. */
static int attempt_start(struct fetcher *c, struct http_request *req)
{
	int err = attempt_prepare(&c->client->cfg, req);
	if (err)
		return err;
	curl_multi_add_handle(c->multi, req->easy);
	if (req->tier) {
		struct http_client *client = c->client;
		pthread_mutex_lock(&client->stats_lock);
		if (req->via_tier)
			client->stats.tier_attempts++;
		else if (!req->skip_tier)
			client->stats.tier_fallbacks++;
		pthread_mutex_unlock(&client->stats_lock);
	}
	req->next = c->active;
	c->active = req;
	c->nactive++;
	c->nactive_background += req->background;
	atomic_store(&c->busy, c->nactive);
	atomic_fetch_add(&c->client->active, 1);
	if (c->nactive - c->nactive_background > c->demand_peak)
		c->demand_peak = c->nactive - c->nactive_background;
	return 0;
}

static void attempt_end(struct fetcher *c, struct http_request *req)
{
	curl_multi_remove_handle(c->multi, req->easy);
	attempt_release(req);
	for (struct http_request **link = &c->active; *link; link = &(*link)->next) {
		if (*link == req) {
			*link = req->next;
			c->nactive--;
			c->nactive_background -= req->background;
			atomic_store(&c->busy, c->nactive);
			atomic_fetch_sub(&c->client->active, 1);
			share_wake(c);
			break;
		}
	}
	req->next = NULL;
}

static void finish(struct fetcher *c, struct http_request *req, int err)
{
	double took = (double)(monotonic_us() - req->submitted_us) / 1e6;
	size_t b = 0;
	while (b < HTTP_LATENCY_BUCKETS - 1 && took > http_latency_bounds[b])
		b++;
	struct http_client *client = c->client;
	req->err = err;
	pthread_mutex_lock(&client->stats_lock);
	client->stats.requests++;
	client->stats.in_flight--;
	client->stats.bytes += req->body_len;
	client->stats.latency[b]++;
	client->stats.latency_sum += took;
	if (err)
		client->stats.failures++;
	pthread_mutex_unlock(&client->stats_lock);
	atomic_fetch_sub(&c->load, 1);
	share_publish_room(c);	/* before done(), which may wake a producer */
	req->done(req, req->arg);
}

/* Delay before the next attempt: Retry-After, or backoff with full jitter. */
static uint64_t retry_delay_ms(struct fetcher *c, struct http_request *req)
{
	if (req->retry_after_s >= 0) {
		uint64_t ms = (uint64_t)req->retry_after_s * 1000;
		uint64_t cap = (uint64_t)c->client->cfg.backoff_max_ms * 6;
		return ms < cap ? ms : cap;
	}
	uint64_t ceiling = (uint64_t)c->client->cfg.backoff_base_ms << (req->attempt < 16 ? req->attempt : 16);
	if (ceiling > (uint64_t)c->client->cfg.backoff_max_ms)
		ceiling = (uint64_t)c->client->cfg.backoff_max_ms;
	return ceiling / 2 + next_random(c) % (ceiling / 2 + 1);
}

static void start_or_fail(struct fetcher *c, struct http_request *req);

/* Did REQ's attempt, ended with CODE, find no origin to speak to: not
 * resolved, not connected, or timed out before it connected? */
static bool no_origin(struct http_request *req, CURLcode code)
{
	curl_off_t connect_ok = 0;
	curl_easy_getinfo(req->easy, CURLINFO_CONNECT_TIME_T, &connect_ok);
	return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
	       (code == CURLE_OPERATION_TIMEDOUT && connect_ok == 0);
}

/*
 * Did an attempt through the tier fail to reach it? Then the tier is down:
 * say so once, and start the attempt again at the store (not counted as
 * a retry). Any response from the tier means it is up.
 */
static bool tier_unreachable(struct fetcher *c, struct http_request *req, CURLcode code)
{
	if (!req->via_tier)
		return false;
	if (!no_origin(req, code)) {
		if (tier_mark_up(req->tier))
			log_warn("tier %s answers again; reading through it", tier_url(req->tier));
		return false;
	}
	if (tier_mark_down(req->tier, monotonic_ms()))
		log_warn("tier %s unreachable; reading from the store directly (%s)",
			 tier_url(req->tier), curl_easy_strerror(code));
	attempt_end(c, req);
	start_or_fail(c, req);
	return true;
}

/*
 * Did the tier pass on a redirect (of an unsigned request: a signed one
 * follows none)? Its Location is for the store's clients, and the tier's
 * headers must not follow it: start the request again at the store
 * directly (not counted as a retry), where curl follows it as for any
 * request without the tier.
 */
static bool tier_redirected(struct fetcher *c, struct http_request *req, CURLcode code)
{
	long status = 0;
	if (!req->via_tier || req->signed_attempt || code != CURLE_OK)
		return false;
	curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status < 300 || status >= 400 || status == 304)
		return false;
	log_debug("tier %s passed on HTTP %ld for %s; asking the store directly",
		  tier_url(req->tier), status, req->log_name);
	req->skip_tier = true;
	attempt_end(c, req);
	start_or_fail(c, req);
	return true;
}

/*
 * Tell the origin's outage state (reach.h) how an attempt of REQ ended:
 * GONE (no_origin()) is an outage at once; any other failure (a 5xx, a
 * 429, a connection reset) only once REQ gives up after its retries
 * (FINAL, VERDICT its errno), as such an origin may recover within them;
 * an answer ends an outage. A change is logged once.
 */
static void note_reach(struct fetcher *c, const struct http_request *req, int verdict, bool gone,
		       bool final)
{
	int kind = gone ? -1 : reach_classify(req->status, verdict);
	if (kind < 0 && !gone && !final)
		return;
	uint64_t down_for = 0;
	if (!reach_note(&c->client->reach, kind, monotonic_ms(), &down_for))
		return;
	if (kind < 0)
		log_warn("origin unreachable (%s: %s): serving what is cached, failing the rest "
			 "at once, asking again every %d s", req->log_name, req->error,
			 REACH_PROBE_MS / 1000);
	else
		log_warn("origin answers again, after %" PRIu64 " s down", down_for / 1000);
}

static void on_attempt_done(struct fetcher *c, struct http_request *req, CURLcode code)
{
	if (tier_unreachable(c, req, code) || tier_redirected(c, req, code))
		return;
	int verdict = attempt_verdict(req, code);
	bool gone = verdict != 0 && no_origin(req, code);
	/* no origin, and it was known down or the caller has a cached
	   answer: fail now, not after backoffs */
	bool fail_now = gone && (req->stale_ok || reach_down(&c->client->reach));
	note_reach(c, req, verdict, gone, false);

	if (verdict == 0 && !req->first_etag[0] && req->etag[0])
		memcpy(req->first_etag, req->etag, sizeof(req->etag));
	attempt_end(c, req);
	/* expired or revoked credentials, renewed by the signer: one more
	   attempt, now; not renewable: refused */
	int rejected = 0;
	if (verdict < 0 && req->status >= 400 && req->status < 500 &&
	    req->credentials_rejected && req->signed_attempt && !req->renewed)
		rejected = req->credentials_rejected(req->signer, req->status, req->error_body,
						     req->error_len);
	if (rejected > 0) {
		req->renewed = true;
		log_info("sending %s again with renewed credentials", req->log_name);
		start_or_fail(c, req);
		return;
	}
	if (rejected < 0)
		verdict = -EACCES;
	if (verdict != -EAGAIN) {
		/* a sink that refused the bytes (the cache disk full) is the
		   caller's to tell: it gets them again into memory */
		if (verdict < 0 && verdict != -ENOENT && !req->sink_err)
			log_error("giving up on %s after %d attempt%s: %s", req->log_name,
				  req->attempt + 1, req->attempt ? "s" : "", req->error);
		else if (req->sink_err)
			log_debug("%s: stopped: %s", req->log_name, req->error);
		finish(c, req, verdict);
		return;
	}
	if (req->attempt >= c->client->cfg.retries || fail_now) {
		if (fail_now && req->attempt == 0)	/* said once for the outage
							   (note_reach()) */
			log_debug("not retrying %s: the origin is down (%s)", req->log_name,
				  req->error);
		else
			log_error("giving up on %s after %d attempts: %s", req->log_name,
				  req->attempt + 1, req->error);
		note_reach(c, req, verdict, gone, true);
		finish(c, req, -EIO);
		return;
	}
	/* keep the version seen so far: a resume must not mix two versions */
	if (!req->first_etag[0] && req->etag[0] && req->body_len > 0)
		memcpy(req->first_etag, req->etag, sizeof(req->etag));
	uint64_t delay = retry_delay_ms(c, req);
	log_warn("retrying %s in %" PRIu64 " ms (attempt %d of %d): %s", req->log_name,
		 delay, req->attempt + 2, c->client->cfg.retries + 1, req->error);
	req->attempt++;
	req->not_before_ms = monotonic_ms() + delay;
	req->next = c->delayed;
	c->delayed = req;
	pthread_mutex_lock(&c->client->stats_lock);
	c->client->stats.retries++;
	pthread_mutex_unlock(&c->client->stats_lock);
}

static void start_or_fail(struct fetcher *c, struct http_request *req)
{
	int err = attempt_start(c, req);
	if (err)
		finish(c, req, err);
}

/* Start delayed requests whose time has come; return ms until the next one. */
static long start_due(struct fetcher *c)
{
	uint64_t now = monotonic_ms();
	long wait = 1000;
	struct http_request **link = &c->delayed;

	while (*link) {
		struct http_request *req = *link;
		if (req->not_before_ms <= now) {
			*link = req->next;
			start_or_fail(c, req);
			continue;
		}
		if ((long)(req->not_before_ms - now) < wait)
			wait = (long)(req->not_before_ms - now);
		link = &req->next;
	}
	return wait;
}

int http_connections(const struct http_client *c)
{
	return c->cfg.max_connections;
}

/* Start background requests while there is room for them
 * (http_share.c), and say how many more would start now. */
static void start_background(struct fetcher *c)
{
	struct http_request *req;
	while ((req = share_next_background(c))) {
		start_or_fail(c, req);
		share_started(c);
	}
	share_publish_room(c);
}

static void *fetch_thread(void *arg)
{
	struct fetcher *c = arg;
	char name[16];

	snprintf(name, sizeof(name), "tilefs-fetch%d", c->index);
	pthread_setname_np(pthread_self(), name);

	for (;;) {
		pthread_mutex_lock(&c->lock);
		struct http_request *fresh = c->submitted;
		bool stopping = c->stopping;
		c->submitted = NULL;
		pthread_mutex_unlock(&c->lock);

		/* submitted is LIFO: reverse so requests start in order */
		struct http_request *ordered = NULL;
		while (fresh) {
			struct http_request *next = fresh->next;
			fresh->next = ordered;
			ordered = fresh;
			fresh = next;
		}
		while (ordered) {
			struct http_request *req = ordered;
			ordered = req->next;
			if (stopping) {
				finish(c, req, -ECANCELED);
			} else if (req->background) {
				req->next = NULL;
				if (c->background_tail)
					c->background_tail->next = req;
				else
					c->background = req;
				c->background_tail = req;
				c->nqueued_background++;
			} else {
				start_or_fail(c, req);
			}
		}
		if (stopping)
			break;

		long wait = start_due(c);
		start_background(c);
		int still = 0;
		curl_multi_perform(c->multi, &still);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(c->multi, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct http_request *req = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&req);
			on_attempt_done(c, req, msg->data.result);
		}
		start_background(c);
		curl_multi_poll(c->multi, NULL, 0, (int)share_poll_wait(c, wait), NULL);
	}

	/* stopping: fail whatever is in flight or waiting; what their done()
	   submits now is fetchers_cancel_late()'s */
	while (c->background) {
		struct http_request *req = c->background;
		c->background = req->next;
		finish(c, req, -ECANCELED);
	}
	while (c->delayed) {
		struct http_request *req = c->delayed;
		c->delayed = req->next;
		finish(c, req, -ECANCELED);
	}
	while (c->active) {
		struct http_request *req = c->active;
		attempt_end(c, req);
		finish(c, req, -ECANCELED);
	}
	return NULL;
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void curl_global_once(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
}

/* The fetch threads for CFG: fetch_threads, else one per
 * HTTP_FETCHER_CONNECTIONS connections. */
static int fetchers_for(const struct http_config *cfg)
{
	long n = cfg->fetch_threads;
	if (n <= 0)
		n = cfg->max_connections / HTTP_FETCHER_CONNECTIONS;
	if (n > cfg->max_connections)
		n = cfg->max_connections;
	if (n > HTTP_FETCHERS_MAX)
		n = HTTP_FETCHERS_MAX;
	return n > 0 ? (int)n : 1;
}

static int fetcher_start(struct http_client *c, struct fetcher *f, int index)
{
	f->client = c;
	f->index = index;
	/* the connections dealt out: the first ones get the remainder */
	f->max_connections = c->cfg.max_connections / c->nfetchers +
			     (index < c->cfg.max_connections % c->nfetchers);
	f->rng = (uint64_t)time(NULL) ^ ((uint64_t)(uintptr_t)f << 16) ^ 0x9e3779b97f4a7c15ull;
	pthread_mutex_init(&f->lock, NULL);
	f->multi = curl_multi_init();
	if (!f->multi)
		goto fail_multi;
	curl_multi_setopt(f->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	curl_multi_setopt(f->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)f->max_connections);
	curl_multi_setopt(f->multi, CURLMOPT_MAXCONNECTS, (long)f->max_connections * 2);
	share_publish_room(f);
	if (pthread_create(&f->thread, NULL, fetch_thread, f) != 0)
		goto fail_thread;
	return 0;

fail_thread:
	curl_multi_cleanup(f->multi);
fail_multi:
	pthread_mutex_destroy(&f->lock);
	return -1;
}

/*
 * Finish with -ECANCELED, on this thread, the requests submitted to the
 * fetchers F[0..n) once their threads ended: those a done() submitted
 * while they stopped (an engine's run GETting its units again into
 * memory, say), which landed on a fetcher past its last look at
 * `submitted`. Their done() may submit more: until none is left.
 */
static void fetchers_cancel_late(struct fetcher *f, int n)
{
	for (bool any = true; any;) {
		any = false;
		for (int i = 0; i < n; i++) {
			pthread_mutex_lock(&f[i].lock);
			struct http_request *late = f[i].submitted;
			f[i].submitted = NULL;
			pthread_mutex_unlock(&f[i].lock);
			while (late) {
				struct http_request *req = late;
				late = req->next;
				req->next = NULL;
				finish(&f[i], req, -ECANCELED);
				any = true;
			}
		}
	}
}

/* Stop the fetchers F[0..n): every one told and joined before any is
 * freed, as a done() on one may submit to another until it ends; then
 * what was submitted too late for them is cancelled here. */
static void fetchers_stop(struct fetcher *f, int n)
{
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&f[i].lock);
		f[i].stopping = true;
		pthread_mutex_unlock(&f[i].lock);
		curl_multi_wakeup(f[i].multi);
	}
	for (int i = 0; i < n; i++)
		pthread_join(f[i].thread, NULL);
	fetchers_cancel_late(f, n);
	for (int i = 0; i < n; i++) {
		curl_multi_cleanup(f[i].multi);
		pthread_mutex_destroy(&f[i].lock);
	}
}

struct http_client *http_client_new(const struct http_config *cfg)
{
	struct http_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_once(&global_once, curl_global_once);
	c->cfg = *cfg;
	c->nfetchers = fetchers_for(cfg);
	c->fetchers = calloc((size_t)c->nfetchers, sizeof(*c->fetchers));
	pthread_mutex_init(&c->stats_lock, NULL);
	int started = 0;
	while (c->fetchers && started < c->nfetchers &&
	       fetcher_start(c, &c->fetchers[started], started) == 0)
		started++;
	if (started == c->nfetchers)
		return c;
	if (c->fetchers)
		fetchers_stop(c->fetchers, started);
	free(c->fetchers);
	pthread_mutex_destroy(&c->stats_lock);
	free(c);
	log_error("cannot start the fetch threads");
	return NULL;
}

void http_client_free(struct http_client *c)
{
	if (!c)
		return;
	fetchers_stop(c->fetchers, c->nfetchers);
	free(c->fetchers);
	pthread_mutex_destroy(&c->stats_lock);
	free(c);
}

/* Clear REQ's results and private fields for a first attempt. */
static void request_reset(struct http_request *req, size_t max_body)
{
	req->err = 0;
	req->status = 0;
	req->attempt = 0;
	req->object_size = UINT64_MAX;
	req->etag[0] = req->last_modified[0] = req->error[0] = '\0';
	req->first_etag[0] = '\0';
	req->skip_tier = false;
	req->renewed = false;
	req->easy = NULL;
	req->sent_headers = NULL;
	req->max_body = max_body;
	if (req->len > 0) {
		req->body_cap = req->len;
	} else {
		req->body = NULL;
		req->body_cap = 0;
	}
	req->body_len = 0;
	req->submitted_us = monotonic_us();
}

void http_submit(struct http_client *c, struct http_request *req)
{
	request_reset(req, c->cfg.max_body);
	pthread_mutex_lock(&c->stats_lock);
	c->stats.in_flight++;
	pthread_mutex_unlock(&c->stats_lock);
	struct fetcher *f = share_pick(c, req);
	atomic_fetch_add(&f->load, 1);
	pthread_mutex_lock(&f->lock);
	if (req->background && f->background_room > 0)
		f->background_room--;
	req->next = f->submitted;
	f->submitted = req;
	pthread_mutex_unlock(&f->lock);
	curl_multi_wakeup(f->multi);
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void wake_waiter(struct http_request *req, void *arg)
{
	struct waiter *w = arg;
	(void)req;
	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int http_run(struct http_client *c, struct http_request *req)
{
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };

	req->done = wake_waiter;
	req->arg = &w;
	http_submit(c, req);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return req->err;
}

int http_fetch_once(const struct http_config *cfg, struct http_request *req)
{
	pthread_once(&global_once, curl_global_once);
	request_reset(req, cfg->max_body);
	int err = attempt_prepare(cfg, req);
	if (!err) {
		err = attempt_verdict(req, curl_easy_perform(req->easy));
		if (err == -EAGAIN)
			err = -EIO;	/* no second attempt here */
		attempt_release(req);
	}
	req->err = err;
	return err;
}

void http_client_stats(struct http_client *c, struct http_stats *out)
{
	pthread_mutex_lock(&c->stats_lock);
	*out = c->stats;
	pthread_mutex_unlock(&c->stats_lock);
	out->origin_up = !reach_down(&c->reach);
	out->stale_answers = atomic_load(&c->reach.stale_answers);
}

struct reach *http_reach(struct http_client *client)
{
	return &client->reach;
}

time_t http_date_parse(const char *text)
{
	if (!text || !text[0])
		return 0;
	time_t t = curl_getdate(text, NULL);
	return t < 0 ? 0 : t;
}
