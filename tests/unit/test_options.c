/* test_options.c - sizes, the option table, -o, and the errors users see. */
#include "check.h"
#include "tools/options.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse(struct options *o, char *err, int argc, char **argv)
{
	return options_parse(o, OPTIONS_MOUNT, argc, argv, err, 256);
}

int main(void)
{
	uint64_t v;
	struct options o;
	char err[256];

	CHECK(parse_size("500M", &v) == 0 && v == 500ull << 20, "500M");
	CHECK(parse_size("200G", &v) == 0 && v == 200ull << 30, "200G");
	CHECK(parse_size("2GiB", &v) == 0 && v == 2ull << 30, "2GiB");
	CHECK(parse_size("4096", &v) == 0 && v == 4096, "plain bytes");
	CHECK(parse_size("banana", &v) != 0, "not a size");
	CHECK(parse_size("-5M", &v) != 0, "negative size");
	CHECK(parse_size("5X", &v) != 0, "unknown unit");
	CHECK(parse_size("99999999999T", &v) != 0, "overflow");

	char *a1[] = { "--cache-dir", "/c", "--cache-size=2G", "-f", "http://h/p/", "/mnt",
		       "-o", "allow_other,ttl=5,block-size=64K" };
	CHECK(parse(&o, err, 8, a1) == 0, "a full command line parses");
	CHECK(strcmp(o.cache_dir, "/c") == 0 && o.cache_size == 2ull << 30 && o.foreground,
	      "long options with and without '='");
	CHECK(o.ttl == 5 && o.block_size == 65536, "tilefs options given with -o");
	CHECK(o.fuse_opts && strcmp(o.fuse_opts, "allow_other") == 0, "FUSE options passed on");
	CHECK(strcmp(o.source, "http://h/p/") == 0 && strcmp(o.mountpoint, "/mnt") == 0,
	      "positional arguments");
	CHECK(o.retries == 5 && o.ttl == 5 && o.log_level == LOG_WARN, "defaults");
	options_release(&o);

	char *a2[] = { "--cache-size", "banana", "s", "m" };
	CHECK(parse(&o, err, 4, a2) != 0 && strstr(err, "not a size"), "bad size: %s", err);
	options_release(&o);
	char *a3[] = { "--frobnicate", "s", "m" };
	CHECK(parse(&o, err, 3, a3) != 0 && strstr(err, "unknown option '--frobnicate'"),
	      "unknown option: %s", err);
	options_release(&o);
	char *a4[] = { "http://h/" };
	CHECK(parse(&o, err, 1, a4) != 0 && strstr(err, "MOUNTPOINT"), "missing mountpoint: %s",
	      err);
	options_release(&o);
	char *a5[] = { "--ttl", "-2", "s", "m" };
	CHECK(parse(&o, err, 4, a5) != 0 && strstr(err, "--ttl"), "out of range: %s", err);
	options_release(&o);
	/* "indefinite", and -1 as gcsfuse spells it */
	char *a5i[] = { "--ttl", "indefinite", "s", "m" };
	CHECK(parse(&o, err, 4, a5i) == 0 && o.ttl == OPTIONS_TTL_INDEFINITE, "--ttl indefinite");
	options_release(&o);
	char *a5m[] = { "--ttl", "-1", "s", "m" };
	CHECK(parse(&o, err, 4, a5m) == 0 && o.ttl == OPTIONS_TTL_INDEFINITE, "--ttl -1");
	options_release(&o);
	char *a6[] = { "-o", "rw", "s", "m" };
	CHECK(parse(&o, err, 4, a6) != 0 && strstr(err, "read-only"), "rw refused: %s", err);
	options_release(&o);
	char *a7[] = { "--log-level", "chatty", "s", "m" };
	CHECK(parse(&o, err, 4, a7) != 0 && strstr(err, "error, warn, info, debug"),
	      "bad log level: %s", err);
	options_release(&o);
	char *a8[] = { "s", "m", "--cache-dir" };
	CHECK(parse(&o, err, 3, a8) != 0 && strstr(err, "needs a value"), "value missing: %s", err);
	options_release(&o);
	/* secrets in URLs are blanked in argv once parsed (ps shows argv) */
	char src[] = "https://acct.blob.core.windows.net/c/p?sv=1&sig=SEKRIT";
	char list[] = "allow_other,endpoint=http://u:PASSWD@h:1/?token=TOK,ttl=5";
	char mnt[] = "/mnt", o_flag[] = "-o";
	char *a9[] = { src, mnt, o_flag, list };
	CHECK(parse(&o, err, 4, a9) == 0 && strstr(o.source, "sig=SEKRIT") &&
	      strstr(o.endpoint, "token=TOK") && o.ttl == 5, "parsed with the secrets");
	CHECK(strcmp(src, "https://acct.blob.core.windows.net/c/p?") == 0 &&
	      !memmem(src, sizeof(src), "SEKRIT", 6), "SOURCE's query is blanked: %s", src);
	CHECK(!memmem(list, sizeof(list), "TOK", 3) && !memmem(list, sizeof(list), "PASSWD", 6) &&
	      strcmp(list, "allow_other,endpoint=http://u:") == 0 &&
	      memmem(list, sizeof(list), "@h:1/?", 6) && memmem(list, sizeof(list), ",ttl=5", 6),
	      "and a -o URL's query and password, the other words kept");
	options_release(&o);

	/* fstab lines spell the names with underscores */
	char *a10[] = { "-o", "cache_dir=/c,cache_size=1G,no_sign_request,allow_other,log-level=info",
			"s", "m" };
	CHECK(parse(&o, err, 4, a10) == 0 && strcmp(o.cache_dir, "/c") == 0 &&
	      o.cache_size == 1ull << 30 && o.no_sign_request && o.log_level == LOG_INFO,
	      "-o names with '_' for '-'");
	CHECK(o.fuse_opts && strcmp(o.fuse_opts, "allow_other") == 0,
	      "FUSE's allow_other is still FUSE's: %s", o.fuse_opts ? o.fuse_opts : "(none)");
	options_release(&o);

	/* the peers' spellings (issue 57): each the same as an older one */
	char *b1[] = { "--allow-other", "--debug", "s", "m", "-o", "ro" };
	CHECK(parse(&o, err, 6, b1) == 0 && o.log_level == LOG_DEBUG,
	      "--debug is --log-level debug");
	CHECK(o.fuse_opts && strcmp(o.fuse_opts, "allow_other,ro") == 0,
	      "--allow-other is -o allow_other: %s", o.fuse_opts ? o.fuse_opts : "(none)");
	options_release(&o);
	char *b2[] = { "--debug=yes", "s", "m" };
	CHECK(parse(&o, err, 3, b2) != 0 && strstr(err, "--debug takes no value"),
	      "--debug=yes: %s", err);
	options_release(&o);
	char *b3[] = { "-o", "debug", "s", "m" };
	CHECK(parse(&o, err, 4, b3) == 0 && o.log_level == LOG_WARN && o.fuse_opts &&
	      strcmp(o.fuse_opts, "debug") == 0, "-o debug is still FUSE's");
	options_release(&o);

	/* --metrics-address: an IP literal, 127.0.0.1 unless given */
	char *b4[] = { "s", "m" };
	CHECK(parse(&o, err, 2, b4) == 0 && o.metrics_address &&
	      strcmp(o.metrics_address, "127.0.0.1") == 0, "--metrics-address default");
	CHECK(options_source(&o).profile == NULL, "no profile named: AWS_PROFILE decides");
	options_release(&o);
	const char *good[] = { "127.0.0.2", "::1", "0.0.0.0", "fe80::1" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *b5[] = { "--metrics-address", (char *)good[i], "s", "m" };
		CHECK(parse(&o, err, 4, b5) == 0 && strcmp(o.metrics_address, good[i]) == 0,
		      "--metrics-address %s", good[i]);
		options_release(&o);
	}
	const char *bad[] = { "localhost", "127.0.0", "127.0.0.1:9100", "[::1]", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *b6[] = { "--metrics-address", (char *)bad[i], "s", "m" };
		CHECK(parse(&o, err, 4, b6) != 0 && strstr(err, "--metrics-address") &&
		      strstr(err, "not an IP address"), "--metrics-address '%s': %s", bad[i], err);
		options_release(&o);
	}

	/* --profile reaches the S3 provider, over AWS_PROFILE and the
	 * environment's keys, as the AWS CLI's --profile does */
	char creds[] = "/tmp/test_options_creds_XXXXXX";
	int fd = mkstemp(creds);
	static const char ini[] = "[default]\naws_access_key_id = AKDEFAULT\n"
		"aws_secret_access_key = sdefault\n[named]\naws_access_key_id = AKNAMED\n"
		"aws_secret_access_key = snamed\n";
	CHECK(fd >= 0 && write(fd, ini, sizeof(ini) - 1) == (ssize_t)sizeof(ini) - 1,
	      "credentials file written");
	close(fd);
	setenv("AWS_SHARED_CREDENTIALS_FILE", creds, 1);
	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	setenv("AWS_PROFILE", "default", 1);
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "senv", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	char *b7[] = { "--profile", "named", "--endpoint", "http://127.0.0.1:9", "s3://b/p", "m" };
	CHECK(parse(&o, err, 6, b7) == 0 && strcmp(o.profile, "named") == 0, "--profile NAME");
	struct source_options so = options_source(&o);
	struct source *source = NULL;
	char why[512] = "";
	CHECK(so.profile && strcmp(so.profile, "named") == 0, "--profile is a source option");
	CHECK(source_open(o.source, &so, &source, why, sizeof(why)) == 0 && source->credentials &&
	      strstr(source->credentials, "profile named"),
	      "--profile named signs with that profile: %s", source ? source->credentials : why);
	if (source)
		source_free(source);
	options_release(&o);
	char *b8[] = { "--profile", "nosuch", "--endpoint", "http://127.0.0.1:9", "s3://b/p", "m" };
	source = NULL;
	CHECK(parse(&o, err, 6, b8) == 0, "--profile nosuch parses");
	so = options_source(&o);
	CHECK(source_open(o.source, &so, &source, why, sizeof(why)) != 0 &&
	      strstr(why, "--profile nosuch names no profile"),
	      "a --profile naming no profile fails, naming it: %s", why);
	if (source)
		source_free(source);
	options_release(&o);
	/* without it, the environment's keys come first, as before */
	char *b9[] = { "--endpoint", "http://127.0.0.1:9", "s3://b/p", "m" };
	source = NULL;
	CHECK(parse(&o, err, 4, b9) == 0, "no --profile parses");
	so = options_source(&o);
	CHECK(source_open(o.source, &so, &source, why, sizeof(why)) == 0 && source->credentials &&
	      strstr(source->credentials, "AWS_ACCESS_KEY_ID"),
	      "without --profile the environment's keys sign: %s", source ? source->credentials : why);
	if (source)
		source_free(source);
	options_release(&o);
	unlink(creds);

	return check_done();
}
