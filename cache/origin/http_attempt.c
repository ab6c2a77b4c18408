/*
 * http_attempt.c - one attempt of a request (http_int.h): its curl easy
 * handle set up and signed, its headers and body taken as they come (into
 * the body, or a sink, once they are known to be the range asked for), and
 * the answer judged. The fetch thread (http.c) and http_fetch_once() run
 * attempts; only here do curl codes and HTTP statuses become errno. The
 * signer says which credential signed each attempt (req->credential), so
 * the request that succeeds names the principal that read the object.
 */
#include "cache/origin/http.h"
#include "cache/origin/http_int.h"
#include "cache/origin/tier.h"
#include "cache/base/monotonic.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* curl's receive buffer for a request with a sink (its default is 16 KiB):
 * fewer reads from the socket, though curl still hands the bytes on 16 KiB
 * at a time */
#define SINK_BUFFER (256L << 10)

/* Copy a header value (after "Name:") without surrounding blanks; empty
 * if it does not fit OUT_SIZE or holds a control character. */
static void header_value(const char *line, size_t n, size_t name_len,
			 char *out, size_t out_size)
{
	const char *v = line + name_len, *end = line + n;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	size_t len = (size_t)(end - v);
	out[0] = '\0';
	/* a value that does not fit, or holds a control character, is no
	   value: an ETag goes back out in If-Match, and into messages, and a
	   cut one could name two versions alike */
	if (len >= out_size)
		return;
	for (const char *p = v; p < end; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return;
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
		req->etag[0] = req->last_modified[0] = req->challenge[0] = '\0';
		req->retry_after_s = -1;
		req->range_first = req->range_last = UINT64_MAX;
		return n;
	}
	if (header_is(line, n, "etag:")) {
		header_value(line, n, 5, req->etag, sizeof(req->etag));
	} else if (header_is(line, n, "last-modified:")) {
		header_value(line, n, 14, req->last_modified, sizeof(req->last_modified));
	} else if (header_is(line, n, "www-authenticate:")) {
		header_value(line, n, 17, req->challenge, sizeof(req->challenge));
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

int attempt_prepare(const struct http_config *cfg, struct http_request *req)
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
	req->via_tier = req->tier && !req->skip_tier && tier_usable(req->tier, monotonic_ms());
	char tier_host[300];
	char *tier_url = req->via_tier ? tier_request_url(req->tier, req->url, tier_host,
							    sizeof(tier_host)) : NULL;
	if (req->via_tier && !tier_url) {
		curl_easy_cleanup(easy);
		req->easy = NULL;
		return -ENOMEM;
	}
	const char *target = tier_url ? tier_url : req->url;
	curl_easy_setopt(easy, CURLOPT_URL, target);
	/* over https, wait for a connection being set up to say whether it
	   multiplexes (HTTP/2) rather than open another; plain http is one
	   request per connection, and a wait there would hold every new
	   request until the first answer came */
	curl_easy_setopt(easy, CURLOPT_PIPEWAIT, strncasecmp(target, "https:", 6) == 0 ? 1L : 0L);
	free(tier_url);
	curl_easy_setopt(easy, CURLOPT_PRIVATE, req);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR,
			 strncasecmp(req->url, "https:", 6) == 0 ? "https" : "http,https");
	curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
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
	/* the tier has a certificate of its own, for its own name */
	const char *ca_file = req->via_tier ? tier_ca_file(req->tier) : cfg->ca_file;
	if (ca_file)
		curl_easy_setopt(easy, CURLOPT_CAINFO, ca_file);
	/* each attempt says afresh whom it is signed as: the last one's is
	   the answer's */
	req->credential = 0;
	struct http_attempt a = { .method = req->head ? "HEAD" : "GET", .url = req->url,
				  .credential = &req->credential };
	if (req->method) {
		a.method = req->method;
		curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, req->method);
	}
	if (req->form) {
		/* a token request's form: copied, as the caller may free it */
		curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)strlen(req->form));
		curl_easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, req->form);
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
	/* credentials never follow a redirect (see http.h): not the signer's
	   headers, not a form (a token request's may hold a client secret, an
	   assertion or a refresh token, and curl sends a POST's body again to
	   a 307's or 308's host), nor the tier's headers */
	req->signed_attempt = unsigned_tail ? unsigned_tail->next != NULL : h != NULL;
	curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION,
			 req->signed_attempt || req->form || req->via_tier ? 0L : 1L);
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

void attempt_release(struct http_request *req)
{
	curl_easy_cleanup(req->easy);
	req->easy = NULL;
	curl_slist_free_all(req->sent_headers);
	req->sent_headers = NULL;
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

int attempt_verdict(struct http_request *req, CURLcode code)
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
				 !curl_code_is_tls_trust(code) ? "" : req->via_tier ?
				 " (is the tier's CA trusted? see --tier-ca-file)" :
				 " (is the server's CA trusted? see --ca-file)");
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
		} else if (status < 400 && (req->signed_attempt || req->form)) {
			snprintf(req->error + n, sizeof(req->error) - n,
				 " (a redirect of a %s request: not followed)",
				 req->signed_attempt ? "signed" : "token");
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
	/* a resumed transfer's later answer must name the first one's ETag:
	   one without it may be of another version */
	if (req->first_etag[0] && strcmp(req->first_etag, req->etag) != 0) {
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

