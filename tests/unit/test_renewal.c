/* test_renewal.c - the renewal of short-lived credentials (renewal.c) on a
 * fake clock with a fake endpoint: when it renews, how it backs off while
 * the credential holds, EACCES once expired, recovery and forced
 * renewals. */
#include "cache/origin/providers/renewal.h"
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A credential of the fake endpoint: any fixed-size one renews alike. */
struct fake_credential {
	char text[32];
};

/* The fake endpoint: answers credentials "tok-1", "tok-2"... that live
 * LIFE seconds from the fake clock, or fails while DOWN. */
struct fake_endpoint {
	time_t clock;
	int life;
	bool down;
	int calls;
	int issued;
};

static int fake_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size)
{
	struct fake_endpoint *e = arg;
	struct fake_credential *t = out;

	e->calls++;
	if (e->down)
		return -ECONNREFUSED;
	e->issued++;
	snprintf(t->text, sizeof(t->text), "tok-%d", e->issued);
	*expires = e->life ? e->clock + e->life : 0;
	snprintf(from, from_size, "the fake endpoint");
	return 0;
}

/* The credential R hands out at the fake clock into OUT: renewal_get(). */
static int token_at(struct renewal *r, struct fake_endpoint *e, time_t at, char *out, size_t size)
{
	struct fake_credential t;

	e->clock = at;
	int rc = renewal_get(r, at, &t);
	snprintf(out, size, "%.31s", rc ? "" : t.text);
	return rc;
}

int main(void)
{
	struct fake_endpoint e = { .clock = 1000, .life = 60 };
	struct renewal r;
	char tok[32];

	/* the schedule */
	CHECK(renew_at(0, 60) == 30, "a 60 s credential is renewed at half its life, 30 s: %ld",
	      (long)renew_at(0, 60));
	CHECK(renew_at(0, 3600) == 2880, "an hour's at 80%%: %ld", (long)renew_at(0, 3600));
	CHECK(renew_at(0, 1200) == 900, "20 minutes: 5 min before expiry: %ld", (long)renew_at(0, 1200));

	/* a 60-second token: renewed when due, not before */
	CHECK(renewal_init(&r, "test", sizeof(struct fake_credential), fake_fetch, &e, 1000) == 0,
	      "the first token is fetched at init");
	CHECK(token_at(&r, &e, 1029, tok, sizeof(tok)) == 0 && strcmp(tok, "tok-1") == 0 && e.calls == 1,
	      "before 30 s the same token, no request: %s after %d calls", tok, e.calls);
	CHECK(token_at(&r, &e, 1030, tok, sizeof(tok)) == 0 && strcmp(tok, "tok-2") == 0 && e.calls == 2,
	      "at 30 s one renewal: %s after %d calls", tok, e.calls);
	CHECK(token_at(&r, &e, 1059, tok, sizeof(tok)) == 0 && strcmp(tok, "tok-2") == 0 && e.calls == 2,
	      "the new token's own schedule starts over: %s", tok);

	/* the endpoint goes down: the current token goes on, retries back off */
	e.down = true;
	CHECK(token_at(&r, &e, 1060, tok, sizeof(tok)) == 0 && strcmp(tok, "tok-2") == 0 && e.calls == 3,
	      "a failed renewal keeps the current token: %s, %d calls", tok, e.calls);
	CHECK(token_at(&r, &e, 1060, tok, sizeof(tok)) == 0 && e.calls == 3,
	      "no new attempt within the backoff: %d calls", e.calls);
	CHECK(token_at(&r, &e, 1061, tok, sizeof(tok)) == 0 && e.calls == 4,
	      "one after 1 s: %d calls", e.calls);
	CHECK(token_at(&r, &e, 1062, tok, sizeof(tok)) == 0 && e.calls == 4,
	      "then the wait doubles: %d calls", e.calls);
	CHECK(token_at(&r, &e, 1063, tok, sizeof(tok)) == 0 && e.calls == 5, "after 2 s: %d calls", e.calls);
	CHECK(token_at(&r, &e, 1090, tok, sizeof(tok)) == -EACCES && e.calls == 6,
	      "expired and the endpoint down: EACCES (%d calls)", e.calls);
	CHECK(token_at(&r, &e, 1091, tok, sizeof(tok)) == -EACCES, "still EACCES while it is down");
	CHECK(r.failed >= 3, "failures are counted: %llu", (unsigned long long)r.failed);
	struct renewal_counts counts;
	renewal_count(&r, &counts);
	CHECK(counts.expired && counts.failed == r.failed && counts.renewed == r.renewed,
	      "the metrics see the expiry and the failures: expired %d, %llu failed",
	      counts.expired, (unsigned long long)counts.failed);
	uint64_t renewed_before = counts.renewed;

	/* it comes back: the mount recovers by itself */
	e.down = false;
	CHECK(token_at(&r, &e, 1200, tok, sizeof(tok)) == 0 && strcmp(tok, "tok-3") == 0,
	      "the endpoint back: a fresh token, reads go on: %s", tok);
	CHECK(r.failures == 0 && r.next_try == 0 && !r.expired, "the backoff is reset");
	renewal_count(&r, &counts);
	CHECK(!counts.expired && counts.renewed == renewed_before + 1,
	      "the metrics see the recovery: expired %d, %llu renewed", counts.expired,
	      (unsigned long long)counts.renewed);

	/* the origin refused the token: one renewal, not one per thread */
	time_t seen = r.obtained;
	CHECK(renewal_force(&r, 1201, seen) == 0 && e.calls == 8 && e.issued == 4,
	      "a refused token is renewed at once: %d calls", e.calls);
	CHECK(renewal_force(&r, 1201, seen) == 0 && e.calls == 8,
	      "a second refusal of the same old token renews nothing: %d calls", e.calls);
	renewal_release(&r);

	/* a credential that does not expire is never renewed */
	e.life = 0;
	e.calls = 0;
	CHECK(renewal_init(&r, "test", sizeof(struct fake_credential), fake_fetch, &e, 0) == 0 &&
	      token_at(&r, &e, 1000000, tok, sizeof(tok)) == 0 && e.calls == 1, "no expiry, no renewal");
	renewal_release(&r);

	/* init fails when the endpoint does */
	e.down = true;
	CHECK(renewal_init(&r, "test", sizeof(struct fake_credential), fake_fetch, &e, 0) ==
	      -ECONNREFUSED, "init returns the fetch's error");
	return check_done();
}
