/*
 * renewal.c - short-lived credentials and their renewal (see renewal.h).
 *
 * DESIGN: a renewal owns two buffers of the credential's size. A renewal
 * fetches into the scratch one and swaps the two only on success, so a
 * failed renewal leaves the current credential signing until it expires.
 * Every field is under r->lock, held across the fetch: a second thread
 * that finds the credential due waits for the first one's renewal instead
 * of starting its own, and then finds it fresh. Both buffers are zeroed
 * before they are freed, and the scratch one after every fetch. An answer
 * is checked before the swap: a stale one (renewal.h) takes the failure's
 * path, so it neither replaces the current credential nor resets the
 * backoff, and a signer never finds a credential due the moment it came.
 */
#include "cache/origin/providers/renewal.h"
#include "cache/base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKOFF_MAX_S 60	/* a failed renewal waits 1 s, doubling to this */

/* Is an answer expiring at EXPIRES (0: never) stale at NOW (renewal.h)? */
static bool stale(time_t expires, time_t now)
{
	return expires && expires - now < RENEWAL_MIN_LIFE_S;
}

/* EXPIRES as ISO 8601 in UTC, for messages. */
static void expiry_text(time_t expires, char *out, size_t size)
{
	struct tm tm;

	if (!gmtime_r(&expires, &tm) || !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, size, "%lld (seconds since 1970)", (long long)expires);
}

int renewal_init(struct renewal *r, const char *subject, size_t size, renewal_fetch_fn fetch,
		 void *arg, time_t now)
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
	if (stale(r->expires, now)) {
		char at[48];
		expiry_text(r->expires, at, sizeof(at));
		if (r->expires <= now)
			log_error("%s: the credentials from %s expired at %s, before they could be "
				  "used (is this machine's clock right?)", subject, r->from, at);
		else
			log_error("%s: the credentials from %s expire at %s, within %d s: too soon "
				  "to be used", subject, r->from, at, RENEWAL_MIN_LIFE_S);
		err = -EKEYEXPIRED;
		goto free_buffers;
	}
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

void renewal_release(struct renewal *r)
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

time_t renew_at(time_t obtained, time_t expires)
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
static int renew_locked(struct renewal *r, time_t now)
{
	char from[sizeof(r->from)];
	time_t expires = 0;
	int err;

	memset(r->scratch, 0, r->size);
	err = r->fetch(r->fetch_arg, r->scratch, &expires, from, sizeof(from));
	bool stale_answer = !err && stale(expires, now);
	if (stale_answer)
		err = -EKEYEXPIRED;
	if (err) {
		int wait = r->failures < 6 ? 1 << r->failures : BACKOFF_MAX_S;
		r->failures++;
		r->failed++;
		r->next_try = now + wait;
		/* while it holds, try again before it expires, not after */
		if (r->expires && now < r->expires && r->next_try > r->expires)
			r->next_try = r->expires;
		if (stale_answer) {
			char at[48];
			expiry_text(expires, at, sizeof(at));
			/* once per outage: every answer may be the same */
			log_at(r->stale_told ? LOG_DEBUG : LOG_WARN,
			       "%s: %s answered credentials that expire at %s, already expired or "
			       "within %d s: not used, a failed renewal; trying again in %d s",
			       r->subject, from, at, RENEWAL_MIN_LIFE_S,
			       (int)(r->next_try - now));
			r->stale_told = true;
		} else {
			log_warn("%s: renewing the credentials from %s failed (%s); trying again "
				 "in %d s", r->subject, r->from, strerror(-err),
				 (int)(r->next_try - now));
		}
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
	r->stale_told = false;
	r->renewed++;
	log_debug("%s: credentials renewed from %s", r->subject, r->from);
	return 0;
}

int renewal_get(struct renewal *r, time_t now, void *out)
{
	int err = 0;

	pthread_mutex_lock(&r->lock);
	if (r->expires && now >= renew_at(r->obtained, r->expires) && now >= r->next_try)
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

int renewal_force(struct renewal *r, time_t now, time_t seen_obtained)
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

void renewal_count(struct renewal *r, struct renewal_counts *out)
{
	pthread_mutex_lock(&r->lock);
	out->renewed = r->renewed;
	out->failed = r->failed;
	out->expired = r->expired;
	pthread_mutex_unlock(&r->lock);
}
