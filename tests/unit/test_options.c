/* test_options.c - sizes, the option table, -o, and the errors users see. */
#include "check.h"
#include "tools/options.h"

#include <string.h>

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

	return check_done();
}
