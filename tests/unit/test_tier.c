/* test_tier.c - the cache tier's URLs, Host line, secret and the
 * down/up bookkeeping of the fallback. */
#include "cache/origin/tier.h"
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	struct tier *t;
	char err[256], host[128];

	CHECK(tier_new("ftp://tier", NULL, NULL, &t, err, sizeof(err)) == -EINVAL && !t, "ftp refused");
	CHECK(tier_new("http://tier/prefix", NULL, NULL, &t, err, sizeof(err)) == -EINVAL,
	      "a path refused: %s", err);
	CHECK(tier_new("http://u@tier", NULL, NULL, &t, err, sizeof(err)) == -EINVAL, "a user refused");
	CHECK(tier_new("http://tier?x", NULL, NULL, &t, err, sizeof(err)) == -EINVAL, "a query refused");
	CHECK(tier_new("http://tier", "a b", NULL, &t, err, sizeof(err)) == -EINVAL, "a blank refused");
	CHECK(tier_new("http://tier", "", NULL, &t, err, sizeof(err)) == -EINVAL, "empty secret refused");

	CHECK(tier_new("http://10.0.0.5:8080/", NULL, NULL, &t, err, sizeof(err)) == 0, "%s", err);
	CHECK(strcmp(tier_url(t), "http://10.0.0.5:8080") == 0, "url: %s", tier_url(t));
	CHECK(!tier_secret_line(t), "no secret line");
	char *u = tier_request_url(t, "https://acct.blob.core.windows.net/c/a%20b.tif?sv=1&sig=S",
				   host, sizeof(host));
	CHECK(u && strcmp(u, "http://10.0.0.5:8080/c/a%20b.tif?sv=1&sig=S") == 0, "url: %s", u);
	CHECK(strcmp(host, "Host: acct.blob.core.windows.net") == 0, "host: %s", host);
	free(u);
	u = tier_request_url(t, "http://127.0.0.1:9000?list-type=2", host, sizeof(host));
	CHECK(u && strcmp(u, "http://10.0.0.5:8080/?list-type=2") == 0, "bare query: %s", u);
	CHECK(strcmp(host, "Host: 127.0.0.1:9000") == 0, "host with port: %s", host);
	free(u);
	CHECK(!tier_request_url(t, "no-scheme", host, sizeof(host)), "no scheme: NULL");

	/* down: the store for TIER_RETRY_S, reported once; up again resets */
	CHECK(tier_usable(t, 1000), "usable at first");
	CHECK(tier_mark_down(t, 1000), "first failure is reported");
	CHECK(!tier_usable(t, 1000 + TIER_RETRY_S * 1000 - 1), "not usable while down");
	CHECK(tier_usable(t, 1000 + TIER_RETRY_S * 1000), "tried again after the retry time");
	CHECK(!tier_mark_down(t, 40000), "a second failure is not reported again");
	CHECK(tier_mark_up(t), "back up is reported");
	CHECK(!tier_mark_up(t), "once");
	CHECK(tier_usable(t, 40001), "usable once up");
	CHECK(tier_mark_down(t, 50000), "a new outage is reported");
	tier_free(t);

	CHECK(tier_new("https://tier.internal", "s3cr3t", NULL, &t, err, sizeof(err)) == 0, "%s", err);
	CHECK(strcmp(tier_secret_line(t), "X-Tilefs-Tier-Secret: s3cr3t") == 0, "secret line: %s",
	      tier_secret_line(t));
	CHECK(tier_tls(t) && !tier_ca_file(t), "https, the system's CAs");
	tier_free(t);

	/* a CA bundle verifies an https tier; an http one has nothing to verify */
	CHECK(tier_new("https://tier.internal:8443", NULL, "/etc/tier-ca.pem", &t, err,
		       sizeof(err)) == 0, "%s", err);
	CHECK(tier_tls(t) && strcmp(tier_ca_file(t), "/etc/tier-ca.pem") == 0, "ca file");
	tier_free(t);
	CHECK(tier_new("http://tier.internal", NULL, "/etc/tier-ca.pem", &t, err, sizeof(err)) ==
	      -EINVAL && !t && strstr(err, "--tier-ca-file"), "a CA for an http tier: %s", err);
	CHECK(tier_new("http://tier.internal", NULL, NULL, &t, err, sizeof(err)) == 0 &&
	      !tier_tls(t), "http: no TLS");
	tier_free(t);
	return check_done();
}
