/*
 * aws_creds.c - short-lived AWS credentials: the instance metadata
 * service and container credentials endpoints (see aws_creds.h). Their
 * renewal is renewal.c's, the one for every cloud.
 */
#include "cache/origin/providers/aws_creds.h"
#include "cache/base/log.h"
#include "cache/origin/http.h"
#include "cache/origin/json.h"
#include "cache/origin/url.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AUTH_TOKEN_MAX 4096		/* a container authorization token */

time_t aws_iso8601(const char *text)
{
	struct tm tm = { 0 };
	const char *rest = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);

	if (!rest)
		return 0;
	if (*rest == '.')
		rest += 1 + strspn(rest + 1, "0123456789");
	/* "UTC": as older AWS CLIs wrote an SSO token's expiresAt */
	if (strcmp(rest, "Z") != 0 && strcmp(rest, "+00:00") != 0 && strcmp(rest, "UTC") != 0)
		return 0;
	return timegm(&tm);
}

int aws_keys_from_json(const char *text, size_t len, time_t now, struct aws_keys *out)
{
	struct json_doc *doc;
	char expiration[64];
	int err;

	memset(out, 0, sizeof(*out));
	if (json_doc_parse(text, len, &doc) != 0)
		return -EIO;
	err = -EIO;
	if (json_doc_string(doc, "AccessKeyId", out->access_key, sizeof(out->access_key)) ||
	    json_doc_string(doc, "SecretAccessKey", out->secret_key, sizeof(out->secret_key)))
		goto free_doc;
	/* "Token" (metadata, containers) or "SessionToken" (credential_process) */
	int token = json_doc_string(doc, "Token", out->session_token, sizeof(out->session_token));
	if (token == -ENOENT)
		token = json_doc_string(doc, "SessionToken", out->session_token,
					sizeof(out->session_token));
	if (token && token != -ENOENT)
		goto free_doc;
	if (json_doc_string(doc, "Expiration", expiration, sizeof(expiration)) == 0) {
		out->expires = aws_iso8601(expiration);
		if (!out->expires)
			goto free_doc;
	}
	if (!out->access_key[0] || !out->secret_key[0])
		goto free_doc;
	out->obtained = now;
	err = 0;
free_doc:
	json_doc_free(doc);
	if (err)
		memset(out, 0, sizeof(*out));
	return err;
}

void aws_principal_at(const char *text, size_t len, const char *key, const char *role,
		      const char *endpoint, struct aws_keys *out)
{
	struct json_doc *doc;
	char arn[AWS_PRINCIPAL_MAX];

	out->principal[0] = '\0';
	if (json_doc_parse(text, len, &doc) != 0)
		return;
	if (json_doc_string(doc, key, arn, sizeof(arn)) == 0 && arn[0] &&
	    (size_t)snprintf(out->principal, sizeof(out->principal), "%s %s%s%s at %s", key, arn,
			     role[0] ? " role " : "", role, endpoint) >= sizeof(out->principal))
		out->principal[0] = '\0';	/* too long to name whole: the key id */
	json_doc_free(doc);
}

/* ---- one request to an identity endpoint ---- */

/* The one header a request adds (a metadata token, an authorization). */
static int endpoint_header(void *line, const struct http_attempt *a,
			   struct curl_slist **headers)
{
	struct curl_slist *grown;

	if (!((char *)line)[0])
		return 0;
	grown = curl_slist_append(*headers, line);
	if (!grown)
		return -ENOMEM;
	*headers = grown;
	return 0;
}

int aws_endpoint_call(const char *url, const char *name, const char *method, char *header,
		      struct oauth_body *out)
{
	return oauth_endpoint_call_signed(url, name, method, NULL, endpoint_header, header, out);
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

/* ---- the instance metadata service ---- */

int aws_imds_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size)
{
	static const char name[] = "the instance metadata service";
	const char *base = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	char url[512], header[320], role[256];
	struct oauth_body *b = malloc(sizeof(*b));
	int err;

	if (!b)
		return -ENOMEM;
	if (!base || !*base)
		base = "http://169.254.169.254";
	snprintf(url, sizeof(url), "%s/latest/api/token", base);
	snprintf(header, sizeof(header), "X-aws-ec2-metadata-token-ttl-seconds: 21600");
	err = aws_endpoint_call(url, name, "PUT", header, b);
	if (err)
		goto out;
	snprintf(header, sizeof(header), "X-aws-ec2-metadata-token: %.*s",
		 first_line(b->text) < 256 ? first_line(b->text) : 256, b->text);
	snprintf(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/", base);
	err = aws_endpoint_call(url, name, NULL, header, b);
	if (err)
		goto out;
	/* IAM's role names are at most 64 characters: a longer one is no
	   answer of the service's, and is refused rather than cut */
	if (first_line(b->text) == 0 || (size_t)first_line(b->text) >= sizeof(role)) {
		log_warn("s3: %s names no role, or one over %zu characters", name,
			 sizeof(role) - 1);
		err = -EIO;
		goto out;
	}
	snprintf(role, sizeof(role), "%.*s", first_line(b->text), b->text);
	snprintf(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/%s", base, role);
	err = aws_endpoint_call(url, name, NULL, header, b);
	if (err)
		goto out;
	err = aws_keys_from_json(b->text, b->len, time(NULL), out);
	if (err)
		goto out;
	/* the role, of the instance profile (its ARN names the account), as
	   this endpoint vouches for it; else the key id names the keys */
	snprintf(url, sizeof(url), "%s/latest/meta-data/iam/info", base);
	if (aws_endpoint_call(url, name, NULL, header, b) == 0)
		aws_principal_at(b->text, b->len, "InstanceProfileArn", role, base, out);
	snprintf(from, from_size, "the instance metadata service (role %.60s)", role);
out:
	memset(header, 0, sizeof(header));
	memset(b, 0, sizeof(*b));
	free(b);
	return err;
}

/* ---- container credentials (ECS, EKS Pod Identity) ---- */

/* May a FULL_URI over plain http go to HOST? Loopback, and the ECS and
 * EKS Pod Identity agents' link-local addresses, as the SDKs allow. */
static bool container_host_allowed(const char *host)
{
	static const char *const allowed[] = { "localhost", "[::1]", "169.254.170.2",
					       "169.254.170.23", "[fd00:ec2::23]" };

	if (strncmp(host, "127.", 4) == 0 && strspn(host, "0123456789.") == strlen(host))
		return true;
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (strcasecmp(host, allowed[i]) == 0)
			return true;
	return false;
}

/* The container endpoint's URL into OUT: 0, -ENOENT (none configured) or
 * -EINVAL with why in ERR. */
static int container_url(char *out, size_t size, char *err, size_t err_size)
{
	const char *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	CURLU *u;
	char *scheme = NULL, *host = NULL;
	int rc = 0;

	if (rel && *rel) {
		if ((size_t)snprintf(out, size, "http://169.254.170.2%s%s", *rel == '/' ? "" : "/",
				     rel) >= size)
			goto too_long;
		return 0;
	}
	if (!full || !*full)
		return -ENOENT;
	if ((size_t)snprintf(out, size, "%s", full) >= size)
		goto too_long;
	u = curl_url();
	if (!u || curl_url_set(u, CURLUPART_URL, full, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		snprintf(err, err_size, "AWS_CONTAINER_CREDENTIALS_FULL_URI is not a URL");
		rc = -EINVAL;
	} else if (strcasecmp(scheme, "https") != 0 &&
		   !(strcasecmp(scheme, "http") == 0 && container_host_allowed(host))) {
		snprintf(err, err_size, "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or "
			 "http to a loopback address, 169.254.170.2 or 169.254.170.23");
		rc = -EINVAL;
	}
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
too_long:
	snprintf(err, err_size, "the container credentials URI is too long");
	return -EINVAL;
}

int aws_container_configured(char *err, size_t err_size)
{
	char url[1024];
	int rc = container_url(url, sizeof(url), err, err_size);

	if (rc == -ENOENT)
		return 0;
	return rc ? rc : 1;
}

/* The authorization header line, read again at each call: the token file
 * rotates. "" when none is set; -EACCES when the file cannot be read. */
static int container_authorization(char *line, size_t size)
{
	const char *file = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	const char *token = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	char *read = NULL;
	int err = 0;

	line[0] = '\0';
	if (file && *file) {
		FILE *f = fopen(file, "re");
		size_t n;
		if (!f) {
			log_error("s3: cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %s: %s",
				  file, strerror(errno));
			return -EACCES;
		}
		read = calloc(1, AUTH_TOKEN_MAX + 1);
		if (!read) {
			fclose(f);
			return -ENOMEM;
		}
		n = fread(read, 1, AUTH_TOKEN_MAX + 1, f);
		fclose(f);
		if (n > AUTH_TOKEN_MAX) {
			log_error("s3: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %s is over %d bytes",
				  file, AUTH_TOKEN_MAX);
			err = -EACCES;
			goto out;
		}
		read[strcspn(read, "\r\n")] = '\0';	/* one line */
		token = read;
	}
	if (token && *token) {
		if ((size_t)snprintf(line, size, "Authorization: %.*s", first_line(token), token) >=
		    size)
			err = -EACCES;
	}
out:
	if (read) {
		memset(read, 0, AUTH_TOKEN_MAX + 1);
		free(read);
	}
	return err;
}

int aws_container_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size)
{
	char url[1024], why[200], *header;
	struct oauth_body *b;
	int err;

	err = container_url(url, sizeof(url), why, sizeof(why));
	if (err)
		return err == -ENOENT ? -ENOENT : -EINVAL;
	header = calloc(1, AUTH_TOKEN_MAX + 32);
	b = malloc(sizeof(*b));
	if (!header || !b) {
		err = -ENOMEM;
		goto out;
	}
	err = container_authorization(header, AUTH_TOKEN_MAX + 32);
	if (err)
		goto out;
	err = aws_endpoint_call(url, "the container credentials endpoint", NULL, header, b);
	if (err)
		goto out;
	err = aws_keys_from_json(b->text, b->len, time(NULL), out);
	if (err)
		goto out;
	char *shown = url_for_log(url);
	/* ECS names the task's role; EKS Pod Identity does not (the key id
	   names the keys then) */
	aws_principal_at(b->text, b->len, "RoleArn", "", shown ? shown : url, out);
	snprintf(from, from_size, "the container credentials endpoint %.100s",
		 shown ? shown : "");
	free(shown);
out:
	if (header) {
		memset(header, 0, AUTH_TOKEN_MAX + 32);
		free(header);
	}
	if (b) {
		memset(b, 0, sizeof(*b));
		free(b);
	}
	return err;
}
