/* test_bucket.c - bucket sources: SOURCE parsing, URLs, and ListBucketResult
 * pages of S3 (V2) and GCS (V1). */
#include "cache/origin/providers/bucket.h"
#include "check.h"
#include "listing_collect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


static const char s3_page[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Name>eo</Name><Prefix>scenes%2F</Prefix><EncodingType>url</EncodingType>"
	"<KeyCount>4</KeyCount><MaxKeys>4</MaxKeys><IsTruncated>true</IsTruncated>"
	"<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
	"<Contents><Key>scenes%2F</Key><Size>0</Size></Contents>"
	"<Contents><Key>scenes%2Fa%2Bb%20c.tif</Key><LastModified>2026-11-22T09:00:00.000Z</LastModified>"
	"<ETag>&quot;abc&quot;</ETag><Size>12345</Size><StorageClass>STANDARD</StorageClass></Contents>"
	"<Contents><Key>scenes%2F..</Key><Size>1</Size></Contents>"
	"<CommonPrefixes><Prefix>scenes%2Fsub%2F</Prefix></CommonPrefixes>"
	"</ListBucketResult>";

static const char gcs_page[] =
	"<?xml version='1.0' encoding='UTF-8'?>"
	"<ListBucketResult xmlns='http://doc.s3.amazonaws.com/2006-03-01'><Name>eo</Name>"
	"<Prefix></Prefix><Marker></Marker><NextMarker>b &amp; c.tif</NextMarker>"
	"<IsTruncated>true</IsTruncated>"
	"<Contents><Key>a.tif</Key><Generation>1</Generation><Size>7</Size></Contents>"
	"<CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes></ListBucketResult>";

/* every key below scenes/, as a listing without delimiter gives them */
static const char s3_deep_page[] =
	"<ListBucketResult><Prefix>scenes%2F</Prefix><EncodingType>url</EncodingType>"
	"<IsTruncated>false</IsTruncated>"
	"<Contents><Key>scenes%2Fa.tif</Key><Size>5</Size><ETag>&quot;e1&quot;</ETag></Contents>"
	"<Contents><Key>scenes%2Fp1%2F</Key><Size>0</Size></Contents>"
	"<Contents><Key>scenes%2Fp1%2FB02.tif</Key><Size>6</Size></Contents>"
	"<Contents><Key>scenes%2Fp1%2F..%2Fx.tif</Key><Size>1</Size></Contents>"
	"<Contents><Key>scenes%2Fp2%2F%2Fy.tif</Key><Size>1</Size></Contents>"
	"</ListBucketResult>";

int main(void)
{
	struct seen s = { 0 };
	char *next = NULL;
	char *bucket, *prefix, err[256];

	CHECK(bucket_parse("s3://eo/a/b", 5, &bucket, &prefix, err, sizeof(err)) == 0 &&
	      strcmp(bucket, "eo") == 0 && strcmp(prefix, "a/b/") == 0, "bucket and prefix");
	free(bucket);
	free(prefix);
	CHECK(bucket_parse("gs://eo//", 5, &bucket, &prefix, err, sizeof(err)) == 0 &&
	      strcmp(prefix, "") == 0, "slashes only: no prefix");
	free(bucket);
	free(prefix);
	CHECK(bucket_parse("s3://", 5, &bucket, &prefix, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "s3://BUCKET/PREFIX"), "no bucket: %s", err);
	CHECK(bucket_parse("s3://a b/x", 5, &bucket, &prefix, err, sizeof(err)) == -EINVAL,
	      "a space in the bucket name");
	char *url = bucket_object_url("http://h/eo", "p/", "a b/c+d.tif");
	CHECK(strcmp(url, "http://h/eo/p/a%20b/c%2Bd.tif") == 0, "object URL: %s", url);
	free(url);
	char dp[64];
	bucket_dir_prefix("p/", "d", "", dp, sizeof(dp));
	CHECK(strcmp(dp, "p/d/") == 0, "directory prefix");
	CHECK(bucket_dir_prefix("p/", "d", "S2A_01", dp, sizeof(dp)) && strcmp(dp, "p/d/S2A_01") == 0,
	      "a run of a directory's names: %s", dp);
	CHECK(!bucket_dir_prefix("p/", "d", "S2A_01", dp, 10), "a prefix that does not fit");
	url = bucket_listing_url("http://h/eo", "delimiter=%2F", "p/d/", "max-keys", 0, "marker",
				 NULL);
	CHECK(strcmp(url, "http://h/eo?delimiter=%2F&prefix=p%2Fd%2F") == 0, "listing URL: %s", url);
	free(url);

	CHECK(bucket_listing_parse("scenes/", s3_page, strlen(s3_page), collect, &s, &next) == 0,
	      "S3 V2 page parses");
	CHECK(s.n == 2, "folder marker and '..' skipped (%d entries)", s.n);
	CHECK(strcmp(s.names[0], "a+b c.tif") == 0 && !s.dirs[0] && s.sizes[0] == 12345,
	      "url-encoded key decoded, size read: '%s' %lld", s.names[0], (long long)s.sizes[0]);
	CHECK(strcmp(s.etags[0], "\"abc\"") == 0 && s.mtimes[0] == 1795338000,
	      "ETag entity-decoded, LastModified in UTC: %s %lld", s.etags[0],
	      (long long)s.mtimes[0]);
	CHECK(strcmp(s.names[1], "sub") == 0 && s.dirs[1] && !s.etags[1][0] && s.mtimes[1] == 0,
	      "common prefix is a directory, without ETag or time");
	CHECK(next && strcmp(next, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=") == 0,
	      "continuation token");
	free(next);

	memset(&s, 0, sizeof(s));
	CHECK(bucket_listing_parse("", gcs_page, strlen(gcs_page), collect, &s, &next) == 0,
	      "GCS V1 page parses");
	CHECK(s.n == 2 && strcmp(s.names[0], "a.tif") == 0 && s.sizes[0] == 7 &&
	      strcmp(s.names[1], "dir") == 0, "entries");
	CHECK(!s.etags[0][0] && s.mtimes[0] == 0, "no ETag or LastModified: none reported");
	CHECK(next && strcmp(next, "b & c.tif") == 0, "next marker, entity decoded");
	free(next);

	static const char odd_sizes[] =
		"<ListBucketResult><Contents><Key>a.tif</Key><Size>-336618</Size></Contents>"
		"<Contents><Key>b.tif</Key><Size>12x</Size></Contents>"
		"<Contents><Key>c.tif</Key><Size>99999999999999999999</Size></Contents>"
		"<Contents><Key>d.tif</Key><LastModified>2026-13-01T00:00:00Z</LastModified></Contents>"
		"</ListBucketResult>";
	memset(&s, 0, sizeof(s));
	CHECK(bucket_listing_parse("", odd_sizes, strlen(odd_sizes), collect, &s, &next) == 0 &&
	      s.n == 4 && s.sizes[0] == -1 && s.sizes[1] == -1 && s.sizes[2] == -1 &&
	      s.sizes[3] == -1, "a negative, malformed, overflowing or missing Size: unknown "
	      "(%lld %lld %lld %lld)", (long long)s.sizes[0], (long long)s.sizes[1],
	      (long long)s.sizes[2], (long long)s.sizes[3]);
	CHECK(s.mtimes[3] == 0, "a month 13 is no time");
	free(next);
	next = NULL;

	memset(&s, 0, sizeof(s));
	CHECK(bucket_deep_listing_parse("scenes/", s3_deep_page, strlen(s3_deep_page), collect, &s,
					&next) == 0 && !next, "a page listed deep parses");
	CHECK(s.n == 3 && strcmp(s.names[0], "a.tif") == 0 && !s.dirs[0] &&
	      strcmp(s.names[1], "p1") == 0 && s.dirs[1] &&
	      strcmp(s.names[2], "p1/B02.tif") == 0 && !s.dirs[2] && s.sizes[2] == 6,
	      "paths below the prefix, a marker a folder, '..' and an empty part skipped (%d)",
	      s.n);
	memset(&s, 0, sizeof(s));
	CHECK(bucket_deep_listing_parse("scenes/", s3_page, strlen(s3_page), collect, &s, &next) ==
	      -ENOTSUP, "a page with common prefixes was not listed deep");
	free(next);
	next = NULL;
	static const char v1_deep[] =
		"<ListBucketResult><IsTruncated>true</IsTruncated>"
		"<Contents><Key>p/a b.tif</Key><Size>1</Size></Contents>"
		"<Contents><Key>p/d/c.tif</Key><Size>2</Size></Contents></ListBucketResult>";
	memset(&s, 0, sizeof(s));
	CHECK(bucket_deep_listing_parse("p/", v1_deep, strlen(v1_deep), collect, &s, &next) == 0 &&
	      s.n == 2 && next && strcmp(next, "p/d/c.tif") == 0,
	      "a truncated marker page with no NextMarker goes on after its last key: %s",
	      next ? next : "(none)");
	free(next);
	next = NULL;
	url = bucket_listing_url("http://h/eo", "", "p/", "max-keys", 0, "marker", NULL);
	CHECK(strcmp(url, "http://h/eo?prefix=p%2F") == 0, "listing URL with no fixed part: %s",
	      url);
	free(url);

	CHECK(bucket_listing_parse("", "<html>nope</html>", 17, collect, &s, &next) != 0,
	      "a page that is not a listing is an error");
	CHECK(bucket_listing_parse("", s3_page, 200, collect, &s, &next) == 0,
	      "a cut page does not read past its end");
	free(next);
	return check_done();
}
