/*
 * test_provider_azure.c - Azure Blob: SOURCE forms, credentials and their
 * messages, object and listing URLs, a List Blobs page, Shared Key signing.
 *
 * The provider's file is included (not only linked) to reach sign_at(), the
 * signer with a fixed clock: the expected signatures below were computed
 * apart from this code, with Python's hmac and base64 over string-to-sign
 * texts written out by hand from Azure's "Authorize with Shared Key" page.
 */
#include "cache/origin/providers/provider_azure.c"
#include "check.h"
#include "listing_collect.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AZURITE_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
/* 1700000000 = Tue, 14 Nov 2023 22:13:20 GMT */
#define FIXED_TIME ((time_t)1700000000)


static int find(const struct seen *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0)
			return i;
	return -1;
}

/* The value of header NAME in LIST (after "NAME: "), or NULL. */
static const char *header(const struct curl_slist *list, const char *name)
{
	size_t n = strlen(name);
	for (; list; list = list->next)
		if (strncasecmp(list->data, name, n) == 0 && list->data[n] == ':')
			return list->data + n + 2;
	return NULL;
}

/* TEXT with newlines shown as \n, so that a TAP line stays one line. */
static const char *one_line(const char *text)
{
	static char buf[1024];
	size_t o = 0;
	for (const char *p = text ? text : "(null)"; *p && o + 3 < sizeof(buf); p++) {
		if (*p == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	return buf;
}

static void clear_env(void)
{
	unsetenv("AZURE_STORAGE_ACCOUNT");
	unsetenv("AZURE_STORAGE_KEY");
	unsetenv("AZURE_STORAGE_SAS_TOKEN");
}

/*
 * A page as Azurite answers List Blobs (prefix eo/, delimiter /), with the
 * directory's own marker blob, an entity, Encoded names (one decodes to a
 * control character, so it is not a file name), a name that is not a file
 * name, and a continuation marker.
 */
static const char list_page[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>"
	"<EnumerationResults ServiceEndpoint=\"http://127.0.0.1:10123/devstoreaccount1\" "
	"ContainerName=\"cogs\"><Prefix>eo/</Prefix><Marker/><MaxResults>5</MaxResults>"
	"<Delimiter>/</Delimiter><Blobs>"
	"<BlobPrefix><Name>eo/sub/</Name></BlobPrefix>"
	"<Blob><Name>eo/</Name><Properties><Content-Length>0</Content-Length></Properties></Blob>"
	"<Blob><Name>eo/a b&amp;c.tif</Name><Properties>"
	"<Creation-Time>Sun, 22 Nov 2026 09:41:57 GMT</Creation-Time>"
	"<Last-Modified>Sun, 22 Nov 2026 09:41:57 GMT</Last-Modified>"
	"<Etag>0x1FF51A2C4490330</Etag><Content-Length>123456789012</Content-Length>"
	"<Content-Type>image/tiff</Content-Type><BlobType>BlockBlob</BlobType></Properties></Blob>\n"
	"<Blob>\n  <Name Encoded=\"true\">eo/x%0Dy.tif</Name>\n  <Properties>\n"
	"    <Content-Length>7</Content-Length>\n  </Properties>\n</Blob>\n"
	"<Blob><Name Encoded=\"true\">eo/x%2By%25z.tif</Name><Properties>"
	"<Content-Length>8</Content-Length></Properties></Blob>"
	"<Blob><Name>eo/..</Name><Properties><Content-Length>1</Content-Length></Properties></Blob>"
	"<BlobPrefix><Name>eo/with space/</Name></BlobPrefix>"
	"</Blobs><NextMarker>2!84!MDAwMDI0IWVvL3pfbGFzdC50aWYh</NextMarker></EnumerationResults>";

static const char last_page[] =
	"<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ContainerName=\"cogs\">"
	"<Blobs /><NextMarker /></EnumerationResults>";

static void test_sources(void)
{
	struct source_options opts = { 0 };
	struct source *src = NULL;
	char err[512];

	CHECK(provider_azure.matches("az://acct/c") &&
	      provider_azure.matches("https://acct.blob.core.windows.net/c") &&
	      !provider_azure.matches("https://example.org/c") && !provider_azure.matches("s3://b/k"),
	      "matches az:// and *.blob.core.windows.net only");

	clear_env();
	int rc = source_open("az://acct/cogs/eo", &opts, &src, err, sizeof(err));
	CHECK(rc == -EACCES && strstr(err, "AZURE_STORAGE_KEY") && strstr(err, "AZURE_STORAGE_SAS_TOKEN") &&
	      strstr(err, "--no-sign-request"), "no credentials: -EACCES naming what to set: %s", err);

	setenv("AZURE_STORAGE_KEY", "not base64!", 1);
	rc = source_open("az://acct/cogs", &opts, &src, err, sizeof(err));
	CHECK(rc == -EACCES && strstr(err, "AZURE_STORAGE_KEY") && !strstr(err, "not base64!"),
	      "a key that is not base64: -EACCES naming AZURE_STORAGE_KEY, not its value: %s", err);

	setenv("AZURE_STORAGE_KEY", AZURITE_KEY, 1);
	setenv("AZURE_STORAGE_ACCOUNT", "other", 1);
	rc = source_open("az://acct/cogs", &opts, &src, err, sizeof(err));
	CHECK(rc == -EACCES && strstr(err, "other") && strstr(err, "acct"),
	      "AZURE_STORAGE_ACCOUNT must name SOURCE's account: %s", err);
	rc = source_open("az:///cogs/eo", &opts, &src, err, sizeof(err));
	CHECK(rc == 0 && strcmp(((struct azure_source *)src)->account, "other") == 0,
	      "az:///CONTAINER takes the account from AZURE_STORAGE_ACCOUNT");
	source_free(src);
	unsetenv("AZURE_STORAGE_ACCOUNT");
	rc = source_open("az:///cogs", &opts, &src, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "AZURE_STORAGE_ACCOUNT"), "no account at all: %s", err);

	CHECK(source_open("az://acct", &opts, &src, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "CONTAINER"), "no container: %s", err);
	CHECK(source_open("az://Bad_Account/cogs", &opts, &src, err, sizeof(err)) == -EINVAL,
	      "bad account name: %s", err);
	CHECK(source_open("az://acct/Bad_Container", &opts, &src, err, sizeof(err)) == -EINVAL,
	      "bad container name: %s", err);
	CHECK(source_open("https://evil.example/x?.blob.core.windows.net", &opts, &src, err,
			  sizeof(err)) == -EINVAL && strstr(err, "Azure Blob URL"),
	      "a URL that only mentions blob.core.windows.net: %s", err);
	CHECK(source_open("https://acct.blob.core.windows.net.evil.example/cogs", &opts, &src, err,
			  sizeof(err)) == -EINVAL, "a host that only starts like Azure's: %s", err);

	/* Shared Key, real Azure URLs */
	rc = source_open("az://acct/cogs/eo/scenes/", &opts, &src, err, sizeof(err));
	CHECK(rc == 0 && strcmp(src->credentials, "AZURE_STORAGE_KEY") == 0 &&
	      strcmp(src->display, "az://acct/cogs/eo/scenes/") == 0,
	      "Shared Key source opens; credentials from AZURE_STORAGE_KEY");
	char *url = source_object_url(src, "sub dir/a+b.tif");
	CHECK(strcmp(url, "https://acct.blob.core.windows.net/cogs/eo/scenes/sub%20dir/a%2Bb.tif") == 0,
	      "object URL: %s", url);
	free(url);
	url = source_listing_url(src, "", NULL);
	CHECK(strcmp(url, "https://acct.blob.core.windows.net/cogs?restype=container&comp=list"
			  "&prefix=eo/scenes/&delimiter=%2F") == 0, "root listing URL: %s", url);
	struct http_request own = { .url = url }, other = { .url = "https://evil.example/x.tif" },
			    lookalike = { .url = "https://acct.blob.core.windows.net@evil.example/x" };
	source_prepare(src, &own);
	source_prepare(src, &other);
	source_prepare(src, &lookalike);
	CHECK(own.sign && !other.sign && !other.signer && !lookalike.sign,
	      "Shared Key signs the account's URLs only, not another host's");
	free(url);
	source_free(src);

	/* the https form, with an endpoint, a page size and no prefix */
	opts.endpoint = "http://127.0.0.1:10000/devstoreaccount1/";
	opts.page_size = 2;
	rc = source_open("https://DevStoreAccount1.blob.core.windows.net/cogs", &opts, &src, err,
			 sizeof(err));
	CHECK(rc == 0, "https form opens: %s", rc ? err : "");
	url = source_object_url(src, "a.tif");
	CHECK(strcmp(url, "http://127.0.0.1:10000/devstoreaccount1/cogs/a.tif") == 0,
	      "with --endpoint the URL is path-style: %s", url);
	free(url);
	url = source_object_url(src, "");
	CHECK(strcmp(url, "http://127.0.0.1:10000/devstoreaccount1/cogs/") == 0,
	      "the prefix URL (for manifests): %s", url);
	free(url);
	url = source_listing_url(src, "", NULL);
	CHECK(strcmp(url, "http://127.0.0.1:10000/devstoreaccount1/cogs?restype=container&comp=list"
			  "&delimiter=%2F&maxresults=2") == 0, "root listing, no prefix: %s", url);
	free(url);
	url = source_listing_url(src, "a b/c", "2!96!x=");
	CHECK(strcmp(url, "http://127.0.0.1:10000/devstoreaccount1/cogs?restype=container&comp=list"
			  "&prefix=a%20b/c/&delimiter=%2F&marker=2%2196%21x%3D&maxresults=2") == 0,
	      "listing of a directory, next page: %s", url);
	free(url);
	source_free(src);
	opts.endpoint = NULL;
	opts.page_size = 0;

	/* a SAS in SOURCE goes first, and stays out of display */
	rc = source_open("https://acct.blob.core.windows.net/cogs/eo%20x?sv=2021-08-06&sr=c&sp=rl&sig=SECRET%2Bsig%3D",
			 &opts, &src, err, sizeof(err));
	CHECK(rc == 0 && strcmp(src->display, "https://acct.blob.core.windows.net/cogs/eo%20x") == 0 &&
	      !strstr(src->display, "SECRET"), "SAS in SOURCE: not in display (%s)", rc ? err : src->display);
	CHECK(rc == 0 && strcmp(src->credentials, "the SAS in SOURCE") == 0, "credentials: %s",
	      rc ? "" : src->credentials);
	url = source_object_url(src, "a.tif");
	CHECK(strcmp(url, "https://acct.blob.core.windows.net/cogs/eo%20x/a.tif"
			  "?sv=2021-08-06&sr=c&sp=rl&sig=SECRET%2Bsig%3D") == 0,
	      "object URL carries the SAS; the prefix was decoded once: %s", url);
	free(url);
	url = source_listing_url(src, "", "m");
	CHECK(strcmp(url, "https://acct.blob.core.windows.net/cogs?restype=container&comp=list"
			  "&prefix=eo%20x/&delimiter=%2F&marker=m&sv=2021-08-06&sr=c&sp=rl"
			  "&sig=SECRET%2Bsig%3D") == 0, "listing URL carries the SAS: %s", url);
	free(url);
	struct curl_slist *h = NULL;
	struct http_attempt a = { .method = "GET", .url = "https://acct.blob.core.windows.net/cogs/x" };
	CHECK(provider_azure.sign(src, &a, &h) == 0 && header(h, "x-ms-date") &&
	      header(h, "x-ms-version") && strcmp(header(h, "x-ms-version"), "2021-08-06") == 0 &&
	      !header(h, "Authorization"), "SAS: x-ms-date and x-ms-version, no Authorization");
	curl_slist_free_all(h);
	source_free(src);

	/* AZURE_STORAGE_SAS_TOKEN beats AZURE_STORAGE_KEY */
	setenv("AZURE_STORAGE_SAS_TOKEN", "?sv=2021-08-06&sig=ENVSECRET", 1);
	rc = source_open("az://acct/cogs", &opts, &src, err, sizeof(err));
	CHECK(rc == 0 && strcmp(src->credentials, "AZURE_STORAGE_SAS_TOKEN") == 0,
	      "AZURE_STORAGE_SAS_TOKEN is used before AZURE_STORAGE_KEY");
	url = source_object_url(src, "a.tif");
	CHECK(strcmp(url, "https://acct.blob.core.windows.net/cogs/a.tif?sv=2021-08-06&sig=ENVSECRET") == 0,
	      "the token's leading '?' is dropped: %s", url);
	free(url);
	source_free(src);

	/* --no-sign-request: anonymous even with credentials in the environment */
	opts.no_sign_request = true;
	rc = source_open("az://acct/cogs", &opts, &src, err, sizeof(err));
	CHECK(rc == 0 && strcmp(src->credentials, "") == 0, "--no-sign-request: anonymous");
	url = source_object_url(src, "a.tif");
	CHECK(strcmp(url, "https://acct.blob.core.windows.net/cogs/a.tif") == 0, "no query: %s", url);
	free(url);
	h = NULL;
	CHECK(provider_azure.sign(src, &a, &h) == 0 && header(h, "x-ms-version") &&
	      !header(h, "Authorization"), "anonymous: no Authorization");
	curl_slist_free_all(h);
	source_free(src);
	opts.no_sign_request = false;
	clear_env();
}

static void test_listing(void)
{
	struct source_options opts = { .no_sign_request = true };
	struct source *src = NULL;
	struct seen s = { 0 };
	char err[256], *next = NULL;

	CHECK(source_open("az://acct/cogs", &opts, &src, err, sizeof(err)) == 0, "opens anonymously");
	CHECK(source_parse_listing(src, "eo", list_page, strlen(list_page), collect, &s, &next) == 0,
	      "List Blobs page parses");
	CHECK(s.n == 4, "four entries: marker blob, a name with CR and '..' skipped (%d)", s.n);
	int i = find(&s, "sub");
	CHECK(i >= 0 && s.dirs[i] && s.sizes[i] == -1, "BlobPrefix eo/sub/ is directory sub");
	i = find(&s, "with space");
	CHECK(i >= 0 && s.dirs[i], "BlobPrefix with a space");
	i = find(&s, "a b&c.tif");
	CHECK(i >= 0 && !s.dirs[i] && s.sizes[i] == 123456789012LL,
	      "blob, entity decoded, 64-bit Content-Length (%lld)", i >= 0 ? (long long)s.sizes[i] : -1LL);
	CHECK(i >= 0 && strcmp(s.etags[i], "0x1FF51A2C4490330") == 0 && s.mtimes[i] == 1795340517,
	      "Etag and Last-Modified read from Properties");
	i = find(&s, "x+y%z.tif");
	CHECK(i >= 0 && !s.etags[i][0] && s.mtimes[i] == 0, "no Etag or Last-Modified: none");
	i = find(&s, "x+y%z.tif");
	CHECK(i >= 0 && !s.dirs[i] && s.sizes[i] == 8, "Encoded=\"true\" name decoded");
	CHECK(find(&s, "x\ry.tif") < 0, "an Encoded name decoding to a control character is refused");
	CHECK(next && strcmp(next, "2!84!MDAwMDI0IWVvL3pfbGFzdC50aWYh") == 0, "NextMarker: %s",
	      next ? next : "(none)");
	free(next);

	memset(&s, 0, sizeof(s));
	next = NULL;
	CHECK(source_parse_listing(src, "", last_page, strlen(last_page), collect, &s, &next) == 0 &&
	      s.n == 0 && !next, "empty last page: no entries, no marker");
	CHECK(source_parse_listing(src, "", "<html>502</html>", 16, collect, &s, &next) == -EIO,
	      "an answer that is not a blob list: -EIO");
	/* the listing of eo/ must not take blobs of another prefix */
	static const char stray[] = "<EnumerationResults><Blobs><Blob><Name>other/a.tif</Name>"
				    "</Blob></Blobs></EnumerationResults>";
	CHECK(source_parse_listing(src, "eo", stray, strlen(stray), collect, &s, &next) == 0 && s.n == 0,
	      "a name outside the listed prefix is skipped");
	source_free(src);

	/* with PREFIX, names are relative to PREFIX/DIR/ */
	CHECK(source_open("az://acct/cogs/top", &opts, &src, err, sizeof(err)) == 0, "opens with prefix");
	static const char page[] = "<EnumerationResults><Blobs><Blob><Name>top/eo/z.tif</Name>"
				   "<Properties><Content-Length>5</Content-Length></Properties></Blob>"
				   "<BlobPrefix><Name>top/eo/d/</Name></BlobPrefix></Blobs><NextMarker>"
				   "</NextMarker></EnumerationResults>";
	memset(&s, 0, sizeof(s));
	CHECK(source_parse_listing(src, "eo", page, strlen(page), collect, &s, &next) == 0 && s.n == 2 &&
	      find(&s, "z.tif") >= 0 && find(&s, "d") >= 0 && !next, "names relative to PREFIX/eo/");
	CHECK(source_parse_deep_listing(src, "eo", page, strlen(page), collect, &s, &next) ==
	      -ENOTSUP, "a page with a BlobPrefix was not listed deep");

	/* listed deep (no delimiter): every blob below, paths, a marker a folder */
	CHECK(source_lists_deep(src), "Azure lists deep");
	char *url = source_deep_listing_url(src, "eo", "", NULL);
	CHECK(url && strstr(url, "&prefix=top/eo/") && !strstr(url, "delimiter"),
	      "deep listing URL: %s", url ? url : "(none)");
	free(url);
	url = source_deep_listing_url(src, "eo", "S2A_01", NULL);
	CHECK(url && strstr(url, "&prefix=top/eo/S2A_01") && !strstr(url, "delimiter"),
	      "deep listing URL of a run of names: %s", url ? url : "(none)");
	free(url);
	static const char deep[] = "<EnumerationResults><Blobs>"
				   "<Blob><Name>top/eo/p1/</Name></Blob>"
				   "<Blob><Name>top/eo/p1/B02.tif</Name><Properties><Content-Length>7"
				   "</Content-Length><Etag>0x8</Etag></Properties></Blob>"
				   "<Blob><Name>top/eo/p1/../x.tif</Name></Blob>"
				   "</Blobs><NextMarker>m2</NextMarker></EnumerationResults>";
	memset(&s, 0, sizeof(s));
	CHECK(source_parse_deep_listing(src, "eo", deep, strlen(deep), collect, &s, &next) == 0 &&
	      s.n == 2 && s.dirs[0] && strcmp(s.names[0], "p1") == 0 && !s.dirs[1] &&
	      strcmp(s.names[1], "p1/B02.tif") == 0 && s.sizes[1] == 7 &&
	      strcmp(s.etags[1], "0x8") == 0 && next && strcmp(next, "m2") == 0,
	      "deep page: a marker folder, a path with its properties, '..' skipped (%d)", s.n);
	free(next);
	source_free(src);
}

static void test_shared_key(void)
{
	struct source_options opts = { .endpoint = "http://127.0.0.1:10000/devstoreaccount1" };
	struct source *src = NULL;
	char err[256];
	int rc;

	clear_env();
	setenv("AZURE_STORAGE_ACCOUNT", "devstoreaccount1", 1);
	setenv("AZURE_STORAGE_KEY", AZURITE_KEY, 1);
	rc = source_open("az://devstoreaccount1/cogs/eo", &opts, &src, err, sizeof(err));
	CHECK(rc == 0, "Azurite source opens: %s", rc ? err : "");
	struct azure_source *az = (struct azure_source *)src;

	char *url = source_object_url(src, "sub dir/a+b.tif");
	struct http_attempt a = {
		.method = "GET", .url = url, .ranged = true, .first = 262144, .last = 524287,
		.if_match = "\"0x8DC0B1A2B3C4D5E\"",
	};
	char date[40];
	http_date(FIXED_TIME, date, sizeof(date));
	CHECK(strcmp(date, "Tue, 14 Nov 2023 22:13:20 GMT") == 0, "RFC 1123 date: %s", date);
	int e = 0;
	char *text = string_to_sign(az, &a, date, &e);
	/* path-style: the account, then the URL path, which starts with it again */
	static const char expect_blob[] =
		"GET\n\n\n\n\n\n\n\n\"0x8DC0B1A2B3C4D5E\"\n\n\nbytes=262144-524287\n"
		"x-ms-date:Tue, 14 Nov 2023 22:13:20 GMT\nx-ms-version:2021-08-06\n"
		"/devstoreaccount1/devstoreaccount1/cogs/eo/sub%20dir/a%2Bb.tif";
	CHECK(text && strcmp(text, expect_blob) == 0, "string to sign of a ranged GET with If-Match: %s",
	      one_line(text));
	free(text);
	struct curl_slist *h = NULL;
	CHECK(sign_at(az, &a, FIXED_TIME, &h) == 0, "signs");
	const char *auth = header(h, "Authorization");
	CHECK(auth && strcmp(auth, "SharedKey devstoreaccount1:hvU9yWkeUNGqpBG5bzXSxInUpii9KTEFIf7cxIvt2E8=") == 0,
	      "Authorization as computed with Python: %s", auth ? auth : "(none)");
	CHECK(header(h, "x-ms-date") && strcmp(header(h, "x-ms-date"), date) == 0 &&
	      header(h, "x-ms-version") && strcmp(header(h, "x-ms-version"), "2021-08-06") == 0,
	      "x-ms-date and x-ms-version sent as signed");
	curl_slist_free_all(h);
	free(url);
	CHECK(!strstr(src->display, AZURITE_KEY), "no key in display");
	source_free(src);

	/* a listing on real Azure: query parameters lowercased, sorted, decoded */
	opts.endpoint = NULL;
	opts.page_size = 2;
	unsetenv("AZURE_STORAGE_ACCOUNT");
	rc = source_open("az://myaccount/cogs/eo", &opts, &src, err, sizeof(err));
	CHECK(rc == 0, "real Azure source opens");
	az = (struct azure_source *)src;
	url = source_listing_url(src, "a b", "2!96!x=");
	CHECK(strcmp(url, "https://myaccount.blob.core.windows.net/cogs?restype=container&comp=list"
			  "&prefix=eo/a%20b/&delimiter=%2F&marker=2%2196%21x%3D&maxresults=2") == 0,
	      "listing URL: %s", url);
	struct http_attempt l = { .method = "GET", .url = url };
	text = string_to_sign(az, &l, date, &e);
	static const char expect_list[] =
		"GET\n\n\n\n\n\n\n\n\n\n\n\n"
		"x-ms-date:Tue, 14 Nov 2023 22:13:20 GMT\nx-ms-version:2021-08-06\n"
		"/myaccount/cogs\ncomp:list\ndelimiter:/\nmarker:2!96!x=\nmaxresults:2\n"
		"prefix:eo/a b/\nrestype:container";
	CHECK(text && strcmp(text, expect_list) == 0, "string to sign of a listing: %s",
	      one_line(text));
	free(text);
	h = NULL;
	CHECK(sign_at(az, &l, FIXED_TIME, &h) == 0 && header(h, "Authorization") &&
	      strcmp(header(h, "Authorization"),
		     "SharedKey myaccount:0KwzYWwQtGKdJ/eJ4C9Ojx0WjpH9W7DLDDJ0LfThNEA=") == 0,
	      "listing Authorization as computed with Python: %s",
	      header(h, "Authorization") ? header(h, "Authorization") : "(none)");
	curl_slist_free_all(h);

	/* repeated parameters join; a bad escape fails the signing, not the daemon */
	l.url = "https://myaccount.blob.core.windows.net/cogs?B=2&b=1&a";
	text = string_to_sign(az, &l, date, &e);
	CHECK(text && strstr(text, "/myaccount/cogs\na:\nb:1,2") != NULL, "repeated names: %s",
	      one_line(text ? strstr(text, "/myaccount") : NULL));
	free(text);
	l.url = "https://myaccount.blob.core.windows.net/cogs?a=%zz";
	h = NULL;
	CHECK(sign_at(az, &l, FIXED_TIME, &h) == -EINVAL, "a bad escape in the query: -EINVAL");
	curl_slist_free_all(h);
	l.url = "https://myaccount.blob.core.windows.net";
	text = string_to_sign(az, &l, date, &e);
	CHECK(text && strstr(text, "\n/myaccount/") != NULL, "an empty path signs as /");
	free(text);
	free(url);
	source_free(src);
	clear_env();
}

int main(void)
{
	test_sources();
	test_listing();
	test_shared_key();
	return check_done();
}
