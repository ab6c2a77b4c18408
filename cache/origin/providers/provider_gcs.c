/*
 * provider_gcs.c - Google Cloud Storage through its XML API:
 * gs://BUCKET/PREFIX, objects at https://storage.googleapis.com/BUCKET/KEY
 * (or --endpoint), listed with ListBucketResult pages (marker cursor).
 *
 * Credentials, in this order: --no-sign-request (anonymous);
 * GOOGLE_OAUTH_ACCESS_TOKEN (sent as a bearer token); an HMAC key in
 * GS_ACCESS_KEY_ID and GS_SECRET_ACCESS_KEY (V4 signing, GOOG4-HMAC-SHA256);
 * then Application Default Credentials: a credential file, else the
 * metadata server (gcs_adc.h), whose tokens renewal.h renews before they expire and once
 * more when GCS refuses one (gcs_rejected()). A token goes only over https.
 */
#include "cache/origin/providers/provider_int.h"
#include "cache/origin/providers/bucket.h"
#include "cache/origin/providers/gcs_adc.h"
#include "cache/origin/providers/oauth.h"
#include "cache/origin/providers/renewal.h"
#include "cache/base/log.h"
#include "cache/origin/sigv4.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

enum gcs_auth { GCS_ANONYMOUS, GCS_BEARER, GCS_HMAC, GCS_ADC };

struct gcs_source {
	struct source base;
	char *bucket;
	char *prefix;		/* "" or "a/b/" */
	char *base_url;		/* ENDPOINT/BUCKET, no trailing '/' */
	char *host;		/* host[:port] as signed */
	enum gcs_auth auth;
	long page_size;
	char access_id[128], secret[128];
	char *bearer;		/* "Authorization: Bearer ..." */
	struct gcs_adc_file adc_file;	/* GCS_ADC: a credential file, or */
	struct gcs_metadata metadata;	/* the metadata server */
	struct renewal renewal;		/* GCS_ADC: its tokens */
	char credentials_from[200];	/* base.credentials, for GCS_ADC */
};

static bool gcs_matches(const char *text)
{
	return strncasecmp(text, "gs://", 5) == 0;
}

static void gcs_free(struct source *src)
{
	struct gcs_source *g = (struct gcs_source *)src;
	free(g->bucket);
	free(g->prefix);
	free(g->base_url);
	free(g->host);
	free(g->base.display);
	if (g->bearer) {
		memset(g->bearer, 0, strlen(g->bearer));
		free(g->bearer);
	}
	memset(g->secret, 0, sizeof(g->secret));
	if (g->auth == GCS_ADC)
		renewal_release(&g->renewal);
	free(g);
}

/* Application Default Credentials: the last source tried. ENDPOINT is
 * where requests go (a token goes over https only). */
static int gcs_adc(struct gcs_source *g, const char *endpoint, char *err, size_t err_size)
{
	char why[160], tried[300];
	int rc = gcs_adc_file_find(&g->adc_file, err, err_size);
	renewal_fetch_fn fetch = gcs_adc_file_fetch;
	void *arg = &g->adc_file;

	if (rc < 0)
		return rc;
	if (rc == 0) {
		fetch = gcs_metadata_fetch;
		arg = &g->metadata;
	}
	rc = gcs_metadata_init(&g->metadata, err, err_size);
	if (rc)
		return -EACCES;
	if (arg == &g->adc_file)
		snprintf(tried, sizeof(tried), "the credential file %.200s", g->adc_file.path);
	else
		snprintf(tried, sizeof(tried), "the metadata server at %.200s", g->metadata.url);
	rc = oauth_bearer_start(&g->renewal, "gcs", fetch, arg, endpoint, why, sizeof(why));
	if (rc == -ENOMEM)
		return rc;
	if (rc == 0) {
		g->auth = GCS_ADC;
		snprintf(g->credentials_from, sizeof(g->credentials_from), "%s", g->renewal.from);
		g->base.credentials = g->credentials_from;
		g->base.reusable = "the bearer token of Application Default Credentials";
		return 0;
	}
	snprintf(err, err_size, "no Google Cloud Storage credentials: tried, in order, "
		 "GOOGLE_OAUTH_ACCESS_TOKEN, an HMAC key in GS_ACCESS_KEY_ID and "
		 "GS_SECRET_ACCESS_KEY, GOOGLE_APPLICATION_CREDENTIALS or gcloud's "
		 "application_default_credentials.json, then the metadata server; used %s (%s). "
		 "Set one of them, run on Compute Engine or GKE with a service account, or use "
		 "--no-sign-request for a public bucket", tried, why);
	return -EACCES;
}

static int gcs_credentials(struct gcs_source *g, bool no_sign, const char *endpoint, char *err,
			   size_t err_size)
{
	const char *token = getenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	const char *id = getenv("GS_ACCESS_KEY_ID"), *secret = getenv("GS_SECRET_ACCESS_KEY");

	if (no_sign) {
		g->auth = GCS_ANONYMOUS;
		g->base.credentials = "";
		return 0;
	}
	if (token && *token) {
		size_t n = strlen(token) + 32;
		g->bearer = malloc(n);
		if (!g->bearer)
			return -ENOMEM;
		snprintf(g->bearer, n, "Authorization: Bearer %s", token);
		g->auth = GCS_BEARER;
		g->base.credentials = "GOOGLE_OAUTH_ACCESS_TOKEN";
		g->base.reusable = "the bearer token of GOOGLE_OAUTH_ACCESS_TOKEN";
		return 0;
	}
	if ((id && *id) || (secret && *secret)) {
		if (!id || !*id || !secret || !*secret) {
			snprintf(err, err_size, "%s is set but %s is not: set both, or neither",
				 id && *id ? "GS_ACCESS_KEY_ID" : "GS_SECRET_ACCESS_KEY",
				 id && *id ? "GS_SECRET_ACCESS_KEY" : "GS_ACCESS_KEY_ID");
			return -EACCES;
		}
		snprintf(g->access_id, sizeof(g->access_id), "%s", id);
		snprintf(g->secret, sizeof(g->secret), "%s", secret);
		g->auth = GCS_HMAC;
		g->base.credentials = "GS_ACCESS_KEY_ID/GS_SECRET_ACCESS_KEY";
		return 0;
	}
	return gcs_adc(g, endpoint, err, err_size);
}

static int gcs_open(const char *text, const struct source_options *opts, struct source **out,
		    char *err, size_t err_size)
{
	struct gcs_source *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->base.provider = &provider_gcs;
	g->page_size = opts->page_size;
	int rc = bucket_parse(text, 5, &g->bucket, &g->prefix, err, err_size);
	if (rc) {
		gcs_free(&g->base);
		return rc;
	}
	g->base.display = strdup(text);
	if (!g->base.display) {
		gcs_free(&g->base);
		return -ENOMEM;
	}
	const char *endpoint = opts->endpoint ? opts->endpoint : "https://storage.googleapis.com";
	rc = gcs_credentials(g, opts->no_sign_request, endpoint, err, err_size);
	if (rc) {
		gcs_free(&g->base);
		return rc;
	}
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL;
	if (!u || curl_url_set(u, CURLUPART_URL, endpoint, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		curl_url_cleanup(u);
		snprintf(err, err_size, "--endpoint '%s' is not a URL", endpoint);
		gcs_free(&g->base);
		return -EINVAL;
	}
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	size_t n = strlen(host) + (port ? strlen(port) : 0) + 2;
	g->host = malloc(n);
	if (g->host)
		snprintf(g->host, n, "%s%s%s", host, port ? ":" : "", port ? port : "");
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	size_t elen = strlen(endpoint);
	while (elen > 0 && endpoint[elen - 1] == '/')
		elen--;
	n = elen + strlen(g->bucket) + 2;
	g->base_url = malloc(n);
	if (g->base_url)
		snprintf(g->base_url, n, "%.*s/%s", (int)elen, endpoint, g->bucket);
	if (!g->host || !g->base_url) {
		gcs_free(&g->base);
		return -ENOMEM;
	}
	*out = &g->base;
	return 0;
}

static char *gcs_object_url(struct source *src, const char *path)
{
	struct gcs_source *g = (struct gcs_source *)src;
	return bucket_object_url(g->base_url, g->prefix, path);
}

/* The XML API's listing of DIR's keys: with DEEP, all below it, else one
 * level. */
static char *listing_url(struct source *src, const char *dir, const char *names,
			 const char *cursor, bool deep)
{
	struct gcs_source *g = (struct gcs_source *)src;
	char prefix[4096];
	if (!bucket_dir_prefix(g->prefix, dir, names, prefix, sizeof(prefix)))
		return NULL;
	return bucket_listing_url(g->base_url, deep ? "" : "delimiter=%2F", prefix, "max-keys",
				  g->page_size, "marker", cursor);
}

static char *gcs_listing_url(struct source *src, const char *dir, const char *cursor)
{
	return listing_url(src, dir, "", cursor, false);
}

static char *gcs_deep_listing_url(struct source *src, const char *dir, const char *names,
				  const char *cursor)
{
	return listing_url(src, dir, names, cursor, true);
}

static int gcs_parse_listing(struct source *src, const char *dir, const char *body, size_t len,
			     listing_entry_fn add, void *arg, char **next_cursor)
{
	struct gcs_source *g = (struct gcs_source *)src;
	char prefix[4096];
	bucket_dir_prefix(g->prefix, dir, "", prefix, sizeof(prefix));
	return bucket_listing_parse(prefix, body, len, add, arg, next_cursor);
}

static int gcs_parse_deep_listing(struct source *src, const char *dir, const char *body,
				  size_t len, listing_entry_fn add, void *arg, char **next_cursor)
{
	struct gcs_source *g = (struct gcs_source *)src;
	char prefix[4096];
	bucket_dir_prefix(g->prefix, dir, "", prefix, sizeof(prefix));
	return bucket_deep_listing_parse(prefix, body, len, add, arg, next_cursor);
}

/* "Authorization: Bearer" with the metadata server's current token (one
 * due is renewed in the background); which token signed goes to
 * *CREDENTIAL (http_attempt.credential). */
static int sign_metadata(struct gcs_source *g, struct curl_slist **headers, uint64_t *credential)
{
	struct oauth_token *token = malloc(sizeof(*token));
	char *line = malloc(OAUTH_TOKEN_MAX + 32);
	int err = -ENOMEM;

	if (!token || !line)
		goto out;
	err = renewal_get_serial(&g->renewal, time(NULL), token, credential);
	if (err)
		goto out;
	snprintf(line, OAUTH_TOKEN_MAX + 32, "Authorization: Bearer %s", token->access_token);
	struct curl_slist *grown = curl_slist_append(*headers, line);
	err = grown ? 0 : -ENOMEM;
	if (grown)
		*headers = grown;
out:
	if (token) {
		explicit_bzero(token, sizeof(*token));
		free(token);
	}
	if (line) {
		explicit_bzero(line, OAUTH_TOKEN_MAX + 32);
		free(line);
	}
	return err;
}

/* GCS refused a signed request (401: the token expired or was revoked):
 * with the metadata server's tokens, renew once and send it again. */
static int gcs_rejected(void *signer, long status, const char *body, size_t len)
{
	struct gcs_source *g = signer;
	time_t now = time(NULL);

	(void)body;
	(void)len;
	if (g->auth != GCS_ADC || (status != 401 && status != 403))
		return 0;
	log_warn("gcs: %s refused the bearer token (HTTP %ld); renewing it",
		 g->base.display, status);
	/* requests refused in the second a renewal happened share it */
	return renewal_force(&g->renewal, now, now - 1) == 0 ? 1 : -EACCES;
}

static int gcs_sign(void *signer, const struct http_attempt *a, struct curl_slist **headers)
{
	struct gcs_source *g = signer;

	if (g->auth == GCS_ANONYMOUS)
		return 0;
	if (g->auth == GCS_BEARER) {
		*headers = curl_slist_append(*headers, g->bearer);
		return 0;
	}
	if (g->auth == GCS_ADC)
		return sign_metadata(g, headers, a->credential);
	struct sigv4_credentials cred = { g->access_id, g->secret, NULL };
	return bucket_sign(&sigv4_goog, &cred, g->host, "auto", "storage", a, NULL, 0, headers);
}

/* See source_identity_hash(): the HMAC access id, whom the tokens of
 * Application Default Credentials speak for (gcs_adc.h), or a pasted
 * token itself. */
static int gcs_identity(struct source *src, char *out, size_t size)
{
	struct gcs_source *g = (struct gcs_source *)src;
	if (g->auth == GCS_HMAC) {
		snprintf(out, size, "gcs hmac %s", g->access_id);
	} else if (g->auth == GCS_ADC) {
		return oauth_renewal_principal(&g->renewal, "gcs", out, size);
	} else if (g->auth == GCS_BEARER) {
		snprintf(out, size, "gcs %s", g->bearer);
	} else {
		snprintf(out, size, "anonymous");
	}
	return 0;
}

static struct renewal *gcs_renewal(struct source *src)
{
	struct gcs_source *g = (struct gcs_source *)src;
	return g->auth == GCS_ADC ? &g->renewal : NULL;
}

const struct provider provider_gcs = {
	.name = "gcs",
	.matches = gcs_matches,
	.open = gcs_open,
	.free = gcs_free,
	.object_url = gcs_object_url,
	.listing_url = gcs_listing_url,
	.parse_listing = gcs_parse_listing,
	.deep_listing_url = gcs_deep_listing_url,
	.parse_deep_listing = gcs_parse_deep_listing,
	.sign = gcs_sign,
	.credentials_rejected = gcs_rejected,
	.describe_error = provider_xml_error,
	.identity = gcs_identity,
	.renewal = gcs_renewal,
};
