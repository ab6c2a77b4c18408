/* test_oauth.c - OAuth2 requests (oauth.c): the token answers it reads,
 * a bearer token's renewal started over https, refused over http, the
 * principal a token names, and which endpoints may see a secret. */
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

	/* endpoints that may see a secret: parsed, the host compared */
	static const char *const safe[] = {
		"https://login.example/t", "http://127.0.0.1:8080/token", "http://127.1.2.3/",
		"http://localhost:9/token", "HTTP://LOCALHOST/token", "http://[::1]:9/token",
	};
	static const char *const unsafe[] = {
		"http://localhost.attacker.example/token", "http://127.0.0.1.attacker.example/token",
		"http://127.0.0.1@attacker.example/token", "http://user@127.0.0.1/token",
		"http://attacker.example/127.0.0.1", "http://128.0.0.1/", "http://127.0.0.256/",
		"ftp://127.0.0.1/", "http://[::2]/", "not a url", "",
	};
	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		CHECK(oauth_url_safe(safe[i]), "may see a secret: %s", safe[i]);
	for (size_t i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++)
		CHECK(!oauth_url_safe(unsafe[i]), "refused: %s", unsafe[i]);

	/* principals: parts hashed whole and apart, never cut or run together */
	struct oauth_token a = { .access_token = "" }, b = { .access_token = "" };
	char long_a[3000], long_b[3000];
	memset(long_a, 'r', sizeof(long_a) - 1);
	long_a[sizeof(long_a) - 1] = '\0';
	memcpy(long_b, long_a, sizeof(long_b));
	long_b[sizeof(long_b) - 2] = 'o';
	CHECK(oauth_principal_set(&a, "k", (const char *const[]){ long_a }, 1) == 0 &&
	      oauth_principal_set(&b, "k", (const char *const[]){ long_b }, 1) == 0 &&
	      strlen(a.principal) == OAUTH_PRINCIPAL_LEN && strcmp(a.principal, b.principal) != 0,
	      "two names equal but for their last character: two principals");
	oauth_principal_set(&a, "k", (const char *const[]){ "ab", "c" }, 2);
	oauth_principal_set(&b, "k", (const char *const[]){ "a", "bc" }, 2);
	CHECK(strcmp(a.principal, b.principal) != 0, "parts do not run together");
	oauth_principal_set(&b, "k", (const char *const[]){ "ab", "c" }, 2);
	CHECK(strcmp(a.principal, b.principal) == 0, "the same parts: the same principal");

	/* an Entra token's claims: tid with oid, else appid; base64url */
	/* {"tid":"t1","oid":"o1"} and {"tid":"t1","oid":"o2"} */
	struct oauth_token j1 = { .access_token = "eyJhbGciOiJub25lIn0.eyJ0aWQiOiJ0MSIsIm9pZCI6Im8xIn0." };
	struct oauth_token j2 = { .access_token = "eyJhbGciOiJub25lIn0.eyJ0aWQiOiJ0MSIsIm9pZCI6Im8yIn0." };
	/* {"tid":"t1","appid":"o1"}: no oid, the application */
	struct oauth_token j3 = { .access_token = "eyJhbGciOiJub25lIn0.eyJ0aWQiOiJ0MSIsImFwcGlkIjoibzEifQ.sig" };
	CHECK(oauth_jwt_principal(&j1) == 0 && oauth_jwt_principal(&j2) == 0 &&
	      j1.principal[0] && strcmp(j1.principal, j2.principal) != 0,
	      "two objects of one tenant: two principals");
	CHECK(oauth_jwt_principal(&j3) == 0 && strcmp(j1.principal, j3.principal) == 0,
	      "appid stands for oid when there is none");
	/* {"oid":"o1"} (no tenant), an opaque token, a bad middle part */
	struct oauth_token n1 = { .access_token = "eyJhbGciOiJub25lIn0.eyJvaWQiOiJvMSJ9." };
	struct oauth_token n2 = { .access_token = "ya29.opaque.token.mac" };
	struct oauth_token n3 = { .access_token = "a.!!!.c" };
	CHECK(oauth_jwt_principal(&n1) == -ENOENT && !n1.principal[0] &&
	      oauth_jwt_principal(&n2) == -ENOENT && oauth_jwt_principal(&n3) == -ENOENT,
	      "no tenant, not a JWT, not base64url: no principal from claims");
	return check_done();
}
