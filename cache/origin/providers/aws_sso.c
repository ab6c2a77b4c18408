/*
 * aws_sso.c - an SSO profile's role credentials from the SSO portal, with
 * the token `aws sso login` cached (see aws_sso.h). Its renewal is
 * renewal.c's, the one for every cloud: each fetch reads the token file
 * again and asks the portal once.
 */
#include "cache/origin/providers/aws_sso.h"
#include "cache/origin/providers/aws_config.h"
#include "cache/base/log.h"
#include "cache/origin/crypto.h"
#include "cache/origin/json.h"
#include "cache/origin/url.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* KEY of SECTION in CONFIG into OUT: 1 when set (and not empty), else 0. */
static int setting(const char *config, const char *section, const char *key, char *out,
		   size_t size)
{
	out[0] = '\0';
	return aws_config_get(config, section, key, out, size) == 0 && out[0];
}

int aws_sso_from_profile(struct aws_sso *sso, const char *config, const char *profile,
			 const char *section, char *err, size_t err_size)
{
	char session_section[160], value[512];
	int named;

	memset(sso, 0, sizeof(*sso));
	named = setting(config, section, "sso_session", sso->session, sizeof(sso->session)) |
		setting(config, section, "sso_start_url", sso->start_url, sizeof(sso->start_url)) |
		setting(config, section, "sso_region", sso->region, sizeof(sso->region)) |
		setting(config, section, "sso_account_id", sso->account_id,
			sizeof(sso->account_id)) |
		setting(config, section, "sso_role_name", sso->role_name, sizeof(sso->role_name));
	if (!named)
		return 0;
	snprintf(sso->profile, sizeof(sso->profile), "%s", profile);
	if (sso->session[0]) {
		/* the session's start URL and region; the profile may repeat
		   them, but not differ (as botocore reads them) */
		static const char *const keys[] = { "sso_start_url", "sso_region" };
		char *fields[] = { sso->start_url, sso->region };
		size_t sizes[] = { sizeof(sso->start_url), sizeof(sso->region) };

		snprintf(session_section, sizeof(session_section), "sso-session %s", sso->session);
		for (int i = 0; i < 2; i++) {
			if (!setting(config, session_section, keys[i], value, sizeof(value))) {
				snprintf(err, err_size, "profile '%s' names sso_session '%s', but "
					 "no [sso-session %s] in ~/.aws/config gives its %s",
					 profile, sso->session, sso->session, keys[i]);
				return -EINVAL;
			}
			if (fields[i][0] && strcmp(fields[i], value) != 0) {
				snprintf(err, err_size, "profile '%s' sets %s, and not to the value "
					 "of its sso_session '%s'", profile, keys[i], sso->session);
				return -EINVAL;
			}
			snprintf(fields[i], sizes[i], "%s", value);
		}
	}
	const char *missing = !sso->start_url[0] ? "sso_start_url" :
			      !sso->region[0] ? "sso_region" :
			      !sso->account_id[0] ? "sso_account_id" :
			      !sso->role_name[0] ? "sso_role_name" : NULL;
	if (missing) {
		snprintf(err, err_size, "profile '%s' signs in with SSO but has no %s (`aws "
			 "configure sso --profile %s` writes it)", profile, missing, profile);
		return -EINVAL;
	}
	return 1;
}

void aws_sso_cache_file(const struct aws_sso *sso, char *out, size_t size)
{
	const char *home = getenv("HOME");
	char hex[41];

	sha1_hex(sso->session[0] ? sso->session : sso->start_url, hex);
	snprintf(out, size, "%s/.aws/sso/cache/%s.json", home ? home : "", hex);
}

/* What to run to sign in again, into OUT. */
static void login_hint(const struct aws_sso *sso, char *out, size_t size)
{
	if (sso->session[0])
		snprintf(out, size, "run `aws sso login --profile %.100s` (or `aws sso login "
			 "--sso-session %.100s`)", sso->profile, sso->session);
	else
		snprintf(out, size, "run `aws sso login --profile %.100s`", sso->profile);
}

/*
 * The access token of SSO from the CLI's cache into TOKEN (AWS_SSO_TOKEN_MAX
 * bytes; the caller zeroes it) at NOW: 0; -EKEYEXPIRED (logged, with what
 * to run) when the file is missing, holds no token or it has expired;
 * -EIO when the file is not the CLI's document.
 */
static int token_load(const struct aws_sso *sso, time_t now, char *token)
{
	char path[1100], hint[300], expires_at[64];
	char *text = NULL;
	struct json_doc *doc = NULL;
	time_t expires;
	size_t n;
	int err = -EKEYEXPIRED;

	aws_sso_cache_file(sso, path, sizeof(path));
	login_hint(sso, hint, sizeof(hint));
	FILE *f = fopen(path, "re");
	if (!f) {
		log_error("s3: no SSO token of profile %s in %s (%s): %s", sso->profile, path,
			  strerror(errno), hint);
		return -EKEYEXPIRED;
	}
	text = malloc(JSON_MAX_DOCUMENT + 1);
	if (!text) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(text, 1, JSON_MAX_DOCUMENT + 1, f);
	fclose(f);
	if (json_doc_parse(text, n, &doc) != 0 ||
	    json_doc_string(doc, "expiresAt", expires_at, sizeof(expires_at)) != 0 ||
	    !(expires = aws_iso8601(expires_at))) {
		log_error("s3: the SSO token cache %s is not the AWS CLI's (JSON with "
			  "accessToken and expiresAt): %s", path, hint);
		err = -EIO;
		goto out;
	}
	if (json_doc_string(doc, "accessToken", token, AWS_SSO_TOKEN_MAX) != 0 || !token[0]) {
		log_error("s3: the SSO token cache %s holds no accessToken: %s", path, hint);
		goto out;
	}
	if (expires <= now) {
		log_error("s3: the SSO token of profile %s expired at %s: %s", sso->profile,
			  expires_at, hint);
		goto out;
	}
	err = 0;
out:
	json_doc_free(doc);
	explicit_bzero(text, JSON_MAX_DOCUMENT + 1);
	free(text);
	if (err)
		explicit_bzero(token, AWS_SSO_TOKEN_MAX);
	return err;
}

/* The portal's base URL into OUT (no trailing '/'). */
static void portal_endpoint(const struct aws_sso *sso, char *out, size_t size)
{
	if (!aws_config_endpoint("AWS_ENDPOINT_URL_SSO", out, size))
		snprintf(out, size, "https://portal.sso.%.40s.amazonaws.com", sso->region);
}

/* The portal's answer TEXT into OUT at NOW: 0, or -EIO. */
static int role_credentials(const char *text, size_t len, time_t now, struct aws_keys *out)
{
	struct json_doc *doc, *cred = NULL;
	int64_t expiration_ms;
	int err = -EIO;

	memset(out, 0, sizeof(*out));
	if (json_doc_parse(text, len, &doc) != 0)
		return -EIO;
	if (json_doc_object(doc, "roleCredentials", &cred) ||
	    json_doc_string(cred, "accessKeyId", out->access_key, sizeof(out->access_key)) ||
	    json_doc_string(cred, "secretAccessKey", out->secret_key, sizeof(out->secret_key)) ||
	    json_doc_string(cred, "sessionToken", out->session_token,
			    sizeof(out->session_token)) ||
	    json_doc_int(cred, "expiration", &expiration_ms) || expiration_ms <= 0 ||
	    !out->access_key[0] || !out->secret_key[0])
		goto out;
	out->expires = (time_t)(expiration_ms / 1000);
	out->obtained = now;
	err = 0;
out:
	json_doc_free(cred);
	json_doc_free(doc);
	if (err)
		memset(out, 0, sizeof(*out));
	return err;
}

int aws_sso_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size)
{
	static const char name[] = "the SSO portal (GetRoleCredentials)";
	const struct aws_sso *sso = ctx;
	char base[512], url[1024], hint[300];
	char *token = NULL, *header = NULL, *e_role = NULL, *e_account = NULL, *shown = NULL;
	struct oauth_body *b = NULL;
	int err;

	portal_endpoint(sso, base, sizeof(base));
	if (!oauth_url_safe(base)) {
		log_error("s3: the SSO portal at %.200s is not https (or http to a loopback "
			  "address): the SSO token is not sent there", base);
		return -EACCES;
	}
	err = -ENOMEM;
	token = calloc(1, AWS_SSO_TOKEN_MAX);
	header = calloc(1, AWS_SSO_TOKEN_MAX + 40);
	b = malloc(sizeof(*b));
	e_role = url_encode(sso->role_name, false);
	e_account = url_encode(sso->account_id, false);
	shown = url_for_log(base);
	if (!token || !header || !b || !e_role || !e_account || !shown)
		goto out;
	err = token_load(sso, time(NULL), token);
	if (err)
		goto out;
	snprintf(header, AWS_SSO_TOKEN_MAX + 40, "x-amz-sso_bearer_token: %s", token);
	if ((size_t)snprintf(url, sizeof(url), "%s/federation/credentials?role_name=%s"
			     "&account_id=%s", base, e_role, e_account) >= sizeof(url)) {
		err = -EINVAL;
		goto out;
	}
	err = aws_endpoint_call(url, name, NULL, header, b);
	if (err) {
		/* 401: the token has expired or was revoked (UnauthorizedException);
		   403: this sign-in may not have the role (ForbiddenException) */
		login_hint(sso, hint, sizeof(hint));
		if (b->status == 401) {
			log_error("s3: the SSO portal refused the token of profile %s as expired "
				  "or revoked: %s", sso->profile, hint);
			err = -EKEYEXPIRED;
		} else if (b->status == 403) {
			log_error("s3: the SSO portal refused role %s of account %s to the "
				  "sign-in of profile %s", sso->role_name, sso->account_id,
				  sso->profile);
		}
		goto out;
	}
	err = role_credentials(b->text, b->len, time(NULL), out);
	if (err) {
		log_warn("s3: %s at %s answered no roleCredentials with keys and an expiration",
			 name, shown);
		goto out;
	}
	/* the portal vouches for the role of the account it was asked for */
	if ((size_t)snprintf(out->principal, sizeof(out->principal), "sso account %s role %s at %s",
			     sso->account_id, sso->role_name, shown) >= sizeof(out->principal))
		out->principal[0] = '\0';	/* too long to name whole: the key id */
	snprintf(from, from_size, "profile %.60s (SSO, account %.20s, role %.60s) through the "
		 "SSO portal at %.80s", sso->profile, sso->account_id, sso->role_name, shown);
out:
	if (token) {
		explicit_bzero(token, AWS_SSO_TOKEN_MAX);
		free(token);
	}
	if (header) {
		explicit_bzero(header, AWS_SSO_TOKEN_MAX + 40);
		free(header);
	}
	if (b) {
		explicit_bzero(b, sizeof(*b));
		free(b);
	}
	free(e_role);
	free(e_account);
	free(shown);
	return err;
}
