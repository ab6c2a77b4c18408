/*
 * options.c - see options.h.
 */
#include "tools/options.h"
#include "cache/engine/cache.h"
#include "cache/base/log.h"
#include "cache/base/private_dir.h"
#include "cache/store/index.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* OPT_TTL: seconds, or "indefinite" (-1 too, as gcsfuse spells it):
 * OPTIONS_TTL_INDEFINITE */
enum opt_type { OPT_FLAG, OPT_STRING, OPT_SIZE, OPT_LONG, OPT_TTL, OPT_LEVEL, OPT_PREFETCH };

struct option_def {
	const char *name;
	unsigned cmds;			/* OPTIONS_MOUNT | OPTIONS_WARM */
	char short_name;
	enum opt_type type;
	size_t offset;
	const char *arg;
	const char *def;		/* default, as text; NULL: computed */
	int64_t min, max;
	const char *help;
};

#define OFF(field) offsetof(struct options, field)
#define TEXT(x) #x
#define NUMBER(x) TEXT(x)		/* a macro's value as a default's text */
#define M OPTIONS_MOUNT
#define W OPTIONS_WARM

static const struct option_def defs[] = {
	{ "foreground", M, 'f', OPT_FLAG, OFF(foreground), NULL, NULL, 0, 0,
	  "stay in the foreground and log to stderr" },
	{ "cache-dir", M | W, 0, OPT_STRING, OFF(cache_dir), "DIR", NULL, 0, 0,
	  "where cached data and its index live (default /var/cache/tilefs for root,\n"
	  "$XDG_CACHE_HOME/tilefs otherwise); shared by every tilefs using it" },
	{ "cache-size", M | W, 0, OPT_SIZE, OFF(cache_size), "SIZE", NULL, 1 << 20, INT64_MAX,
	  "most data to keep, e.g. 500M, 200G (default: half the free space)" },
	{ "block-size", M | W, 0, OPT_SIZE, OFF(block_size), "SIZE", "256K",
	  INDEX_BLOCK_SIZE_MIN, INDEX_BLOCK_SIZE_MAX,
	  "unit of caching and fetching" },
	{ "header-size", M | W, 0, OPT_SIZE, OFF(header_size), "SIZE", "64K",
	  INDEX_HEADER_LEN_MIN, INDEX_HEADER_LEN_MAX,
	  "bytes fetched when a file is first opened: a COG's IFDs and tile\n"
	  "index usually fit, so opening costs one request (a file listed no\n"
	  "larger than 4 times this is fetched whole)" },
	{ "prefetch", M, 0, OPT_PREFETCH, OFF(prefetch), "POLICY", "auto", 0, 0,
	  "what a tile read also fetches: none, neighbors (the tiles around\n"
	  "it), row (the rest of its tile row), object (the whole file, in the\n"
	  "background), auto (object while the listed files fit in\n"
	  "--cache-size and no --tier is given, none otherwise)" },
	{ "merge-gap", M, 0, OPT_SIZE, OFF(merge_gap), "SIZE", "32K", 0, 16 << 20,
	  "fetch units this close together with one request" },
	{ "readahead", M, 0, OPT_SIZE, OFF(readahead), "SIZE", "16M", 0, 256 << 20,
	  "largest readahead window of a sequential read (0: none)" },
	{ "hint-budget", M, 0, OPT_SIZE, OFF(hint_budget), "SIZE", NULL, 0, INT64_MAX,
	  "bytes a hint (tilefs hint) has fetched ahead of the readers at most\n"
	  "(default: 1/32 of --cache-size, at most 1G)" },
	{ "record", M, 0, OPT_STRING, OFF(record_file), "FILE", NULL, 0, 0,
	  "write what the readers read, in order, to FILE (mode 0600): one\n"
	  "line per open, the file's path and the full-resolution window its\n"
	  "reads touched, for tilefs hint or warm --from-file; files are then\n"
	  "read through the daemon, not by passthrough, and tiled TIFFs with\n"
	  "direct I/O, so that the kernel's readahead adds no tile" },
	{ "no-passthrough", M, 0, OPT_FLAG, OFF(no_passthrough), NULL, NULL, 0, 0,
	  "read every file through the daemon, never by FUSE passthrough (by\n"
	  "default the kernel reads files cached whole straight from the\n"
	  "cache, where it can: Linux 6.9+, mounted by root)" },
	{ "ttl", M, 0, OPT_TTL, OFF(ttl), "SECONDS", "60", 0, 86400 * 365,
	  "trust directory listings and object versions this long; 0 checks\n"
	  "the origin on every open; \"indefinite\" (or -1) never checks again\n"
	  "what was listed or opened once, for data known never to change" },
	{ "max-names", M | W, 0, OPT_LONG, OFF(max_names), "N", NULL, 1000, 1L << 40,
	  "hold at most N names of files and directories in memory; past\n"
	  "it, directories used least recently are listed again when used\n"
	  "(default: 1/16 of the memory at 512 B a name, 100k to 4M)" },
	{ "list", M, 0, OPT_STRING, OFF(list_file), "FILE", NULL, 0, 0,
	  "take the file tree from FILE (relative paths or URLs, one per line)\n"
	  "instead of directory listings" },
	{ "endpoint", M | W, 0, OPT_STRING, OFF(endpoint), "URL", NULL, 0, 0,
	  "S3, Azure or GCS endpoint (S3-compatible servers, emulators);\n"
	  "for S3 it implies path-style addressing" },
	{ "region", M | W, 0, OPT_STRING, OFF(region), "REGION", NULL, 0, 0,
	  "S3 region (default: AWS_REGION, the profile's, us-east-1)" },
	{ "virtual-hosted", M | W, 0, OPT_FLAG, OFF(virtual_hosted), NULL, NULL, 0, 0,
	  "S3: put the bucket in the host name even with --endpoint" },
	{ "no-sign-request", M | W, 0, OPT_FLAG, OFF(no_sign_request), NULL, NULL, 0, 0,
	  "read public data anonymously (S3, Azure, GCS)" },
	{ "requester-pays", M | W, 0, OPT_FLAG, OFF(requester_pays), NULL, NULL, 0, 0,
	  "S3: agree to pay for requests to a requester-pays bucket" },
	{ "page-size", M | W, 0, OPT_LONG, OFF(page_size), "N", "0", 0, 5000,
	  "objects per listing page for S3, Azure, GCS (0: the server's)" },
	{ "ca-file", M | W, 0, OPT_STRING, OFF(ca_file), "FILE", NULL, 0, 0,
	  "trust the CA certificates in FILE (PEM) for https origins" },
	{ "tier", M | W, 0, OPT_STRING, OFF(tier), "URL", NULL, 0, 0,
	  "send every request for SOURCE through the shared cache tier at URL\n"
	  "(nginx from 'tilefs tier-config'), signed as for the store; the\n"
	  "store directly while the tier cannot be reached" },
	{ "tier-secret", M | W, 0, OPT_STRING, OFF(tier_secret), "SECRET", NULL, 0, 0,
	  "send SECRET to the tier in X-Tilefs-Tier-Secret (default:\n"
	  "TILEFS_TIER_SECRET); the tier-config --secret it was made with" },
	{ "tier-ca-file", M | W, 0, OPT_STRING, OFF(tier_ca_file), "FILE", NULL, 0, 0,
	  "trust the CA certificates in FILE (PEM) for an https:// --tier\n"
	  "(default: the system's; --ca-file is the store's)" },
	{ "tier-allow-http", M | W, 0, OPT_FLAG, OFF(tier_allow_http), NULL, NULL, 0, 0,
	  "let an http:// --tier carry a bearer token, a SAS or a token in\n"
	  "SOURCE's query in clear to an https store (refused without it):\n"
	  "only where the network to the tier is trusted" },
	{ "retries", M | W, 0, OPT_LONG, OFF(retries), "N", NUMBER(HTTP_RETRIES_DEFAULT), 0, 100,
	  "retries of a failed request before the read fails with EIO" },
	{ "connections", M, 0, OPT_LONG, OFF(max_connections), "N", NUMBER(HTTP_CONNECTIONS_DEFAULT), 1, 256,
	  "connections to the origin at most" },
	{ "fetch-threads", M | W, 0, OPT_LONG, OFF(fetch_threads), "N", "0", 0, 64,
	  "threads that receive, decrypt and store what is fetched, each\n"
	  "with its share of the connections (0: one per 4 connections)" },
	{ "log-level", M | W, 0, OPT_LEVEL, OFF(log_level), "LEVEL", "warn", 0, 0,
	  "error, warn, info or debug" },
	{ "log-file", M | W, 0, OPT_STRING, OFF(log_file), "FILE", NULL, 0, 0,
	  "append log lines to FILE (default: CACHE_DIR/tilefs.log for a\n"
	  "mount, stderr with -f and for warm)" },
	{ "metrics-file", M, 0, OPT_STRING, OFF(metrics_file), "FILE", NULL, 0, 0,
	  "rewrite FILE every 5 seconds with the mount's counters, in\n"
	  "Prometheus text format" },
	{ "metrics-port", M, 0, OPT_LONG, OFF(metrics_port), "PORT", "0", 0, 65535,
	  "serve the same counters at http://127.0.0.1:PORT/metrics (0: off)" },
	{ "from-file", W, 0, OPT_STRING, OFF(from_file), "LIST", NULL, 0, 0,
	  "warm the files LIST names (paths under SOURCE or URLs, one per\n"
	  "line) instead of listing SOURCE; a line may add a window X Y W H\n"
	  "of that file (tilefs hint's order format, as mount --record\n"
	  "writes it): just its tiles are warmed" },
	{ "header-only", W, 0, OPT_FLAG, OFF(header_only), NULL, NULL, 0, 0,
	  "just each file's header (IFDs and tile index): opens cost nothing" },
	{ "overviews", W, 0, OPT_FLAG, OFF(overviews), NULL, NULL, 0, 0,
	  "the header and every overview (reduced-resolution) IFD" },
	{ "ifd", W, 0, OPT_LONG, OFF(ifd), "N", NULL, 0, 1023,
	  "the header and IFD N (numbered as 'tilefs inspect' shows them)" },
	{ "window", W, 0, OPT_STRING, OFF(window), "X,Y,W,H", NULL, 0, 0,
	  "the header and the tiles under this pixel window of the\n"
	  "full-resolution image (and of its mask)" },
	{ "jobs", W, 'j', OPT_LONG, OFF(jobs), "N", "16", 1, 256,
	  "transfers at once" },
	{ "shard", W, 0, OPT_STRING, OFF(shard), "I/N", NULL, 0, 0,
	  "take only shard I of N (1 <= I <= N): N machines given 1/N .. N/N\n"
	  "warm disjoint parts that together cover every file" },
	{ "dry-run", W, 'n', OPT_FLAG, OFF(dry_run), NULL, NULL, 0, 0,
	  "print what would be fetched and how many bytes; reads each\n"
	  "file's header (as opening it does) but nothing more" },
	{ "partial", W, 0, OPT_FLAG, OFF(partial), NULL, NULL, 0, 0,
	  "when the selection exceeds --cache-size, warm the files that fit\n"
	  "instead of refusing" },
};

#define NDEFS (sizeof(defs) / sizeof(defs[0]))

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
	for (size_t i = 0; i < NDEFS; i++)
		if ((defs[i].cmds & cmd) && strlen(defs[i].name) == len &&
		    strncmp(defs[i].name, name, len) == 0)
			return &defs[i];
	return NULL;
}

/* A -o name: as in the table, or with '_' for '-' (cache_dir=, as fstab
 * lines usually spell it). */
static const struct option_def *find_mount_option(const char *name, size_t len)
{
	char spelled[64];
	if (len >= sizeof(spelled))
		return NULL;
	for (size_t i = 0; i < len; i++)
		spelled[i] = name[i] == '_' ? '-' : name[i];
	return find_long(OPTIONS_MOUNT, spelled, len);
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

/* -o a,b=c: tilefs options by name (a_b or a-b), the rest for FUSE. */
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
	for (size_t i = 0; i < NDEFS; i++)
		if (defs[i].def && set_value(o, &defs[i], defs[i].def, err, err_size) != 0)
			return -EINVAL;
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
			for (size_t k = 0; k < NDEFS; k++)
				if ((defs[k].cmds & cmd) && defs[k].short_name == a[1])
					d = &defs[k];
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
		if (d->type == OPT_FLAG) {
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
	for (size_t i = 0; i < NDEFS; i++)
		if (defs[i].type == OPT_STRING)
			free(*(char **)((char *)o + defs[i].offset));
	free(o->fuse_opts);
	free(o->source);
	free(o->mountpoint);
	for (size_t i = 0; i < o->npaths; i++)
		free(o->paths[i]);
	free(o->paths);
	memset(o, 0, sizeof(*o));
}

/* What -o takes, in --help and in the man page. */
static const char o_help[] =
	"mount options: any option above as name=value (cache_dir= or\n"
	"cache-dir=), or FUSE's (allow_other, ...); ro is implied";

/* HELP, its continuation lines indented under the first. */
static void usage_text(FILE *out, const char *help)
{
	for (const char *p = help; *p; p++) {
		fputc(*p, out);
		if (*p == '\n')
			fprintf(out, "  %-26s ", "");
	}
}

void options_usage(FILE *out, unsigned cmd)
{
	for (size_t i = 0; i < NDEFS; i++) {
		const struct option_def *d = &defs[i];
		char head[64];
		if (!(d->cmds & cmd))
			continue;
		if (d->short_name)
			snprintf(head, sizeof(head), "-%c, --%s%s%s", d->short_name, d->name,
				 d->arg ? " " : "", d->arg ? d->arg : "");
		else
			snprintf(head, sizeof(head), "    --%s%s%s", d->name, d->arg ? " " : "",
				 d->arg ? d->arg : "");
		fprintf(out, "  %-26s ", head);
		usage_text(out, d->help);
		if (d->def && d->type != OPT_FLAG)
			fprintf(out, " [%s]", d->def);
		fputc('\n', out);
	}
	if (cmd == OPTIONS_MOUNT) {
		fprintf(out, "  %-26s ", "-o OPT[,OPT...]");
		usage_text(out, o_help);
		fputc('\n', out);
	}
	fprintf(out, "  %-26s %s\n", "-h, --help", "show this help");
}

/* Text for roff: a backslash doubled, '-' as "\-" (a minus, so the
 * options can be searched and copied), a line never starting with '.' or
 * '\''; each newline of the table's help becomes a space. */
static void man_text(FILE *out, const char *text)
{
	bool line_start = true;
	for (const char *p = text; *p; p++) {
		if (line_start && (*p == '.' || *p == '\''))
			fputs("\\&", out);
		line_start = false;
		if (*p == '\\')
			fputs("\\e", out);
		else if (*p == '-')
			fputs("\\-", out);
		else if (*p == '\n')
			fputc(' ', out);
		else
			fputc(*p, out);
	}
}

void options_man(FILE *out, unsigned cmd)
{
	for (size_t i = 0; i < NDEFS; i++) {
		const struct option_def *d = &defs[i];
		if (!(d->cmds & cmd))
			continue;
		fputs(".TP\n", out);
		if (d->short_name)
			fprintf(out, "\\fB\\-%c\\fR, ", d->short_name);
		fputs("\\fB\\-\\-", out);
		man_text(out, d->name);
		fputs("\\fR", out);
		if (d->arg) {
			fputs(" \\fI", out);
			man_text(out, d->arg);
			fputs("\\fR", out);
		}
		fputc('\n', out);
		man_text(out, d->help);
		if (d->def && d->type != OPT_FLAG) {
			fputs(" [default: ", out);
			man_text(out, d->def);
			fputc(']', out);
		}
		fputc('\n', out);
	}
	if (cmd == OPTIONS_MOUNT) {
		fputs(".TP\n\\fB\\-o\\fR \\fIOPT\\fR[,\\fIOPT\\fR...]\n", out);
		man_text(out, o_help);
		fputc('\n', out);
	}
	fputs(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nshow this help\n", out);
}

/* Text for a Markdown table cell: each newline of the table's help becomes
 * a space, '|' is escaped. */
static void markdown_text(FILE *out, const char *text)
{
	for (const char *p = text; *p; p++) {
		if (*p == '\n')
			fputc(' ', out);
		else if (*p == '|')
			fputs("\\|", out);
		else
			fputc(*p, out);
	}
}

void options_markdown(FILE *out, unsigned cmd)
{
	fputs("| option | default | meaning |\n|---|---|---|\n", out);
	for (size_t i = 0; i < NDEFS; i++) {
		const struct option_def *d = &defs[i];
		if (!(d->cmds & cmd))
			continue;
		fputs("| `", out);
		if (d->short_name)
			fprintf(out, "-%c`, `", d->short_name);
		fprintf(out, "--%s%s%s` | ", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
		if (d->type == OPT_FLAG)
			fputs("off", out);
		else if (d->def)
			fprintf(out, "`%s`", d->def);
		fputs(" | ", out);
		markdown_text(out, d->help);
		fputs(" |\n", out);
	}
	if (cmd == OPTIONS_MOUNT) {
		fputs("| `-o OPT[,OPT...]` | | ", out);
		markdown_text(out, o_help);
		fputs(" |\n", out);
	}
}
