/* test_renewal.c - the renewal of short-lived credentials (renewal.c) on a
 * fake clock with a fake endpoint: when it renews, how it backs off while
 * the credential holds, EACCES once expired, recovery and forced
 * renewals; an endpoint answering credentials already expired (or within
 * RENEWAL_MIN_LIFE_S of it), counted in fetches and in log lines. */
#include "cache/origin/providers/renewal.h"
#include "cache/base/log.h"
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	int stale_life;		/* non-zero: answers live this long (<= 1 s,
				   or negative: expired already) */
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
	*expires = e->stale_life ? e->clock + e->stale_life : e->life ? e->clock + e->life : 0;
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

/* Lines of the log file PATH that hold TEXT. */
static int log_lines_with(const char *path, const char *text)
{
	char line[1024];
	int n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, text) != NULL;
	fclose(f);
	return n;
}

/*
 * An endpoint that answers credentials already expired (a clock gone
 * wrong, a cache serving old keys) after a first good answer: every
 * answer is a failed renewal, backed off as any failure, while the
 * current credential goes on signing until it expires; the expiry and
 * the stale answers are logged once for the outage, not once a fetch.
 */
static void stale_answers(void)
{
	struct fake_endpoint e = { .clock = 1000, .life = 60 };
	char log_path[] = "/tmp/test_renewal.XXXXXX", tok[32];
	struct renewal r;
	int fd = mkstemp(log_path);

	log_set_level(LOG_INFO);
	CHECK(fd >= 0 && log_set_file(log_path) == 0, "the log goes to %s", log_path);
	if (fd >= 0)
		close(fd);
	CHECK(renewal_init(&r, "test", sizeof(struct fake_credential), fake_fetch, &e, 1000) == 0,
	      "a first good answer");
	e.stale_life = -3600;
	CHECK(token_at(&r, &e, 1030, tok, sizeof(tok)) == 0 && strcmp(tok, "tok-1") == 0 &&
	      e.calls == 2, "an expired answer at renewal keeps the current token: '%s', %d calls",
	      tok, e.calls);
	CHECK(r.failures == 1 && r.failed == 1 && r.renewed == 0 && r.expires == 1060,
	      "it counts as a failed renewal: %d failures, %llu failed, expires %ld", r.failures,
	      (unsigned long long)r.failed, (long)r.expires);
	/* readers sign 10 times a second for 170 s: the fetches are those of
	   the backoff (1, 2, 4, 8 s, then the expiry at 1060, then 32 and
	   60 s), not one a signature */
	int granted = 0, refused = 0;
	for (time_t t = 10300; t < 12000; t++) {
		int rc = token_at(&r, &e, t / 10, tok, sizeof(tok));
		granted += rc == 0 && strcmp(tok, "tok-1") == 0;
		refused += rc == -EACCES;
	}
	CHECK(e.calls == 9, "fetches by 1200: %d (at 1000, 1030, 1031, 1033, 1037, 1045, 1060, "
	      "1092, 1152)", e.calls);
	CHECK(granted == 300 && refused == 1400,
	      "the current token signs until it expires, then EACCES: %d signed, %d refused",
	      granted, refused);
	CHECK(log_lines_with(log_path, "cannot be renewed") == 1,
	      "the expiry is logged once for the outage: %d lines",
	      log_lines_with(log_path, "cannot be renewed"));
	CHECK(log_lines_with(log_path, "already expired") == 1,
	      "the stale answers are logged once for the outage: %d lines",
	      log_lines_with(log_path, "already expired"));
	/* an answer within RENEWAL_MIN_LIFE_S of its expiry fails alike */
	e.stale_life = RENEWAL_MIN_LIFE_S - 1;
	CHECK(token_at(&r, &e, 1212, tok, sizeof(tok)) == -EACCES && e.calls == 10,
	      "an answer expiring in %d s is no renewal either: %d calls", e.stale_life, e.calls);
	CHECK(renewal_force(&r, 1300, r.obtained) != 0 && r.obtained == 1000 && e.calls == 11,
	      "nor is it a forced renewal: %d calls", e.calls);
	/* the endpoint mends: reads go on */
	e.stale_life = 0;
	CHECK(token_at(&r, &e, 1400, tok, sizeof(tok)) == 0 && tok[0] && strcmp(tok, "tok-1") != 0 &&
	      !r.expired && r.failures == 0, "a good answer again: %s", tok);
	CHECK(log_lines_with(log_path, "renewed; reads go on") == 1, "the recovery is logged");
	/* the next outage is logged again, once */
	e.stale_life = -1;
	for (time_t t = 1430; t < 1700; t++)
		token_at(&r, &e, t, tok, sizeof(tok));
	CHECK(log_lines_with(log_path, "cannot be renewed") == 2 &&
	      log_lines_with(log_path, "already expired") == 2,
	      "a second outage, logged once more: %d, %d lines",
	      log_lines_with(log_path, "cannot be renewed"),
	      log_lines_with(log_path, "already expired"));
	renewal_release(&r);

	/* a first answer that is stale fails the start, saying so */
	e.clock = 2000;
	e.stale_life = -1;
	CHECK(renewal_init(&r, "test", sizeof(struct fake_credential), fake_fetch, &e, 2000) ==
	      -EKEYEXPIRED, "init refuses an expired first answer");
	e.stale_life = RENEWAL_MIN_LIFE_S - 1;
	CHECK(renewal_init(&r, "test", sizeof(struct fake_credential), fake_fetch, &e, 2000) ==
	      -EKEYEXPIRED, "and one that expires within %d s", RENEWAL_MIN_LIFE_S);
	CHECK(log_lines_with(log_path, "before they could be used") == 1 &&
	      log_lines_with(log_path, "too soon to be used") == 1,
	      "each start says why: %d, %d lines",
	      log_lines_with(log_path, "before they could be used"),
	      log_lines_with(log_path, "too soon to be used"));
	e.stale_life = RENEWAL_MIN_LIFE_S;
	CHECK(renewal_init(&r, "test", sizeof(struct fake_credential), fake_fetch, &e, 2000) == 0 &&
	      renew_at(r.obtained, r.expires) > 2000,
	      "one that holds %d s is taken, and not due at once", RENEWAL_MIN_LIFE_S);
	renewal_release(&r);
	log_reset_file();
	unlink(log_path);
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

	stale_answers();
	return check_done();
}
