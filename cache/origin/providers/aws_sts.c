/*
 * aws_sts.c - AWS STS AssumeRoleWithWebIdentity (see aws_sts.h). The
 * request is the Query API's POST of a form (Action, Version=2011-06-15,
 * RoleArn, RoleSessionName, WebIdentityToken), unsigned as STS documents
 * for this action, as the AWS SDKs send it: the token travels in the
 * body, never in a URL, and follows no redirect to another origin.
 * AssumeRole is the Query API's GET (Action, Version, RoleArn,
 * RoleSessionName, ExternalId when the profile sets one) signed with
 * Signature V4 for the service "sts" by the source's keys, which are
 * fetched afresh before each call when they are short-lived themselves
 * (so a renewal of the role renews its source too).
 */
#include "cache/origin/providers/aws_sts.h"
#include "cache/origin/providers/aws_config.h"
#include "cache/origin/providers/bucket.h"
#include "cache/base/log.h"
#include "cache/origin/sigv4.h"
#include "cache/origin/url.h"
#include "cache/origin/xml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int aws_web_identity_from_env(struct aws_web_identity *w, char *err, size_t err_size)
{
	const char *file = getenv("AWS_WEB_IDENTITY_TOKEN_FILE");
	const char *role = getenv("AWS_ROLE_ARN");
	const char *name = getenv("AWS_ROLE_SESSION_NAME");

	memset(w, 0, sizeof(*w));
	if (!file || !*file)
		return 0;
	if (!role || !*role) {
		snprintf(err, err_size, "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is "
			 "not: set the role to assume");
		return -EINVAL;
	}
	if ((size_t)snprintf(w->token_file, sizeof(w->token_file), "%s", file) >=
	    sizeof(w->token_file) ||
	    (size_t)snprintf(w->role_arn, sizeof(w->role_arn), "%s", role) >= sizeof(w->role_arn)) {
		snprintf(err, err_size, "AWS_WEB_IDENTITY_TOKEN_FILE or AWS_ROLE_ARN is too long");
		return -EINVAL;
	}
	if (name && *name)
		snprintf(w->session_name, sizeof(w->session_name), "%.64s", name);
	snprintf(w->set_by, sizeof(w->set_by), "AWS_WEB_IDENTITY_TOKEN_FILE");
	return 1;
}

/* STS's base URL into OUT (no trailing '/'). */
static void sts_endpoint(char *out, size_t size)
{
	const char *region = getenv("AWS_REGION");

	if (aws_config_endpoint("AWS_ENDPOINT_URL_STS", out, size) ||
	    aws_config_endpoint("AWS_ENDPOINT_URL", out, size))
		return;
	if (!region || !*region)
		region = getenv("AWS_DEFAULT_REGION");
	if (!region || !*region)
		region = "us-east-1";
	snprintf(out, size, "https://sts.%.40s.amazonaws.com", region);
}

/* The token in PATH into a malloc'ed string (caller zeroes and frees),
 * white space around it dropped; NULL (logged) when it cannot be read,
 * is empty or is over AWS_WEB_TOKEN_MAX bytes. */
static char *token_read(const char *path)
{
	FILE *f = fopen(path, "re");
	char *token;
	size_t n;

	if (!f) {
		log_error("s3: cannot read the web identity token file %s: %s", path,
			  strerror(errno));
		return NULL;
	}
	token = calloc(1, AWS_WEB_TOKEN_MAX + 2);
	if (!token) {
		fclose(f);
		return NULL;
	}
	n = fread(token, 1, AWS_WEB_TOKEN_MAX + 1, f);
	fclose(f);
	while (n > 0 && strchr(" \t\r\n", token[n - 1]))
		token[--n] = '\0';
	if (n == 0 || n > AWS_WEB_TOKEN_MAX) {
		log_error("s3: the web identity token file %s is %s", path,
			  n ? "over 16 KiB" : "empty");
		memset(token, 0, AWS_WEB_TOKEN_MAX + 2);
		free(token);
		return NULL;
	}
	return token;
}

/* <NAME> of the span IN into OUT: 0, or -EIO when absent, too long for
 * OUT or holding a control character once decoded. */
static int sts_field(struct xml_span in, const char *name, char *out, size_t size)
{
	struct xml_span v;
	size_t pos = 0;

	if (!xml_next(in, name, &pos, &v) || v.len >= size)
		return -EIO;
	if (!xml_text(in, name, out, size))
		return -EIO;
	for (const char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return -EIO;
	return 0;
}

/*
 * The role an STS answer's <AssumedRoleUser><Arn> names
 * ("arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION") without its session
 * (a new one each mount), else ROLE_ARN, the role asked for, as STS at
 * ENDPOINT vouches for it, into OUT. Whole: a name that does not fit is
 * no answer of STS's (-EIO).
 */
static int sts_principal(struct xml_span res, const char *role_arn, const char *endpoint,
			 char *out, size_t size)
{
	struct xml_span user;
	size_t pos = 0;
	char arn[AWS_PRINCIPAL_MAX], *slash;

	if (xml_next(res, "AssumedRoleUser", &pos, &user) &&
	    sts_field(user, "Arn", arn, sizeof(arn)) == 0 && (slash = strrchr(arn, '/')) &&
	    strstr(arn, ":assumed-role/") && slash > strstr(arn, ":assumed-role/") + 14)
		*slash = '\0';
	else if ((size_t)snprintf(arn, sizeof(arn), "%s", role_arn) >= sizeof(arn))
		return -EIO;
	return (size_t)snprintf(out, size, "role %s at %s", arn, endpoint) < size ? 0 : -EIO;
}

/* The credentials of an STS answer (<Credentials> in <RESULT>) for the
 * role ROLE_ARN, from STS at ENDPOINT, into OUT. */
static int sts_credentials(const char *body, size_t len, const char *result,
			   const char *role_arn, const char *endpoint, struct aws_keys *out)
{
	struct xml_span doc = { body, len }, res, cred;
	char expiration[64];
	size_t pos = 0;

	memset(out, 0, sizeof(*out));
	if (!xml_next(doc, result, &pos, &res))
		return -EIO;
	pos = 0;
	if (!xml_next(res, "Credentials", &pos, &cred))
		return -EIO;
	if (sts_field(cred, "AccessKeyId", out->access_key, sizeof(out->access_key)) ||
	    sts_field(cred, "SecretAccessKey", out->secret_key, sizeof(out->secret_key)) ||
	    sts_field(cred, "SessionToken", out->session_token, sizeof(out->session_token)) ||
	    sts_field(cred, "Expiration", expiration, sizeof(expiration)) ||
	    sts_principal(res, role_arn, endpoint, out->principal, sizeof(out->principal)))
		goto bad;
	out->expires = aws_iso8601(expiration);
	if (!out->expires || !out->access_key[0] || !out->secret_key[0])
		goto bad;
	out->obtained = time(NULL);
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return -EIO;
}

int aws_web_identity_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size)
{
	const struct aws_web_identity *w = ctx;
	char base[512], url[520], session[160];
	char *token, *e_token = NULL, *e_role = NULL, *e_session = NULL, *form = NULL;
	struct oauth_body *b = NULL;
	int err = -ENOMEM;

	sts_endpoint(base, sizeof(base));
	if (!oauth_url_safe(base)) {
		log_warn("s3: STS at %.200s is not https (or http to a loopback address): the web "
			 "identity token is not sent there", base);
		return -EACCES;
	}
	token = token_read(w->token_file);
	if (!token)
		return -EACCES;
	if (w->session_name[0])
		snprintf(session, sizeof(session), "%s", w->session_name);
	else
		snprintf(session, sizeof(session), "tilefs-%lld", (long long)time(NULL));
	e_token = url_encode(token, false);
	e_role = url_encode(w->role_arn, false);
	e_session = url_encode(session, false);
	b = malloc(sizeof(*b));
	if (!e_token || !e_role || !e_session || !b)
		goto out;
	size_t form_size = strlen(e_token) + strlen(e_role) + strlen(e_session) + 160;
	form = malloc(form_size);
	if (!form)
		goto out;
	snprintf(form, form_size, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15"
		 "&RoleArn=%s&RoleSessionName=%s&WebIdentityToken=%s", e_role, e_session, e_token);
	snprintf(url, sizeof(url), "%s/", base);
	err = oauth_endpoint_call(url, "STS (AssumeRoleWithWebIdentity)", NULL, NULL, form, b);
	if (err)
		goto out;
	err = sts_credentials(b->text, b->len, "AssumeRoleWithWebIdentityResult", w->role_arn,
			      base, out);
	if (err)
		goto out;
	char *shown = url_for_log(base);
	snprintf(from, from_size, "web identity (%s, role %.80s) through STS at %.80s",
		 w->set_by, w->role_arn, shown ? shown : "");
	free(shown);
out:
	if (form) {
		explicit_bzero(form, strlen(form));
		free(form);
	}
	if (e_token) {
		memset(e_token, 0, strlen(e_token));
		free(e_token);
	}
	free(e_role);
	free(e_session);
	if (b) {
		memset(b, 0, sizeof(*b));
		free(b);
	}
	memset(token, 0, AWS_WEB_TOKEN_MAX + 2);
	free(token);
	return err;
}

/* What an AssumeRole attempt is signed with. */
struct assume_signer {
	const struct aws_keys *keys;	/* the source's */
	char host[256];
	char region[64];
};

static int assume_sign(void *signer, const struct http_attempt *a, struct curl_slist **headers)
{
	const struct assume_signer *as = signer;
	const struct aws_keys *k = as->keys;
	struct sigv4_credentials cred = { k->access_key, k->secret_key,
					  k->session_token[0] ? k->session_token : NULL };

	return bucket_sign(&sigv4_aws, &cred, as->host, as->region, "sts", a, NULL, 0, headers);
}

/* The source keys of ROLE into *KEYS: its static ones (borrowed), or a
 * fresh set fetched into FETCHED (zeroed by the caller). */
static int assume_source(const struct aws_assume_role *role, struct aws_keys *fetched,
			 const struct aws_keys **keys)
{
	char from[160];
	int err;

	*keys = &role->source;
	if (!role->source_fetch)
		return 0;
	err = role->source_fetch(role->source_ctx, fetched, from, sizeof(from));
	if (err) {
		log_warn("s3: no keys from %s to assume role %s with: %s", role->source_name,
			 role->role_arn, strerror(-err));
		return err;
	}
	*keys = fetched;
	return 0;
}

int aws_assume_role_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size)
{
	const struct aws_assume_role *role = ctx;
	struct assume_signer as = { .keys = NULL };
	char base[512], session[160], url[2048], external[600] = "";
	char *e_role = NULL, *e_session = NULL, *e_external = NULL;
	struct aws_keys *fetched = NULL;
	struct oauth_body *b = NULL;
	const char *region = getenv("AWS_REGION"), *host;
	size_t host_len;
	int err = -ENOMEM;

	sts_endpoint(base, sizeof(base));
	host = url_host(base, &host_len);
	if (!host || host_len >= sizeof(as.host))
		return -EINVAL;
	snprintf(as.host, sizeof(as.host), "%.*s", (int)host_len, host);
	if (!region || !*region)
		region = getenv("AWS_DEFAULT_REGION");
	snprintf(as.region, sizeof(as.region), "%.40s", region && *region ? region : "us-east-1");
	if (role->session_name[0])
		snprintf(session, sizeof(session), "%s", role->session_name);
	else
		snprintf(session, sizeof(session), "tilefs-%lld", (long long)time(NULL));
	e_role = url_encode(role->role_arn, false);
	e_session = url_encode(session, false);
	e_external = url_encode(role->external_id, false);
	b = malloc(sizeof(*b));
	fetched = calloc(1, sizeof(*fetched));
	if (!e_role || !e_session || !e_external || !b || !fetched)
		goto out;
	if (e_external[0])
		snprintf(external, sizeof(external), "&ExternalId=%s", e_external);
	if ((size_t)snprintf(url, sizeof(url), "%s/?Action=AssumeRole%s&RoleArn=%s"
			     "&RoleSessionName=%s&Version=2011-06-15", base, external, e_role,
			     e_session) >= sizeof(url)) {
		err = -EINVAL;
		goto out;
	}
	err = assume_source(role, fetched, &as.keys);
	if (err)
		goto out;
	err = oauth_endpoint_call_signed(url, "STS (AssumeRole)", NULL, NULL, assume_sign, &as, b);
	if (err)
		goto out;
	err = sts_credentials(b->text, b->len, "AssumeRoleResult", role->role_arn, base, out);
	if (err)
		goto out;
	char *shown = url_for_log(base);
	snprintf(from, from_size, "profile %.60s (role %.80s, %.80s) through STS at %.80s",
		 role->profile, role->role_arn, role->source_name, shown ? shown : "");
	free(shown);
out:
	free(e_role);
	free(e_session);
	free(e_external);
	if (fetched) {
		explicit_bzero(fetched, sizeof(*fetched));
		free(fetched);
	}
	if (b) {
		memset(b, 0, sizeof(*b));
		free(b);
	}
	return err;
}
