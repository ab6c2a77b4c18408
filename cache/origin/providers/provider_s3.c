/*
 * provider_s3.c - Amazon S3 and S3-compatible servers: s3://BUCKET/PREFIX.
 *
 * Addressing: virtual-hosted (https://BUCKET.s3.REGION.amazonaws.com/KEY)
 * by default; path-style (ENDPOINT/BUCKET/KEY) with --endpoint unless
 * --virtual-hosted. Requests are signed with Signature V4.
 *
 * Credentials, in the SDKs' order (docs/CONFIGURATION.md): --no-sign-request
 * (anonymous); AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
 * web identity from AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN; the
 * profile AWS_PROFILE (or "default"; --profile NAME: that one, and the
 * environment's keys and web identity unread) in AWS_SHARED_CREDENTIALS_FILE
 * (~/.aws/credentials) or AWS_CONFIG_FILE (~/.aws/config): its role_arn
 * (with web_identity_token_file, or with source_profile or
 * credential_source: AssumeRole signed by that source's keys), else its
 * SSO sign-in (sso_session or a legacy SSO profile), else its keys, else
 * its credential_process; a container credentials endpoint; the instance
 * metadata service (IMDSv2) unless AWS_EC2_METADATA_DISABLED=true. All
 * but keys are short-lived (aws_creds.c, aws_sts.c, aws_process.c,
 * aws_sso.c; the shared files: aws_config.c) and
 * renewed before they expire by renewal.h, as the other clouds'
 * tokens are: S3 signs with a copy of the keys taken under its lock, and
 * says which keys signed (http_attempt.credential).
 */
#include "cache/origin/providers/provider_int.h"
#include "cache/origin/providers/aws_config.h"
#include "cache/origin/providers/aws_creds.h"
#include "cache/origin/providers/aws_process.h"
#include "cache/origin/providers/aws_sso.h"
#include "cache/origin/providers/aws_sts.h"
#include "cache/origin/providers/renewal.h"
#include "cache/origin/providers/bucket.h"
#include "cache/base/log.h"
#include "cache/origin/sigv4.h"
#include "cache/origin/url.h"
#include "cache/origin/xml.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
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
	bool endpoint;		/* --endpoint: host names no region */
	pthread_mutex_t region_lock;	/* a leaf */
	char region[64];		/* protected by region_lock: signs */
	bool anonymous, requester_pays;
	long page_size;
	/* credentials: keys that never change, or a renewal of short-lived ones */
	struct aws_keys keys;		/* static keys (not renewable) */
	bool renewable;			/* renewal holds the keys instead */
	struct renewal renewal;		/* of struct aws_keys, from fetch(fetch_ctx) */
	aws_fetch_fn fetch;
	const void *fetch_ctx;		/* web, process or role below, or NULL */
	struct aws_web_identity web;	/* fetch_ctx of a web identity */
	struct aws_process process;	/* fetch_ctx of a credential_process */
	struct aws_assume_role role;	/* fetch_ctx of a role to assume */
	struct aws_sso sso;		/* fetch_ctx of an SSO profile, or a
					   role's source_ctx */
	char credentials_from[160];
};

/* ---- credentials ---- */

/* The credential_process of PROFILE (its section SECTION in CONFIG, or
 * [PROFILE] in CREDS) into s->process: 2, or -ENOENT. */
static int profile_process(struct s3_source *s, const char *profile, const char *creds,
			   const char *config, const char *section)
{
	struct aws_process *p = &s->process;

	if (aws_config_get(creds, profile, "credential_process", p->command, sizeof(p->command)) &&
	    aws_config_get(config, section, "credential_process", p->command, sizeof(p->command)))
		return -ENOENT;
	snprintf(p->profile, sizeof(p->profile), "%s", profile);
	return 2;
}

/* The static keys of PROFILE ([PROFILE] in CREDS, else SECTION in CONFIG)
 * into K; *in names the file they came from. 0, -ENOENT (none) or -EINVAL
 * (a key id without its secret). */
static int profile_keys(const char *creds, const char *config, const char *profile,
			const char *section, struct aws_keys *k, const char **in)
{
	const char *file = creds, *sect = profile;

	if (aws_config_get(creds, profile, "aws_access_key_id", k->access_key,
			   sizeof(k->access_key))) {
		file = config;
		sect = section;
		if (aws_config_get(config, section, "aws_access_key_id", k->access_key,
				   sizeof(k->access_key)))
			return -ENOENT;
	}
	if (aws_config_get(file, sect, "aws_secret_access_key", k->secret_key,
			   sizeof(k->secret_key)))
		return -EINVAL;
	aws_config_get(file, sect, "aws_session_token", k->session_token, sizeof(k->session_token));
	*in = file == creds ? "AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials)" :
			      "AWS_CONFIG_FILE (~/.aws/config)";
	return 0;
}

/*
 * Where the keys of the role PROFILE assumes (its SECTION in CONFIG) come
 * from, into s->role: its credential_source (Environment,
 * Ec2InstanceMetadata, EcsContainer), or its source_profile, which signs in
 * with SSO (s->sso), has keys, or a credential_process (s->process), as
 * botocore reads them (a chain of roles is not followed). 0, or -EINVAL
 * with why in ERR.
 */
static int role_source(struct s3_source *s, const char *profile, const char *creds,
		       const char *config, const char *section, char *err, size_t err_size)
{
	struct aws_assume_role *r = &s->role;
	char source[128], credential_source[64], source_section[256];
	bool has_profile = aws_config_get(config, section, "source_profile", source,
					  sizeof(source)) == 0 && source[0];
	bool has_credential = aws_config_get(config, section, "credential_source",
					     credential_source, sizeof(credential_source)) == 0 &&
			      credential_source[0];
	const char *in;

	if (has_profile == has_credential) {
		snprintf(err, err_size, "profile '%s' sets role_arn with %s: set one of them",
			 profile, has_profile ? "both source_profile and credential_source" :
			 "neither source_profile nor credential_source (nor web_identity_token_file)");
		return -EINVAL;
	}
	if (has_credential) {
		snprintf(r->source_name, sizeof(r->source_name), "credential_source %s",
			 credential_source);
		if (strcmp(credential_source, "Ec2InstanceMetadata") == 0) {
			r->source_fetch = aws_imds_fetch;
			return 0;
		}
		if (strcmp(credential_source, "EcsContainer") == 0) {
			int rc = aws_container_configured(err, err_size);
			if (rc == 0)
				snprintf(err, err_size, "profile '%s' has credential_source "
					 "EcsContainer, but neither AWS_CONTAINER_CREDENTIALS_"
					 "RELATIVE_URI nor _FULL_URI is set", profile);
			r->source_fetch = aws_container_fetch;
			return rc == 1 ? 0 : -EINVAL;
		}
		const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
		const char *token = getenv("AWS_SESSION_TOKEN");
		if (strcmp(credential_source, "Environment") != 0) {
			snprintf(err, err_size, "profile '%s' has credential_source %.40s: it must be "
				 "Environment, Ec2InstanceMetadata or EcsContainer", profile,
				 credential_source);
			return -EINVAL;
		}
		if (!ak || !*ak || !sk || !*sk) {
			snprintf(err, err_size, "profile '%s' has credential_source Environment, "
				 "but AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set",
				 profile);
			return -EINVAL;
		}
		snprintf(r->source.access_key, sizeof(r->source.access_key), "%s", ak);
		snprintf(r->source.secret_key, sizeof(r->source.secret_key), "%s", sk);
		snprintf(r->source.session_token, sizeof(r->source.session_token), "%s",
			 token ? token : "");
		return 0;
	}
	snprintf(r->source_name, sizeof(r->source_name), "source_profile %s", source);
	aws_config_section(source, source_section, sizeof(source_section));
	int rc = aws_sso_from_profile(&s->sso, config, source, source_section, err, err_size);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		r->source_fetch = aws_sso_fetch;
		r->source_ctx = &s->sso;
		return 0;
	}
	if (profile_keys(creds, config, source, source_section, &r->source, &in) == 0)
		return 0;
	if (profile_process(s, source, creds, config, source_section) == 2) {
		r->source_fetch = aws_process_fetch;
		r->source_ctx = &s->process;
		return 0;
	}
	snprintf(err, err_size, "profile '%s' assumes its role with source_profile '%s', which "
		 "has no SSO sign-in, aws_access_key_id and aws_secret_access_key, or "
		 "credential_process (a chain of roles is not followed)", profile, source);
	return -EINVAL;
}

/*
 * Credentials of PROFILE from the shared files; region too if given there.
 * In the SDKs' order: its role_arn (with web_identity_token_file, or with
 * source_profile or credential_source), its SSO sign-in, its keys, its
 * credential_process. 0 (keys), 1 (a web identity role: s->web), 2 (a
 * credential_process: s->process), 3 (a role to assume: s->role), 4 (SSO:
 * s->sso), -ENOENT, or -EINVAL with why in ERR.
 */
static int from_profile(struct s3_source *s, const char *profile, bool *region_found,
			char *err, size_t err_size)
{
	char creds[2048], config[2048], section[256], role_arn[256];
	const char *in;
	aws_config_path("AWS_SHARED_CREDENTIALS_FILE", "credentials", creds, sizeof(creds));
	aws_config_path("AWS_CONFIG_FILE", "config", config, sizeof(config));
	aws_config_section(profile, section, sizeof(section));

	*region_found = aws_config_get(config, section, "region", s->region,
				       sizeof(s->region)) == 0;
	if (aws_config_get(config, section, "role_arn", role_arn, sizeof(role_arn)) == 0) {
		struct aws_web_identity *w = &s->web;
		struct aws_assume_role *r = &s->role;
		if (aws_config_get(config, section, "web_identity_token_file", w->token_file,
				   sizeof(w->token_file)) == 0) {
			snprintf(w->role_arn, sizeof(w->role_arn), "%s", role_arn);
			aws_config_get(config, section, "role_session_name", w->session_name,
				       sizeof(w->session_name));
			snprintf(w->set_by, sizeof(w->set_by), "profile %.100s", profile);
			return 1;
		}
		if (role_source(s, profile, creds, config, section, err, err_size))
			return -EINVAL;
		snprintf(r->role_arn, sizeof(r->role_arn), "%s", role_arn);
		aws_config_get(config, section, "role_session_name", r->session_name,
			       sizeof(r->session_name));
		aws_config_get(config, section, "external_id", r->external_id,
			       sizeof(r->external_id));
		snprintf(r->profile, sizeof(r->profile), "%s", profile);
		return 3;
	}
	int rc = aws_sso_from_profile(&s->sso, config, profile, section, err, err_size);
	if (rc)
		return rc > 0 ? 4 : -EINVAL;
	rc = profile_keys(creds, config, profile, section, &s->keys, &in);
	if (rc == -ENOENT)
		return profile_process(s, profile, creds, config, section);
	if (rc == -EINVAL) {
		snprintf(err, err_size, "profile '%s' has aws_access_key_id but no "
			 "aws_secret_access_key (check ~/.aws/credentials)", profile);
		return -EINVAL;
	}
	snprintf(s->credentials_from, sizeof(s->credentials_from), "profile %s in %s", profile, in);
	return 0;
}

/* A renewal_fetch_fn for the renewal: the source's aws_fetch_fn into OUT
 * (a struct aws_keys), with their expiry. */
static int fetch_keys(void *arg, void *out, time_t *expires, char *from, size_t from_size)
{
	struct s3_source *s = arg;
	struct aws_keys *keys = out;
	int err = s->fetch(s->fetch_ctx, keys, from, from_size);

	*expires = err ? 0 : keys->expires;
	return err;
}

/*
 * Start the short-lived source FETCH (settings CTX, owned by s): it must
 * answer now, as a mount never starts without credentials. WHAT names it
 * in the message when it does not.
 */
static int start_renewable(struct s3_source *s, aws_fetch_fn fetch, const void *ctx,
			   const char *what, char *err, size_t err_size)
{
	int rc;

	s->fetch = fetch;
	s->fetch_ctx = ctx;
	rc = renewal_init(&s->renewal, "s3", sizeof(struct aws_keys), fetch_keys, s, time(NULL));
	if (rc) {
		snprintf(err, err_size, "no AWS credentials from %s: %s", what,
			 strerror(-rc));
		return -EACCES;
	}
	s->renewable = true;
	snprintf(s->credentials_from, sizeof(s->credentials_from), "%s", s->renewal.from);
	return 0;
}

/*
 * The renewable sources after the environment and the profile, in the
 * SDKs' order: a container credentials endpoint, then the instance
 * metadata service. The first that is configured is the mount's.
 */
static int from_renewable(struct s3_source *s, char *err, size_t err_size)
{
	const char *disabled = getenv("AWS_EC2_METADATA_DISABLED");
	int rc = aws_container_configured(err, err_size);

	if (rc < 0)
		return -EACCES;
	if (rc > 0)
		return start_renewable(s, aws_container_fetch, NULL,
				       "the container credentials endpoint "
				       "(AWS_CONTAINER_CREDENTIALS_*_URI)", err, err_size);
	if (!(disabled && strcasecmp(disabled, "true") == 0) &&
	    start_renewable(s, aws_imds_fetch, NULL, "the instance metadata service", err,
			    err_size) == 0)
		return 0;
	snprintf(err, err_size, "no AWS credentials; tried, in order: AWS_ACCESS_KEY_ID "
		 "and AWS_SECRET_ACCESS_KEY, AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, "
		 "the profile default in ~/.aws/credentials and ~/.aws/config (AWS_PROFILE), "
		 "a container credentials endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or "
		 "_FULL_URI), the instance metadata service%s; set one of them, or use "
		 "--no-sign-request for a public bucket",
		 disabled && strcasecmp(disabled, "true") == 0 ?
		 " (off: AWS_EC2_METADATA_DISABLED=true)" : "");
	return -EACCES;
}

/* NAMED: the profile --profile names, or NULL; as the AWS CLI's, it is
 * used whatever keys or web identity the environment has. */
static int find_credentials(struct s3_source *s, bool no_sign, const char *named,
			    bool *region_found, char *err, size_t err_size)
{
	const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
	const char *profile = named ? named : getenv("AWS_PROFILE");

	*region_found = false;
	if (no_sign) {
		s->anonymous = true;
		return 0;
	}
	if (!named && ((ak && *ak) || (sk && *sk))) {
		if (!ak || !*ak || !sk || !*sk) {
			snprintf(err, err_size, "%s is set but %s is not: set both, or neither",
				 ak && *ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
				 ak && *ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
			return -EACCES;
		}
		const char *token = getenv("AWS_SESSION_TOKEN");
		struct aws_keys *k = &s->keys;
		snprintf(k->access_key, sizeof(k->access_key), "%s", ak);
		snprintf(k->secret_key, sizeof(k->secret_key), "%s", sk);
		snprintf(k->session_token, sizeof(k->session_token), "%s", token ? token : "");
		snprintf(s->credentials_from, sizeof(s->credentials_from),
			 "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY%s", token ? "/AWS_SESSION_TOKEN" : "");
		return 0;
	}
	int rc = named ? 0 : aws_web_identity_from_env(&s->web, err, err_size);
	if (rc < 0)
		return -EACCES;
	if (rc > 0)
		return start_renewable(s, aws_web_identity_fetch, &s->web,
				       "STS for AWS_WEB_IDENTITY_TOKEN_FILE", err, err_size);
	rc = from_profile(s, profile && *profile ? profile : "default", region_found, err,
			  err_size);
	if (rc == 0)
		return 0;
	if (rc == 3)
		return start_renewable(s, aws_assume_role_fetch, &s->role,
				       "STS AssumeRole for the profile's role_arn", err, err_size);
	if (rc == 4)
		return start_renewable(s, aws_sso_fetch, &s->sso,
				       "the SSO portal for the profile's SSO sign-in", err,
				       err_size);
	if (rc == 1)
		return start_renewable(s, aws_web_identity_fetch, &s->web,
				       "STS for the profile's web_identity_token_file", err,
				       err_size);
	if (rc == 2)
		return start_renewable(s, aws_process_fetch, &s->process,
				       "the profile's credential_process", err, err_size);
	if (rc == -EINVAL)
		return -EACCES;
	if (profile && *profile) {
		snprintf(err, err_size, "%s%s names no profile with credentials in "
			 "~/.aws/credentials or ~/.aws/config", named ? "--profile " : "AWS_PROFILE=",
			 profile);
		return -EACCES;
	}
	return from_renewable(s, err, err_size);
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
	pthread_mutex_destroy(&s->region_lock);
	if (s->renewable)
		renewal_release(&s->renewal);
	explicit_bzero(&s->keys, sizeof(s->keys));
	explicit_bzero(&s->role, sizeof(s->role));
	free(s);
}

static int s3_open(const char *text, const struct source_options *opts, struct source **out,
		   char *err, size_t err_size)
{
	struct s3_source *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->region_lock, NULL);
	s->endpoint = opts->endpoint != NULL;
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
	rc = find_credentials(s, opts->no_sign_request, opts->profile, &region_found, err,
			      err_size);
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

/* ListObjectsV2 of DIR's keys: with DEEP, all below it, else one level. */
static char *listing_url(struct source *src, const char *dir, const char *names,
			 const char *cursor, bool deep)
{
	struct s3_source *s = (struct s3_source *)src;
	char prefix[4096], base[1100];
	if (!bucket_dir_prefix(s->prefix, dir, names, prefix, sizeof(prefix)))
		return NULL;
	/* virtual-hosted URLs have no path yet: the listing is of "/" */
	size_t host_len;
	bool bare = url_host(s->base_url, &host_len)[host_len] != '/';
	snprintf(base, sizeof(base), "%s%s", s->base_url, bare ? "/" : "");
	return bucket_listing_url(base, deep ? "list-type=2&encoding-type=url" :
						"list-type=2&delimiter=%2F&encoding-type=url",
				  prefix, "max-keys", s->page_size, "continuation-token", cursor);
}

static char *s3_listing_url(struct source *src, const char *dir, const char *cursor)
{
	return listing_url(src, dir, "", cursor, false);
}

static char *s3_deep_listing_url(struct source *src, const char *dir, const char *names,
				 const char *cursor)
{
	return listing_url(src, dir, names, cursor, true);
}

static int s3_parse_listing(struct source *src, const char *dir, const char *body, size_t len,
			    listing_entry_fn add, void *arg, char **next_cursor)
{
	struct s3_source *s = (struct s3_source *)src;
	char prefix[4096];
	bucket_dir_prefix(s->prefix, dir, "", prefix, sizeof(prefix));
	return bucket_listing_parse(prefix, body, len, add, arg, next_cursor);
}

static int s3_parse_deep_listing(struct source *src, const char *dir, const char *body,
				 size_t len, listing_entry_fn add, void *arg, char **next_cursor)
{
	struct s3_source *s = (struct s3_source *)src;
	char prefix[4096];
	bucket_dir_prefix(s->prefix, dir, "", prefix, sizeof(prefix));
	return bucket_deep_listing_parse(prefix, body, len, add, arg, next_cursor);
}

static int s3_sign(void *signer, const struct http_attempt *a, struct curl_slist **headers)
{
	struct s3_source *s = signer;
	static const struct sigv4_header payer = { "x-amz-request-payer", "requester" };

	struct aws_keys *keys = &s->keys;
	int err;

	if (s->anonymous)
		return 0;
	if (s->renewable) {
		/* a copy taken under the renewal's lock (one due is renewed in
		   the background), and which keys they are: a proof names
		   whom they belong to (http_attempt.credential) */
		keys = malloc(sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		err = renewal_get_serial(&s->renewal, time(NULL), keys, a->credential);
		if (err)
			goto wipe_keys;
	}
	struct sigv4_credentials cred = { keys->access_key, keys->secret_key,
					  keys->session_token[0] ? keys->session_token : NULL };
	char region[sizeof(s->region)];
	pthread_mutex_lock(&s->region_lock);
	memcpy(region, s->region, sizeof(region));
	pthread_mutex_unlock(&s->region_lock);
	err = bucket_sign(&sigv4_aws, &cred, s->host, region, "s3", a, &payer,
			  s->requester_pays ? 1 : 0, headers);
wipe_keys:
	if (keys != &s->keys) {
		explicit_bzero(keys, sizeof(*keys));
		free(keys);
	}
	return err;
}

/* See source_identity_hash(): the principal the keys in use belong to, as
 * their source names it (a role's ARN, the instance's role), whose keys
 * rotate; else the access key id in use (a new key proves again). */
static int s3_identity(struct source *src, char *out, size_t size)
{
	struct s3_source *s = (struct s3_source *)src;
	struct aws_keys *keys = &s->keys;

	if (s->anonymous) {
		snprintf(out, size, "anonymous");
		return 0;
	}
	if (s->renewable) {
		keys = malloc(sizeof(*keys));
		if (!keys)
			return -EACCES;
		if (renewal_get(&s->renewal, time(NULL), keys) != 0) {
			free(keys);
			return -EACCES;
		}
	}
	if (keys->principal[0])
		snprintf(out, size, "s3 principal %s", keys->principal);
	else
		snprintf(out, size, "s3 key %s", keys->access_key);
	if (keys != &s->keys) {
		explicit_bzero(keys, sizeof(*keys));
		free(keys);
	}
	return 0;
}

/* The region an S3 error BODY says the bucket is in, into REGION: its
 * <Region> (400 AuthorizationHeaderMalformed: "expecting 'eu-west-1'"), or
 * the region in its <Endpoint> (301 PermanentRedirect:
 * bucket.s3.eu-west-1.amazonaws.com). False if it names none. */
static bool error_region(const char *body, size_t len, char *region, size_t size)
{
	struct xml_span doc = { body, len };
	char endpoint[256];
	const char *at = NULL;
	if (xml_text(doc, "Region", region, size)) {
		at = region;
	} else if (xml_text(doc, "Endpoint", endpoint, sizeof(endpoint))) {
		char *s3 = strstr(endpoint, "s3.");
		char *end = s3 ? strstr(s3 + 3, ".amazonaws.com") : NULL;
		if (!s3)
			s3 = strstr(endpoint, "s3-");
		if (s3 && !end)
			end = strstr(s3 + 3, ".amazonaws.com");
		if (s3 && end && end > s3 + 3 && (size_t)(end - s3 - 3) < size) {
			memcpy(region, s3 + 3, (size_t)(end - s3 - 3));
			region[end - s3 - 3] = '\0';
			at = region;
		}
	}
	if (!at || !*at || strlen(at) >= 32)
		return false;
	for (const char *p = at; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-')
			return false;
	return true;
}

/* An S3 error, as provider_xml_error() tells it, and, when it names the
 * region the bucket is in, what to add to the command line. */
static bool s3_describe_error(const char *body, size_t len, char *reason, size_t size)
{
	char region[32], code[64];
	if (!provider_xml_error(body, len, reason, size))
		return false;
	/* the hint in place of the store's message, which it would not fit
	   beside in http_request.error */
	if (error_region(body, len, region, sizeof(region)) &&
	    xml_text((struct xml_span){ body, len }, "Code", code, sizeof(code)))
		snprintf(reason, size, "%s: the bucket is in %s: add --region %s", code, region,
			 region);
	for (char *p = reason; *p; p++)	/* one printable line, as above */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return true;
}

/*
 * A store at --endpoint that answers 400 naming the region it expects
 * (AuthorizationHeaderMalformed): sign for that region from now on, and
 * send the request again (said once, at warn), as the AWS SDKs do. At
 * AWS's own endpoints the host names the region too, and a 301 sends the
 * request elsewhere: that is told to the user (s3_describe_error()).
 */
static bool follow_region(struct s3_source *s, long status, const char *body, size_t len)
{
	char region[32];
	if (status != 400 || !s->endpoint || !error_region(body, len, region, sizeof(region)))
		return false;
	pthread_mutex_lock(&s->region_lock);
	bool changed = strcmp(s->region, region) != 0;
	char was[sizeof(s->region)];
	memcpy(was, s->region, sizeof(was));
	if (changed)
		snprintf(s->region, sizeof(s->region), "%s", region);
	pthread_mutex_unlock(&s->region_lock);
	if (changed)
		log_warn("s3: the store expects region %s, not %s: signing for %s (--region %s "
			 "says so at start)", region, was, region, region);
	return changed;
}

/* S3 refuses expired or revoked temporary credentials with 400
 * ExpiredToken, InvalidToken or TokenRefreshRequired (403 for some
 * compatible servers): renewed, or refused for good when they cannot be
 * (http_rejected_fn). Its answer to a HEAD has no body to say so: a bare
 * 400 or 403 is taken for an expiry while the keys are due for renewal
 * (a store whose clock is ahead of ours refuses them before we see them
 * expire), and is what it says otherwise. A signature for another region
 * gets 400 naming the region (follow_region()). */
static int s3_credentials_rejected(void *signer, long status, const char *body, size_t len)
{
	struct s3_source *s = signer;
	struct xml_span doc = { body, len };
	char code[64];
	time_t now = time(NULL);

	if (follow_region(s, status, body, len))
		return 1;
	if (status != 400 && status != 403)
		return 0;
	if (xml_text(doc, "Code", code, sizeof(code))) {
		if (strcmp(code, "ExpiredToken") != 0 && strcmp(code, "InvalidToken") != 0 &&
		    strcmp(code, "TokenRefreshRequired") != 0)
			return 0;
	} else if (!s->renewable || !renewal_due(&s->renewal, now)) {
		/* an answer to HEAD names no code: taken as an expiry only
		   while the keys are due, the store's clock may be ahead */
		return 0;
	}
	if (!s->renewable)
		return -EACCES;
	log_warn("s3: the store refused the credentials from %s as expired or revoked; "
		 "renewing them", s->credentials_from);
	/* the refused attempt may have been signed with the keys before
	   these: keys obtained in the last 5 s are sent again, not renewed */
	return renewal_force(&s->renewal, now, now - 5) == 0 ? 1 : -EACCES;
}

static struct renewal *s3_renewal(struct source *src)
{
	struct s3_source *s = (struct s3_source *)src;
	return s->renewable ? &s->renewal : NULL;
}

const struct provider provider_s3 = {
	.name = "s3",
	.matches = s3_matches,
	.open = s3_open,
	.free = s3_free,
	.object_url = s3_object_url,
	.listing_url = s3_listing_url,
	.parse_listing = s3_parse_listing,
	.deep_listing_url = s3_deep_listing_url,
	.parse_deep_listing = s3_parse_deep_listing,
	.sign = s3_sign,
	.describe_error = s3_describe_error,
	.identity = s3_identity,
	.credentials_rejected = s3_credentials_rejected,
	.renewal = s3_renewal,
};
