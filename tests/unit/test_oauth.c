/* test_oauth.c - the renewal of short-lived credentials (oauth.c) on a
 * fake clock with a fake endpoint: when it renews, how it backs off while
 * the credential holds, EACCES once expired, recovery, forced renewals,
 * and the token answers it reads. */
#include "cache/origin/providers/oauth.h"
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The fake endpoint: answers tokens "tok-1", "tok-2"... that live LIFE
 * seconds from the fake clock, or fails while DOWN. */
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
	struct oauth_token *t = out;

	e->calls++;
	if (e->down)
		return -ECONNREFUSED;
	e->issued++;
	snprintf(t->access_token, sizeof(t->access_token), "tok-%d", e->issued);
	*expires = e->life ? e->clock + e->life : 0;
	snprintf(from, from_size, "the fake endpoint");
	return 0;
}

/* The token R hands out at the fake clock into OUT: oauth_renewal_get(). */
static int token_at(struct oauth_renewal *r, struct fake_endpoint *e, time_t at, char *out, size_t size)
{
	struct oauth_token t;

	e->clock = at;
	int rc = oauth_renewal_get(r, at, &t);
	snprintf(out, size, "%.31s", rc ? "" : t.access_token);
	return rc;
}

int main(void)
{
	struct fake_endpoint e = { .clock = 1000, .life = 60 };
	struct oauth_renewal r;
	char tok[32];
	time_t exp;
	struct oauth_token t;

	/* the schedule */
	CHECK(oauth_renew_at(0, 60) == 30, "a 60 s credential is renewed at half its life, 30 s: %ld",
	      (long)oauth_renew_at(0, 60));
	CHECK(oauth_renew_at(0, 3600) == 2880, "an hour's at 80%%: %ld",
	      (long)oauth_renew_at(0, 3600));
	CHECK(oauth_renew_at(0, 1200) == 900, "20 minutes: 5 min before expiry: %ld",
	      (long)oauth_renew_at(0, 1200));

	/* a 60-second token: renewed when due, not before */
	CHECK(oauth_renewal_init(&r, "test", sizeof(struct oauth_token), fake_fetch, &e, 1000) == 0,
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
	struct oauth_renewal_counts counts;
	oauth_renewal_count(&r, &counts);
	CHECK(counts.expired && counts.failed == r.failed && counts.renewed == r.renewed,
	      "the metrics see the expiry and the failures: expired %d, %llu failed",
	      counts.expired, (unsigned long long)counts.failed);
	uint64_t renewed_before = counts.renewed;

	/* it comes back: the mount recovers by itself */
	e.down = false;
	CHECK(token_at(&r, &e, 1200, tok, sizeof(tok)) == 0 && strcmp(tok, "tok-3") == 0,
	      "the endpoint back: a fresh token, reads go on: %s", tok);
	CHECK(r.failures == 0 && r.next_try == 0 && !r.expired, "the backoff is reset");
	oauth_renewal_count(&r, &counts);
	CHECK(!counts.expired && counts.renewed == renewed_before + 1,
	      "the metrics see the recovery: expired %d, %llu renewed", counts.expired,
	      (unsigned long long)counts.renewed);

	/* the origin refused the token: one renewal, not one per thread */
	time_t seen = r.obtained;
	CHECK(oauth_renewal_force(&r, 1201, seen) == 0 && e.calls == 8 && e.issued == 4,
	      "a refused token is renewed at once: %d calls", e.calls);
	CHECK(oauth_renewal_force(&r, 1201, seen) == 0 && e.calls == 8,
	      "a second refusal of the same old token renews nothing: %d calls", e.calls);
	oauth_renewal_release(&r);

	/* a credential that does not expire is never renewed */
	e.life = 0;
	e.calls = 0;
	CHECK(oauth_renewal_init(&r, "test", sizeof(struct oauth_token), fake_fetch, &e, 0) == 0 &&
	      token_at(&r, &e, 1000000, tok, sizeof(tok)) == 0 && e.calls == 1, "no expiry, no renewal");
	oauth_renewal_release(&r);

	/* init fails when the endpoint does */
	e.down = true;
	CHECK(oauth_renewal_init(&r, "test", sizeof(struct oauth_token), fake_fetch, &e, 0) ==
	      -ECONNREFUSED, "init returns the fetch's error");

	/* token answers: Azure's strings, Google's numbers, expires_on */
#define JSON(s) s, strlen(s)
	CHECK(oauth_token_from_json(JSON("{\"access_token\":\"eyJ0\",\"expires_in\":\"3599\","
					 "\"expires_on\":\"1506484173\",\"token_type\":\"Bearer\"}"),
				    100, &t, &exp) == 0 && strcmp(t.access_token, "eyJ0") == 0 &&
	      exp == 3699, "IMDS's strings: expires_in wins: %ld", (long)exp);
	CHECK(oauth_token_from_json(JSON("{\"access_token\":\"ya29.x\",\"expires_in\":60,"
					 "\"token_type\":\"Bearer\"}"), 100, &t, &exp) == 0 &&
	      exp == 160, "the metadata server's number: %ld", (long)exp);
	CHECK(oauth_token_from_json(JSON("{\"access_token\":\"a\",\"expires_on\":\"1000\"}"), 100,
				    &t, &exp) == 0 && exp == 1000, "expires_on alone: %ld", (long)exp);
	CHECK(oauth_token_from_json(JSON("{\"access_token\":\"a\"}"), 100, &t, &exp) == -EIO,
	      "no expiry: refused");
	CHECK(oauth_token_from_json(JSON("{\"access_token\":\"a\",\"expires_in\":\"-5\"}"), 100, &t,
				    &exp) == -EIO, "a negative lifetime: refused");
	CHECK(oauth_token_from_json(JSON("{\"access_token\":\"a\",\"expires_in\":99999999999}"),
				    100, &t, &exp) == -EIO, "a lifetime past a year: refused");
	CHECK(oauth_token_from_json(JSON("{\"access_token\":\"a\\r\\nX: y\",\"expires_in\":60}"),
				    100, &t, &exp) == -EIO && t.access_token[0] == '\0',
	      "a token that would split a header line: refused, nothing kept");
	CHECK(oauth_token_from_json(JSON("{\"error\":\"invalid_request\"}"), 100, &t, &exp) == -EIO,
	      "an error answer: refused");
	return check_done();
}
