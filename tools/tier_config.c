/*
 * tier_config.c - see tier_config.h.
 *
 * What the generated nginx does, and why (README, "Cluster"):
 * - Requests arrive as tilefs would send them to the store: the store's
 *   path, query and Host, its Authorization, x-amz-*, x-goog-* or x-ms-*
 *   headers, Range and If-Match. They go upstream unchanged (the signature
 *   covers the path, the Host and, for Azure Shared Key, Range and
 *   If-Match), so the tier needs no credential. Only a Host naming the
 *   store is served, only GET and HEAD, and only the headers tilefs sends
 *   (TIER_HEADERS) are forwarded: a header the store honours but the key
 *   leaves out (Azure's x-ms-range overrides Range) would let one client
 *   cache other bytes under a key for all.
 * - Ranged GETs are cached; the key is the store host, the path (no query:
 *   a SAS or a token must not split the cache), If-Match (the object's
 *   version, so a new version never meets old bytes), x-ms-version (it
 *   shapes Azure's answers) and the exact Range: every host cuts a file
 *   into the same tiles, so they ask for the same ranges. --slice SIZE
 *   caches fixed slices instead (nginx's slice module); it rewrites Range,
 *   which breaks Azure Shared Key signatures.
 * - It listens on 127.0.0.1 unless told an address, with TLS given a
 *   certificate (a bearer token or a SAS must not cross the network in
 *   clear: cache/origin/tier.h), and warns without a secret.
 * - Listings (GETs without Range: 200) are cached for --listing-valid,
 *   keyed by their query as well; HEADs (version checks) pass through.
 * - proxy_cache_lock: concurrent misses for one key make one upstream
 *   request; the others wait for it.
 * - Keep-alive to the store; an https store is verified (SNI, CA bundle).
 */
#include "tools/tier_config.h"
#include "tools/options.h"
#include "cache/origin/providers/provider.h"
#include "cache/origin/tier.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct tier_config {
	const char *source, *endpoint, *region, *listen, *cache_dir, *inactive, *valid, *listing_valid;
	const char *secret;
	const char *ca_file, *access_log, *error_log, *pid, *user;
	const char *tls_cert, *tls_key;	/* both: the tier listens with TLS */
	uint64_t cache_size, slice;
	bool help;
};

#define TC_OFF(field) offsetof(struct tier_config, field)

static const struct {
	const char *name, *arg, *help;
	size_t offset;
	bool size;
} tc_defs[] = {
	{ "endpoint", "URL", "the store's endpoint (S3-compatible, Azure, GCS), as for mount",
	  TC_OFF(endpoint), false },
	{ "region", "REGION", "S3 region (default: AWS_REGION, us-east-1), as for mount",
	  TC_OFF(region), false },
	{ "listen", "ADDR:PORT", "where the tier listens (default 127.0.0.1:8080: this\n"
	  "host only; give the cluster's private address; a bare PORT\n"
	  "or 0.0.0.0:PORT listens on every address)", TC_OFF(listen), false },
	{ "tls-cert", "FILE", "listen with TLS: the tier's certificate chain (PEM);\n"
	  "mounts then give --tier https://NAME:PORT (--tier-ca-file).\n"
	  "Needed for a source whose requests carry a bearer token or\n"
	  "a SAS to an https store", TC_OFF(tls_cert), false },
	{ "tls-key", "FILE", "the private key of --tls-cert (PEM)", TC_OFF(tls_key), false },
	{ "cache-dir", "DIR", "the tier's cache (default\n"
	  "/var/cache/tilefs-tier-ADDR-PORT, one per --listen)",
	  TC_OFF(cache_dir), false },
	{ "cache-size", "SIZE", "most bytes the tier keeps (default 100G)",
	  TC_OFF(cache_size), true },
	{ "inactive", "TIME", "drop what nobody read for TIME (nginx time, default 30d)",
	  TC_OFF(inactive), false },
	{ "valid", "TIME", "serve a cached range for TIME after it was fetched (default 7d)",
	  TC_OFF(valid), false },
	{ "listing-valid", "TIME", "serve a cached listing or unranged GET for TIME\n"
	  "(default 60s, as mount's --ttl)", TC_OFF(listing_valid), false },
	{ "secret", "SECRET", "answer only requests with X-Tilefs-Tier-Secret: SECRET\n"
	  "(mount and warm: --tier-secret or TILEFS_TIER_SECRET); default:\n"
	  "TILEFS_TIER_SECRET if set, else no check", TC_OFF(secret), false },
	{ "slice", "SIZE", "cache fixed slices of SIZE instead of the exact ranges asked\n"
	  "for (0, the default: exact ranges; not with Azure Shared Key)",
	  TC_OFF(slice), true },
	{ "ca-file", "FILE", "CA bundle to verify an https store (default\n"
	  "/etc/ssl/certs/ca-certificates.crt)", TC_OFF(ca_file), false },
	{ "access-log", "FILE", "default /var/log/nginx/tilefs-tier-ADDR-PORT.access.log",
	  TC_OFF(access_log), false },
	{ "error-log", "FILE", "default /var/log/nginx/tilefs-tier-ADDR-PORT.error.log",
	  TC_OFF(error_log), false },
	{ "pid", "FILE", "default /run/tilefs-tier-ADDR-PORT.pid, one per --listen",
	  TC_OFF(pid), false },
	{ "user", "USER", "nginx's worker user (default www-data)", TC_OFF(user), false },
};

#define TC_NDEFS (sizeof(tc_defs) / sizeof(tc_defs[0]))

void tier_config_usage(FILE *out)
{
	fprintf(out,
		"usage: tilefs tier-config [OPTIONS] SOURCE\n"
		"       tilefs tier-config [OPTIONS] --endpoint URL\n"
		"\n"
		"Print an nginx configuration for a shared cache tier in front of the store\n"
		"SOURCE reads from: mounts and warms given --tier http(s)://THIS-HOST:PORT\n"
		"send it their requests, signed for the store, and each range is fetched\n"
		"from the store once for all of them. It forwards GET and HEAD only, with\n"
		"the headers tilefs sends. Run it with 'nginx -c FILE'.\n"
		"\n"
		"Options:\n");
	for (size_t i = 0; i < TC_NDEFS; i++) {
		char head[64];
		snprintf(head, sizeof(head), "--%s %s", tc_defs[i].name, tc_defs[i].arg);
		fprintf(out, "  %-22s ", head);
		for (const char *p = tc_defs[i].help; *p; p++) {
			fputc(*p, out);
			if (*p == '\n')
				fprintf(out, "  %-22s ", "");
		}
		fputc('\n', out);
	}
}

static int parse(struct tier_config *tc, int argc, char **argv, char *err, size_t err_size)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			tc->help = true;
			continue;
		}
		if (strncmp(a, "--", 2) != 0) {
			if (tc->source) {
				snprintf(err, err_size, "unexpected argument '%s'", a);
				return -EINVAL;
			}
			tc->source = a;
			continue;
		}
		size_t len = strcspn(a + 2, "=");
		size_t k = 0;
		while (k < TC_NDEFS && (strlen(tc_defs[k].name) != len ||
					strncmp(tc_defs[k].name, a + 2, len) != 0))
			k++;
		if (k == TC_NDEFS) {
			snprintf(err, err_size, "unknown option '%s'", a);
			return -EINVAL;
		}
		const char *value = a[2 + len] == '=' ? a + 3 + len : NULL;
		if (!value && ++i < argc)
			value = argv[i];
		if (!value) {
			snprintf(err, err_size, "--%s needs a value (%s)", tc_defs[k].name,
				 tc_defs[k].arg);
			return -EINVAL;
		}
		char *field = (char *)tc + tc_defs[k].offset;
		if (tc_defs[k].size) {
			if (parse_size(value, (uint64_t *)(void *)field) != 0) {
				snprintf(err, err_size, "--%s: '%s' is not a size", tc_defs[k].name,
					 value);
				return -EINVAL;
			}
		} else {
			/* nginx would read a blank, ';', '{' or a quote as syntax */
			for (const char *p = value; *p; p++) {
				if (isspace((unsigned char)*p) || strchr(";{}\"'\\$#", *p) ||
				    (unsigned char)*p < 0x20) {
					snprintf(err, err_size, "--%s: '%c' is not allowed",
						 tc_defs[k].name, *p);
					return -EINVAL;
				}
			}
			*(const char **)(void *)field = value;
		}
	}
	return 0;
}

/* "scheme://host:port" into its parts (origin as source_open() gives it). */
static int split_origin(const char *origin, char *scheme, char *host, size_t host_size,
			long *port)
{
	const char *sep = strstr(origin, "://");
	if (!sep || sep - origin > 5)
		return -EINVAL;
	memcpy(scheme, origin, (size_t)(sep - origin));
	scheme[sep - origin] = '\0';
	const char *h = sep + 3, *colon = strrchr(h, ':');
	if (!colon || (size_t)(colon - h) >= host_size)
		return -EINVAL;
	memcpy(host, h, (size_t)(colon - h));
	host[colon - h] = '\0';
	*port = strtol(colon + 1, NULL, 10);
	return *port > 0 && *port < 65536 ? 0 : -EINVAL;
}

/*
 * The request headers forwarded to the store besides Host and Range: what
 * tilefs sends (cache/origin: http_attempt.c, the providers' signers) and
 * the stores check. Whatever else a client sends stays at the tier.
 */
static const char *const tier_headers[] = {
	"Authorization", "If-Match", "If-Unmodified-Since",
	"x-amz-date", "x-amz-content-sha256", "x-amz-security-token", "x-amz-request-payer",
	"x-goog-date", "x-goog-content-sha256",
	"x-ms-date", "x-ms-version",
};

static void print_config(FILE *out, const struct tier_config *tc, const char *scheme,
			 const char *host, long port)
{
	bool https = strcmp(scheme, "https") == 0;
	/* one key per cached range, 128 bytes a key: room for 64 KiB ranges */
	uint64_t zone_mb = tc->cache_size / 65536 * 128 >> 20;
	if (zone_mb < 16)
		zone_mb = 16;

	bool tls = tc->tls_cert != NULL;
	fprintf(out,
		"# nginx configuration of a tilefs cache tier (tilefs tier-config %s)\n"
		"# for the store %s://%s:%ld. Mounts use it with --tier %s://THIS-HOST:PORT.\n"
		"# Anyone who can reach the listen address reads what it cached: keep it\n"
		"# on the cluster's private network%s.\n"
		"%s"
		"user %s;\n"
		"worker_processes auto;\n"
		"pid %s;\n"
		"error_log %s warn;\n"
		"events { worker_connections 4096; }\n"
		"http {\n"
		"    log_format tilefs_tier '$remote_addr $request_method $uri \"$http_range\" '\n"
		"        '$status $body_bytes_sent $upstream_cache_status \"$upstream_addr\"';\n"
		"    access_log %s tilefs_tier;\n"
		"    proxy_cache_path %s levels=1:2 keys_zone=tilefs_tier:%" PRIu64 "m\n"
		"        max_size=%" PRIu64 "m inactive=%s use_temp_path=off;\n"
		"    proxy_temp_path %s.tmp;\n"
		"    client_body_temp_path %s.body;\n"
		"    keepalive_timeout 75s;\n"
		"    keepalive_requests 100000;\n"
		"    server_tokens off;\n"
		"\n"
		"    # cache GETs; HEADs (version checks) go to the store\n"
		"    map $request_method $tilefs_no_cache {\n"
		"        GET 0;\n"
		"        default 1;\n"
		"    }\n"
		"    # a listing (no Range) is keyed by its query too\n"
		"    map $http_range $tilefs_listing_args {\n"
		"        \"\" $is_args$args;\n"
		"        default \"\";\n"
		"    }\n"
		"    # the path as sent (percent-encoding kept), without the query\n"
		"    map $request_uri $tilefs_path {\n"
		"        \"~^(?<p>[^?]*)\" $p;\n"
		"    }\n"
		"    # GET and HEAD only: nothing else reaches the store\n"
		"    map $request_method $tilefs_method_ok {\n"
		"        GET 1;\n"
		"        HEAD 1;\n"
		"        default 0;\n"
		"    }\n"
		"    # only the store's own name is forwarded\n"
		"    map $http_host $tilefs_host_ok {\n"
		"        \"%s\" 1;\n"
		"        \"%s:%ld\" 1;\n"
		"        default 0;\n"
		"    }\n"
		"    upstream tilefs_store {\n"
		"        server %s:%ld;\n"
		"        keepalive 64;\n"
		"        keepalive_timeout 60s;\n"
		"    }\n"
		"    server {\n"
		"        listen %s%s;\n",
		TILEFS_VERSION, scheme, host, port, tls ? "https" : "http",
		tc->secret ? ", and every request must carry the secret header" :
			     "\n# (or make one with --secret)",
		tls ? "" : "# Without TLS (--tls-cert), what the requests carry, credentials and\n"
			   "# the secret among them, crosses that network in clear.\n",
		tc->user, tc->pid, tc->error_log, tc->access_log, tc->cache_dir, zone_mb,
		tc->cache_size >> 20, tc->inactive, tc->cache_dir, tc->cache_dir,
		host, host, port, host, port, tc->listen, tls ? " ssl" : "");
	if (tls)
		fprintf(out,
			"        ssl_certificate %s;\n"
			"        ssl_certificate_key %s;\n"
			"        ssl_protocols TLSv1.2 TLSv1.3;\n"
			"        ssl_session_cache shared:tilefs_tier_tls:10m;\n"
			"        ssl_session_timeout 1h;\n",
			tc->tls_cert, tc->tls_key);
	fprintf(out,
		"        location / {\n"
		"            if ($tilefs_method_ok = 0) {\n"
		"                return 405;\n"
		"            }\n");
	if (tc->secret)
		fprintf(out,
			"            if ($http_x_tilefs_tier_secret != \"%s\") {\n"
			"                return 403;\n"
			"            }\n", tc->secret);
	fprintf(out,
		"            if ($tilefs_host_ok = 0) {\n"
		"                return 421;\n"
		"            }\n"
		"            proxy_pass %s://tilefs_store;\n"
		"            proxy_http_version 1.1;\n"
		"            proxy_set_header Connection \"\";\n"
		"            # only the headers tilefs sends, unchanged (the store's\n"
		"            # signature covers some); the rest stay here, so none\n"
		"            # that the cache key leaves out changes the answer\n"
		"            proxy_pass_request_headers off;\n"
		"            proxy_set_header Host $http_host;\n",
		scheme);
	for (size_t i = 0; i < sizeof(tier_headers) / sizeof(tier_headers[0]); i++) {
		char var[64];
		size_t n = 0;
		for (const char *p = tier_headers[i]; *p && n + 1 < sizeof(var); p++)
			var[n++] = *p == '-' ? '_' : (char)tolower((unsigned char)*p);
		var[n] = '\0';
		fprintf(out, "            proxy_set_header %s $http_%s;\n", tier_headers[i], var);
	}
	if (tc->slice)
		fprintf(out,
			"            # fixed slices: Range is rewritten (Azure Shared Key fails)\n"
			"            slice %" PRIu64 "k;\n"
			"            proxy_set_header Range $slice_range;\n"
			"            proxy_cache_key \"$http_host$tilefs_path|$http_if_match|$http_x_ms_version|$slice_range|$tilefs_listing_args\";\n",
			tc->slice >> 10);
	else
		fprintf(out,
			"            proxy_set_header Range $http_range;\n"
			"            proxy_cache_key \"$http_host$tilefs_path|$http_if_match|$http_x_ms_version|$http_range|$tilefs_listing_args\";\n");
	fprintf(out,
		"            proxy_cache tilefs_tier;\n"
		"            proxy_cache_methods GET;\n"
		"            proxy_cache_convert_head off;\n"
		"            proxy_cache_bypass $tilefs_no_cache;\n"
		"            proxy_no_cache $tilefs_no_cache;\n"
		"            # ranges (206) for --valid; listings (200) for --listing-valid\n"
		"            proxy_cache_valid 206 %s;\n"
		"            proxy_cache_valid 200 %s;\n"
		"            # objects are pinned by If-Match: the store's caching\n"
		"            # headers are not the tier's business\n"
		"            proxy_ignore_headers Cache-Control Expires Set-Cookie Vary\n"
		"                X-Accel-Expires X-Accel-Limit-Rate X-Accel-Buffering;\n"
		"            # concurrent misses of a range: one fetch, the rest wait\n"
		"            proxy_cache_lock on;\n"
		"            proxy_cache_lock_timeout 60s;\n"
		"            proxy_cache_lock_age 60s;\n"
		"            proxy_force_ranges off;\n"
		"            proxy_buffering on;\n"
		"            proxy_request_buffering off;\n"
		"            proxy_connect_timeout 10s;\n"
		"            proxy_read_timeout 60s;\n"
		"            add_header X-Tilefs-Tier $upstream_cache_status always;\n",
		tc->valid, tc->listing_valid);
	if (https)
		fprintf(out,
			"            # the store's certificate is verified, for its name\n"
			"            proxy_ssl_server_name on;\n"
			"            proxy_ssl_name %s;\n"
			"            proxy_ssl_verify on;\n"
			"            proxy_ssl_verify_depth 4;\n"
			"            proxy_ssl_trusted_certificate %s;\n"
			"            proxy_ssl_session_reuse on;\n"
			"            proxy_ssl_protocols TLSv1.2 TLSv1.3;\n",
			host, tc->ca_file);
	fprintf(out,
		"        }\n"
		"    }\n"
		"}\n");
}

int tier_config_main(int argc, char **argv)
{
	struct tier_config tc = {
		.listen = "127.0.0.1:8080",
		.cache_size = 100ull << 30,
		.inactive = "30d",
		.valid = "7d",
		.listing_valid = "60s",
		.ca_file = "/etc/ssl/certs/ca-certificates.crt",
		.user = "www-data",
	};
	char err[512];
	if (parse(&tc, argc, argv, err, sizeof(err)) != 0) {
		fprintf(stderr, "tilefs: %s\nTry 'tilefs tier-config --help'.\n", err);
		return 2;
	}
	if (tc.help) {
		tier_config_usage(stdout);
		return 0;
	}
	if (!tc.tls_cert != !tc.tls_key) {
		fprintf(stderr, "tilefs: --tls-cert and --tls-key go together\n"
			"Try 'tilefs tier-config --help'.\n");
		return 2;
	}
	/* two tiers on one host must not share a pid file, a cache (each
	   one's cache manager would evict the other's files) or logs */
	char tag[128], pid[192], cache_dir[192], access_log[192], error_log[192];
	size_t n = 0;
	for (const char *p = tc.listen; *p && n + 1 < sizeof(tag); p++)
		tag[n++] = isalnum((unsigned char)*p) || *p == '.' ? *p : '-';
	tag[n] = '\0';
	if (!tc.pid) {
		snprintf(pid, sizeof(pid), "/run/tilefs-tier-%s.pid", tag);
		tc.pid = pid;
	}
	if (!tc.cache_dir) {
		snprintf(cache_dir, sizeof(cache_dir), "/var/cache/tilefs-tier-%s", tag);
		tc.cache_dir = cache_dir;
	}
	if (!tc.access_log) {
		snprintf(access_log, sizeof(access_log),
			 "/var/log/nginx/tilefs-tier-%s.access.log", tag);
		tc.access_log = access_log;
	}
	if (!tc.error_log) {
		snprintf(error_log, sizeof(error_log), "/var/log/nginx/tilefs-tier-%s.error.log",
			 tag);
		tc.error_log = error_log;
	}
	if (!tc.secret)
		tc.secret = getenv("TILEFS_TIER_SECRET");
	if (!tc.secret)
		fprintf(stderr, "tilefs: warning: no --secret (nor TILEFS_TIER_SECRET): the tier "
			"answers whoever reaches %s\n", tc.listen);
	if (tc.secret) {
		struct tier *check;
		if (tier_new("http://tier", tc.secret, NULL, &check, err, sizeof(err)) != 0) {
			fprintf(stderr, "tilefs: %s\n", err);
			return 2;
		}
		tier_free(check);
		if (strpbrk(tc.secret, "\"\\$;{}'#")) {
			fprintf(stderr, "tilefs: --secret: no quotes, '\\', '$', ';', '{', '}', '#'\n");
			return 2;
		}
	}
	if (!tc.source && !tc.endpoint) {
		fprintf(stderr, "tilefs: tier-config needs a SOURCE or --endpoint\n"
			"Try 'tilefs tier-config --help'.\n");
		return 2;
	}
	/* the store's scheme, host and port, as a mount of SOURCE sends them */
	struct source_options so = { .endpoint = tc.endpoint, .region = tc.region,
				     .no_sign_request = true };
	struct source *src = NULL;
	const char *text = tc.source ? tc.source : tc.endpoint;
	if (source_open(text, &so, &src, err, sizeof(err)) != 0) {
		fprintf(stderr, "tilefs: %s\n", err);
		return 2;
	}
	char scheme[8], host[256];
	long port;
	if (split_origin(src->origin, scheme, host, sizeof(host), &port) != 0) {
		fprintf(stderr, "tilefs: cannot tell the store's host from '%s'\n", src->display);
		source_free(src);
		return 2;
	}
	source_free(src);
	print_config(stdout, &tc, scheme, host, port);
	return fflush(stdout) == 0 ? 0 : 1;
}
