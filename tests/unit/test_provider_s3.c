/*
 * test_provider_s3.c - S3 and GCS sources: addressing, listing URLs,
 * the credential chain and its messages.
 *
 * With --sign ENDPOINT it signs instead: for each stdin line
 * "METHOD<TAB>URL<TAB>FIRST<TAB>LAST" (FIRST empty: no Range) it prints the
 * headers S3 signing adds, one per line, then a blank line. The
 * botocore cross-check in tests/bats/60-s3.bats drives it.
 */
#include "cache/origin/http.h"
#include "cache/origin/providers/provider_int.h"
#include "cache/origin/providers/aws_creds.h"
#include "cache/origin/providers/aws_process.h"
#include "cache/origin/providers/renewal.h"
#include "check.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int sign_mode(const char *endpoint)
{
	struct source_options opts = { .endpoint = endpoint };
	struct source *src;
	char err[512], line[8192];

	if (source_open("s3://bucket/", &opts, &src, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		char *method = strtok(line, "\t"), *url = strtok(NULL, "\t");
		char *first = strtok(NULL, "\t"), *last = strtok(NULL, "\t");
		if (!method || !url)
			continue;
		struct http_attempt a = { .method = method, .url = url };
		if (first && last && *first) {
			a.ranged = true;
			a.first = strtoull(first, NULL, 10);
			a.last = strtoull(last, NULL, 10);
		}
		struct curl_slist *h = NULL;
		if (src->provider->sign(src, &a, &h) != 0)
			return 1;
		for (struct curl_slist *e = h; e; e = e->next)
			printf("%s\n", e->data);
		printf("\n");
		fflush(stdout);
		curl_slist_free_all(h);
	}
	source_free(src);
	return 0;
}

static void clear_env(void)
{
	const char *vars[] = { "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
			       "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
			       "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
			       "GOOGLE_OAUTH_ACCESS_TOKEN", "GS_ACCESS_KEY_ID", "GS_SECRET_ACCESS_KEY",
			       "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
			       "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
			       "AWS_CONTAINER_CREDENTIALS_FULL_URI" };
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("HOME", "/nonexistent", 1);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--sign") == 0)
		return sign_mode(argv[2]);

	struct source_options opts = { 0 };
	struct source *src;
	char err[512];
	char *url;

	clear_env();
	CHECK(source_open("s3://eo/scenes", &opts, &src, err, sizeof(err)) == -EACCES &&
	      strstr(err, "AWS_ACCESS_KEY_ID") && strstr(err, "--no-sign-request"),
	      "no credentials: the message names what to set: %s", err);
	setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
	CHECK(source_open("s3://eo/scenes", &opts, &src, err, sizeof(err)) == -EACCES &&
	      strstr(err, "AWS_SECRET_ACCESS_KEY"), "half a key pair: %s", err);
	setenv("AWS_SECRET_ACCESS_KEY", "SECRETKEY", 1);
	CHECK(source_open("s3://eo/scenes", &opts, &src, err, sizeof(err)) == 0, "env credentials");
	CHECK(strcmp(src->credentials, "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY") == 0,
	      "credentials source named: %s", src->credentials);
	url = source_object_url(src, "sub dir/a+b.tif");
	CHECK(strcmp(url, "https://eo.s3.us-east-1.amazonaws.com/scenes/sub%20dir/a%2Bb.tif") == 0,
	      "virtual-hosted object URL: %s", url);
	free(url);
	url = source_listing_url(src, "sub", "tok/en=");
	CHECK(strcmp(url, "https://eo.s3.us-east-1.amazonaws.com/?list-type=2&delimiter=%2F"
			  "&encoding-type=url&prefix=scenes%2Fsub%2F&continuation-token=tok%2Fen%3D") == 0,
	      "virtual-hosted listing URL: %s", url);
	free(url);
	/* credentials go only to the source's own scheme, host and port */
	static const struct {
		const char *url;
		bool signed_;
	} targets[] = {
		{ "https://eo.s3.us-east-1.amazonaws.com/scenes/a.tif", true },
		{ "HTTPS://EO.S3.us-east-1.amazonaws.com/other/b.tif?x=1", true },
		{ "https://eo.s3.us-east-1.amazonaws.com:443/a.tif", true },
		{ "https://eo.s3.us-east-1.amazonaws.com:8443/a.tif", false },
		{ "http://eo.s3.us-east-1.amazonaws.com/a.tif", false },
		{ "https://eo.s3.us-east-1.amazonaws.com@evil.example/a.tif", false },
		{ "https://eo.s3.us-east-1.amazonaws.com.evil.example/a.tif", false },
		{ "https://evil.example/eo.s3.us-east-1.amazonaws.com/a.tif", false },
		{ "https://user@eo.s3.us-east-1.amazonaws.com/a.tif", false },
		{ "gopher://eo.s3.us-east-1.amazonaws.com:443/a.tif", false },
		{ "file:///etc/passwd", false },
		{ "not a url", false },
	};
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		struct http_request req = { .url = targets[i].url };
		source_prepare(src, &req);
		CHECK((req.sign != NULL) == targets[i].signed_ && (req.signer != NULL) == targets[i].signed_,
		      "%s is %s", targets[i].url, targets[i].signed_ ? "signed" : "anonymous");
	}
	source_free(src);

	opts.endpoint = "http://127.0.0.1:9000/";
	opts.page_size = 2;
	CHECK(source_open("s3://eo/", &opts, &src, err, sizeof(err)) == 0, "with --endpoint");
	url = source_object_url(src, "x.tif");
	CHECK(strcmp(url, "http://127.0.0.1:9000/eo/x.tif") == 0, "path-style object URL: %s", url);
	free(url);
	url = source_listing_url(src, "", NULL);
	CHECK(strcmp(url, "http://127.0.0.1:9000/eo?list-type=2&delimiter=%2F&encoding-type=url"
			  "&prefix=&max-keys=2") == 0, "path-style listing URL: %s", url);
	free(url);
	source_free(src);
	opts.virtual_hosted = true;
	CHECK(source_open("s3://eo/", &opts, &src, err, sizeof(err)) == 0, "--virtual-hosted");
	url = source_object_url(src, "x.tif");
	CHECK(strcmp(url, "http://eo.127.0.0.1:9000/x.tif") == 0, "virtual-hosted with endpoint: %s",
	      url);
	free(url);
	source_free(src);
	opts = (struct source_options){ 0 };

	/* profiles */
	clear_env();
	char dir[] = "/tmp/tilefs-test-s3-XXXXXX", path[256], config[256];
	mkdtemp(dir);
	snprintf(path, sizeof(path), "%s/credentials", dir);
	snprintf(config, sizeof(config), "%s/config", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = s1\n\n"
		   "[work]\naws_access_key_id=WORKKEY\naws_secret_access_key=s2\n"
		   "aws_session_token=tok\n[broken]\naws_access_key_id=X\n");
	fclose(f);
	f = fopen(config, "w");
	fprintf(f, "[profile work]\nregion = eu-west-1\n");
	fclose(f);
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	setenv("AWS_CONFIG_FILE", config, 1);
	CHECK(source_open("s3://eo", &opts, &src, err, sizeof(err)) == 0 &&
	      strstr(src->credentials, "profile default"), "default profile: %s",
	      src->credentials);
	source_free(src);
	setenv("AWS_PROFILE", "work", 1);
	CHECK(source_open("s3://eo", &opts, &src, err, sizeof(err)) == 0, "named profile");
	url = source_object_url(src, "a");
	CHECK(strstr(url, ".s3.eu-west-1.amazonaws.com/"), "region from the config file: %s", url);
	free(url);
	source_free(src);
	setenv("AWS_PROFILE", "nosuch", 1);
	CHECK(source_open("s3://eo", &opts, &src, err, sizeof(err)) == -EACCES &&
	      strstr(err, "AWS_PROFILE=nosuch"), "unknown profile: %s", err);
	setenv("AWS_PROFILE", "broken", 1);
	CHECK(source_open("s3://eo", &opts, &src, err, sizeof(err)) == -EACCES &&
	      strstr(err, "aws_secret_access_key"), "profile without secret: %s", err);
	unlink(path);
	unlink(config);
	rmdir(dir);

	/* anonymous, and bad sources */
	clear_env();
	opts.no_sign_request = true;
	CHECK(source_open("s3://eo/x", &opts, &src, err, sizeof(err)) == 0 && !src->credentials[0],
	      "--no-sign-request");
	struct http_attempt a = { .method = "GET", .url = "https://eo.s3.amazonaws.com/x" };
	struct curl_slist *h = NULL;
	CHECK(src->provider->sign(src, &a, &h) == 0 && h == NULL, "anonymous adds no header");
	source_free(src);
	CHECK(source_open("s3:///x", &opts, &src, err, sizeof(err)) == -EINVAL, "no bucket: %s", err);

	/* GCS */
	opts = (struct source_options){ 0 };
	CHECK(source_open("gs://eo/p", &opts, &src, err, sizeof(err)) == -EACCES &&
	      strstr(err, "GOOGLE_OAUTH_ACCESS_TOKEN") && strstr(err, "GS_ACCESS_KEY_ID"),
	      "gs without credentials: %s", err);
	setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.token", 1);
	CHECK(source_open("gs://eo/p", &opts, &src, err, sizeof(err)) == 0, "gs with a token");
	url = source_object_url(src, "a b.tif");
	CHECK(strcmp(url, "https://storage.googleapis.com/eo/p/a%20b.tif") == 0, "gs object URL: %s",
	      url);
	free(url);
	url = source_listing_url(src, "d", "m1");
	CHECK(strcmp(url, "https://storage.googleapis.com/eo?delimiter=%2F&prefix=p%2Fd%2F&marker=m1") == 0,
	      "gs listing URL: %s", url);
	free(url);
	h = NULL;
	a.url = "https://storage.googleapis.com/eo/p/a";
	CHECK(src->provider->sign(src, &a, &h) == 0 && h &&
	      strcmp(h->data, "Authorization: Bearer ya29.token") == 0, "bearer token sent");
	curl_slist_free_all(h);
	source_free(src);
	unsetenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	setenv("GS_ACCESS_KEY_ID", "GOOGID", 1);
	setenv("GS_SECRET_ACCESS_KEY", "gsecret", 1);
	CHECK(source_open("gs://eo", &opts, &src, err, sizeof(err)) == 0, "gs with an HMAC key");
	h = NULL;
	CHECK(src->provider->sign(src, &a, &h) == 0 && h &&
	      strstr(h->data, "Authorization: GOOG4-HMAC-SHA256 Credential=GOOGID/") &&
	      strstr(h->data, "/auto/storage/goog4_request"), "HMAC signing: %s", h ? h->data : "");
	curl_slist_free_all(h);
	source_free(src);

	/* what an S3 error body adds to "HTTP 403" */
	static const char denied[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>"
		"<Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does "
		"not exist in our records.</Message><RequestId>x</RequestId></Error>";
	char reason[160];
	CHECK(provider_xml_error(denied, strlen(denied), reason, sizeof(reason)) &&
	      strcmp(reason, "InvalidAccessKeyId: The AWS Access Key Id you provided does not "
		     "exist in our records.") == 0, "error body: %s", reason);
	CHECK(provider_xml_error("<Error><Code>NoSuchKey</Code></Error>", 37, reason,
				 sizeof(reason)) && strcmp(reason, "NoSuchKey") == 0,
	      "error body without a message: %s", reason);
	CHECK(!provider_xml_error("<html>503</html>", 16, reason, sizeof(reason)),
	      "a page without <Code> says nothing");

	/* credential_process: words as a shell splits them, without one */
	char words[256], *av[8];
	CHECK(aws_process_split(" /opt/my tool  \"a b\\\"c\" 'd \\e' f\\ g ", words,
				sizeof(words), av, 8) == 5 && strcmp(av[0], "/opt/my") == 0 &&
	      strcmp(av[1], "tool") == 0 && strcmp(av[2], "a b\"c") == 0 &&
	      strcmp(av[3], "d \\e") == 0 && strcmp(av[4], "f g") == 0 && !av[5],
	      "split: quotes, escapes, blanks");
	CHECK(aws_process_split("tool 'open", words, sizeof(words), av, 8) == -EINVAL,
	      "split: an open quote");
	CHECK(aws_process_split("   ", words, sizeof(words), av, 8) == -EINVAL, "split: no word");
	CHECK(aws_process_split("a b c d e f g h i", words, sizeof(words), av, 8) == -EINVAL,
	      "split: too many words");

	/* renewal (renewal.c, every cloud's): 80% or 5 min before, whichever first,
	   never before half */
	CHECK(renew_at(1000, 4600) == 1000 + 2880, "an hour: at 80%%");
	CHECK(renew_at(1000, 1900) == 1600, "15 minutes: 5 min before");
	CHECK(renew_at(1000, 1060) == 1030, "60 s: at half");

	/* the credentials document, as a parser reads it */
	struct aws_keys keys;
	static const char doc[] = "{\"Code\": \"Success\", \"AccessKeyId\": \"AK\\/1\", "
		"\"SecretAccessKey\": \"s\\/k+\", \"Token\": \"t\", "
		"\"Expiration\": \"2026-11-25T03:00:00Z\"}";
	CHECK(aws_keys_from_json(doc, strlen(doc), 5, &keys) == 0 &&
	      strcmp(keys.access_key, "AK/1") == 0 && strcmp(keys.secret_key, "s/k+") == 0 &&
	      strcmp(keys.session_token, "t") == 0 && keys.expires == 1795575600 &&
	      keys.obtained == 5, "a document with escapes: %s %lld", keys.access_key,
	      (long long)keys.expires);
	static const char nested[] = "{\"Meta\": {\"AccessKeyId\": \"X\"}, "
		"\"SecretAccessKey\": \"s\"}";
	CHECK(aws_keys_from_json(nested, strlen(nested), 5, &keys) == -EIO,
	      "a key id nested in another object is not the document's");
	static const char bad_time[] = "{\"AccessKeyId\": \"A\", \"SecretAccessKey\": \"s\", "
		"\"Expiration\": \"soon\"}";
	CHECK(aws_keys_from_json(bad_time, strlen(bad_time), 5, &keys) == -EIO,
	      "an Expiration that is no time is refused");
	/* a bucket in another region, at AWS's endpoints: the answer says what
	   to add to the command line */
	static const char moved[] =
		"<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to "
		"access must be addressed using the specified endpoint.</Message><Endpoint>"
		"eo.s3.eu-west-1.amazonaws.com</Endpoint><Bucket>eo</Bucket></Error>";
	static const char malformed[] =
		"<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' is "
		"wrong; expecting 'ap-south-1'</Message><Region>ap-south-1</Region></Error>";
	static const char hostile[] =
		"<Error><Code>PermanentRedirect</Code><Region>eu west; rm</Region></Error>";
	char why[256];
	CHECK(provider_s3.describe_error(moved, sizeof(moved) - 1, why, sizeof(why)) &&
	      strstr(why, "PermanentRedirect") && strstr(why, "add --region eu-west-1"),
	      "a 301's endpoint names the region to add: %s", why);
	CHECK(provider_s3.describe_error(malformed, sizeof(malformed) - 1, why, sizeof(why)) &&
	      strstr(why, "add --region ap-south-1"), "a 400's <Region> too: %s", why);
	CHECK(provider_s3.describe_error(hostile, sizeof(hostile) - 1, why, sizeof(why)) &&
	      !strstr(why, "--region"), "a region that is not one is not repeated: %s", why);
	return check_done();
}
