/*
 * oauth.c - OAuth2 requests (see oauth.h): a token endpoint's answer, one
 * bounded request to an identity endpoint, and a bearer token's renewal
 * started (renewal.c renews it).
 */
#include "cache/origin/providers/oauth.h"
#include "cache/base/log.h"
#include "cache/origin/crypto.h"
#include "cache/origin/http.h"
#include "cache/origin/json.h"
#include "cache/origin/url.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int oauth_bearer_start(struct renewal *r, const char *subject, renewal_fetch_fn fetch,
		       void *arg, const char *url, char *why, size_t why_size)
{
	if (strncasecmp(url, "https://", 8) != 0) {
		snprintf(why, why_size, "not tried: a token goes over https only");
		return -EACCES;
	}
	int rc = renewal_init(r, subject, sizeof(struct oauth_token), fetch, arg, time(NULL));
	if (rc == 0 || rc == -ENOMEM)
		return rc;
	snprintf(why, why_size, "no token: %s", strerror(-rc));
	return -EACCES;
}

/* ---- principals ---- */

int oauth_principal_set(struct oauth_token *t, const char *kind, const char *const *parts,
			size_t n)
{
	size_t len = strlen(kind) + 1;
	uint8_t digest[SHA256_LEN];

	for (size_t i = 0; i < n; i++)
		len += strlen(parts[i]) + 1;
	char *text = malloc(len), *at = text;
	if (!text)
		return -ENOMEM;
	at += sprintf(at, "%s", kind);
	/* each part after a NUL: no part can run into the next */
	for (size_t i = 0; i < n; i++)
		at += sprintf(at + 1, "%s", parts[i]) + 1;
	sha256(text, len - 1, digest);
	explicit_bzero(text, len);
	free(text);
	hex_encode(digest, SHA256_LEN, t->principal);
	return 0;
}

int oauth_jwt_principal(struct oauth_token *t)
{
	const char *claims = strchr(t->access_token, '.');
	const char *end = claims ? strchr(claims + 1, '.') : NULL;
	char tid[256], oid[256];
	struct json_doc *doc = NULL;
	int err = -ENOENT;

	if (!end || end - claims - 1 > (long)(OAUTH_TOKEN_MAX / 4 * 3))
		return -ENOENT;
	size_t n = (size_t)(end - claims - 1), len;
	char *text = malloc(n + 4);
	uint8_t *json = malloc(n + 4);
	if (!text || !json)
		goto out;
	/* base64url, unpadded, as standard base64 */
	for (size_t i = 0; i < n; i++)
		text[i] = claims[1 + i] == '-' ? '+' : claims[1 + i] == '_' ? '/' : claims[1 + i];
	while (n % 4)
		text[n++] = '=';
	text[n] = '\0';
	if (base64_decode(text, json, n, &len) != 0 ||
	    json_doc_parse((const char *)json, len, &doc) != 0 ||
	    json_doc_string(doc, "tid", tid, sizeof(tid)) != 0 || !tid[0] ||
	    ((json_doc_string(doc, "oid", oid, sizeof(oid)) != 0 || !oid[0]) &&
	     (json_doc_string(doc, "appid", oid, sizeof(oid)) != 0 || !oid[0])))
		goto out;
	err = oauth_principal_set(t, "entra", (const char *const[]){ tid, oid }, 2);
out:
	json_doc_free(doc);
	free(text);
	free(json);
	return err;
}

int oauth_renewal_principal(struct renewal *r, const char *subject, char *out, size_t size)
{
	struct oauth_token *token = malloc(sizeof(*token));
	int err = token ? renewal_get(r, time(NULL), token) : -ENOMEM;

	if (!err && !token->principal[0])
		err = -EACCES;
	if (!err)
		snprintf(out, size, "%s principal %s", subject, token->principal);
	if (token)
		explicit_bzero(token, sizeof(*token));
	free(token);
	return err ? -EACCES : 0;
}

bool oauth_url_safe(const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *user = NULL;
	bool safe = false;

	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_USER, &user, 0) != CURLUE_NO_USER)
		goto out;
	if (strcasecmp(scheme, "https") == 0) {
		safe = true;
	} else if (strcasecmp(scheme, "http") == 0) {
		unsigned a, b, c, d;
		char tail;
		safe = strcasecmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0 ||
		       (sscanf(host, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a == 127 &&
			b < 256 && c < 256 && d < 256 && strspn(host, "0123456789.") == strlen(host));
	}
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(user);
	curl_url_cleanup(u);
	return safe;
}

/* ---- token answers ---- */

/* KEY's value as a count of seconds, a JSON number or a string of digits
 * (Azure's managed identity answers strings). 0, -ENOENT or -EIO. */
static int seconds_of(const struct json_doc *doc, const char *key, int64_t *out)
{
	char text[32], *end;

	if (json_doc_int(doc, key, out) == 0)
		return 0;
	int rc = json_doc_string(doc, key, text, sizeof(text));
	if (rc == -ENOENT)
		return -ENOENT;
	if (rc || !text[0] || strspn(text, "0123456789") != strlen(text))
		return -EIO;
	errno = 0;
	*out = strtoll(text, &end, 10);
	return errno ? -EIO : 0;
}

int oauth_token_from_json(const char *text, size_t len, time_t now, struct oauth_token *out,
			  time_t *expires)
{
	struct json_doc *doc;
	int64_t seconds;
	int err = -EIO;

	memset(out, 0, sizeof(*out));
	*expires = 0;
	if (json_doc_parse(text, len, &doc) != 0)
		return -EIO;
	if (json_doc_string(doc, "access_token", out->access_token, sizeof(out->access_token)) ||
	    !out->access_token[0] || strchr(out->access_token, ' '))
		goto free_doc;
	if (seconds_of(doc, "expires_in", &seconds) == 0) {
		if (seconds <= 0 || seconds > OAUTH_MAX_LIFETIME)
			goto free_doc;
		*expires = now + (time_t)seconds;
	} else if (seconds_of(doc, "expires_on", &seconds) == 0) {
		if (seconds <= now || seconds > now + OAUTH_MAX_LIFETIME)
			goto free_doc;
		*expires = (time_t)seconds;
	} else {
		goto free_doc;
	}
	err = 0;
free_doc:
	json_doc_free(doc);
	if (err) {
		explicit_bzero(out, sizeof(*out));
		*expires = 0;
	}
	return err;
}

/* ---- one request to an identity endpoint ---- */

static int add_headers(void *lines, const struct http_attempt *a, struct curl_slist **headers)
{
	(void)a;
	for (const char *const *line = lines; line && *line; line++) {
		struct curl_slist *grown = curl_slist_append(*headers, *line);
		if (!grown)
			return -ENOMEM;
		*headers = grown;
	}
	return 0;
}

int oauth_endpoint_call(const char *url, const char *name, const char *method,
			const char *const *headers, const char *form, struct oauth_body *out)
{
	return oauth_endpoint_call_signed(url, name, method, form, add_headers, (void *)headers,
					  out);
}

int oauth_endpoint_call_signed(const char *url, const char *name, const char *method,
			       const char *form, http_sign_fn sign, void *signer,
			       struct oauth_body *out)
{
	struct http_config cfg;
	struct http_request req = { .url = url, .log_name = name, .method = method,
				    .form = form, .sign = sign, .signer = signer };
	int err;

	out->len = 0;
	out->status = 0;
	out->text[0] = out->challenge[0] = '\0';
	http_config_defaults(&cfg);
	cfg.retries = 0;
	cfg.connect_timeout_s = 1;
	cfg.stall_timeout_s = 5;
	cfg.total_timeout_ms = 5000;
	cfg.max_body = sizeof(out->text) - 1;
	err = http_fetch_once(&cfg, &req);
	out->status = req.status;
	if (!err && req.status != 200)
		err = -EACCES;
	if (err && req.status == 401)
		snprintf(out->challenge, sizeof(out->challenge), "%s", req.challenge);
	if (err && !(out->answers_challenge && out->challenge[0])) {
		/* the cause a failed start prints, and the log's at a renewal */
		char *shown = url_for_log(url);
		if (req.status >= 300 && req.status < 400)
			log_warn("%s at %s answered HTTP %ld, a redirect: not followed, as a "
				 "request carrying a secret follows none", name, shown ? shown : "",
				 req.status);
		else if (req.status && req.status != 200)
			log_warn("%s at %s answered HTTP %ld", name, shown ? shown : "", req.status);
		else
			log_warn("%s at %s: %s", name, shown ? shown : "",
				 req.error[0] ? req.error : strerror(-err));
		free(shown);
	}
	if (!err && req.body_len >= sizeof(out->text))
		err = -EIO;	/* held to cfg.max_body by http.c: never */
	if (!err && req.body_len > 0) {
		memcpy(out->text, req.body, req.body_len);
		out->len = req.body_len;
		out->text[out->len] = '\0';
	}
	if (req.body) {
		explicit_bzero(req.body, req.body_len);
		free(req.body);
	}
	return err;
}
