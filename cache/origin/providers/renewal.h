/*
 * renewal.h - short-lived credentials and their renewal, for every
 * provider whose credentials expire: an OAuth2 bearer token (Azure managed
 * identity, GCS's metadata server; oauth.h) is one kind; any fixed-size
 * credential (a set of AWS keys) fits the same renewal.
 *
 * A struct renewal holds one mount's current credential and the function
 * that fetches a fresh one. renewal_get() hands a copy of the current
 * credential to the signer; when one is due, at 80% of its lifetime or 5
 * minutes before it expires, whichever comes first, never before half of
 * it (a 60-second token is renewed after 30 s), it starts a renewal in the
 * background and hands out the credential in hand, which still holds. A
 * failed renewal is retried with backoff (1 s doubling to 60 s) while the
 * current credential still holds, and the signer goes on using it; once
 * it has expired, the signer waits for a renewal (at most
 * RENEWAL_WAIT_MAX_S; the fetch itself is bounded) and gets -EACCES
 * (logged once per outage, naming the endpoint) until one succeeds.
 *
 * A stale answer is a failed renewal: one that has expired already, or
 * expires within RENEWAL_MIN_LIFE_S, the margin under which renew_at()
 * would have it renewed at once (a clock gone wrong, an endpoint serving
 * old keys). It never replaces the current credential; it is backed off
 * as any failure and logged once per outage. At renewal_init() it fails
 * the start with -EKEYEXPIRED, logged saying when it expired.
 *
 * Every credential in place has a serial (1 the first, one more at each
 * renewal): a signer says with it which credential signed a request
 * (http_attempt.credential), so that a proof names the principal whose
 * request succeeded, not whoever holds the renewal by then.
 *
 * Threads (renewal.c, DESIGN): renewals run one at a time, on a thread of
 * their own, and no lock is held across a fetch: signers never wait for a
 * renewal while the credential in hand holds.
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
/* A signer whose credential has expired waits this long at most for the
 * renewal under way (its fetch is bounded too: aws_process.h, oauth.h). */
#define RENEWAL_WAIT_MAX_S 60

/*
 * Fetch a fresh credential into OUT (the renewal's size, zeroed before and
 * after); set *expires (0: it does not expire); write what it came from
 * into FROM (one line, nothing secret) for messages. 0 or -errno.
 */
typedef int (*renewal_fetch_fn)(void *arg, void *out, time_t *expires, char *from,
				size_t from_size);

struct renewal {
	pthread_mutex_t lock;		/* guards every field below but those
					   the fetch owns, said so */
	pthread_cond_t settled;		/* a renewal ended (CLOCK_MONOTONIC) */
	const char *subject;		/* what log lines start with ("azure") */
	renewal_fetch_fn fetch;
	void *fetch_arg;
	size_t size;			/* bytes of a credential */
	void *current;			/* the credential signing now */
	void *scratch;			/* the renewal thread's alone while
					   renewing; swapped in on success */
	time_t obtained, expires;	/* of current; expires 0: never */
	uint64_t serial;		/* of current: 1, then one more a renewal */
	char from[160];			/* what current came from, for messages */
	time_t next_try;		/* a failed renewal waits until then */
	int failures;			/* renewals failed in a row */
	bool expired;			/* a signer found it expired, and no
					   renewal succeeded since (the expiry
					   is logged once per outage) */
	bool stale_told;		/* a stale answer was logged, and no
					   renewal succeeded since */
	bool renewing;			/* a renewal thread is fetching */
	bool joinable;			/* thread was started and not joined */
	pthread_t thread;		/* the last renewal's */
	time_t renew_now;		/* the clock when the renewal started */
	int last_err;			/* the last renewal's: 0 or -errno */
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
 * the first at NOW, on the calling thread. 0; the fetch's -errno (nothing
 * to release then); -EKEYEXPIRED (a stale first answer); -ENOMEM. SUBJECT
 * is borrowed for R's life. FETCH runs on a renewal thread afterwards,
 * never two at once. Release with renewal_release(), which waits for a
 * renewal under way to end and joins its thread.
 */
int renewal_init(struct renewal *r, const char *subject, size_t size, renewal_fetch_fn fetch,
		 void *arg, time_t now);
void renewal_release(struct renewal *r);

/* When a credential obtained at OBTAINED and expiring at EXPIRES is
 * renewed (see the head of this file). */
time_t renew_at(time_t obtained, time_t expires);

/*
 * Copy R's credential into OUT (R's size; the caller zeroes it after use),
 * and its serial into *SERIAL (when not NULL). When one is due at NOW, a
 * renewal starts in the background and the credential in hand is copied
 * while it holds; only an expired one waits for the renewal (bounded). 0;
 * -EACCES when it has expired and no renewal succeeded.
 */
int renewal_get(struct renewal *r, time_t now, void *out);
int renewal_get_serial(struct renewal *r, time_t now, void *out, uint64_t *serial);

/* Is R's credential in place due for renewal at NOW (or expired)? */
bool renewal_due(struct renewal *r, time_t now);

/* The serial of R's credential in place now (see the head of this file). */
uint64_t renewal_serial(struct renewal *r);

/* Wait until no renewal of R is under way (a renewal started by
 * renewal_get() has swapped its credential in, or failed). */
void renewal_settle(struct renewal *r);

/*
 * The origin refused the credential (expired, revoked): renew now, once,
 * unless another thread renewed it since the credential SEEN_OBTAINED was
 * obtained; waits for that renewal (a renewal under way first), as for an
 * expired credential. 0 when a credential newer than that one is in place.
 */
int renewal_force(struct renewal *r, time_t now, time_t seen_obtained);

/* R's counts into OUT, read under its lock. */
void renewal_count(struct renewal *r, struct renewal_counts *out);

#endif
