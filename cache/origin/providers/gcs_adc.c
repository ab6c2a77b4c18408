/*
 * gcs_adc.c - tokens of Application Default Credentials from the metadata
 * server (see gcs_adc.h).
 *
 * As Google documents it: GET http://HOST/computeMetadata/v1/instance/
 * service-accounts/default/token with "Metadata-Flavor: Google"; the
 * answer is JSON {"access_token", "expires_in" (seconds, a number),
 * "token_type": "Bearer"}; GET .../service-accounts/default/email with
 * the same header answers the account's email, as text. The server is
 * plain http on the link-local
 * network of the VM or the pod, as every client library reaches it.
 */
#include "cache/origin/providers/gcs_adc.h"
#include "cache/origin/providers/oauth.h"
#include "cache/base/log.h"
#include "cache/origin/crypto.h"
#include "cache/origin/json.h"
#include "cache/origin/url.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Where Google's service accounts live: an email of another domain names
 * no one account. */
#define SERVICE_ACCOUNT_DOMAIN ".gserviceaccount.com"

int gcs_metadata_init(struct gcs_metadata *md, char *err, size_t err_size)
{
	const char *host = getenv("GCE_METADATA_HOST");

	if (!host || !*host)
		host = "metadata.google.internal";
	/* host[:port] only: no scheme, path or anything a URL could hide */
	if (strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") !=
	    strlen(host) || strlen(host) > 255) {
		snprintf(err, err_size, "GCE_METADATA_HOST must be HOST or HOST:PORT");
		return -EINVAL;
	}
	snprintf(md->url, sizeof(md->url),
		 "http://%s/computeMetadata/v1/instance/service-accounts/default/token", host);
	snprintf(md->email_url, sizeof(md->email_url),
		 "http://%s/computeMetadata/v1/instance/service-accounts/default/email", host);
	return 0;
}

int gcs_metadata_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size)
{
	const struct gcs_metadata *md = arg;
	static const char *const headers[] = { "Metadata-Flavor: Google", NULL };
	struct oauth_body *body = malloc(sizeof(*body));
	int err;

	if (!body)
		return -ENOMEM;
	err = oauth_endpoint_call(md->url, "the metadata server", NULL, headers, NULL,
				  body);
	if (!err)
		err = oauth_token_from_json(body->text, body->len, time(NULL), out, expires);
	if (!err)
		err = oauth_endpoint_call(md->email_url, "the metadata server", NULL, headers,
					  NULL, body);
	if (!err) {
		/* one line of text: the default service account's email, as
		   this server vouches for it. A workload identity with no
		   service account answers its project's pool
		   (PROJECT.svc.id.goog), the same for every Kubernetes service
		   account: no principal then, so nothing is proved */
		body->text[strcspn(body->text, "\r\n")] = '\0';
		size_t n = strlen(body->text), tail = strlen(SERVICE_ACCOUNT_DOMAIN);
		if (n > tail && strcmp(body->text + n - tail, SERVICE_ACCOUNT_DOMAIN) == 0)
			err = oauth_principal_set(out, "gcs service account",
						  (const char *const[]){ body->text, md->url }, 2);
	}
	if (!err)
		snprintf(from, from_size, "the metadata server (%.100s)", md->url);
	explicit_bzero(body, sizeof(*body));
	free(body);
	return err;
}

/* ---- credential files ---- */

#define GCS_SCOPE "https://www.googleapis.com/auth/devstorage.read_only"
#define GOOGLE_TOKEN_URI "https://oauth2.googleapis.com/token"
#define PRIVATE_KEY_MAX 8192	/* a PEM key (RSA 4096: ~3.3 KB) */
#define FIELD_MAX 2048		/* any other field of the file */
#define FORM_MAX (3 * 4096 + 1024)	/* a token request, its values encoded */

int gcs_adc_file_find(struct gcs_adc_file *f, char *err, size_t err_size)
{
	const char *named = getenv("GOOGLE_APPLICATION_CREDENTIALS");
	const char *config = getenv("CLOUDSDK_CONFIG"), *home = getenv("HOME");

	memset(f, 0, sizeof(*f));
	if (named && *named) {
		if (access(named, R_OK) != 0) {
			snprintf(err, err_size, "GOOGLE_APPLICATION_CREDENTIALS names %.200s, which "
				 "cannot be read: %s", named, strerror(errno));
			return -EACCES;
		}
		snprintf(f->path, sizeof(f->path), "%s", named);
		return 1;
	}
	if (config && *config)
		snprintf(f->path, sizeof(f->path), "%s/application_default_credentials.json",
			 config);
	else if (home && *home)
		snprintf(f->path, sizeof(f->path),
			 "%s/.config/gcloud/application_default_credentials.json", home);
	return f->path[0] && access(f->path, R_OK) == 0 ? 1 : 0;
}

/* base64url without padding (JWT) of LEN bytes; caller frees. */
static char *base64url(const void *data, size_t len)
{
	char *s = base64_encode(data, len);

	if (!s)
		return NULL;
	for (char *p = s; *p; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
	s[strcspn(s, "=")] = '\0';
	return s;
}

/* A service account's signed assertion (RFC 7523) for TOKEN_URI at NOW
 * into FORM (FORM_MAX bytes). 0 or -EACCES. */
static int service_account_form(const struct json_doc *doc, const char *token_uri, time_t now,
				char *form)
{
	char *key = calloc(1, PRIVATE_KEY_MAX), email[FIELD_MAX], key_id[128] = "";
	char *head = NULL, *claims = NULL, *head64 = NULL, *claims64 = NULL, *sig64 = NULL;
	char *signing = NULL;
	uint8_t sig[512];
	size_t sig_len;
	int err = -EACCES;

	if (!key || json_doc_text(doc, "private_key", key, PRIVATE_KEY_MAX) ||
	    json_doc_string(doc, "client_email", email, sizeof(email)) ||
	    strpbrk(email, "\"\\"))
		goto out;
	json_doc_string(doc, "private_key_id", key_id, sizeof(key_id));
	if (strpbrk(key_id, "\"\\"))
		goto out;
	if (asprintf(&head, "{\"alg\":\"RS256\",\"typ\":\"JWT\"%s%s%s}", key_id[0] ? ",\"kid\":\"" : "",
		     key_id, key_id[0] ? "\"" : "") < 0)
		head = NULL;
	if (asprintf(&claims, "{\"iss\":\"%s\",\"scope\":\"" GCS_SCOPE "\",\"aud\":\"%s\","
		     "\"iat\":%lld,\"exp\":%lld}", email, token_uri, (long long)now,
		     (long long)now + 3600) < 0)
		claims = NULL;
	head64 = head ? base64url(head, strlen(head)) : NULL;
	claims64 = claims ? base64url(claims, strlen(claims)) : NULL;
	if (!head64 || !claims64 || asprintf(&signing, "%s.%s", head64, claims64) < 0) {
		signing = NULL;
		err = -ENOMEM;
		goto out;
	}
	if (rs256_sign(key, signing, strlen(signing), sig, sizeof(sig), &sig_len) != 0) {
		log_warn("gcs: the private_key of the service account file is not an RSA key");
		goto out;
	}
	sig64 = base64url(sig, sig_len);
	if (!sig64 || (size_t)snprintf(form, FORM_MAX, "grant_type=urn%%3Aietf%%3Aparams%%3Aoauth"
				       "%%3Agrant-type%%3Ajwt-bearer&assertion=%s.%s", signing,
				       sig64) >= FORM_MAX)
		goto out;
	err = 0;
out:
	if (key) {
		explicit_bzero(key, PRIVATE_KEY_MAX);
		free(key);
	}
	if (sig64)
		explicit_bzero(sig64, strlen(sig64));
	explicit_bzero(sig, sizeof(sig));
	free(head);
	free(claims);
	free(head64);
	free(claims64);
	free(signing);
	free(sig64);
	return err;
}

/* An authorized user's refresh-token grant into FORM (FORM_MAX bytes).
 * 0 or -EACCES. */
static int authorized_user_form(const struct json_doc *doc, char *form)
{
	static const char *const keys[] = { "client_id", "client_secret", "refresh_token" };
	char *value = calloc(1, FIELD_MAX), *enc;
	size_t n = (size_t)snprintf(form, FORM_MAX, "grant_type=refresh_token");
	int err = -EACCES;

	if (!value)
		return -ENOMEM;
	for (size_t i = 0; i < 3; i++) {
		if (json_doc_string(doc, keys[i], value, FIELD_MAX) || !value[0])
			goto out;
		enc = url_encode(value, false);
		if (!enc)
			goto out;
		n += (size_t)snprintf(form + n, FORM_MAX - n, "&%s=%s", keys[i], enc);
		explicit_bzero(enc, strlen(enc));
		free(enc);
		if (n >= FORM_MAX)
			goto out;
	}
	err = 0;
out:
	explicit_bzero(value, FIELD_MAX);
	free(value);
	return err;
}

/* Whom a token for the credential file DOC of TYPE speaks for, as
 * TOKEN_URI vouches for it (a token endpoint of one's own vouches for
 * nothing of Google's), into T: the service account's client_email; an
 * authorized user's client_id with its account, or with its refresh token
 * when it names none (one client id, gcloud's, serves every user). 0,
 * -EACCES or -ENOMEM. */
static int file_principal(const struct json_doc *doc, const char *type, const char *token_uri,
			  struct oauth_token *t)
{
	char *first = calloc(1, FIELD_MAX), *second = calloc(1, FIELD_MAX);
	int err = -ENOMEM;

	if (!first || !second)
		goto out;
	err = -EACCES;
	if (strcmp(type, "service_account") == 0) {
		if (json_doc_string(doc, "client_email", first, FIELD_MAX) == 0 && first[0])
			err = oauth_principal_set(t, "gcs service account",
						  (const char *const[]){ first, token_uri }, 2);
	} else if (json_doc_string(doc, "client_id", first, FIELD_MAX) == 0) {
		if (json_doc_string(doc, "account", second, FIELD_MAX) == 0 && second[0])
			err = oauth_principal_set(t, "gcs user account",
						  (const char *const[]){ first, second, token_uri }, 3);
		else if (json_doc_string(doc, "refresh_token", second, FIELD_MAX) == 0)
			err = oauth_principal_set(t, "gcs user grant",
						  (const char *const[]){ first, second, token_uri }, 3);
	}
out:
	if (second)
		explicit_bzero(second, FIELD_MAX);
	free(first);
	free(second);
	return err;
}

int gcs_adc_file_fetch(void *arg, void *out, time_t *expires, char *from, size_t from_size)
{
	const struct gcs_adc_file *f = arg;
	char *text = calloc(1, JSON_MAX_DOCUMENT + 1), *form = calloc(1, FORM_MAX);
	char type[32] = "", token_uri[512] = GOOGLE_TOKEN_URI;
	struct oauth_body *body = malloc(sizeof(*body));
	struct json_doc *doc = NULL;
	FILE *fp = NULL;
	size_t n;
	int err = -ENOMEM;

	if (!text || !form || !body)
		goto out;
	err = -EACCES;
	fp = fopen(f->path, "re");
	if (!fp) {
		log_warn("gcs: cannot read the credential file %.200s: %s", f->path, strerror(errno));
		goto out;
	}
	n = fread(text, 1, JSON_MAX_DOCUMENT + 1, fp);
	if (n > JSON_MAX_DOCUMENT || json_doc_parse(text, n, &doc) != 0 ||
	    json_doc_string(doc, "type", type, sizeof(type))) {
		log_warn("gcs: the credential file %.200s is not a credentials JSON document",
			 f->path);
		goto out;
	}
	int uri = json_doc_string(doc, "token_uri", token_uri, sizeof(token_uri));
	if ((uri && uri != -ENOENT) || !oauth_url_safe(token_uri)) {
		log_warn("gcs: the token_uri of %.200s is not https (or http to a loopback "
			 "address)", f->path);
		goto out;
	}
	if (strcmp(type, "service_account") == 0) {
		err = service_account_form(doc, token_uri, time(NULL), form);
	} else if (strcmp(type, "authorized_user") == 0) {
		err = authorized_user_form(doc, form);
	} else {
		log_warn("gcs: the credential file %.200s is of type '%s'; tilefs reads "
			 "service_account and authorized_user", f->path, type);
		goto out;
	}
	if (err)
		goto out;
	err = oauth_endpoint_call(token_uri, "the token endpoint", NULL, NULL, form, body);
	if (!err)
		err = oauth_token_from_json(body->text, body->len, time(NULL), out, expires);
	if (!err)
		err = file_principal(doc, type, token_uri, out);
	if (!err)
		snprintf(from, from_size, "%s credentials in %.100s", type, f->path);
out:
	if (fp)
		fclose(fp);
	json_doc_free(doc);
	if (text) {
		explicit_bzero(text, JSON_MAX_DOCUMENT + 1);
		free(text);
	}
	if (form) {
		explicit_bzero(form, FORM_MAX);
		free(form);
	}
	if (body) {
		explicit_bzero(body, sizeof(*body));
		free(body);
	}
	return err;
}
