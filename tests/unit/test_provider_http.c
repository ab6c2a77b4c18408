/* test_provider_http.c - URLs and index pages of nginx and Apache. */
#include "cache/origin/providers/provider.h"
#include "check.h"
#include "listing_collect.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


static const char nginx_page[] =
	"<html>\r\n<head><title>Index of /eo/</title></head>\r\n<body>\r\n"
	"<h1>Index of /eo/</h1><hr><pre><a href=\"../\">../</a>\r\n"
	"<a href=\"sub%20dir/\">sub dir/</a>                 22-Nov-2026 09:14       -\r\n"
	"<a href=\"a%2Bb.tif\">a+b.tif</a>                   22-Nov-2026 09:14    12345\r\n"
	"<a href=\"x&amp;y.tif\">x&amp;y.tif</a>            22-Nov-2026 09:14        0\r\n"
	"</pre><hr></body>\r\n</html>\r\n";

static const char apache_page[] =
	"<table><tr><th><a href=\"?C=N;O=D\">Name</a></th></tr>"
	"<tr><td><a href=\"/eo/\">Parent Directory</a></td></tr>\n"
	"<tr><td><a href=\"scene.tif\">scene.tif</a></td><td align=\"right\">2026-11-22 09:14  </td>"
	"<td align=\"right\"> 12K</td></tr>\n"
	"<tr><td><a href=\"/eo/sub/nested/\">nested/</a></td></tr>\n"
	"<tr><td><a href=\"http://elsewhere.example/x.tif\">x.tif</a></td></tr>\n"
	"<tr><td><a href=\"bad%00name\">bad</a></td></tr>\n"
	"</table>";

/* Count entries (collect() keeps only the first 16). */
static int count_entries(void *arg, const struct listing_entry *e)
{
	((struct seen *)arg)->n++;
	return 0;
}

int main(void)
{
	struct source *src;
	struct source_options opts = { 0 };
	char err[256];

	CHECK(source_open("ftp://h/x", &opts, &src, err, sizeof(err)) == -22 && strstr(err, "http"),
	      "ftp is refused: %s", err);
	CHECK(source_open("http://", &opts, &src, err, sizeof(err)) == -22, "no host: %s", err);
	CHECK(source_open("http://127.0.0.1:8080/eo", &opts, &src, err, sizeof(err)) == 0, "opens");

	char *url = source_object_url(src, "sub dir/a+b.tif");
	CHECK(strcmp(url, "http://127.0.0.1:8080/eo/sub%20dir/a%2Bb.tif") == 0,
	      "object URL is encoded under the prefix: %s", url);
	free(url);
	url = source_listing_url(src, "", NULL);
	CHECK(strcmp(url, "http://127.0.0.1:8080/eo/") == 0, "root listing URL: %s", url);
	free(url);
	url = source_listing_url(src, "a/b", NULL);
	CHECK(strcmp(url, "http://127.0.0.1:8080/eo/a/b/") == 0, "listing URL of a dir: %s", url);
	free(url);

	struct seen s = { 0 };
	char *next;
	CHECK(source_parse_listing(src, "", nginx_page, strlen(nginx_page), collect, &s, &next) == 0 &&
	      !next, "nginx page parses");
	CHECK(s.n == 3, "three entries, parent link skipped (%d)", s.n);
	CHECK(strcmp(s.names[0], "sub dir") == 0 && s.dirs[0], "directory, decoded");
	CHECK(strcmp(s.names[1], "a+b.tif") == 0 && !s.dirs[1] && s.sizes[1] == 12345,
	      "file with its exact size (%lld)", (long long)(long long)s.sizes[1]);
	CHECK(strcmp(s.names[2], "x&y.tif") == 0 && s.sizes[2] == 0, "entity decoded, size 0");
	/* nginx prints each file's mtime in UTC to the minute: stat shows it
	   from the first listing on, the same in every mount */
	CHECK(s.mtimes[1] == 1795338840 && s.mtimes[2] == 1795338840,
	      "nginx date 22-Nov-2026 09:14 is its UTC time (%lld)", (long long)s.mtimes[1]);
	CHECK(s.mtimes[0] == 0, "no mtime for a directory (%lld)", (long long)s.mtimes[0]);

	/* a body ends where it ends (no NUL): a size at its very end is read
	   within it (found by tests/fuzz/fuzz_listing.c; ASan saw strtoll
	   read past it) */
	static const char tail_page[] = "<a href=\"t.tif\">t.tif</a>  22-Nov-2026 09:14  4321";
	char *exact = malloc(strlen(tail_page));
	memcpy(exact, tail_page, strlen(tail_page));
	memset(&s, 0, sizeof(s));
	CHECK(source_parse_listing(src, "", exact, strlen(tail_page), collect, &s, &next) == 0 &&
	      s.n == 1 && s.sizes[0] == 4321, "size at the end of an unterminated body (%lld)",
	      (long long)s.sizes[0]);
	free(exact);
	source_free(src);

	CHECK(source_open("https://h.example/eo/sub/", &opts, &src, err, sizeof(err)) == 0, "https opens");
	memset(&s, 0, sizeof(s));
	CHECK(source_parse_listing(src, "", apache_page, strlen(apache_page), collect, &s, &next) == 0,
	      "apache page parses");
	CHECK(s.n == 2, "two entries: sort links, parent, other hosts, NUL names skipped (%d)", s.n);
	CHECK(strcmp(s.names[0], "scene.tif") == 0 && s.sizes[0] == -1,
	      "inexact size is unknown (%lld)", (long long)(long long)s.sizes[0]);
	CHECK(strcmp(s.names[1], "nested") == 0 && s.dirs[1], "absolute link under the prefix");
	CHECK(s.mtimes[0] == 1795338840, "apache date 2026-11-22 09:14 (%lld)",
	      (long long)s.mtimes[0]);

	/* dates with seconds, on a leap day; numbers that are no date, and
	   dates out of range, give none */
	static const char dated_page[] =
		"<a href=\"s.tif\">s.tif</a> 2024-01-01 12:34:56  12K\n"
		"<a href=\"l.tif\">l.tif</a> 29-Feb-2000 23:59  7\n"
		"<a href=\"m.tif\">m.tif</a> 12024-01-01 12:34 1\n"
		"<a href=\"o.tif\">o.tif</a> 31-Foo-2026 09:14 1\n"
		"<a href=\"h.tif\">h.tif</a> 2026-13-01 09:14 2026-11-22 24:00 1\n"
		"<a href=\"t.tif\">t.tif</a> 2026-11-22 09";
	memset(&s, 0, sizeof(s));
	CHECK(source_parse_listing(src, "", dated_page, strlen(dated_page), collect, &s, &next) ==
	      0 && s.n == 6, "dated page parses (%d)", s.n);
	CHECK(s.mtimes[0] == 1704112496, "with seconds (%lld)", (long long)s.mtimes[0]);
	CHECK(s.mtimes[1] == 951868740 && s.sizes[1] == 7, "leap day (%lld)",
	      (long long)s.mtimes[1]);
	CHECK(s.mtimes[2] == 0 && s.mtimes[3] == 0 && s.mtimes[4] == 0 && s.mtimes[5] == 0,
	      "no date from a longer number, a bad month, a bad hour, a cut date "
	      "(%lld %lld %lld %lld)", (long long)s.mtimes[2], (long long)s.mtimes[3],
	      (long long)s.mtimes[4], (long long)s.mtimes[5]);

	/* links without </a> (and no newline): each entry's search stops at
	   the next link, so 200k of them parse in linear time */
	size_t nlinks = 200000, cap = nlinks * 32 + 1, used = 0;
	char *hostile = malloc(cap);
	for (size_t i = 0; i < nlinks; i++)
		used += (size_t)snprintf(hostile + used, cap - used, "<a href=\"f%zu.tif\">f ", i);
	hostile[used] = '\0';
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(&s, 0, sizeof(s));
	CHECK(source_parse_listing(src, "", hostile, used, count_entries, &s, &next) == 0 &&
	      s.n == (int)nlinks, "200k links without </a> all listed (%d)", s.n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	CHECK(took < 5, "... in linear time (%.2f s)", took);
	free(hostile);

	/* the size still comes from after </a>, and a quote-less href or an
	   href inside a value does not confuse the next entry */
	static const char odd_page[] =
		"<a href=x.tif>x</a> 1\n"
		"<a href=\"q.tif?href=z\">q.tif</a>   22-Nov-2026 09:14   77\n"
		"<a href=\"n.tif\">n.tif";
	memset(&s, 0, sizeof(s));
	CHECK(source_parse_listing(src, "", odd_page, strlen(odd_page), collect, &s, &next) == 0 &&
	      s.n == 2 && strcmp(s.names[0], "q.tif") == 0 && s.sizes[0] == 77 &&
	      strcmp(s.names[1], "n.tif") == 0 && s.sizes[1] == -1,
	      "odd links: %d entries, %s %lld", s.n, s.names[0], (long long)s.sizes[0]);
	source_free(src);

	char *l = url_for_log("https://user:secret@h.example/eo/a.tif?sig=SECRET&x=1");
	CHECK(strcmp(l, "https://h.example/eo/a.tif") == 0, "log form drops credentials: %s", l);
	free(l);
	char bad[] = "a%zz";
	CHECK(url_decode(bad) != 0, "bad escape refused");
	CHECK(!source_name_valid("..") && !source_name_valid("") && !source_name_valid("a/b") &&
	      source_name_valid("a b.tif"), "name validity");

	/* the transport's date parser, which the engine uses for Last-Modified */
	CHECK(http_date_parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777, "RFC 1123 date");
	CHECK(http_date_parse("Sunday, 06-Nov-94 08:49:37 GMT") == 784111777, "RFC 850 date");
	CHECK(http_date_parse("") == 0 && http_date_parse(NULL) == 0 &&
	      http_date_parse("not a date") == 0, "no date is 0");
	return check_done();
}
