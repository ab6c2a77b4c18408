/*
 * provider.c - the registry, above every provider: source_open() picks the
 * provider and sets up what every source has (its origin, its tier);
 * source_*() call through its table (provider_int.h). What the providers
 * share lies below them (answer.c, bucket.c).
 */
#include "cache/origin/providers/provider_int.h"
#include "cache/origin/providers/renewal.h"
#include "cache/origin/crypto.h"
#include "cache/origin/tier.h"
#include "cache/origin/url.h"

#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* First match wins: Azure's https://ACCOUNT.blob.core.windows.net goes
 * before plain https. */
static const struct provider *const providers[] = {
	&provider_s3,
	&provider_azure,
	&provider_gcs,
	&provider_http,
};

/*
 * "scheme://host:port" of URL as curl will connect to it (curl's own parser,
 * so "https://bucket.s3.amazonaws.com@evil/" is evil's; the scheme's default
 * port spelled out; lowercase); caller frees. NULL when URL does not parse,
 * is not http or https, or names a user and ALLOW_USER is false.
 */
static char *url_origin(const char *url, bool allow_user)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL, *out = NULL;

	if (!u)
		return NULL;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    (!allow_user && curl_url_get(u, CURLUPART_USER, &user, 0) != CURLUE_NO_USER))
		goto out;
	if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)
		goto out;
	size_t n = strlen(scheme) + strlen(host) + strlen(port) + 5;
	out = malloc(n);
	if (!out)
		goto out;
	snprintf(out, n, "%s://%s:%s", scheme, host, port);
	for (char *c = out; *c; c++)
		*c = (char)tolower((unsigned char)*c);
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(user);
	curl_url_cleanup(u);
	return out;
}

/*
 * Refuse a plain-HTTP tier for an https store when SRC's requests carry a
 * reusable credential: whoever listens between this host and the tier
 * could read it and use it for requests of their own. A signature that
 * binds one request (Signature V4, Azure Shared Key) is not refused: a
 * listener learns that request and its answer, nothing it could sign.
 */
static int tier_check_clear(const struct source *src, const struct source_options *opts,
			    char *err, size_t err_size)
{
	if (tier_tls(src->tier) || !src->reusable || opts->tier_allow_http ||
	    strncmp(src->origin, "https://", 8) != 0)
		return 0;
	snprintf(err, err_size, "--tier %s is plain HTTP, and every request for %s carries %s, "
		 "which anyone on the network to the tier could read and reuse: use an https:// "
		 "tier (tier-config --tls-cert and --tls-key; --tier-ca-file here), or "
		 "--tier-allow-http if that network is trusted", tier_url(src->tier), src->display,
		 src->reusable);
	return -EINVAL;
}

int source_open(const char *text, const struct source_options *opts, struct source **out,
		char *err, size_t err_size)
{
	for (size_t i = 0; i < sizeof(providers) / sizeof(providers[0]); i++) {
		if (!providers[i]->matches(text))
			continue;
		int rc = providers[i]->open(text, opts, out, err, err_size);
		if (rc)
			return rc;
		/* the origin of the source's own URLs: where credentials may go */
		char *own = source_object_url(*out, "");
		(*out)->origin = own ? url_origin(own, true) : NULL;
		free(own);
		if (!(*out)->origin) {
			snprintf(err, err_size, "source '%s' gives no http:// or https:// URL",
				 (*out)->display);
			rc = -EINVAL;
		} else if (opts->tier) {
			rc = tier_new(opts->tier, opts->tier_secret, opts->tier_ca_file,
				      &(*out)->tier, err, err_size);
			if (!rc)
				rc = tier_check_clear(*out, opts, err, err_size);
		} else if (opts->tier_secret || opts->tier_ca_file || opts->tier_allow_http) {
			snprintf(err, err_size, "%s needs --tier",
				 opts->tier_secret ? "--tier-secret" :
				 opts->tier_ca_file ? "--tier-ca-file" : "--tier-allow-http");
			rc = -EINVAL;
		}
		if (rc) {
			source_free(*out);
			*out = NULL;
		}
		return rc;
	}
	char *shown = url_for_log(text);
	snprintf(err, err_size, "unsupported source '%s': expected s3://, az://, gs://, http:// or https://",
		 shown ? shown : "?");
	free(shown);
	return -EINVAL;
}

void source_free(struct source *src)
{
	if (src) {
		free(src->origin);
		tier_free(src->tier);
		src->provider->free(src);
	}
}

char *source_object_url(struct source *src, const char *path)
{
	return src->provider->object_url(src, path);
}

char *source_listing_url(struct source *src, const char *dir, const char *cursor)
{
	return src->provider->listing_url(src, dir, cursor);
}

int source_parse_listing(struct source *src, const char *dir, const char *body, size_t len,
			 listing_entry_fn add, void *arg, char **next_cursor)
{
	*next_cursor = NULL;
	return src->provider->parse_listing(src, dir, body, len, add, arg, next_cursor);
}

bool source_lists_deep(const struct source *src)
{
	return src->provider->deep_listing_url != NULL;
}

char *source_deep_listing_url(struct source *src, const char *dir, const char *names,
			      const char *cursor)
{
	if (!source_lists_deep(src)) {
		errno = ENOTSUP;
		return NULL;
	}
	return src->provider->deep_listing_url(src, dir, names, cursor);
}

int source_parse_deep_listing(struct source *src, const char *dir, const char *body, size_t len,
			      listing_entry_fn add, void *arg, char **next_cursor)
{
	*next_cursor = NULL;
	if (!source_lists_deep(src))
		return -ENOTSUP;
	return src->provider->parse_deep_listing(src, dir, body, len, add, arg, next_cursor);
}

void source_prepare(struct source *src, struct http_request *req)
{
	/* a request naming a user (a manifest's, not ours) goes unsigned */
	char *origin = url_origin(req->url, false);
	bool own = origin && strcmp(origin, src->origin) == 0;

	free(origin);
	req->sign = own ? src->provider->sign : NULL;
	req->signer = own ? src : NULL;
	req->describe_error = src->provider->describe_error;
	req->credentials_rejected = own ? src->provider->credentials_rejected : NULL;
	req->tier = own ? src->tier : NULL;
}

int source_identity_hash(struct source *src, const char *salt,
			 char out[SOURCE_IDENTITY_LEN + 1])
{
	/* the salt (the index's: 32 hex digits, cut at 64), a newline and
	   the name, whole: one that fills the buffer may have been cut, and
	   two names cut alike would be one, so it names no one */
	enum { NAME_MAX_LEN = 64 * 1024 };
	char *keyed = malloc(64 + 1 + NAME_MAX_LEN);
	uint8_t digest[SHA256_LEN];
	char hex[2 * SHA256_LEN + 1];
	int err = 0;

	if (!keyed)
		return -ENOMEM;
	int n = snprintf(keyed, 64 + 1 + NAME_MAX_LEN, "%.64s\n", salt);
	snprintf(keyed + n, NAME_MAX_LEN, "anonymous");
	if (src->provider->identity)
		err = src->provider->identity(src, keyed + n, NAME_MAX_LEN);
	if (!err && strlen(keyed + n) >= NAME_MAX_LEN - 1)
		err = -EACCES;
	if (!err) {
		sha256(keyed, strlen(keyed), digest);
		hex_encode(digest, SHA256_LEN, hex);
		memcpy(out, hex, SOURCE_IDENTITY_LEN);
		out[SOURCE_IDENTITY_LEN] = '\0';
	}
	explicit_bzero(keyed, 64 + 1 + NAME_MAX_LEN);
	free(keyed);
	return err;
}

int source_identity_signed(struct source *src, const char *salt, const struct http_request *req,
			   char out[SOURCE_IDENTITY_LEN + 1])
{
	struct renewal *r = src->provider->renewal ? src->provider->renewal(src) : NULL;
	char named[SOURCE_IDENTITY_LEN + 1];

	if (!r || !req->sign)
		return source_identity_hash(src, salt, out);
	/* serials only grow (renewal.h): the same one before and after the
	   naming means the credential named is the one that signed */
	if (renewal_serial(r) != req->credential)
		return -ESTALE;
	int err = source_identity_hash(src, salt, named);
	if (!err && renewal_serial(r) != req->credential)
		err = -ESTALE;
	if (!err)
		memcpy(out, named, sizeof(named));
	return err;
}

void source_renewals(struct source *src, struct source_renewals *out)
{
	struct renewal *r = src->provider->renewal ? src->provider->renewal(src) : NULL;
	struct renewal_counts counts = { 0 };

	if (r)
		renewal_count(r, &counts);
	out->renewed = counts.renewed;
	out->failed = counts.failed;
	out->expired = counts.expired;
}
