/*
 * aws_sts.h - credentials from AWS STS for the S3 provider: AssumeRole
 * with a source profile's or a credential_source's keys, and AssumeRoleWithWebIdentity (Kubernetes service account tokens, GitHub
 * OIDC, ...), asked again before the role's credentials expire with the
 * token file read afresh (it rotates).
 *
 * STS's endpoint: AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else the
 * regional https://sts.REGION.amazonaws.com (AWS_REGION,
 * AWS_DEFAULT_REGION, else us-east-1), as the SDKs read them. Its XML
 * answers are read with cache/origin/xml.h, the listings' scanner.
 *
 * Layer: the origin's providers (cache/origin/providers/), private to the
 * S3 provider; calls aws_creds.c and bucket.c (Signature V4).
 */
#ifndef TILEFS_AWS_STS_H
#define TILEFS_AWS_STS_H

#include "cache/origin/providers/aws_creds.h"

#define AWS_WEB_TOKEN_MAX (16 * 1024)	/* a web identity token, at most */

/* The settings of a web identity source, owned by the S3 source. */
struct aws_web_identity {
	char role_arn[256];
	char session_name[128];
	char token_file[1024];
	char set_by[160];	/* "AWS_WEB_IDENTITY_TOKEN_FILE" or "profile P" */
};

/* The settings of a role assumed with a source's keys (role_arn with
 * source_profile or credential_source), owned by the S3 source. */
struct aws_assume_role {
	char role_arn[256];
	char session_name[128];
	char external_id[256];		/* "" when the profile sets none */
	char profile[128];		/* the profile naming the role */
	/* "source_profile NAME" or "credential_source VALUE", for messages */
	char source_name[160];
	/* the source's keys: fetched afresh by SOURCE_FETCH(SOURCE_CTX)
	   before each AssumeRole when it is set (the instance metadata
	   service, a container endpoint, an SSO or credential_process
	   source profile), else the static keys in SOURCE */
	aws_fetch_fn source_fetch;
	const void *source_ctx;
	struct aws_keys source;
};

/* An aws_fetch_fn: STS AssumeRole for CTX (a struct aws_assume_role),
 * signed with Signature V4 by the source's keys, fetched first when they
 * are short-lived (and zeroed after). */
int aws_assume_role_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size);

/*
 * Web identity from the environment (AWS_WEB_IDENTITY_TOKEN_FILE,
 * AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME) into W: 1 when set, 0 when not,
 * -EINVAL with what is missing in ERR.
 */
int aws_web_identity_from_env(struct aws_web_identity *w, char *err, size_t err_size);

/* An aws_fetch_fn: AssumeRoleWithWebIdentity for the role of CTX (a
 * struct aws_web_identity), the token read from its file now. */
int aws_web_identity_fetch(const void *ctx, struct aws_keys *out, char *from, size_t from_size);

#endif
