/* test_url.c - the origin's URL helpers: encoding, decoding, splitting,
 * and the log form that drops credentials and queries. */
#include "cache/origin/url.h"
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *e = url_encode("a b/c+d~_.-%", false);
	CHECK(e && strcmp(e, "a%20b%2Fc%2Bd~_.-%25") == 0, "encode without slash: %s", e);
	free(e);
	e = url_encode("dir/x y.tif", true);
	CHECK(e && strcmp(e, "dir/x%20y.tif") == 0, "encode keeping slashes: %s", e);
	free(e);

	char ok[] = "a%20b%2fc%2B";
	CHECK(url_decode(ok) == 0 && strcmp(ok, "a b/c+") == 0, "decode: %s", ok);
	char bad[] = "a%zz", nul[] = "a%00b", cut[] = "a%2";
	CHECK(url_decode(bad) == -EINVAL, "bad escape refused");
	CHECK(url_decode(nul) == -EINVAL, "encoded NUL refused");
	CHECK(url_decode(cut) == -EINVAL, "cut escape refused");

	char path[64];
	const char *query;
	url_split("https://h.example:8443/c/a%20b.tif?sv=1&sig=x#frag", path, sizeof(path), &query);
	CHECK(strcmp(path, "/c/a%20b.tif") == 0 && query && strcmp(query, "sv=1&sig=x#frag") == 0,
	      "split path and query: %s %s", path, query ? query : "(none)");
	url_split("https://h.example", path, sizeof(path), &query);
	CHECK(strcmp(path, "/") == 0 && !query, "no path is /");

	char *l = url_for_log("https://user:secret@h.example/eo/a.tif?sig=SECRET&x=1");
	CHECK(l && strcmp(l, "https://h.example/eo/a.tif") == 0, "log form drops credentials: %s", l);
	free(l);
	l = url_for_log("http://h.example/a@b.tif#x");
	CHECK(l && strcmp(l, "http://h.example/a@b.tif") == 0, "an '@' in the path stays: %s", l);
	free(l);
	l = url_for_log("https://h.example?sig=a@b");
	CHECK(l && strcmp(l, "https://h.example") == 0, "an '@' in the query is not a user's: %s", l);
	free(l);
	l = url_for_log("user:secret@h.example/a.tif");
	CHECK(l && strcmp(l, "h.example/a.tif") == 0, "without a scheme, the user goes too: %s", l);
	free(l);

	size_t n;
	const char *h = url_host("https://u:p@h.example:8443/c?x=@", &n);
	CHECK(h && n == 14 && strncmp(h, "h.example:8443", 14) == 0 && h[n] == '/',
	      "the host, with its port, after the user: %.*s", (int)n, h ? h : "");
	CHECK(!url_host("h.example/c", &n), "no scheme: no host");
	return check_done();
}
