/*
 * oauth.h - short-lived credentials and their renewal, for every provider
 * whose credentials expire: an OAuth2 bearer token (Azure managed
 * identity, GCS's metadata server) is one kind; any fixed-size credential
 * (a set of AWS keys) fits the same renewal.
 *
 * A struct oauth_renewal holds one mount's current credential and the
 * function that fetches a fresh one. oauth_renewal_get() hands a copy of
 * the current credential to the signer, renewing it first when due: at
 * 80% of its lifetime or 5 minutes before it expires, whichever comes
 * first, never before half of it (a 60-second token is renewed after
 * 30 s). A failed renewal is retried with backoff (1 s doubling to 60 s)
 * while the current credential still holds, and the signer goes on using
 * it; once it has expired, the signer gets -EACCES (logged once per
 * outage, naming the endpoint) until a renewal succeeds again.
 *
 * Also here: what an OAuth2 token endpoint answers (access_token and
 * expires_in or expires_on, as a number or a numeric string) and one
 * bounded GET to an identity endpoint.
 *
 * Threads: the renewal's lock makes renewals one at a time for all the
 * threads that share it; the fetch runs under it (a few seconds at most:
 * the endpoint request is bounded).
 *
 * Layer: the origin's providers (cache/origin/providers/), below the
 * providers that use it; over cache/origin/ and cache/base/.
 */
#ifndef TILEFS_OAUTH_H
#define TILEFS_OAUTH_H

#include "cache/origin/http.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define OAUTH_TOKEN_MAX 8192		/* an access token (Entra's JWTs: ~2-3 KB) */
#define OAUTH_ENDPOINT_MAX_BODY (32 * 1024)	/* an endpoint's answer, at most */
#define OAUTH_MAX_LIFETIME (366 * 86400)	/* an expires_in beyond: bad input */

/* A bearer token: the credential of the OAuth2 providers. */
struct oauth_token {
	char access_token[OAUTH_TOKEN_MAX];	/* NUL-terminated, printable */
};

/*
 * Fetch a fresh credential into OUT (the renewal's size, zeroed before and
 * after); set *expires (0: it does not expire); write what it came from
 * into FROM (one line, nothing secret) for messages. 0 or -errno.
 */
typedef int (*oauth_fetch_fn)(void *arg, void *out, time_t *expires, char *from,
			      size_t from_size);

struct oauth_renewal {
	pthread_mutex_t lock;		/* guards every field below */
	const char *subject;		/* what log lines start with ("azure") */
	oauth_fetch_fn fetch;
	void *fetch_arg;
	size_t size;			/* bytes of a credential */
	void *current;			/* the credential signing now */
	void *scratch;			/* a renewal's, swapped in on success */
	time_t obtained, expires;	/* of current; expires 0: never */
	char from[160];			/* what current came from, for messages */
	time_t next_try;		/* a failed renewal waits until then */
	int failures;			/* renewals failed in a row */
	bool expired;			/* a signer found it expired, and no
					   renewal succeeded since (the expiry
					   is logged once per outage) */
	uint64_t renewed, failed;	/* renewals so far, for metrics */
};

/* What a renewal has done, for the metrics. */
struct oauth_renewal_counts {
	uint64_t renewed;	/* renewals that succeeded */
	uint64_t failed;	/* renewals that failed */
	bool expired;		/* the credential has expired and could not be
				   renewed: reads fail with EACCES */
};

/*
 * Set R up for credentials of SIZE bytes fetched by FETCH(ARG) and fetch
 * the first at NOW. 0; the fetch's -errno (nothing to release then);
 * -ENOMEM. SUBJECT is borrowed for R's life. Release with
 * oauth_renewal_release().
 */
int oauth_renewal_init(struct oauth_renewal *r, const char *subject, size_t size,
		       oauth_fetch_fn fetch, void *arg, time_t now);
/*
 * oauth_renewal_init() of bearer tokens (struct oauth_token) for a source
 * whose requests go to URL: a token crosses the network only encrypted,
 * so not for an http:// URL. 0 (R set up, as from oauth_renewal_init());
 * -ENOMEM; else -EACCES with why no token was had in WHY (WHY_SIZE).
 */
int oauth_bearer_start(struct oauth_renewal *r, const char *subject, oauth_fetch_fn fetch,
		       void *arg, const char *url, char *why, size_t why_size);
void oauth_renewal_release(struct oauth_renewal *r);

/* When a credential obtained at OBTAINED and expiring at EXPIRES is
 * renewed (see the head of this file). */
time_t oauth_renew_at(time_t obtained, time_t expires);

/*
 * Copy R's credential into OUT (R's size; the caller zeroes it after use),
 * renewing it first when due at NOW. 0; -EACCES when it has expired and no
 * renewal succeeded.
 */
int oauth_renewal_get(struct oauth_renewal *r, time_t now, void *out);

/*
 * The origin refused the credential (expired, revoked): renew now, once,
 * unless another thread renewed it since the credential SEEN_OBTAINED was
 * obtained. 0 when a credential newer than that one is in place.
 */
int oauth_renewal_force(struct oauth_renewal *r, time_t now, time_t seen_obtained);

/* R's counts into OUT, read under its lock. */
void oauth_renewal_count(struct oauth_renewal *r, struct oauth_renewal_counts *out);

/*
 * An OAuth2 token answer (JSON: access_token; expires_in seconds, or
 * expires_on seconds since the epoch; as numbers or numeric strings) read
 * at NOW into OUT and *expires. 0, or -EIO when the token is missing, too
 * long or not printable, or the expiry is missing or out of range.
 */
int oauth_token_from_json(const char *text, size_t len, time_t now, struct oauth_token *out,
			  time_t *expires);

/* A bounded answer of an identity endpoint. */
struct oauth_body {
	char text[OAUTH_ENDPOINT_MAX_BODY];	/* NUL-terminated */
	size_t len;
};

/*
 * One request to an identity endpoint (of any cloud): METHOD (NULL: GET,
 * or POST with a FORM) of URL with the header lines of HEADERS
 * (NULL-terminated array; may be NULL) and, when FORM is not NULL, that
 * www-form-urlencoded body (it may hold a secret: never logged); one
 * attempt, 1 s to connect, 5 s in all. 0 and OUT when it answers 200;
 * -EACCES for another status; else the transport's -errno, the failure
 * logged (warn) with NAME and URL without its query.
 */
int oauth_endpoint_call(const char *url, const char *name, const char *method,
			const char *const *headers, const char *form, struct oauth_body *out);
/* The same, each attempt signed by SIGN(SIGNER, ...) (see http.h) instead
 * of given HEADERS: a signed STS request, say. */
int oauth_endpoint_call_signed(const char *url, const char *name, const char *method,
			       const char *form, http_sign_fn sign, void *signer,
			       struct oauth_body *out);

#endif
