/*
 * aws_creds.h - short-lived AWS credentials for the S3 provider: where
 * they come from (the instance metadata service, a container credentials
 * endpoint). renewal.h renews them before they expire, as it does
 * the other clouds' tokens.
 *
 * Each source fills a struct aws_keys from its endpoint's JSON answer
 * (parsed by cache/origin/json.h) through http_fetch_once(): one attempt
 * on the calling thread, the opening thread or a renewal's own (one
 * renewal at a time for a whole mount, with no lock held: renewal.c).
 *
 * Layer: the origin's providers (cache/origin/providers/), private to the
 * S3 provider; over cache/origin/ and cache/base/.
 */
#ifndef TILEFS_AWS_CREDS_H
#define TILEFS_AWS_CREDS_H

#include "cache/origin/http.h"
#include "cache/origin/providers/oauth.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define AWS_PRINCIPAL_MAX 2048	/* an IAM ARN, at most (IAM's own bound) */

struct aws_keys {
	char access_key[128], secret_key[128], session_token[2048];
	/* The principal the keys belong to, as the endpoint that issued them
	 * vouches for it, with that endpoint (a fake one elsewhere vouches
	 * for nothing of the real one's): a role's ARN (STS, a container
	 * endpoint's RoleArn), the instance profile's ARN and role (the
	 * instance metadata service), whole; "" when the source does not say,
	 * or is the user's own (static keys, credential_process, EKS Pod
	 * Identity): the access key id then names them (see
	 * source_identity_hash()). */
	char principal[AWS_PRINCIPAL_MAX];
	time_t obtained;	/* when they were fetched */
	time_t expires;		/* 0: they do not expire */
};

/* Fetch a fresh set of keys into OUT (zeroed by the caller after use),
 * with the source's settings CTX (borrowed; NULL for sources read from
 * the environment at each call); write what they came from into FROM, one
 * line without a secret, for messages. 0 or -errno. */
typedef int (*aws_fetch_fn)(const void *ctx, struct aws_keys *out, char *from,
			    size_t from_size);

/* oauth_endpoint_call() with HEADER (one line, or "") added. */
int aws_endpoint_call(const char *url, const char *name, const char *method, char *header,
		      struct oauth_body *out);

/* "2026-11-25T03:00:00Z", with optional fractional seconds, +00:00 or
 * UTC for Z, as a time; 0 when it is not one. */
time_t aws_iso8601(const char *text);

/*
 * The credentials document of the instance metadata service, of a
 * container credentials endpoint and of credential_process (JSON:
 * AccessKeyId, SecretAccessKey, Token or SessionToken, Expiration in
 * ISO 8601 UTC) into OUT, obtained NOW, with no principal. 0, or -EIO when
 * a key is missing, not a string, too long or holds a control character.
 */
int aws_keys_from_json(const char *text, size_t len, time_t now, struct aws_keys *out);

/* OUT's principal: KEY's ARN in the JSON document TEXT (LEN bytes), with
 * ROLE (or "") and the ENDPOINT that answered it; "" when the document
 * names none, or the name does not fit whole. */
void aws_principal_at(const char *text, size_t len, const char *key, const char *role,
		      const char *endpoint, struct aws_keys *out);

/* Role credentials from the instance metadata service (IMDSv2) at
 * AWS_EC2_METADATA_SERVICE_ENDPOINT, else http://169.254.169.254. */
int aws_imds_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size);

/*
 * Is a container credentials endpoint configured
 * (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI)? When it is but
 * cannot be used (a FULL_URI over http to a host that is not loopback or
 * the ECS and EKS addresses), write why into err and return -EINVAL;
 * else 1 (configured) or 0 (not).
 */
int aws_container_configured(char *err, size_t err_size);
/* Credentials from the container endpoint (ECS, EKS Pod Identity), with
 * the authorization token read again at each call
 * (AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE, else _TOKEN). */
int aws_container_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size);

#endif
