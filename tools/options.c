/*
 * options.c - see options.h.
 */
#include "tools/options_int.h"
#include "cache/engine/cache.h"
#include "cache/base/log.h"
#include "cache/base/private_dir.h"
#include "cache/store/index.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define OFF(field) offsetof(struct options, field)
#define TEXT(x) #x
#define NUMBER(x) TEXT(x)		/* a macro's value as a default's text */
#define M OPTIONS_MOUNT
#define W OPTIONS_WARM

const char *const options_group_names[GROUP_COUNT] = {
	[GROUP_WARM] = "What to warm",
	[GROUP_SOURCE] = "Source",
	[GROUP_CACHE] = "Cache",
	[GROUP_PREFETCH] = "Prefetch",
	[GROUP_CREDENTIALS] = "Credentials",
	[GROUP_MOUNT] = "Mount",
	[GROUP_LOG] = "Logging and metrics",
};

/* Printed group by group, in table order within a group. The help is
 * one paragraph: --help wraps it to 80 columns, so its newlines only keep
 * this file readable. */
const struct option_def options_defs[] = {
	{ "foreground", M, 'f', OPT_FLAG, OFF(foreground), NULL, NULL, 0, 0,
	  "stay in the foreground and log to stderr", GROUP_MOUNT },
	{ "allow-other", M, 0, OPT_ALIAS, 0, NULL, "allow_other", 0, 0,
	  "let users other than the one who mounted read the mount (as\n"
	  "-o allow_other; unless root, /etc/fuse.conf needs user_allow_other)",
	  GROUP_MOUNT },
	{ "cache-dir", M | W, 0, OPT_STRING, OFF(cache_dir), "DIR", NULL, 0, 0,
	  "where cached data and its index live (default /var/cache/tilefs for root,\n"
	  "$XDG_CACHE_HOME/tilefs otherwise); shared by every tilefs using it", GROUP_CACHE },
	{ "cache-size", M | W, 0, OPT_SIZE, OFF(cache_size), "SIZE", NULL, 1 << 20, INT64_MAX,
	  "most data to keep, e.g. 500M, 200G (default: half the free space)", GROUP_CACHE },
	{ "block-size", M | W, 0, OPT_SIZE, OFF(block_size), "SIZE", "256K",
	  INDEX_BLOCK_SIZE_MIN, INDEX_BLOCK_SIZE_MAX,
	  "unit of caching and fetching", GROUP_CACHE },
	{ "header-size", M | W, 0, OPT_SIZE, OFF(header_size), "SIZE", "64K",
	  INDEX_HEADER_LEN_MIN, INDEX_HEADER_LEN_MAX,
	  "bytes fetched when a file is first opened: a COG's IFDs and tile\n"
	  "index usually fit, so opening costs one request (a file listed no\n"
	  "larger than 4 times this is fetched whole)", GROUP_CACHE },
	{ "prefetch", M, 0, OPT_PREFETCH, OFF(prefetch), "POLICY", "auto", 0, 0,
	  "what a tile read also fetches: none, neighbors (the tiles around\n"
	  "it), row (the rest of its tile row), object (the whole file, in the\n"
	  "background), auto (object while the listed files fit in\n"
	  "--cache-size and no --tier is given, none otherwise)", GROUP_PREFETCH },
	{ "merge-gap", M, 0, OPT_SIZE, OFF(merge_gap), "SIZE", "32K", 0, 16 << 20,
	  "fetch units this close together with one request", GROUP_PREFETCH },
	{ "readahead", M, 0, OPT_SIZE, OFF(readahead), "SIZE", "16M", 0, 256 << 20,
	  "largest readahead window of a sequential read (0: none)", GROUP_PREFETCH },
	{ "hint-budget", M, 0, OPT_SIZE, OFF(hint_budget), "SIZE", NULL, 0, INT64_MAX,
	  "bytes a hint (tilefs hint) has fetched ahead of the readers at most\n"
	  "(default: 1/32 of --cache-size, at most 1G)", GROUP_PREFETCH },
	{ "record", M, 0, OPT_STRING, OFF(record_file), "FILE", NULL, 0, 0,
	  "write what the readers read, in order, to FILE (mode 0600): one\n"
	  "line per open, the file's path and the full-resolution window of\n"
	  "the tiles read (a tile counts when its middle byte is read), for\n"
	  "tilefs hint or warm --from-file; files are then\n"
	  "read through the daemon, not by passthrough, and tiled TIFFs with\n"
	  "direct I/O, so that the kernel's readahead adds no tile", GROUP_MOUNT },
	{ "no-passthrough", M, 0, OPT_FLAG, OFF(no_passthrough), NULL, NULL, 0, 0,
	  "read every file through the daemon, never by FUSE passthrough (by\n"
	  "default the kernel reads files cached whole straight from the\n"
	  "cache, where it can: Linux 6.9+, mounted by root)", GROUP_MOUNT },
	{ "ttl", M, 0, OPT_TTL, OFF(ttl), "SECONDS", "60", 0, 86400 * 365,
	  "trust directory listings and object versions this long; 0 checks\n"
	  "the origin on every open; \"indefinite\" (or -1) never checks again\n"
	  "what was listed or opened once, for data known never to change", GROUP_CACHE },
	{ "max-names", M | W, 0, OPT_LONG, OFF(max_names), "N", NULL, 1000, 1L << 40,
	  "hold at most N names of files and directories in memory; past\n"
	  "it, directories used least recently are listed again when used\n"
	  "(default: 1/16 of the memory at 512 B a name, 100k to 4M)", GROUP_CACHE },
	{ "list", M, 0, OPT_STRING, OFF(list_file), "FILE", NULL, 0, 0,
	  "take the file tree from FILE (relative paths or URLs, one per line)\n"
	  "instead of directory listings", GROUP_SOURCE },
	{ "endpoint", M | W, 0, OPT_STRING, OFF(endpoint), "URL", NULL, 0, 0,
	  "S3, Azure or GCS endpoint (S3-compatible servers, emulators);\n"
	  "for S3 it implies path-style addressing", GROUP_SOURCE },
	{ "region", M | W, 0, OPT_STRING, OFF(region), "REGION", NULL, 0, 0,
	  "S3 region (default: AWS_REGION, the profile's, us-east-1)", GROUP_SOURCE },
	{ "virtual-hosted", M | W, 0, OPT_FLAG, OFF(virtual_hosted), NULL, NULL, 0, 0,
	  "S3: put the bucket in the host name even with --endpoint", GROUP_SOURCE },
	{ "profile", M | W, 0, OPT_STRING, OFF(profile), "NAME", NULL, 0, 0,
	  "S3: take credentials (and region) from the profile NAME of\n"
	  "~/.aws/credentials and ~/.aws/config, as AWS_PROFILE=NAME does,\n"
	  "even when AWS_ACCESS_KEY_ID or AWS_WEB_IDENTITY_TOKEN_FILE is set\n"
	  "(as the AWS CLI's --profile)", GROUP_CREDENTIALS },
	{ "no-sign-request", M | W, 0, OPT_FLAG, OFF(no_sign_request), NULL, NULL, 0, 0,
	  "read public data anonymously (S3, Azure, GCS)", GROUP_CREDENTIALS },
	{ "requester-pays", M | W, 0, OPT_FLAG, OFF(requester_pays), NULL, NULL, 0, 0,
	  "S3: agree to pay for requests to a requester-pays bucket", GROUP_SOURCE },
	{ "page-size", M | W, 0, OPT_LONG, OFF(page_size), "N", "0", 0, 5000,
	  "objects per listing page for S3, Azure, GCS (0: the server's)", GROUP_SOURCE },
	{ "ca-file", M | W, 0, OPT_STRING, OFF(ca_file), "FILE", NULL, 0, 0,
	  "trust the CA certificates in FILE (PEM) for https origins", GROUP_SOURCE },
	{ "tier", M | W, 0, OPT_STRING, OFF(tier), "URL", NULL, 0, 0,
	  "send every request for SOURCE through the shared cache tier at URL\n"
	  "(nginx from 'tilefs tier-config'), signed as for the store; the\n"
	  "store directly while the tier cannot be reached", GROUP_SOURCE },
	{ "tier-secret", M | W, 0, OPT_STRING, OFF(tier_secret), "SECRET", NULL, 0, 0,
	  "send SECRET to the tier in X-Tilefs-Tier-Secret (default:\n"
	  "TILEFS_TIER_SECRET); the tier-config --secret it was made with",
	  GROUP_CREDENTIALS },
	{ "tier-ca-file", M | W, 0, OPT_STRING, OFF(tier_ca_file), "FILE", NULL, 0, 0,
	  "trust the CA certificates in FILE (PEM) for an https:// --tier\n"
	  "(default: the system's; --ca-file is the store's)", GROUP_SOURCE },
	{ "tier-allow-http", M | W, 0, OPT_FLAG, OFF(tier_allow_http), NULL, NULL, 0, 0,
	  "let an http:// --tier carry a bearer token, a SAS or a token in\n"
	  "SOURCE's query in clear to an https store (refused without it):\n"
	  "only where the network to the tier is trusted", GROUP_CREDENTIALS },
	{ "retries", M | W, 0, OPT_LONG, OFF(retries), "N", NUMBER(HTTP_RETRIES_DEFAULT), 0, 100,
	  "retries of a failed request before the read fails with EIO", GROUP_SOURCE },
	{ "connections", M, 0, OPT_LONG, OFF(max_connections), "N", NUMBER(HTTP_CONNECTIONS_DEFAULT), 1, 256,
	  "connections to the origin at most", GROUP_SOURCE },
	{ "fetch-threads", M | W, 0, OPT_LONG, OFF(fetch_threads), "N", "0", 0, 64,
	  "threads that receive, decrypt and store what is fetched, each\n"
	  "with its share of the connections (0: one per 4 connections)", GROUP_SOURCE },
	{ "log-level", M | W, 0, OPT_LEVEL, OFF(log_level), "LEVEL", "warn", 0, 0,
	  "error, warn, info or debug", GROUP_LOG },
	{ "debug", M | W, 0, OPT_ALIAS, 0, NULL, "log-level=debug", 0, 0,
	  "log debug lines too (as --log-level debug)", GROUP_LOG },
	{ "log-file", M | W, 0, OPT_STRING, OFF(log_file), "FILE", NULL, 0, 0,
	  "append log lines to FILE (default: CACHE_DIR/tilefs.log for a\n"
	  "mount, stderr with -f and for warm)", GROUP_LOG },
	{ "metrics-file", M, 0, OPT_STRING, OFF(metrics_file), "FILE", NULL, 0, 0,
	  "rewrite FILE every 5 seconds with the mount's counters, in\n"
	  "Prometheus text format", GROUP_LOG },
	{ "metrics-port", M, 0, OPT_LONG, OFF(metrics_port), "PORT", "0", 0, 65535,
	  "serve the same counters at http://ADDR:PORT/metrics (ADDR:\n"
	  "--metrics-address; 0: off)", GROUP_LOG },
	{ "metrics-address", M, 0, OPT_ADDRESS, OFF(metrics_address), "ADDR", "127.0.0.1", 0, 0,
	  "the IP address --metrics-port listens on (IPv4 or IPv6, e.g. ::1);\n"
	  "any other than a loopback address lets the network read the\n"
	  "counters, the source and the mountpoint: firewall it", GROUP_LOG },
	{ "from-file", W, 0, OPT_STRING, OFF(from_file), "LIST", NULL, 0, 0,
	  "warm the files LIST names (paths under SOURCE or URLs, one per\n"
	  "line) instead of listing SOURCE; a line may add a window X Y W H\n"
	  "of that file (tilefs hint's order format, as mount --record\n"
	  "writes it): just its tiles are warmed", GROUP_WARM },
	{ "header-only", W, 0, OPT_FLAG, OFF(header_only), NULL, NULL, 0, 0,
	  "just each file's header (IFDs and tile index): opens cost nothing", GROUP_WARM },
	{ "overviews", W, 0, OPT_FLAG, OFF(overviews), NULL, NULL, 0, 0,
	  "the header and every overview (reduced-resolution) IFD", GROUP_WARM },
	{ "ifd", W, 0, OPT_LONG, OFF(ifd), "N", NULL, 0, 1023,
	  "the header and IFD N (numbered as 'tilefs inspect' shows them)", GROUP_WARM },
	{ "window", W, 0, OPT_STRING, OFF(window), "X,Y,W,H", NULL, 0, 0,
	  "the header and the tiles under this pixel window of the\n"
	  "full-resolution image (and of its mask)", GROUP_WARM },
	{ "jobs", W, 'j', OPT_LONG, OFF(jobs), "N", "16", 1, 256,
	  "transfers at once", GROUP_WARM },
	{ "shard", W, 0, OPT_STRING, OFF(shard), "I/N", NULL, 0, 0,
	  "take only shard I of N (1 <= I <= N): N machines given 1/N .. N/N\n"
	  "warm disjoint parts that together cover every file", GROUP_WARM },
	{ "dry-run", W, 'n', OPT_FLAG, OFF(dry_run), NULL, NULL, 0, 0,
	  "print what would be fetched and how many bytes; reads each\n"
	  "file's header (as opening it does) but nothing more", GROUP_WARM },
	{ "partial", W, 0, OPT_FLAG, OFF(partial), NULL, NULL, 0, 0,
	  "when the selection exceeds --cache-size, warm the files that fit\n"
	  "instead of refusing", GROUP_WARM },
};

const size_t options_ndefs = sizeof(options_defs) / sizeof(options_defs[0]);

int parse_size(const char *text, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno)
		return -EINVAL;
	int shift = 0;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && (*end == 'i' || *end == 'I'))
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* An IPv4 or IPv6 address in numbers, what a socket binds to (no host
 * name: the metrics must not listen wherever a resolver says). */
static bool is_ip_literal(const char *text)
{
	unsigned char addr[sizeof(struct in6_addr)];
	return inet_pton(AF_INET, text, addr) == 1 || inet_pton(AF_INET6, text, addr) == 1;
}

static int parse_o(struct options *o, const char *list, char *err, size_t err_size);

static int set_value(struct options *o, const struct option_def *d, const char *value,
		     char *err, size_t err_size)
{
	void *field = (char *)o + d->offset;
	uint64_t size;
	char *end;

	switch (d->type) {
	case OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case OPT_LEVEL:
		if (log_parse_level(value, (enum log_level *)field) != 0) {
			snprintf(err, err_size, "--%s: '%s' is not one of error, warn, info, debug",
				 d->name, value);
			return -EINVAL;
		}
		return 0;
	case OPT_ALIAS:
		return parse_o(o, d->def, err, err_size);
	case OPT_ADDRESS:
		if (!is_ip_literal(value)) {
			snprintf(err, err_size, "--%s: '%s' is not an IP address (such as "
				 "127.0.0.1 or ::1)", d->name, value);
			return -EINVAL;
		}
		__attribute__((fallthrough));
	case OPT_STRING:
		free(*(char **)field);
		*(char **)field = strdup(value);
		return *(char **)field ? 0 : -ENOMEM;
	case OPT_SIZE:
		if (parse_size(value, &size) != 0) {
			snprintf(err, err_size, "--%s: '%s' is not a size (try 500M or 2G)", d->name,
				 value);
			return -EINVAL;
		}
		if (size < (uint64_t)d->min || size > (uint64_t)d->max) {
			snprintf(err, err_size, "--%s: %s is out of range (%lld to %lld bytes)",
				 d->name, value, (long long)d->min, (long long)d->max);
			return -EINVAL;
		}
		*(uint64_t *)field = size;
		return 0;
	case OPT_TTL:
		if (strcmp(value, "indefinite") == 0 || strcmp(value, "-1") == 0) {
			*(long *)field = OPTIONS_TTL_INDEFINITE;
			return 0;
		}
		/* a number of seconds: */
		__attribute__((fallthrough));
	case OPT_LONG:
		errno = 0;
		long v = strtol(value, &end, 10);
		if (errno || end == value || *end || v < d->min || v > d->max) {
			snprintf(err, err_size, "--%s: '%s' is not a number from %lld to %lld",
				 d->name, value, (long long)d->min, (long long)d->max);
			return -EINVAL;
		}
		*(long *)field = v;
		return 0;
	case OPT_PREFETCH:
		if (cache_prefetch_parse(value, (enum prefetch_policy *)field) != 0) {
			snprintf(err, err_size,
				 "--%s: '%s' is not one of none, neighbors, row, object, auto", d->name,
				 value);
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

static const struct option_def *find_long(unsigned cmd, const char *name, size_t len)
{
	for (size_t i = 0; i < options_ndefs; i++)
		if ((options_defs[i].cmds & cmd) && strlen(options_defs[i].name) == len &&
		    strncmp(options_defs[i].name, name, len) == 0)
			return &options_defs[i];
	return NULL;
}

/* A -o name: as in the table, or with '_' for '-' (cache_dir=, as fstab
 * lines usually spell it). Not an alias: -o allow_other and -o debug are
 * FUSE's words (--allow-other stands for the first). */
static const struct option_def *find_mount_option(const char *name, size_t len)
{
	char spelled[64];
	if (len >= sizeof(spelled))
		return NULL;
	for (size_t i = 0; i < len; i++)
		spelled[i] = name[i] == '_' ? '-' : name[i];
	const struct option_def *d = find_long(OPTIONS_MOUNT, spelled, len);
	return d && d->type != OPT_ALIAS ? d : NULL;
}

static int append_fuse_opt(struct options *o, const char *word, size_t len)
{
	size_t have = o->fuse_opts ? strlen(o->fuse_opts) : 0;
	char *grown = realloc(o->fuse_opts, have + len + 2);
	if (!grown)
		return -ENOMEM;
	if (have)
		grown[have++] = ',';
	memcpy(grown + have, word, len);
	grown[have + len] = '\0';
	o->fuse_opts = grown;
	return 0;
}

/* -o a,b=c: tilefs options by name (a_b or a-b), the rest for FUSE; an
 * alias (-o debug) as the words it stands for. */
static int parse_o(struct options *o, const char *list, char *err, size_t err_size)
{
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		size_t name_len = strcspn(p, "=,");
		const struct option_def *d = find_mount_option(p, name_len);
		int rc;
		if (d && d->type == OPT_FLAG) {
			rc = set_value(o, d, NULL, err, err_size);
		} else if (d && name_len < len) {
			char value[4096];
			snprintf(value, sizeof(value), "%.*s", (int)(len - name_len - 1), p + name_len + 1);
			rc = set_value(o, d, value, err, err_size);
		} else if (d) {
			snprintf(err, err_size, "-o %s needs a value (-o %s=%s)", d->name, d->name,
				 d->arg);
			rc = -EINVAL;
		} else if (len == 2 && strncmp(p, "rw", 2) == 0) {
			snprintf(err, err_size, "-o rw: tilefs mounts are read-only");
			rc = -EINVAL;
		} else {
			rc = len ? append_fuse_opt(o, p, len) : 0;
		}
		if (rc)
			return rc;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int set_defaults(struct options *o, char *err, size_t err_size)
{
	memset(o, 0, sizeof(*o));
	o->ifd = -1;
	for (size_t i = 0; i < options_ndefs; i++) {
		const struct option_def *d = &options_defs[i];
		if (d->def && d->type != OPT_ALIAS && set_value(o, d, d->def, err, err_size) != 0)
			return -EINVAL;
	}
	return 0;
}

/* A positional argument: SOURCE, then MOUNTPOINT or the paths to warm. */
static int add_positional(struct options *o, unsigned cmd, const char *a, char *err,
			  size_t err_size)
{
	char *copy = strdup(a);
	if (!copy)
		return -ENOMEM;
	if (!o->source) {
		o->source = copy;
	} else if (cmd == OPTIONS_MOUNT && !o->mountpoint) {
		o->mountpoint = copy;
	} else if (cmd == OPTIONS_WARM) {
		char **grown = realloc(o->paths, (o->npaths + 1) * sizeof(*grown));
		if (!grown) {
			free(copy);
			return -ENOMEM;
		}
		o->paths = grown;
		o->paths[o->npaths++] = copy;
	} else {
		free(copy);
		snprintf(err, err_size, "unexpected argument '%s'", a);
		return -EINVAL;
	}
	return 0;
}

/*
 * Blank, in place, what of the URL in WORD (LEN bytes) is a secret: its
 * query string (after '?') and the password of user:password@. The bytes
 * become NULs, so /proc/PID/cmdline (ps) no longer shows them.
 */
static void scrub_url(char *word, size_t len)
{
	char *scheme = memmem(word, len, "://", 3);
	if (!scheme)
		return;
	char *host = scheme + 3, *end = word + len;
	char *path = host + strcspn(host, "/?#");
	if (path > end)
		path = end;
	char *at = memchr(host, '@', (size_t)(path - host));
	char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
	if (colon)
		memset(colon + 1, 0, (size_t)(at - colon - 1));
	char *query = memchr(path, '?', (size_t)(end - path));
	if (query)
		memset(query + 1, 0, (size_t)(end - query - 1));
}

/* Blank the value of a secret option in WORD ("--tier-secret=S",
 * "tier_secret=S"); true when WORD names one without "=" (the value is
 * the next word). */
static bool scrub_secret(char *word, size_t len)
{
	static const char *const names[] = { "--tier-secret", "tier-secret", "tier_secret" };
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		size_t n = strlen(names[k]);
		if (len < n || strncmp(word, names[k], n) != 0)
			continue;
		if (len == n)
			return true;
		if (word[n] == '=')
			memset(word + n + 1, 0, len - n - 1);
	}
	return false;
}

/* Scrub the URLs and secrets of ARGV once parsed (copies are in the
 * options): SOURCE, option values, and each word of a -o list. */
static void scrub_argv(unsigned cmd, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		char *a = argv[i];
		bool o_list = cmd == OPTIONS_MOUNT && strncmp(a, "-o", 2) == 0;
		if (o_list) {
			a = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
			for (char *p = a; p && *p;) {
				size_t len = strcspn(p, ",");
				scrub_url(p, len);
				scrub_secret(p, len);
				p += len;
				p += *p == ',';
			}
		} else if (strstr(a, "://")) {
			scrub_url(a, strlen(a));
		} else if (scrub_secret(a, strlen(a)) && i + 1 < argc) {
			i++;
			memset(argv[i], 0, strlen(argv[i]));
		}
	}
}

static int parse_args(struct options *o, unsigned cmd, int argc, char **argv, char *err,
		      size_t err_size);

int options_parse(struct options *o, unsigned cmd, int argc, char **argv, char *err,
		  size_t err_size)
{
	int rc = parse_args(o, cmd, argc, argv, err, err_size);
	scrub_argv(cmd, argc, argv);
	return rc;
}

static int parse_args(struct options *o, unsigned cmd, int argc, char **argv, char *err,
		      size_t err_size)
{
	int rc;

	if (set_defaults(o, err, err_size) != 0)
		return -EINVAL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const struct option_def *d = NULL;
		const char *value = NULL;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			o->help = true;
			continue;
		}
		if (cmd == OPTIONS_MOUNT && strncmp(a, "-o", 2) == 0) {
			const char *list = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
			if (!list) {
				snprintf(err, err_size, "-o needs a list of options");
				return -EINVAL;
			}
			rc = parse_o(o, list, err, err_size);
			if (rc)
				return rc;
			continue;
		}
		if (strncmp(a, "--", 2) == 0 && a[2]) {
			size_t len = strcspn(a + 2, "=");
			d = find_long(cmd, a + 2, len);
			if (a[2 + len] == '=')
				value = a + 3 + len;
		} else if (a[0] == '-' && a[1] && !a[2]) {
			for (size_t k = 0; k < options_ndefs; k++)
				if ((options_defs[k].cmds & cmd) && options_defs[k].short_name == a[1])
					d = &options_defs[k];
		} else {
			rc = add_positional(o, cmd, a, err, err_size);
			if (rc)
				return rc;
			continue;
		}
		if (!d) {
			snprintf(err, err_size, "unknown option '%s'", a);
			return -EINVAL;
		}
		if (d->type == OPT_FLAG || d->type == OPT_ALIAS) {
			if (value) {
				snprintf(err, err_size, "--%s takes no value", d->name);
				return -EINVAL;
			}
		} else if (!value) {
			if (i + 1 >= argc) {
				snprintf(err, err_size, "--%s needs a value (%s)", d->name, d->arg);
				return -EINVAL;
			}
			value = argv[++i];
		}
		rc = set_value(o, d, value, err, err_size);
		if (rc)
			return rc;
	}
	if (o->help)
		return 0;
	if (cmd == OPTIONS_MOUNT && !o->mountpoint) {
		snprintf(err, err_size, "mount needs a SOURCE and a MOUNTPOINT");
		return -EINVAL;
	}
	if (cmd == OPTIONS_WARM && !o->source) {
		snprintf(err, err_size, "warm needs a SOURCE");
		return -EINVAL;
	}
	if (!o->cache_dir)
		o->cache_dir = options_default_cache_dir();
	return 0;
}

struct source_options options_source(const struct options *o)
{
	return (struct source_options){
		.endpoint = o->endpoint,
		.region = o->region,
		.profile = o->profile && *o->profile ? o->profile : NULL,
		.virtual_hosted = o->virtual_hosted,
		.no_sign_request = o->no_sign_request,
		.requester_pays = o->requester_pays,
		.page_size = o->page_size,
		.tier = o->tier,
		.tier_secret = o->tier_secret ? o->tier_secret :
			       o->tier ? getenv("TILEFS_TIER_SECRET") : NULL,
		.tier_ca_file = o->tier_ca_file,
		.tier_allow_http = o->tier_allow_http,
	};
}

void options_http(const struct options *o, long connections, struct http_config *out)
{
	http_config_defaults(out);
	out->ca_file = o->ca_file;
	out->retries = (int)o->retries;
	out->max_connections = (int)connections;
	out->fetch_threads = (int)o->fetch_threads;
}

uint64_t options_default_cache_size(const char *dir)
{
	struct statvfs v;
	if (statvfs(dir, &v) != 0)
		return 10ull << 30;
	uint64_t half = (uint64_t)v.f_bavail * v.f_frsize / 2;
	return half > (64ull << 20) ? half : 64ull << 20;
}

/* Make PATH and its parents: the parents 0755, PATH itself 0700. */
static int mkdir_parents(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Check DIR (private_dir_open()); CLOSE_TO_OTHERS: also make it 0700. */
static int check_cache_dir(const char *dir, bool close_to_others)
{
	char why[256];
	int fd = private_dir_open(dir, why, sizeof(why));
	if (fd == -EPERM)
		fprintf(stderr, "tilefs: cache dir %s %s\n", dir, why);
	if (fd < 0)
		return fd;
	/* an older tilefs made it 0755 (and index.db 0644): close it to others */
	struct stat st;
	if (close_to_others && fstat(fd, &st) == 0 && (st.st_mode & 077))
		fchmod(fd, st.st_mode & 07700);
	close(fd);
	return 0;
}

int options_check_cache_dir(const char *dir)
{
	return check_cache_dir(dir, true);
}

int options_check_cache_dir_as_is(const char *dir)
{
	return check_cache_dir(dir, false);
}

int options_make_cache_dir(const char *dir)
{
	int err = mkdir_parents(dir);
	if (!err && access(dir, R_OK | W_OK | X_OK) != 0)
		err = -errno;
	if (err) {
		fprintf(stderr, "tilefs: cache dir %s is not usable: %s (choose another with "
			"--cache-dir)\n", dir, strerror(-err));
		return err;
	}
	err = options_check_cache_dir(dir);
	if (err && err != -EPERM)
		fprintf(stderr, "tilefs: cache dir %s is not usable: %s (choose another with "
			"--cache-dir)\n", dir, strerror(-err));
	return err;
}

char *options_default_cache_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char path[4096];
	if (geteuid() == 0)
		snprintf(path, sizeof(path), "/var/cache/tilefs");
	else if (xdg && *xdg)
		snprintf(path, sizeof(path), "%s/tilefs", xdg);
	else
		snprintf(path, sizeof(path), "%s/.cache/tilefs", home ? home : ".");
	return strdup(path);
}

void options_release(struct options *o)
{
	for (size_t i = 0; i < options_ndefs; i++)
		if (options_defs[i].type == OPT_STRING || options_defs[i].type == OPT_ADDRESS)
			free(*(char **)((char *)o + options_defs[i].offset));
	free(o->fuse_opts);
	free(o->source);
	free(o->mountpoint);
	for (size_t i = 0; i < o->npaths; i++)
		free(o->paths[i]);
	free(o->paths);
	memset(o, 0, sizeof(*o));
}
