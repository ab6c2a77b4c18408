/*
 * http.h - the fetcher: every HTTP request tilefs makes goes through the
 * client's fetch threads, each owning a curl multi handle (keep-alive pool,
 * HTTP/2 multiplexing where offered) and a share of the connections. Other
 * threads submit requests and are called back, on the fetch thread that
 * ran the request.
 *
 * Retries: connection errors, timeouts, truncated bodies, 5xx and 429 are
 * retried with exponential backoff and full jitter (Retry-After honoured, up
 * to a cap), at most config.retries times; a truncated ranged body resumes
 * with the bytes still missing. 404 maps to -ENOENT, 401/403 to -EACCES,
 * 412 and a changed ETag during a resume to -ESTALE, everything else to -EIO.
 * This is the one place where curl codes and HTTP statuses become errno.
 * A trickle ends too: each attempt of a ranged GET has a deadline of
 * config.deadline_floor_ms plus its bytes at config.min_rate, and is then
 * retried (resuming) like any timeout. An attempt that finds no origin is
 * not retried while the origin is known down, nor when its caller has a
 * cached answer (stale_ok): reach.h keeps that state.
 *
 * Schemes and redirects: curl speaks http and https only. A request whose
 * signer added headers (credentials), or that carries a form (a token
 * request's, which may hold a secret), follows no redirect: the 3xx is an
 * error (-EIO). Any other request follows up to 5 redirects, from https
 * only to https, from http to http or https, to any host: it carries
 * nothing a redirect could leak (curl never carries a URL's query or
 * user to the new location), and an http:// URL was never protected from
 * whoever answers it. An attempt through a cache tier (tier.h) follows no
 * redirect either: the request goes again to the store directly, which
 * may redirect it, so the tier's headers never reach another host.
 *
 * The one exception to the fetch threads is http_fetch_once(): a single
 * attempt on the calling thread, for credential endpoints asked while
 * opening a source or from a signer (on a fetch thread itself).
 *
 * Layer: the origin (cache/origin/), over cache/base/ and under its
 * providers. Includes cache/base/ and its own folder only; never the
 * providers (cache/origin/providers/), the store, the TIFF layer, the
 * engine or FUSE (tests/check-layers).
 * Only the origin and its providers use curl.h.
 */
#ifndef TILEFS_HTTP_H
#define TILEFS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct curl_slist;
struct http_client;
struct http_request;
struct tier;

struct http_config {
	const char *ca_file;		/* NULL: system trust store */
	int retries;			/* retries after the first attempt */
	int max_connections;		/* per host */
	int connect_timeout_s;
	int stall_timeout_s;		/* no byte received for this long: retry */
	int backoff_base_ms;		/* first retry delay before jitter */
	int backoff_max_ms;
	size_t max_body;		/* bound for unranged bodies (listings) */
	int total_timeout_ms;		/* bound on a whole unranged transfer;
					   0: 10 * stall_timeout_s */
	int deadline_floor_ms;		/* a ranged GET or a HEAD must end within */
	int min_rate;			/* this + its bytes / min_rate (bytes/s) */
	int fetch_threads;		/* 0: one per 4 connections (http.c) */
};

/* The defaults of http_config_defaults() that a command line may change
 * (tools/options.c shows them in --help). */
#define HTTP_RETRIES_DEFAULT 5
#define HTTP_CONNECTIONS_DEFAULT 64

void http_config_defaults(struct http_config *cfg);

typedef void (*http_done_fn)(struct http_request *req, void *arg);

/* What one attempt of a request sends, for a signer. */
struct http_attempt {
	const char *method;		/* "GET", "HEAD", or req->method */
	const char *url;
	bool ranged;			/* sends Range: bytes=first-last */
	uint64_t first, last;
	const char *if_match;		/* the If-Match value sent, or NULL */
	const char *if_unmodified_since; /* likewise If-Unmodified-Since */
	uint64_t *credential;		/* the signer stores here which of its
					   credentials signed the attempt (its
					   renewal's serial), or leaves 0 for
					   credentials that never change: see
					   http_request.credential */
};

/*
 * Add credentials for one attempt by appending header lines to *headers
 * (curl_slist_append). Called on a fetch thread before every attempt, so
 * a resumed range is signed as sent; fetch threads may sign different
 * requests at once. Returns 0 or -errno (fails the request).
 */
typedef int (*http_sign_fn)(void *signer, const struct http_attempt *a,
			    struct curl_slist **headers);

/*
 * Say why an error response failed, from the start of its body (LEN bytes
 * at BODY, NUL-terminated, at most sizeof(error_body) - 1): true with a
 * short reason in REASON (cut to SIZE), which the message shows as
 * "HTTP 403 (REASON)"; false when the body does not say. Only the provider
 * knows how its origin words errors. Called on a fetch thread.
 */
typedef bool (*http_describe_fn)(const char *body, size_t len, char *reason, size_t size);

/*
 * Did the origin refuse a signed attempt's credentials as expired or
 * revoked (a 4xx STATUS, the start of its error BODY as for
 * http_describe_fn: S3 answers 400 ExpiredToken, Azure 401, Azurite 403,
 * GCS 401)? 1: the signer (SIGNER, req->signer) has renewed them (or
 * follows the store elsewhere), and the request is sent once more at once,
 * not counted as a retry; -EACCES: they were refused and cannot be
 * renewed, and the request fails with EACCES, as a 403 does, whatever the
 * status; 0: the answer is not about them. Called on a fetch thread, at
 * most once per request; fetch threads may call it at once for different
 * requests.
 */
typedef int (*http_rejected_fn)(void *signer, long status, const char *body, size_t len);

/*
 * Take LEN bytes of a ranged body that belong at AT bytes past req->off,
 * instead of their being copied into req->body. AT grows from 0 as the
 * bytes come; it starts at 0 again when an origin answers a resumed range
 * with the whole object (HTTP 200), and the bytes come again. Bytes are
 * handed on only once the answer's status and Content-Range say they are
 * the ones asked for; whether they are of the version asked for is known
 * only when the request is done (its ETag). Returns 0, or -errno, which
 * ends the request with that error and no retry. Called on the fetch
 * thread.
 */
typedef int (*http_sink_fn)(void *sink_arg, uint64_t at, const char *data, size_t len);

/*
 * One request. The caller owns it and keeps it alive until done() runs (on
 * the fetch thread that ran it, or in http_client_free() for one submitted
 * while the client stopped: done() must be quick and must not
 * submit-and-wait; done() of different requests may run at once).
 */
struct http_request {
	/* set by the caller */
	const char *url;		/* full URL, may hold a query: never logged */
	const char *log_name;		/* what log lines call it */
	bool head;			/* HEAD instead of GET */
	const char *method;		/* NULL: GET (or HEAD); else sent with
					   no body (a metadata token's PUT) */
	const char *form;		/* NULL, or a POST's body (an OAuth2
					   token request, www-form-urlencoded);
					   http_fetch_once() only */
	bool background;		/* prefetch: yields to other requests */
	bool stale_ok;			/* the caller has a cached answer to give
					   if no origin answers: not retried
					   then (reach.h) */
	uint64_t off, len;		/* len > 0: GET bytes off..off+len-1 into
					   body, which holds len bytes (caller's);
					   len == 0: the whole body, malloc'ed into
					   body (caller frees) */
	const char *if_match;		/* ETag the object must still have (sent
				   as If-Match unless weak; checked after) */
	const char *if_unmodified_since; /* Last-Modified the object must still
				   have, when it has no ETag (or NULL) */
	http_sign_fn sign;		/* NULL: anonymous */
	void *signer;
	http_describe_fn describe_error; /* NULL: an error is its status alone */
	http_rejected_fn credentials_rejected; /* NULL: no credential expires */
	struct tier *tier;		/* NULL: connect to the URL's host; else
					   send it through this cache tier while
					   the tier answers (see tier.h); set by
					   source_prepare() */
	char *body;
	http_sink_fn sink;		/* len > 0 only; NULL: bytes go to body */
	void *sink_arg;
	http_done_fn done;
	void *arg;

	/* results, valid in done() */
	int err;			/* 0 or -errno */
	long status;			/* last HTTP status, 0 if none */
	size_t body_len;		/* bytes in body */
	uint64_t object_size;		/* total size from Content-Range or
					   Content-Length; UINT64_MAX unknown */
	char etag[128];
	char last_modified[64];
	char challenge[160];		/* a 401's WWW-Authenticate, "" if none */
	uint64_t credential;		/* which credential the signer signed
					   the last attempt with (http_attempt):
					   when err is 0, the one whose request
					   succeeded, which a proof must name */
	char error[160];		/* why it failed, for messages */

	/* private to http.c */
	struct http_request *next;
	int attempt;
	uint64_t submitted_us;
	uint64_t not_before_ms;
	size_t attempt_start;		/* body_len when this attempt began */
	bool restarted;			/* this attempt's 200 restarted the body */
	bool cut_short;			/* we ended a 200 after the bytes asked for */
	int sink_err;			/* the sink's error, which ended the body */
	bool signed_attempt;		/* the signer added headers: no redirects */
	bool renewed;			/* credentials_rejected() said true once */
	bool via_tier;			/* this attempt went to req->tier */
	bool skip_tier;			/* the tier answered a redirect: the
					   store directly from now on */
	uint64_t range_first, range_last; /* from Content-Range; UINT64_MAX none */
	size_t body_cap;
	size_t max_body;
	long retry_after_s;
	char first_etag[128];
	void *easy;
	struct curl_slist *sent_headers;
	char error_body[1024];		/* start of an error response's body */
	size_t error_len;
};

/* Start the fetch threads. Returns NULL on failure (logged). */
struct http_client *http_client_new(const struct http_config *cfg);
/* Stop the fetch threads; requests still queued or in flight complete
 * with -ECANCELED, and so does every request their done() submits
 * meanwhile (a retry), whose done() runs on the calling thread once the
 * fetch threads have ended. No other thread may submit once this is
 * called. */
void http_client_free(struct http_client *client);

/* Queue req; done() is always called exactly once, later, on a fetch
 * thread (or in http_client_free(), for a request a done() submitted while
 * the client stopped). */
void http_submit(struct http_client *client, struct http_request *req);
/* How many more background requests would start at once now: the
 * connections demand requests have left idle lately, less those background
 * requests hold or wait for. A producer of background work submits no more
 * than this, so that none waits queued behind others while a reader may
 * need its bytes. */
int http_background_room(struct http_client *client);
/* The connections CLIENT opens at most (http_config.max_connections). */
int http_connections(const struct http_client *client);
/* Submit and wait; returns req->err. req->done and req->arg are overwritten. */
int http_run(struct http_client *client, struct http_request *req);

/* An HTTP date (Last-Modified: "Sun, 06 Nov 1994 08:49:37 GMT", or the
 * older forms) as time_t; 0 when TEXT is NULL, empty or not a date. */
time_t http_date_parse(const char *text);

/*
 * One attempt of REQ now, on the calling thread, on a connection of its
 * own: no retries, no log lines (the caller says what a failure means),
 * done() is not called. For the few requests made outside the fetch
 * thread's work, such as credentials from a metadata service while a
 * source opens or while a signer runs. Returns req->err.
 */
int http_fetch_once(const struct http_config *cfg, struct http_request *req);

/* Upper bounds (seconds) of the request latency histogram's buckets; the
 * last bucket counts the rest. */
#define HTTP_LATENCY_BUCKETS 14
extern const double http_latency_bounds[HTTP_LATENCY_BUCKETS - 1];

/* Counters since start, for logs and metrics. */
struct http_stats {
	uint64_t requests, bytes, retries, failures;
	uint64_t in_flight;		/* submitted, not yet done */
	uint64_t tier_attempts;		/* attempts sent to the cache tier */
	uint64_t tier_fallbacks;	/* attempts sent to the store instead,
					   since the tier could not be reached */
	uint64_t latency[HTTP_LATENCY_BUCKETS];	/* requests by submit-to-done
						   time (retries included) */
	double latency_sum;		/* seconds */
	bool origin_up;			/* reach.h: the origin answers */
	uint64_t stale_answers;		/* given from the cache unasked, the
					   origin being down (reach.h) */
};
void http_client_stats(struct http_client *client, struct http_stats *out);

/* The origin's outage state (reach.h) that CLIENT's fetch threads keep:
 * while it is down, a request that finds no origin is not retried, and
 * callers with a cached answer give it (borrowed with CLIENT). */
struct reach *http_reach(struct http_client *client);

#endif
