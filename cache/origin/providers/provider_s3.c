/*
 * provider_s3.c - Amazon S3 and S3-compatible servers: s3://BUCKET/PREFIX.
 *
 * Addressing: virtual-hosted (https://BUCKET.s3.REGION.amazonaws.com/KEY)
 * by default; path-style (ENDPOINT/BUCKET/KEY) with --endpoint unless
 * --virtual-hosted. Requests are signed with Signature V4.
 *
 * Credentials, in this order: --no-sign-request (anonymous); the
 * environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN);
 * the profile AWS_PROFILE (or "default") in AWS_SHARED_CREDENTIALS_FILE
 * (~/.aws/credentials) or AWS_CONFIG_FILE (~/.aws/config); the instance
 * metadata service (IMDSv2, asked with http_fetch_once(): no curl handle
 * of its own) unless AWS_EC2_METADATA_DISABLED=true. Role
 * credentials are refreshed before they expire, on the fetch thread (the
 * only thread that signs once the source is open).
 */
#include "cache/origin/providers/provider_int.h"
#include "cache/origin/providers/bucket.h"
#include "cache/base/log.h"
#include "cache/origin/sigv4.h"
#include "cache/origin/url.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct s3_source {
	struct source base;
	char *bucket;
	char *prefix;		/* "" or "a/b/" */
	char *base_url;		/* scheme://host[:port][/bucket], no trailing '/' */
	char *host;		/* host[:port], as signed */
	char region[64];
	bool anonymous, requester_pays;
	long page_size;
	/* credentials: set at open, refreshed by the fetch thread only */
	char access_key[128], secret_key[128], session_token[2048];
	time_t expires;		/* 0: do not expire */
	bool from_imds;
	char role[256];		/* from_imds: the role behind the keys */
	char credentials_from[160];
};

/* ---- credentials ---- */

/* KEY in [SECTION] of the INI file PATH into out; 0, or -ENOENT. */
static int ini_get(const char *path, const char *section, const char *key, char *out,
		   size_t size)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	bool in_section = false;
	int err = -ENOENT;

	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char *s = line;
		while (isspace((unsigned char)*s))
			s++;
		char *end = s + strlen(s);
		while (end > s && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (*s == '[') {
			char *close = strchr(s, ']');
			if (close)
				*close = '\0';
			char *name = s + 1;
			while (isspace((unsigned char)*name))
				name++;
			in_section = strcmp(name, section) == 0;
			continue;
		}
		if (!in_section || *s == '#' || *s == ';')
			continue;
		char *eq = strchr(s, '=');
		if (!eq)
			continue;
		char *k_end = eq;
		while (k_end > s && isspace((unsigned char)k_end[-1]))
			k_end--;
		if ((size_t)(k_end - s) != strlen(key) || strncmp(s, key, strlen(key)) != 0)
			continue;
		char *v = eq + 1;
		while (isspace((unsigned char)*v))
			v++;
		snprintf(out, size, "%s", v);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

static void aws_file(const char *env, const char *name, char *out, size_t size)
{
	const char *set = getenv(env), *home = getenv("HOME");
	if (set && *set)
		snprintf(out, size, "%s", set);
	else
		snprintf(out, size, "%s/.aws/%s", home ? home : "", name);
}

/* Credentials of PROFILE from the shared files; region too if given there. */
static int from_profile(struct s3_source *s, const char *profile, bool *region_found)
{
	char creds[2048], config[2048], section[256];
	aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials", creds, sizeof(creds));
	aws_file("AWS_CONFIG_FILE", "config", config, sizeof(config));
	snprintf(section, sizeof(section), strcmp(profile, "default") ? "profile %s" : "%s", profile);

	*region_found = ini_get(config, section, "region", s->region, sizeof(s->region)) == 0;
	const char *file = creds, *sect = profile;
	if (ini_get(creds, profile, "aws_access_key_id", s->access_key, sizeof(s->access_key))) {
		file = config;
		sect = section;
		if (ini_get(config, section, "aws_access_key_id", s->access_key,
			    sizeof(s->access_key)))
			return -ENOENT;
	}
	if (ini_get(file, sect, "aws_secret_access_key", s->secret_key, sizeof(s->secret_key)))
		return -EINVAL;
	ini_get(file, sect, "aws_session_token", s->session_token, sizeof(s->session_token));
	snprintf(s->credentials_from, sizeof(s->credentials_from), "profile %s in %s", profile,
		 file == creds ? "AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials)" :
				 "AWS_CONFIG_FILE (~/.aws/config)");
	return 0;
}

/* What the metadata service answers: its bodies are small. */
struct imds_body {
	char text[8192];
	size_t len;
};

/* The one header an IMDSv2 request adds (see imds_call). */
static int imds_header(void *line, const struct http_attempt *a, struct curl_slist **headers)
{
	struct curl_slist *grown = curl_slist_append(*headers, line);
	if (!grown)
		return -ENOMEM;
	*headers = grown;
	return 0;
}

/*
 * One request to the metadata service, through http_fetch_once(): a PUT
 * for a session token, or a GET with TOKEN; one attempt, 1 s to connect,
 * 3 s in all. 0 and the body (NUL-terminated) when it answers 200, else
 * -errno.
 */
static int imds_call(const char *url, const char *token, bool put, struct imds_body *out)
{
	struct http_config cfg;
	char line[256];
	struct http_request req = { .url = url, .log_name = "the instance metadata service",
				    .method = put ? "PUT" : NULL, .sign = imds_header,
				    .signer = line };
	int err;

	out->len = 0;
	out->text[0] = '\0';
	http_config_defaults(&cfg);
	cfg.retries = 0;
	cfg.connect_timeout_s = 1;
	cfg.stall_timeout_s = 3;
	cfg.total_timeout_ms = 3000;
	cfg.max_body = sizeof(out->text) - 1;
	if (put)
		snprintf(line, sizeof(line), "X-aws-ec2-metadata-token-ttl-seconds: 21600");
	else
		snprintf(line, sizeof(line), "X-aws-ec2-metadata-token: %s", token);
	err = http_fetch_once(&cfg, &req);
	if (!err && req.status != 200)
		err = -EACCES;
	if (!err && req.body_len >= sizeof(out->text))
		err = -EIO;	/* http.c holds it to cfg.max_body: never */
	if (!err && req.body_len > 0) {
		memcpy(out->text, req.body, req.body_len);
		out->len = req.body_len;
		out->text[out->len] = '\0';
	}
	if (req.body) {
		memset(req.body, 0, req.body_len);
		free(req.body);
	}
	memset(line, 0, sizeof(line));
	return err;
}

/*
 * The string value of "key" in a flat JSON object, into out: false when it
 * is absent, too long, or not a plain string. A value with a control
 * character (which JSON would have escaped) is refused: it would end up in
 * a header line.
 */
static bool json_string(const char *json, const char *key, char *out, size_t size)
{
	char pattern[64];
	snprintf(pattern, sizeof(pattern), "\"%s\"", key);
	for (const char *p = strstr(json, pattern); p; p = strstr(p + 1, pattern)) {
		const char *v = p + strlen(pattern);
		v += strspn(v, " \t\r\n");
		if (*v != ':')
			continue;	/* a value that reads like the key */
		v += 1 + strspn(v + 1, " \t\r\n");
		size_t n = *v == '"' ? strcspn(v + 1, "\"") : 0;
		if (*v != '"' || v[1 + n] != '"' || n >= size)
			return false;
		for (size_t i = 1; i <= n; i++)
			if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
				return false;
		memcpy(out, v + 1, n);
		out[n] = '\0';
		return true;
	}
	return false;
}

/* The length of the first line of TEXT: up to its first control character
 * (a token goes into a header line, a role's name into messages). */
static int first_line(const char *text)
{
	int n = 0;
	while (text[n] && (unsigned char)text[n] >= 0x20 && text[n] != 0x7f)
		n++;
	return n;
}

/* Role credentials from the instance metadata service (IMDSv2). */
static int from_imds(struct s3_source *s)
{
	const char *base = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	char url[512], token[256], role[256], expiration[64];
	struct imds_body *b = malloc(sizeof(*b));
	int err;

	if (!b)
		return -ENOMEM;
	if (!base || !*base)
		base = "http://169.254.169.254";
	snprintf(url, sizeof(url), "%s/latest/api/token", base);
	err = imds_call(url, NULL, true, b);
	if (err)
		goto out;
	snprintf(token, sizeof(token), "%.*s", first_line(b->text), b->text);
	snprintf(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/", base);
	err = imds_call(url, token, false, b);
	if (err)
		goto out;
	snprintf(role, sizeof(role), "%.*s", first_line(b->text), b->text);
	snprintf(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/%s", base, role);
	err = imds_call(url, token, false, b);
	if (err)
		goto out;
	if (!json_string(b->text, "AccessKeyId", s->access_key, sizeof(s->access_key)) ||
	    !json_string(b->text, "SecretAccessKey", s->secret_key, sizeof(s->secret_key)) ||
	    !json_string(b->text, "Token", s->session_token, sizeof(s->session_token))) {
		err = -EIO;
		goto out;
	}
	struct tm tm = { 0 };
	if (json_string(b->text, "Expiration", expiration, sizeof(expiration)) &&
	    strptime(expiration, "%Y-%m-%dT%H:%M:%SZ", &tm))
		s->expires = timegm(&tm);
	s->from_imds = true;
	memcpy(s->role, role, sizeof(s->role));
	snprintf(s->credentials_from, sizeof(s->credentials_from),
		 "the instance metadata service (role %.60s)", role);
out:
	memset(b, 0, sizeof(*b));
	free(b);
	return err;
}

static int find_credentials(struct s3_source *s, bool no_sign, bool *region_found,
			    char *err, size_t err_size)
{
	const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
	const char *profile = getenv("AWS_PROFILE");

	*region_found = false;
	if (no_sign) {
		s->anonymous = true;
		return 0;
	}
	if ((ak && *ak) || (sk && *sk)) {
		if (!ak || !*ak || !sk || !*sk) {
			snprintf(err, err_size, "%s is set but %s is not: set both, or neither",
				 ak && *ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
				 ak && *ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
			return -EACCES;
		}
		const char *token = getenv("AWS_SESSION_TOKEN");
		snprintf(s->access_key, sizeof(s->access_key), "%s", ak);
		snprintf(s->secret_key, sizeof(s->secret_key), "%s", sk);
		snprintf(s->session_token, sizeof(s->session_token), "%s", token ? token : "");
		snprintf(s->credentials_from, sizeof(s->credentials_from),
			 "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY%s", token ? "/AWS_SESSION_TOKEN" : "");
		return 0;
	}
	int rc = from_profile(s, profile && *profile ? profile : "default", region_found);
	if (rc == 0)
		return 0;
	if (rc == -EINVAL) {
		snprintf(err, err_size, "profile '%s' has aws_access_key_id but no "
			 "aws_secret_access_key (check ~/.aws/credentials)",
			 profile && *profile ? profile : "default");
		return -EACCES;
	}
	if (profile && *profile) {
		snprintf(err, err_size, "AWS_PROFILE=%s names no profile with credentials in "
			 "~/.aws/credentials or ~/.aws/config", profile);
		return -EACCES;
	}
	const char *disabled = getenv("AWS_EC2_METADATA_DISABLED");
	if (!(disabled && strcasecmp(disabled, "true") == 0) && from_imds(s) == 0)
		return 0;
	snprintf(err, err_size, "no AWS credentials: set AWS_ACCESS_KEY_ID and "
		 "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with ~/.aws/credentials, run where the "
		 "instance metadata service gives a role, or use --no-sign-request for a "
		 "public bucket");
	return -EACCES;
}

/* ---- the provider ---- */

static bool s3_matches(const char *text)
{
	return strncasecmp(text, "s3://", 5) == 0;
}

static void s3_free(struct source *src)
{
	struct s3_source *s = (struct s3_source *)src;
	free(s->bucket);
	free(s->prefix);
	free(s->base_url);
	free(s->host);
	free(s->base.display);
	memset(s->secret_key, 0, sizeof(s->secret_key));
	memset(s->session_token, 0, sizeof(s->session_token));
	free(s);
}

static int s3_open(const char *text, const struct source_options *opts, struct source **out,
		   char *err, size_t err_size)
{
	struct s3_source *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base.provider = &provider_s3;
	s->requester_pays = opts->requester_pays;
	s->page_size = opts->page_size;

	int rc = bucket_parse(text, 5, &s->bucket, &s->prefix, err, err_size);
	if (rc) {
		s3_free(&s->base);
		return rc;
	}
	s->base.display = strdup(text);
	if (!s->base.display)
		goto nomem;

	bool region_found;
	rc = find_credentials(s, opts->no_sign_request, &region_found, err, err_size);
	if (rc) {
		s3_free(&s->base);
		return rc;
	}
	const char *env_region = getenv("AWS_REGION");
	if (!env_region || !*env_region)
		env_region = getenv("AWS_DEFAULT_REGION");
	if (opts->region)
		snprintf(s->region, sizeof(s->region), "%s", opts->region);
	else if (env_region && *env_region)
		snprintf(s->region, sizeof(s->region), "%s", env_region);
	else if (!region_found)
		snprintf(s->region, sizeof(s->region), "us-east-1");

	char url[1024];
	if (opts->endpoint) {
		CURLU *u = curl_url();
		char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
		if (!u || curl_url_set(u, CURLUPART_URL, opts->endpoint, 0) != CURLUE_OK ||
		    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
			curl_url_cleanup(u);
			snprintf(err, err_size, "--endpoint '%s' is not a URL", opts->endpoint);
			s3_free(&s->base);
			return -EINVAL;
		}
		curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
		curl_url_get(u, CURLUPART_PORT, &port, 0);
		curl_url_get(u, CURLUPART_PATH, &path, 0);
		char hostport[512];
		snprintf(hostport, sizeof(hostport), "%s%s%s%s%s", opts->virtual_hosted ? s->bucket : "",
			 opts->virtual_hosted ? "." : "", host, port ? ":" : "", port ? port : "");
		size_t pl = path ? strlen(path) : 0;
		while (pl > 0 && path[pl - 1] == '/')
			pl--;
		snprintf(url, sizeof(url), "%s://%s%.*s%s%s", scheme, hostport, (int)pl,
			 path ? path : "", opts->virtual_hosted ? "" : "/",
			 opts->virtual_hosted ? "" : s->bucket);
		s->host = strdup(hostport);
		curl_free(scheme);
		curl_free(host);
		curl_free(port);
		curl_free(path);
		curl_url_cleanup(u);
	} else {
		snprintf(url, sizeof(url), "https://%s.s3.%s.amazonaws.com", s->bucket, s->region);
		s->host = strdup(url + 8);
	}
	s->base_url = strdup(url);
	if (!s->base_url || !s->host)
		goto nomem;
	s->base.credentials = s->anonymous ? "" : s->credentials_from;
	*out = &s->base;
	return 0;
nomem:
	s3_free(&s->base);
	return -ENOMEM;
}

static char *s3_object_url(struct source *src, const char *path)
{
	struct s3_source *s = (struct s3_source *)src;
	return bucket_object_url(s->base_url, s->prefix, path);
}

static char *s3_listing_url(struct source *src, const char *dir, const char *cursor)
{
	struct s3_source *s = (struct s3_source *)src;
	char prefix[4096], base[1100];
	bucket_dir_prefix(s->prefix, dir, prefix, sizeof(prefix));
	/* virtual-hosted URLs have no path yet: the listing is of "/" */
	size_t host_len;
	bool bare = url_host(s->base_url, &host_len)[host_len] != '/';
	snprintf(base, sizeof(base), "%s%s", s->base_url, bare ? "/" : "");
	return bucket_listing_url(base, "list-type=2&delimiter=%2F&encoding-type=url", prefix,
				  "max-keys", s->page_size, "continuation-token", cursor);
}

static int s3_parse_listing(struct source *src, const char *dir, const char *body, size_t len,
			    listing_entry_fn add, void *arg, char **next_cursor)
{
	struct s3_source *s = (struct s3_source *)src;
	char prefix[4096];
	bucket_dir_prefix(s->prefix, dir, prefix, sizeof(prefix));
	return bucket_listing_parse(prefix, body, len, add, arg, next_cursor);
}

static int s3_sign(void *signer, const struct http_attempt *a, struct curl_slist **headers)
{
	struct s3_source *s = signer;
	static const struct sigv4_header payer = { "x-amz-request-payer", "requester" };

	if (s->anonymous)
		return 0;
	time_t now = time(NULL);
	if (s->from_imds && s->expires && s->expires - now < 300) {
		if (from_imds(s) != 0)
			log_error("s3: cannot refresh the role credentials from the instance "
				  "metadata service; requests will fail once they expire");
	} else if (s->expires && now >= s->expires) {
		log_error("s3: the credentials from %s have expired", s->credentials_from);
	}
	struct sigv4_credentials cred = { s->access_key, s->secret_key,
					  s->session_token[0] ? s->session_token : NULL };
	return bucket_sign(&sigv4_aws, &cred, s->host, s->region, "s3", a, &payer,
			   s->requester_pays ? 1 : 0, headers);
}

/* See source_identity_hash(): the role, whose keys rotate, or the key id. */
static void s3_identity(struct source *src, char *out, size_t size)
{
	struct s3_source *s = (struct s3_source *)src;
	if (s->anonymous)
		snprintf(out, size, "anonymous");
	else if (s->from_imds)
		snprintf(out, size, "s3 role %s", s->role);
	else
		snprintf(out, size, "s3 key %s", s->access_key);
}

const struct provider provider_s3 = {
	.name = "s3",
	.matches = s3_matches,
	.open = s3_open,
	.free = s3_free,
	.object_url = s3_object_url,
	.listing_url = s3_listing_url,
	.parse_listing = s3_parse_listing,
	.sign = s3_sign,
	.describe_error = provider_xml_error,
	.identity = s3_identity,
};
