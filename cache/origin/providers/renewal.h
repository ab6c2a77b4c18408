/*
 * renewal.h - short-lived credentials and their renewal, for every
 * provider whose credentials expire: an OAuth2 bearer token (Azure managed
 * identity, GCS's metadata server; oauth.h) is one kind; any fixed-size
 * credential (a set of AWS keys) fits the same renewal.
 *
 * A struct renewal holds one mount's current credential and the function
 * that fetches a fresh one. renewal_get() hands a copy of the current
 * credential to the signer, renewing it first when due: at 80% of its
 * lifetime or 5 minutes before it expires, whichever comes first, never
 * before half of it (a 60-second token is renewed after 30 s). A failed
 * renewal is retried with backoff (1 s doubling to 60 s) while the current
 * credential still holds, and the signer goes on using it; once it has
 * expired, the signer gets -EACCES (logged once per outage, naming the
 * endpoint) until a renewal succeeds again.
 *
 * A stale answer is a failed renewal: one that has expired already, or
 * expires within RENEWAL_MIN_LIFE_S, the margin under which renew_at()
 * would have it renewed at once (a clock gone wrong, an endpoint serving
 * old keys). It never replaces the current credential; it is backed off
 * as any failure and logged once per outage. At renewal_init() it fails
 * the start with -EKEYEXPIRED, logged saying when it expired.
 *
 * Threads: the renewal's lock makes renewals one at a time for all the
 * threads that share it; the fetch runs under it (a few seconds at most:
 * the endpoint request is bounded).
 *
 * Layer: the origin's providers (cache/origin/providers/), at the bottom:
 * calls no file of its folder; over cache/base/ only.
 */
#ifndef TILEFS_RENEWAL_H
#define TILEFS_RENEWAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* An answer must hold this long from now to be used: renew_at() of one
 * that holds less is now. */
#define RENEWAL_MIN_LIFE_S 2

/*
 * Fetch a fresh credential into OUT (the renewal's size, zeroed before and
 * after); set *expires (0: it does not expire); write what it came from
 * into FROM (one line, nothing secret) for messages. 0 or -errno.
 */
typedef int (*renewal_fetch_fn)(void *arg, void *out, time_t *expires, char *from,
				size_t from_size);

struct renewal {
	pthread_mutex_t lock;		/* guards every field below */
	const char *subject;		/* what log lines start with ("azure") */
	renewal_fetch_fn fetch;
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
	bool stale_told;		/* a stale answer was logged, and no
					   renewal succeeded since */
	uint64_t renewed, failed;	/* renewals so far, for metrics */
};

/* What a renewal has done, for the metrics. */
struct renewal_counts {
	uint64_t renewed;	/* renewals that succeeded */
	uint64_t failed;	/* renewals that failed */
	bool expired;		/* the credential has expired and could not be
				   renewed: reads fail with EACCES */
};

/*
 * Set R up for credentials of SIZE bytes fetched by FETCH(ARG) and fetch
 * the first at NOW. 0; the fetch's -errno (nothing to release then);
 * -EKEYEXPIRED (a stale first answer); -ENOMEM. SUBJECT is borrowed for
 * R's life. Release with renewal_release().
 */
int renewal_init(struct renewal *r, const char *subject, size_t size, renewal_fetch_fn fetch,
		 void *arg, time_t now);
void renewal_release(struct renewal *r);

/* When a credential obtained at OBTAINED and expiring at EXPIRES is
 * renewed (see the head of this file). */
time_t renew_at(time_t obtained, time_t expires);

/*
 * Copy R's credential into OUT (R's size; the caller zeroes it after use),
 * renewing it first when due at NOW. 0; -EACCES when it has expired and no
 * renewal succeeded.
 */
int renewal_get(struct renewal *r, time_t now, void *out);

/*
 * The origin refused the credential (expired, revoked): renew now, once,
 * unless another thread renewed it since the credential SEEN_OBTAINED was
 * obtained. 0 when a credential newer than that one is in place.
 */
int renewal_force(struct renewal *r, time_t now, time_t seen_obtained);

/* R's counts into OUT, read under its lock. */
void renewal_count(struct renewal *r, struct renewal_counts *out);

#endif
