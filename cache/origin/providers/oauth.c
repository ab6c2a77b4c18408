/*
 * oauth.c - short-lived credentials and their renewal (see oauth.h).
 *
 * DESIGN: a renewal owns two buffers of the credential's size. A renewal
 * fetches into the scratch one and swaps the two only on success, so a
 * failed renewal leaves the current credential signing until it expires.
 * Every field is under r->lock, held across the fetch: a second thread
 * that finds the credential due waits for the first one's renewal instead
 * of starting its own, and then finds it fresh. Both buffers are zeroed
 * before they are freed, and the scratch one after every fetch.
 */
#include "cache/origin/providers/oauth.h"
#include "cache/base/log.h"
#include "cache/origin/http.h"
#include "cache/origin/json.h"
#include "cache/origin/url.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BACKOFF_MAX_S 60	/* a failed renewal waits 1 s, doubling to this */

int oauth_renewal_init(struct oauth_renewal *r, const char *subject, size_t size,
		       oauth_fetch_fn fetch, void *arg, time_t now)
{
	int err;

	memset(r, 0, sizeof(*r));
	r->subject = subject;
	r->fetch = fetch;
	r->fetch_arg = arg;
	r->size = size;
	r->current = calloc(1, size);
	r->scratch = calloc(1, size);
	if (!r->current || !r->scratch) {
		err = -ENOMEM;
		goto free_buffers;
	}
	err = fetch(arg, r->current, &r->expires, r->from, sizeof(r->from));
	if (err)
		goto free_buffers;
	r->obtained = now;
	err = -pthread_mutex_init(&r->lock, NULL);
	if (err)
		goto free_buffers;
	return 0;
free_buffers:
	if (r->current)
		explicit_bzero(r->current, size);
	free(r->current);
	free(r->scratch);
	memset(r, 0, sizeof(*r));
	return err;
}

int oauth_bearer_start(struct oauth_renewal *r, const char *subject, oauth_fetch_fn fetch,
		       void *arg, const char *url, char *why, size_t why_size)
{
	if (strncasecmp(url, "https://", 8) != 0) {
		snprintf(why, why_size, "not tried: a token goes over https only");
		return -EACCES;
	}
	int rc = oauth_renewal_init(r, subject, sizeof(struct oauth_token), fetch, arg,
				    time(NULL));
	if (rc == 0 || rc == -ENOMEM)
		return rc;
	snprintf(why, why_size, "no token: %s", strerror(-rc));
	return -EACCES;
}

void oauth_renewal_release(struct oauth_renewal *r)
{
	if (!r->current)
		return;
	explicit_bzero(r->current, r->size);
	explicit_bzero(r->scratch, r->size);
	free(r->current);
	free(r->scratch);
	pthread_mutex_destroy(&r->lock);
	memset(r, 0, sizeof(*r));
}

time_t oauth_renew_at(time_t obtained, time_t expires)
{
	time_t life = expires - obtained;

	if (life <= 0)
		return obtained;
	time_t at80 = obtained + life * 4 / 5, before5 = expires - 300;
	time_t sooner = at80 < before5 ? at80 : before5, half = obtained + life / 2;
	return sooner > half ? sooner : half;
}

/* Fetch a fresh credential now and swap it in; on failure schedule the
 * next try. Called with r->lock held. 0 or the fetch's -errno. */
static int renew_locked(struct oauth_renewal *r, time_t now)
{
	char from[sizeof(r->from)];
	time_t expires = 0;
	int err;

	memset(r->scratch, 0, r->size);
	err = r->fetch(r->fetch_arg, r->scratch, &expires, from, sizeof(from));
	if (err) {
		int wait = r->failures < 6 ? 1 << r->failures : BACKOFF_MAX_S;
		r->failures++;
		r->failed++;
		r->next_try = now + wait;
		/* while it holds, try again before it expires, not after */
		if (r->expires && now < r->expires && r->next_try > r->expires)
			r->next_try = r->expires;
		log_warn("%s: renewing the credentials from %s failed (%s); trying again in %d s",
			 r->subject, r->from, strerror(-err), (int)(r->next_try - now));
		explicit_bzero(r->scratch, r->size);
		return err;
	}
	void *old = r->current;
	r->current = r->scratch;
	r->scratch = old;
	explicit_bzero(r->scratch, r->size);
	if (r->expired)
		log_info("%s: credentials from %s renewed; reads go on", r->subject, from);
	snprintf(r->from, sizeof(r->from), "%s", from);
	r->obtained = now;
	r->expires = expires;
	r->failures = 0;
	r->next_try = 0;
	r->expired = false;
	r->renewed++;
	log_debug("%s: credentials renewed from %s", r->subject, r->from);
	return 0;
}

int oauth_renewal_get(struct oauth_renewal *r, time_t now, void *out)
{
	int err = 0;

	pthread_mutex_lock(&r->lock);
	if (r->expires && now >= oauth_renew_at(r->obtained, r->expires) && now >= r->next_try)
		renew_locked(r, now);
	if (r->expires && now >= r->expires) {
		if (!r->expired)
			log_error("%s: the credentials from %s have expired and cannot be "
				  "renewed; reads fail with EACCES until it answers",
				  r->subject, r->from);
		r->expired = true;
		err = -EACCES;
	} else {
		memcpy(out, r->current, r->size);
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

int oauth_renewal_force(struct oauth_renewal *r, time_t now, time_t seen_obtained)
{
	int err = 0;

	pthread_mutex_lock(&r->lock);
	if (r->obtained <= seen_obtained && now >= r->next_try)
		err = renew_locked(r, now);
	else if (r->obtained <= seen_obtained)
		err = -EACCES;	/* backing off: the endpoint failed just now */
	pthread_mutex_unlock(&r->lock);
	return err;
}

void oauth_renewal_count(struct oauth_renewal *r, struct oauth_renewal_counts *out)
{
	pthread_mutex_lock(&r->lock);
	out->renewed = r->renewed;
	out->failed = r->failed;
	out->expired = r->expired;
	pthread_mutex_unlock(&r->lock);
}

/* ---- token answers ---- */

/* KEY's value as a count of seconds, a JSON number or a string of digits
 * (Azure's managed identity answers strings). 0, -ENOENT or -EIO. */
static int seconds_of(const struct json_doc *doc, const char *key, int64_t *out)
{
	char text[32], *end;

	if (json_doc_int(doc, key, out) == 0)
		return 0;
	int rc = json_doc_string(doc, key, text, sizeof(text));
	if (rc == -ENOENT)
		return -ENOENT;
	if (rc || !text[0] || strspn(text, "0123456789") != strlen(text))
		return -EIO;
	errno = 0;
	*out = strtoll(text, &end, 10);
	return errno ? -EIO : 0;
}

int oauth_token_from_json(const char *text, size_t len, time_t now, struct oauth_token *out,
			  time_t *expires)
{
	struct json_doc *doc;
	int64_t seconds;
	int err = -EIO;

	memset(out, 0, sizeof(*out));
	*expires = 0;
	if (json_doc_parse(text, len, &doc) != 0)
		return -EIO;
	if (json_doc_string(doc, "access_token", out->access_token, sizeof(out->access_token)) ||
	    !out->access_token[0] || strchr(out->access_token, ' '))
		goto free_doc;
	if (seconds_of(doc, "expires_in", &seconds) == 0) {
		if (seconds <= 0 || seconds > OAUTH_MAX_LIFETIME)
			goto free_doc;
		*expires = now + (time_t)seconds;
	} else if (seconds_of(doc, "expires_on", &seconds) == 0) {
		if (seconds <= now || seconds > now + OAUTH_MAX_LIFETIME)
			goto free_doc;
		*expires = (time_t)seconds;
	} else {
		goto free_doc;
	}
	err = 0;
free_doc:
	json_doc_free(doc);
	if (err) {
		explicit_bzero(out, sizeof(*out));
		*expires = 0;
	}
	return err;
}

/* ---- one request to an identity endpoint ---- */

static int add_headers(void *lines, const struct http_attempt *a, struct curl_slist **headers)
{
	(void)a;
	for (const char *const *line = lines; line && *line; line++) {
		struct curl_slist *grown = curl_slist_append(*headers, *line);
		if (!grown)
			return -ENOMEM;
		*headers = grown;
	}
	return 0;
}

int oauth_endpoint_call(const char *url, const char *name, const char *method,
			const char *const *headers, const char *form, struct oauth_body *out)
{
	return oauth_endpoint_call_signed(url, name, method, form, add_headers, (void *)headers,
					  out);
}

int oauth_endpoint_call_signed(const char *url, const char *name, const char *method,
			       const char *form, http_sign_fn sign, void *signer,
			       struct oauth_body *out)
{
	struct http_config cfg;
	struct http_request req = { .url = url, .log_name = name, .method = method,
				    .form = form, .sign = sign, .signer = signer };
	int err;

	out->len = 0;
	out->text[0] = '\0';
	http_config_defaults(&cfg);
	cfg.retries = 0;
	cfg.connect_timeout_s = 1;
	cfg.stall_timeout_s = 5;
	cfg.total_timeout_ms = 5000;
	cfg.max_body = sizeof(out->text) - 1;
	err = http_fetch_once(&cfg, &req);
	if (!err && req.status != 200)
		err = -EACCES;
	if (err) {
		/* the cause a failed start prints, and the log's at a renewal */
		char *shown = url_for_log(url);
		if (req.status && req.status != 200)
			log_warn("%s at %s answered HTTP %ld", name, shown ? shown : "", req.status);
		else
			log_warn("%s at %s: %s", name, shown ? shown : "",
				 req.error[0] ? req.error : strerror(-err));
		free(shown);
	}
	if (!err && req.body_len >= sizeof(out->text))
		err = -EIO;	/* held to cfg.max_body by http.c: never */
	if (!err && req.body_len > 0) {
		memcpy(out->text, req.body, req.body_len);
		out->len = req.body_len;
		out->text[out->len] = '\0';
	}
	if (req.body) {
		explicit_bzero(req.body, req.body_len);
		free(req.body);
	}
	return err;
}
