/* test_renewal.c - the renewal of short-lived credentials (renewal.c) on a
 * fake clock with a fake endpoint: when it renews, how it backs off while
 * the credential holds, EACCES once expired, recovery and forced
 * renewals; an endpoint answering credentials already expired (or within
 * RENEWAL_MIN_LIFE_S of it), counted in fetches and in log lines; and an
 * endpoint that holds its answer, which no signer with a credential in
 * hand may wait for (asserted by the order of events, not by a clock). */
#include "cache/origin/providers/renewal.h"
#include "cache/base/log.h"
#include "check.h"

#include <errno.h>
#include <pthread.h>
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

/* The credential R hands out at the fake clock into OUT: renewal_get(),
 * and then the end of the renewal it started, if any, so that each step
 * of the fake clock sees the one before it whole. */
static int token_at(struct renewal *r, struct fake_endpoint *e, time_t at, char *out, size_t size)
{
	struct fake_credential t;

	e->clock = at;
	int rc = renewal_get(r, at, &t);
	snprintf(out, size, "%.31s", rc ? "" : t.text);
	renewal_settle(r);
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

/* An endpoint that holds every answer after the first until the test
 * opens its gate: a credential_process or a token endpoint taking its
 * time. Every wait is bounded (GATE_WAIT_S), so that a test failing on a
 * renewal that blocks its signers ends. */
#define GATE_WAIT_S 30

struct gated_endpoint {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	time_t clock;		/* lock */
	int calls;		/* lock */
	bool open;		/* lock: answers go */
};

static void gate_wait(struct gated_endpoint *g, const bool *flag, bool want)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += GATE_WAIT_S;
	while (*flag != want && pthread_cond_timedwait(&g->changed, &g->lock, &until) == 0)
		;
}

static int gated_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size)
{
	struct gated_endpoint *g = arg;
	struct fake_credential *t = out;

	pthread_mutex_lock(&g->lock);
	int call = ++g->calls;
	pthread_cond_broadcast(&g->changed);
	if (call > 1)
		gate_wait(g, &g->open, true);
	snprintf(t->text, sizeof(t->text), "tok-%d", call);
	*expires = g->clock + 60;
	pthread_mutex_unlock(&g->lock);
	snprintf(from, from_size, "the gated endpoint");
	return 0;
}

/* A signer on a thread of its own: renewal_get() at AT, then says so. */
struct signer {
	struct renewal *r;
	struct gated_endpoint *g;
	time_t at;
	int rc;
	char text[32];
	bool returned;		/* g->lock */
	bool gate_open;		/* g->open when it returned */
};

static void *sign_once(void *arg)
{
	struct signer *s = arg;
	struct fake_credential t;

	s->rc = renewal_get(s->r, s->at, &t);
	pthread_mutex_lock(&s->g->lock);
	snprintf(s->text, sizeof(s->text), "%.31s", s->rc ? "" : t.text);
	s->returned = true;
	s->gate_open = s->g->open;
	pthread_cond_broadcast(&s->g->changed);
	pthread_mutex_unlock(&s->g->lock);
	return NULL;
}

/* Open or shut the gate. */
static void gate_set(struct gated_endpoint *g, bool open, time_t clock)
{
	pthread_mutex_lock(&g->lock);
	g->open = open;
	g->clock = clock;
	pthread_cond_broadcast(&g->changed);
	pthread_mutex_unlock(&g->lock);
}

/* Wait until the endpoint was asked N times (bounded); its calls. */
static int gate_calls(struct gated_endpoint *g, int n)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += GATE_WAIT_S;
	pthread_mutex_lock(&g->lock);
	while (g->calls < n && pthread_cond_timedwait(&g->changed, &g->lock, &until) == 0)
		;
	int calls = g->calls;
	pthread_mutex_unlock(&g->lock);
	return calls;
}

static void *release_renewal(void *arg)
{
	renewal_release(arg);
	return NULL;
}

/*
 * A renewal falls due while the credential in hand still holds, and the
 * endpoint takes its time: signers get the credential in hand at once,
 * before the endpoint answers (the gate is still shut when they return),
 * one fetch runs, not one a signer, and its answer is swapped in once it
 * comes. An expired credential waits for the renewal. A renewal under way
 * at release is joined.
 */
static void background_renewal(void)
{
	struct gated_endpoint g = { .clock = 1000 };
	struct renewal r;
	struct fake_credential t;
	pthread_t thread;

	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.changed, NULL);
	CHECK(renewal_init(&r, "test", sizeof(struct fake_credential), gated_fetch, &g, 1000) == 0,
	      "the first token, from a gate open for it");

	/* due at 1030, valid until 1060: the gate shut */
	struct signer first = { .r = &r, .g = &g, .at = 1030 };
	CHECK(pthread_create(&thread, NULL, sign_once, &first) == 0, "a signer at 30 s");
	pthread_mutex_lock(&g.lock);
	gate_wait(&g, &first.returned, true);
	bool returned = first.returned, open = g.open;
	pthread_mutex_unlock(&g.lock);
	CHECK(returned && !first.gate_open && !open,
	      "a signer whose credential holds is not held by the renewal's fetch: it returned "
	      "(%d) while the endpoint's answer was held", returned);
	CHECK(returned && first.rc == 0 && strcmp(first.text, "tok-1") == 0,
	      "it signs with the token in hand: '%s'", first.text);
	int calls = gate_calls(&g, 2);
	CHECK(calls == 2, "the renewal runs in the background: %d fetches", calls);
	if (returned) {
		/* more signers while the fetch is held: each at once, no second
		   fetch (on this thread: a signer held here would hang the test) */
		bool all = true;
		for (time_t at = 1031; at < 1040; at++)
			all = all && renewal_get(&r, at, &t) == 0 && strcmp(t.text, "tok-1") == 0;
		pthread_mutex_lock(&g.lock);
		calls = g.calls;
		open = g.open;
		pthread_mutex_unlock(&g.lock);
		CHECK(all && !open && calls == 2,
		      "nine more signers get tok-1 while the answer is held, with no fetch of "
		      "their own: %d fetches", calls);
	}
	gate_set(&g, true, 1000);
	pthread_join(thread, NULL);
	/* the answer is swapped in when it comes (polled, bounded) */
	bool renewed = false;
	for (int i = 0; i < GATE_WAIT_S * 100 && !renewed; i++) {
		renewed = renewal_get(&r, 1040, &t) == 0 && strcmp(t.text, "tok-2") == 0;
		if (!renewed)
			nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	CHECK(renewed, "once the endpoint answers, signers get the renewed token: '%s'", t.text);

	/* expired (tok-2 holds until 1060): the signer waits for the
	   renewal, and gets its answer */
	gate_set(&g, false, 2000);
	struct signer late = { .r = &r, .g = &g, .at = 2000 };
	CHECK(pthread_create(&thread, NULL, sign_once, &late) == 0, "a signer once it expired");
	gate_calls(&g, 3);
	gate_set(&g, true, 2000);
	pthread_join(thread, NULL);
	CHECK(late.rc == 0 && strcmp(late.text, "tok-3") == 0 && late.gate_open,
	      "an expired token waits for the renewal: %d, '%s'", late.rc, late.text);

	/* a renewal under way at release (tok-3 due at 2030): joined */
	gate_set(&g, false, 2000);
	CHECK(renewal_get(&r, 2040, &t) == 0 && strcmp(t.text, "tok-3") == 0 &&
	      gate_calls(&g, 4) == 4, "a renewal held at the endpoint: '%s'", t.text);
	CHECK(pthread_create(&thread, NULL, release_renewal, &r) == 0, "released meanwhile");
	gate_set(&g, true, 2000);
	pthread_join(thread, NULL);
	CHECK(g.calls == 4, "the renewal under way ended, and no other: %d fetches", g.calls);
	pthread_cond_destroy(&g.changed);
	pthread_mutex_destroy(&g.lock);
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
	CHECK(token_at(&r, &e, 1030, tok, sizeof(tok)) == 0 && strcmp(tok, "tok-1") == 0 && e.calls == 2,
	      "at 30 s one renewal, in the background: the token in hand, %s, after %d calls", tok,
	      e.calls);
	CHECK(token_at(&r, &e, 1031, tok, sizeof(tok)) == 0 && strcmp(tok, "tok-2") == 0 && e.calls == 2,
	      "then the renewed one: %s after %d calls", tok, e.calls);
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
	background_renewal();
	return check_done();
}
