/* test_oauth.c - OAuth2 requests (oauth.c): the token answers it reads,
 * and a bearer token's renewal started over https, refused over http. */
#include "cache/origin/providers/oauth.h"
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A token endpoint that counts its calls: oauth_bearer_start() must not
 * call it for an http:// origin. */
static int counting_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size)
{
	int *calls = arg;
	struct oauth_token *t = out;

	(*calls)++;
	snprintf(t->access_token, sizeof(t->access_token), "tok");
	*expires = 0;
	snprintf(from, from_size, "the counting endpoint");
	return 0;
}

int main(void)
{
	time_t exp;
	struct oauth_token t;

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

	/* a token goes over https only: not even fetched for http:// */
	struct renewal r;
	char why[128] = "";
	int calls = 0;
	CHECK(oauth_bearer_start(&r, "test", counting_fetch, &calls, "http://127.0.0.1:1/c", why,
				 sizeof(why)) == -EACCES && calls == 0 &&
	      strstr(why, "over https only"), "http:// refused before any request: %s, %d calls",
	      why, calls);
	CHECK(oauth_bearer_start(&r, "test", counting_fetch, &calls, "https://127.0.0.1:1/c", why,
				 sizeof(why)) == 0 && calls == 1 && renewal_get(&r, time(NULL), &t) == 0 &&
	      strcmp(t.access_token, "tok") == 0, "https://: the first token fetched, then handed out");
	renewal_release(&r);
	return check_done();
}
