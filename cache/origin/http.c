/*
 * http.c - see http.h.
 *
 * DESIGN: one fetch thread owns the curl multi handle and every easy handle.
 * Other threads only append to `submitted` under client->lock and call
 * curl_multi_wakeup(). The fetch thread moves submitted requests to the
 * multi handle (or to `delayed` while a backoff runs), drives transfers with
 * curl_multi_poll(), and calls done() for finished requests. Background
 * requests (prefetch) wait in `background` and start only while few others
 * run: at most half of the connections, and never the last free one,
 * so a demand read queued behind them finds a connection. Lock order:
 * client->lock is a leaf; done() runs without it.
 */
#include "cache/origin/http.h"
#include "cache/origin/tier.h"
#include "cache/base/log.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* curl's receive buffer for a request with a sink (its default is 16 KiB):
 * fewer reads from the socket, though curl still hands the bytes on 16 KiB
 * at a time */
#define SINK_BUFFER (256L << 10)

struct http_client {
	struct http_config cfg;		/* set at start, read-only after */
	CURLM *multi;			/* fetch thread only */
	pthread_t thread;
	pthread_mutex_t lock;
	struct http_request *submitted;	/* protected by lock, LIFO */
	bool stopping;			/* protected by lock */
	struct http_request *delayed;	/* fetch thread only: in backoff */
	struct http_request *active;	/* fetch thread only: on the multi */
	struct http_request *background, *background_tail; /* fetch thread only:
					   background requests not started yet */
	int nactive, nactive_background; /* fetch thread only */
	uint64_t rng;			/* fetch thread only */
	struct http_stats stats;	/* protected by lock */
};

void http_config_defaults(struct http_config *cfg)
{
	cfg->ca_file = NULL;
	cfg->retries = 5;
	cfg->max_connections = 16;
	cfg->connect_timeout_s = 10;
	cfg->stall_timeout_s = 30;
	cfg->backoff_base_ms = 100;
	cfg->backoff_max_ms = 10000;
	cfg->max_body = 64u << 20;
	cfg->total_timeout_ms = 0;
	cfg->deadline_floor_ms = 15000;
	cfg->min_rate = 16384;
}

const double http_latency_bounds[HTTP_LATENCY_BUCKETS - 1] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t next_random(struct http_client *c)
{
	/* xorshift64*: jitter only, not security */
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 2685821657736338717ull;
}

/* Copy a header value (after "Name:") without surrounding blanks. */
static void header_value(const char *line, size_t n, size_t name_len,
			 char *out, size_t out_size)
{
	const char *v = line + name_len, *end = line + n;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	size_t len = (size_t)(end - v);
	if (len >= out_size)
		len = out_size - 1;
	memcpy(out, v, len);
	out[len] = '\0';
}

static bool header_is(const char *line, size_t n, const char *name)
{
	size_t len = strlen(name);
	return n > len && strncasecmp(line, name, len) == 0;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *arg)
{
	struct http_request *req = arg;
	size_t n = size * nmemb;
	char value[160];

	if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		/* a new response (redirect or retry): forget the last one's */
		req->etag[0] = req->last_modified[0] = '\0';
		req->retry_after_s = -1;
		req->range_first = req->range_last = UINT64_MAX;
		return n;
	}
	if (header_is(line, n, "etag:")) {
		header_value(line, n, 5, req->etag, sizeof(req->etag));
	} else if (header_is(line, n, "last-modified:")) {
		header_value(line, n, 14, req->last_modified, sizeof(req->last_modified));
	} else if (header_is(line, n, "content-range:")) {
		/* "bytes FIRST-LAST/TOTAL" */
		unsigned long long first, last;
		header_value(line, n, 14, value, sizeof(value));
		if (sscanf(value, "bytes %llu-%llu", &first, &last) == 2) {
			req->range_first = first;
			req->range_last = last;
		}
		const char *slash = strchr(value, '/');
		if (slash && slash[1] != '*')
			req->object_size = strtoull(slash + 1, NULL, 10);
	} else if (header_is(line, n, "retry-after:")) {
		header_value(line, n, 12, value, sizeof(value));
		char *end;
		long s = strtol(value, &end, 10);
		if (end != value && s >= 0)
			req->retry_after_s = s;
	}
	return n;
}

/* Why the answer to ranged REQ (STATUS) cannot be the bytes asked for
 * from where this attempt began, or NULL if it can. */
static const char *range_mismatch(const struct http_request *req, long status)
{
	if (status == 200)
		return req->off == 0 ? NULL : "origin ignored the Range header (HTTP 200)";
	if (req->range_first != req->off + req->attempt_start ||
	    req->range_last > req->off + req->len - 1)
		return "origin sent a range other than the one asked for";
	return NULL;
}

/* Hand N bytes of a ranged body on: into req->body, or to req->sink. */
static bool deliver(struct http_request *req, const char *data, size_t n)
{
	if (req->sink) {
		int err = req->sink(req->sink_arg, req->body_len, data, n);
		if (err) {
			req->sink_err = err;
			snprintf(req->error, sizeof(req->error), "cannot keep the bytes: %s",
				 strerror(-err));
			return false;
		}
	} else {
		memcpy(req->body + req->body_len, data, n);
	}
	req->body_len += n;
	return true;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http_request *req = arg;
	size_t n = size * nmemb;
	long status = 0;

	curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 300) {
		/* an error page: keep its start, for the reason it gives */
		size_t room = sizeof(req->error_body) - 1 - req->error_len;
		size_t keep = n < room ? n : room;
		memcpy(req->error_body + req->error_len, data, keep);
		req->error_len += keep;
		req->error_body[req->error_len] = '\0';
		return n;
	}
	if (req->len > 0 && req->body_len == req->attempt_start && !req->restarted) {
		/* the first bytes of an attempt: are they the ones asked for? */
		const char *why = range_mismatch(req, status);
		if (why) {
			snprintf(req->error, sizeof(req->error), "%s", why);
			return 0;
		}
		if (status == 200 && req->attempt_start > 0) {
			/* a whole object answering a resumed range: start over */
			req->body_len = 0;
			req->restarted = true;
		}
	}
	if (req->len == 0 && req->body_len + n > req->max_body) {
		snprintf(req->error, sizeof(req->error),
			 "response larger than %zu bytes", req->max_body);
		return 0;
	}
	if (n > req->body_cap - req->body_len) {
		if (req->len > 0 && status == 200 && req->off == 0) {
			/* the whole object for a range from 0: keep what was asked
			   for and end the transfer there */
			if (deliver(req, data, req->body_cap - req->body_len))
				req->cut_short = true;
			return 0;
		}
		if (req->len > 0) {
			snprintf(req->error, sizeof(req->error),
				 "origin sent more than the %" PRIu64 " bytes asked for", req->len);
			return 0;
		}
		size_t cap = req->body_cap ? req->body_cap : 65536;
		while (cap < req->body_len + n)
			cap *= 2;
		if (cap > req->max_body)
			cap = req->max_body;	/* checked above: the body fits */
		char *grown = realloc(req->body, cap);
		if (!grown)
			return 0;
		req->body = grown;
		req->body_cap = cap;
	}
	if (req->len == 0) {
		memcpy(req->body + req->body_len, data, n);
		req->body_len += n;
		return n;
	}
	return deliver(req, data, n) ? n : 0;
}

/*
 * A fresh easy handle for the next attempt of REQ under CFG, configured and
 * signed: in req->easy, its header list in req->sent_headers (both undone
 * by attempt_release()).
 */
static int attempt_prepare(const struct http_config *cfg, struct http_request *req)
{
	CURL *easy = curl_easy_init();
	if (!easy)
		return -ENOMEM;
	req->easy = easy;
	req->status = 0;
	req->retry_after_s = -1;
	req->error[0] = '\0';
	req->error_len = 0;
	req->restarted = false;
	req->cut_short = false;
	req->sink_err = 0;
	req->range_first = req->range_last = UINT64_MAX;
	req->via_tier = req->tier && tier_usable(req->tier, now_ms());
	char tier_host[300];
	char *tier_url = req->via_tier ? tier_request_url(req->tier, req->url, tier_host,
							    sizeof(tier_host)) : NULL;
	if (req->via_tier && !tier_url) {
		curl_easy_cleanup(easy);
		req->easy = NULL;
		return -ENOMEM;
	}
	curl_easy_setopt(easy, CURLOPT_URL, tier_url ? tier_url : req->url);
	free(tier_url);
	curl_easy_setopt(easy, CURLOPT_PRIVATE, req);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR,
			 strncasecmp(req->url, "https:", 6) == 0 ? "https" : "http,https");
	curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT, (long)cfg->connect_timeout_s);
	curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, (long)cfg->stall_timeout_s);
	curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(easy, CURLOPT_HEADERDATA, req);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, req);
	if (req->sink)
		curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, SINK_BUFFER);
	curl_easy_setopt(easy, CURLOPT_USERAGENT, "tilefs/" TILEFS_VERSION);
	if (cfg->ca_file)
		curl_easy_setopt(easy, CURLOPT_CAINFO, cfg->ca_file);
	struct http_attempt a = { .method = req->head ? "HEAD" : "GET", .url = req->url };
	if (req->method) {
		a.method = req->method;
		curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, req->method);
	}
	struct curl_slist *h = NULL;
	char line[192];
	if (req->head) {
		curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
		curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)cfg->deadline_floor_ms);
	} else if (req->len > 0) {
		/* resume after the bytes a dropped attempt already delivered */
		a.ranged = true;
		a.first = req->off + req->body_len;
		a.last = req->off + req->len - 1;
		snprintf(line, sizeof(line), "Range: bytes=%" PRIu64 "-%" PRIu64, a.first, a.last);
		h = curl_slist_append(h, line);
		/* a trickle ends, and is retried from where it got to */
		uint64_t at_rate = (a.last - a.first + 1) * 1000 / (uint64_t)cfg->min_rate;
		curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS,
				 (long)(cfg->deadline_floor_ms + (at_rate < LONG_MAX / 2 ? at_rate :
								  LONG_MAX / 2)));
	} else {
		req->body_len = 0;	/* unranged (a listing): start over */
		/* and a trickle must not hold it for ever */
		long timeout_ms = cfg->total_timeout_ms > 0 ? (long)cfg->total_timeout_ms :
							       (long)cfg->stall_timeout_s * 10000;
		curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	}
	req->attempt_start = req->body_len;
	const char *match = req->if_match;
	if (!match && req->first_etag[0])
		match = req->first_etag;
	/* If-Match compares strongly: a weak ETag would never match */
	if (match && strncmp(match, "W/", 2) != 0) {
		a.if_match = match;
		snprintf(line, sizeof(line), "If-Match: %s", match);
		h = curl_slist_append(h, line);
	} else if (req->if_unmodified_since && req->if_unmodified_since[0]) {
		a.if_unmodified_since = req->if_unmodified_since;
		snprintf(line, sizeof(line), "If-Unmodified-Since: %s", req->if_unmodified_since);
		h = curl_slist_append(h, line);
	}
	struct curl_slist *unsigned_tail = h;
	while (unsigned_tail && unsigned_tail->next)
		unsigned_tail = unsigned_tail->next;
	if (req->sign) {
		int err = req->sign(req->signer, &a, &h);
		if (err) {
			snprintf(req->error, sizeof(req->error), "cannot sign the request: %s",
				 strerror(-err));
			curl_slist_free_all(h);
			curl_easy_cleanup(easy);
			req->easy = NULL;
			return err;
		}
	}
	/* credentials never follow a redirect (see http.h) */
	req->signed_attempt = unsigned_tail ? unsigned_tail->next != NULL : h != NULL;
	curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, req->signed_attempt ? 0L : 1L);
	if (req->via_tier) {
		/* the store's Host, as signed; the tier's own secret */
		h = curl_slist_append(h, tier_host);
		if (tier_secret_line(req->tier))
			h = curl_slist_append(h, tier_secret_line(req->tier));
	}
	req->sent_headers = h;
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, h);
	return 0;
}

static void attempt_release(struct http_request *req)
{
	curl_easy_cleanup(req->easy);
	req->easy = NULL;
	curl_slist_free_all(req->sent_headers);
	req->sent_headers = NULL;
}

/* Start the next attempt of REQ on the multi handle. */
static int attempt_start(struct http_client *c, struct http_request *req)
{
	int err = attempt_prepare(&c->cfg, req);
	if (err)
		return err;
	curl_multi_add_handle(c->multi, req->easy);
	if (req->tier) {
		pthread_mutex_lock(&c->lock);
		if (req->via_tier)
			c->stats.tier_attempts++;
		else
			c->stats.tier_fallbacks++;
		pthread_mutex_unlock(&c->lock);
	}
	req->next = c->active;
	c->active = req;
	c->nactive++;
	c->nactive_background += req->background;
	return 0;
}

static void attempt_end(struct http_client *c, struct http_request *req)
{
	curl_multi_remove_handle(c->multi, req->easy);
	attempt_release(req);
	for (struct http_request **link = &c->active; *link; link = &(*link)->next) {
		if (*link == req) {
			*link = req->next;
			c->nactive--;
			c->nactive_background -= req->background;
			break;
		}
	}
	req->next = NULL;
}

static void finish(struct http_client *c, struct http_request *req, int err)
{
	double took = (double)(now_us() - req->submitted_us) / 1e6;
	size_t b = 0;
	while (b < HTTP_LATENCY_BUCKETS - 1 && took > http_latency_bounds[b])
		b++;
	req->err = err;
	pthread_mutex_lock(&c->lock);
	c->stats.requests++;
	c->stats.in_flight--;
	c->stats.bytes += req->body_len;
	c->stats.latency[b]++;
	c->stats.latency_sum += took;
	if (err)
		c->stats.failures++;
	pthread_mutex_unlock(&c->lock);
	req->done(req, req->arg);
}

static bool curl_code_retryable(CURLcode code)
{
	switch (code) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

static bool curl_code_is_tls_trust(CURLcode code)
{
	return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
	       code == CURLE_SSL_ISSUER_ERROR;
}

/*
 * Judge a finished attempt: 0 done, -EAGAIN retry, or a final -errno.
 * Fills req->error with the reason.
 */
static int attempt_verdict(struct http_request *req, CURLcode code)
{
	long status = 0;

	curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status);
	req->status = status;
	if (code == CURLE_WRITE_ERROR && req->cut_short) {
		/* we ended a 200 once the bytes asked for were in */
		curl_off_t length = -1;
		curl_easy_getinfo(req->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
		if (length < 0) {
			snprintf(req->error, sizeof(req->error),
				 "origin ignored the Range header and did not say how large it is");
			return -EIO;
		}
		req->object_size = (uint64_t)length;
		return 0;
	}
	if (code == CURLE_WRITE_ERROR && req->sink_err)
		return req->sink_err;
	if (code != CURLE_OK) {
		if (!req->error[0] || code != CURLE_WRITE_ERROR)
			snprintf(req->error, sizeof(req->error), "%s%s",
				 curl_easy_strerror(code),
				 curl_code_is_tls_trust(code) ?
				 " (is the server's CA trusted? see --ca-file)" : "");
		if (code == CURLE_UNSUPPORTED_PROTOCOL)
			snprintf(req->error, sizeof(req->error), "%s",
				 strncasecmp(req->url, "https:", 6) == 0 ?
				 "refused a redirect: https redirects only to https" :
				 "refused: only http:// and https:// URLs are fetched");
		if (curl_code_is_tls_trust(code))
			return -EPERM;
		return curl_code_retryable(code) ? -EAGAIN : -EIO;
	}
	if (status >= 300 || status < 200) {
		/* "HTTP 403", or "HTTP 403 (REASON)" when the provider reads why
		   from the body; cut to fit */
		size_t n = (size_t)snprintf(req->error, sizeof(req->error), "HTTP %ld", status);
		char *reason = req->error + n + 2;
		if (req->describe_error && n + 2 < sizeof(req->error) &&
		    req->describe_error(req->error_body, req->error_len, reason,
					sizeof(req->error) - n - 2)) {
			memcpy(req->error + n, " (", 2);
			size_t end = n + 2 + strlen(reason);
			if (end + 1 < sizeof(req->error))
				memcpy(req->error + end, ")", 2);
		} else if (status < 400 && req->signed_attempt) {
			snprintf(req->error + n, sizeof(req->error) - n,
				 " (a redirect of a signed request: not followed)");
		} else {
			req->error[n] = '\0';
		}
		if (status == 404 || status == 410)
			return -ENOENT;
		if (status == 401 || status == 403)
			return -EACCES;
		if (status == 412)
			return -ESTALE;
		if (status == 416)
			return -ERANGE;
		if (status >= 500 || status == 429 || status == 408)
			return -EAGAIN;
		return -EIO;
	}
	if (req->first_etag[0] && req->etag[0] && strcmp(req->first_etag, req->etag) != 0) {
		snprintf(req->error, sizeof(req->error), "object changed during the transfer");
		return -ESTALE;
	}
	if (req->head)
		goto size_from_length;
	if (req->len > 0) {
		/* bytes of another range must never land at this offset (an
		   empty body never met on_body()'s check) */
		const char *why = range_mismatch(req, status);
		if (why) {
			snprintf(req->error, sizeof(req->error), "%s", why);
			return -EIO;
		}
		if (status == 200)	/* whole object for a range from 0, and it all fitted */
			req->object_size = req->body_len;
		if (req->body_len < req->len && req->off + req->body_len < req->object_size) {
			snprintf(req->error, sizeof(req->error), "short body (%zu of %" PRIu64 " bytes)",
				 req->body_len, req->len);
			return -EAGAIN;
		}
		return 0;
	}
size_from_length:
	if (status == 200 && req->object_size == UINT64_MAX) {
		curl_off_t length = -1;
		curl_easy_getinfo(req->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
		if (length >= 0)
			req->object_size = (uint64_t)length;
	}
	return 0;
}

/* Delay before the next attempt: Retry-After, or backoff with full jitter. */
static uint64_t retry_delay_ms(struct http_client *c, struct http_request *req)
{
	if (req->retry_after_s >= 0) {
		uint64_t ms = (uint64_t)req->retry_after_s * 1000;
		uint64_t cap = (uint64_t)c->cfg.backoff_max_ms * 6;
		return ms < cap ? ms : cap;
	}
	uint64_t ceiling = (uint64_t)c->cfg.backoff_base_ms << (req->attempt < 16 ? req->attempt : 16);
	if (ceiling > (uint64_t)c->cfg.backoff_max_ms)
		ceiling = (uint64_t)c->cfg.backoff_max_ms;
	return ceiling / 2 + next_random(c) % (ceiling / 2 + 1);
}

static void start_or_fail(struct http_client *c, struct http_request *req);

/*
 * Did an attempt through the tier fail to reach it? Then the tier is down:
 * say so once, and start the attempt again at the store (not counted as
 * a retry). Any response from the tier means it is up.
 */
static bool tier_unreachable(struct http_client *c, struct http_request *req, CURLcode code)
{
	if (!req->via_tier)
		return false;
	curl_off_t connect_ok = 0;
	curl_easy_getinfo(req->easy, CURLINFO_CONNECT_TIME_T, &connect_ok);
	bool down = code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
		    (code == CURLE_OPERATION_TIMEDOUT && connect_ok == 0);
	if (!down) {
		if (tier_mark_up(req->tier))
			log_warn("tier %s answers again; reading through it", tier_url(req->tier));
		return false;
	}
	if (tier_mark_down(req->tier, now_ms()))
		log_warn("tier %s unreachable; reading from the store directly (%s)",
			 tier_url(req->tier), curl_easy_strerror(code));
	attempt_end(c, req);
	start_or_fail(c, req);
	return true;
}

static void on_attempt_done(struct http_client *c, struct http_request *req, CURLcode code)
{
	if (tier_unreachable(c, req, code))
		return;
	int verdict = attempt_verdict(req, code);

	if (verdict == 0 && !req->first_etag[0] && req->etag[0])
		memcpy(req->first_etag, req->etag, sizeof(req->etag));
	attempt_end(c, req);
	if (verdict != -EAGAIN) {
		if (verdict < 0 && verdict != -ENOENT)
			log_error("giving up on %s after %d attempt%s: %s", req->log_name,
				  req->attempt + 1, req->attempt ? "s" : "", req->error);
		finish(c, req, verdict);
		return;
	}
	if (req->attempt >= c->cfg.retries) {
		log_error("giving up on %s after %d attempts: %s", req->log_name,
			  req->attempt + 1, req->error);
		finish(c, req, -EIO);
		return;
	}
	/* keep the version seen so far: a resume must not mix two versions */
	if (!req->first_etag[0] && req->etag[0] && req->body_len > 0)
		memcpy(req->first_etag, req->etag, sizeof(req->etag));
	uint64_t delay = retry_delay_ms(c, req);
	log_warn("retrying %s in %" PRIu64 " ms (attempt %d of %d): %s", req->log_name,
		 delay, req->attempt + 2, c->cfg.retries + 1, req->error);
	req->attempt++;
	req->not_before_ms = now_ms() + delay;
	req->next = c->delayed;
	c->delayed = req;
	pthread_mutex_lock(&c->lock);
	c->stats.retries++;
	pthread_mutex_unlock(&c->lock);
}

static void start_or_fail(struct http_client *c, struct http_request *req)
{
	int err = attempt_start(c, req);
	if (err)
		finish(c, req, err);
}

/* Start delayed requests whose time has come; return ms until the next one. */
static long start_due(struct http_client *c)
{
	uint64_t now = now_ms();
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

/* Start background requests while there is room for them. */
static void start_background(struct http_client *c)
{
	int cap = c->cfg.max_connections / 2 > 0 ? c->cfg.max_connections / 2 : 1;
	while (c->background && c->nactive_background < cap &&
	       c->nactive < c->cfg.max_connections - 1) {
		struct http_request *req = c->background;
		c->background = req->next;
		if (!c->background)
			c->background_tail = NULL;
		start_or_fail(c, req);
	}
}

static void *fetch_thread(void *arg)
{
	struct http_client *c = arg;

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
		curl_multi_poll(c->multi, NULL, 0, (int)wait, NULL);
	}

	/* stopping: fail whatever is in flight or waiting */
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

struct http_client *http_client_new(const struct http_config *cfg)
{
	struct http_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_once(&global_once, curl_global_once);
	c->cfg = *cfg;
	c->rng = (uint64_t)time(NULL) ^ ((uint64_t)(uintptr_t)c << 16) ^ 0x9e3779b97f4a7c15ull;
	pthread_mutex_init(&c->lock, NULL);
	c->multi = curl_multi_init();
	if (!c->multi)
		goto fail_multi;
	curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)cfg->max_connections);
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)cfg->max_connections * 2);
	if (pthread_create(&c->thread, NULL, fetch_thread, c) != 0)
		goto fail_thread;
	return c;

fail_thread:
	curl_multi_cleanup(c->multi);
fail_multi:
	pthread_mutex_destroy(&c->lock);
	free(c);
	log_error("cannot start the fetch thread");
	return NULL;
}

void http_client_free(struct http_client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_mutex_unlock(&c->lock);
	curl_multi_wakeup(c->multi);
	pthread_join(c->thread, NULL);
	curl_multi_cleanup(c->multi);
	pthread_mutex_destroy(&c->lock);
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
	req->submitted_us = now_us();
}

void http_submit(struct http_client *c, struct http_request *req)
{
	request_reset(req, c->cfg.max_body);
	pthread_mutex_lock(&c->lock);
	c->stats.in_flight++;
	req->next = c->submitted;
	c->submitted = req;
	pthread_mutex_unlock(&c->lock);
	curl_multi_wakeup(c->multi);
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
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	pthread_mutex_unlock(&c->lock);
}

time_t http_date_parse(const char *text)
{
	if (!text || !text[0])
		return 0;
	time_t t = curl_getdate(text, NULL);
	return t < 0 ? 0 : t;
}
