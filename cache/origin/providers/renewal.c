/*
 * renewal.c - short-lived credentials and their renewal (see renewal.h).
 *
 * DESIGN: a renewal owns two buffers of the credential's size. A renewal
 * fetches into the scratch one and swaps the two only on success, so a
 * failed renewal leaves the current credential signing until it expires.
 *
 * Renewals run on a thread of their own (renew_thread()), one at a time,
 * started by whichever signer finds the credential due (start_locked());
 * no lock is held across the fetch, which may take as long as its
 * endpoint's bound (a credential_process: 30 s). Under r->lock:
 *   (R1) renewing is set by start_locked() and cleared by renew_thread()
 *        once it has swapped or failed, broadcasting settled; while it is
 *        set, scratch is the renewal thread's alone, and no second
 *        renewal starts.
 *   (R2) current, obtained, expires and serial change together, only in
 *        finish_locked(), on a good answer: a signer copies a credential
 *        and its serial in one critical section, so a serial always names
 *        the credential that was copied with it.
 *   (R3) while the credential in hand holds, a signer never waits: it
 *        copies it and goes (renewal_get()); once it has expired (or the
 *        origin refused it: renewal_force()) the signer waits on settled
 *        for the renewal under way, at most RENEWAL_WAIT_MAX_S.
 *   (R4) every renewal thread is joined once: by the next start_locked()
 *        (it has ended: renewing is clear, it only returns) or by
 *        renewal_release(), which waits for renewing to clear first.
 * Both buffers are zeroed before they are freed, and the scratch one after
 * every fetch. An answer is checked before the swap: a stale one
 * (renewal.h) takes the failure's path, so it neither replaces the current
 * credential nor resets the backoff, and a signer never finds a
 * credential due the moment it came.
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
	r->serial = 1;
	err = -pthread_mutex_init(&r->lock, NULL);
	if (err)
		goto free_buffers;
	pthread_condattr_t attr;
	err = -pthread_condattr_init(&attr);
	if (!err) {
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		err = -pthread_cond_init(&r->settled, &attr);
		pthread_condattr_destroy(&attr);
	}
	if (err)
		goto destroy_lock;
	return 0;
destroy_lock:
	pthread_mutex_destroy(&r->lock);
free_buffers:
	if (r->current)
		explicit_bzero(r->current, size);
	free(r->current);
	free(r->scratch);
	memset(r, 0, sizeof(*r));
	return err;
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

/* The answer of a renewal started at NOW: EXPIRES and FROM, in scratch
 * when ERR is 0; swap it in, or schedule the next try. Called with
 * r->lock held, by the renewal thread. 0 or the fetch's -errno. */
static int finish_locked(struct renewal *r, time_t now, int err, time_t expires,
			 const char *from)
{
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
	r->current = r->scratch;	/* (R2) */
	r->scratch = old;
	explicit_bzero(r->scratch, r->size);
	if (r->expired)
		log_info("%s: credentials from %s renewed; reads go on", r->subject, from);
	snprintf(r->from, sizeof(r->from), "%s", from);
	r->obtained = now;
	r->expires = expires;
	r->serial++;
	r->failures = 0;
	r->next_try = 0;
	r->expired = false;
	r->stale_told = false;
	r->renewed++;
	log_debug("%s: credentials renewed from %s", r->subject, r->from);
	return 0;
}

/* A renewal's thread: fetch into scratch with no lock held, then finish
 * under it and say so (R1). */
static void *renew_thread(void *arg)
{
	struct renewal *r = arg;
	char from[sizeof(r->from)] = "";
	time_t expires = 0;

	pthread_mutex_lock(&r->lock);
	time_t now = r->renew_now;
	pthread_mutex_unlock(&r->lock);
	memset(r->scratch, 0, r->size);		/* ours while renewing (R1) */
	int err = r->fetch(r->fetch_arg, r->scratch, &expires, from, sizeof(from));
	pthread_mutex_lock(&r->lock);
	r->last_err = finish_locked(r, now, err, expires, from);
	r->renewing = false;
	pthread_cond_broadcast(&r->settled);
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* Start a renewal at NOW on a thread of its own. Called with r->lock held
 * and no renewal under way. A thread that cannot start is a failed
 * renewal (backed off). */
static void start_locked(struct renewal *r, time_t now)
{
	if (r->joinable) {
		/* the last renewal has ended (R1): it only returns (R4) */
		pthread_join(r->thread, NULL);
		r->joinable = false;
	}
	r->renewing = true;
	r->renew_now = now;
	/* the signal mask is the signer's, as the fetch had on its thread
	   before: a credential_process inherits it */
	int err = -pthread_create(&r->thread, NULL, renew_thread, r);
	if (!err) {
		r->joinable = true;
		return;
	}
	r->renewing = false;
	r->last_err = finish_locked(r, now, err, 0, r->from);
}

/* Wait (r->lock held) until no renewal is under way, at most BOUND_S
 * seconds (0: no bound). False if one still is. */
static bool settle_locked(struct renewal *r, int bound_s)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += bound_s;
	while (r->renewing) {
		if (!bound_s)
			pthread_cond_wait(&r->settled, &r->lock);
		else if (pthread_cond_timedwait(&r->settled, &r->lock, &until) == ETIMEDOUT)
			break;
	}
	return !r->renewing;
}

void renewal_settle(struct renewal *r)
{
	pthread_mutex_lock(&r->lock);
	settle_locked(r, 0);
	pthread_mutex_unlock(&r->lock);
}

void renewal_release(struct renewal *r)
{
	if (!r->fetch)		/* never set up (fetch stays put until here) */
		return;
	pthread_mutex_lock(&r->lock);
	settle_locked(r, 0);
	bool joinable = r->joinable;
	pthread_mutex_unlock(&r->lock);
	if (joinable)
		pthread_join(r->thread, NULL);	/* (R4): it has ended */
	pthread_cond_destroy(&r->settled);
	explicit_bzero(r->current, r->size);
	explicit_bzero(r->scratch, r->size);
	free(r->current);
	free(r->scratch);
	pthread_mutex_destroy(&r->lock);
	memset(r, 0, sizeof(*r));
}

/* Is the credential in place due for renewal at NOW? r->lock held. */
static bool due_locked(const struct renewal *r, time_t now)
{
	return r->expires && now >= renew_at(r->obtained, r->expires);
}

int renewal_get_serial(struct renewal *r, time_t now, void *out, uint64_t *serial)
{
	int err = 0;

	pthread_mutex_lock(&r->lock);
	if (due_locked(r, now) && now >= r->next_try && !r->renewing)
		start_locked(r, now);
	/* (R3): the credential in hand while it holds; else the renewal */
	if (r->expires && now >= r->expires)
		settle_locked(r, RENEWAL_WAIT_MAX_S);
	if (r->expires && now >= r->expires) {
		if (!r->expired)
			log_error("%s: the credentials from %s have expired and cannot be "
				  "renewed; reads fail with EACCES until it answers",
				  r->subject, r->from);
		r->expired = true;
		err = -EACCES;
	} else {
		memcpy(out, r->current, r->size);
		if (serial)
			*serial = r->serial;	/* (R2) */
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

int renewal_get(struct renewal *r, time_t now, void *out)
{
	return renewal_get_serial(r, now, out, NULL);
}

bool renewal_due(struct renewal *r, time_t now)
{
	pthread_mutex_lock(&r->lock);
	bool due = due_locked(r, now);
	pthread_mutex_unlock(&r->lock);
	return due;
}

uint64_t renewal_serial(struct renewal *r)
{
	pthread_mutex_lock(&r->lock);
	uint64_t serial = r->serial;
	pthread_mutex_unlock(&r->lock);
	return serial;
}

int renewal_force(struct renewal *r, time_t now, time_t seen_obtained)
{
	int err = 0;

	pthread_mutex_lock(&r->lock);
	/* a renewal under way may be the one asked for */
	if (r->obtained <= seen_obtained && !settle_locked(r, RENEWAL_WAIT_MAX_S))
		err = -EACCES;
	else if (r->obtained <= seen_obtained && now >= r->next_try) {
		start_locked(r, now);
		err = settle_locked(r, RENEWAL_WAIT_MAX_S) ? r->last_err : -EACCES;
	} else if (r->obtained <= seen_obtained) {
		err = -EACCES;	/* backing off: the endpoint failed just now */
	}
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
